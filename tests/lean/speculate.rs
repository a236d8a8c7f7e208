//! Speculative execution against the real Lean 4.35.0 test toolchain (issue 5,
//! point 5): `lean_run_at` in proof and command mode, proof handles
//! (`lean_run_at_handle` → `lean_run_with` → `lean_run_with_linear` →
//! `lean_release`) and every handle error, isolation of the user's document from
//! shadow documents, parallel probes, cancellation and the handle cap.
//!
//! Goals are written as `$/lean/plainGoal` renders them (see
//! `tests/fixtures/EXPECTED.md`), from the structured `proof_state`. Files are
//! only edited in temp copies of the fixtures. Timeouts are failure guards,
//! except the one bound that *is* the property (a cancelled probe frees its
//! slot at once), which has a wide margin.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use common::lean::{TempWorkspace, lean};
use common::mcp::{CallOpts, Era, Mcp, ws};

const GOALS: &str = "Fix/Goals.lean";
const ERRORS: &str = "Fix/Errors.lean";

fn spawn_with(extra: &[(&str, &str)]) -> Mcp {
    Mcp::on_lean(Era::Modern, extra)
}

fn spawn() -> Mcp {
    spawn_with(&[])
}

fn fixture(name: &str) -> String {
    lean().fixture(name).to_string_lossy().into_owned()
}

/// `lean_sync` a file and return its version.
fn sync(mcp: &mut Mcp, root: &str, path: &str) -> u64 {
    let r = mcp.call("lean_sync", json!({"workspace": ws(root), "path": path}));
    r["version"].as_u64().expect("version")
}

/// Probe arguments; the goals with their parts, which [`render`] reads.
fn at_args(root: &str, path: &str, version: u64, line: u64, character: u64, text: &str) -> Value {
    json!({
        "workspace": ws(root), "path": path, "version": version,
        "line": line, "character": character, "text": text, "structured_goals": true,
    })
}

fn with_args(root: &str, path: &str, handle: &str, text: &str) -> Value {
    json!({"workspace": ws(root), "path": path, "handle": handle, "text": text, "structured_goals": true})
}

/// One goal as `$/lean/plainGoal` renders it.
fn render(goal: &Value) -> String {
    let mut out = String::new();
    if let Some(name) = goal.get("userName").and_then(Value::as_str) {
        out.push_str(&format!("case {name}\n"));
    }
    for hyp in goal["hyps"].as_array().expect("hyps") {
        let names: Vec<&str> = hyp["names"]
            .as_array()
            .expect("names")
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        out.push_str(&format!(
            "{} : {}",
            names.join(" "),
            hyp["type"].as_str().expect("type")
        ));
        if let Some(value) = hyp.get("value").and_then(Value::as_str) {
            out.push_str(&format!(" := {value}"));
        }
        out.push('\n');
    }
    out.push_str(goal["goalPrefix"].as_str().expect("goalPrefix"));
    out.push_str(goal["target"].as_str().expect("target"));
    // The parts say what Lean's text says.
    assert_eq!(goal["pretty"], out.as_str(), "{goal}");
    out
}

/// The goals of a run result, rendered; panics when `proof_state` is null.
fn goals(result: &Value) -> Vec<String> {
    let state = &result["proof_state"];
    assert!(state.is_object(), "no proof_state in {result}");
    assert!(
        ["rpc", "plainGoal"].contains(&state["source"].as_str().unwrap_or("")),
        "proof_state.source: {result}"
    );
    state["goals"]
        .as_array()
        .expect("goals")
        .iter()
        .map(render)
        .collect()
}

/// The run result's fixed shape: the seed's keys (and the addressed line's
/// text after a `lean_run_at*`), `proof_state` and `next_handle` left out
/// rather than null when there is none (portable output schemas, issue 25), a
/// workspace echo, and `next_handle` a string exactly when `minted`.
fn check_shape(result: &Value, root: &str, minted: bool) {
    let mut keys: Vec<&str> = result
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .filter(|k| !["line_text", "sorry", "proof_state", "next_handle"].contains(k))
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["messages", "outcome", "success", "traces", "workspace"],
        "{result}"
    );
    for key in ["proof_state", "next_handle"] {
        assert!(
            result.get(key).is_none_or(|v| !v.is_null()),
            "{key}: {result}"
        );
    }
    assert_eq!(result["workspace"], ws(root));
    assert!(result["traces"].is_array());
    for m in result["messages"].as_array().expect("messages") {
        assert!(
            ["error", "warning", "information", "hint"]
                .contains(&m["severity"].as_str().unwrap_or("")),
            "{m}"
        );
        assert!(m["text"].is_string(), "{m}");
    }
    assert_eq!(
        result["next_handle"].is_string(),
        minted,
        "next_handle: {result}"
    );
}

/// Texts of the messages with `severity`.
fn texts(result: &Value, severity: &str) -> Vec<String> {
    result["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["severity"] == severity)
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect()
}

/// Where a message on the step's own text starts, counted from the step's
/// first character: the user's file does not hold the step, so such a
/// message has no `range` there.
fn start_of(message: &Value) -> (u64, u64) {
    assert!(
        message.get("range").is_none(),
        "a range in the file: {message}"
    );
    let at = |k: &str| {
        message["step_range"]["start"][k]
            .as_u64()
            .expect("step_range start")
    };
    (at("line"), at("character"))
}

fn handle_of(result: &Value) -> String {
    result["next_handle"]
        .as_str()
        .unwrap_or_else(|| panic!("no next_handle in {result}"))
        .to_string()
}

fn assert_code(error: &Value, code: &str, what: &str) {
    assert_eq!(error["code"], code, "{what}: {error}");
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{what}: {error}"
    );
}

/// Diagnostics of a sync with every item, in a stable order.
fn sorted_diagnostics(sync: &Value) -> Vec<Value> {
    let mut items = sync["diagnostics"]["items"]
        .as_array()
        .expect("diagnostics.items")
        .clone();
    items.sort_by_key(|d| d.to_string());
    items
}

/// Files under `dir` whose name marks them as shadow documents.
fn shadow_files(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.to_string_lossy().contains("beam-shadow") {
                found.push(path.to_string_lossy().into_owned());
            }
        }
    }
    found
}

// ---------------------------------------------------------------------------
// lean_run_at: proof mode and command mode.

#[test]
fn proof_mode_probes_report_goals_and_errors() {
    let root = fixture("basic");
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root, GOALS);
    let mut run = |line, character, text: &str| {
        let r = mcp.call(
            "lean_run_at",
            at_args(&root, GOALS, v, line, character, text),
        );
        check_shape(&r, &root, false);
        r
    };

    // `show` changes the goal (EXPECTED.md: 15:4 before, 15:9 after).
    let r = run(15, 4, "show Eq (N.succ (N.add N.zero m)) (N.succ m)");
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["messages"], json!([]), "{r}");
    assert_eq!(
        goals(&r),
        ["case succ\nm : N\nih : Eq (N.zero.add m) m\n⊢ Eq (N.zero.add m).succ m.succ"]
    );

    // The original next step closes the goal.
    let r = run(16, 4, "exact congrArg N.succ ih");
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(goals(&r), Vec::<String>::new());

    // After a tactic on the same line (end of the `show` line): a new line of
    // the same block, continuing from the goal after `show`.
    let r = run(15, 48, "exact congrArg N.succ ih");
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(goals(&r), Vec::<String>::new());

    // Right after `=>`: the first tactic of the alternative.
    let r = run(13, 11, "exact Eq.refl N.zero");
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(goals(&r), Vec::<String>::new());

    // Several tactics at once, and a let-bound hypothesis (28:2 `intro t`).
    let r = run(28, 2, "intro t");
    assert_eq!(goals(&r), ["t : N := one.add one\n⊢ Eq t two"]);
    let r = run(28, 2, "intro t\nexact Eq.refl two");
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(goals(&r), Vec::<String>::new());

    // Two goals after `refine` (57:2).
    let r = run(57, 2, "refine And.intro ?_ ?_");
    assert_eq!(
        goals(&r),
        [
            "case refine_1\np : Prop\nhp : p\n⊢ p",
            "case refine_2\np : Prop\nhp : p\n⊢ p"
        ]
    );

    // A failing tactic: an elaboration error inside the probe.
    let r = run(15, 4, "exact wrong");
    assert_eq!(r["success"], false, "{r}");
    assert_eq!(texts(&r, "error"), ["Unknown identifier `wrong`"]);
    let error = &r["messages"][0];
    assert_eq!(
        start_of(error),
        (0, 6),
        "the error is on `wrong`, in the step: {r}"
    );

    // A term/type error: a wrong proof term.
    let r = run(16, 4, "exact Eq.refl N.zero");
    assert_eq!(r["success"], false, "{r}");
    let errors = texts(&r, "error");
    assert_eq!(errors.len(), 1, "{r}");
    assert!(errors[0].starts_with("Type mismatch"), "{r}");

    // A numeral where a proof is expected (type error of another kind).
    let r = run(33, 2, "exact 1");
    assert_eq!(r["success"], false, "{r}");
    assert!(
        texts(&r, "error")[0].contains("expected type is a proposition"),
        "{r}"
    );

    // An unknown tactic is a parse error in the probe, not an invalid call.
    let r = run(33, 2, "rfl");
    assert_eq!(r["success"], false, "{r}");
    assert!(!texts(&r, "error").is_empty(), "{r}");

    // A probe that leaves goals open is a success: the rest of the original
    // proof is not part of the shadow.
    let r = run(12, 2, "skip");
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(goals(&r), ["n : N\n⊢ Eq (N.zero.add n) n"]);
}

#[test]
fn probe_positions_within_tactic_lines() {
    let root = fixture("basic");
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root, GOALS);
    let after_show =
        ["case succ\nm : N\nih : Eq (N.zero.add m) m\n⊢ Eq (N.zero.add m).succ m.succ"];

    // In the indentation of a tactic line: before that tactic, at its column
    // (34:2 is `cases h with`; 15:4 is `show …` in an alternative's block).
    let reference = mcp.call("lean_run_at", at_args(&root, GOALS, v, 34, 2, "cases h"));
    assert_eq!(reference["success"], true, "{reference}");
    for character in [0, 1] {
        let r = mcp.call(
            "lean_run_at",
            at_args(&root, GOALS, v, 34, character, "cases h"),
        );
        assert_eq!(r["success"], true, "(34, {character}): {r}");
        assert_eq!(goals(&r), goals(&reference), "(34, {character})");
    }
    let r = mcp.call(
        "lean_run_at",
        at_args(
            &root,
            GOALS,
            v,
            15,
            0,
            "show Eq (N.succ (N.add N.zero m)) (N.succ m)\nskip",
        ),
    );
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(goals(&r), after_show);

    // Inside a tactic (15:9 is within `show`, where Lean shows the goals after
    // it): the probe follows the whole tactic, on a new line of its block,
    // exactly as at the end of the line.
    for character in [9, 30, 48] {
        let r = mcp.call(
            "lean_run_at",
            at_args(&root, GOALS, v, 15, character, "skip"),
        );
        assert_eq!(r["success"], true, "(15, {character}): {r}");
        assert_eq!(goals(&r), after_show, "(15, {character})");
    }
    // Inside the last tactic of a `·` block (37:9): after it, in the block.
    let r = mcp.call("lean_run_at", at_args(&root, GOALS, v, 37, 9, "skip"));
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(
        goals(&r),
        Vec::<String>::new(),
        "the bullet's goal is closed by `exact hq`"
    );

    // Right after `by` on the same line, with a multi-line text.
    let r = mcp.call(
        "lean_run_at",
        at_args(&root, GOALS, v, 47, 53, "skip\ndecide"),
    );
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(goals(&r), Vec::<String>::new());

    // The blank line after a finished proof (17:0, where Lean shows "no
    // goals") is between commands: one command, no proof_state.
    let r = mcp.call(
        "lean_run_at",
        at_args(
            &root,
            GOALS,
            v,
            17,
            0,
            "theorem q : Eq one one := Eq.refl one",
        ),
    );
    assert_eq!(r["success"], true, "{r}");
    assert!(r["proof_state"].is_null(), "{r}");
    let e = mcp.call_err(
        "lean_run_at",
        at_args(&root, GOALS, v, 17, 0, "#check one\n#check two"),
    );
    assert_code(&e, "invalidParams", "two commands after a finished proof");
}

#[test]
fn command_mode_probes_run_exactly_one_command() {
    let root = fixture("basic");
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root, GOALS);
    let mut run = |line, text: &str| {
        let r = mcp.call("lean_run_at", at_args(&root, GOALS, v, line, 0, text));
        check_shape(&r, &root, false);
        assert!(
            r["proof_state"].is_null(),
            "command mode has no proof_state: {r}"
        );
        r
    };

    // Between commands (11:0 is the start of `theorem zero_add'`, after its
    // docstring): a new theorem, by term and by tactics.
    let r = run(11, "theorem probe_cmd : Eq one one := Eq.refl one");
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["messages"], json!([]));
    let r = run(
        18,
        "theorem probe_tac (a : N) : Eq (N.add a N.zero) a := by\n  exact N.add_zero a",
    );
    assert_eq!(r["success"], true, "{r}");
    // Attributes and doc comments belong to their command.
    let r = run(
        18,
        "/-- doc -/\n@[reducible]\ndef probe_def : N := N.succ N.zero",
    );
    assert_eq!(r["success"], true, "{r}");

    // Linter warnings (reported after elaboration) and `sorry` warnings are
    // part of the result, and do not make it a failure.
    let r = run(18, "def probe_lint (n unused : N) : N := n");
    assert_eq!(r["success"], true, "{r}");
    let warnings = texts(&r, "warning");
    assert_eq!(warnings.len(), 1, "{r}");
    assert!(
        warnings[0].starts_with("Variable name `unused` is not explicitly referenced"),
        "{r}"
    );
    let r = run(18, "theorem probe_sorry : Eq one one := sorry");
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["outcome"], "sorry", "{r}");
    assert_eq!(texts(&r, "warning"), ["declaration uses `sorry`"]);

    // Information messages: `#check`.
    let r = run(11, "#check N.add");
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(texts(&r, "information"), ["Fix.N.add : N → N → N"]);
    assert_eq!(start_of(&r["messages"][0]), (0, 0));

    // A type error in a command.
    let r = run(11, "theorem bad : Eq one two := Eq.refl one");
    assert_eq!(r["success"], false, "{r}");
    let errors = texts(&r, "error");
    assert_eq!(errors.len(), 1, "{r}");
    assert!(errors[0].starts_with("Type mismatch"), "{r}");
    assert_eq!(
        start_of(&r["messages"][0]),
        (0, 28),
        "on `Eq.refl one`: {r}"
    );

    // An unknown identifier in a definition.
    let r = run(18, "def probe_bad : N := N.add one missingThing");
    assert_eq!(r["success"], false, "{r}");
    assert_eq!(texts(&r, "error"), ["Unknown identifier `missingThing`"]);

    // The probe sees the declarations before the position, not after it.
    let r = run(11, "#check add_comm'");
    assert_eq!(
        r["success"], false,
        "add_comm' is declared after line 11: {r}"
    );
    let r = run(26, "#check add_comm'");
    assert_eq!(r["success"], true, "{r}");

    // Two commands → invalidParams, naming the count.
    for text in [
        "def a1 : N := one\ndef a2 : N := two",
        "#check one\n#check two",
    ] {
        let e = mcp.call_err("lean_run_at", at_args(&root, GOALS, v, 11, 0, text));
        assert_code(&e, "invalidParams", text);
        assert_eq!(e["data"]["commands"], 2, "{e}");
    }
    // Neither in a proof nor at a line start between commands.
    let e = mcp.call_err("lean_run_at", at_args(&root, GOALS, v, 8, 3, "#check one"));
    assert_code(&e, "invalidParams", "middle of `namespace Fix`");
    // Outside the document.
    let e = mcp.call_err(
        "lean_run_at",
        at_args(&root, GOALS, v, 500, 0, "#check one"),
    );
    assert_code(&e, "invalidParams", "line 500");
    // A version that was never returned.
    let e = mcp.call_err(
        "lean_run_at",
        at_args(&root, GOALS, v + 7, 11, 0, "#check one"),
    );
    assert_code(&e, "contentModified", "future version");
}

// ---------------------------------------------------------------------------
// Handles.

#[test]
fn handle_chain_with_goals_at_every_step() {
    let root = fixture("basic");
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root, GOALS);

    // and_swap (33:2 `intro h`): intro → cases → constructor → all_goals.
    let r1 = mcp.call(
        "lean_run_at_handle",
        at_args(&root, GOALS, v, 33, 2, "intro h"),
    );
    check_shape(&r1, &root, true);
    assert_eq!(r1["success"], true, "{r1}");
    assert_eq!(goals(&r1), ["p q : Prop\nh : And p q\n⊢ And q p"]);
    let h1 = handle_of(&r1);
    assert!(h1.starts_with("bh2."), "{h1}");

    let r2 = mcp.call("lean_run_with", with_args(&root, GOALS, &h1, "cases h"));
    check_shape(&r2, &root, true);
    assert_eq!(
        goals(&r2),
        ["case intro\np q : Prop\nleft✝ : p\nright✝ : q\n⊢ And q p"]
    );
    let h2 = handle_of(&r2);
    assert_ne!(h1, h2);

    let r3 = mcp.call("lean_run_with", with_args(&root, GOALS, &h2, "constructor"));
    check_shape(&r3, &root, true);
    assert_eq!(
        goals(&r3),
        [
            "case intro.left\np q : Prop\nleft✝ : p\nright✝ : q\n⊢ q",
            "case intro.right\np q : Prop\nleft✝ : p\nright✝ : q\n⊢ p",
        ]
    );
    let h3 = handle_of(&r3);

    // A failing continuation mints nothing and leaves its parent valid.
    let bad = mcp.call("lean_run_with", with_args(&root, GOALS, &h3, "exact wrong"));
    check_shape(&bad, &root, false);
    assert_eq!(bad["success"], false, "{bad}");
    assert_eq!(texts(&bad, "error"), ["Unknown identifier `wrong`"]);

    // run_with leaves its parent valid: branch from h1 again.
    let branch = mcp.call(
        "lean_run_with",
        with_args(
            &root,
            GOALS,
            &h1,
            "exact And.intro (And.right h) (And.left h)",
        ),
    );
    assert_eq!(branch["success"], true, "{branch}");
    assert_eq!(goals(&branch), Vec::<String>::new());

    let r4 = mcp.call(
        "lean_run_with_linear",
        with_args(&root, GOALS, &h3, "all_goals assumption"),
    );
    check_shape(&r4, &root, true);
    assert_eq!(r4["success"], true, "{r4}");
    assert_eq!(goals(&r4), Vec::<String>::new());
    let h4 = handle_of(&r4);

    // The linear step consumed h3; h2 and h1 are still there.
    let e = mcp.call_err("lean_run_with", with_args(&root, GOALS, &h3, "skip"));
    assert_code(&e, "invalidParams", "consumed handle");
    let again = mcp.call("lean_run_with", with_args(&root, GOALS, &h2, "constructor"));
    assert_eq!(
        goals(&again),
        goals(&r3),
        "a handle replays to the same state"
    );

    // Release h4; it is gone, and releasing twice is an error.
    let released = mcp.call(
        "lean_release",
        json!({"workspace": ws(&root), "path": GOALS, "handle": h4}),
    );
    assert_eq!(released["released"], true, "{released}");
    let e = mcp.call_err("lean_run_with", with_args(&root, GOALS, &h4, "skip"));
    assert_code(&e, "invalidParams", "released handle");
    let e = mcp.call_err(
        "lean_release",
        json!({"workspace": ws(&root), "path": GOALS, "handle": h4}),
    );
    assert_code(&e, "invalidParams", "released twice");

    // A failed linear step consumes its handle too.
    let r = mcp.call(
        "lean_run_with_linear",
        with_args(&root, GOALS, &h2, "exact wrong"),
    );
    assert_eq!(r["success"], false, "{r}");
    check_shape(&r, &root, false);
    let e = mcp.call_err("lean_run_with", with_args(&root, GOALS, &h2, "constructor"));
    assert_code(
        &e,
        "invalidParams",
        "handle consumed by a failed linear step",
    );

    // lean_run_at_handle mints nothing for a failed step.
    let r = mcp.call(
        "lean_run_at_handle",
        at_args(&root, GOALS, v, 33, 2, "exact wrong"),
    );
    check_shape(&r, &root, false);

    // Command-mode handles continue with further commands.
    let c1 = mcp.call(
        "lean_run_at_handle",
        at_args(&root, GOALS, v, 18, 0, "def probe_one : N := N.succ N.zero"),
    );
    assert!(c1["proof_state"].is_null(), "{c1}");
    let c2 = mcp.call(
        "lean_run_with",
        with_args(
            &root,
            GOALS,
            &handle_of(&c1),
            "theorem probe_one_eq : Eq probe_one one := Eq.refl _",
        ),
    );
    assert_eq!(c2["success"], true, "{c2}");
    assert!(c2["proof_state"].is_null(), "{c2}");

    // The user's file is never touched.
    let on_disk = std::fs::read_to_string(Path::new(&root).join(GOALS)).unwrap();
    assert!(
        !on_disk.contains("probe"),
        "probe text reached the file on disk"
    );
    assert_eq!(shadow_files(Path::new(&root)), Vec::<String>::new());
}

#[test]
fn handle_errors_malformed_unknown_and_foreign() {
    let basic = fixture("basic");
    let second = fixture("second");
    let mut mcp = spawn();
    let v = sync(&mut mcp, &basic, GOALS);
    sync(&mut mcp, &basic, ERRORS);
    sync(&mut mcp, &second, "Sec/Main.lean");
    let r = mcp.call(
        "lean_run_at_handle",
        at_args(&basic, GOALS, v, 33, 2, "intro h"),
    );
    let h = handle_of(&r);
    let parts: Vec<&str> = h.split('.').collect();
    assert_eq!(parts.len(), 4, "bh2.<process>.<runtime>.<secret>: {h}");

    // Malformed → invalidParams, for every handle tool.
    for bad in [
        "",
        "garbage",
        "bh2",
        "bh2.zz.1.1",
        "bh1.0.1.1",
        &format!("{h}.9"),
        &h.replace("bh2.", "bh2.."),
        // The same numbers spelled another way are not the handle.
        &h.to_uppercase().replace("BH2", "bh2"),
        &format!("{}.{}.0{}.{}", parts[0], parts[1], parts[2], parts[3]),
        &format!("{}.{}.+{}.{}", parts[0], parts[1], parts[2], parts[3]),
        &format!("{}.{}.{}.{}", parts[0], parts[1], parts[2], &parts[3][1..]),
    ] {
        for tool in ["lean_run_with", "lean_run_with_linear"] {
            let e = mcp.call_err(tool, with_args(&basic, GOALS, bad, "skip"));
            assert_code(&e, "invalidParams", &format!("{tool} {bad:?}"));
        }
        let e = mcp.call_err(
            "lean_release",
            json!({"workspace": ws(&basic), "path": GOALS, "handle": bad}),
        );
        assert_code(&e, "invalidParams", &format!("lean_release {bad:?}"));
    }

    // Well formed, this process and runtime, never issued → invalidParams.
    let unknown = format!("{}.{}.{}.{:032x}", parts[0], parts[1], parts[2], 999_999);
    let e = mcp.call_err("lean_run_with", with_args(&basic, GOALS, &unknown, "skip"));
    assert_code(&e, "invalidParams", "never issued");
    // It names the calls to make next: the batch, from a version of now.
    assert_eq!(e["data"]["reason"], "unknown", "{e}");
    assert_eq!(
        e["data"]["next"],
        json!(["lean_sync", "lean_run_batch"]),
        "{e}"
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("then lean_run_batch"),
        "{e}"
    );

    // A handle of another workspace → invalidParams.
    let e = mcp.call_err(
        "lean_run_with",
        with_args(&second, "Sec/Main.lean", &h, "skip"),
    );
    assert_code(&e, "invalidParams", "handle of another workspace");
    let e = mcp.call_err(
        "lean_release",
        json!({"workspace": ws(&second), "path": "Sec/Main.lean", "handle": h}),
    );
    assert_code(&e, "invalidParams", "release in another workspace");
    // A workspace with no runtime in this server at all.
    let demo = fixture("demo");
    let e = mcp.call_err("lean_run_with", with_args(&demo, "Demo.lean", &h, "skip"));
    assert_code(&e, "invalidParams", "workspace never used");
    // Another document of the same workspace → invalidParams.
    let e = mcp.call_err("lean_run_with", with_args(&basic, ERRORS, &h, "skip"));
    assert_code(&e, "invalidParams", "handle of another document");
    let e = mcp.call_err(
        "lean_release",
        json!({"workspace": ws(&basic), "path": ERRORS, "handle": h}),
    );
    assert_code(&e, "invalidParams", "release on another document");

    // None of these consumed or disturbed the handle.
    let r = mcp.call(
        "lean_run_with_linear",
        with_args(&basic, GOALS, &h, "cases h"),
    );
    assert_eq!(r["success"], true, "{r}");
}

#[test]
fn handles_of_another_server_process_are_content_modified() {
    let root = fixture("basic");
    let mut a = spawn();
    let mut b = spawn();
    let va = sync(&mut a, &root, GOALS);
    let vb = sync(&mut b, &root, GOALS);
    assert_eq!(va, vb, "both processes start at the same version");
    let ha = handle_of(&a.call(
        "lean_run_at_handle",
        at_args(&root, GOALS, va, 33, 2, "intro h"),
    ));
    let hb = handle_of(&b.call(
        "lean_run_at_handle",
        at_args(&root, GOALS, vb, 33, 2, "intro h"),
    ));
    assert_ne!(ha, hb, "each process has its own nonce");
    for (server, foreign) in [(&mut b, &ha), (&mut a, &hb)] {
        for tool in ["lean_run_with", "lean_run_with_linear"] {
            let e = server.call_err(tool, with_args(&root, GOALS, foreign, "cases h"));
            assert_code(
                &e,
                "contentModified",
                &format!("{tool} with another process's handle"),
            );
            // The error says the process is gone and the probe must be repeated
            // (what a client behind a load balancer sees after a failover).
            assert_eq!(e["data"]["reason"], "otherProcess", "{e}");
            assert_eq!(
                e["data"]["next"],
                json!(["lean_sync", "lean_run_batch"]),
                "{e}"
            );
            let message = e["message"].as_str().unwrap();
            assert!(
                message.contains("server process, which is gone")
                    && message.contains("Repeat the probe"),
                "{message}"
            );
        }
        let e = server.call_err(
            "lean_release",
            json!({"workspace": ws(&root), "path": GOALS, "handle": foreign}),
        );
        assert_code(&e, "contentModified", "release of another process's handle");
    }
    // Each process's own handle still works.
    assert_eq!(
        a.call("lean_run_with", with_args(&root, GOALS, &ha, "cases h"))["success"],
        true
    );
    assert_eq!(
        b.call("lean_run_with", with_args(&root, GOALS, &hb, "cases h"))["success"],
        true
    );
}

#[test]
fn changed_file_makes_versions_and_handles_stale() {
    let tmp = TempWorkspace::copy("basic");
    let root = tmp.root_str();
    let mut mcp = spawn();
    let v1 = sync(&mut mcp, &root, GOALS);
    let r = mcp.call(
        "lean_run_at_handle",
        at_args(&root, GOALS, v1, 33, 2, "intro h"),
    );
    let h = handle_of(&r);
    let child = handle_of(&mcp.call("lean_run_with", with_args(&root, GOALS, &h, "cases h")));
    let before = tmp.read(GOALS);

    // The user edits the file (a new theorem at the end) and syncs it.
    let edited = before.replace(
        "end Fix",
        "theorem added : Eq one one := Eq.refl one\n\nend Fix",
    );
    tmp.write(GOALS, &edited);
    let v2 = sync(&mut mcp, &root, GOALS);
    assert!(v2 > v1, "{v1} → {v2}");

    // The old version → contentModified (versionMismatch, expected/current).
    let e = mcp.call_err("lean_run_at", at_args(&root, GOALS, v1, 33, 2, "intro h"));
    assert_code(&e, "contentModified", "run_at with the old version");
    assert_eq!(e["data"]["reason"], "versionMismatch", "{e}");
    assert_eq!(e["data"]["expected"], v1, "{e}");
    assert_eq!(e["data"]["current"], v2, "{e}");
    let e = mcp.call_err(
        "lean_run_at_handle",
        at_args(&root, GOALS, v1, 33, 2, "intro h"),
    );
    assert_code(&e, "contentModified", "run_at_handle with the old version");

    // Handles of the old version → contentModified.
    for handle in [&h, &child] {
        let e = mcp.call_err(
            "lean_run_with",
            with_args(&root, GOALS, handle, "constructor"),
        );
        assert_code(&e, "contentModified", "handle of an old version");
        assert_eq!(e["data"]["reason"], "versionMismatch", "{e}");
        assert_eq!(
            e["data"]["next"],
            json!(["lean_sync", "lean_run_batch"]),
            "{e}"
        );
    }
    let e = mcp.call_err(
        "lean_run_with_linear",
        with_args(&root, GOALS, &child, "constructor"),
    );
    assert_code(
        &e,
        "contentModified",
        "linear with a handle of an old version",
    );

    // The new version works, and sees the new theorem.
    let r = mcp.call("lean_run_at", at_args(&root, GOALS, v2, 33, 2, "intro h"));
    assert_eq!(r["success"], true, "{r}");
    let lines = edited.lines().count() as u64;
    let r = mcp.call(
        "lean_run_at",
        at_args(&root, GOALS, v2, lines - 1, 0, "#check added"),
    );
    assert_eq!(r["success"], true, "{r}");

    // lean_update of an unchanged file keeps the version (handles of v2 live on).
    let h2 = handle_of(&mcp.call(
        "lean_run_at_handle",
        at_args(&root, GOALS, v2, 33, 2, "intro h"),
    ));
    let u = mcp.call(
        "lean_update",
        json!({"workspace": ws(&root), "path": GOALS}),
    );
    assert_eq!(u["version"], v2, "{u}");
    assert_eq!(
        mcp.call("lean_run_with", with_args(&root, GOALS, &h2, "cases h"))["success"],
        true
    );

    // The probes never wrote the file or a shadow beside it.
    assert_eq!(tmp.read(GOALS), edited);
    assert_eq!(shadow_files(tmp.root()), Vec::<String>::new());
}

#[test]
fn drop_invalidates_handles_and_reports_how_many() {
    let root = fixture("basic");
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root, GOALS);
    let h1 = handle_of(&mcp.call(
        "lean_run_at_handle",
        at_args(&root, GOALS, v, 33, 2, "intro h"),
    ));
    let h2 = handle_of(&mcp.call("lean_run_with", with_args(&root, GOALS, &h1, "cases h")));
    let h3 = handle_of(&mcp.call(
        "lean_run_at_handle",
        at_args(&root, GOALS, v, 15, 4, "skip"),
    ));
    mcp.call(
        "lean_release",
        json!({"workspace": ws(&root), "path": GOALS, "handle": h3}),
    );
    let stats = mcp.workspace_stats(&root).expect("workspace in beam_stats");
    assert_eq!(stats["handles"]["live"], 2, "{stats}");

    let dropped = mcp.call("lean_drop_workspace", json!({"workspace": ws(&root)}));
    assert_eq!(dropped["dropped"], true, "{dropped}");
    assert_eq!(dropped["invalidated_handles"], 2, "{dropped}");

    for h in [&h1, &h2, &h3] {
        let e = mcp.call_err("lean_run_with", with_args(&root, GOALS, h, "skip"));
        assert_code(&e, "invalidParams", "handle after drop (no runtime)");
    }
    // A new runtime for the same root does not revive them.
    let v = sync(&mut mcp, &root, GOALS);
    for h in [&h1, &h2] {
        let e = mcp.call_err("lean_run_with", with_args(&root, GOALS, h, "skip"));
        assert_code(&e, "invalidParams", "handle after drop (new runtime)");
        let e = mcp.call_err(
            "lean_release",
            json!({"workspace": ws(&root), "path": GOALS, "handle": h}),
        );
        assert_code(&e, "invalidParams", "release after drop");
    }
    let fresh = handle_of(&mcp.call(
        "lean_run_at_handle",
        at_args(&root, GOALS, v, 33, 2, "intro h"),
    ));
    let dropped = mcp.call("lean_drop_workspace", json!({"workspace": ws(&root)}));
    assert_eq!(dropped["invalidated_handles"], 1, "{dropped}");
    let e = mcp.call_err("lean_run_with", with_args(&root, GOALS, &fresh, "skip"));
    assert_code(&e, "invalidParams", "fresh handle after the second drop");
    let again = mcp.call("lean_drop_workspace", json!({"workspace": ws(&root)}));
    assert_eq!(again["dropped"], false, "{again}");
    assert_eq!(again["invalidated_handles"], 0, "{again}");
}

/// `(live, capacity, evicted)` of a runtime's handle stats.
fn counts(handles: &Value) -> (u64, u64, u64) {
    let n = |k: &str| {
        handles[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k} in {handles}"))
    };
    (n("live"), n("capacity"), n("evicted"))
}

#[test]
fn handle_cap_evicts_the_least_recently_used() {
    let root = fixture("basic");
    let mut mcp = spawn_with(&[("LEAN_BEAM_MAX_HANDLES", "2")]);
    let v = sync(&mut mcp, &root, GOALS);
    let mint = |mcp: &mut Mcp, text: &str| {
        handle_of(&mcp.call("lean_run_at_handle", at_args(&root, GOALS, v, 33, 2, text)))
    };
    let h1 = mint(&mut mcp, "intro h");
    let h2 = mint(&mut mcp, "skip");
    let stats = mcp.workspace_stats(&root).expect("stats");
    assert_eq!(counts(&stats["handles"]), (2, 2, 0), "{stats}");

    let h3 = mint(&mut mcp, "intro hpq");
    let stats = mcp.workspace_stats(&root).expect("stats");
    assert_eq!(counts(&stats["handles"]), (2, 2, 1), "{stats}");
    let e = mcp.call_err("lean_run_with", with_args(&root, GOALS, &h1, "skip"));
    assert_code(&e, "invalidParams", "evicted handle");

    // Using h2 makes it more recent than h3: the child minted now evicts h3.
    let r = mcp.call("lean_run_with", with_args(&root, GOALS, &h2, "intro h"));
    let h4 = handle_of(&r);
    let stats = mcp.workspace_stats(&root).expect("stats");
    assert_eq!(counts(&stats["handles"]), (2, 2, 2), "{stats}");
    let e = mcp.call_err("lean_run_with", with_args(&root, GOALS, &h3, "skip"));
    assert_code(&e, "invalidParams", "least recently used handle");
    for h in [&h2, &h4] {
        let released = mcp.call(
            "lean_release",
            json!({"workspace": ws(&root), "path": GOALS, "handle": h}),
        );
        assert_eq!(released["released"], true);
    }
    let stats = mcp.workspace_stats(&root).expect("stats");
    assert_eq!(stats["handles"]["live"], 0, "{stats}");
}

// ---------------------------------------------------------------------------
// Isolation, parallelism, cancellation.

#[test]
fn user_document_is_untouched_by_50_probes() {
    let root = fixture("basic");
    let mut mcp = spawn();
    let sync_all = |mcp: &mut Mcp, path: &str| {
        mcp.call(
            "lean_sync",
            json!({"workspace": ws(&root), "path": path, "diagnostics_in_result": true, "diagnostic_scope": "all"}),
        )
    };
    let goals_v = sync(&mut mcp, &root, GOALS);
    let before = sync_all(&mut mcp, ERRORS);
    let v = before["version"].as_u64().unwrap();
    assert_eq!(before["diagnostics"]["counts"]["total"], 4, "{before}");
    let references = |mcp: &mut Mcp| {
        // N.add, from its use in the statement of zero_add' (Goals 11:34).
        let r = mcp.call(
            "lean_references",
            json!({"workspace": ws(&root), "path": GOALS, "version": goals_v, "line": 11, "character": 34}),
        );
        let list = r["locations"].as_array().expect("locations").clone();
        for loc in &list {
            let uri = loc["uri"].as_str().unwrap_or("");
            assert!(
                !uri.contains("beam-shadow"),
                "a shadow document in references: {loc}"
            );
        }
        let mut uris: Vec<String> = list.iter().map(|l| l.to_string()).collect();
        uris.sort();
        uris
    };
    let refs_before = references(&mut mcp);
    // Basic 11 + Goals 6 + Errors 3 (EXPECTED.md).
    assert_eq!(refs_before.len(), 20, "{refs_before:#?}");

    // 50 probes on Errors.lean in both modes, successes and failures, most of
    // them mentioning N.add (a shadow would add references).
    let probes: [(u64, u64, &str); 5] = [
        (20, 17, "exact congrArg N.succ ih"),
        (20, 17, "exact N.add wrong"),
        (
            9,
            0,
            "theorem p : Eq (N.add one N.zero) one := N.add_zero one",
        ),
        (9, 0, "def q : N := N.add one nothing"),
        (22, 0, "#check N.add"),
    ];
    let mut failures = 0;
    for i in 0..50 {
        let (line, character, text) = probes[i % probes.len()];
        let r = mcp.call(
            "lean_run_at",
            at_args(&root, ERRORS, v, line, character, text),
        );
        if r["success"] == false {
            failures += 1;
        }
    }
    assert_eq!(failures, 20, "two probes in five fail");

    let after = sync_all(&mut mcp, ERRORS);
    assert_eq!(
        after["version"], v,
        "the probes changed the user's document version"
    );
    // Shadow slots are the broker's own: stats list the user's documents only.
    let stats = mcp.workspace_stats(&root).expect("runtime");
    assert!(stats["shadowSlots"].as_u64().unwrap() >= 1, "{stats}");
    for doc in stats["documents"].as_array().unwrap() {
        let path = doc["path"].as_str().unwrap();
        assert!(!path.contains("#shadow"), "a shadow in stats: {doc}");
    }
    assert_eq!(
        after["diagnostics"]["counts"],
        before["diagnostics"]["counts"]
    );
    assert_eq!(sorted_diagnostics(&after), sorted_diagnostics(&before));
    assert_eq!(after["readiness"], before["readiness"]);
    assert_eq!(references(&mut mcp), refs_before);
    // The document's own symbols are still those of the file.
    let symbols = mcp.call(
        "lean_document_symbols",
        json!({"workspace": ws(&root), "path": ERRORS, "version": v}),
    );
    assert!(!symbols.to_string().contains("beam-shadow"), "{symbols}");
    assert!(
        !symbols.to_string().contains("\"p\""),
        "a probe's theorem in the user's symbols: {symbols}"
    );
    assert_eq!(shadow_files(Path::new(&root)), Vec::<String>::new());
}

/// A probe result without what may legitimately differ between runs: the
/// order of messages (Lean publishes them in any order).
fn normalized(result: &Value) -> Value {
    let mut r = result.clone();
    if let Some(messages) = r["messages"].as_array_mut() {
        messages.sort_by_key(|m| m.to_string());
    }
    r
}

#[test]
fn concurrent_probes_give_the_same_results_as_sequential_ones() {
    let root = fixture("basic");
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root, GOALS);
    let probes: Vec<(u64, u64, &str)> = vec![
        (15, 4, "show Eq (N.succ (N.add N.zero m)) (N.succ m)"),
        (15, 4, "exact wrong"),
        (16, 4, "exact congrArg N.succ ih"),
        (16, 4, "exact Eq.refl N.zero"),
        (12, 2, "skip"),
        (13, 11, "exact Eq.refl N.zero"),
        (23, 4, "apply Eq.trans (congrArg N.succ (N.add_comm a k))"),
        (24, 4, "exact Eq.symm (N.succ_add k a)"),
        (28, 2, "intro t"),
        (33, 2, "intro h"),
        (34, 2, "cases h"),
        (36, 4, "constructor"),
        (57, 2, "refine And.intro ?_ ?_"),
        (11, 0, "#check N.add"),
        (18, 0, "theorem c1 : Eq one two := Eq.refl one"),
        (26, 0, "def c2 : N := N.add one two"),
        (47, 53, "decide"),
        (51, 2, "cases a"),
    ];
    assert!(probes.len() >= 16);
    let sequential: Vec<Value> = probes
        .iter()
        .map(|(l, c, t)| normalized(&mcp.call("lean_run_at", at_args(&root, GOALS, v, *l, *c, t))))
        .collect();
    assert!(sequential.iter().any(|r| r["success"] == false));
    assert!(
        sequential
            .iter()
            .any(|r| r["success"] == true && r["proof_state"].is_object())
    );

    // All at once, in one burst; twice, in reverse order the second time.
    for round in 0..2 {
        let order: Vec<usize> = if round == 0 {
            (0..probes.len()).collect()
        } else {
            (0..probes.len()).rev().collect()
        };
        let requests: Vec<(usize, Value)> = order
            .iter()
            .map(|&i| {
                let (l, c, t) = probes[i];
                let id = mcp.fresh_id();
                (
                    i,
                    mcp.call_request(
                        &id,
                        "lean_run_at",
                        at_args(&root, GOALS, v, l, c, t),
                        &CallOpts::default(),
                    ),
                )
            })
            .collect();
        let messages: Vec<Value> = requests.iter().map(|(_, r)| r.clone()).collect();
        mcp.send_all(&messages);
        for (i, request) in &requests {
            let result = mcp.ok(
                &request["id"],
                "lean_run_at",
                &request["params"]["arguments"],
            );
            assert_eq!(
                normalized(&result),
                sequential[*i],
                "probe {:?} in round {round}",
                probes[*i]
            );
        }
    }
    let stats = mcp.workspace_stats(&root).expect("stats");
    assert!(
        stats["shadowSlots"].as_u64().unwrap() > 1,
        "parallel probes used several slots: {stats}"
    );
}

#[test]
fn cancelled_probe_frees_its_slot_at_once() {
    let root = fixture("basic");
    let mut mcp = spawn_with(&[("LEAN_BEAM_SHADOW_SLOTS", "1")]);
    let v = sync(&mut mcp, &root, GOALS);
    // Warm the only slot.
    let warm = mcp.call("lean_run_at", at_args(&root, GOALS, v, 33, 2, "intro h"));
    assert_eq!(warm["success"], true, "{warm}");

    // A probe that sleeps 10 min in Lean; cancel it once Lean elaborates the
    // command it is in (its file progress says so), which cannot end before
    // the sleep does.
    let token = json!("slow-probe");
    let slow = mcp.start_call(
        "lean_run_at",
        at_args(&root, GOALS, v, 33, 2, "sleep 600000"),
        &CallOpts::token(token.clone()),
    );
    mcp.wait_notification("file progress of the slow probe", |m| {
        m["method"] == "notifications/progress"
            && m["params"]["progressToken"] == token
            && m["params"]["message"]
                .as_str()
                .is_some_and(|t| t.contains("elaborating"))
    });
    mcp.cancel(&slow);
    let started = Instant::now();
    let r = mcp.call("lean_run_at", at_args(&root, GOALS, v, 33, 2, "intro h"));
    let took = started.elapsed();
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(goals(&r), goals(&warm));
    // Had the slot stayed busy, this probe would have waited for the rest of
    // the 10-minute sleep; it takes well under a second. The bound is a safety
    // limit at half the sleep (minutes above any stall), not a judgement of
    // speed.
    assert!(
        took < Duration::from_secs(300),
        "the probe after a cancelled one took {took:?}"
    );
    let stats = mcp.workspace_stats(&root).expect("stats");
    assert_eq!(stats["shadowSlots"], 1, "{stats}");
    // The cancelled call is never answered with a result: whatever it got, it
    // got at the cancellation, long before this point in the stream.
    mcp.assert_cancelled_answers(&slow);
}

#[test]
fn a_step_on_an_empty_line_inside_a_proof_joins_the_tactic_block() {
    let tmp = TempWorkspace::copy("long");
    let root = tmp.root_str();
    tmp.write(
        "Blank.lean",
        "prelude\nimport LongFix.Base\n\nnamespace LongFix\n\ntheorem t (a : U) : Eq (U.add U.z a) a := by\n  show Eq (U.add U.z a) a\n\n  exact U.z_add a\n\nend LongFix\n",
    );
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root, "Blank.lean");
    // Line 7 is empty, between two tactics of `t`.
    let r = mcp.call(
        "lean_run_at",
        at_args(&root, "Blank.lean", v, 7, 0, "exact U.z_add a"),
    );
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["proof_state"]["goals"], json!([]), "{r}");
    // A wrong step there is a tactic error, not a parse error at column 0.
    let r = mcp.call(
        "lean_run_at",
        at_args(&root, "Blank.lean", v, 7, 0, "exact U.z_add U.z"),
    );
    assert_eq!(r["success"], false, "{r}");
    let texts = texts(&r, "error");
    assert!(
        texts.iter().all(|t| !t.contains("unexpected")),
        "a parse error: {texts:?}"
    );
    assert_eq!(goals(&r).len(), 1, "{r}");
}

#[test]
fn idle_shadow_slots_give_their_lean_workers_back() {
    let tmp = TempWorkspace::copy("basic");
    let root = tmp.root_str();
    let mut mcp = spawn_with(&[("LEAN_BEAM_SHADOW_IDLE_SECS", "1")]);
    let v = sync(&mut mcp, &root, GOALS);
    let workers = || common::lean::lean_processes_of(tmp.root()).len();
    let before = workers();
    let first = mcp.call(
        "lean_run_at",
        at_args(&root, GOALS, v, 16, 4, "exact congrArg N.succ ih"),
    );
    assert_eq!(first["success"], true, "{first}");
    // The slot's worker is given back after a second of idleness.
    let closed = common::lean::eventually(Duration::from_secs(20), || {
        mcp.workspace_stats(&root).unwrap()["shadowSlotsOpen"] == 0
    });
    assert!(closed, "{}", mcp.workspace_stats(&root).unwrap());
    assert_eq!(mcp.workspace_stats(&root).unwrap()["shadowSlots"], 1);
    assert!(
        common::lean::eventually(Duration::from_secs(20), || workers() <= before),
        "the shadow's Lean worker is still running: {} > {before}",
        workers()
    );
    // The next probe reopens the slot and answers as before.
    let again = mcp.call(
        "lean_run_at",
        at_args(&root, GOALS, v, 16, 4, "exact congrArg N.succ ih"),
    );
    assert_eq!(again, first);
}

#[test]
fn a_probe_in_a_file_whose_imports_fail_does_not_succeed() {
    let tmp = TempWorkspace::copy("basic");
    let root = tmp.root_str();
    tmp.write(
        "Fix/Broken.lean",
        "prelude\nimport Fix.Missing\n\ntheorem t : True := by\n  exact True.intro\n\n",
    );
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root, "Fix/Broken.lean");
    // Twice: the second probe reuses the slot (and its worker).
    for text in ["def x : N := N.zero", "def y : N := N.zero"] {
        let r = mcp.call(
            "lean_run_at",
            at_args(&root, "Fix/Broken.lean", v, 5, 0, text),
        );
        assert_eq!(r["success"], false, "{r}");
        let errors = texts(&r, "error");
        assert!(
            errors.iter().any(|t| t.contains("Fix.Missing")),
            "the import error is the answer: {r}"
        );
        assert!(
            r["messages"]
                .as_array()
                .unwrap()
                .iter()
                .all(|m| m["before_step"] == true),
            "{r}"
        );
    }
}
