//! `lean_run_code` against the real Lean 4.35.0 test toolchain: snippets with
//! their own header in the `basic` fixture workspace, with no project file
//! (`tests/fixtures/EXPECTED.md`, "Snippets and certification").

use crate::common;

use std::collections::BTreeSet;

use serde_json::{Value, json};

use common::lean::lean;
use common::mcp::{Era, Mcp, Spawn, ws};

const HEADER: &str = "prelude\nimport Fix.Basic\n";

fn spawn() -> Mcp {
    Mcp::start(Era::Modern, Spawn::default().envs(lean().server_env()))
}

fn root() -> String {
    lean().fixture("basic").to_string_lossy().into_owned()
}

fn run(mcp: &mut Mcp, code: &str, extra: Value) -> Value {
    let mut args = json!({ "workspace": ws(&root()), "code": code });
    for (k, v) in extra.as_object().expect("object") {
        args[k] = v.clone();
    }
    mcp.call("lean_run_code", args)
}

/// Every name in the workspace root, hidden ones included.
fn names_in_root() -> BTreeSet<String> {
    std::fs::read_dir(root())
        .expect("list the root")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect()
}

fn shadow_slots(mcp: &mut Mcp) -> u64 {
    mcp.workspace_stats(&root()).expect("a runtime")["shadowSlots"]
        .as_u64()
        .expect("shadowSlots")
}

fn range(sl: u64, sc: u64, el: u64, ec: u64) -> Value {
    json!({ "start": { "line": sl, "character": sc }, "end": { "line": el, "character": ec } })
}

#[test]
fn snippets_succeed_report_sorry_and_errors_and_reuse_their_header() {
    let before = names_in_root();
    let mut mcp = spawn();

    let clean =
        format!("{HEADER}theorem a (n : Fix.N) : Eq (Fix.N.add n Fix.N.zero) n := Eq.refl n\n");
    let r = run(&mut mcp, &clean, json!({}));
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["sorry"], false, "{r}");
    assert_eq!(r["messages"], json!([]), "{r}");

    let sorry = format!("{HEADER}\ntheorem b : Eq Fix.one Fix.one := sorry\n");
    let r = run(&mut mcp, &sorry, json!({}));
    assert_eq!(r["success"], true, "a warning is no failure: {r}");
    assert_eq!(r["sorry"], true, "{r}");
    assert_eq!(
        r["messages"],
        json!([{ "severity": "warning", "category": "sorry", "text": "declaration uses `sorry`", "range": range(3, 8, 3, 9) }]),
        "ranges count from the snippet's first line: {r}"
    );

    let error = format!("{HEADER}def c : Fix.N := Fix.nope\n");
    let r = run(&mut mcp, &error, json!({}));
    assert_eq!(r["success"], false, "{r}");
    let messages = r["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 1, "{r}");
    assert_eq!(messages[0]["severity"], "error");
    assert!(
        messages[0]["text"].as_str().unwrap().contains("Fix.nope"),
        "{r}"
    );
    assert_eq!(messages[0]["range"], range(2, 17, 2, 25), "{r}");

    assert_eq!(
        shadow_slots(&mut mcp),
        1,
        "three snippets of one header, one after the other, share one virtual document"
    );
    let other = "prelude\nimport Ver.Clean\n\ntheorem d : Eq True True := Ver.true_eq_true\n";
    let r = run(&mut mcp, other, json!({}));
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(
        shadow_slots(&mut mcp),
        2,
        "another header has its own document"
    );
    // The first header is still there: the same result again.
    let r = run(&mut mcp, &clean, json!({}));
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(shadow_slots(&mut mcp), 2);

    assert_eq!(names_in_root(), before, "no file was written in the root");
}

#[test]
fn a_header_that_cannot_be_imported_names_the_import() {
    let mut mcp = spawn();
    let code =
        format!("{HEADER}import Fix.Missing\n\ntheorem t : Eq Fix.one Fix.one := Eq.refl _\n");
    let r = run(&mut mcp, &code, json!({}));
    assert_eq!(r["success"], false, "{r}");
    assert_eq!(r["header_error"]["import"], "Fix.Missing", "{r}");
    assert!(
        r["header_error"]["message"]
            .as_str()
            .unwrap()
            .contains("Fix.Missing"),
        "{r}"
    );
    // The server keeps serving, and the header that imports works again.
    let good = format!("{HEADER}theorem t : Eq Fix.one Fix.one := Eq.refl _\n");
    let r = run(&mut mcp, &good, json!({}));
    assert_eq!(r["success"], true, "{r}");
    assert!(r.get("header_error").is_none(), "{r}");
}

/// The slow theorem of `Fix/Slow.lean` (seconds of CPU).
fn slow() -> String {
    format!(
        "{HEADER}\nset_option maxRecDepth 40000 in\ntheorem slow_pow : Eq (Fix.N.beq (Fix.N.pow Fix.two 15) (Fix.N.pow Fix.two 15)) Bool.true := by decide\n"
    )
}

#[test]
fn budgets_stop_a_slow_snippet() {
    let mut mcp = spawn();
    let r = run(&mut mcp, &slow(), json!({ "max_heartbeats": 1 }));
    assert_eq!(r["success"], false, "{r}");
    assert_eq!(r["exhausted"], "heartbeats", "{r}");
    let messages = r["messages"].as_array().expect("messages");
    let heartbeat = messages
        .iter()
        .find(|m| m["text"].as_str().unwrap().contains("heartbeats"))
        .unwrap_or_else(|| panic!("a heartbeat error: {r}"));
    assert_eq!(heartbeat["severity"], "error");
    assert_eq!(
        heartbeat["range"]["start"]["line"], 4,
        "on the theorem's line of the snippet, not of the text with the bound put in: {r}"
    );

    let r = run(&mut mcp, &slow(), json!({ "timeout_ms": 300 }));
    assert_eq!(r["exhausted"], "timeout", "{r}");
    assert_eq!(r["success"], false, "{r}");
    // The header's document is usable at once.
    let quick = format!("{HEADER}theorem q : Eq Fix.one Fix.one := Eq.refl _\n");
    let r = run(&mut mcp, &quick, json!({ "timeout_ms": 60000 }));
    assert_eq!(r["success"], true, "{r}");
    assert!(r.get("exhausted").is_none(), "{r}");
}

#[test]
fn more_headers_than_documents_reassign_the_least_recently_used() {
    let mut mcp = spawn();
    // Five headers (four documents): the sixth call finds its header's
    // document reassigned, and Lean re-imports in it.
    let headers = [
        "prelude\nimport Fix.Basic\n",
        "prelude\nimport Ver.Clean\n",
        "prelude\nimport Ver.Hatch\n",
        "prelude\nimport Fix.Basic\nimport Ver.Clean\n",
        "prelude\nimport Fix.Basic\nimport Ver.Hatch\n",
        "prelude\nimport Fix.Basic\n",
    ];
    for (i, header) in headers.iter().enumerate() {
        // `Ver.cheat` exists only where Ver.Hatch is imported.
        let code = format!("{header}theorem t{i} : Eq Fix.one Fix.two := Ver.cheat\n");
        let r = run(&mut mcp, &code, json!({}));
        assert_eq!(
            r["success"],
            header.contains("Ver.Hatch"),
            "header {i}, {header:?}: {r}"
        );
    }
    assert_eq!(shadow_slots(&mut mcp), 4, "four documents, one slot each");
}
