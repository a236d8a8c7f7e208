//! Diagnostic categories against the real Lean 4.35.0 test toolchain: each
//! category on `tests/fixtures/payloads/Categories.lean` (put into a copy of
//! the `basic` workspace as `Fix/Categories.lean`) through `lean_sync`, a
//! probe (`lean_run_at`) and `lean_run_code`, and `diagnostic_scope`
//! keeping one category.

use crate::common;

use serde_json::{Value, json};

use common::lean::{TempWorkspace, lean};
use common::mcp::{Era, Mcp, Spawn, ws};

const FILE: &str = "Fix/Categories.lean";
const TEXT: &str = include_str!("../fixtures/payloads/Categories.lean");

fn spawn() -> Mcp {
    Mcp::start(Era::Modern, Spawn::default().envs(lean().server_env()))
}

fn workspace() -> TempWorkspace {
    let tmp = TempWorkspace::copy("basic");
    tmp.write(FILE, TEXT);
    tmp
}

fn sync(mcp: &mut Mcp, root: &str, scope: &str) -> Value {
    mcp.call(
        "lean_sync",
        json!({"workspace": ws(root), "path": FILE, "diagnostic_scope": scope,
               "diagnostics_in_result": true}),
    )
}

/// `(category, first line of the message)` of each item, in order.
fn categories(items: &Value) -> Vec<(String, String)> {
    items
        .as_array()
        .expect("items")
        .iter()
        .map(|d| {
            let text = d["message"].as_str().or(d["text"].as_str()).unwrap_or("");
            (
                d["category"].as_str().expect("a category").to_owned(),
                text.lines().next().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(c, m)| (c.to_string(), m.to_string()))
        .collect()
}

#[test]
fn every_category_shows_in_lean_sync_and_a_scope_keeps_one() {
    let tmp = workspace();
    let root = tmp.root_str();
    let mut mcp = spawn();
    let all = sync(&mut mcp, &root, "all");
    let items = &all["diagnostics"]["items"];
    assert_eq!(
        categories(items),
        pairs(&[
            ("error", "Unknown identifier `missingThing`"),
            ("sorry", "declaration uses `sorry`"),
            ("unsolved_goals", "unsolved goals"),
            (
                "linter",
                "Variable name `unused` is not explicitly referenced."
            ),
            ("suggestion", "Try this:"),
            ("suggestion", "Try this:"),
            ("info", "Fix.one : N"),
        ]),
        "{all:#}"
    );
    // `exact?`'s suggestion: the text and the range it replaces, as its
    // code action has it.
    let exact = &items[5];
    assert_eq!(
        exact["suggestions"],
        json!([{"range": {"start": {"line": 24, "character": 2}, "end": {"line": 24, "character": 8}},
                "newText": "exact uses_sorry a"}]),
        "{exact:#}"
    );
    assert!(items[3].get("suggestions").is_none(), "{:#}", items[3]);
    assert_eq!(all["diagnostics"]["counts"]["total"], 7);
    for (scope, expected) in [
        ("sorry", vec![("sorry", "declaration uses `sorry`")]),
        (
            "linter",
            vec![(
                "linter",
                "Variable name `unused` is not explicitly referenced.",
            )],
        ),
        ("unsolved_goals", vec![("unsolved_goals", "unsolved goals")]),
        ("info", vec![("info", "Fix.one : N")]),
        (
            "errors",
            vec![
                ("error", "Unknown identifier `missingThing`"),
                ("unsolved_goals", "unsolved goals"),
            ],
        ),
        (
            "error",
            vec![("error", "Unknown identifier `missingThing`")],
        ),
    ] {
        let r = sync(&mut mcp, &root, scope);
        assert_eq!(
            categories(&r["diagnostics"]["items"]),
            pairs(&expected),
            "{scope}: {r:#}"
        );
        assert_eq!(r["diagnostics"]["counts"]["total"], 7, "counts stay whole");
    }
    let e = mcp.call_err(
        "lean_sync",
        json!({"workspace": ws(&root), "path": FILE, "diagnostic_scope": "sorries"}),
    );
    assert_eq!(e["code"], "invalidInput", "{e:#}");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or("")
            .contains("/diagnostic_scope"),
        "names the argument: {e:#}"
    );
}

#[test]
fn probe_and_snippet_messages_carry_categories() {
    let tmp = workspace();
    let root = tmp.root_str();
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root, "errors")["version"]
        .as_u64()
        .expect("version");
    // In place of `exact?` (24:2): a step that suggests, and one that uses
    // `sorry` (Lean's warning on the declaration's name, before the step).
    let at = |text: &str| {
        json!({"workspace": ws(&root), "path": FILE, "version": v,
               "line": 24, "character": 2, "text": text})
    };
    let shown = mcp.call("lean_run_at", at("show_term exact N.add_zero a"));
    assert_eq!(
        categories(&shown["messages"]),
        pairs(&[("suggestion", "Try this:")]),
        "{shown:#}"
    );
    // Its edit replaces the message's own place in the step (show_term's
    // keyword, where Lean reports it), with the suggestion alone.
    let message = &shown["messages"][0];
    assert_eq!(
        message["suggestions"],
        json!([{"range": message["step_range"], "newText": "exact N.add_zero a"}]),
        "{shown:#}"
    );
    assert_eq!(
        message["step_range"],
        json!({"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 9}}),
        "{shown:#}"
    );
    assert_eq!(shown["outcome"], "closed", "{shown:#}");
    let sorry = mcp.call("lean_run_at", at("exact sorry"));
    assert!(
        sorry["messages"][0].get("suggestions").is_none(),
        "only a suggestion carries edits: {sorry:#}"
    );
    assert_eq!(
        categories(&sorry["messages"]),
        pairs(&[("sorry", "declaration uses `sorry`")]),
        "{sorry:#}"
    );
    let failed = mcp.call("lean_run_at", at("exact missingThing"));
    assert_eq!(
        categories(&failed["messages"]),
        pairs(&[("error", "Unknown identifier `missingThing`")]),
        "{failed:#}"
    );
    let code = "prelude\nimport Fix.Basic\nnamespace Fix\n\
                def ignoresSecond (n unused : N) : N := n\n\
                theorem t (n : N) : Eq (N.add n N.zero) n := sorry\n\
                #check one\nend Fix\n";
    let r = mcp.call(
        "lean_run_code",
        json!({"workspace": ws(&root), "code": code}),
    );
    assert_eq!(
        categories(&r["messages"]),
        pairs(&[
            (
                "linter",
                "Variable name `unused` is not explicitly referenced."
            ),
            ("sorry", "declaration uses `sorry`"),
            ("info", "Fix.one : N"),
        ]),
        "{r:#}"
    );
    assert_eq!(r["sorry"], true, "{r:#}");
}
