//! The Lean broker against the real Lean 4.35.0 test toolchain: workspace
//! descriptors, runtimes per canonical root, document sync and its diagnostics
//! barrier, progress and log delivery in both protocol eras, cancellation,
//! faults, fencing and teardown (issue 3, point 8).
//!
//! Expected values come from `tests/fixtures/EXPECTED.md`. Files are only
//! edited in temp copies of the fixtures. Timeouts are failure guards only.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use common::lean::{
    CliDiagnostic, TempDir, TempWorkspace, eventually, lean, lean_processes_of, parse_cli_output,
    processes_mentioning,
};
use common::mcp::{CallOpts, Era, Mcp, Spawn, StatusNotice, ws};

const GUARD: Duration = Duration::from_secs(60);

fn spawn(era: Era) -> Mcp {
    Mcp::start(era, Spawn::default().envs(lean().server_env()))
}

fn spawn_with(era: Era, extra: &[(&str, &str)]) -> Mcp {
    Mcp::on_lean(era, extra)
}

fn fixture(name: &str) -> String {
    lean().fixture(name).to_string_lossy().into_owned()
}

fn doc(root: &str, path: &str) -> Value {
    json!({"workspace": ws(root), "path": path})
}

fn with(mut base: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().expect("object") {
        base[k] = v.clone();
    }
    base
}

fn count(result: &Value, severity: &str) -> u64 {
    result["diagnostics"]["counts"][severity]
        .as_u64()
        .expect("count")
}

fn range_of(item: &Value) -> (u64, u64, u64, u64) {
    let at = |p: &str| {
        item["range"]
            .pointer(p)
            .and_then(Value::as_u64)
            .expect("range")
    };
    (
        at("/start/line"),
        at("/start/character"),
        at("/end/line"),
        at("/end/character"),
    )
}

/// A file whose elaboration sleeps `ms` milliseconds (Fix.Basic's `sleep`
/// tactic: wall time without CPU), with one error after it.
fn sleepy(ms: u64) -> String {
    format!(
        "prelude\nimport Fix.Basic\n\nnamespace Fix\n\ntheorem sleepy : Eq one one := by\n  sleep {ms}\n  exact Eq.refl one\n\ndef bad : N := missingThing\n\nend Fix\n"
    )
}

/// Direct children of `parent` that run the test toolchain as a server.
fn lean_servers_of(parent: u32) -> Vec<common::lean::Proc> {
    common::lean::launched_servers_of(parent)
}

/// The `lean --server` processes that are children of `parent` (a stand-in
/// that execs Lean, as the serve-only shim below does).
fn bare_lean_servers_of(parent: u32) -> Vec<common::lean::Proc> {
    let lean = lean().lean.to_string_lossy().into_owned();
    processes_mentioning(&lean)
        .into_iter()
        .filter(|p| p.ppid == parent && p.cmdline.contains("--server"))
        .collect()
}

fn kill9(pid: u64) {
    let status = Command::new("kill")
        .arg("-9")
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -9 {pid} failed");
}

// ---------------------------------------------------------------------------
// Diagnostics: exactly what `lean FILE` prints, never stale.

#[test]
fn cli_output_parser_converts_code_points_to_utf16() {
    let source = "a\nb\ndef 𝔽𝔽 : N := N.add 𝔽 γ₃\n";
    let out = "F.lean:3:22: error(lean.unknownIdentifier): Unknown identifier `γ₃`\nF.lean:1:0: warning: two\n\n  lines\n";
    let d = parse_cli_output("F.lean", source, out);
    assert_eq!(d.len(), 2);
    assert_eq!((d[0].line, d[0].character), (2, 25));
    assert_eq!(d[0].code.as_deref(), Some("lean.unknownIdentifier"));
    assert_eq!(d[1].message, "two\n\n  lines");
}

#[test]
fn sync_diagnostics_are_identical_to_lean_cli_output() {
    let l = lean();
    let mut mcp = spawn(Era::Modern);
    let cases = [
        ("basic", "Fix/Errors.lean"),
        ("basic", "Fix/Sorry.lean"),
        ("basic", "Fix/Unicode.lean"),
        ("basic", "Fix/Goals.lean"),
        ("second", "Sec/Main.lean"),
    ];
    let ids: Vec<(Value, Value)> = cases
        .iter()
        .map(|(fx, path)| {
            let args = with(
                doc(&fixture(fx), path),
                json!({"diagnostic_scope": "all", "diagnostics_in_result": true}),
            );
            (
                mcp.start_call("lean_sync", args.clone(), &CallOpts::default()),
                args,
            )
        })
        .collect();
    for ((fx, path), (id, args)) in cases.iter().zip(&ids) {
        let root = l.fixture(fx);
        let (exit, out) = l.run_cli(&root, path);
        let source = std::fs::read_to_string(root.join(path)).unwrap();
        let mut cli = parse_cli_output(path, &source, &out);
        cli.sort();
        let result = mcp.ok(id, "lean_sync", args);
        assert_eq!(result["path"], *path);
        assert_eq!(result["version"], 1);
        assert_eq!(result["workspace"]["root"], root.to_string_lossy().as_ref());
        let mut items: Vec<CliDiagnostic> = result["diagnostics"]["items"]
            .as_array()
            .expect("items requested")
            .iter()
            .map(|i| CliDiagnostic {
                line: range_of(i).0,
                character: range_of(i).1,
                severity: i["severity"].as_str().unwrap().to_string(),
                code: i["code"].as_str().map(str::to_string),
                message: i["message"].as_str().unwrap().to_string(),
            })
            .collect();
        items.sort();
        assert_eq!(
            items, cli,
            "{path}: lean_sync items differ from `lean {path}`:\n{out}"
        );
        for severity in ["error", "warning", "information"] {
            let n = cli.iter().filter(|d| d.severity == severity).count() as u64;
            assert_eq!(count(&result, severity), n, "{path} {severity} count");
        }
        assert_eq!(count(&result, "total"), cli.len() as u64);
        assert_eq!(
            exit != 0,
            count(&result, "error") > 0,
            "{path}: exit {exit}"
        );
        let readiness = &result["readiness"];
        assert_eq!(readiness["save_ready"], count(&result, "error") == 0);
        assert_eq!(readiness["blocking_error_count"], count(&result, "error"));
        assert_eq!(result["document_progress"]["done"], true);
    }
}

#[test]
fn diagnostic_ranges_and_items_follow_scope() {
    let basic = fixture("basic");
    let mut mcp = spawn(Era::Modern);
    // No items unless asked; counts always complete.
    let plain = mcp.call("lean_sync", doc(&basic, "Fix/Errors.lean"));
    assert!(plain["diagnostics"].get("items").is_none(), "{plain}");
    assert_eq!(
        plain["diagnostics"]["counts"],
        json!({"error": 3, "warning": 1, "information": 0, "hint": 0, "unknown": 0, "total": 4})
    );
    assert_eq!(plain["readiness"]["reason"], "errors");
    assert_eq!(plain["readiness"]["blocking_error_count"], 3);
    assert_eq!(
        plain["readiness"]["blocking_diagnostics"]
            .as_array()
            .unwrap()
            .len(),
        3
    );

    // Errors only (the default scope).
    let errors = mcp.call(
        "lean_sync",
        with(
            doc(&basic, "Fix/Errors.lean"),
            json!({"diagnostics_in_result": true}),
        ),
    );
    let items = errors["diagnostics"]["items"].as_array().unwrap();
    let ranges: Vec<_> = items.iter().map(range_of).collect();
    assert_eq!(
        ranges,
        vec![(8, 28, 8, 40), (11, 33, 11, 44), (20, 14, 20, 21)]
    );
    assert!(items.iter().all(|i| i["severity"] == "error"));
    assert_eq!(items[0]["code"], "lean.unknownIdentifier");
    assert_eq!(items[0]["message"], "Unknown identifier `missingThing`");
    assert_eq!(
        items[1]["message"],
        "Type mismatch\n  Eq.refl one\nhas type\n  Eq one one\nbut is expected to have type\n  Eq one two"
    );
    assert_eq!(
        items[2]["message"],
        "unsolved goals\ncase succ\nk : N\nih : Eq (N.zero.add k) k\n⊢ Eq (N.zero.add k.succ) k.succ"
    );
    assert_eq!(
        count(&errors, "warning"),
        1,
        "counts stay complete under the errors scope"
    );

    // Everything.
    let all = mcp.call(
        "lean_sync",
        with(
            doc(&basic, "Fix/Errors.lean"),
            json!({"diagnostics_in_result": true, "diagnostic_scope": "all"}),
        ),
    );
    let items = all["diagnostics"]["items"].as_array().unwrap();
    assert_eq!(items.len(), 4);
    let warning = items
        .iter()
        .find(|i| i["severity"] == "warning")
        .expect("the linter warning");
    assert_eq!(range_of(warning), (14, 21, 14, 27));
    assert!(
        warning["message"]
            .as_str()
            .unwrap()
            .starts_with("Variable name `unused` is not explicitly referenced.")
    );

    // UTF-16 columns on a line with a surrogate pair.
    let uni = mcp.call(
        "lean_sync",
        with(
            doc(&basic, "Fix/Unicode.lean"),
            json!({"diagnostics_in_result": true}),
        ),
    );
    let items = uni["diagnostics"]["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(range_of(&items[0]), (13, 25, 13, 27));
    assert_eq!(items[0]["message"], "Unknown identifier `γ₃`");

    // A clean file: the seed's clean shape.
    let clean = mcp.call("lean_sync", doc(&basic, "Fix/Goals.lean"));
    assert_eq!(
        clean["readiness"],
        json!({"save_ready": true, "reason": "ok", "blocking_error_count": 0, "blocking_diagnostics": [], "blocking_messages": []})
    );
    let progress = &clean["document_progress"];
    assert_eq!(progress["done"], true);
    assert!(progress["updates"].as_u64().unwrap() >= 1);
    let lines = std::fs::read_to_string(Path::new(&basic).join("Fix/Goals.lean"))
        .unwrap()
        .split('\n')
        .count() as u64;
    assert_eq!(progress["range_end_line"], lines - 1);
}

#[test]
fn stale_diagnostics_never_survive_an_edit_and_versions_only_grow() {
    let tw = TempWorkspace::copy("basic");
    let root = tw.root_str();
    let errors = "Fix/Errors.lean";
    let mut mcp = spawn(Era::Legacy);
    let args = with(
        doc(&root, errors),
        json!({"diagnostics_in_result": true, "diagnostic_scope": "all"}),
    );

    let first = mcp.call("lean_sync", args.clone());
    assert_eq!(first["version"], 1);
    assert_eq!(count(&first, "error"), 3);

    // Unchanged on disk: update reports no change and keeps the version.
    let same = mcp.call("lean_update", doc(&root, errors));
    assert_eq!(
        (same["version"].as_u64(), same["changed"].as_bool()),
        (Some(1), Some(false))
    );

    // Fix the first error in place (a small edit: Lean gets an incremental change).
    let original = tw.read(errors);
    tw.write(
        errors,
        &original.replace("N.add one missingThing", "N.add one one"),
    );
    let second = mcp.call("lean_sync", args.clone());
    assert_eq!(second["version"], 2, "an edit on disk is a new version");
    assert_eq!(count(&second, "error"), 2);
    let messages: Vec<&str> = second["diagnostics"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["message"].as_str().unwrap())
        .collect();
    assert!(
        !messages.iter().any(|m| m.contains("missingThing")),
        "a stale diagnostic of version 1 survived: {messages:?}"
    );
    assert_eq!(second["readiness"]["blocking_error_count"], 2);

    // Remove every problem; lean_update sees the change, sync keeps its version.
    let fixed = original
        .replace("N.add one missingThing", "N.add one one")
        .replace(
            "theorem mismatch : Eq one two := Eq.refl one",
            "theorem mismatch : Eq one one := Eq.refl one",
        )
        .replace("(n unused : N)", "(n _unused : N)")
        .replace(
            "| succ k ih => skip",
            "| succ k ih => exact congrArg N.succ ih",
        );
    tw.write(errors, &fixed);
    let updated = mcp.call("lean_update", doc(&root, errors));
    assert_eq!(
        (updated["version"].as_u64(), updated["changed"].as_bool()),
        (Some(3), Some(true))
    );
    assert_eq!(updated["workspace"]["root"], root.as_str());
    assert_eq!(updated["path"], errors);
    let again = mcp.call("lean_update", doc(&root, errors));
    assert_eq!(
        (again["version"].as_u64(), again["changed"].as_bool()),
        (Some(3), Some(false))
    );
    let third = mcp.call("lean_sync", args.clone());
    assert_eq!(third["version"], 3);
    assert_eq!(count(&third, "total"), 0, "{third}");
    assert_eq!(third["diagnostics"]["items"], json!([]));
    assert_eq!(third["readiness"]["save_ready"], true);

    // A snapshot-bound call on the old version is refused.
    let stale = mcp.call_err(
        "lean_hover",
        with(
            doc(&root, errors),
            json!({"version": 2, "line": 8, "character": 20}),
        ),
    );
    assert_eq!(stale["code"], "contentModified");
    assert_eq!(stale["data"]["reason"], "versionMismatch");
    assert_eq!(
        (
            stale["data"]["expected"].as_u64(),
            stale["data"]["current"].as_u64()
        ),
        (Some(2), Some(3))
    );

    // lean_refresh re-elaborates under a new version.
    let refreshed = mcp.call("lean_refresh", args.clone());
    assert_eq!(refreshed["version"], 4);
    assert_eq!(count(&refreshed, "total"), 0);
    assert_eq!(refreshed["document_progress"]["done"], true);

    // The source on disk was never written by the server.
    assert_eq!(tw.read(errors), fixed);

    // lean_close is idempotent.
    let closed = mcp.call("lean_close", doc(&root, errors));
    assert_eq!(
        (closed["closed"].as_bool(), closed["wasOpen"].as_bool()),
        (Some(true), Some(true))
    );
    assert_eq!(closed["version"], 4);
    let closed_again = mcp.call("lean_close", doc(&root, errors));
    assert_eq!(
        (
            closed_again["closed"].as_bool(),
            closed_again["wasOpen"].as_bool()
        ),
        (Some(true), Some(false))
    );
    let never_opened = mcp.call("lean_close", doc(&root, "Fix/Sorry.lean"));
    assert_eq!(never_opened["closed"], true);
    let stats = mcp.workspace_stats(&root).expect("runtime");
    let docs = stats["documents"].as_array().unwrap();
    let entry = docs
        .iter()
        .find(|d| d["path"] == errors)
        .expect("document in stats");
    assert_eq!(
        (entry["version"].as_u64(), entry["open"].as_bool()),
        (Some(4), Some(false))
    );

    // A sync after close reopens it: no change on disk, so no new version.
    let reopened = mcp.call("lean_sync", args);
    assert_eq!(reopened["version"], 4);
    assert_eq!(count(&reopened, "total"), 0);
}

// ---------------------------------------------------------------------------
// Runtimes: lazily created, one per canonical root.

#[test]
fn simultaneous_cold_first_use_of_one_root_starts_one_lean_server() {
    let basic = fixture("basic");
    let mut mcp = spawn(Era::Modern);
    let files = [
        "Fix/Goals.lean",
        "Fix/Errors.lean",
        "Fix/Sorry.lean",
        "Fix/Unicode.lean",
        "Fix/Goals.lean",
        "Fix/Errors.lean",
        "Fix/Goals.lean",
        "Fix/Sorry.lean",
    ];
    let requests: Vec<(Value, Value)> = files
        .iter()
        .map(|f| {
            let id = mcp.fresh_id();
            (
                id.clone(),
                mcp.call_request(&id, "lean_sync", doc(&basic, f), &CallOpts::default()),
            )
        })
        .collect();
    mcp.send_all(&requests.iter().map(|(_, r)| r.clone()).collect::<Vec<_>>());
    let expected_errors: BTreeMap<&str, u64> = [
        ("Fix/Goals.lean", 0),
        ("Fix/Errors.lean", 3),
        ("Fix/Sorry.lean", 0),
        ("Fix/Unicode.lean", 1),
    ]
    .into();
    for ((id, _), file) in requests.iter().zip(files) {
        let result = mcp.ok(id, "lean_sync", &doc(&basic, file));
        assert_eq!(
            result["version"], 1,
            "{file}: concurrent syncs of one unchanged file share version 1"
        );
        assert_eq!(count(&result, "error"), expected_errors[file], "{file}");
    }
    let stats = mcp.workspace_stats(&basic).expect("one runtime");
    assert_eq!(stats["starts"], 1, "{stats}");
    assert_eq!(stats["restarts"], 0);
    assert_eq!(stats["alive"], true);
    assert_eq!(stats["root"], basic.as_str());
    let launch = if common::lean::via_lake() {
        " serve -- "
    } else {
        "--server"
    };
    assert!(
        stats["serverCommand"].as_str().unwrap().contains(launch),
        "{stats}"
    );
    assert!(stats["uptimeMs"].is_u64());
    assert!(
        stats["requests"].as_u64().unwrap() >= files.len() as u64,
        "{stats}"
    );
    let mut docs: Vec<(String, u64, bool)> = stats["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["path"].as_str().unwrap().to_string(),
                d["version"].as_u64().unwrap(),
                d["open"].as_bool().unwrap(),
            )
        })
        .collect();
    docs.sort();
    assert_eq!(
        docs,
        vec![
            ("Fix/Errors.lean".to_string(), 1, true),
            ("Fix/Goals.lean".to_string(), 1, true),
            ("Fix/Sorry.lean".to_string(), 1, true),
            ("Fix/Unicode.lean".to_string(), 1, true),
        ]
    );
    let servers = lean_servers_of(mcp.pid());
    assert_eq!(
        servers.len(),
        1,
        "exactly one Lean server process: {servers:?}"
    );
    assert_eq!(stats["pid"].as_u64(), Some(servers[0].pid as u64));
}

#[test]
fn simultaneous_cold_first_use_of_two_roots_starts_one_server_each() {
    let (basic, second) = (fixture("basic"), fixture("second"));
    let mut mcp = spawn(Era::Legacy);
    let mut requests = Vec::new();
    let mut ids = Vec::new();
    for _ in 0..3 {
        for (root, path) in [(&basic, "Fix/Sorry.lean"), (&second, "Sec/Main.lean")] {
            let id = mcp.fresh_id();
            requests.push(mcp.call_request(
                &id,
                "lean_sync",
                doc(root, path),
                &CallOpts::default(),
            ));
            ids.push((id, root.clone(), path));
        }
    }
    mcp.send_all(&requests);
    for (id, root, path) in &ids {
        let result = mcp.ok(id, "lean_sync", &doc(root, path));
        assert_eq!(result["workspace"]["root"], root.as_str());
        assert_eq!(
            count(&result, "warning"),
            if *path == "Sec/Main.lean" { 1 } else { 3 }
        );
    }
    let stats = mcp.stats();
    let workspaces = stats["workspaces"].as_object().unwrap();
    assert_eq!(workspaces.len(), 2, "{stats}");
    assert_eq!(workspaces[&basic]["starts"], 1);
    assert_eq!(workspaces[&second]["starts"], 1);
    assert_ne!(workspaces[&basic]["pid"], workspaces[&second]["pid"]);
    assert_eq!(lean_servers_of(mcp.pid()).len(), 2);
}

#[test]
fn symlink_aliases_share_one_runtime_and_echo_the_canonical_root() {
    let basic = fixture("basic");
    let dir = TempDir::new("alias");
    let alias = dir.path().join("alias-of-basic");
    std::os::unix::fs::symlink(&basic, &alias).expect("symlink");
    let alias = alias.to_string_lossy().into_owned();
    let mut mcp = spawn(Era::Modern);

    let via_alias = mcp.call("lean_sync", doc(&alias, "Fix/Goals.lean"));
    assert_eq!(
        via_alias["workspace"]["root"],
        basic.as_str(),
        "the canonical descriptor is echoed"
    );
    assert_eq!(via_alias["version"], 1);
    let via_root = mcp.call("lean_sync", doc(&basic, "Fix/Goals.lean"));
    assert_eq!(
        via_root["version"], 1,
        "the same document of the same runtime"
    );
    // An absolute path through the alias is canonicalized on its own.
    let absolute = format!("{alias}/Fix/../Fix/Goals.lean");
    let via_abs = mcp.call("lean_sync", doc(&basic, &absolute));
    assert_eq!(via_abs["path"], "Fix/Goals.lean");
    assert_eq!(via_abs["version"], 1);
    let stats = mcp.stats();
    let workspaces = stats["workspaces"].as_object().unwrap();
    assert_eq!(
        workspaces.keys().collect::<Vec<_>>(),
        vec![&basic],
        "{stats}"
    );
    assert_eq!(workspaces[&basic]["starts"], 1);
    assert_eq!(workspaces[&basic]["documents"].as_array().unwrap().len(), 1);
    assert_eq!(lean_servers_of(mcp.pid()).len(), 1);
}

#[test]
fn invalid_descriptors_are_invalid_input_naming_field_value_and_rule() {
    let basic = fixture("basic");
    let empty = TempDir::new("not-a-project");
    let empty_dir = empty.path().to_string_lossy().into_owned();
    let file = format!("{basic}/lean-toolchain");
    let missing = format!("{empty_dir}/does-not-exist");
    let mut mcp = spawn(Era::Modern);
    let cases: [(&str, &[&str]); 5] = [
        ("tests/fixtures/basic", &["absolute"]),
        (&missing, &["exist"]),
        (&file, &["directory"]),
        (
            &empty_dir,
            &["Lean/Lake project", "lean-toolchain", "lakefile"],
        ),
        ("", &["absolute"]),
    ];
    for (root, words) in cases {
        let error = mcp.call_err("lean_sync", doc(root, "Fix/Goals.lean"));
        assert_eq!(error["code"], "invalidInput", "{root:?}: {error}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("workspace.root"),
            "names the field: {message}"
        );
        assert!(message.contains(root), "names the value: {message}");
        for word in words {
            assert!(message.contains(word), "names the rule ({word}): {message}");
        }
        assert_eq!(error["data"]["field"], "workspace.root");
        assert_eq!(error["data"]["value"], root);
        assert!(error["data"]["rule"].is_string());
    }
    // Undeclared descriptor members are rejected, not ignored.
    let error = mcp.call_err(
        "lean_sync",
        json!({"workspace": {"root": basic, "alias": "other"}, "path": "Fix/Goals.lean"}),
    );
    assert_eq!(error["code"], "invalidInput", "{error}");
    assert!(
        error.to_string().contains("alias"),
        "names the undeclared field: {error}"
    );
    // A missing document path names the path field.
    let error = mcp.call_err("lean_sync", doc(&basic, "Fix/Nope.lean"));
    assert_eq!(error["code"], "invalidInput");
    assert_eq!(error["data"]["field"], "path");
    assert_eq!(error["data"]["value"], "Fix/Nope.lean");
    // Eviction also wants an absolute root.
    let error = mcp.call_err(
        "lean_drop_workspace",
        json!({"workspace": {"root": "relative/root"}}),
    );
    assert_eq!(error["code"], "invalidInput");
    assert_eq!(error["data"]["field"], "workspace.root");
    // Only the valid root of the undeclared-field case could have made a runtime,
    // and it was rejected before: nothing is cached.
    let stats = mcp.stats();
    assert_eq!(stats["workspaces"], json!({}), "{stats}");
    assert!(lean_servers_of(mcp.pid()).is_empty());
}

// ---------------------------------------------------------------------------
// Cancellation and faults.

#[test]
fn cancelling_a_slow_sync_sends_no_response_and_the_server_keeps_serving() {
    let basic = fixture("basic");
    let mut mcp = Mcp::start(
        Era::Legacy,
        Spawn::default()
            .envs(lean().server_env())
            .env("LEAN_BEAM_LOG", "debug"),
    );
    let token = json!("slow");
    let slow = doc(&basic, "Fix/Slow.lean");
    let id = mcp.start_call("lean_sync", slow.clone(), &CallOpts::token("slow"));
    // Lean is elaborating: a file-progress update (not the preparation one) arrived.
    mcp.wait_notification("file progress of Slow.lean", |m| {
        m["method"] == "notifications/progress"
            && m["params"]["progressToken"] == token
            && m["params"]["_meta"]["beam"]["done"] == false
    });
    mcp.cancel(&id);

    // The server goes on serving, on the same runtime and on the same document.
    let goals = mcp.call("lean_sync", doc(&basic, "Fix/Goals.lean"));
    assert_eq!(count(&goals, "total"), 0);
    // The cancelled call's task records its end on its own schedule.
    assert!(
        eventually(GUARD, || mcp.stats()["requests"]["cancelled"] == 1),
        "{}",
        mcp.stats()
    );
    assert_eq!(mcp.stats()["workspaces"][&basic]["starts"], 1);
    assert!(
        eventually(GUARD, || mcp.stderr().contains("cancelling request")),
        "the Lean request was not cancelled with $/cancelRequest:\n{}",
        mcp.stderr()
    );
    let again = mcp.call("lean_sync", slow);
    assert_eq!(again["version"], 1);
    assert_eq!(count(&again, "total"), 0);
    assert_eq!(again["document_progress"]["done"], true);
    // The cancelled call never answered.
    assert!(
        !mcp.received
            .iter()
            .any(|m| m.get("method").is_none() && m["id"] == id),
        "a response to the cancelled request was sent"
    );
}

#[test]
fn killing_the_lean_server_mid_sync_fails_the_call_and_the_next_sync_restarts_it() {
    let tw = TempWorkspace::copy("basic");
    let root = tw.root_str();
    tw.write("Fix/Sleepy.lean", &sleepy(60_000));
    let mut mcp = spawn(Era::Modern);
    mcp.call("lean_sync", doc(&root, "Fix/Goals.lean"));
    let before = mcp.workspace_stats(&root).expect("runtime");
    let pid = before["pid"].as_u64().expect("pid");
    assert_eq!(before["starts"], 1);

    let token = json!(99);
    let id = mcp.start_call(
        "lean_sync",
        doc(&root, "Fix/Sleepy.lean"),
        &CallOpts::token(99),
    );
    mcp.wait_notification("file progress of Sleepy.lean", |m| {
        m["method"] == "notifications/progress"
            && m["params"]["progressToken"] == token
            && m["params"]["_meta"]["beam"]["done"] == false
    });
    kill9(pid);
    let error = mcp.err(&id, "lean_sync", &doc(&root, "Fix/Sleepy.lean"));
    assert_eq!(error["code"], "workerExited", "{error}");
    assert_eq!(error["data"]["signal"], 9, "{error}");
    // The whole process tree of the old server is gone (its workers too).
    assert!(
        eventually(GUARD, || processes_mentioning(
            &lean().lean.to_string_lossy()
        )
        .iter()
        .all(|p| p.pgid as u64 != pid)),
        "processes of the killed server's group survive"
    );

    // The next request restarts the server and reopens the documents.
    let recovered = mcp.call("lean_sync", doc(&root, "Fix/Goals.lean"));
    assert_eq!(count(&recovered, "total"), 0);
    tw.write("Fix/Sleepy.lean", &sleepy(1));
    let sleepy_again = mcp.call("lean_sync", doc(&root, "Fix/Sleepy.lean"));
    assert_eq!(count(&sleepy_again, "error"), 1);
    assert!(
        sleepy_again["version"].as_u64().unwrap() >= 2,
        "{sleepy_again}"
    );
    let after = mcp.workspace_stats(&root).expect("runtime");
    assert_eq!(after["starts"], 2, "{after}");
    assert_eq!(after["restarts"], 1);
    assert_eq!(after["alive"], true);
    assert_ne!(after["pid"].as_u64(), Some(pid));
    let servers = lean_servers_of(mcp.pid());
    assert_eq!(servers.len(), 1, "{servers:?}");
}

/// The Lean worker process of `file` under the server `server_pid` (the
/// process `beam_stats` names: `lean --server`, or `lake serve` above it).
fn worker_of(server_pid: u64, file: &str) -> Option<u32> {
    let lean = lean().lean.to_string_lossy().into_owned();
    let watchdog = common::lean::watchdog_of(server_pid as u32)?;
    processes_mentioning(&lean)
        .into_iter()
        .find(|p| p.ppid == watchdog && p.cmdline.contains("--worker") && p.cmdline.contains(file))
        .map(|p| p.pid)
}

#[test]
fn a_dead_worker_fails_its_call_and_the_next_request_reopens_the_file() {
    let tw = TempWorkspace::copy("basic");
    let root = tw.root_str();
    tw.write("Fix/Sleepy.lean", &sleepy(60_000));
    // A hang must show as a timeout error here, not as a stuck test.
    let mut mcp = spawn_with(
        Era::Modern,
        &[
            ("LEAN_BEAM_SYNC_TIMEOUT_SECS", "60"),
            ("LEAN_BEAM_REQUEST_TIMEOUT_SECS", "60"),
        ],
    );
    mcp.call("lean_sync", doc(&root, "Fix/Goals.lean"));
    let server = mcp.workspace_stats(&root).unwrap()["pid"].as_u64().unwrap();

    // Mid-request: the call fails with workerCrashed.
    let id = mcp.start_call(
        "lean_sync",
        doc(&root, "Fix/Sleepy.lean"),
        &CallOpts::token("w"),
    );
    // Killed once it elaborates the sleep (line 5), so that Lean surely holds
    // the sync's wait: Lean reports progress (line 0) before it even starts
    // the worker, and a worker killed before Lean has passed the wait on is a
    // worker that stopped *before* the call, which the call retries once, on
    // a new worker, sleeping as long again.
    mcp.wait_notification("Sleepy.lean elaborating its sleep", |m| {
        m["method"] == "notifications/progress"
            && m["params"]["_meta"]["beam"]["done"] == false
            && m["params"]["_meta"]["beam"]["line"].as_u64() >= Some(5)
    });
    let sleepy_file = format!("{root}/Fix/Sleepy.lean");
    let worker = worker_of(server, &sleepy_file).expect("a worker for Sleepy.lean");
    kill9(worker as u64);
    let error = mcp.err(&id, "lean_sync", &Value::Null);
    assert_eq!(
        error["code"],
        "workerCrashed",
        "{error}\nstderr:\n{}",
        mcp.stderr()
    );
    assert!(
        error["message"].as_str().unwrap().contains("lean_sync"),
        "says what to do next: {error}"
    );
    tw.write("Fix/Sleepy.lean", &sleepy(1));
    let recovered = mcp.call("lean_sync", doc(&root, "Fix/Sleepy.lean"));
    assert_eq!(count(&recovered, "error"), 1);
    assert_eq!(recovered["readiness"]["reason"], "errors", "{recovered}");

    // While idle: the worker of an unchanged, elaborated file dies. Lean holds
    // requests for that file until it is reopened. The first request after the
    // death may still be the one that learns of it (workerCrashed); the next
    // one recovers. Both orders of sync and hover, twice (the race differs).
    let goals_file = format!("{root}/Fix/Goals.lean");
    let hover_args = json!({"workspace": ws(&root), "path": "Fix/Goals.lean", "version": 1, "line": 11, "character": 34});
    for round in 0..4 {
        let worker = worker_of(server, &goals_file);
        let worker = worker.unwrap_or_else(|| panic!("round {round}: no worker for Goals.lean"));
        kill9(worker as u64);
        assert!(eventually(GUARD, || worker_of(server, &goals_file) != Some(worker)));
        let (tool, args) = if round % 2 == 0 {
            ("lean_sync", doc(&root, "Fix/Goals.lean"))
        } else {
            ("lean_hover", hover_args.clone())
        };
        let id = mcp.start_call(tool, args.clone(), &CallOpts::default());
        let first = mcp.tool_result(&id);
        if first["isError"] == true {
            assert_eq!(
                common::tool_error(&first)["code"],
                "workerCrashed",
                "round {round}: {first}"
            );
        }
        let synced = mcp.call("lean_sync", doc(&root, "Fix/Goals.lean"));
        assert_eq!(
            synced["version"], 1,
            "reopening an unchanged file is not a new version"
        );
        assert_eq!(
            synced["readiness"]["save_ready"], true,
            "round {round}: {synced}"
        );
        let hover = mcp.call("lean_hover", hover_args.clone());
        assert!(
            hover["hover"]["contents"]["value"]
                .as_str()
                .unwrap()
                .contains("Fix.N.add"),
            "{hover}"
        );
    }
    let stats = mcp.workspace_stats(&root).unwrap();
    assert_eq!(
        (stats["starts"].as_u64(), stats["pid"].as_u64()),
        (Some(1), Some(server)),
        "the server itself lived on"
    );
}

/// Whether Lean's report of `path` is final.
fn settled(mcp: &mut Mcp, root: &str, path: &str) -> bool {
    mcp.document_stats(root, path)["settled"].as_bool().unwrap()
}

/// The worker process the server knows for `path`.
fn worker_pid(mcp: &mut Mcp, root: &str, path: &str) -> Option<u32> {
    mcp.document_stats(root, path)["workerPid"]
        .as_u64()
        .map(|p| p as u32)
}

/// An unchanged file whose report Lean finished is answered from that report,
/// identically, with the same progress shape and without asking Lean. An edit
/// on disk, or a worker that dies while idle, unsettles it: the next sync waits
/// for Lean again.
#[test]
fn an_unchanged_settled_file_is_answered_from_its_final_report() {
    let tw = TempWorkspace::copy("basic");
    let root = tw.root_str();
    let errors = "Fix/Errors.lean";
    let mut mcp = spawn(Era::Modern);
    let first = mcp.call("lean_sync", doc(&root, errors));
    assert!(count(&first, "error") >= 1, "{first}");
    assert!(settled(&mut mcp, &root, errors));
    let server = mcp.workspace_stats(&root).unwrap()["pid"].as_u64().unwrap();
    let file = format!("{root}/{errors}");
    let worker = worker_of(server, &file).expect("worker of Errors.lean");
    assert_eq!(
        worker_pid(&mut mcp, &root, errors),
        Some(worker),
        "the document knows its worker process"
    );
    let lsp_requests = |mcp: &mut Mcp| mcp.workspace_stats(&root).unwrap()["lspRequests"].clone();
    let asked = lsp_requests(&mut mcp);
    assert!(asked.as_u64().is_some_and(|n| n >= 1), "{asked}");
    let again = mcp.call("lean_sync", doc(&root, errors));
    assert_eq!(again, first, "an unchanged sync answers the same report");
    assert_eq!(lsp_requests(&mut mcp), asked, "without asking Lean");

    // With a token: the preparation and one done=true, before the response.
    let token = json!("settled");
    let id = mcp.start_call("lean_sync", doc(&root, errors), &CallOpts::token("settled"));
    assert_eq!(mcp.ok(&id, "lean_sync", &Value::Null), first);
    mcp.stats();
    check_progress(&mcp, &id, &token);
    let done = mcp
        .progress_of(&token)
        .iter()
        .filter(|p| p["_meta"]["beam"]["done"] == true)
        .count();
    assert_eq!(done, 1, "the final report is announced once");

    // An edit on disk is a new version with Lean's new report.
    let source = std::fs::read_to_string(format!("{root}/{errors}")).unwrap();
    tw.write(
        errors,
        &format!(
            "{source}
def addedLater : N := missingAgain\n"
        ),
    );
    let edited = mcp.call("lean_sync", doc(&root, errors));
    assert_eq!(edited["version"], 2);
    assert_eq!(
        count(&edited, "error"),
        count(&first, "error") + 1,
        "{edited}"
    );
    assert!(settled(&mut mcp, &root, errors));

    // A worker that dies while idle: Lean reports it (fatal file progress) and
    // the document is no longer settled; the next sync reopens the file.
    assert_eq!(
        worker_pid(&mut mcp, &root, errors),
        Some(worker),
        "an edit keeps the worker"
    );
    kill9(worker as u64);
    assert!(
        eventually(GUARD, || !settled(&mut mcp, &root, errors)),
        "the dead worker is noticed without a request"
    );
    let reopened = mcp.call("lean_sync", doc(&root, errors));
    for key in ["version", "diagnostics", "readiness"] {
        assert_eq!(reopened[key], edited[key], "same {key} from a new worker");
    }
    assert!(settled(&mut mcp, &root, errors));
    let new_worker = worker_of(server, &file);
    assert!(new_worker.is_some_and(|w| w != worker));
    assert_eq!(worker_pid(&mut mcp, &root, errors), new_worker);
}

#[test]
fn no_wait_is_unbounded_a_timeout_is_an_explicit_error() {
    let tw = TempWorkspace::copy("basic");
    let root = tw.root_str();
    tw.write("Fix/Sleepy.lean", &sleepy(6000));
    let mut mcp = spawn_with(
        Era::Modern,
        &[
            ("LEAN_BEAM_SYNC_TIMEOUT_SECS", "1"),
            ("LEAN_BEAM_REQUEST_TIMEOUT_SECS", "1"),
        ],
    );
    let error = mcp.call_err("lean_sync", doc(&root, "Fix/Sleepy.lean"));
    assert_eq!(error["code"], "syncBarrierIncomplete", "{error}");
    assert_eq!(error["data"]["partial"], true);
    assert_eq!(error["data"]["version"], 1);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("LEAN_BEAM_SYNC_TIMEOUT_SECS"),
        "{error}"
    );
    // A request about a place Lean has not reached yet waits for it, within limits.
    let args = json!({"workspace": ws(&root), "path": "Fix/Sleepy.lean", "version": 1, "line": 9, "character": 4});
    let error = mcp.call_err("lean_hover", args);
    assert_eq!(error["data"]["partial"], true, "{error}");
    assert_eq!(error["data"]["timeout_secs"], 1);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("LEAN_BEAM_REQUEST_TIMEOUT_SECS"),
        "{error}"
    );
    // Nothing is wedged.
    tw.write("Fix/Sleepy.lean", &sleepy(1));
    let synced = mcp.call("lean_sync", doc(&root, "Fix/Sleepy.lean"));
    assert_eq!(synced["version"], 2);
    assert_eq!(count(&synced, "error"), 1);
}

// ---------------------------------------------------------------------------
// Drop fencing and teardown.

#[test]
fn drop_is_a_full_fence_idempotent_and_accepts_a_vanished_root() {
    let tw = TempWorkspace::copy("basic");
    let root = tw.root_str();
    tw.write("Fix/Sleepy.lean", &sleepy(1500));
    let mut mcp = spawn(Era::Modern);

    // A drop of a never-used root.
    let absent = mcp.call("lean_drop_workspace", json!({"workspace": ws(&root)}));
    assert_eq!(absent["dropped"], false);
    assert_eq!(absent["reason"], "notFound");
    assert_eq!(absent["workspace"]["root"], root.as_str());

    // slow sync, drop, fast sync: answered in exactly that order.
    let slow = mcp.start_call(
        "lean_sync",
        doc(&root, "Fix/Sleepy.lean"),
        &CallOpts::default(),
    );
    let drop_id = mcp.start_call(
        "lean_drop_workspace",
        json!({"workspace": ws(&root)}),
        &CallOpts::default(),
    );
    let fast = mcp.start_call(
        "lean_sync",
        doc(&root, "Fix/Goals.lean"),
        &CallOpts::default(),
    );
    let slow_result = mcp.ok(&slow, "lean_sync", &Value::Null);
    assert_eq!(
        count(&slow_result, "error"),
        1,
        "the earlier call completed normally"
    );
    let dropped = mcp.ok(&drop_id, "lean_drop_workspace", &Value::Null);
    assert_eq!(dropped["dropped"], true);
    assert_eq!(dropped["workspace"]["root"], root.as_str());
    let fast_result = mcp.ok(&fast, "lean_sync", &Value::Null);
    assert_eq!(fast_result["version"], 1);
    let (p_slow, p_drop, p_fast) = (
        mcp.position_of_response(&slow),
        mcp.position_of_response(&drop_id),
        mcp.position_of_response(&fast),
    );
    assert!(
        p_slow < p_drop && p_drop < p_fast,
        "order {p_slow} {p_drop} {p_fast}"
    );
    // The call after the drop recreated the runtime from scratch.
    let stats = mcp.workspace_stats(&root).expect("recreated");
    assert_eq!(stats["starts"], 1);
    assert_eq!(stats["documents"].as_array().unwrap().len(), 1, "{stats}");

    // Idempotent.
    let first = mcp.call("lean_drop_workspace", json!({"workspace": ws(&root)}));
    assert_eq!(first["dropped"], true);
    let second = mcp.call("lean_drop_workspace", json!({"workspace": ws(&root)}));
    assert_eq!(
        (second["dropped"].as_bool(), second["reason"].as_str()),
        (Some(false), Some("notFound"))
    );
    assert!(
        eventually(GUARD, || lean_processes_of(tw.root()).is_empty()),
        "drop left Lean running"
    );

    // A canonical descriptor whose directory has since disappeared.
    let gone = TempWorkspace::copy("basic");
    let gone_root = gone.root_str();
    let synced = mcp.call("lean_sync", doc(&gone_root, "Fix/Goals.lean"));
    let canonical = synced["workspace"].clone();
    std::fs::remove_dir_all(gone.root()).expect("remove the workspace");
    let error = mcp.call_err("lean_sync", doc(&gone_root, "Fix/Goals.lean"));
    assert_eq!(
        error["code"], "invalidInput",
        "the root no longer exists for ordinary requests"
    );
    let evicted = mcp.call("lean_drop_workspace", json!({"workspace": canonical}));
    assert_eq!(evicted["dropped"], true, "{evicted}");
    assert_eq!(evicted["workspace"]["root"], gone_root.as_str());
    let again = mcp.call("lean_drop_workspace", json!({"workspace": canonical}));
    assert_eq!(again["reason"], "notFound");
    assert!(mcp.workspace_stats(&gone_root).is_none());
    assert!(eventually(GUARD, || lean_processes_of(gone.root()).is_empty()));
}

#[test]
fn versions_keep_growing_across_a_drop_so_old_versions_stay_stale() {
    let tw = TempWorkspace::copy("basic");
    let root = tw.root_str();
    let mut mcp = spawn(Era::Modern);
    let first = mcp.call("lean_sync", doc(&root, "Fix/Goals.lean"));
    assert_eq!(first["version"], 1);
    let dropped = mcp.call("lean_drop_workspace", json!({"workspace": ws(&root)}));
    assert_eq!(dropped["dropped"], true);
    let again = mcp.call("lean_sync", doc(&root, "Fix/Goals.lean"));
    assert_eq!(
        again["version"], 2,
        "a recreated runtime continues above: {again}"
    );
    let stale = mcp.call_err(
        "lean_hover",
        with(
            doc(&root, "Fix/Goals.lean"),
            json!({"version": 1, "line": 11, "character": 34}),
        ),
    );
    assert_eq!(stale["code"], "contentModified", "{stale}");
    assert_eq!(stale["data"]["reason"], "versionMismatch");
}

#[test]
fn a_request_right_after_the_lean_server_was_killed_runs_on_a_new_one() {
    let tw = TempWorkspace::copy("basic");
    let root = tw.root_str();
    let mut mcp = spawn(Era::Modern);
    mcp.call("lean_sync", doc(&root, "Fix/Goals.lean"));
    let server = mcp.workspace_stats(&root).unwrap()["pid"].as_u64().unwrap();
    kill9(server);
    // At once, while the killed server is still being torn down and before
    // the broker could learn of it from its pipes: the call came after the
    // death, so it is not a call the death interrupted.
    let hover = mcp.call(
        "lean_hover",
        json!({"workspace": ws(&root), "path": "Fix/Goals.lean", "version": 1, "line": 11, "character": 34}),
    );
    assert!(
        hover["hover"]["contents"]["value"]
            .as_str()
            .unwrap()
            .contains("N.add"),
        "{hover}"
    );
    let stats = mcp.workspace_stats(&root).unwrap();
    assert_eq!(stats["restarts"], 1, "{stats}");
    assert_ne!(stats["pid"].as_u64(), Some(server));
}

#[test]
fn eof_with_open_documents_and_a_call_in_flight_leaves_no_lean_process() {
    let tw = TempWorkspace::copy("basic");
    let root = tw.root_str();
    tw.write("Fix/Sleepy.lean", &sleepy(60_000));
    let mut mcp = spawn(Era::Legacy);
    mcp.call("lean_sync", doc(&root, "Fix/Goals.lean"));
    mcp.call("lean_sync", doc(&root, "Fix/Errors.lean"));
    mcp.start_call(
        "lean_sync",
        doc(&root, "Fix/Sleepy.lean"),
        &CallOpts::token("eof"),
    );
    mcp.wait_notification("Sleepy.lean elaborating", |m| {
        m["method"] == "notifications/progress" && m["params"]["_meta"]["beam"]["done"] == false
    });
    // A process caught while it execs (or exits) shows no environment for a
    // moment, so the picture is taken again until it is steady.
    let visible = || {
        let running = lean_processes_of(tw.root());
        running.len() >= 2 && running.iter().all(|p| p.environ.contains(&root))
    };
    assert!(
        eventually(GUARD, visible),
        "the server and its workers are visible: {:?}",
        lean_processes_of(tw.root())
    );

    mcp.close_stdin();
    let status = mcp.wait_exit(GUARD);
    assert!(status.success(), "exit status {status}\n{}", mcp.stderr());
    assert!(
        eventually(GUARD, || lean_processes_of(tw.root()).is_empty()),
        "orphaned Lean processes after EOF: {:?}",
        lean_processes_of(tw.root())
    );
}

// ---------------------------------------------------------------------------
// Progress and logs.

fn check_progress(mcp: &Mcp, id: &Value, token: &Value) {
    let response_at = mcp.position_of_response(id);
    let all: Vec<(usize, &Value)> = mcp
        .received
        .iter()
        .enumerate()
        .filter(|(_, m)| {
            m["method"] == "notifications/progress" && &m["params"]["progressToken"] == token
        })
        .collect();
    assert!(
        all.len() >= 2,
        "a preparation update and file progress: {all:?}"
    );
    assert!(
        all.iter().all(|(i, _)| *i < response_at),
        "progress after the response"
    );
    let values: Vec<f64> = all
        .iter()
        .map(|(_, m)| m["params"]["progress"].as_f64().unwrap())
        .collect();
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "progress not strictly increasing: {values:?}"
    );
    let first = &all[0].1["params"];
    assert!(
        first["_meta"]["beam"].is_null(),
        "the first update is the preparation: {first}"
    );
    assert!(
        first["message"].as_str().unwrap().contains("preparing"),
        "{first}"
    );
    let done = all
        .iter()
        .filter(|(_, m)| m["params"]["_meta"]["beam"]["done"] == true)
        .count();
    assert!(done <= 1, "{done} done=true updates");
    assert!(all.iter().all(|(_, m)| m["params"]["message"].is_string()));
}

#[test]
fn progress_precedes_the_response_strictly_increasing_with_at_most_one_done() {
    let long = fixture("long");
    // Modern, integer token.
    let mut modern = spawn(Era::Modern);
    let token = json!(7);
    let id = modern.start_call("lean_sync", doc(&long, "Long.lean"), &CallOpts::token(7));
    let result = modern.ok(&id, "lean_sync", &Value::Null);
    // Anything still queued for the token would arrive before a later answer.
    modern.stats();
    check_progress(&modern, &id, &token);
    assert_eq!(result["document_progress"]["done"], true);
    assert_eq!(result["document_progress"]["range_end_line"], 1999);
    assert!(result["document_progress"]["updates"].as_u64().unwrap() >= 2);

    // Legacy, string token, a refresh (full re-elaboration).
    let mut legacy = spawn(Era::Legacy);
    legacy.call("lean_sync", doc(&long, "Long.lean"));
    let token = json!("refresh-token");
    let id = legacy.start_call(
        "lean_refresh",
        doc(&long, "Long.lean"),
        &CallOpts::token("refresh-token"),
    );
    let result = legacy.ok(&id, "lean_refresh", &Value::Null);
    legacy.stats();
    check_progress(&legacy, &id, &token);
    assert_eq!(result["version"], 2);
    // Quiet tools ignore a token.
    let id = legacy.start_call("beam_stats", json!({}), &CallOpts::token("quiet"));
    legacy.ok(&id, "beam_stats", &Value::Null);
    assert!(legacy.progress_of(&json!("quiet")).is_empty());
}

#[test]
fn progress_shows_the_command_lean_is_on_even_when_lean_goes_quiet() {
    let tw = TempWorkspace::copy("basic");
    let root = tw.root_str();
    // Lean reports twenty quick commands in a burst of updates (a few
    // milliseconds), then nothing for the whole sleep that follows them
    // (line 26): the last update of the burst, the one that reached the
    // sleep, is held back by the throttle, and must still go out.
    let checks = "#check one\n".repeat(20);
    tw.write(
        "Fix/Quiet.lean",
        &format!("prelude\nimport Fix.Basic\n\nnamespace Fix\n\n{checks}\ntheorem quiet : Eq one one := by\n  sleep 3000\n  exact Eq.refl one\n\nend Fix\n"),
    );
    let mut mcp = spawn(Era::Modern);
    let id = mcp.start_call(
        "lean_sync",
        doc(&root, "Fix/Quiet.lean"),
        &CallOpts::token("quiet"),
    );
    let at_sleep = mcp.wait_notification("progress at the sleep", |m| {
        m["method"] == "notifications/progress"
            && m["params"]["_meta"]["beam"]["line"].as_u64() >= Some(26)
    });
    assert_eq!(
        at_sleep["params"]["_meta"]["beam"]["done"], false,
        "{at_sleep}"
    );
    let result = mcp.ok(&id, "lean_sync", &Value::Null);
    assert_eq!(count(&result, "error"), 0, "{result}");
    check_progress(&mcp, &id, &json!("quiet"));
}

const LEVELS_FILE: &str = "prelude\nimport Fix.Basic\n\nnamespace Fix\n\n#check one\n\ndef ignoresSecond' (n unused : N) : N := n\n\ndef broken' : N := missingThing\n\nend Fix\n";

/// The levels of the `lean.diagnostic` logs of one call (which must be the
/// only call in flight), after clearing what came before.
fn diagnostic_levels(mcp: &mut Mcp, tool: &str, args: Value, opts: &CallOpts) -> Vec<String> {
    mcp.clear();
    let id = mcp.start_call(tool, args, opts);
    mcp.ok(&id, tool, &Value::Null);
    let logs = mcp.logs("lean.diagnostic");
    for log in &logs {
        assert_eq!(log["data"]["path"], "Fix/Levels.lean");
        assert!(log["data"]["version"].is_u64());
        assert_eq!(
            log["level"],
            log["data"]["diagnostic"]["severity"]
                .as_str()
                .map(|s| match s {
                    "information" => "info",
                    other => other,
                })
                .unwrap()
        );
    }
    let mut levels: Vec<String> = logs
        .iter()
        .map(|l| l["level"].as_str().unwrap().to_string())
        .collect();
    levels.sort();
    levels
}

#[test]
fn lean_diagnostic_logs_follow_scope_and_the_legacy_session_level() {
    let tw = TempWorkspace::copy("basic");
    let root = tw.root_str();
    tw.write("Fix/Levels.lean", LEVELS_FILE);
    let mut mcp = spawn_with(Era::Legacy, &[("LEAN_BEAM_STATUS_DELAY_MS", "600000")]);
    let errors_only = doc(&root, "Fix/Levels.lean");
    let all = with(
        doc(&root, "Fix/Levels.lean"),
        json!({"diagnostic_scope": "all"}),
    );
    let none = CallOpts::default();
    // The legacy session starts at debug.
    assert_eq!(
        diagnostic_levels(&mut mcp, "lean_sync", errors_only.clone(), &none),
        ["error"]
    );
    assert_eq!(
        diagnostic_levels(&mut mcp, "lean_sync", all.clone(), &none),
        ["error", "info", "warning"]
    );
    let table: [(&str, &[&str]); 6] = [
        ("info", &["error", "info", "warning"]),
        ("notice", &["error", "warning"]),
        ("warning", &["error", "warning"]),
        ("error", &["error"]),
        ("critical", &[]),
        ("debug", &["error", "info", "warning"]),
    ];
    for (level, expected) in table {
        mcp.set_level(level);
        assert_eq!(
            diagnostic_levels(&mut mcp, "lean_sync", all.clone(), &none),
            expected,
            "level {level}"
        );
    }
    mcp.set_level("warning");
    assert_eq!(
        diagnostic_levels(&mut mcp, "lean_refresh", errors_only, &none),
        ["error"]
    );
    // The result is complete whatever the logs showed.
    let result = mcp.call(
        "lean_sync",
        with(all, json!({"diagnostics_in_result": true})),
    );
    assert_eq!(result["diagnostics"]["counts"]["information"], 1);
    assert_eq!(result["diagnostics"]["items"].as_array().unwrap().len(), 3);
    assert!(
        mcp.logs("beam.status").is_empty(),
        "no status notice for calls shorter than the delay"
    );
}

#[test]
fn lean_diagnostic_logs_follow_scope_and_the_modern_request_level() {
    let tw = TempWorkspace::copy("basic");
    let root = tw.root_str();
    tw.write("Fix/Levels.lean", LEVELS_FILE);
    let mut mcp = spawn_with(Era::Modern, &[("LEAN_BEAM_STATUS_DELAY_MS", "600000")]);
    let errors_only = doc(&root, "Fix/Levels.lean");
    let all = with(
        doc(&root, "Fix/Levels.lean"),
        json!({"diagnostic_scope": "all"}),
    );
    // No per-request level: no logs at all.
    assert!(diagnostic_levels(&mut mcp, "lean_sync", all.clone(), &CallOpts::default()).is_empty());
    let table: [(&str, &[&str]); 6] = [
        ("debug", &["error", "info", "warning"]),
        ("info", &["error", "info", "warning"]),
        ("notice", &["error", "warning"]),
        ("warning", &["error", "warning"]),
        ("error", &["error"]),
        ("emergency", &[]),
    ];
    for (level, expected) in table {
        assert_eq!(
            diagnostic_levels(&mut mcp, "lean_sync", all.clone(), &CallOpts::level(level)),
            expected,
            "level {level}"
        );
    }
    assert_eq!(
        diagnostic_levels(
            &mut mcp,
            "lean_sync",
            errors_only,
            &CallOpts::level("debug")
        ),
        ["error"]
    );
    // The level is per request, never retained.
    assert!(diagnostic_levels(&mut mcp, "lean_sync", all.clone(), &CallOpts::default()).is_empty());
    // Progress is independent of the log level.
    let opts = CallOpts {
        progress_token: Some(json!("p")),
        log_level: None,
    };
    assert!(diagnostic_levels(&mut mcp, "lean_refresh", all, &opts).is_empty());
    assert!(!mcp.progress_of(&json!("p")).is_empty());
}

/// The notice of a call still running on `Fix/Sleepy.lean` after the delay.
const SLEEPY_NOTICE: StatusNotice = StatusNotice {
    state: "running",
    path: "Fix/Sleepy.lean",
    says: &["Fix/Sleepy.lean"],
};

#[test]
fn one_status_notice_for_slow_calls_without_a_token_subject_to_the_level() {
    let tw = TempWorkspace::copy("basic");
    let root = tw.root_str();
    tw.write("Fix/Sleepy.lean", &sleepy(800));
    let args = doc(&root, "Fix/Sleepy.lean");
    let delay = [("LEAN_BEAM_STATUS_DELAY_MS", "100")];

    let mut legacy = spawn_with(Era::Legacy, &delay);
    let (id, _, notices) =
        legacy.call_with_status_notices("lean_sync", args.clone(), &CallOpts::default());
    assert_eq!(notices.len(), 1, "{notices:?}");
    SLEEPY_NOTICE.assert(&notices[0], &id, "lean_sync");
    let (_, _, notices) =
        legacy.call_with_status_notices("lean_refresh", args.clone(), &CallOpts::token("t"));
    assert!(
        notices.is_empty(),
        "a token replaces the notice: {notices:?}"
    );
    assert!(!legacy.progress_of(&json!("t")).is_empty());
    legacy.set_level("warning");
    let (_, _, notices) =
        legacy.call_with_status_notices("lean_refresh", args.clone(), &CallOpts::default());
    assert!(
        notices.is_empty(),
        "level warning hides the notice: {notices:?}"
    );
    legacy.set_level("notice");
    let (id, _, notices) =
        legacy.call_with_status_notices("lean_refresh", args.clone(), &CallOpts::default());
    assert_eq!(notices.len(), 1);
    SLEEPY_NOTICE.assert(&notices[0], &id, "lean_refresh");

    let mut modern = spawn_with(Era::Modern, &delay);
    let (_, _, notices) =
        modern.call_with_status_notices("lean_sync", args.clone(), &CallOpts::default());
    assert!(
        notices.is_empty(),
        "no per-request level, no logs: {notices:?}"
    );
    for (level, shown) in [("notice", true), ("warning", false), ("info", true)] {
        let (id, _, notices) =
            modern.call_with_status_notices("lean_refresh", args.clone(), &CallOpts::level(level));
        assert_eq!(
            notices.len(),
            usize::from(shown),
            "level {level}: {notices:?}"
        );
        if shown {
            SLEEPY_NOTICE.assert(&notices[0], &id, "lean_refresh");
        }
    }
}

// ---------------------------------------------------------------------------
// The `lake serve` spawn path.

fn write_script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path.to_string_lossy().into_owned()
}

/// A stand-in `lake` that serves like `lake serve -- ARGS`: the test
/// toolchain's `lean --server ARGS` with Lake's search path of its working
/// directory (the workspace root).
fn stand_in_lake(dir: &Path) -> String {
    let lean = lean().lean.to_string_lossy().into_owned();
    write_script(
        dir,
        "lake",
        &format!(
            "#!/bin/sh\n\
             if [ \"$1\" != serve ]; then echo \"stand-in lake: only serve is supported\" >&2; exit 2; fi\n\
             shift\n\
             if [ \"$1\" = -- ]; then shift; fi\n\
             LEAN_PATH=\"$PWD/.lake/build/lib/lean\"; LEAN_SRC_PATH=\"$PWD\"; export LEAN_PATH LEAN_SRC_PATH\n\
             exec '{lean}' --server \"$@\"\n"
        ),
    )
}

#[test]
fn lake_serve_spawn_path_with_a_stand_in_lake() {
    let bin = TempDir::new("lake-bin");
    let lake = stand_in_lake(bin.path());
    let basic = fixture("basic");
    let mut mcp = Mcp::start(
        Era::Modern,
        Spawn::default().env("LEAN_BEAM_LAKE", lake.clone()),
    );
    let result = mcp.call("lean_sync", doc(&basic, "Fix/Errors.lean"));
    assert_eq!((count(&result, "error"), count(&result, "warning")), (3, 1));
    // Definitions need LEAN_SRC_PATH, which the stand-in set like Lake does.
    let definition = mcp.call(
        "lean_definition",
        json!({"workspace": ws(&basic), "path": "Fix/Errors.lean", "version": 1, "line": 8, "character": 20}),
    );
    let target = &definition["locations"][0];
    assert_eq!(target["targetPath"], "Fix/Basic.lean", "{definition}");
    assert_eq!(
        target["targetSelectionRange"]["start"],
        json!({"line": 226, "character": 4})
    );
    let stats = mcp.workspace_stats(&basic).expect("runtime");
    let command = stats["serverCommand"].as_str().unwrap();
    assert!(
        command.starts_with(&format!("{lake} serve --")),
        "{command}"
    );
    let servers = bare_lean_servers_of(mcp.pid());
    assert_eq!(
        servers.len(),
        1,
        "the stand-in execs lean --server: {servers:?}"
    );
    assert_eq!(stats["pid"].as_u64(), Some(servers[0].pid as u64));
}

#[test]
fn a_lake_that_cannot_start_is_a_runtime_setup_error_and_the_next_request_retries() {
    let bin = TempDir::new("broken-lake");
    let good = stand_in_lake(bin.path());
    let marker = bin.path().join("fixed");
    let broken = write_script(
        bin.path(),
        "broken-lake",
        &format!(
            "#!/bin/sh\n\
             if [ -f '{marker}' ]; then exec '{good}' \"$@\"; fi\n\
             echo 'error: toolchain leanprover/lean4:v0.0.0 is not installed' >&2\n\
             exit 1\n",
            marker = marker.display()
        ),
    );
    let basic = fixture("basic");
    let mut mcp = Mcp::start(
        Era::Legacy,
        Spawn::default().env("LEAN_BEAM_LAKE", broken.clone()),
    );
    for _ in 0..2 {
        let error = mcp.call_err("lean_sync", doc(&basic, "Fix/Goals.lean"));
        assert_eq!(error["code"], "runtimeSetup", "{error}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(&broken), "names the command: {message}");
        assert!(
            message.contains("exit status 1"),
            "names the status: {message}"
        );
        assert!(
            message.contains("is not installed"),
            "carries the stderr tail: {message}"
        );
        assert!(
            error["data"]["command"]
                .as_str()
                .unwrap()
                .starts_with(&broken)
        );
        assert_eq!(error["data"]["status"], 1);
        assert!(
            error["data"]["stderr_tail"]
                .as_str()
                .unwrap()
                .contains("v0.0.0 is not installed")
        );
    }
    std::fs::write(&marker, "").unwrap();
    let result = mcp.call("lean_sync", doc(&basic, "Fix/Goals.lean"));
    assert_eq!(count(&result, "total"), 0);
    let stats = mcp.workspace_stats(&basic).expect("runtime");
    assert_eq!(
        stats["starts"], 1,
        "failed starts are not counted as starts: {stats}"
    );
    assert_eq!(stats["alive"], true);
}

// ---------------------------------------------------------------------------
// The official Python SDK, end to end.

#[test]
fn official_python_client_calls_lean_sync_with_a_progress_token() {
    let l = lean();
    let stdout = l.run_python_client("lean_sync_progress.py");
    assert!(
        stdout.contains("OK lean_sync mode=auto protocol=2026-07-28"),
        "{stdout}"
    );
    assert!(
        stdout.contains("OK lean_sync mode=legacy protocol=2025-11-25"),
        "{stdout}"
    );
}
