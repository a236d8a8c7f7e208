//! Hostile input over stdio, against the spawned binary: a line far over the
//! limit, deep nesting, invalid UTF-8, NUL bytes, ten thousand requests nobody
//! reads the answers of, a flood of cancellations, ids reused while active,
//! paths that climb out of the root or are symlinks out of it, a root that is a
//! file, and a root deleted while its runtime runs.
//!
//! Memory figures come from `/proc/<pid>/status` (`VmHWM`, `VmRSS`), where the
//! pid is what `beam_stats` reports.

#[allow(dead_code)] // this binary uses a slice of the harness (see tests/common/mod.rs)
mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::lean::{TempDir, TempWorkspace, eventually, lean_or_skip, lean_processes_of};
use common::mcp::{CallOpts, Era, Mcp, Spawn};
use common::procfs;
use common::{Server, call_params, modern, request};
use serde_json::{Value, json};

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const MIB: u64 = 1024 * 1024;

fn server_pid(s: &mut Server) -> u32 {
    let result = s.result(&modern(
        "pid",
        "tools/call",
        call_params("beam_stats", json!({})),
    ));
    result["structuredContent"]["pid"]
        .as_u64()
        .expect("beam_stats pid") as u32
}

/// The state letter (`R` running or runnable, `S` sleeping, `D`, …) of one
/// thread of `pid`, from `/proc/<pid>/task/<tid>/stat`.
fn thread_state(pid: u32, tid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// The states of every thread of `pid` (see [`thread_state`]).
fn thread_states(pid: u32) -> Vec<char> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|tasks| {
            tasks
                .flatten()
                .filter_map(|t| t.file_name().to_str()?.parse().ok())
                .filter_map(|tid| thread_state(pid, tid))
                .collect()
        })
        .unwrap_or_default()
}

/// The calling thread's id (`/proc/thread-self` links to `<pid>/task/<tid>`).
fn current_tid() -> u32 {
    let link = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self");
    link.file_name()
        .and_then(|t| t.to_str()?.parse().ok())
        .expect("a thread id")
}

/// A directory that passes the descriptor rules without any Lean in it.
fn bare_project(prefix: &str) -> TempDir {
    let dir = TempDir::new(prefix);
    std::fs::write(
        dir.path().join("lean-toolchain"),
        "leanprover/lean4:v4.35.0\n",
    )
    .unwrap();
    dir
}

fn modern_call(id: impl Into<Value>, tool: &str, arguments: Value) -> Value {
    modern(id, "tools/call", call_params(tool, arguments))
}

/// A modern request answered at once, to show the stream goes on.
fn discover(s: &mut Server, id: impl Into<Value>) {
    let result = s.result(&modern(id, "server/discover", Value::Null));
    assert!(result["supportedVersions"].is_array(), "{result}");
}

/// The error of a response whose result must be a tool error.
fn tool_error(response: &Value) -> Value {
    common::tool_error(&response["result"])
}

#[test]
fn a_50_mib_line_is_refused_in_bounded_memory_and_the_stream_continues() {
    let mut s = Server::spawn();
    let pid = server_pid(&mut s);
    let before = procfs::hwm(pid);

    // A well-formed request whose one parameter is 50 MiB: the server cannot
    // read its id without buffering it, so the refusal names none.
    let pad = 50 * MIB as usize;
    let mut line = Vec::with_capacity(pad + 128);
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":"huge","method":"ping","params":{"pad":""#);
    line.resize(line.len() + pad, b'a');
    line.extend_from_slice(b"\"}}\n");
    let size = line.len() - 1;
    s.send_bytes(&line);
    drop(line);

    let refusal = s.recv();
    assert_eq!(refusal["id"], Value::Null, "{refusal}");
    assert_eq!(refusal["error"]["code"], INVALID_REQUEST, "{refusal}");
    let message = refusal["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "message of {size} bytes exceeds the 8388608-byte line limit"
        )),
        "unclear refusal: {message}"
    );
    // The stream continues, in order.
    discover(&mut s, 1);

    let after = procfs::hwm(pid);
    let growth = after.saturating_sub(before);
    eprintln!(
        "VmHWM before {} KiB, after {} KiB",
        before / 1024,
        after / 1024
    );
    assert!(
        growth < 24 * MIB,
        "peak memory grew by {} MiB for a 50 MiB line (limit 8 MiB)",
        growth / MIB
    );

    // A line just under the limit is read whole and answered to its id.
    let mut message = modern("big", "server/discover", Value::Null);
    message["params"]["_meta"]["pad"] = Value::String("b".repeat(7 * MIB as usize));
    let response = s.request(&message);
    assert!(
        response["result"]["supportedVersions"].is_array(),
        "{response}"
    );
}

#[test]
fn deeply_nested_json_is_refused_and_nesting_within_the_limit_is_served() {
    let mut s = Server::spawn();
    let depth = 100_000;
    for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
        let line = format!("{}1{}", open.repeat(depth), close.repeat(depth));
        assert!(s.send_raw(&line));
        let response = s.recv();
        assert_eq!(response["error"]["code"], PARSE_ERROR, "{response}");
        assert_eq!(response["id"], Value::Null);
        let message = response["error"]["message"].as_str().unwrap();
        assert!(message.contains("recursion limit"), "{message}");
    }
    // Deep nesting inside an otherwise valid request is a parse error too.
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"ping","params":{{"x":{}0{}}}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    assert!(s.send_raw(&line));
    let response = s.recv();
    assert_eq!(response["error"]["code"], PARSE_ERROR, "{response}");

    // Nesting just under the parser's limit reaches a tool that walks it
    // (feedback report redaction and rendering) and is answered.
    let project = bare_project("nested");
    let mut nested = json!({"leaf": "secret=hunter2"});
    for _ in 0..110 {
        nested = json!({ "n": nested });
    }
    let arguments = json!({
        "workspace": {"root": project.path()},
        "title": "t", "summary": "s", "reproduction": "r", "expected": "e", "actual": "a",
        "request": nested, "confidential": true,
    });
    let response = s.request(&modern_call(8, "beam_feedback_report", arguments));
    assert_eq!(response["result"]["isError"], false, "{response}");
    discover(&mut s, 9);
}

#[test]
fn invalid_utf8_is_a_parse_error_and_the_stream_continues() {
    let mut s = Server::spawn();
    let lines: [&[u8]; 5] = [
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffing\"}\n",
        b"\xff\xfe\xfd\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":\"\xc0\xaf\",\"method\":\"ping\"}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"\\ud800\"}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\xe2\x82\n",
    ];
    for line in lines {
        s.send_bytes(line);
        let response = s.recv();
        assert_eq!(
            response["error"]["code"],
            PARSE_ERROR,
            "{:?}: {response}",
            String::from_utf8_lossy(line)
        );
        assert_eq!(response["id"], Value::Null);
    }
    assert_eq!(s.result(&request(4, "ping", Value::Null)), json!({}));
}

#[test]
fn nul_bytes_are_refused_raw_and_carried_exactly_when_escaped() {
    let mut s = Server::spawn();
    // Raw NUL: after the message, inside a string, alone.
    for line in [
        &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\0\n"[..],
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pi\0ng\"}\n",
        b"\0\n",
    ] {
        s.send_bytes(line);
        let response = s.recv();
        assert_eq!(response["error"]["code"], PARSE_ERROR, "{response}");
        assert_eq!(response["id"], Value::Null);
    }
    // Escaped NUL is ordinary text: an id keeps it, a method name is echoed.
    let response = s.request(&request("a\u{0}b", "ping", Value::Null));
    assert_eq!(response["result"], json!({}));
    let response = s.expect_error(&request(2, "pi\u{0}ng", Value::Null), METHOD_NOT_FOUND);
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("pi\u{0}ng")
    );
    // In a path it is an invalid path, reported as a tool error.
    let project = bare_project("nul");
    let response = s.request(&modern_call(
        3,
        "lean_close",
        json!({"workspace": {"root": project.path()}, "path": "A\u{0}.lean"}),
    ));
    let error = tool_error(&response);
    assert_eq!(error["code"], "invalidInput", "{error}");
    assert_eq!(error["data"]["field"], "path");
    assert_eq!(error["data"]["value"], "A\u{0}.lean");
    let response = s.request(&modern_call(
        4,
        "lean_close",
        json!({"workspace": {"root": "/tmp\u{0}x"}, "path": "A.lean"}),
    ));
    assert_eq!(tool_error(&response)["data"]["field"], "workspace.root");
}

/// Ten thousand requests written without reading a single answer: the server
/// stops reading (the writer blocks) instead of queueing without bound, its
/// memory stays flat, and once the answers are read every request has exactly
/// one.
#[test]
fn ten_thousand_unread_requests_push_back_and_are_all_answered() {
    const N: usize = 10_000;
    let mut child = Command::new(env!("CARGO_BIN_EXE_lean-beam-mcp"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .env("LEAN_BEAM_LOG", "warn")
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());

    // Warm up (and select the modern family) with one answered call.
    writeln!(stdin, "{}", modern_call(0, "beam_version", json!({}))).unwrap();
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(first.contains("\"id\":0"), "{first}");
    let baseline = procfs::rss(pid);

    let written = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&written);
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let writer = std::thread::spawn(move || {
        tid_tx.send(current_tid()).unwrap();
        for i in 1..=N {
            // Calls (each a task holding an in-flight slot) and immediate answers.
            let message = if i % 2 == 0 {
                modern_call(i, "beam_version", json!({}))
            } else {
                modern(i, "server/discover", Value::Null)
            };
            let mut line = message.to_string();
            line.push('\n');
            stdin.write_all(line.as_bytes()).expect("write request");
            count.fetch_add(1, Ordering::SeqCst);
        }
        stdin
    });

    // Nobody reads: the writer must come to a stop well short of N. Stopped
    // is a state, not a quiet spell: the writer sleeps in a write (the pipe is
    // full) while every thread of the server sleeps too, so the server is not
    // reading its input (a server still reading, or queueing, would be
    // running with input waiting).
    let writer_tid = tid_rx.recv().unwrap();
    let me = std::process::id();
    let settled = eventually(Duration::from_secs(20), || {
        thread_state(me, writer_tid) == Some('S') && thread_states(pid).iter().all(|&s| s == 'S')
    });
    let stalled_at = written.load(Ordering::SeqCst);
    let held = procfs::rss(pid);
    eprintln!(
        "writer stalled at {stalled_at} of {N} requests; RSS {} KiB → {} KiB",
        baseline / 1024,
        held / 1024
    );
    assert!(
        settled && stalled_at < N / 2,
        "no back-pressure: {stalled_at} of {N} requests were accepted unread"
    );
    assert!(
        held.saturating_sub(baseline) < 32 * MIB,
        "RSS grew by {} MiB while {stalled_at} requests were held",
        (held - baseline) / MIB
    );

    // Now read: every id exactly once, no errors.
    let mut seen = vec![0u32; N + 1];
    let mut line = String::new();
    let mut answered = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while answered < N {
        assert!(Instant::now() < deadline, "only {answered} of {N} answered");
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "EOF after {answered} answers"
        );
        let message: Value = serde_json::from_str(&line).expect("JSON line");
        let id = message["id"]
            .as_u64()
            .unwrap_or_else(|| panic!("unexpected message {message}")) as usize;
        assert!(message.get("error").is_none(), "{message}");
        seen[id] += 1;
        answered += 1;
    }
    let stdin = writer.join().expect("writer");
    assert!(
        seen[1..].iter().all(|&n| n == 1),
        "some request was not answered exactly once"
    );
    let peak = procfs::hwm(pid);
    eprintln!("VmHWM after the flood: {} KiB", peak / 1024);
    drop(stdin);
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status}");
}

#[test]
fn a_flood_of_cancellations_for_unknown_ids_is_ignored() {
    let mut s = Server::spawn();
    let pid = server_pid(&mut s);
    let before = procfs::rss(pid);
    let mut burst = Vec::with_capacity(20_000);
    for i in 0..10_000u64 {
        burst.push(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i, "reason": "flood"}}));
        burst.push(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": format!("s{i}")}}));
    }
    // And malformed ones.
    burst.push(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": null}}));
    burst.push(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1.5}}));
    burst.push(json!({"jsonrpc": "2.0", "method": "notifications/cancelled"}));
    s.send_all(&burst);
    s.assert_nothing_before_sentinel("after-flood");
    let after = procfs::rss(pid);
    assert!(
        after.saturating_sub(before) < 16 * MIB,
        "RSS {before} → {after}"
    );
    // The stream and the session still work.
    let result = s.result(&modern_call(1, "beam_stats", json!({})));
    assert_eq!(result["isError"], false);
}

/// A request that reuses the id of an active one is ignored (two responses
/// with one id could not be told apart); the first still gets exactly one
/// answer, and the id is free again afterwards.
#[test]
fn ids_reused_while_active_are_ignored() {
    let Some(lean) = lean_or_skip() else {
        return;
    };
    let ws = TempWorkspace::copy("basic");
    ws.write(
        "Fix/Hold.lean",
        "prelude\nimport Fix.Basic\nnamespace Fix\ntheorem held : Eq one one := by\n  sleep 3000\n  exact Eq.refl one\nend Fix\n",
    );
    let mut m = Mcp::start(Era::Modern, Spawn::default().envs(lean.server_env()));
    let root = ws.root_str();
    let sync = json!({"workspace": {"root": root}, "path": "Fix/Hold.lean"});
    let id = json!("busy");
    let token = json!("busy-sync");
    m.send(&m.call_request(
        &id,
        "lean_sync",
        sync.clone(),
        &CallOpts::token(token.clone()),
    ));
    // Reuse the id while the sync runs (Lean elaborates the file: its progress
    // says so), with another tool and with the same one.
    m.wait_notification("file progress of the sync", |n| {
        n["method"] == "notifications/progress" && n["params"]["progressToken"] == token
    });
    m.send(&m.call_request(&id, "beam_version", json!({}), &Default::default()));
    m.send(&m.call_request(&id, "lean_sync", sync.clone(), &Default::default()));
    // A different id of the other type is a different request.
    let other = m.call_request(&json!(0), "beam_version", json!({}), &Default::default());
    m.send(&other);
    let response = m.response(&json!(0));
    assert!(response.get("result").is_some());

    let response = m.response(&id);
    assert_eq!(response["result"]["isError"], false, "{response}");
    assert!(
        response["result"]["structuredContent"]["version"].is_u64(),
        "{response}"
    );
    // No second answer to "busy" arrives. Both reuses were read before the
    // answer to 0: none of them ran (beam_stats counts the calls that ran),
    // both were ignored as reuses (the log says so), and nothing for "busy"
    // came before a later point in the stream.
    let ran = m.stats()["requests"]["byTool"].clone();
    assert_eq!(ran["lean_sync"]["2026-07-28"], 1, "{ran}");
    assert_eq!(ran["beam_version"]["2026-07-28"], 1, "{ran}");
    let ignored = "ignored request tools/call reusing active id \"busy\"";
    assert!(
        eventually(Duration::from_secs(20), || m
            .stderr()
            .matches(ignored)
            .count()
            == 2),
        "two lines `{ignored}` expected on stderr:\n{}",
        m.stderr()
    );
    m.sync_point();
    let answers = m
        .received
        .iter()
        .filter(|r| r.get("id") == Some(&id))
        .count();
    assert_eq!(answers, 1, "{:#?}", m.received);
    // Retired: the id is reusable.
    m.send(&m.call_request(&id, "beam_version", json!({}), &Default::default()));
    let mut answers = 0;
    assert!(eventually(Duration::from_secs(10), || {
        let _ = m.read_within(Duration::from_millis(50));
        answers = m
            .received
            .iter()
            .filter(|r| r.get("id") == Some(&id))
            .count();
        answers == 2
    }));
}

/// The descriptor selects a runtime; it is not a sandbox. Relative paths
/// resolve under the root (`..` included), absolute paths canonicalize on their
/// own, symlinks are followed, and results name the file exactly: relative to
/// the root when the canonical file is inside it, absolute otherwise.
#[test]
fn dotdot_and_symlinks_out_of_the_root_are_resolved_and_reported_exactly() {
    let Some(lean) = lean_or_skip() else {
        return;
    };
    let base = TempDir::new("paths");
    let root = base.path().join("root");
    let outside = base.path().join("outside");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("lean-toolchain"), "leanprover/lean4:v4.35.0\n").unwrap();
    let text = "prelude\ninductive T where\n  | a\n";
    std::fs::write(root.join("In.lean"), text).unwrap();
    std::fs::write(outside.join("Out.lean"), text).unwrap();
    std::fs::write(outside.join("notes.txt"), "x").unwrap();
    std::os::unix::fs::symlink(outside.join("Out.lean"), root.join("Link.lean")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("away")).unwrap();
    std::os::unix::fs::symlink(&root, base.path().join("alias")).unwrap();
    let root_s = root.to_string_lossy().into_owned();
    let out_file = outside.join("Out.lean").to_string_lossy().into_owned();

    let mut m = Mcp::start(Era::Modern, Spawn::default().envs(lean.server_env()));
    let ws = json!({"root": root_s});
    // lean_close resolves and reports without starting Lean.
    let cases: Vec<(Value, String, &str)> = vec![
        (ws.clone(), "sub/../In.lean".into(), "In.lean"),
        (ws.clone(), "./In.lean".into(), "In.lean"),
        (ws.clone(), "../outside/Out.lean".into(), out_file.as_str()),
        (ws.clone(), "Link.lean".into(), out_file.as_str()),
        (ws.clone(), "away/Out.lean".into(), out_file.as_str()),
        (ws.clone(), format!("{root_s}/sub/../In.lean"), "In.lean"),
        (
            ws.clone(),
            format!("{}/alias/In.lean", base.path().display()),
            "In.lean",
        ),
        (ws.clone(), out_file.clone(), out_file.as_str()),
        // A symlinked alias of the root is the same canonical root.
        (
            json!({"root": base.path().join("alias")}),
            "In.lean".into(),
            "In.lean",
        ),
    ];
    for (workspace, path, shown) in &cases {
        let result = m.call("lean_close", json!({"workspace": workspace, "path": path}));
        assert_eq!(result["path"], *shown, "path {path:?}: {result}");
        assert_eq!(
            result["workspace"]["root"], root_s,
            "path {path:?}: {result}"
        );
    }
    // Refusals name the field, the value and the rule.
    for (path, rule_part) in [
        ("../outside/notes.txt", "must name a .lean file"),
        ("away", "must name a file, not a directory"),
        ("../nowhere/X.lean", "relative paths resolve under"),
        ("/etc/passwd", "must name a .lean file"),
    ] {
        let error = m.call_err("lean_close", json!({"workspace": ws, "path": path}));
        assert_eq!(error["code"], "invalidInput", "{path}: {error}");
        assert_eq!(error["data"]["field"], "path");
        assert_eq!(error["data"]["value"], path);
        assert!(
            error["data"]["rule"].as_str().unwrap().contains(rule_part),
            "{path}: {error}"
        );
    }
    let error = m.call_err(
        "lean_close",
        json!({"workspace": {"root": "../root"}, "path": "In.lean"}),
    );
    assert!(
        error["message"].as_str().unwrap().contains("absolute"),
        "{error}"
    );

    // Lean really works on the file a symlink points out of the root to, and the
    // answer names the canonical file.
    let result = m.call("lean_sync", json!({"workspace": ws, "path": "Link.lean"}));
    assert_eq!(result["path"], out_file.as_str(), "{result}");
    assert_eq!(result["diagnostics"]["counts"]["error"], 0, "{result}");
    let result = m.call(
        "lean_sync",
        json!({"workspace": ws, "path": "sub/../In.lean"}),
    );
    assert_eq!(result["path"], "In.lean", "{result}");
}

#[test]
fn a_workspace_root_that_is_a_file_is_refused() {
    let base = bare_project("rootfile");
    let file = base.path().join("lean-toolchain");
    let link = base.path().join("link");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let mut s = Server::spawn();
    for (i, root) in [file.clone(), link.clone()].iter().enumerate() {
        let response = s.request(&modern_call(
            i,
            "lean_sync",
            json!({"workspace": {"root": root}, "path": "A.lean"}),
        ));
        let error = tool_error(&response);
        assert_eq!(error["code"], "invalidInput", "{error}");
        assert_eq!(error["data"]["field"], "workspace.root");
        assert!(
            error["data"]["rule"]
                .as_str()
                .unwrap()
                .contains("must be a directory"),
            "{error}"
        );
    }
    // A directory that is no project, and one that does not exist.
    let plain = TempDir::new("plain");
    let response = s.request(&modern_call(
        5,
        "lean_sync",
        json!({"workspace": {"root": plain.path()}, "path": "A.lean"}),
    ));
    assert!(
        tool_error(&response)["data"]["rule"]
            .as_str()
            .unwrap()
            .contains("not a Lean/Lake project")
    );
    let response = s.request(&modern_call(
        6,
        "lean_sync",
        json!({"workspace": {"root": plain.path().join("gone")}, "path": "A.lean"}),
    ));
    assert!(
        tool_error(&response)["data"]["rule"]
            .as_str()
            .unwrap()
            .contains("existing directory")
    );
    // Nothing was started for any of them.
    let stats = s.result(&modern_call(7, "beam_stats", json!({})));
    assert_eq!(
        stats["structuredContent"]["workspaces"],
        json!({}),
        "{stats}"
    );
}

/// The root directory disappears while its Lean server runs: requests that need
/// the root fail with a structured error naming it, the echoed canonical
/// descriptor still drops the runtime, its Lean processes go, and the server
/// serves everything else.
#[test]
fn a_root_deleted_while_its_runtime_runs() {
    let Some(lean) = lean_or_skip() else {
        return;
    };
    let ws = TempWorkspace::copy("basic");
    let root = ws.root().to_path_buf();
    let root_s = ws.root_str();
    let mut m = Mcp::start(Era::Modern, Spawn::default().envs(lean.server_env()));
    let args = json!({"workspace": {"root": root_s}, "path": "Fix/Goals.lean"});
    let synced = m.call("lean_sync", args.clone());
    let version = synced["version"].as_u64().unwrap();
    assert!(
        !lean_processes_of(&root).is_empty(),
        "no Lean process for the root"
    );

    std::fs::remove_dir_all(&root).unwrap();
    let error = m.call_err("lean_sync", args.clone());
    assert_eq!(error["code"], "invalidInput", "{error}");
    assert_eq!(error["data"]["field"], "workspace.root");
    assert_eq!(error["data"]["value"], root_s.as_str());
    let error = m.call_err(
        "lean_goals",
        json!({"workspace": {"root": root_s}, "path": "Fix/Goals.lean", "version": version, "line": 12, "character": 2}),
    );
    assert_eq!(error["code"], "invalidInput", "{error}");
    // The runtime is still cached, and the canonical descriptor evicts it.
    assert!(m.workspace_stats(&root_s).is_some());
    let dropped = m.call(
        "lean_drop_workspace",
        json!({"workspace": {"root": root_s}}),
    );
    assert_eq!(dropped["dropped"], true, "{dropped}");
    assert!(m.workspace_stats(&root_s).is_none());
    assert!(
        eventually(Duration::from_secs(10), || lean_processes_of(&root)
            .is_empty()),
        "Lean processes of the deleted root outlived the drop: {:?}",
        lean_processes_of(&root)
    );
    // Recreated, it works again from scratch.
    drop(ws);
    let ws = TempWorkspace::copy("basic");
    let synced = m.call(
        "lean_sync",
        json!({"workspace": {"root": ws.root_str()}, "path": "Fix/Goals.lean"}),
    );
    assert_eq!(synced["diagnostics"]["counts"]["error"], 0, "{synced}");
}
