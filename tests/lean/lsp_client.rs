//! `lean_beam_mcp::lsp::LspClient` against the real Lean 4.35.0 server
//! (`scripts/install-test-lean.sh`, or the binary named by `LEAN_BEAM_TEST_LEAN`)
//! on `tests/fixtures/basic`; expectations from `tests/fixtures/EXPECTED.md`.
//!
//! Only the garbled-frame test uses a scripted peer (`sh` + `printf`): the real
//! server cannot be made to send a broken frame. Every test body runs under a
//! time guard so a hang fails the test instead of stalling the suite.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use lean_beam_mcp::lsp::protocol::{
    DocumentPositionParams, GET_INTERACTIVE_GOALS, PlainGoal, PublishedDiagnostics, RpcCall,
    RpcCallParams, RpcConnect, RpcConnectParams, RpcKeepAlive, RpcKeepAliveParams, RpcRelease,
    RpcReleaseParams, WaitForDiagnostics, WaitForDiagnosticsParams, collect_rpc_refs,
    flatten_tagged_text,
};
use lean_beam_mcp::lsp::uri::{path_to_uri, uri_to_path};
use lean_beam_mcp::lsp::{
    ExitInfo, LeanErrorCode, LspClient, LspError, ServerCommand, ServerEvent,
};
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

// Safety limits, not judgements of speed: each only stops a hang, minutes
// above any stall a loaded machine produces (issue 24, deliverable 8).
const STARTUP: Duration = Duration::from_secs(180);
const GUARD: Duration = Duration::from_secs(600);
/// How long a process or event may take to appear or vanish before the test
/// calls it a hang.
const HANG: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------- toolchain --

struct Toolchain {
    lean: PathBuf,
    basic: PathBuf,
}

/// The test toolchain, installed and the `basic` fixture built once per binary.
fn toolchain() -> &'static Toolchain {
    static T: OnceLock<Toolchain> = OnceLock::new();
    T.get_or_init(|| {
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let lean = match std::env::var_os("LEAN_BEAM_TEST_LEAN").filter(|p| p != "1") {
            Some(p) => PathBuf::from(p),
            // Installed (or said how to run these without) by the harness.
            None => crate::common::lean::lean().lean.clone(),
        };
        assert!(lean.is_file(), "no lean binary at {}", lean.display());
        let basic = repo.join("tests/fixtures/basic").canonicalize().unwrap();
        let status = Command::new(repo.join("scripts/build-fixtures.sh"))
            .arg(&basic)
            .env("LEAN", &lean)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("run scripts/build-fixtures.sh");
        assert!(status.success(), "build-fixtures.sh failed");
        Toolchain { lean, basic }
    })
}

/// `lean --server` in the `basic` workspace, as the broker starts it.
fn basic_command() -> ServerCommand {
    let t = toolchain();
    ServerCommand {
        program: t.lean.clone(),
        args: vec!["--server".into(), "-Dserver.reportDelayMs=0".into()],
        env: vec![
            (
                "LEAN_PATH".into(),
                t.basic.join(".lake/build/lib/lean").display().to_string(),
            ),
            ("LEAN_SRC_PATH".into(), t.basic.display().to_string()),
        ],
        env_remove: Vec::new(),
        cwd: t.basic.clone(),
    }
}

/// The same server behind `sh -c 'echo … >&2; exec lean …'`: still the real
/// server (same pid and group), with a known line at the start of its stderr.
fn basic_command_with_stderr_banner(banner: &str) -> ServerCommand {
    let mut cmd = basic_command();
    let mut args = vec![
        "-c".to_string(),
        format!("echo '{banner}' >&2; exec \"$0\" \"$@\""),
        cmd.program.display().to_string(),
    ];
    args.append(&mut cmd.args);
    cmd.program = PathBuf::from("sh");
    cmd.args = args;
    cmd
}

struct Server {
    client: Arc<LspClient>,
    events: UnboundedReceiver<ServerEvent>,
    init_ms: f64,
}

async fn start(cmd: &ServerCommand) -> Server {
    let (tx, events) = unbounded_channel();
    let t0 = Instant::now();
    let client = LspClient::start(cmd, tx, STARTUP)
        .await
        .unwrap_or_else(|e| panic!("start failed: {e}"));
    let init_ms = ms(t0);
    Server {
        client,
        events,
        init_ms,
    }
}

fn ms(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1000.0
}

async fn guarded<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(GUARD, f)
        .await
        .expect("test exceeded its time guard");
}

impl Server {
    fn uri(&self, rel: &str) -> String {
        path_to_uri(&toolchain().basic.join(rel))
    }

    /// didOpen a file of the workspace with its text from disk (version 1).
    fn open(&self, rel: &str) -> String {
        let text = std::fs::read_to_string(toolchain().basic.join(rel)).unwrap();
        self.open_text(rel, &text)
    }

    /// didOpen `rel` (need not exist on disk) with `text`, version 1.
    fn open_text(&self, rel: &str, text: &str) -> String {
        let uri = self.uri(rel);
        self.client
            .notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri, "languageId": "lean4", "version": 1, "text": text}}),
            )
            .unwrap();
        uri
    }

    async fn wait_for_diagnostics(&self, uri: &str, version: i32) -> Result<Value, LspError> {
        let params = WaitForDiagnosticsParams {
            uri: uri.into(),
            version,
        };
        self.client
            .request_typed::<WaitForDiagnostics>(params)
            .await
    }

    /// Every notification received so far (non-blocking).
    fn drain(&mut self) -> Vec<ServerEvent> {
        let mut out = Vec::new();
        while let Ok(e) = self.events.try_recv() {
            out.push(e);
        }
        out
    }

    async fn next_exit(&mut self) -> ExitInfo {
        loop {
            match self.events.recv().await {
                Some(ServerEvent::Exited(info)) => return info,
                Some(_) => {}
                None => panic!("event channel closed without Exited"),
            }
        }
    }
}

fn last_diagnostics<'a>(events: &'a [ServerEvent], uri: &str) -> Option<&'a PublishedDiagnostics> {
    events.iter().rev().find_map(|e| match e {
        ServerEvent::Diagnostics(published) if published.uri == uri => Some(published),
        _ => None,
    })
}

/// One goal of a `Lean.Widget.getInteractiveGoals` answer rendered as
/// `$/lean/plainGoal` renders it: `case <tag>` (if named), one line per
/// hypothesis bundle (`a b : T`, `x : T := v`), then `⊢ <target>`.
fn interactive_goal_to_string(goal: &Value) -> String {
    let mut out = String::new();
    if let Some(name) = goal.get("userName").and_then(Value::as_str) {
        if !name.is_empty() && name != "[anonymous]" {
            out.push_str(&format!("case {name}\n"));
        }
    }
    for hyp in goal["hyps"].as_array().into_iter().flatten() {
        let names: Vec<&str> = hyp["names"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|n| n.as_str().unwrap_or("?"))
            .collect();
        out.push_str(&format!(
            "{} : {}",
            names.join(" "),
            flatten_tagged_text(&hyp["type"])
        ));
        if let Some(val) = hyp.get("val") {
            out.push_str(&format!(" := {}", flatten_tagged_text(val)));
        }
        out.push('\n');
    }
    out.push_str(goal["goalPrefix"].as_str().unwrap_or("⊢ "));
    out.push_str(&flatten_tagged_text(&goal["type"]));
    out
}

fn interactive_goals_to_strings(result: &Value) -> Vec<String> {
    result["goals"]
        .as_array()
        .map(|goals| goals.iter().map(interactive_goal_to_string).collect())
        .unwrap_or_default()
}

/// `(ppid, pgrp)` of a process, from `/proc/<pid>/stat`.
fn stat_of(pid: u32) -> Option<(u32, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid pgrp ..."; comm may contain spaces and parens.
    let after = &stat[stat.rfind(')')? + 2..];
    let mut fields = after.split(' ').skip(1);
    Some((fields.next()?.parse().ok()?, fields.next()?.parse().ok()?))
}

/// Whether `pid` still runs: some thread of it is not a zombie. (A process
/// whose main thread exited shows `Z` while its other threads keep working.)
fn is_running(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|t| {
        std::fs::read_to_string(t.path().join("stat")).is_ok_and(|st| {
            st.rfind(')')
                .and_then(|i| st[i + 2..].chars().next())
                .is_some_and(|state| state != 'Z' && state != 'X')
        })
    })
}

/// The server's children (Lean's file workers), found independently of the
/// client: by parent pid in /proc.
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| stat_of(p).is_some_and(|(ppid, _)| ppid == pid) && is_running(p))
        .collect()
}

/// Live members of process group `pgid`.
fn group_members(pgid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| stat_of(p).is_some_and(|(_, pgrp)| pgrp == pgid) && is_running(p))
        .collect()
}

/// Poll (a guard, not an assertion) until none of `pids` runs; returns the
/// ones still running after `within`.
async fn all_gone(pids: &[u32], within: Duration) -> Vec<u32> {
    let t0 = Instant::now();
    loop {
        let live: Vec<u32> = pids.iter().copied().filter(|&p| is_running(p)).collect();
        if live.is_empty() || t0.elapsed() > within {
            return live;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// -------------------------------------------------------------------- tests --

/// Initialize, open `Fix/Errors.lean`, wait for version 1 and compare the
/// published diagnostics with EXPECTED.md; hover, plain goals and structured
/// goals (RPC) on `Fix/Goals.lean`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diagnostics_hover_and_goals_match_expected() {
    guarded(async {
        let mut s = start(&basic_command()).await;
        assert_eq!(s.client.server_info()["name"], "Lean 4 Server");
        assert!(
            s.client.initialize_result()["capabilities"]["hoverProvider"]
                .as_bool()
                .unwrap_or(false)
        );
        assert!(s.client.is_alive());

        let t0 = Instant::now();
        let errors = s.open("Fix/Errors.lean");
        assert_eq!(
            s.wait_for_diagnostics(&errors, 1).await.unwrap(),
            json!({})
        );
        let open_ms = ms(t0);
        let events = s.drain();
        let published = last_diagnostics(&events, &errors).expect("diagnostics for Errors.lean");
        assert_eq!(published.version, Some(1));
        let diags = published.read().expect("publishDiagnostics reads");
        type Row = (u32, u32, u32, u32, i32, Option<String>, bool, String);
        let got: BTreeSet<Row> = diags
            .iter()
            .filter(|d| !d.is_silent())
            .map(|d| {
                let r = d.range;
                assert_eq!(d.full_range(), r, "all expected spans are single-line");
                assert_eq!(d.source.as_deref(), Some("Lean 4"));
                let sev = match d.severity {
                    Some(lsp_types::DiagnosticSeverity::ERROR) => 1,
                    Some(lsp_types::DiagnosticSeverity::WARNING) => 2,
                    _ => 0,
                };
                let unnecessary = d
                    .tags
                    .as_ref()
                    .is_some_and(|t| t.contains(&lsp_types::DiagnosticTag::UNNECESSARY));
                (
                    r.start.line,
                    r.start.character,
                    r.end.line,
                    r.end.character,
                    sev,
                    d.code_str().map(|c| c.into_owned()),
                    unnecessary,
                    d.message.to_string(),
                )
            })
            .collect();
        let expected: BTreeSet<Row> = [
            (8, 28, 8, 40, 1, Some("lean.unknownIdentifier".to_string()), false,
             "Unknown identifier `missingThing`".to_string()),
            (11, 33, 11, 44, 1, None, false,
             "Type mismatch\n  Eq.refl one\nhas type\n  Eq one one\nbut is expected to have type\n  Eq one two".to_string()),
            (20, 14, 20, 21, 1, None, false,
             "unsolved goals\ncase succ\nk : N\nih : Eq (N.zero.add k) k\n⊢ Eq (N.zero.add k.succ) k.succ".to_string()),
            (14, 21, 14, 27, 2, None, true,
             "Variable name `unused` is not explicitly referenced.\n\nHint: The binding can be removed (if unused) or named `_` (if used implicitly). Alternatively, prefix the name with `_` to silence this warning:\n  [apply] _unused\n\nNote: This linter can be disabled with `set_option linter.unusedVariables false`".to_string()),
        ]
        .into_iter()
        .collect();
        assert_eq!(got, expected);
        // Plain capabilities: no silent diagnostics are pushed.
        assert!(diags.iter().all(|d| !d.is_silent()));
        // File progress reached "done" for version 1.
        assert!(events.iter().any(|e| matches!(e,
            ServerEvent::FileProgress(p) if p.text_document.uri == errors && p.is_done())));
        // Diagnostics URIs are ours, byte for byte, and map back to the file.
        assert_eq!(
            uri_to_path(&published.uri).unwrap(),
            toolchain().basic.join("Fix/Errors.lean")
        );

        // Hover and goals on Goals.lean.
        let goals = s.open("Fix/Goals.lean");
        s.wait_for_diagnostics(&goals, 1).await.unwrap();
        let t1 = Instant::now();
        let hover = s
            .client
            .request(
                "textDocument/hover",
                serde_json::to_value(DocumentPositionParams::new(&goals, 11, 34)).unwrap(),
            )
            .await
            .unwrap();
        let hover_ms = ms(t1);
        assert_eq!(
            hover["contents"]["value"],
            "```lean\nFix.N.add : N → N → N\n```\n***\nAddition on `N`, by recursion on the second argument. \n***\n*import Fix.Basic*"
        );
        assert_eq!(
            hover["range"],
            json!({"start": {"line": 11, "character": 32}, "end": {"line": 11, "character": 37}})
        );
        let mut hover_times = vec![hover_ms];
        for _ in 0..5 {
            let t = Instant::now();
            let h = s
                .client
                .request(
                    "textDocument/hover",
                    serde_json::to_value(DocumentPositionParams::new(&goals, 16, 26)).unwrap(),
                )
                .await
                .unwrap();
            hover_times.push(ms(t));
            assert_eq!(h["contents"]["value"], "```lean\nih : Eq (N.zero.add m) m\n```");
        }
        // Whitespace: null.
        let none = s
            .client
            .request(
                "textDocument/hover",
                serde_json::to_value(DocumentPositionParams::new(&goals, 15, 0)).unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(none, Value::Null);

        // An answer that does not read as the request's result type fails
        // that request only.
        enum HoverAsNumber {}
        impl lsp_types::request::Request for HoverAsNumber {
            type Params = DocumentPositionParams;
            type Result = u32;
            const METHOD: &'static str = "textDocument/hover";
        }
        let unreadable = s
            .client
            .request_typed::<HoverAsNumber>(DocumentPositionParams::new(&goals, 11, 34))
            .await
            .unwrap_err();
        assert_eq!(unreadable.rpc_code(), Some(LeanErrorCode::InternalError), "{unreadable}");
        assert!(unreadable.to_string().contains("cannot read the answer to textDocument/hover"), "{unreadable}");
        assert!(s.client.is_alive());

        let at = DocumentPositionParams::new(&goals, 28, 9);
        let plain = s.client.request_typed::<PlainGoal>(at).await.unwrap().expect("goals");
        assert_eq!(plain.goals, vec!["t : N := one.add one\n⊢ Eq t two"]);
        let outside = DocumentPositionParams::new(&goals, 0, 0);
        assert_eq!(s.client.request_typed::<PlainGoal>(outside).await.unwrap(), None);

        // Structured goals over RPC, flattened, agree with plainGoal.
        let connected = s
            .client
            .request_typed::<RpcConnect>(RpcConnectParams { uri: goals.clone() })
            .await
            .unwrap();
        for (line, character, expected) in [
            (28, 9, vec!["t : N := one.add one\n⊢ Eq t two"]),
            (15, 4, vec!["case succ\nm : N\nih : Eq (N.zero.add m) m\n⊢ Eq (N.zero.add m.succ) m.succ"]),
            (37, 4, vec![
                "case intro.left\np q : Prop\nhp : p\nhq : q\n⊢ q",
                "case intro.right\np q : Prop\nhp : p\nhq : q\n⊢ p",
            ]),
        ] {
            let call = RpcCallParams::at_position(
                &goals,
                lsp_types::Position { line, character },
                connected.session_id.clone(),
                GET_INTERACTIVE_GOALS,
            );
            let result = s.client.request_typed::<RpcCall>(call).await.unwrap();
            assert_eq!(interactive_goals_to_strings(&result), expected, "at {line}:{character}");
            let refs = collect_rpc_refs(&result);
            assert!(!refs.is_empty());
            assert!(refs.iter().all(|r| r.get("__rpcref").is_some()), "wire format v1: {refs:?}");
            let release = RpcReleaseParams {
                uri: goals.clone(),
                session_id: connected.session_id.clone(),
                refs,
            };
            s.client.notify_typed::<RpcRelease>(release).unwrap();
        }
        s.client
            .notify_typed::<RpcKeepAlive>(RpcKeepAliveParams {
                uri: goals.clone(),
                session_id: connected.session_id,
            })
            .unwrap();

        // A request on a file that was never opened: ContentModified.
        let err = s
            .client
            .request(
                "textDocument/hover",
                serde_json::to_value(DocumentPositionParams::new(s.uri("Fix/Sorry.lean"), 0, 0)).unwrap(),
            )
            .await
            .unwrap_err();
        assert_eq!(err.rpc_code(), Some(LeanErrorCode::ContentModified), "{err}");

        let stats = s.client.stats();
        assert!(stats.server_requests_answered >= 1, "{stats:?}"); // client/registerCapability
        assert_eq!(stats.pending, 0);
        eprintln!(
            "timings: initialize {:.1} ms, didOpen Errors.lean -> waitForDiagnostics {:.1} ms, hover {:?} ms; {stats:?}",
            s.init_ms,
            open_ms,
            hover_times.iter().map(|t| (t * 100.0).round() / 100.0).collect::<Vec<_>>()
        );
        s.client.shutdown(Duration::from_secs(2)).await;
    })
    .await;
}

/// A file whose tactic block sleeps: requests past the `sleep` wait ~3 s.
const SLEEPY: &str = "prelude
import Fix.Basic

namespace Fix

theorem quick : Eq one one := Eq.refl one

theorem sleepy : Eq two two := by
  sleep 10000
  exact Eq.refl two

end Fix
";

/// Dropping a request future sends `$/cancelRequest`, forgets the id, and the
/// client keeps working, also after Lean's late answer to the cancelled id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_request_is_cancelled_and_client_keeps_working() {
    guarded(async {
        let mut s = start(&basic_command()).await;
        let uri = s.open_text("Fix/SleepProbe.lean", SLEEPY);
        let before = s.client.stats();

        // The goal after `sleep 10000` is only known once the sleep is over.
        let slow = s
            .client
            .request_typed::<PlainGoal>(DocumentPositionParams::new(&uri, 9, 2));
        // Drop it once it is on its way to Lean (in the pending table), which
        // the first poll does; its answer waits for the sleep.
        let mut slow = Box::pin(slow);
        tokio::select! {
            biased;
            outcome = &mut slow => panic!("the slow request should still be pending: {outcome:?}"),
            () = async {
                while s.client.stats().pending == before.pending {
                    tokio::task::yield_now().await;
                }
            } => {}
        }
        drop(slow);
        let after = s.client.stats();
        assert_eq!(after.cancels_sent, before.cancels_sent + 1);
        assert_eq!(after.pending, 0, "the dropped request is forgotten");

        // Still working, while Lean is busy with the sleep: the hover is
        // answered before `waitForDiagnostics`, asked first, which Lean answers
        // only once the file (and its sleep) is done. The order is the check,
        // not a clock.
        let mut done = Box::pin(s.wait_for_diagnostics(&uri, 1));
        tokio::select! {
            biased;
            outcome = &mut done => panic!("the file was done before the hover was asked: {outcome:?}"),
            () = async {
                while s.client.stats().pending == after.pending {
                    tokio::task::yield_now().await;
                }
            } => {}
        }
        let hover = s.client.request(
            "textDocument/hover",
            serde_json::to_value(DocumentPositionParams::new(&uri, 5, 8)).unwrap(),
        );
        let hover = tokio::select! {
            biased;
            hover = hover => hover.unwrap(),
            outcome = &mut done => panic!("hover waited for the sleep (the file was done first: {outcome:?})"),
        };
        assert_eq!(
            hover["contents"]["value"],
            "```lean\nFix.quick : Eq one one\n```"
        );

        // Lean answers the cancelled id once the sleep is over; that answer is
        // discarded and the connection stays healthy.
        done.await.unwrap();
        let goal = s
            .client
            .request_typed::<PlainGoal>(DocumentPositionParams::new(&uri, 9, 2))
            .await
            .unwrap()
            .expect("goals");
        assert_eq!(goal.goals, ["⊢ Eq two two"]);
        assert!(s.client.is_alive());
        assert_eq!(s.client.stats().pending, 0);
        let _ = s.drain();
        s.client.shutdown(Duration::from_secs(2)).await;
    })
    .await;
}

/// Killing the server fails pending requests with `Exited` (signal 9, stderr
/// tail) and sends an `Exited` event; later calls fail at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_fails_pending_requests_with_exited() {
    guarded(async {
        let banner = "lean-beam test banner on stderr";
        let mut s = start(&basic_command_with_stderr_banner(banner)).await;
        let pid = s.client.pid();
        let uri = s.open("Fix/Goals.lean");
        s.wait_for_diagnostics(&uri, 1).await.unwrap();
        let workers = children_of(pid);
        assert_eq!(workers.len(), 1, "one worker");
        let mut tree = s.client.process_tree();
        assert_eq!(tree, {
            let mut t = vec![pid, workers[0]];
            t.sort();
            t
        });
        tree.extend(group_members(pid));

        // Version 2 never arrives: this request blocks until the server dies.
        let client = s.client.clone();
        let uri2 = uri.clone();
        let pending = tokio::spawn(async move {
            let params = WaitForDiagnosticsParams {
                uri: uri2,
                version: 2,
            };
            client.request_typed::<WaitForDiagnostics>(params).await
        });
        // Kill once the request is in the pending table (a kill before that
        // would test a request made after the death).
        while s.client.stats().pending == 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(s.client.stats().pending, 1);

        let t0 = Instant::now();
        s.client.kill().await;
        assert!(!s.client.is_alive());
        let err = pending.await.unwrap().unwrap_err();
        let kill_ms = ms(t0);
        let LspError::Exited(info) = &err else {
            panic!("expected Exited, got {err:?}")
        };
        assert_eq!(info.signal, Some(9));
        assert_eq!(info.status, None);
        assert!(info.stderr_tail.contains(banner), "{info:?}");
        assert!(err.to_string().contains("killed by signal 9"), "{err}");

        let event = s.next_exit().await;
        assert_eq!(&event, info);
        assert_eq!(s.client.exit_info().as_ref(), Some(info));
        assert!(s.client.stderr_tail().contains(banner));

        // Afterwards: immediate errors, no hang.
        let again = s.client.request("textDocument/hover", json!({})).await;
        assert!(matches!(again, Err(LspError::Exited(_))), "{again:?}");
        assert!(s.client.notify("textDocument/didClose", json!({})).is_err());
        let left = all_gone(&tree, HANG).await;
        assert!(left.is_empty(), "still running after kill: {left:?}");
        assert!(s.client.process_tree().is_empty());
        // Idempotent.
        s.client.kill().await;
        s.client.shutdown(Duration::from_millis(100)).await;
        eprintln!("kill -> pending request failed in {kill_ms:.1} ms");
    })
    .await;
}

/// `shutdown` ends the server and every worker: nothing of its process group
/// is left alive; it is idempotent. Dropping the last reference kills too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_and_drop_leave_no_process_alive() {
    guarded(async {
        let mut s = start(&basic_command()).await;
        let pid = s.client.pid();
        for f in ["Fix/Goals.lean", "Fix/Errors.lean"] {
            let uri = s.open(f);
            s.wait_for_diagnostics(&uri, 1).await.unwrap();
        }
        let workers = children_of(pid);
        assert_eq!(workers.len(), 2, "two workers");
        let mut tree = s.client.process_tree();
        assert_eq!(tree.len(), 3, "server + 2 workers: {tree:?}");
        tree.extend(group_members(pid));

        let t0 = Instant::now();
        s.client.shutdown(HANG).await;
        let shutdown_ms = ms(t0);
        let info = s.client.exit_info().expect("reaped after shutdown");
        assert_eq!(info.status, Some(0), "graceful exit: {info:?}");
        assert_eq!(s.next_exit().await, info);
        let left = all_gone(&tree, HANG).await;
        assert!(left.is_empty(), "left running after shutdown: {left:?}");
        assert!(!s.client.is_alive());
        // A no-op: were it to ask the gone server again, it would wait out a
        // ten-minute grace, far past the safety limit.
        tokio::time::timeout(HANG, s.client.shutdown(Duration::from_secs(600)))
            .await
            .expect("second shutdown is a no-op");
        eprintln!("graceful shutdown with 2 workers: {shutdown_ms:.1} ms");

        // Drop without shutdown.
        let s = start(&basic_command()).await;
        let pid = s.client.pid();
        let uri = s.open("Fix/Goals.lean");
        s.wait_for_diagnostics(&uri, 1).await.unwrap();
        let mut tree = children_of(pid);
        assert_eq!(tree.len(), 1, "one worker");
        tree.push(pid);
        let Server {
            client, mut events, ..
        } = s;
        drop(client);
        let info = loop {
            match events.recv().await {
                Some(ServerEvent::Exited(info)) => break info,
                Some(_) => {}
                None => panic!("no Exited event after drop"),
            }
        };
        assert_eq!(info.signal, Some(9));
        let left = all_gone(&tree, HANG).await;
        assert!(left.is_empty(), "left running after drop: {left:?}");
    })
    .await;
}

#[tokio::test]
async fn bogus_program_is_named_in_the_error() {
    guarded(async {
        let mut cmd = basic_command();
        cmd.program = PathBuf::from("/nonexistent/bin/lean-bogus");
        let (tx, _rx) = unbounded_channel();
        let err = LspClient::start(&cmd, tx, STARTUP).await.unwrap_err();
        assert!(matches!(err, LspError::Io(_)), "{err:?}");
        assert!(
            err.to_string().contains("/nonexistent/bin/lean-bogus"),
            "{err}"
        );
    })
    .await;
}

#[tokio::test]
async fn early_exit_carries_the_stderr_tail() {
    guarded(async {
        let cmd = ServerCommand {
            program: PathBuf::from("sh"),
            args: vec![
                "-c".into(),
                "echo 'error: toolchain leanprover/lean4:v9 is not installed' >&2; exit 3".into(),
            ],
            env: vec![],
            env_remove: Vec::new(),
            cwd: toolchain().basic.clone(),
        };
        let (tx, mut rx) = unbounded_channel();
        // Noticed at the exit, not at the startup timeout: with a ten-minute
        // timeout, only the exit can end the wait within the safety limit.
        let err = tokio::time::timeout(HANG, LspClient::start(&cmd, tx, Duration::from_secs(600)))
            .await
            .expect("the early exit was not noticed")
            .unwrap_err();
        let LspError::Exited(info) = &err else {
            panic!("expected Exited, got {err:?}")
        };
        assert_eq!(info.status, Some(3));
        assert!(
            info.stderr_tail
                .contains("toolchain leanprover/lean4:v9 is not installed")
        );
        assert!(err.to_string().contains("is not installed"), "{err}");
        assert!(matches!(rx.recv().await, Some(ServerEvent::Exited(_))));
    })
    .await;
}

#[tokio::test]
async fn silent_server_hits_the_startup_timeout_and_is_killed() {
    guarded(async {
        let cmd = ServerCommand {
            program: PathBuf::from("sh"),
            args: vec!["-c".into(), "echo starting >&2; sleep 30".into()],
            env: vec![],
            env_remove: Vec::new(),
            cwd: toolchain().basic.clone(),
        };
        let (tx, mut rx) = unbounded_channel();
        let err = LspClient::start(&cmd, tx, Duration::from_millis(300))
            .await
            .unwrap_err();
        assert!(matches!(err, LspError::Protocol(ref m) if m.contains("did not answer `initialize`") && m.contains("starting")), "{err:?}");
        // The client was dropped: the whole group (sh and its sleep) is killed.
        match tokio::time::timeout(HANG, rx.recv()).await {
            Ok(Some(ServerEvent::Exited(info))) => assert_eq!(info.signal, Some(9)),
            other => panic!("expected an Exited event, got {other:?}"),
        }
    })
    .await;
}

/// The one fault the real server cannot produce on demand: a garbled frame.
#[tokio::test]
async fn garbled_frame_fails_pending_requests_and_kills_the_peer() {
    guarded(async {
        let cmd = ServerCommand {
            program: PathBuf::from("sh"),
            args: vec![
                "-c".into(),
                r"printf 'Content-Length: 5\r\n\r\nnot j'; sleep 30".into(),
            ],
            env: vec![],
            env_remove: Vec::new(),
            cwd: Path::new("/").to_path_buf(),
        };
        let (tx, mut rx) = unbounded_channel();
        let err = LspClient::start(&cmd, tx, STARTUP).await.unwrap_err();
        assert!(
            matches!(err, LspError::Protocol(ref m) if m.contains("invalid JSON-RPC message")),
            "{err:?}"
        );
        match tokio::time::timeout(HANG, rx.recv()).await {
            Ok(Some(ServerEvent::Exited(info))) => assert_eq!(info.signal, Some(9)),
            other => panic!("expected an Exited event, got {other:?}"),
        }
    })
    .await;
}
