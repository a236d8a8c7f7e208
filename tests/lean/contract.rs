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

use crate::common;

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
// Item 2: the workspace, path and version in every answer; symbol kinds named.

#[test]
fn navigation_results_echo_the_workspace_and_name_their_document_version() {
    let root = fixture("basic");
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root, GOALS);

    let hover = mcp.call("lean_hover", at(&root, GOALS, v, 11, 34));
    assert_eq!(
        keys(&hover),
        ["hover", "line_text", "path", "version", "workspace"],
        "{hover}"
    );
    assert!(
        hover["hover"]["contents"]["value"]
            .as_str()
            .is_some_and(|t| t.contains("Fix.N.add : N → N → N")),
        "{hover}"
    );
    // Nothing at a position is Lean's null under the same key.
    let nothing = mcp.call("lean_hover", at(&root, GOALS, v, 15, 0));
    assert_eq!(nothing["hover"], Value::Null, "{nothing}");

    let signature = mcp.call("lean_signature_help", at(&root, GOALS, v, 11, 38));
    assert_eq!(
        keys(&signature),
        ["path", "signature_help", "version", "workspace"],
        "{signature}"
    );
    assert_eq!(
        signature["signature_help"]["signatures"][0]["label"],
        "N → N → N"
    );

    let definition = mcp.call("lean_definition", at(&root, GOALS, v, 11, 34));
    assert_eq!(
        keys(&definition),
        ["locations", "path", "version", "workspace"],
        "{definition}"
    );
    assert_eq!(
        definition["locations"][0]["targetPath"], "Fix/Basic.lean",
        "{definition}"
    );

    let mut refs_args = at(&root, GOALS, v, 11, 34);
    refs_args["include_declaration"] = json!(true);
    let references = mcp.call("lean_references", refs_args);
    assert_eq!(
        keys(&references),
        ["locations", "path", "version", "workspace"],
        "{references}"
    );
    assert_eq!(references["locations"].as_array().map(Vec::len), Some(17));

    let symbols = mcp.call(
        "lean_document_symbols",
        json!({"workspace": ws(&root), "path": GOALS, "version": v}),
    );
    assert_eq!(
        keys(&symbols),
        ["path", "symbols", "version", "workspace"],
        "{symbols}"
    );
    let top = &symbols["symbols"][0];
    assert_eq!(top["name"], "Fix", "{symbols}");
    assert_eq!(top["kind"], "namespace", "{symbols}");
    for child in top["children"].as_array().expect("children") {
        assert!(
            child["kind"]
                .as_str()
                .is_some_and(|k| k.chars().all(|c| c.is_ascii_lowercase() || c == '_')),
            "a kind name, not an LSP number: {child}"
        );
    }

    let found = mcp.call(
        "lean_workspace_symbols",
        json!({"workspace": ws(&root), "query": "zero_add"}),
    );
    assert_eq!(keys(&found), ["symbols", "workspace"], "{found}");
    let list = found["symbols"].as_array().expect("symbols");
    assert!(!list.is_empty(), "{found}");
    for symbol in list {
        assert!(symbol["kind"].is_string(), "{symbol}");
    }

    for result in [&hover, &signature, &definition, &references, &symbols] {
        assert_eq!(result["workspace"], ws(&root), "{result}");
        assert_eq!(result["path"], GOALS, "{result}");
        assert_eq!(result["version"], v, "{result}");
    }
    assert_eq!(found["workspace"], ws(&root));
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
// Item 6: progress says something new each time, in the user's names.

/// Progress messages of `token`, in order.
fn progress_messages(mcp: &Mcp, token: &Value) -> Vec<String> {
    mcp.progress_of(token)
        .iter()
        .map(|p| p["message"].as_str().unwrap_or("").to_string())
        .collect()
}

fn assert_each_says_something_new(messages: &[String]) {
    for pair in messages.windows(2) {
        assert_ne!(pair[0], pair[1], "the same update twice: {messages:#?}");
    }
}

#[test]
fn progress_updates_differ_and_a_probe_names_the_users_file() {
    let root = fixture("basic");
    let mut mcp = spawn();
    // Slow.lean: seconds on one theorem, while Lean's reports change their
    // ranges (elaboration and kernel) but not the first line being processed.
    let token = json!("slow");
    mcp.call_with(
        "lean_sync",
        doc(&root, "Fix/Slow.lean"),
        &CallOpts::token(token.clone()),
    );
    let messages = progress_messages(&mcp, &token);
    assert!(
        messages
            .iter()
            .filter(|m| m.contains("elaborating"))
            .count()
            >= 1,
        "{messages:#?}"
    );
    assert_each_says_something_new(&messages);

    // A probe's progress names the user's file, never the shadow document.
    let v = sync(&mut mcp, &root, GOALS);
    let token = json!("probe");
    let r = mcp.call_with(
        "lean_run_at",
        run_args(&root, GOALS, v, 33, 2, "intro h"),
        &CallOpts::token(token.clone()),
    );
    assert_eq!(r["success"], true, "{r}");
    let messages = progress_messages(&mcp, &token);
    assert!(
        messages.len() >= 2,
        "preparation and the probe's progress: {messages:#?}"
    );
    for message in &messages {
        assert!(!message.contains("shadow"), "{messages:#?}");
        assert!(message.contains(GOALS), "{messages:#?}");
    }
    assert_each_says_something_new(&messages);
}

// ---------------------------------------------------------------------------
// Item 7: inspection tools forward file progress while they wait.

/// A file whose first theorem sleeps 3 s in Lean (wall time, no CPU), then
/// declarations to inspect after it: a code action (the unused variable) and
/// an application for signature help.
fn waiting_file(ms: u64) -> String {
    format!(
        "prelude\nimport Fix.Basic\n\nnamespace Fix\n\ntheorem sleepy : Eq one one := by\n  sleep {ms}\n  exact Eq.refl one\n\ndef ignores (n unused : N) : N := N.add n one\n\ntheorem after (n : N) : Eq n n := by\n  exact Eq.refl n\n\nend Fix\n"
    )
}

#[test]
fn inspection_tools_forward_file_progress_while_lean_elaborates() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    let path = "Fix/Waiting.lean";
    w.write(path, &waiting_file(3000));
    let mut mcp = spawn();
    let v1 = sync(&mut mcp, &root, path);
    let todo = mcp.call(
        "lean_todo",
        json!({"workspace": ws(&root), "path": path, "version": v1,
               "start_line": 0, "start_character": 0, "end_line": 15, "end_character": 0,
               "kinds": ["code_action"]}),
    );
    let action = todo["items"][0]["code_action"].clone();
    assert!(action.is_object(), "a code action for `unused`: {todo}");

    // A new version (same lines): Lean elaborates the sleep again.
    w.write(path, &waiting_file(3001));
    let v2 = mcp.call("lean_update", doc(&root, path))["version"]
        .as_u64()
        .unwrap();
    assert!(v2 > v1);
    let position = |line, character| at(&root, path, v2, line, character);
    let mut goals = position(12, 2);
    goals["mode"] = json!("before");
    let calls = [
        ("lean_hover", position(9, 4)),
        ("lean_signature_help", position(9, 40)),
        ("lean_definition", position(9, 4)),
        // Not `lean_document_symbols`: Lean can answer it from the parsed
        // commands before the sleep's elaboration reports any progress (seen
        // on a quiet machine), so whether progress comes first is timing.
        ("lean_goals", goals),
        (
            "lean_todo",
            json!({"workspace": ws(&root), "path": path, "version": v2,
                   "start_line": 0, "start_character": 0, "end_line": 15, "end_character": 0}),
        ),
        (
            "lean_code_action_resolve",
            json!({"workspace": ws(&root), "path": path, "version": v2, "code_action": action}),
        ),
    ];
    let started: Vec<(&str, Value, Value, Value)> = calls
        .into_iter()
        .map(|(tool, args)| {
            let token = json!(format!("wait-{tool}"));
            let id = mcp.start_call(tool, args.clone(), &CallOpts::token(token.clone()));
            (tool, args, id, token)
        })
        .collect();
    for (tool, args, id, token) in &started {
        mcp.ok(id, tool, args);
        let messages = progress_messages(&mcp, token);
        assert!(
            messages.iter().any(|m| m.contains("elaborat")),
            "{tool} forwarded no file progress while it waited: {messages:#?}"
        );
        assert_each_says_something_new(&messages);
    }
}

// ---------------------------------------------------------------------------
// Item 8: no internal coordinates or paths.

#[test]
fn a_continuation_reports_ranges_as_lean_run_at_does() {
    let root = fixture("basic");
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root, GOALS);
    // (15, 48) is the end of the `show` line: the probe goes on a new line of
    // the block. A message inside the probe text is placed in the step
    // (`step_range`), never at a line of the user's file, which does not
    // hold the step (issue 26 item 3), in one probe and along a chain.
    let whole = mcp.call(
        "lean_run_at",
        run_args(&root, GOALS, v, 15, 48, "skip\nexact wrong"),
    );
    let first = mcp.call(
        "lean_run_at_handle",
        run_args(&root, GOALS, v, 15, 48, "skip"),
    );
    let handle = first["next_handle"].as_str().expect("handle").to_string();
    let step = mcp.call(
        "lean_run_with",
        json!({"workspace": ws(&root), "path": GOALS, "handle": handle, "text": "exact wrong"}),
    );
    let (whole_error, step_error) = (errors_of(&whole), errors_of(&step));
    assert_eq!(whole_error.len(), 1, "{whole}");
    assert_eq!(step_error.len(), 1, "{step}");
    assert_eq!(
        whole_error[0]["step_range"]["start"],
        pos(1, 10),
        "`wrong` is on the probe text's second line, laid out in the block at column 4: {whole}"
    );
    assert!(whole_error[0].get("range").is_none(), "{whole}");
    assert!(step_error[0].get("range").is_none(), "{step}");
    assert_eq!(step_error[0]["step_range"]["start"], pos(0, 6), "{step}");
}

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

#[test]
fn a_handle_used_with_an_unsynced_file_says_that_file_needs_a_sync() {
    let root = fixture("basic");
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root, GOALS);
    let first = mcp.call(
        "lean_run_at_handle",
        run_args(&root, GOALS, v, 33, 2, "intro h"),
    );
    let handle = first["next_handle"].as_str().expect("handle").to_string();
    let error = mcp.call_err(
        "lean_run_with",
        json!({"workspace": ws(&root), "path": SORRY, "handle": handle, "text": "skip"}),
    );
    let message = error["message"].as_str().unwrap_or("");
    assert!(
        message.contains(SORRY) && message.contains("lean_sync"),
        "{error}"
    );
    assert!(!message.contains("no live runtime"), "{error}");
    assert_eq!(error["data"]["reason"], "notSynced", "{error}");
}

// ---------------------------------------------------------------------------
// Item 10: term-mode holes end to end.

#[test]
fn todo_suggestions_are_probes_that_lean_run_at_accepts() {
    let root = fixture("basic");
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root, SORRY);
    let todo = mcp.call(
        "lean_todo",
        json!({"workspace": ws(&root), "path": SORRY, "version": v,
               "start_line": 0, "start_character": 0, "end_line": 27, "end_character": 0,
               "kinds": ["sorry"], "suggest": "basic"}),
    );
    let items = todo["items"].as_array().expect("items");
    assert_eq!(items.len(), 3, "{todo}");
    for item in items {
        let place = &item["probe"];
        let args = run_args(
            &root,
            SORRY,
            v,
            place["line"].as_u64().unwrap(),
            place["character"].as_u64().unwrap(),
            item["run_at_text"].as_str().expect("run_at_text"),
        );
        // Accepted: a run result (the test toolchain has no `exact?`, so the
        // probe itself may fail), never a refused call.
        let r = mcp.call("lean_run_at", args);
        assert!(r["success"].is_boolean(), "{item}: {r}");
    }
}

#[test]
fn term_text_runs_at_a_term_mode_sorry() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    let path = "Fix/Terms.lean";
    // Line 5: a theorem proved by a term `sorry` (at 5:30); line 7: a
    // definition (`sorry` at 7:13); line 9: a hole inside an application
    // (`sorry` at 9:32); line 11: a hole before an error of the file's own
    // (`sorry` at 11:19, `missingThing` at 11:25).
    w.write(
        path,
        "prelude\nimport Fix.Basic\n\nnamespace Fix\n\ntheorem t (n : N) : Eq n n := sorry\n\ndef x : N := sorry\n\ndef y : N := N.add (N.succ one) sorry\n\ndef z : N := N.add sorry missingThing\n\nend Fix\n",
    );
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root, path);
    let mut run = |line, character, text: &str| {
        mcp.call(
            "lean_run_at",
            run_args(&root, path, v, line, character, text),
        )
    };

    let r = run(5, 30, "Eq.refl n");
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["messages"], json!([]), "{r}");
    assert_eq!(r["proof_state"]["goals"], json!([]), "{r}");
    let r = run(5, 30, "by exact Eq.refl n");
    assert_eq!(r["success"], true, "{r}");

    // A wrong term fails in the probe text, and the expected type is the
    // state to work from.
    let r = run(5, 30, "Eq.refl one");
    assert_eq!(r["success"], false, "{r}");
    let errors = errors_of(&r);
    assert_eq!(errors.len(), 1, "{r}");
    assert_eq!(errors[0]["step_range"]["start"], pos(0, 0), "{r}");
    assert!(errors[0].get("range").is_none(), "in the step only: {r}");
    let expected = &r["proof_state"]["goals"][0];
    assert_eq!(expected["pretty"], "n : N\n⊢ Eq n n", "{r}");

    let r = run(7, 13, "N.succ one");
    assert_eq!(r["success"], true, "{r}");
    let r = run(7, 13, "missingThing");
    assert_eq!(r["success"], false, "{r}");
    assert_eq!(
        errors_of(&r)[0]["text"],
        "Unknown identifier `missingThing`"
    );

    // Inside an application, the term at the position is replaced and the
    // rest of the declaration stays.
    let r = run(9, 32, "N.zero");
    assert_eq!(r["success"], true, "{r}");
    let r = run(9, 32, "Eq.refl one");
    assert_eq!(r["success"], false, "{r}");
    let error = &errors_of(&r)[0];
    assert_eq!(error["step_range"]["start"], pos(0, 0), "{r}");
    assert!(error.get("range").is_none(), "in the step only: {r}");

    // The file's own error after the hole, moved along by a longer term, is
    // not the probe's doing.
    let r = run(11, 19, "N.succ one");
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["messages"], json!([]), "{r}");
}

// ---------------------------------------------------------------------------
// Item 12: the addressed line's text.

#[test]
fn position_bound_answers_and_position_errors_carry_the_line_text() {
    let root = fixture("basic");
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root, GOALS);
    let line15 = fixture_line(GOALS, 15);

    let hover = mcp.call("lean_hover", at(&root, GOALS, v, 15, 4));
    assert_eq!(hover["line_text"], line15.as_str(), "{hover}");
    let mut goals = at(&root, GOALS, v, 15, 4);
    goals["mode"] = json!("before");
    let goals = mcp.call("lean_goals", goals);
    assert_eq!(goals["line_text"], line15.as_str(), "{goals}");
    for tool in ["lean_run_at", "lean_run_at_handle"] {
        let r = mcp.call(tool, run_args(&root, GOALS, v, 15, 4, "skip"));
        assert_eq!(r["line_text"], line15.as_str(), "{tool}: {r}");
    }

    // Past the end of the line: the error shows the line.
    let error = mcp.call_err("lean_hover", at(&root, GOALS, v, 15, 200));
    assert_eq!(error["code"], "invalidParams", "{error}");
    assert_eq!(error["data"]["line_text"], line15.as_str(), "{error}");
}

// ---------------------------------------------------------------------------
// Item 13: the disk moved on.

#[test]
fn answers_for_a_version_whose_file_changed_on_disk_say_so() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root, GOALS);
    let mut goals = at(&root, GOALS, v, 15, 4);
    goals["mode"] = json!("before");
    let todo = json!({"workspace": ws(&root), "path": GOALS, "version": v,
        "start_line": 0, "start_character": 0, "end_line": 5, "end_character": 0});
    let asks = [
        ("lean_hover", at(&root, GOALS, v, 11, 34)),
        ("lean_goals", goals),
        ("lean_todo", todo),
        ("lean_run_at", run_args(&root, GOALS, v, 15, 4, "skip")),
    ];
    for (tool, args) in &asks {
        let answer = mcp.call(tool, args.clone());
        assert!(answer.get("disk_changed").is_none(), "{tool}: {answer}");
    }

    // The file changes on disk; the version is still the current one.
    w.write(GOALS, &format!("{}\n-- edited\n", w.read(GOALS)));
    for (tool, args) in &asks {
        let answer = mcp.call(tool, args.clone());
        assert_eq!(answer["disk_changed"], true, "{tool}: {answer}");
    }

    // Synced again: a new version that matches the disk.
    let v2 = sync(&mut mcp, &root, GOALS);
    let answer = mcp.call("lean_hover", at(&root, GOALS, v2, 11, 34));
    assert!(answer.get("disk_changed").is_none(), "{answer}");
}
