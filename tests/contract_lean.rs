//! The last contract gaps of issue 15 against the real Lean 4.35.0 test
//! toolchain: every Lean result echoes the workspace and names its document
//! (item 2), a save that the file's errors make impossible is a result, not a
//! tool error (5), progress that says something new each time in the user's
//! names (6), inspection tools that forward file progress while they wait (7),
//! no internal coordinates or paths in answers (8), term-mode holes end to end
//! (10), the addressed line's text in position-bound answers (12), and answers
//! that say when the file moved on on disk (13).
//!
//! Files are only edited in temp copies of the fixtures. Timeouts are failure
//! guards.

mod common;

use serde_json::{Value, json};

use common::lean::{TempWorkspace, lean};
use common::mcp::{CallOpts, Era, Mcp, Spawn, ws};

const GOALS: &str = "Fix/Goals.lean";
const SORRY: &str = "Fix/Sorry.lean";

fn spawn() -> Mcp {
    Mcp::start(Era::Modern, Spawn::default().envs(lean().server_env()))
}

fn fixture(name: &str) -> String {
    lean().fixture(name).to_string_lossy().into_owned()
}

fn doc(root: &str, path: &str) -> Value {
    json!({"workspace": ws(root), "path": path})
}

/// `lean_sync` a file and return its version.
fn sync(mcp: &mut Mcp, root: &str, path: &str) -> u64 {
    let r = mcp.call("lean_sync", doc(root, path));
    r["version"].as_u64().expect("version")
}

fn at(root: &str, path: &str, version: u64, line: u64, character: u64) -> Value {
    json!({"workspace": ws(root), "path": path, "version": version, "line": line, "character": character})
}

fn run_args(root: &str, path: &str, version: u64, line: u64, character: u64, text: &str) -> Value {
    let mut args = at(root, path, version, line, character);
    args["text"] = json!(text);
    args
}

fn keys(result: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = result
        .as_object()
        .unwrap_or_else(|| panic!("an object: {result}"))
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

fn errors_of(result: &Value) -> Vec<&Value> {
    result["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("messages: {result}"))
        .iter()
        .filter(|m| m["severity"] == "error")
        .collect()
}

fn pos(line: u64, character: u64) -> Value {
    json!({"line": line, "character": character})
}

/// The `line` (0-based) of `path` in the `basic` fixture.
fn fixture_line(path: &str, line: usize) -> String {
    let text = std::fs::read_to_string(lean().fixture("basic").join(path)).expect("read");
    text.lines().nth(line).expect("line").to_string()
}

// ---------------------------------------------------------------------------
// Item 5: a save that errors make impossible is a successful typed result.

#[test]
fn a_save_the_files_errors_prevent_is_a_result_that_says_nothing_was_written() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    let mut mcp = spawn();
    let lib = w.root().join(".lake/build/lib/lean/Fix");

    let refused = mcp.call("lean_save", doc(&root, "Fix/Errors.lean"));
    assert_eq!(refused["written"], false, "{refused}");
    assert_eq!(refused["workspace"], ws(&root), "{refused}");
    assert_eq!(refused["path"], "Fix/Errors.lean", "{refused}");
    assert_eq!(refused["module"], "Fix.Errors", "{refused}");
    assert!(refused.get("olean").is_none(), "{refused}");
    let readiness = &refused["sync"]["readiness"];
    assert_eq!(readiness["save_ready"], false, "{refused}");
    assert_eq!(readiness["reason"], "errors", "{refused}");
    assert_eq!(
        readiness["blocking_diagnostics"].as_array().map(Vec::len),
        Some(3),
        "{refused}"
    );
    assert_eq!(refused["sync"]["version"], refused["version"]);
    assert!(refused["document_progress"].is_object(), "{refused}");
    assert!(!lib.join("Errors.olean").exists());

    // close_save: nothing saved, so nothing closed either.
    let kept = mcp.call("lean_close_save", doc(&root, "Fix/Errors.lean"));
    assert_eq!(kept["closed"], false, "{kept}");
    assert_eq!(kept["saved"]["written"], false, "{kept}");
    assert_eq!(
        kept["saved"]["sync"]["readiness"]["save_ready"], false,
        "{kept}"
    );
    assert_eq!(
        mcp.document_stats(&root, "Fix/Errors.lean")["open"],
        true,
        "the document stays open"
    );

    // A save that happens says so.
    let saved = mcp.call("lean_save", doc(&root, GOALS));
    assert_eq!(saved["written"], true, "{saved}");
    assert!(lib.join("Goals.olean").is_file());
    let closed = mcp.call("lean_close_save", doc(&root, GOALS));
    assert_eq!(closed["closed"], true, "{closed}");
    assert_eq!(closed["saved"]["written"], true, "{closed}");

    // Refusals that are not about the Lean file stay tool errors.
    w.write("Fix/bad-name.lean", "prelude\nimport Fix.Basic\n");
    let error = mcp.call_err("lean_save", doc(&root, "Fix/bad-name.lean"));
    assert_eq!(error["code"], "saveTargetNotModule", "{error}");
}

// ---------------------------------------------------------------------------
// Item 8: no internal paths.

#[test]
fn import_failures_do_not_show_the_private_base_directory() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    let path = "Fix/Broken.lean";
    w.write(
        path,
        "prelude\nimport Nope.Missing\n\ntheorem t : True := by\n  exact True.intro\n\n",
    );
    let mut mcp = spawn();
    let mut args = doc(&root, path);
    args["diagnostics_in_result"] = json!(true);
    let synced = mcp.call("lean_sync", args);
    let probe = mcp.call(
        "lean_run_at",
        run_args(
            &root,
            path,
            synced["version"].as_u64().unwrap(),
            5,
            0,
            "def x : N := N.zero",
        ),
    );
    for answer in [&synced, &probe] {
        let text = answer.to_string();
        assert!(
            text.contains("Nope"),
            "the module the user imports: {answer}"
        );
        assert!(!text.contains("lean-beam-bases"), "{answer}");
    }
}
