//! Inspection and navigation tools against the real Lean 4.35.0 test toolchain
//! (issue 4, point 5): each tool's happy path with the content recorded in
//! `tests/fixtures/EXPECTED.md`, `lean_todo` and code actions, UTF-16
//! positions, snapshot binding errors, and a burst of concurrent calls.

use crate::common;

use serde_json::{Value, json};

use common::lean::lean;
use common::mcp::{CallOpts, Era, Mcp, Spawn, ws};

fn spawn(era: Era) -> Mcp {
    Mcp::start(era, Spawn::default().envs(lean().server_env()))
}

fn basic() -> String {
    lean().fixture("basic").to_string_lossy().into_owned()
}

/// A server with `files` of the basic fixture synced (each at version 1).
fn synced(files: &[&str]) -> (Mcp, String) {
    let root = basic();
    let mut mcp = spawn(Era::Modern);
    for file in files {
        let result = mcp.call("lean_sync", json!({"workspace": ws(&root), "path": file}));
        assert_eq!(result["version"], 1);
    }
    (mcp, root)
}

fn at(root: &str, path: &str, line: u64, character: u64) -> Value {
    json!({"workspace": ws(root), "path": path, "version": 1, "line": line, "character": character})
}

/// lean_goals arguments asking for the goals' parts.
fn goals_args(root: &str, line: u64, character: u64, mode: &str) -> Value {
    let mut args = at(root, "Fix/Goals.lean", line, character);
    args["mode"] = json!(mode);
    args["structured_goals"] = json!(true);
    args
}

fn range(sl: u64, sc: u64, el: u64, ec: u64) -> Value {
    json!({"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}})
}

fn hover_text(result: &Value) -> &str {
    result["hover"]["contents"]["value"]
        .as_str()
        .unwrap_or_else(|| panic!("no hover text: {result}"))
}

/// `(names, type, value)` of each hypothesis of a structured goal.
fn hyps(goal: &Value) -> Vec<(Vec<String>, String, Option<String>)> {
    goal["hyps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["names"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|n| n.as_str().unwrap().to_string())
                    .collect(),
                h["type"].as_str().unwrap().to_string(),
                h["value"].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn hover_names_the_type_and_docstring() {
    let (mut mcp, root) = synced(&["Fix/Goals.lean"]);
    let add = mcp.call("lean_hover", at(&root, "Fix/Goals.lean", 11, 34));
    assert_eq!(
        hover_text(&add),
        "```lean\nFix.N.add : N → N → N\n```\n***\nAddition on `N`, by recursion on the second argument. \n***\n*import Fix.Basic*"
    );
    assert_eq!(add["hover"]["range"], range(11, 32, 11, 37));
    assert_eq!(add["hover"]["contents"]["kind"], "markdown");
    let congr = mcp.call("lean_hover", at(&root, "Fix/Goals.lean", 16, 10));
    assert!(
        hover_text(&congr).starts_with(
            "```lean\ncongrArg.{u, v} {α : Sort u} {β : Sort v} {a₁ a₂ : α} (f : α → β)"
        ),
        "{congr}"
    );
    let ih = mcp.call("lean_hover", at(&root, "Fix/Goals.lean", 16, 26));
    assert_eq!(hover_text(&ih), "```lean\nih : Eq (N.zero.add m) m\n```");
    assert_eq!(ih["hover"]["range"], range(16, 26, 16, 28));
    let local = mcp.call("lean_hover", at(&root, "Fix/Goals.lean", 11, 8));
    assert_eq!(
        hover_text(&local),
        "```lean\nFix.zero_add' (n : N) : Eq (N.zero.add n) n\n```\n***\n`0 + n = n`, re-proved step by step. "
    );
    let let_var = mcp.call("lean_hover", at(&root, "Fix/Goals.lean", 27, 22));
    assert_eq!(hover_text(&let_var), "```lean\nt : N\n```");
    // Nothing there: Lean's null, under the same key.
    let nothing = mcp.call("lean_hover", at(&root, "Fix/Goals.lean", 15, 0));
    assert_eq!(nothing["hover"], Value::Null, "{nothing}");
    // The harness checked each result against lean_hover's outputSchema (and
    // the sync's against lean_sync's), not only these assertions.
    assert!(mcp.results_checked() >= 6, "{}", mcp.results_checked());
}

#[test]
fn definition_points_into_the_dependency_with_a_workspace_path() {
    let (mut mcp, root) = synced(&["Fix/Goals.lean"]);
    let cases = [
        ((11, 34), (226, 4, 226, 9)),
        ((21, 27), (265, 8, 265, 18)),
        ((23, 37), (277, 8, 277, 18)),
        ((16, 10), (75, 8, 75, 16)),
    ];
    for ((line, character), (sl, sc, el, ec)) in cases {
        let result = mcp.call(
            "lean_definition",
            at(&root, "Fix/Goals.lean", line, character),
        );
        let links = result["locations"]
            .as_array()
            .unwrap_or_else(|| panic!("a LocationLink list: {result}"));
        assert_eq!(links.len(), 1, "{result}");
        let link = &links[0];
        assert_eq!(link["targetPath"], "Fix/Basic.lean", "{link}");
        assert_eq!(link["targetUri"], format!("file://{root}/Fix/Basic.lean"));
        assert_eq!(
            link["targetSelectionRange"],
            range(sl, sc, el, ec),
            "{line}:{character}"
        );
        assert_eq!(link["targetRange"], range(sl, sc, el, ec));
    }
}

#[test]
fn references_count_with_only_goals_open_and_honour_include_declaration() {
    let (mut mcp, root) = synced(&["Fix/Goals.lean"]);
    let with_decl = {
        let mut args = at(&root, "Fix/Goals.lean", 11, 34);
        args["include_declaration"] = json!(true);
        mcp.call("lean_references", args)
    };
    let refs = with_decl["locations"].as_array().unwrap();
    assert_eq!(refs.len(), 17, "{with_decl}");
    let in_basic = refs
        .iter()
        .filter(|r| r["path"] == "Fix/Basic.lean")
        .count();
    let in_goals = refs
        .iter()
        .filter(|r| r["path"] == "Fix/Goals.lean")
        .count();
    assert_eq!((in_basic, in_goals), (11, 6));
    assert!(
        refs.iter()
            .any(|r| r["path"] == "Fix/Basic.lean" && r["range"] == range(226, 4, 226, 9))
    );
    assert!(
        refs.iter()
            .all(|r| r["uri"].as_str().unwrap().starts_with("file://"))
    );
    let without = {
        let mut args = at(&root, "Fix/Goals.lean", 11, 34);
        args["include_declaration"] = json!(false);
        mcp.call("lean_references", args)
    };
    let refs = without["locations"].as_array().unwrap();
    assert_eq!(refs.len(), 16, "{without}");
    assert!(
        !refs
            .iter()
            .any(|r| r["path"] == "Fix/Basic.lean" && r["range"] == range(226, 4, 226, 9))
    );
    let zero_add = mcp.call("lean_references", {
        let mut args = at(&root, "Fix/Goals.lean", 21, 27);
        args["include_declaration"] = json!(true);
        args
    });
    assert_eq!(
        zero_add["locations"].as_array().unwrap().len(),
        3,
        "{zero_add}"
    );
}

#[test]
fn document_and_workspace_symbols_and_signature_help() {
    let (mut mcp, root) = synced(&["Fix/Goals.lean"]);
    let symbols = mcp.call(
        "lean_document_symbols",
        json!({"workspace": ws(&root), "path": "Fix/Goals.lean", "version": 1}),
    );
    let top = symbols["symbols"]
        .as_array()
        .unwrap_or_else(|| panic!("{symbols}"));
    let children: Vec<&Value> = top
        .iter()
        .flat_map(|s| s["children"].as_array().into_iter().flatten())
        .collect();
    let declared: Vec<&str> = children
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for name in [
        "zero_add'",
        "add_comm'",
        "let_two",
        "and_swap",
        "or_right",
        "two_beq",
        "add_one",
        "and_self",
    ] {
        assert!(declared.contains(&name), "{name} missing from {declared:?}");
    }
    let zero_add = children.iter().find(|c| c["name"] == "zero_add'").unwrap();
    assert_eq!(zero_add["selectionRange"], range(11, 8, 11, 17));
    assert_eq!(zero_add["range"], range(10, 0, 16, 28));

    // Workspace-scoped, no version: the dependency's index plus open files.
    let found = mcp.call(
        "lean_workspace_symbols",
        json!({"workspace": ws(&root), "query": "zero_add"}),
    );
    let found = found["symbols"]
        .as_array()
        .unwrap_or_else(|| panic!("{found}"));
    let by_name = |name: &str| found.iter().find(|s| s["name"] == name).cloned();
    let dep = by_name("Fix.N.zero_add").expect("Fix.N.zero_add");
    assert_eq!(dep["location"]["path"], "Fix/Basic.lean");
    assert_eq!(dep["location"]["range"], range(265, 8, 265, 18));
    let open = by_name("Fix.zero_add'").expect("Fix.zero_add'");
    assert_eq!(open["location"]["path"], "Fix/Goals.lean");

    // Signature help inside `N.add N.zero n`.
    let sig = mcp.call("lean_signature_help", at(&root, "Fix/Goals.lean", 11, 38));
    assert_eq!(
        sig["signature_help"]["signatures"][0]["label"], "N → N → N",
        "{sig}"
    );
    let none = mcp.call("lean_signature_help", at(&root, "Fix/Goals.lean", 16, 10));
    assert_eq!(none["signature_help"], Value::Null, "{none}");
}

#[test]
fn goals_before_and_after_are_structured_from_rpc() {
    let (mut mcp, root) = synced(&["Fix/Goals.lean"]);
    let before = mcp.call("lean_goals", goals_args(&root, 15, 4, "before"));
    assert_eq!(before["source"], "rpc", "{before}");
    assert_eq!(before["mode"], "before");
    assert_eq!(before["version"], 1);
    assert_eq!(before["path"], "Fix/Goals.lean");
    let goals = before["goals"].as_array().unwrap();
    assert_eq!(goals.len(), 1);
    assert_eq!(goals[0]["userName"], "succ");
    assert_eq!(goals[0]["goalPrefix"], "⊢ ");
    assert_eq!(goals[0]["target"], "Eq (N.zero.add m.succ) m.succ");
    assert_eq!(
        hyps(&goals[0]),
        vec![
            (names(&["m"]), "N".to_string(), None),
            (names(&["ih"]), "Eq (N.zero.add m) m".to_string(), None)
        ]
    );

    let after = mcp.call("lean_goals", goals_args(&root, 15, 4, "after"));
    assert_eq!(after["source"], "rpc");
    let goals_after = after["goals"].as_array().unwrap();
    assert_eq!(goals_after.len(), 1);
    assert_eq!(goals_after[0]["target"], "Eq (N.zero.add m).succ m.succ");
    assert_ne!(before["goals"], after["goals"], "`show` changes the goal");
    // From inside the tactic, "before" still means before the tactic.
    let inside = mcp.call("lean_goals", goals_args(&root, 15, 9, "before"));
    assert_eq!(inside["goals"], before["goals"]);
    assert_eq!(inside["position"], json!({"line": 15, "character": 4}));

    // A let-bound hypothesis carries its value.
    let intro_before = mcp.call("lean_goals", goals_args(&root, 28, 2, "before"));
    assert_eq!(
        intro_before["goals"][0]["target"],
        "let t := one.add one;\nEq t two"
    );
    assert_eq!(intro_before["goals"][0]["hyps"], json!([]));
    let intro_after = mcp.call("lean_goals", goals_args(&root, 28, 2, "after"));
    let goal = &intro_after["goals"][0];
    assert_eq!(goal["target"], "Eq t two");
    assert_eq!(
        hyps(goal),
        vec![(
            names(&["t"]),
            "N".to_string(),
            Some("one.add one".to_string())
        )]
    );

    // Grouped names and two goals.
    let two = mcp.call("lean_goals", goals_args(&root, 37, 4, "before"));
    let two = two["goals"].as_array().unwrap();
    assert_eq!(two.len(), 2);
    assert_eq!(two[0]["userName"], "intro.left");
    assert_eq!(two[1]["userName"], "intro.right");
    assert_eq!(
        hyps(&two[0])[0],
        (names(&["p", "q"]), "Prop".to_string(), None)
    );

    // Unasked, a goal is Lean's text alone.
    let mut plain = goals_args(&root, 15, 4, "before");
    plain.as_object_mut().unwrap().remove("structured_goals");
    let plain = mcp.call("lean_goals", plain);
    assert_eq!(
        plain["goals"],
        json!([{"pretty": goals[0]["pretty"]}]),
        "{plain}"
    );

    // Proof finished, or no tactic block at all: an empty list, not an error.
    let done = mcp.call("lean_goals", goals_args(&root, 16, 28, "after"));
    assert_eq!(done["goals"], json!([]));
    let outside = mcp.call("lean_goals", goals_args(&root, 8, 0, "before"));
    assert_eq!(outside["goals"], json!([]));
}

#[test]
fn todo_finds_real_sorries_only() {
    let (mut mcp, root) = synced(&["Fix/Sorry.lean"]);
    let args = json!({
        "workspace": ws(&root), "path": "Fix/Sorry.lean", "version": 1,
        "start_line": 0, "start_character": 0, "end_line": 27, "end_character": 0,
        "suggest": "basic",
    });
    let todo = mcp.call("lean_todo", args.clone());
    let items = todo["items"].as_array().unwrap();
    let sorries: Vec<&Value> = items.iter().filter(|i| i["kind"] == "sorry").collect();
    let starts: Vec<Value> = sorries
        .iter()
        .map(|i| i["range"]["start"].clone())
        .collect();
    assert_eq!(
        starts,
        vec![
            json!({"line": 13, "character": 2}),
            json!({"line": 16, "character": 22}),
            json!({"line": 22, "character": 17}),
        ],
        "{todo}"
    );
    // Each range is what a probe at the item's place replaces: the whole
    // `exact sorry` in a tactic block (try a tactic where `exact` starts),
    // else the `sorry`.
    assert_eq!(sorries[0]["range"], range(13, 2, 13, 13), "{todo}");
    assert_eq!(
        sorries[0]["probe"],
        json!({"path": "Fix/Sorry.lean", "version": 1, "line": 13, "character": 2})
    );
    assert_eq!(sorries[0]["run_at_text"], "exact?");
    assert_eq!(
        sorries[0]["proof_state"],
        json!(["n : N\n⊢ Eq (n.add one) n.succ"])
    );
    // A term `sorry`: try a term in its place.
    assert_eq!(sorries[1]["range"], range(16, 22, 16, 27), "{todo}");
    assert_eq!(sorries[1]["probe"]["character"], 22);
    assert_eq!(sorries[1]["run_at_text"], "by exact?");
    // The warnings are not errors: no diagnostic items.
    assert!(items.iter().all(|i| i["kind"] != "diagnostic"), "{todo}");
    // Sorted by position.
    let positions: Vec<(u64, u64)> = items
        .iter()
        .map(|i| {
            (
                i["range"]["start"]["line"].as_u64().unwrap(),
                i["range"]["start"]["character"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] <= w[1]), "{positions:?}");
    // No range: the whole file. An end past the last line (or past its
    // line's end) is the file's end, not an error.
    let whole = mcp.call(
        "lean_todo",
        json!({"workspace": ws(&root), "path": "Fix/Sorry.lean", "version": 1, "suggest": "basic"}),
    );
    assert_eq!(whole["items"], todo["items"], "{whole}");
    assert_eq!(whole["range"]["start"], json!({"line": 0, "character": 0}));
    let mut past = args.clone();
    past["end_line"] = json!(9999);
    let past = mcp.call("lean_todo", past);
    assert_eq!(past["range"], whole["range"], "{past}");
    assert_eq!(past["items"], todo["items"]);
    let mut wide = args.clone();
    wide["end_line"] = json!(13);
    wide["end_character"] = json!(500);
    let wide = mcp.call("lean_todo", wide);
    assert_eq!(
        wide["range"]["end"],
        json!({"line": 13, "character": 13}),
        "{wide}"
    );
    // A range holding only the comment, docstring and string: nothing.
    let mut header = args.clone();
    header["start_line"] = json!(3);
    header["end_line"] = json!(10);
    let nothing = mcp.call("lean_todo", header);
    assert_eq!(nothing["items"], json!([]), "{nothing}");
    // Without suggestions there is no run_at_text.
    let mut plain = args;
    plain["suggest"] = json!("none");
    plain["kinds"] = json!(["sorry"]);
    let plain = mcp.call("lean_todo", plain);
    assert_eq!(plain["items"].as_array().unwrap().len(), 3);
    assert!(
        plain["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i.get("run_at_text").is_none())
    );
}

#[test]
fn todo_on_errors_reports_diagnostics_incomplete_proofs_and_code_actions_then_resolves_one() {
    let (mut mcp, root) = synced(&["Fix/Errors.lean"]);
    let args = json!({
        "workspace": ws(&root), "path": "Fix/Errors.lean", "version": 1,
        "start_line": 0, "start_character": 0, "end_line": 25, "end_character": 0,
        "suggest": "basic",
    });
    let todo = mcp.call("lean_todo", args.clone());
    let items = todo["items"].as_array().unwrap();
    let kinds: Vec<(&str, u64)> = items
        .iter()
        .map(|i| {
            (
                i["kind"].as_str().unwrap(),
                i["range"]["start"]["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(kinds.contains(&("diagnostic", 8)), "{kinds:?}");
    assert!(kinds.contains(&("diagnostic", 11)), "{kinds:?}");
    assert!(kinds.contains(&("incomplete_proof", 20)), "{kinds:?}");
    assert!(
        kinds.contains(&("code_action", 14)),
        "the linter's `_unused` fix is offered: {kinds:?}"
    );
    let unknown = items.iter().find(|i| i["kind"] == "diagnostic").unwrap();
    assert_eq!(unknown["range"], range(8, 28, 8, 40));
    assert_eq!(unknown["message"], "Unknown identifier `missingThing`");
    // The diagnostic once: its code beside its range, message and severity,
    // not a second copy of them in a nested object.
    assert_eq!(unknown["severity"], "error");
    assert_eq!(unknown["code"], "lean.unknownIdentifier", "{unknown}");
    assert!(unknown.get("diagnostic").is_none(), "{unknown}");
    let open = items
        .iter()
        .find(|i| i["kind"] == "incomplete_proof")
        .unwrap();
    assert_eq!(open["range"], range(20, 14, 20, 21));
    assert_eq!(open["run_at_text"], "exact?");
    assert_eq!(
        open["proof_state"],
        json!(["case succ\nk : N\nih : Eq (N.zero.add k) k\n⊢ Eq (N.zero.add k.succ) k.succ"])
    );
    let action = items.iter().find(|i| i["kind"] == "code_action").unwrap();
    assert_eq!(action["message"], "Try this: _unused");
    assert_eq!(action["range"], range(14, 21, 14, 27));

    // The kinds filter.
    let mut only = args.clone();
    only["kinds"] = json!(["incomplete_proof"]);
    let only = mcp.call("lean_todo", only);
    let only_items = only["items"].as_array().unwrap();
    assert_eq!(only_items.len(), 1, "{only}");
    assert_eq!(only_items[0]["kind"], "incomplete_proof");
    let mut actions = args;
    actions["kinds"] = json!(["code_action"]);
    let actions = mcp.call("lean_todo", actions);
    assert!(
        actions["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["kind"] == "code_action")
    );
    assert!(!actions["items"].as_array().unwrap().is_empty());

    // Resolve the action: returned, not applied; the file is untouched.
    let before = std::fs::read_to_string(format!("{root}/Fix/Errors.lean")).unwrap();
    let resolved = mcp.call(
        "lean_code_action_resolve",
        json!({"workspace": ws(&root), "path": "Fix/Errors.lean", "version": 1, "code_action": action["code_action"]}),
    );
    assert_eq!(resolved["applied"], false);
    assert_eq!(resolved["version"], 1);
    let edit = &resolved["code_action"]["edit"]["documentChanges"][0];
    assert_eq!(edit["edits"][0]["newText"], "_unused", "{resolved}");
    assert_eq!(edit["edits"][0]["range"], range(14, 21, 14, 27));
    assert_eq!(edit["textDocument"]["path"], "Fix/Errors.lean");
    assert_eq!(
        std::fs::read_to_string(format!("{root}/Fix/Errors.lean")).unwrap(),
        before
    );
}

#[test]
fn utf16_positions_on_a_line_with_surrogate_pairs() {
    let (mut mcp, root) = synced(&["Fix/Unicode.lean"]);
    let alpha = mcp.call("lean_hover", at(&root, "Fix/Unicode.lean", 11, 32));
    assert_eq!(hover_text(&alpha), "```lean\nFix.α₁ : N\n```");
    assert_eq!(alpha["hover"]["range"], range(11, 32, 11, 34));
    let double_f = mcp.call("lean_hover", at(&root, "Fix/Unicode.lean", 11, 29));
    assert_eq!(hover_text(&double_f), "```lean\nFix.𝔽 : N\n```");
    assert_eq!(double_f["hover"]["range"], range(11, 29, 11, 31));
    for ((line, character), (sl, sc, el, ec)) in
        [((11, 43), (7, 4, 7, 6)), ((11, 64), (8, 4, 8, 6))]
    {
        let def = mcp.call(
            "lean_definition",
            at(&root, "Fix/Unicode.lean", line, character),
        );
        assert_eq!(def["locations"][0]["targetPath"], "Fix/Unicode.lean");
        assert_eq!(
            def["locations"][0]["targetSelectionRange"],
            range(sl, sc, el, ec)
        );
    }
    // 11:30 is the second UTF-16 unit of `𝔽` (11:29–11:31).
    let inside = mcp.call_err("lean_hover", at(&root, "Fix/Unicode.lean", 11, 30));
    assert_eq!(inside["code"], "invalidParams", "{inside}");
    assert_eq!(inside["data"]["reason"], "insideSurrogatePair");
    assert_eq!(
        (
            inside["data"]["line"].as_u64(),
            inside["data"]["character"].as_u64()
        ),
        (Some(11), Some(30))
    );
    let line = std::fs::read_to_string(format!("{root}/Fix/Unicode.lean"))
        .unwrap()
        .lines()
        .nth(11)
        .unwrap()
        .to_string();
    let utf16_len = line.encode_utf16().count() as u64;
    assert!(utf16_len > line.chars().count() as u64);
    // The end of the line is a position; one past it is not.
    mcp.call("lean_hover", at(&root, "Fix/Unicode.lean", 11, utf16_len));
    let past = mcp.call_err(
        "lean_hover",
        at(&root, "Fix/Unicode.lean", 11, utf16_len + 1),
    );
    assert_eq!(past["data"]["line_length"], utf16_len);
}

#[test]
fn snapshot_binding_errors_stale_never_synced_and_out_of_range() {
    let (mut mcp, root) = synced(&["Fix/Goals.lean"]);
    // Stale (or future) version.
    let mut args = at(&root, "Fix/Goals.lean", 11, 34);
    args["version"] = json!(2);
    let stale = mcp.call_err("lean_hover", args);
    assert_eq!(stale["code"], "contentModified");
    assert_eq!(stale["data"]["reason"], "versionMismatch");
    assert_eq!(
        (
            stale["data"]["expected"].as_u64(),
            stale["data"]["current"].as_u64()
        ),
        (Some(2), Some(1))
    );
    let message = stale["message"].as_str().unwrap();
    assert!(
        message.contains("lean_update") && message.contains("lean_sync"),
        "{message}"
    );
    // Version 2 was never returned (the file is at 1): say that, not "changed".
    assert!(
        message.contains("never returned") && !message.contains("changed since"),
        "{message}"
    );
    let mut goals = goals_args(&root, 15, 4, "before");
    goals["version"] = json!(7);
    assert_eq!(
        mcp.call_err("lean_goals", goals)["data"]["reason"],
        "versionMismatch"
    );

    // A path of this runtime that was never synced.
    let never = mcp.call_err("lean_hover", at(&root, "Fix/Sorry.lean", 0, 0));
    assert_eq!(never["code"], "invalidParams");
    assert_eq!(never["data"]["reason"], "notSynced");
    let message = never["message"].as_str().unwrap();
    assert!(
        message.contains("Fix/Sorry.lean") && message.contains("lean_sync"),
        "{message}"
    );
    // A root with no runtime at all.
    let second = lean().fixture("second").to_string_lossy().into_owned();
    let never = mcp.call_err(
        "lean_document_symbols",
        json!({"workspace": ws(&second), "path": "Sec/Main.lean", "version": 1}),
    );
    assert_eq!(never["data"]["reason"], "notSynced", "{never}");
    assert!(
        mcp.workspace_stats(&second).is_none(),
        "a snapshot-bound call never creates a runtime"
    );

    // Out of range: the line, and the character past the end of a line.
    let lines: Vec<String> = std::fs::read_to_string(format!("{root}/Fix/Goals.lean"))
        .unwrap()
        .split('\n')
        .map(str::to_string)
        .collect();
    let far = mcp.call_err("lean_hover", at(&root, "Fix/Goals.lean", 5000, 0));
    assert_eq!(far["code"], "invalidParams");
    assert_eq!(far["data"]["reason"], "lineOutOfRange");
    assert_eq!(far["data"]["line_count"], lines.len());
    let len = lines[11].encode_utf16().count();
    let past = mcp.call_err(
        "lean_hover",
        at(&root, "Fix/Goals.lean", 11, len as u64 + 1),
    );
    assert_eq!(past["code"], "invalidParams");
    assert_eq!(past["data"]["reason"], "characterOutOfRange");
    assert_eq!(past["data"]["line_length"], len);
    let message = past["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("{len} UTF-16 code unit")),
        "names the line length: {message}"
    );
    let mut goals = goals_args(&root, 15, 400, "after");
    goals["line"] = json!(15);
    assert_eq!(mcp.call_err("lean_goals", goals)["code"], "invalidParams");
    // An end past the file is clamped (todo_finds_real_sorries_only); a
    // start past it is an error.
    let bad_range = mcp.call_err(
        "lean_todo",
        json!({"workspace": ws(&root), "path": "Fix/Goals.lean", "version": 1,
               "start_line": 9999, "start_character": 0}),
    );
    assert_eq!(bad_range["data"]["reason"], "lineOutOfRange");
}

#[test]
fn a_burst_of_200_concurrent_inspection_calls_is_answered_correctly() {
    let (mut mcp, root) = synced(&["Fix/Goals.lean"]);
    let kinds = ["hover", "goals", "definition", "hover_ih"];
    let mut requests = Vec::new();
    let mut expected = Vec::new();
    for i in 0..200 {
        let id = mcp.fresh_id();
        let kind = kinds[i % kinds.len()];
        let (tool, args) = match kind {
            "hover" => ("lean_hover", at(&root, "Fix/Goals.lean", 11, 34)),
            "goals" => (
                "lean_goals",
                goals_args(&root, 15, 4, if i % 8 == 1 { "before" } else { "after" }),
            ),
            "definition" => ("lean_definition", at(&root, "Fix/Goals.lean", 11, 34)),
            _ => ("lean_hover", at(&root, "Fix/Goals.lean", 16, 26)),
        };
        requests.push(mcp.call_request(&id, tool, args, &CallOpts::default()));
        expected.push((id, kind, i));
    }
    mcp.send_all(&requests);
    for (id, kind, i) in expected {
        let result = mcp.ok(&id, kind, &Value::Null);
        match kind {
            "hover" => assert!(
                hover_text(&result).starts_with("```lean\nFix.N.add : N → N → N"),
                "{result}"
            ),
            "goals" => {
                let target = if i % 8 == 1 {
                    "Eq (N.zero.add m.succ) m.succ"
                } else {
                    "Eq (N.zero.add m).succ m.succ"
                };
                assert_eq!(result["goals"][0]["target"], target, "call {i}: {result}");
                assert_eq!(result["source"], "rpc");
            }
            "definition" => assert_eq!(
                result["locations"][0]["targetSelectionRange"],
                range(226, 4, 226, 9)
            ),
            _ => assert_eq!(
                hover_text(&result),
                "```lean\nih : Eq (N.zero.add m) m\n```"
            ),
        }
    }
    let stats = mcp.workspace_stats(&root).unwrap();
    assert_eq!(stats["starts"], 1);
    assert!(stats["requests"].as_u64().unwrap() >= 201);
}
