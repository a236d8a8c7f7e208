//! `lean_completions` (issue 18 item 4) against the real Lean 4.35.0 test
//! toolchain: at identifier prefixes of `Fix/Complete.lean`, each item with
//! its kind named, its type resolved (Lean leaves `detail` to
//! `completionItem/resolve`) and the edit that inserts it; the cap; and the
//! failure classes.

use crate::common;

use serde_json::{Value, json};

use common::lean::lean;
use common::mcp::{Era, Mcp, ws};

const FILE: &str = "Fix/Complete.lean";

fn synced() -> (Mcp, String) {
    let root = lean().fixture("basic").to_string_lossy().into_owned();
    let mut mcp = Mcp::on_lean(Era::Modern, &[]);
    let sync = mcp.call("lean_sync", json!({"workspace": ws(&root), "path": FILE}));
    assert_eq!(sync["version"], 1, "{sync}");
    // Each of the three prefixes names no constant yet.
    assert_eq!(sync["diagnostics"]["counts"]["error"], 3, "{sync}");
    (mcp, root)
}

fn at(root: &str, line: u64, character: u64) -> Value {
    json!({"workspace": ws(root), "path": FILE, "version": 1, "line": line, "character": character})
}

/// `line` with `edit` applied (an edit within that line).
fn apply(line: &str, edit: &Value) -> String {
    let utf16: Vec<u16> = line.encode_utf16().collect();
    let start = edit["range"]["start"]["character"].as_u64().unwrap() as usize;
    let end = edit["range"]["end"]["character"].as_u64().unwrap() as usize;
    assert_eq!(
        edit["range"]["start"]["line"], edit["range"]["end"]["line"],
        "{edit}"
    );
    String::from_utf16(&utf16[..start]).unwrap()
        + edit["newText"].as_str().unwrap()
        + &String::from_utf16(&utf16[end..]).unwrap()
}

fn item<'a>(result: &'a Value, label: &str) -> &'a Value {
    result["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["label"] == label)
        .unwrap_or_else(|| panic!("no {label} in {result}"))
}

#[test]
fn completions_at_a_prefix_carry_kind_type_and_the_edit() {
    let (mut mcp, root) = synced();

    // `N.add_z|`: the one constant of `N` that starts so.
    let result = mcp.call("lean_completions", at(&root, 13, 61));
    let line = result["line_text"].as_str().unwrap();
    assert!(line.ends_with(":= N.add_z"), "{result}");
    let add_zero = item(&result, "add_zero");
    assert_eq!(
        add_zero["kind"], "event",
        "Lean marks theorems as LSP events"
    );
    assert_eq!(add_zero["detail"], "∀ (n : N), Eq (n.add N.zero) n");
    assert_eq!(
        add_zero["edit"]["range"],
        json!({"start": {"line": 13, "character": 56}, "end": {"line": 13, "character": 61}})
    );
    assert!(
        apply(line, &add_zero["edit"]).ends_with(":= N.add_zero"),
        "{add_zero}"
    );
    assert_eq!(result["offered"], result["items"].as_array().unwrap().len());
    assert_eq!(result["is_incomplete"], false);

    // `doub|`: a definition of this file, with its type.
    let result = mcp.call("lean_completions", at(&root, 15, 25));
    let double = item(&result, "doubleIt");
    assert_eq!(double["kind"], "function");
    assert_eq!(double["detail"], "N → N");
    let line = result["line_text"].as_str().unwrap();
    assert_eq!(
        apply(line, &double["edit"]),
        "def useDouble : N := doubleIt"
    );

    // `N.|`: every member of `N`; the cap keeps Lean's first ones, each
    // resolved, inserted at the cursor.
    let all = mcp.call("lean_completions", at(&root, 17, 20));
    let offered = all["offered"].as_u64().unwrap();
    assert!(offered > 3, "{all}");
    assert_eq!(
        all["items"].as_array().unwrap().len() as u64,
        offered.min(50)
    );
    let mut capped = at(&root, 17, 20);
    capped["limit"] = json!(3);
    let capped = mcp.call("lean_completions", capped);
    assert_eq!(capped["offered"], offered);
    let items = capped["items"].as_array().unwrap();
    assert_eq!(items.len(), 3, "{capped}");
    assert_eq!(items[..], all["items"].as_array().unwrap()[..3]);
    for item in items {
        assert!(item["detail"].is_string(), "unresolved: {item}");
        let inserted = apply("def member : N := N.", &item["edit"]);
        assert_eq!(
            inserted,
            format!("def member : N := N.{}", item["label"].as_str().unwrap())
        );
    }
}

#[test]
fn completions_refuse_bad_limits_positions_and_versions() {
    let (mut mcp, root) = synced();
    let mut zero = at(&root, 15, 25);
    zero["limit"] = json!(0);
    let refused = mcp.call_err("lean_completions", zero);
    assert_eq!(refused["code"], "invalidInput", "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("/limit"),
        "{refused}"
    );

    let past_the_line = mcp.call_err("lean_completions", at(&root, 15, 99));
    assert_eq!(past_the_line["code"], "invalidParams", "{past_the_line}");
    assert!(
        past_the_line["message"]
            .as_str()
            .unwrap()
            .contains("past the end of line 15"),
        "{past_the_line}"
    );

    let mut stale = at(&root, 15, 25);
    stale["version"] = json!(7);
    let stale = mcp.call_err("lean_completions", stale);
    assert_eq!(stale["code"], "contentModified", "{stale}");

    let mut unsynced = at(&root, 0, 0);
    unsynced["path"] = json!("Fix/Goals.lean");
    let unsynced = mcp.call_err("lean_completions", unsynced);
    assert!(
        unsynced["message"].as_str().unwrap().contains("lean_sync"),
        "{unsynced}"
    );
}
