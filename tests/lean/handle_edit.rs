//! `lean_handle_edit` (issue 18 item 3) against the real Lean 4.35.0 test
//! toolchain: handle chains turned into text edits, applied by the client to
//! a copy of the fixture workspace, then synced: no diagnostics, no goals
//! left where the handles had them. Also every way a handle can be refused.

use crate::common;

use serde_json::{Value, json};

use common::lean::{TempWorkspace, lean};
use common::mcp::{Era, Mcp, Spawn, ws};

const FILE: &str = "Fix/Edits.lean";

/// Three proofs left as `sorry` (`exact sorry`: the fixtures' prelude has no
/// `sorry` tactic): on its own line, after `by` on the same line, and in an
/// induction branch (a nested block).
const SOURCE: &str = "prelude
import Fix.Basic

namespace Fix

theorem swap_and (p q : Prop) (h : And p q) : And q p := by
  exact sorry

theorem inline_zero (n : N) : Eq (N.add n N.zero) n := by exact sorry

theorem by_branch (a : N) : Eq (N.add N.zero a) a := by
  induction a with
  | zero => exact Eq.refl _
  | succ k ih =>
    exact sorry

end Fix
";

fn start(copy: &TempWorkspace) -> (Mcp, String) {
    copy.write(FILE, SOURCE);
    let root = copy.root_str();
    let mut mcp = Mcp::start(Era::Modern, Spawn::default().envs(lean().server_env()));
    let sync = mcp.call("lean_sync", json!({"workspace": ws(&root), "path": FILE}));
    assert_eq!(sync["version"], 1, "{sync}");
    assert_eq!(
        sync["diagnostics"]["counts"]["warning"], 3,
        "three sorries: {sync}"
    );
    (mcp, root)
}

/// Run `steps` from (line, character): the first with lean_run_at_handle,
/// the rest with lean_run_with; every step succeeds. The last handle and
/// the goals it reported.
fn chain(mcp: &mut Mcp, root: &str, line: u64, character: u64, steps: &[&str]) -> String {
    let mut result = mcp.call(
        "lean_run_at_handle",
        json!({"workspace": ws(root), "path": FILE, "version": 1,
               "line": line, "character": character, "text": steps[0]}),
    );
    for step in &steps[1..] {
        assert_eq!(result["success"], true, "{result}");
        let handle = result["next_handle"].as_str().unwrap().to_string();
        result = mcp.call(
            "lean_run_with",
            json!({"workspace": ws(root), "path": FILE, "handle": handle, "text": step}),
        );
    }
    assert_eq!(result["success"], true, "{result}");
    result["next_handle"].as_str().unwrap().to_string()
}

fn edit_of(mcp: &mut Mcp, root: &str, handle: &str) -> Value {
    mcp.call(
        "lean_handle_edit",
        json!({"workspace": ws(root), "path": FILE, "handle": handle}),
    )
}

/// `text` with the LSP text edits applied (non-overlapping, any order).
fn apply(text: &str, edits: &[&Value]) -> String {
    let mut spans: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|e| {
            (
                common::byte_offset(text, &e["range"]["start"]),
                common::byte_offset(text, &e["range"]["end"]),
                e["newText"].as_str().unwrap(),
            )
        })
        .collect();
    spans.sort_by_key(|s| std::cmp::Reverse(s.0));
    let mut out = text.to_string();
    for (start, end, new) in spans {
        out.replace_range(start..end, new);
    }
    out
}

#[test]
fn handle_edits_applied_and_synced_leave_no_goals_and_no_diagnostics() {
    let copy = TempWorkspace::copy("basic");
    let (mut mcp, root) = start(&copy);

    let swap = chain(
        &mut mcp,
        &root,
        6,
        2,
        &["cases h", "constructor", "all_goals assumption"],
    );
    let inline = chain(&mut mcp, &root, 8, 58, &["exact N.add_zero n"]);
    let branch = chain(
        &mut mcp,
        &root,
        14,
        4,
        &[
            "show Eq (N.succ (N.add N.zero k)) (N.succ k)",
            "exact congrArg N.succ ih",
        ],
    );

    let edits: Vec<Value> = [&swap, &inline, &branch]
        .iter()
        .map(|handle| edit_of(&mut mcp, &root, handle))
        .collect();
    for edit in &edits {
        assert_eq!(edit["version"], 1, "{edit}");
        assert_eq!(edit["path"], FILE, "{edit}");
        assert_eq!(edit["replaces"], "sorry", "{edit}");
    }
    assert_eq!(
        edits[0]["edit"],
        json!({"range": {"start": {"line": 6, "character": 2}, "end": {"line": 6, "character": 13}},
               "newText": "cases h\n  constructor\n  all_goals assumption"})
    );
    assert_eq!(edits[1]["edit"]["newText"], "exact N.add_zero n");
    assert_eq!(
        edits[2]["edit"]["newText"],
        "show Eq (N.succ (N.add N.zero k)) (N.succ k)\n    exact congrArg N.succ ih"
    );
    // Asking does not write the file.
    assert_eq!(copy.read(FILE), SOURCE);

    let proved = apply(
        SOURCE,
        &edits.iter().map(|e| &e["edit"]).collect::<Vec<_>>(),
    );
    assert!(!proved.contains("sorry"), "{proved}");
    copy.write(FILE, &proved);
    let sync = mcp.call("lean_sync", json!({"workspace": ws(&root), "path": FILE}));
    assert_eq!(sync["version"], 2, "{sync}");
    assert_eq!(
        sync["diagnostics"]["counts"]["total"], 0,
        "{proved}\n{sync}"
    );
    let last_line = proved.lines().count() - 1;
    let todo = mcp.call(
        "lean_todo",
        json!({"workspace": ws(&root), "path": FILE, "version": 2,
               "start_line": 0, "start_character": 0,
               "end_line": last_line, "end_character": 0}),
    );
    assert_eq!(todo["items"], json!([]), "{todo}");
    // Where each chain ended, Lean now shows no goals.
    for last in [
        "all_goals assumption",
        "exact N.add_zero n",
        "exact congrArg N.succ ih",
    ] {
        let (line, text) = proved
            .lines()
            .enumerate()
            .find(|(_, text)| text.ends_with(last))
            .unwrap_or_else(|| panic!("{last} not in {proved}"));
        let character = text.encode_utf16().count();
        let goals = |mcp: &mut Mcp, character: usize, mode: &str| {
            mcp.call(
                "lean_goals",
                json!({"workspace": ws(&root), "path": FILE, "version": 2,
                       "line": line, "character": character, "mode": mode}),
            )["goals"]
                .clone()
        };
        // Before the last step there is a goal; after it, none.
        let step_start = character - last.encode_utf16().count();
        let before = goals(&mut mcp, step_start, "before");
        assert!(
            before.as_array().is_some_and(|g| !g.is_empty()),
            "{line}: {before}\n{proved}"
        );
        let after = goals(&mut mcp, character, "after");
        assert_eq!(after, json!([]), "{line}:{character}\n{proved}");
    }
}

#[test]
fn handle_edit_refuses_stale_released_foreign_and_malformed_handles() {
    let copy = TempWorkspace::copy("basic");
    let (mut mcp, root) = start(&copy);
    let handle = chain(&mut mcp, &root, 8, 58, &["exact N.add_zero n"]);
    let args =
        |path: &str, handle: &str| json!({"workspace": ws(&root), "path": path, "handle": handle});

    let malformed = mcp.call_err("lean_handle_edit", args(FILE, "bh2.nope"));
    assert_eq!(malformed["code"], "invalidParams", "{malformed}");

    // Another file of the workspace, synced: the handle is not its.
    let other = mcp.call(
        "lean_sync",
        json!({"workspace": ws(&root), "path": "Fix/Goals.lean"}),
    );
    assert_eq!(other["version"], 1, "{other}");
    let foreign = mcp.call_err("lean_handle_edit", args("Fix/Goals.lean", &handle));
    assert_eq!(foreign["code"], "invalidParams", "{foreign}");
    assert!(
        foreign["message"].as_str().unwrap().contains(FILE),
        "{foreign}"
    );

    // The file moved on: the handle's text is no longer the file's.
    copy.write(FILE, &SOURCE.replace("by exact sorry", "by\n  exact sorry"));
    let sync = mcp.call("lean_sync", json!({"workspace": ws(&root), "path": FILE}));
    assert_eq!(sync["version"], 2, "{sync}");
    let stale = mcp.call_err("lean_handle_edit", args(FILE, &handle));
    assert_eq!(stale["code"], "contentModified", "{stale}");
    assert_eq!(stale["data"]["reason"], "versionMismatch", "{stale}");

    // A released handle is unknown.
    let fresh = mcp.call(
        "lean_run_at_handle",
        json!({"workspace": ws(&root), "path": FILE, "version": 2,
               "line": 9, "character": 2, "text": "exact N.add_zero n"}),
    );
    let fresh = fresh["next_handle"].as_str().unwrap().to_string();
    mcp.call("lean_release", args(FILE, &fresh));
    let released = mcp.call_err("lean_handle_edit", args(FILE, &fresh));
    assert_eq!(released["code"], "invalidParams", "{released}");
    assert!(
        released["message"].as_str().unwrap().contains("unknown"),
        "{released}"
    );
}
