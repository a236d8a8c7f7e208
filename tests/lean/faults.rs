//! Fault injection against the real Lean server: the server killed at random
//! points during sync, probes and save; hung (SIGSTOP) so requests time out; a
//! server that exits during start-up; a crashed worker; a stderr flood; a
//! compiler whose failure output is large and not ASCII. A scripted fake peer
//! (tests/fixtures/fake-lsp/fake_lsp.py) is used only for garbled frames and
//! malformed responses.
//!
//! For each fault: every admitted request gets exactly one terminal answer (a
//! result or a structured error), the next request recovers, no process of the
//! tree outlives it, and `beam_stats` counts the restarts.
//!
//! Random points come from a seeded generator; the seed is printed and can be
//! fixed with `FAULTS_SEED=<n>`.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::lean::{
    TempDir, TempWorkspace, eventually, lean, lean_processes_of, processes_mentioning,
};
use common::mcp::{CallOpts, Era, Mcp, Spawn};
use common::procfs;
use serde_json::{Value, json};

/// A small seeded generator (xorshift64*), so that a failing run can be replayed.
struct Rng(u64);

impl Rng {
    fn from_env(test: &str) -> Rng {
        let seed = std::env::var("FAULTS_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            });
        eprintln!("{test}: FAULTS_SEED={seed}");
        Rng(seed | 1)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// A file whose elaboration takes `ms` (the fixtures' `sleep` tactic) and has
/// no diagnostics.
fn waits(ms: u64) -> String {
    format!(
        "prelude\nimport Fix.Basic\n\nnamespace Fix\n\ntheorem waits : Eq one one := by\n  sleep {ms}\n  exact Eq.refl one\n\nend Fix\n"
    )
}

/// A server on a temp copy of `basic`, and what the faults need to know.
struct Rig {
    m: Mcp,
    ws: TempWorkspace,
    root: String,
    /// Ids of every call started, to check each got exactly one answer.
    started: Vec<Value>,
}

impl Rig {
    fn new(extra: &[(&str, &str)]) -> Rig {
        let ws = TempWorkspace::copy("basic");
        ws.write("Fix/Wait.lean", &waits(800));
        let root = ws.root_str();
        Rig {
            m: Mcp::on_lean(Era::Modern, extra),
            ws,
            root,
            started: Vec::new(),
        }
    }

    fn doc(&self, path: &str) -> Value {
        json!({"workspace": {"root": self.root}, "path": path})
    }

    fn start(&mut self, tool: &str, arguments: Value) -> Value {
        let id = self.m.start_call(tool, arguments, &CallOpts::default());
        self.started.push(id.clone());
        id
    }

    /// The answer to `id`: a tool result (success or structured tool error),
    /// never a JSON-RPC error.
    fn answer(&mut self, id: &Value) -> Value {
        let response = self.m.response(id);
        assert!(
            response.get("error").is_none(),
            "JSON-RPC error instead of a tool answer: {response}"
        );
        let result = &response["result"];
        assert!(result["isError"].is_boolean(), "{response}");
        if result["isError"] == true {
            let error = &common::tool_error(result);
            assert!(
                error["code"].is_string() && error["message"].is_string(),
                "unstructured error: {response}"
            );
        }
        result.clone()
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let id = self.start(tool, arguments.clone());
        let result = self.answer(&id);
        assert_eq!(
            result["isError"],
            false,
            "{tool} {arguments}: {result}\nstderr:\n{}",
            self.m.stderr()
        );
        result["structuredContent"].clone()
    }

    fn runtime(&mut self) -> Value {
        let root = self.root.clone();
        self.m.workspace_stats(&root).unwrap_or(Value::Null)
    }

    /// Pid of the live Lean server of the workspace.
    fn server_pid(&mut self) -> u32 {
        let rt = self.runtime();
        assert_eq!(rt["alive"], true, "no live Lean server: {rt}");
        rt["pid"].as_u64().expect("pid") as u32
    }

    fn restarts(&mut self) -> u64 {
        self.runtime()["restarts"].as_u64().unwrap_or(0)
    }

    /// Pids of every process of the test toolchain working for this root.
    fn tree(&self) -> Vec<u32> {
        lean_processes_of(self.ws.root())
            .iter()
            .map(|p| p.pid)
            .collect()
    }

    /// Every started call was answered exactly once (and nothing else arrived
    /// for those ids).
    fn assert_each_answered_once(&mut self) {
        self.m.sync_point();
        let mut counts: HashMap<String, usize> = HashMap::new();
        for message in &self.m.received {
            if message.get("method").is_none() {
                *counts.entry(message["id"].to_string()).or_default() += 1;
            }
        }
        for id in &self.started {
            assert_eq!(
                counts.get(&id.to_string()).copied(),
                Some(1),
                "answers to {id}"
            );
        }
    }
}

/// Processes that were there must be gone (reaped or at least dead) soon.
fn assert_gone(pids: &[u32], what: &str) {
    assert!(
        eventually(Duration::from_secs(120), || pids
            .iter()
            .all(|&p| !procfs::is_alive(p))),
        "{what}: still alive: {:?}",
        pids.iter()
            .filter(|&&p| procfs::is_alive(p))
            .map(|&p| (p, procfs::cmdline(p)))
            .collect::<Vec<_>>()
    );
}

/// The Lean server is SIGKILLed at a random point while a sync, a probe or a
/// save runs. Each call answers once (its result if it won the race, else a
/// structured error), the next call restarts Lean and succeeds, the old tree
/// is gone, and `restarts` counts every kill.
#[test]
fn lean_killed_at_random_points_during_sync_probes_and_save() {
    let mut rng = Rng::from_env("kill");
    let mut rig = Rig::new(&[]);
    let wait = rig.doc("Fix/Wait.lean");
    let goals = rig.doc("Fix/Goals.lean");
    rig.call("lean_sync", wait.clone());
    let mut kills = 0;
    let mut outcomes: Vec<String> = Vec::new();
    for round in 0..8u64 {
        let phase = round % 4;
        // A fresh version, so that syncs (and the sync inside a save) elaborate.
        if phase != 1 {
            rig.ws.write("Fix/Wait.lean", &waits(600 + round * 10));
        }
        let version = rig.call("lean_sync", goals.clone())["version"]
            .as_u64()
            .unwrap();
        let (tool, arguments) = match phase {
            0 => ("lean_sync", wait.clone()),
            1 => (
                "lean_run_at",
                json!({"workspace": {"root": rig.root}, "path": "Fix/Goals.lean", "version": version,
                       "line": 15, "character": 4, "text": "sleep 400"}),
            ),
            _ => ("lean_save", wait.clone()),
        };
        let pid = rig.server_pid();
        let tree = rig.tree();
        let id = rig.start(tool, arguments);
        let victim = if phase == 3 {
            // The compiler of the save, once it runs.
            let mut compiler = None;
            eventually(Duration::from_secs(120), || {
                compiler = processes_mentioning(" -o ")
                    .into_iter()
                    .find(|p| p.cwd.as_deref() == Some(rig.ws.root()))
                    .map(|p| p.pid);
                compiler.is_some()
            });
            compiler
        } else {
            // The random delays are the subject, not a wait: the kill lands
            // at a seeded random point of the call (FAULTS_SEED replays it).
            std::thread::sleep(Duration::from_millis(rng.below(900)));
            Some(pid)
        };
        if let Some(victim) = victim {
            std::thread::sleep(Duration::from_millis(rng.below(300)));
            procfs::signal(victim, "KILL");
            if victim == pid {
                kills += 1;
            }
        }
        let result = rig.answer(&id);
        outcomes.push(format!(
            "{tool}{}: {}",
            if phase == 3 { " (compiler killed)" } else { "" },
            if result["isError"] == true {
                common::tool_error(&result)["code"]
                    .as_str()
                    .unwrap()
                    .to_string()
            } else {
                "ok".into()
            }
        ));
        if victim == Some(pid) {
            assert_gone(&tree, "the killed Lean tree");
        }
        // The next request recovers.
        let synced = rig.call("lean_sync", wait.clone());
        assert_eq!(synced["diagnostics"]["counts"]["error"], 0, "{synced}");
        assert_eq!(rig.restarts(), kills, "restarts after {kills} kills");
    }
    eprintln!("outcomes: {outcomes:?}");
    // Probes and saves work on the restarted server.
    let version = rig.call("lean_sync", goals.clone())["version"]
        .as_u64()
        .unwrap();
    let probe = rig.call(
        "lean_run_at",
        json!({"workspace": {"root": rig.root}, "path": "Fix/Goals.lean", "version": version,
               "line": 15, "character": 4, "text": "skip"}),
    );
    assert_eq!(probe["success"], true, "{probe}");
    rig.call("lean_save", goals);
    rig.assert_each_answered_once();
    let tree = rig.tree();
    rig.call(
        "lean_drop_workspace",
        json!({"workspace": {"root": rig.root}}),
    );
    assert_gone(&tree, "the dropped runtime's tree");
}

/// SIGSTOP'd, Lean answers nothing: the barrier and the requests time out with
/// explicit errors (never "no errors"), SIGCONT lets the next request through,
/// and a stopped tree is still killed whole by `lean_drop_workspace`.
#[test]
fn a_hung_lean_server_times_out_explicitly_and_recovers() {
    let mut rig = Rig::new(&[
        ("LEAN_BEAM_SYNC_TIMEOUT_SECS", "4"),
        ("LEAN_BEAM_REQUEST_TIMEOUT_SECS", "3"),
    ]);
    let goals = rig.doc("Fix/Goals.lean");
    let version = rig.call("lean_sync", goals.clone())["version"]
        .as_u64()
        .unwrap();
    let pid = rig.server_pid();
    let tree = rig.tree();
    for &p in &tree {
        procfs::signal(p, "STOP");
    }
    // An edit that must be elaborated: the barrier cannot complete.
    rig.ws.write(
        "Fix/Goals.lean",
        &format!("{}\n-- edited\n", rig.ws.read("Fix/Goals.lean")),
    );
    let id = rig.start("lean_sync", goals.clone());
    let result = rig.answer(&id);
    assert_eq!(
        result["isError"], true,
        "a hung server produced a result: {result}"
    );
    let error = &common::tool_error(&result);
    assert_eq!(error["code"], "syncBarrierIncomplete", "{error}");
    assert_eq!(error["data"]["partial"], true, "{error}");
    // A request to the hung server times out explicitly too.
    let id = rig.start(
        "lean_hover",
        json!({"workspace": {"root": rig.root}, "path": "Fix/Goals.lean", "version": version + 1, "line": 11, "character": 9}),
    );
    let result = rig.answer(&id);
    assert_eq!(result["isError"], true, "{result}");
    assert!(
        common::tool_error(&result)["message"]
            .as_str()
            .unwrap()
            .contains("did not"),
        "{result}"
    );
    for &p in &tree {
        procfs::signal(p, "CONT");
    }
    let synced = rig.call("lean_sync", goals.clone());
    assert_eq!(synced["diagnostics"]["counts"]["error"], 0, "{synced}");
    assert_eq!(rig.server_pid(), pid, "a hang alone must not restart Lean");
    assert_eq!(rig.restarts(), 0);

    // Stopped again, the tree is killed whole by a drop, stopped or not.
    let tree = rig.tree();
    for &p in &tree {
        procfs::signal(p, "STOP");
    }
    let dropped = rig.call(
        "lean_drop_workspace",
        json!({"workspace": {"root": rig.root}}),
    );
    assert_eq!(dropped["dropped"], true);
    assert_gone(&tree, "a stopped tree after lean_drop_workspace");
    let synced = rig.call("lean_sync", goals);
    assert_eq!(synced["diagnostics"]["counts"]["error"], 0, "{synced}");
    rig.assert_each_answered_once();
}

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    let status = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success());
    path
}

/// A Lean that prints to stderr and exits 3 before answering `initialize`:
/// each call that needs it fails with `runtimeSetup` naming the status and the
/// stderr, nothing is left running, and the next call tries again.
#[test]
fn a_server_that_exits_during_startup() {
    let dir = TempDir::new("exit3");
    let marker = dir.path().join("starts");
    let fake = script(
        dir.path(),
        "lean",
        &format!(
            "#!/bin/sh\necho start >> '{}'\necho 'lean: toolchain is broken (simulated)' >&2\nexit 3\n",
            marker.display()
        ),
    );
    let ws = TempWorkspace::copy("basic");
    let mut m = Mcp::start(
        Era::Modern,
        Spawn::default().env("LEAN_BEAM_LEAN", fake.to_string_lossy()),
    );
    let args = json!({"workspace": {"root": ws.root_str()}, "path": "Fix/Goals.lean"});
    for attempt in 1..=2 {
        let error = m.call_err("lean_sync", args.clone());
        assert_eq!(error["code"], "runtimeSetup", "{error}");
        assert_eq!(error["data"]["status"], 3, "{error}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("exit status 3") && message.contains("toolchain is broken"),
            "{message}"
        );
        let starts = std::fs::read_to_string(&marker).unwrap().lines().count();
        assert_eq!(starts, attempt, "every call tries again");
    }
    let fake_s = fake.to_string_lossy().into_owned();
    assert!(
        processes_mentioning(&fake_s).is_empty(),
        "a start-up script outlived its failure"
    );
    // Other tools and the stream are unaffected.
    let stats = m.stats();
    let rt = &stats["workspaces"][ws.root_str()];
    assert_eq!(rt["alive"], false, "{stats}");
    assert_eq!(
        rt["failedStarts"], 2,
        "beam_stats counts the failed starts: {stats}"
    );
    assert_eq!(rt["starts"], 0, "{stats}");
    let error = m.call_err("lean_hover", json!({"workspace": {"root": ws.root_str()}, "path": "Fix/Goals.lean", "version": 1, "line": 0, "character": 0}));
    assert!(error["code"].is_string(), "{error}");
}

/// A `lean --worker` killed while a sync and while a probe waits on it: the
/// call answers once with a structured error (or its result if it won), the
/// server itself stays up (no restart), and the next sync reopens the file.
#[test]
fn a_worker_crash_fails_its_call_and_the_file_reopens() {
    let mut rng = Rng::from_env("worker");
    let mut rig = Rig::new(&[]);
    let wait = rig.doc("Fix/Wait.lean");
    rig.call("lean_sync", wait.clone());
    let server = rig.server_pid();
    for round in 0..3 {
        rig.ws.write("Fix/Wait.lean", &waits(1500 + round));
        let id = rig.start("lean_sync", wait.clone());
        // Find the worker of Wait.lean once it runs.
        let mut worker = None;
        assert!(
            eventually(Duration::from_secs(120), || {
                worker = rig.tree().into_iter().find(|&p| {
                    p != server
                        && procfs::cmdline(p).contains("--worker")
                        && procfs::cmdline(p).contains("Wait")
                });
                worker.is_some()
            }),
            "no worker for Fix/Wait.lean in {:?}",
            rig.tree()
                .iter()
                .map(|&p| procfs::cmdline(p))
                .collect::<Vec<_>>()
        );
        // A seeded random point of the worker's run (the subject, not a wait).
        std::thread::sleep(Duration::from_millis(rng.below(600)));
        procfs::signal(worker.unwrap(), "KILL");
        let result = rig.answer(&id);
        eprintln!("round {round}: {}", result["content"][0]["text"]);
        let synced = rig.call("lean_sync", wait.clone());
        assert_eq!(synced["diagnostics"]["counts"]["error"], 0, "{synced}");
        // Recovered for good: the crash's fatal report, which Lean writes
        // after the failed call's answer and which can reach the document
        // after the reopen, does not leave the file marked for yet another
        // reopen (and its new worker for an early exit).
        let stats = rig.m.document_stats(&rig.ws.root_str(), "Fix/Wait.lean");
        assert_eq!(stats["settled"], true, "round {round}: {stats}");
    }
    assert_eq!(
        rig.server_pid(),
        server,
        "a worker crash must not restart the server"
    );
    assert_eq!(rig.restarts(), 0);
    rig.assert_each_answered_once();
}

/// A Lean whose process writes megabytes to stderr while it works: the server
/// keeps only a bounded tail, stays within its memory, answers normally, and
/// the flooding process goes with the tree.
#[test]
fn a_stderr_flood_from_the_child_is_bounded() {
    let dir = TempDir::new("flood");
    let lean_bin = lean().lean.to_string_lossy().into_owned();
    let wrapper = script(
        dir.path(),
        "lean-flood",
        &format!(
            "#!/bin/sh\n# 40 MB of stderr from a helper in the server's tree, while Lean runs.\n( i=0; while [ $i -lt 400 ]; do head -c 100000 /dev/zero | tr '\\0' 'E' >&2; echo >&2; i=$((i+1)); done; sleep 60 ) &\nexec '{lean_bin}' \"$@\"\n"
        ),
    );
    let ws = TempWorkspace::copy("basic");
    let mut m = Mcp::start(
        Era::Modern,
        Spawn::default().env("LEAN_BEAM_LEAN", wrapper.to_string_lossy()),
    );
    let pid = m.stats()["pid"].as_u64().unwrap() as u32;
    let before = procfs::hwm(pid);
    let args = json!({"workspace": {"root": ws.root_str()}, "path": "Fix/Goals.lean"});
    let synced = m.call("lean_sync", args.clone());
    assert_eq!(synced["diagnostics"]["counts"]["error"], 0, "{synced}");
    // Wait until the flood is over, then measure.
    let helper_gone_or_sleeping = || processes_mentioning("head -c 100000").is_empty();
    assert!(
        eventually(Duration::from_secs(60), helper_gone_or_sleeping),
        "the flood did not finish"
    );
    let synced = m.call("lean_refresh", args.clone());
    assert_eq!(synced["diagnostics"]["counts"]["error"], 0, "{synced}");
    let after = procfs::hwm(pid);
    eprintln!(
        "VmHWM {} KiB → {} KiB across a 40 MB stderr flood",
        before / 1024,
        after / 1024
    );
    assert!(
        after.saturating_sub(before) < 64 * 1024 * 1024,
        "memory grew with the flood"
    );
    assert!(
        m.stderr().len() < 1024 * 1024,
        "the flood was copied to our stderr"
    );
    // The flooding helper belongs to the tree and goes with it.
    let root = ws.root().to_path_buf();
    m.call(
        "lean_drop_workspace",
        json!({"workspace": {"root": ws.root_str()}}),
    );
    assert!(
        eventually(Duration::from_secs(120), || processes_mentioning(
            &wrapper.to_string_lossy()
        )
        .is_empty()
            && lean_processes_of(&root).is_empty()),
        "processes of the flooding tree survived the drop"
    );
}

/// The compiler fails after the server accepted the file, printing more than
/// the kept tail of non-ASCII output: `lean_save` answers with a structured
/// error (cutting the tail inside a character once made it panic, and the call
/// was never answered).
#[test]
fn a_failing_compile_with_a_large_unicode_output_is_a_structured_error() {
    let dir = TempDir::new("badcc");
    let lean_bin = lean().lean.to_string_lossy().into_owned();
    let wrapper = script(
        dir.path(),
        "lean-badcc",
        &format!(
            "#!/bin/sh\ncase \" $* \" in\n  *' -o '*) i=0; while [ $i -lt 3001 ]; do printf '⊢' >&2; printf '→'; i=$((i+1)); done; exit 1 ;;\nesac\nexec '{lean_bin}' \"$@\"\n"
        ),
    );
    let ws = TempWorkspace::copy("basic");
    let mut m = Mcp::start(
        Era::Modern,
        Spawn::default().env("LEAN_BEAM_LEAN", wrapper.to_string_lossy()),
    );
    let args = json!({"workspace": {"root": ws.root_str()}, "path": "Fix/Goals.lean"});
    let id = m.start_call("lean_save", args.clone(), &CallOpts::default());
    let response = m.response_within(&id, Duration::from_secs(60));
    let response =
        response.unwrap_or_else(|| panic!("lean_save was never answered\nstderr:\n{}", m.stderr()));
    assert_eq!(response["result"]["isError"], true, "{response}");
    let error = &common::tool_error(&response["result"]);
    assert!(
        error["message"].as_str().unwrap().contains("failed"),
        "{error}"
    );
    assert!(
        error["data"]["stderr"].as_str().unwrap().ends_with('⊢'),
        "{error}"
    );
    // The server goes on.
    let synced = m.call("lean_sync", args);
    assert_eq!(synced["diagnostics"]["counts"]["error"], 0);
}

fn fake_lsp() -> String {
    lean()
        .repo
        .join("tests/fixtures/fake-lsp/fake_lsp.py")
        .to_string_lossy()
        .into_owned()
}

/// Garbled frames from the peer: the connection is declared broken, the call
/// answers once with a structured error, the peer is killed, and the next
/// call starts a fresh one (counted as a restart).
#[test]
fn garbled_frames_break_the_connection_and_the_next_call_restarts() {
    for mode in [
        "garbled",
        "bad-length",
        "huge-length",
        "bad-json",
        "eof-mid-frame",
    ] {
        let state = TempDir::new("fake-state");
        let ws = TempWorkspace::copy("basic");
        let mut rig_m = Mcp::start(
            Era::Modern,
            Spawn::default()
                .env("LEAN_BEAM_LEAN", fake_lsp())
                .env("FAKE_LSP_MODE", mode)
                .env("FAKE_LSP_STATE", state.path().to_string_lossy())
                // Ten-minute budgets: only noticing the broken connection
                // can answer the call with `workerExited` (a budget would say
                // `timeout`, past the harness's own safety limit).
                .env("LEAN_BEAM_REQUEST_TIMEOUT_SECS", "600")
                .env("LEAN_BEAM_SYNC_TIMEOUT_SECS", "600"),
        );
        let args = json!({"workspace": {"root": ws.root_str()}, "path": "Fix/Goals.lean"});
        let error = rig_m.call_err("lean_sync", args.clone());
        assert_eq!(
            error["code"], "workerExited",
            "{mode}: the broken connection was not noticed: {error}"
        );
        let synced = rig_m.call("lean_sync", args.clone());
        assert_eq!(synced["version"], 1, "{mode}: {synced}");
        let rt = rig_m.workspace_stats(&ws.root_str()).unwrap();
        assert_eq!(rt["restarts"], 1, "{mode}: {rt}");
        let starts = std::fs::read_to_string(state.path().join("starts")).unwrap();
        assert_eq!(starts.trim(), "2", "{mode}");
        rig_m.call(
            "lean_drop_workspace",
            json!({"workspace": {"root": ws.root_str()}}),
        );
        assert!(
            eventually(Duration::from_secs(120), || {
                processes_mentioning(&fake_lsp()).iter().all(|p| {
                    !p.environ
                        .contains(&format!("FAKE_LSP_STATE={}", state.path().display()))
                })
            }),
            "{mode}: a fake peer outlived its runtime"
        );
    }
}

/// Malformed answers that keep the framing: an answer with neither result nor
/// error is a structured error for its call; answers to ids never asked are
/// dropped; junk notifications and server requests are survived. No call hangs
/// past its time limit, and the peer is not restarted for any of it.
#[test]
fn malformed_responses_are_structured_errors_not_hangs() {
    for (mode, expect_ok) in [("no-result", false), ("wrong-ids", true), ("junk", true)] {
        let state = TempDir::new("fake-state");
        let ws = TempWorkspace::copy("basic");
        let mut m = Mcp::start(
            Era::Modern,
            Spawn::default()
                .env("LEAN_BEAM_LEAN", fake_lsp())
                .env("FAKE_LSP_MODE", mode)
                .env("FAKE_LSP_STATE", state.path().to_string_lossy())
                .env("LEAN_BEAM_REQUEST_TIMEOUT_SECS", "3")
                .env("LEAN_BEAM_SYNC_TIMEOUT_SECS", "3"),
        );
        let args = json!({"workspace": {"root": ws.root_str()}, "path": "Fix/Goals.lean"});
        let id = m.start_call("lean_sync", args.clone(), &CallOpts::default());
        let result = m.tool_result(&id);
        assert_eq!(result["isError"], !expect_ok, "{mode}: {result}");
        if !expect_ok {
            let error = &common::tool_error(&result);
            assert!(
                error["code"].is_string() && error["message"].is_string(),
                "{mode}: {error}"
            );
            // The connection survives a malformed answer: nothing says restart.
            assert_eq!(error["code"], "internalError", "{mode}: {error}");
        }
        let synced = m.call("lean_sync", args.clone());
        assert_eq!(
            synced["diagnostics"]["counts"]["total"], 0,
            "{mode}: {synced}"
        );
        let rt = m.workspace_stats(&ws.root_str()).unwrap();
        assert_eq!(rt["restarts"], 0, "{mode}: {rt}");
        assert!(
            m.received
                .iter()
                .filter(|r| r.get("id") == Some(&id))
                .count()
                == 1,
            "{mode}: answered more than once"
        );
    }
}

/// Every tool panics.
struct Panicking;

macro_rules! panicking_operations {
    ($($method:ident: $args:ty => $result:ty,)*) => {
        impl lean_beam_mcp::surface::Operations for Panicking {
            $(async fn $method(
                &self,
                _ctx: &lean_beam_mcp::context::CallContext,
                _args: $args,
            ) -> Result<$result, lean_beam_mcp::surface::ToolError> {
                tokio::task::yield_now().await;
                panic!("injected failure in {}", stringify!($method))
            })*
        }
    };
}
lean_beam_mcp::for_each_tool!(panicking_operations);

/// A tool that panics still answers its request, exactly once, with a
/// structured internal error; its id is retired and its slot released.
#[tokio::test]
async fn a_panicking_tool_still_answers_its_request_once() {
    use lean_beam_mcp::mcp::config::Config;
    use lean_beam_mcp::mcp::dispatcher::{Dispatcher, Reply};
    use lean_beam_mcp::mcp::session::Session;
    use std::sync::Arc;

    let stats = Arc::new(lean_beam_mcp::stats::Stats::default());
    let dispatcher = Dispatcher::new(Arc::new(Panicking), stats, Config::default());
    let session = Arc::new(Session::default());
    let (out, mut rx) = tokio::sync::mpsc::channel(16);
    for id in 1..=3 {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "beam_stats",
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}});
        let reply = dispatcher
            .handle_line(&session, line.to_string().as_bytes(), &out)
            .await;
        assert!(matches!(reply, Reply::None));
        let answer: Value = serde_json::from_str(&rx.recv().await.expect("an answer")).unwrap();
        assert_eq!(answer["id"], id);
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        let error = &common::tool_error(&answer["result"]);
        assert_eq!(error["code"], "internalError");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("injected failure in beam_stats"),
            "{error}"
        );
    }
    dispatcher.drain().await;
    assert_eq!(session.active_count(), 0);
    assert!(rx.try_recv().is_err(), "a second answer");
}

/// The MCP server itself is SIGKILLed while a save compiles: the compiler,
/// like the Lean server, dies with it (parent-death signal) instead of running
/// on as an orphan.
#[test]
fn the_compiler_dies_with_a_killed_mcp_server() {
    let ws = TempWorkspace::copy("basic");
    ws.write("Fix/Wait.lean", &waits(4000));
    let mut m = Mcp::start(Era::Modern, Spawn::default().envs(lean().server_env()));
    let args = json!({"workspace": {"root": ws.root_str()}, "path": "Fix/Wait.lean"});
    m.start_call("lean_save", args, &CallOpts::default());
    let mut compiler = None;
    assert!(
        eventually(Duration::from_secs(60), || {
            compiler = processes_mentioning(" -o ")
                .into_iter()
                .find(|p| p.cwd.as_deref() == Some(ws.root()))
                .map(|p| p.pid);
            compiler.is_some()
        }),
        "the save never started its compiler"
    );
    let compiler = compiler.unwrap();
    let cmdline = procfs::cmdline(compiler);
    // The module it writes once its 4 s of elaboration are over (the path is
    // relative to its working directory, the root, if not absolute).
    let olean = cmdline
        .split_whitespace()
        .skip_while(|&a| a != "-o")
        .nth(1)
        .map(|o| ws.root().join(o))
        .unwrap_or_else(|| panic!("no -o in {cmdline}"));
    procfs::signal(m.pid(), "KILL");
    // Killed with the server, it ends without having written it; run on as an
    // orphan, it would have finished the file and written it first.
    assert!(
        eventually(Duration::from_secs(120), || !procfs::is_alive(compiler)),
        "the compiler ({cmdline}) outlived the killed server"
    );
    assert!(
        olean.parent().is_some_and(Path::is_dir),
        "the scratch directory of {olean:?} is gone"
    );
    assert!(
        !olean.exists(),
        "the compiler ({cmdline}) ran to its end after the server was killed"
    );
    assert!(
        eventually(Duration::from_secs(120), || lean_processes_of(ws.root())
            .is_empty()),
        "Lean processes outlived the killed server"
    );
}
