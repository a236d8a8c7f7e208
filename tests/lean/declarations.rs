//! Addressing by declaration name (issue 28, item 3) against the real Lean
//! 4.35.0 server: each proof-loop tool given `declaration` (and `at`)
//! answers as it does at the resolved position, and echoes the name and the
//! place; unknown, ambiguous and conflicting addresses are clear errors.

use crate::common;

use serde_json::{Value, json};

use common::lean::{TempWorkspace, lean};
use common::mcp::{Era, Mcp, Spawn, ws};

const FILE: &str = "Fix/Decl.lean";

/// Namespaces, a nested one, a guillemet name, several sorries, a finished
/// proof and the same last name twice.
const SOURCE: &str = "prelude
import Fix.Basic
open Fix
namespace Alg

theorem one (n : N) : Eq (N.add n N.zero) n := by
  exact sorry

namespace Deep
theorem two (a b : N) (h : Eq a b) : Eq b a := by
  exact sorry
end Deep

theorem «weird name» : True := sorry

end Alg

theorem Other.one : Eq two two := by
  exact Eq.refl two
";

fn start() -> (TempWorkspace, Mcp, String, u64) {
    let copy = TempWorkspace::copy("basic");
    copy.write(FILE, SOURCE);
    let root = copy.root_str();
    let mut mcp = Mcp::start(Era::Modern, Spawn::default().envs(lean().server_env()));
    let synced = mcp.call("lean_sync", json!({"workspace": ws(&root), "path": FILE}));
    let version = synced["version"].as_u64().expect("version");
    (copy, mcp, root, version)
}

fn args(root: &str, version: u64, extra: Value) -> Value {
    let mut a = json!({"workspace": ws(root), "path": FILE, "version": version});
    for (k, v) in extra.as_object().unwrap() {
        a[k] = v.clone();
    }
    a
}

fn echo(name: &str, line: u64, character: u64) -> Value {
    json!({"name": name, "line": line, "character": character})
}

#[test]
fn each_proof_loop_tool_takes_a_declaration_and_echoes_where_it_went() {
    let (_copy, mut mcp, root, v) = start();

    // lean_goals: the first sorry, and the same goals as at its position.
    let by_name = mcp.call(
        "lean_goals",
        args(
            &root,
            v,
            json!({"declaration": "Alg.one", "mode": "before"}),
        ),
    );
    assert_eq!(by_name["declaration"], echo("Alg.one", 6, 8), "{by_name}");
    let by_position = mcp.call(
        "lean_goals",
        args(
            &root,
            v,
            json!({"line": 6, "character": 8, "mode": "before"}),
        ),
    );
    assert_eq!(by_name["goals"], by_position["goals"]);
    assert!(
        by_name["goals"][0]
            .to_string()
            .contains("Eq (n.add N.zero) n"),
        "{by_name}"
    );
    assert!(by_position.get("declaration").is_none(), "{by_position}");

    // `at`: the first token of a finished proof, and just after its last.
    let start = mcp.call(
        "lean_goals",
        args(
            &root,
            v,
            json!({"declaration": "Other.one", "at": "start", "mode": "before"}),
        ),
    );
    assert_eq!(start["declaration"], echo("Other.one", 18, 2), "{start}");
    assert!(
        start["goals"][0].to_string().contains("Eq two two"),
        "{start}"
    );
    let end = mcp.call(
        "lean_goals",
        args(
            &root,
            v,
            json!({"declaration": "Other.one", "at": "end", "mode": "after"}),
        ),
    );
    assert_eq!(end["declaration"], echo("Other.one", 18, 19), "{end}");
    assert_eq!(end["goals"], json!([]), "{end}");

    // lean_term_goal: a guillemet name, by its last part, a term-mode sorry.
    let term = mcp.call(
        "lean_term_goal",
        args(&root, v, json!({"declaration": "weird name"})),
    );
    assert_eq!(
        term["declaration"],
        echo("Alg.«weird name»", 13, 31),
        "{term}"
    );
    assert!(term["goal"].to_string().contains("True"), "{term}");

    // lean_run_at: the nested namespace's sorry (a term).
    let ran = mcp.call(
        "lean_run_at",
        args(
            &root,
            v,
            json!({"declaration": "Deep.two", "text": "Eq.symm h"}),
        ),
    );
    assert_eq!(ran["declaration"], echo("Alg.Deep.two", 10, 8), "{ran}");
    assert_eq!(ran["outcome"], "closed", "{ran}");

    // lean_run_at_handle: at the start of a finished tactic proof.
    let handle = mcp.call(
        "lean_run_at_handle",
        args(
            &root,
            v,
            json!({"declaration": "Other.one", "at": "start", "text": "skip"}),
        ),
    );
    assert_eq!(handle["declaration"], echo("Other.one", 18, 2), "{handle}");
    assert!(handle["next_handle"].is_string(), "{handle}");

    // lean_run_batch: the verdicts at the resolved place.
    let batch = mcp.call(
        "lean_run_batch",
        args(
            &root,
            v,
            json!({"declaration": "Alg.Deep.two", "texts": ["Eq.symm h"]}),
        ),
    );
    assert_eq!(batch["declaration"], echo("Alg.Deep.two", 10, 8), "{batch}");
    assert_eq!(batch["first_closed"], 0, "{batch}");

    // lean_todo: only the declaration's items.
    let all = mcp.call("lean_todo", args(&root, v, json!({"kinds": ["sorry"]})));
    assert_eq!(all["items"].as_array().unwrap().len(), 3, "{all}");
    let one = mcp.call(
        "lean_todo",
        args(&root, v, json!({"declaration": "two", "kinds": ["sorry"]})),
    );
    assert_eq!(one["declaration"], echo("Alg.Deep.two", 9, 0), "{one}");
    let items = one["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{one}");
    assert_eq!(
        items[0]["range"]["start"],
        json!({"line": 10, "character": 2}),
        "{one}"
    );
}

#[test]
fn unknown_ambiguous_and_conflicting_addresses_are_clear_errors() {
    let (_copy, mut mcp, root, v) = start();
    let goals = |extra: Value| {
        let mut a = args(&root, v, extra);
        a["mode"] = json!("before");
        a
    };

    let unknown = mcp.call_err("lean_goals", goals(json!({"declaration": "Alg.on"})));
    assert_eq!(unknown["data"]["reason"], "unknownDeclaration", "{unknown}");
    assert_eq!(unknown["data"]["matches"][0], "Alg.one", "{unknown}");
    assert!(
        unknown["message"].as_str().unwrap().contains("`Alg.one`"),
        "{unknown}"
    );

    let ambiguous = mcp.call_err("lean_run_at", {
        let mut a = args(&root, v, json!({"declaration": "one"}));
        a["text"] = json!("rfl");
        a
    });
    assert_eq!(
        ambiguous["data"]["reason"], "ambiguousDeclaration",
        "{ambiguous}"
    );
    assert_eq!(
        ambiguous["data"]["matches"],
        json!(["Alg.one", "Other.one"]),
        "{ambiguous}"
    );

    let no_sorry = mcp.call_err("lean_goals", goals(json!({"declaration": "Other.one"})));
    assert_eq!(no_sorry["data"]["reason"], "noSorry", "{no_sorry}");

    for (extra, says) in [
        (
            json!({"declaration": "Alg.one", "line": 5, "character": 2}),
            "not both",
        ),
        (json!({}), "line and character, or declaration"),
        (
            json!({"line": 5, "character": 2, "at": "start"}),
            "at goes with declaration",
        ),
        (json!({"line": 5}), "both line and character"),
    ] {
        let e = mcp.call_err("lean_goals", goals(extra.clone()));
        assert!(
            e["message"].as_str().unwrap().contains(says),
            "{extra}: {e}"
        );
    }
    let batch = mcp.call_err(
        "lean_run_batch",
        json!({"workspace": ws(&root), "path": FILE, "declaration": "Alg.one", "texts": ["rfl"]}),
    );
    assert!(
        batch["message"].as_str().unwrap().contains("not both"),
        "{batch}"
    );
    let todo = mcp.call_err(
        "lean_todo",
        args(&root, v, json!({"declaration": "Alg.one", "start_line": 0})),
    );
    assert!(
        todo["message"].as_str().unwrap().contains("not both"),
        "{todo}"
    );
}

/// Edit text is never cut by the output caps (issue 28's brief, item 2): a
/// handle edit past the 6,000-character field cap comes back whole, and one
/// past the result cap is refused as too large, never returned partial.
#[test]
fn a_long_handle_edit_comes_back_whole_or_not_at_all() {
    let (_copy, mut mcp, root, v) = start();
    let first = mcp.call(
        "lean_run_at_handle",
        args(
            &root,
            v,
            json!({"declaration": "Other.one", "at": "start", "text": "skip"}),
        ),
    );
    let long = format!("skip -- {}", "x".repeat(7_000));
    let next = mcp.call(
        "lean_run_with",
        json!({"workspace": ws(&root), "path": FILE, "handle": first["next_handle"], "text": long}),
    );
    let handle = next["next_handle"].clone();
    assert!(handle.is_string(), "{next}");
    let edit = mcp.call(
        "lean_handle_edit",
        json!({"workspace": ws(&root), "path": FILE, "handle": handle}),
    );
    let text = edit["edit"]["newText"].as_str().unwrap();
    assert!(text.contains(&long), "cut: {} characters", text.len());
    assert!(edit.get("truncated").is_none(), "{edit}");

    let refused = mcp.call_err(
        "lean_handle_edit",
        json!({"workspace": ws(&root), "path": FILE, "handle": handle, "max_result_bytes": 4_000}),
    );
    assert_eq!(refused["code"], "resourceLimit", "{refused}");
    assert_eq!(refused["data"]["reason"], "editTooLarge", "{refused}");
}

/// A term in place of a `sorry` under `exact` is judged by the type `exact`
/// expects: Lean reports the mismatch at `exact`, before the term's place,
/// and that error is the candidate's (it read as `closed` once: `h : Eq a b`
/// for `⊢ Eq b a`). Every probe tool gives the same verdict.
#[test]
fn a_term_of_the_wrong_type_under_exact_fails_in_every_probe_tool() {
    let (_copy, mut mcp, root, v) = start();
    // `theorem two … := by` / `  exact sorry`: the `sorry` at (10, 8).
    let at = |text: &str| args(&root, v, json!({"line": 10, "character": 8, "text": text}));
    let wrong = mcp.call("lean_run_at", at("h"));
    assert_eq!(wrong["outcome"], "failed", "{wrong}");
    let message = &wrong["messages"][0];
    assert!(
        message["text"].as_str().unwrap().contains("Type mismatch"),
        "{wrong}"
    );
    assert_eq!(
        message["range"]["start"],
        json!({"line": 10, "character": 2}),
        "placed at `exact` in the user's file: {wrong}"
    );
    let right = mcp.call("lean_run_at", at("Eq.symm h"));
    assert_eq!(right["outcome"], "closed", "{right}");
    let batch = mcp.call(
        "lean_run_batch",
        args(
            &root,
            v,
            json!({"line": 10, "character": 8, "texts": ["h", "Eq.refl a", "Eq.symm h"]}),
        ),
    );
    let outcomes: Vec<&Value> = batch["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["outcome"])
        .collect();
    assert_eq!(
        outcomes,
        [&json!("failed"), &json!("failed"), &json!("closed")],
        "{batch}"
    );
    assert_eq!(batch["first_closed"], 2, "{batch}");
}
