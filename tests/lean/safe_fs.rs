//! Safe to share, the file system part (issue 14, items 1–4 and 8; issue 15,
//! item 4), over stdio and over `--http` against the real binary (and the
//! real Lean server where a document must be open):
//!
//! - a FIFO or a pipe named by any path gets a clear error within seconds
//!   while `beam_version` is answered within 1 s (the stdio server runs a
//!   one-thread runtime, so this proves no read blocks it; over HTTP enough
//!   offending calls are sent at once to occupy every worker thread);
//! - feedback evidence is read only from regular files inside the root,
//!   within caps, and redacted; bundles are written only under the root's
//!   private `.lake/beam-feedback/`;
//! - source files over `LEAN_BEAM_MAX_FILE_BYTES` are refused;
//! - checkpoints never write through a link out of the root, and scratch
//!   left by a killed server goes when the next runtime starts;
//! - `moreLeanArgs` in a lakefile's comment or string is not a setting.

use crate::common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpStream;

use common::lean::{TempDir, TempWorkspace, eventually, lean};
use common::mcp::{CallOpts, Era, Mcp, ws};

/// `beam_version` must be answered this fast while an offending call runs.
const VERSION_WITHIN: Duration = Duration::from_secs(1);
/// The offending call's clear error comes within this (a failure guard).
const ERROR_WITHIN: Duration = Duration::from_secs(10);

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(
        rc,
        0,
        "mkfifo {path:?}: {}",
        std::io::Error::last_os_error()
    );
}

fn spawn_stdio(extra: &[(&str, &str)]) -> Mcp {
    Mcp::on_lean(Era::Modern, extra)
}

fn report_args(root: &str, extra: Value) -> Value {
    let mut args = json!({
        "workspace": ws(root),
        "title": "Safe file system report",
        "summary": "A summary.",
        "reproduction": "Call it.",
        "expected": "Nothing bad.",
        "actual": "Nothing bad.",
    });
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    args
}

/// A project with a regular `lakefile.toml` and no Lean source, for calls
/// that never start Lean (feedback reports).
fn bare_project(tag: &str) -> TempDir {
    let dir = TempDir::new(tag);
    std::fs::write(dir.path().join("lakefile.toml"), "name = \"bare\"\n").unwrap();
    dir
}

// ---------------------------------------------------------------------------
// Liveness under an offending call: stdio.
// ---------------------------------------------------------------------------

/// Start `tool(args)` with a progress token and wait until it runs (its
/// preparation update came), then ask `beam_version`: it must be answered
/// within 1 s. Returns the offending call's `result`, which must come within
/// a few seconds.
fn stdio_stays_live(mcp: &mut Mcp, tool: &str, args: Value) -> Value {
    let token = json!(format!("live-{}", mcp.fresh_id()));
    let id = mcp.start_call(tool, args, &CallOpts::token(token.clone()));
    let deadline = Instant::now() + ERROR_WITHIN;
    while mcp.progress_of(&token).is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            mcp.read_within(left).is_some(),
            "{tool} never started (no preparation update within {ERROR_WITHIN:?}): the server is blocked\nstderr:\n{}",
            mcp.stderr()
        );
    }
    let version = mcp.start_call("beam_version", json!({}), &CallOpts::default());
    let answered = mcp.response_within(&version, VERSION_WITHIN);
    assert!(
        answered.is_some_and(|r| r["result"]["isError"] == false),
        "beam_version was not answered within {VERSION_WITHIN:?} while {tool} ran: the runtime is blocked"
    );
    let response = mcp.response_within(&id, ERROR_WITHIN).unwrap_or_else(|| {
        panic!(
            "{tool} was not answered within {ERROR_WITHIN:?}\nstderr:\n{}",
            mcp.stderr()
        )
    });
    response["result"].clone()
}

/// The tool error of a result, checked to be `invalidInput` naming `needle`
/// (a path) and `kind` (what it is).
fn assert_clear_error(result: &Value, needle: &str, kind: &str) {
    let error = &common::tool_error(result);
    assert_eq!(error["code"], "invalidInput", "{error}");
    let message = error["message"].as_str().unwrap_or("");
    assert!(
        message.contains(needle) && message.contains(kind),
        "the error must name {needle:?} and say it is a {kind}: {error}"
    );
}

/// The report succeeded and one collection warning names `needle` and says
/// `why`.
fn assert_warned(result: &Value, needle: &str, why: &str) {
    assert_eq!(result["isError"], false, "{result}");
    let warnings = &result["structuredContent"]["collection_warnings"];
    assert!(
        warnings.as_array().unwrap().iter().any(|w| {
            let w = w.as_str().unwrap_or("");
            w.contains(needle) && w.contains(why)
        }),
        "no warning naming {needle:?} with {why:?}: {warnings}"
    );
}

#[test]
fn fifo_and_pipe_evidence_paths_get_a_clear_refusal_while_the_server_stays_live() {
    let project = bare_project("fifo-evidence");
    let root = project.path().to_string_lossy().into_owned();
    let fifo = project.path().join("evidence.fifo");
    mkfifo(&fifo);
    let mut mcp = spawn_stdio(&[]);
    for (path, why) in [
        ("evidence.fifo", "FIFO"),
        (fifo.to_str().unwrap(), "FIFO"),
        // The server's own stdin: the protocol pipe.
        ("/proc/self/fd/0", "not read"),
    ] {
        let result = stdio_stays_live(
            &mut mcp,
            "beam_feedback_report",
            report_args(&root, json!({"evidence": [{"name": "e", "path": path}]})),
        );
        assert_warned(&result, path, why);
        let item = &result["structuredContent"]["evidence"][0];
        assert!(item["refused"].is_string(), "{item}");
        assert_eq!(item["content"], "", "{item}");
    }
}

#[test]
fn a_fifo_lean_toolchain_is_not_read_by_a_report() {
    let project = bare_project("fifo-toolchain");
    let root = project.path().to_string_lossy().into_owned();
    mkfifo(&project.path().join("lean-toolchain"));
    let mut mcp = spawn_stdio(&[]);
    let result = stdio_stays_live(
        &mut mcp,
        "beam_feedback_report",
        report_args(&root, json!({"include_collected": true})),
    );
    assert_warned(&result, "lean-toolchain", "FIFO");
    assert!(
        result["structuredContent"]["collected"]["toolchain"].is_null(),
        "{result}"
    );
}

#[test]
fn a_fifo_lakefile_gets_a_clear_error_from_lean_save() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    mkfifo(&w.root().join("lakefile.lean"));
    let mut mcp = spawn_stdio(&[]);
    let result = stdio_stays_live(
        &mut mcp,
        "lean_save",
        json!({"workspace": ws(&root), "path": "Fix/Goals.lean"}),
    );
    assert_clear_error(&result, "lakefile.lean", "FIFO");
}

/// Replace `rel` by a FIFO that got the file's old inode number, after
/// `remember` had the server resolve (and remember) the regular file. The
/// file system reuses a freed inode number at once most of the time; a try
/// that did not is undone and repeated.
fn fifo_with_the_old_inode(root: &Path, rel: &str, mut remember: impl FnMut()) {
    let file = root.join(rel);
    for _ in 0..100 {
        std::fs::write(&file, "prelude\ndef victim : Type := Type\n").unwrap();
        remember();
        let old = std::fs::metadata(&file).unwrap().ino();
        std::fs::remove_file(&file).unwrap();
        mkfifo(&file);
        if std::fs::metadata(&file).unwrap().ino() == old {
            return;
        }
        std::fs::remove_file(&file).unwrap();
    }
    panic!("the file system of {root:?} never reused an inode number in 100 tries");
}

#[test]
fn a_synced_document_replaced_by_a_fifo_with_its_inode_gets_a_clear_error() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    let mut mcp = spawn_stdio(&[]);
    let args = json!({"workspace": ws(&root), "path": "Fix/Victim.lean"});
    fifo_with_the_old_inode(w.root(), "Fix/Victim.lean", || {
        mcp.call("lean_update", args.clone());
    });
    for tool in ["lean_update", "lean_sync"] {
        let result = stdio_stays_live(&mut mcp, tool, args.clone());
        assert_clear_error(&result, "Victim.lean", "FIFO");
    }
}

// ---------------------------------------------------------------------------
// Liveness under offending calls: HTTP.
// ---------------------------------------------------------------------------

const MODERN: &str = "2026-07-28";

/// A running `lean-beam-mcp --http` on an ephemeral loopback port, with the
/// test toolchain.
struct HttpServer {
    child: Child,
    port: u16,
    rt: tokio::runtime::Runtime,
    next_id: i64,
}

impl HttpServer {
    fn start(extra: &[(&str, &str)]) -> HttpServer {
        let mut command = Command::new(env!("CARGO_BIN_EXE_lean-beam-mcp"));
        command
            .args(["--http", "127.0.0.1:0"])
            .env("LEAN_BEAM_LOG", "warn")
            .envs(lean().server_env())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in extra {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("spawn lean-beam-mcp --http");
        let stderr = child.stderr.take().unwrap();
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("listening on http://127.0.0.1:").nth(1) {
                    let _ = port_tx.send(rest.trim_end_matches("/mcp").parse::<u16>().unwrap());
                }
            }
        });
        let port = port_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the server announces its port");
        HttpServer {
            child,
            port,
            rt: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap(),
            next_id: 0,
        }
    }

    fn id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    /// Call `tool` and return the `result` of its response.
    fn call(&mut self, tool: &str, args: Value) -> Value {
        let (port, id) = (self.port, self.id());
        let tool = tool.to_string();
        self.rt.block_on(async move {
            let mut call = Call::start(port, id, &tool, args, None).await;
            call.result(Duration::from_secs(120)).await
        })
    }

    /// Start `copies` calls of `tool(args)` at once (enough to occupy every
    /// worker thread of the server if each blocked one), wait until each
    /// runs (its preparation update came), then ask `beam_version`: it must
    /// be answered within 1 s. Returns the offending calls' results, which
    /// must come within a few seconds.
    fn stays_live(&mut self, tool: &str, args: Value, copies: usize) -> Vec<Value> {
        self.stays_live_each(tool, vec![args; copies])
    }

    /// [`HttpServer::stays_live`] with one call of `tool` per element of
    /// `each`, its arguments.
    fn stays_live_each(&mut self, tool: &str, each: Vec<Value>) -> Vec<Value> {
        let port = self.port;
        let copies = each.len();
        let each: Vec<(i64, Value)> = each.into_iter().map(|args| (self.id(), args)).collect();
        let version_id = self.id();
        let tool = tool.to_string();
        self.rt.block_on(async move {
            let mut calls = Vec::new();
            for (id, args) in each {
                let token = format!("live-{id}");
                calls.push(Call::bounded(port, id, &tool, args, &token).await);
            }
            for call in &mut calls {
                let first = call.next(ERROR_WITHIN).await.unwrap_or_else(|| {
                    panic!("{tool} never started (no preparation update within {ERROR_WITHIN:?}): the server is blocked")
                });
                assert_eq!(first["method"], "notifications/progress", "{first}");
            }
            let answered = tokio::time::timeout(VERSION_WITHIN, async {
                Call::start(port, version_id, "beam_version", json!({}), None)
                    .await
                    .result(VERSION_WITHIN)
                    .await
            })
            .await;
            assert!(
                answered.is_ok_and(|r| r["isError"] == false),
                "beam_version was not answered within {VERSION_WITHIN:?} while {copies} {tool} calls ran"
            );
            let mut results = Vec::new();
            for mut call in calls {
                results.push(call.result(ERROR_WITHIN).await);
            }
            results
        })
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// More calls than the server has worker threads (tokio starts one per
/// core), so that blocking ones would occupy all of them.
fn enough_to_occupy_every_worker() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()) + 2
}

/// One modern `tools/call` over HTTP, its response read as it arrives
/// (JSON, or an SSE stream of progress notifications then the response).
struct Call {
    id: i64,
    body: Option<Incoming>,
    pending: String,
    messages: std::collections::VecDeque<Value>,
}

impl Call {
    async fn start(port: u16, id: i64, tool: &str, args: Value, token: Option<&str>) -> Call {
        let mut meta = json!({
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        if let Some(token) = token {
            meta["progressToken"] = json!(token);
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args, "_meta": meta}});
        let stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(connection);
        let request = Request::builder()
            .method("POST")
            .uri("/mcp")
            .header("host", format!("127.0.0.1:{port}"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool)
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        assert!(response.status().is_success(), "{}", response.status());
        let sse = response
            .headers()
            .get("content-type")
            .is_some_and(|v| v.to_str().unwrap().starts_with("text/event-stream"));
        let mut call = Call {
            id,
            body: Some(response.into_body()),
            pending: String::new(),
            messages: Default::default(),
        };
        if !sse {
            let bytes = call
                .body
                .take()
                .unwrap()
                .collect()
                .await
                .unwrap()
                .to_bytes();
            call.messages
                .push_back(serde_json::from_slice(&bytes).unwrap());
        }
        call
    }

    /// [`Call::start`] with a progress token, whose response must begin
    /// within a few seconds (its headers come with the preparation update).
    async fn bounded(port: u16, id: i64, tool: &str, args: Value, token: &str) -> Call {
        tokio::time::timeout(ERROR_WITHIN, Call::start(port, id, tool, args, Some(token)))
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{tool} got no response headers within {ERROR_WITHIN:?}: the server is blocked"
                )
            })
    }

    /// The next message of the response, within `limit`.
    async fn next(&mut self, limit: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(m) = self.messages.pop_front() {
                return Some(m);
            }
            let body = self.body.as_mut()?;
            let frame = tokio::time::timeout_at(deadline, body.frame())
                .await
                .ok()??;
            let Ok(data) = frame.unwrap().into_data() else {
                continue;
            };
            self.pending.push_str(&String::from_utf8_lossy(&data));
            while let Some(end) = self.pending.find("\n\n") {
                let event: String = self.pending.drain(..end + 2).collect();
                for line in event.lines() {
                    if let Some(data) = line.strip_prefix("data: ") {
                        self.messages.push_back(serde_json::from_str(data).unwrap());
                    }
                }
            }
        }
    }

    /// The `result` of the response to this call, within `limit`.
    async fn result(&mut self, limit: Duration) -> Value {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let message = self
                .next(left)
                .await
                .unwrap_or_else(|| panic!("no response to {} within {limit:?}", self.id));
            if message.get("method").is_none() {
                assert_eq!(message["id"], self.id, "{message}");
                return message["result"].clone();
            }
        }
    }
}

#[test]
fn over_http_fifo_paths_get_clear_errors_while_beam_version_is_served() {
    let project = bare_project("http-fifo");
    let root = project.path().to_string_lossy().into_owned();
    mkfifo(&project.path().join("evidence.fifo"));
    let w = TempWorkspace::copy("basic");
    mkfifo(&w.root().join("lakefile.lean"));
    let toolchain = bare_project("http-fifo-toolchain");
    mkfifo(&toolchain.path().join("lean-toolchain"));
    let mut server = HttpServer::start(&[]);
    let n = enough_to_occupy_every_worker();

    // Another client's pipes (the server's descriptors) and a FIFO.
    let evidence: Vec<Value> = (0..16)
        .map(|fd| json!({"name": format!("fd{fd}"), "path": format!("/proc/self/fd/{fd}")}))
        .chain([json!({"name": "fifo", "path": "evidence.fifo"})])
        .collect();
    for result in server.stays_live(
        "beam_feedback_report",
        report_args(&root, json!({"evidence": evidence})),
        n,
    ) {
        assert_warned(&result, "evidence.fifo", "FIFO");
        for item in result["structuredContent"]["evidence"].as_array().unwrap() {
            assert!(item["refused"].is_string(), "{item}");
            assert_eq!(item["content"], "", "{item}");
        }
    }

    let toolchain_root = toolchain.path().to_string_lossy().into_owned();
    for result in server.stays_live(
        "beam_feedback_report",
        report_args(&toolchain_root, json!({})),
        n,
    ) {
        assert_warned(&result, "lean-toolchain", "FIFO");
    }

    for result in server.stays_live(
        "lean_save",
        json!({"workspace": ws(&w.root_str()), "path": "Fix/Goals.lean"}),
        n,
    ) {
        assert_clear_error(&result, "lakefile.lean", "FIFO");
    }
}

#[test]
fn over_http_synced_documents_replaced_by_fifos_get_clear_errors() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    let mut server = HttpServer::start(&[]);
    let n = enough_to_occupy_every_worker();
    // One document per call: calls on one document wait for each other.
    let paths: Vec<String> = (0..n).map(|i| format!("Fix/Victim{i}.lean")).collect();
    for path in &paths {
        let args = json!({"workspace": ws(&root), "path": path});
        fifo_with_the_old_inode(w.root(), path, || {
            let r = server.call("lean_update", args.clone());
            assert_eq!(r["isError"], false, "{r}");
        });
    }
    // Each of the n calls names its own document.
    let each = paths
        .iter()
        .map(|path| json!({"workspace": ws(&root), "path": path}))
        .collect();
    let results = server.stays_live_each("lean_update", each);
    for (result, path) in results.iter().zip(&paths) {
        assert_clear_error(result, path.trim_start_matches("Fix/"), "FIFO");
    }
}

// ---------------------------------------------------------------------------
// Feedback reads only what it may (item 2).
// ---------------------------------------------------------------------------

#[test]
fn evidence_is_read_only_from_regular_files_inside_the_root_within_caps() {
    let project = bare_project("evidence");
    let root = project.path().to_string_lossy().into_owned();
    let outside = TempDir::new("evidence-outside");
    std::fs::write(outside.path().join("secret.txt"), "outside secret").unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        project.path().join("link.txt"),
    )
    .unwrap();
    std::fs::write(project.path().join("inside.txt"), "inside text").unwrap();
    let big = "0123456789abcdef".repeat(300 * 1024 / 16);
    std::fs::write(project.path().join("big.txt"), &big).unwrap();
    let mut mcp = spawn_stdio(&[]);

    let outside_rel = format!(
        "../{}/secret.txt",
        outside.path().file_name().unwrap().to_string_lossy()
    );
    let refused = [
        "/etc/passwd",
        "/proc/self/environ",
        "/dev/zero",
        outside_rel.as_str(),
        "link.txt",
        ".",
        "missing.txt",
    ];
    let mut evidence: Vec<Value> = refused
        .iter()
        .map(|p| json!({"name": p, "path": p}))
        .collect();
    evidence.push(json!({"name": "inside", "path": "inside.txt"}));
    let report = mcp.call(
        "beam_feedback_report",
        report_args(&root, json!({"evidence": evidence, "redact": false})),
    );
    let items = report["evidence"].as_array().unwrap();
    let warnings = report["collection_warnings"].to_string();
    for (item, path) in items.iter().zip(refused) {
        assert!(item["refused"].is_string(), "{path}: {item}");
        assert_eq!(item["content"], "", "{path}: {item}");
        assert!(warnings.contains(path), "{path} not in {warnings}");
    }
    assert_eq!(items.last().unwrap()["content"], "inside text");
    assert!(!report.to_string().contains("outside secret"));
    for (i, why) in [
        (0, "outside the workspace root"),
        (2, "outside the workspace root"),
        (3, "outside the workspace root"),
        (4, "outside the workspace root"),
        (5, "directory"),
        (6, "cannot resolve"),
    ] {
        let refused = report["evidence"][i]["refused"].as_str().unwrap();
        assert!(refused.contains(why), "{}: {refused}", refused_name(i));
    }

    // 40 items of a 300 KiB file: 32 taken, 256 KiB each, 1 MiB in all.
    let flood: Vec<Value> = (0..40)
        .map(|i| json!({"name": format!("big{i}"), "path": "big.txt"}))
        .collect();
    let id = mcp.start_call(
        "beam_feedback_report",
        report_args(&root, json!({"evidence": flood, "redact": false})),
        &CallOpts::default(),
    );
    let response = mcp.response(&id);
    let size = response.to_string().len();
    let report = response["result"]["structuredContent"].clone();
    let items = report["evidence"].as_array().unwrap();
    assert_eq!(items.len(), 32, "at most 32 items");
    let read: Vec<usize> = items
        .iter()
        .map(|i| i["content"].as_str().unwrap().len())
        .collect();
    assert_eq!(read.iter().sum::<usize>(), 1024 * 1024, "{read:?}");
    assert_eq!(read[..4], [256 * 1024; 4]);
    assert!(read[4..].iter().all(|&n| n == 0), "{read:?}");
    assert_eq!(items[0]["truncated"], true);
    assert!(
        items[0]["truncation"]
            .as_str()
            .unwrap()
            .contains("per-item cap"),
        "{}",
        items[0]
    );
    assert!(
        items[4]["refused"].as_str().unwrap().contains("budget"),
        "{}",
        items[4]
    );
    // The report says at its top what its own caps cut (issue 26: its output
    // schema declares `truncated`): 4 files cut, 28 not read for the budget,
    // 8 items left out; 4 files of 300 KiB opened, against the 1 MiB budget.
    assert_eq!(
        report["truncated"],
        json!({"fields": 32, "items": 8, "bytes": 4 * 300 * 1024, "limit": 1024 * 1024}),
        "{}",
        report["truncated"]
    );
    assert!(
        report["collection_warnings"]
            .to_string()
            .contains("8 evidence items left out"),
        "{}",
        report["collection_warnings"]
    );
    // Evidence and Markdown carry the 1 MiB each, and the result comes in
    // its two forms (structured and text): bounded (273 MB before).
    assert!(size < 5 * 1024 * 1024, "{size} bytes");
}

fn refused_name(i: usize) -> &'static str {
    [
        "/etc/passwd",
        "/proc/self/environ",
        "/dev/zero",
        "../outside",
        "link",
        ".",
        "missing",
    ][i]
}

/// Twenty-four secret shapes, and the part of each that must not survive.
fn planted() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5",
            "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5",
        ),
        (
            "github_pat_11ABCDEFG0abcdefghijklmn_OPQRSTUVWXYZ0123456789",
            "11ABCDEFG0abcdefghijklmn",
        ),
        ("glpat-xY7zQ2wE4rT6yU8iO0pA", "xY7zQ2wE4rT6yU8iO0pA"),
        (
            "sk-proj-Q9w8E7r6T5y4U3i2O1pAsDfGhJkLzXcV",
            "Q9w8E7r6T5y4U3i2O1pAsDfGhJkLzXcV",
        ),
        ("sk_live_51HxYzAbCdEfGh12345678", "51HxYzAbCdEfGh12345678"),
        (
            "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx",
            "AbCdEfGhIjKlMnOpQrStUvWx",
        ),
        ("key id AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
        (
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCY9EXAMPLEKEY1",
            "bPxRfiCY9EXAMPLEKEY1",
        ),
        (
            "AIzaSyA1B2C3D4E5F6G7H8I9J0KlMnOpQrStUv",
            "SyA1B2C3D4E5F6G7H8I9J0KlMnOpQrStUv",
        ),
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "dozjgNryP4J3jVmNHl0w5N",
        ),
        (
            "clone https://alice:Pa55w0rdXyz@git.example.com/repo.git",
            "Pa55w0rdXyz",
        ),
        (
            "DATABASE_URL=postgres://dbuser:dbSecretQ7@db.internal:5432/app",
            "dbSecretQ7",
        ),
        ("Authorization: Bearer opaqueTok3nValue", "opaqueTok3nValue"),
        (
            "-H 'Authorization: Basic dXNlcjpwYXNzd29yZA=='",
            "dXNlcjpwYXNzd29yZA",
        ),
        (
            "DATABASE_PASSWORD=hunter2/with/slashes",
            "hunter2/with/slashes",
        ),
        ("MY_API_TOKEN_VALUE=tokval123", "tokval123"),
        (
            "SIGNING_KEY = \"quoted secret value\"",
            "quoted secret value",
        ),
        (
            "export CLIENT_SECRET_ID='s3cr3t-id/value'",
            "s3cr3t-id/value",
        ),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n-----END RSA PRIVATE KEY-----",
            "VTLw7onLRnrq0",
        ),
        ("\"password\": \"pa/ss word\"", "pa/ss word"),
        // Webhook URLs (the URL is the credential) and more scanner shapes.
        (
            "https://hooks.slack.com/services/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",
            "q1W2e3R4t5Y6u7I8o9P0aSdF",
        ),
        (
            "https://discord.com/api/webhooks/123456789012345678/Xy_Zw-AbCdEfGhIjKlMnOp",
            "Xy_Zw-AbCdEfGhIjKlMnOp",
        ),
        (
            "https://contoso.webhook.office.com/webhookb2/0a1b2c3d@72f9/IncomingWebhook/9f8e7d6c/a1b2c3",
            "IncomingWebhook/9f8e7d6c",
        ),
        ("gldt-AbCdEfGh12345678", "AbCdEfGh12345678"),
    ]
}

#[test]
fn planted_secret_shapes_never_survive_redaction() {
    let project = bare_project("redact-shapes");
    let root = project.path().to_string_lossy().into_owned();
    let shapes = planted();
    assert_eq!(shapes.len(), 24);
    let all: String = shapes.iter().map(|(s, _)| format!("{s}\n")).collect();
    std::fs::write(project.path().join("secrets.log"), &all).unwrap();
    let mut mcp = spawn_stdio(&[]);
    let report = mcp.call(
        "beam_feedback_report",
        report_args(
            &root,
            json!({
                "summary": format!("Seen with:\n{all}"),
                "request": {"tool": "lean_save", "password": "pa/ss word", "note": all},
                "evidence": [
                    {"name": "file", "path": "secrets.log"},
                    {"name": "inline", "content": all},
                ],
                "bundle": "zip",
            }),
        ),
    );
    assert_eq!(report["metadata"]["redacted"], true);
    assert!(
        report["evidence"][0]["content"]
            .as_str()
            .unwrap()
            .contains("Authorization"),
        "the evidence file was read: {report}"
    );
    let zip = std::fs::read(report["zip_path"].as_str().unwrap()).unwrap();
    let texts = [
        report.to_string(),
        String::from_utf8_lossy(&zip).into_owned(),
    ];
    for (shape, secret) in &shapes {
        for text in &texts {
            // JSON escapes quotes and newlines; compare both spellings.
            let escaped = serde_json::to_string(secret).unwrap();
            let escaped = escaped.trim_matches('"');
            assert!(
                !text.contains(secret) && !text.contains(escaped),
                "{secret:?} (from {shape:?}) survives redaction"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Bundles only under the root's private feedback folder (item 3).
// ---------------------------------------------------------------------------

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

/// Every directory under `dir` is 0700 and every file 0600.
fn assert_private_tree(dir: &Path) {
    assert_eq!(mode(dir), 0o700, "{dir:?}");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            assert_private_tree(&path);
        } else {
            assert_eq!(mode(&path), 0o600, "{path:?}");
        }
    }
}

#[test]
fn bundles_are_written_only_under_the_private_feedback_folder() {
    let project = bare_project("bundles");
    let root = project.path().to_string_lossy().into_owned();
    let base = project.path().join(".lake/beam-feedback");
    let outside = TempDir::new("bundles-outside");
    let mut mcp = spawn_stdio(&[]);

    // Default, named sub-folders, confidential: all in the private folder.
    let mut written = Vec::new();
    for (extra, key) in [
        (json!({"bundle": "dir"}), "bundle_dir"),
        (json!({"bundle": "zip"}), "zip_path"),
        (json!({"bundle": "zip", "bundle_dir": "runs/a"}), "zip_path"),
        (
            json!({"bundle": "dir", "bundle_dir": base.join("abs").to_string_lossy()}),
            "bundle_dir",
        ),
        (json!({"bundle": "zip", "confidential": true}), "zip_path"),
    ] {
        let report = mcp.call("beam_feedback_report", report_args(&root, extra.clone()));
        let path = PathBuf::from(
            report[key]
                .as_str()
                .unwrap_or_else(|| panic!("{key}: {report}")),
        );
        assert!(path.starts_with(&base), "{extra}: {path:?}");
        written.push(path);
    }
    assert!(written[2].starts_with(base.join("runs/a")));
    assert!(written[3].starts_with(base.join("abs")));
    assert_private_tree(&base);
    let temps: Vec<String> = std::fs::read_dir(&base)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(temps.is_empty(), "{temps:?}");

    // Anywhere else: refused, nothing written.
    for bundle_dir in [
        outside.path().to_string_lossy().into_owned(),
        project.path().join("src").to_string_lossy().into_owned(),
        "../escape".to_string(),
        "a/../../b".to_string(),
    ] {
        let error = mcp.call_err(
            "beam_feedback_report",
            report_args(&root, json!({"bundle": "zip", "bundle_dir": bundle_dir})),
        );
        assert_eq!(error["code"], "invalidInput", "{bundle_dir}: {error}");
        assert_eq!(error["data"]["field"], "bundle_dir", "{error}");
    }
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    assert!(!project.path().join("src").exists());

    // A link at any component under the root is refused, not followed.
    std::fs::remove_dir_all(base.join("runs")).unwrap();
    std::os::unix::fs::symlink(outside.path(), base.join("runs")).unwrap();
    let error = mcp.call_err(
        "beam_feedback_report",
        report_args(&root, json!({"bundle": "zip", "bundle_dir": "runs/a"})),
    );
    assert_eq!(error["code"], "invalidInput", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("symbolic link"),
        "{error}"
    );
    std::fs::remove_dir_all(project.path().join(".lake")).unwrap();
    std::os::unix::fs::symlink(outside.path(), project.path().join(".lake")).unwrap();
    let error = mcp.call_err(
        "beam_feedback_report",
        report_args(&root, json!({"bundle": "dir", "confidential": true})),
    );
    assert_eq!(error["code"], "invalidInput", "{error}");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}

// ---------------------------------------------------------------------------
// Source size bound (item 4, LEAN_BEAM_MAX_FILE_BYTES).
// ---------------------------------------------------------------------------

#[test]
fn source_files_over_the_size_bound_are_refused() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    let small = w.read("Fix/Basic.lean").len();
    let limit = (small + 100).to_string();
    let mut mcp = spawn_stdio(&[("LEAN_BEAM_MAX_FILE_BYTES", &limit)]);
    w.write(
        "Fix/Big.lean",
        &format!("prelude\n{}", "-- padding\n".repeat(small / 10 + 20)),
    );
    for tool in ["lean_update", "lean_sync"] {
        let error = mcp.call_err(
            tool,
            json!({"workspace": ws(&root), "path": "Fix/Big.lean"}),
        );
        assert_eq!(error["code"], "invalidInput", "{error}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("Big.lean")
                && message.contains(&limit)
                && message.contains("LEAN_BEAM_MAX_FILE_BYTES"),
            "{error}"
        );
        assert_eq!(error["data"]["reason"], "fileTooLarge", "{error}");
    }
    let synced = mcp.call(
        "lean_sync",
        json!({"workspace": ws(&root), "path": "Fix/Basic.lean"}),
    );
    assert!(synced["version"].is_u64(), "{synced}");
}

// ---------------------------------------------------------------------------
// Checkpoints stay inside the root (item 8).
// ---------------------------------------------------------------------------

#[test]
fn lean_save_never_writes_through_a_link_out_of_the_root() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    let outside = TempDir::new("save-outside");
    std::os::unix::fs::symlink(outside.path(), w.root().join(".lake/build/ir")).unwrap();
    let mut mcp = spawn_stdio(&[]);
    let error = mcp.call_err(
        "lean_save",
        json!({"workspace": ws(&root), "path": "Fix/Goals.lean"}),
    );
    assert_eq!(error["code"], "invalidInput", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains(".lake/build/ir") && message.contains("symbolic link"),
        "{error}"
    );
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        0,
        "written outside the root"
    );
    assert!(
        !w.root()
            .join(".lake/build/lib/lean/Fix/Goals.olean")
            .exists()
    );
}

#[test]
fn scratch_left_by_a_killed_server_goes_when_the_next_runtime_starts() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    let build = w.root().join(".lake/build");
    // pid 4999999 is above any pid_max: its server is gone.
    let stale = build.join(".beam-save-4999999-0123456789abcdef");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("out.olean"), "half").unwrap();
    // The test process runs: its scratch is somebody's save in progress.
    let live = build.join(format!(".beam-save-{}-0", std::process::id()));
    std::fs::create_dir_all(&live).unwrap();
    let mut mcp = spawn_stdio(&[]);
    mcp.call(
        "lean_update",
        json!({"workspace": ws(&root), "path": "Fix/Basic.lean"}),
    );
    assert!(
        eventually(Duration::from_secs(20), || !stale.exists()),
        "{stale:?} was not removed"
    );
    assert!(live.exists(), "the scratch of a live process was removed");
}

// ---------------------------------------------------------------------------
// moreLeanArgs is detected, not grepped (issue 15, item 4).
// ---------------------------------------------------------------------------

#[test]
fn more_lean_args_in_a_comment_or_string_does_not_refuse_saves() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    let mut mcp = spawn_stdio(&[]);
    let save = json!({"workspace": ws(&root), "path": "Fix/Goals.lean"});
    w.write(
        "lakefile.lean",
        "import Lake\nopen Lake DSL\n\n-- moreLeanArgs := #[\"-DmaxHeartbeats=0\"] was dropped\n/- moreLeanArgs -/\npackage fix where\n  leanOptions := #[⟨`weak.x, \"moreLeanArgs\"⟩]\n\n@[default_target] lean_lib Fix\n",
    );
    let saved = mcp.call("lean_save", save.clone());
    assert_eq!(saved["module"], "Fix.Goals", "{saved}");
    std::fs::remove_file(w.root().join("lakefile.lean")).unwrap();
    w.write(
        "lakefile.toml",
        "name = \"fix\"\n# moreLeanArgs = [\"-DmaxHeartbeats=0\"]\ndescription = \"moreLeanArgs = []\"\n",
    );
    let saved = mcp.call("lean_save", save.clone());
    assert_eq!(saved["module"], "Fix.Goals", "{saved}");

    // Real settings still refuse, in both languages.
    w.write(
        "lakefile.toml",
        "name = \"fix\"\n\n[[lean_lib]]\nname = \"Fix\"\nmoreLeanArgs = [\"-DmaxHeartbeats=0\"]\n",
    );
    let error = mcp.call_err("lean_save", save.clone());
    assert_eq!(error["code"], "saveUnsupportedSetup", "{error}");
    assert_eq!(error["data"]["lakefile"], "lakefile.toml", "{error}");
    std::fs::remove_file(w.root().join("lakefile.toml")).unwrap();
    w.write(
        "lakefile.lean",
        "import Lake\nopen Lake DSL\n\npackage fix where\n  moreLeanArgs := #[\"-DmaxHeartbeats=0\"]\n",
    );
    let error = mcp.call_err("lean_save", save);
    assert_eq!(error["code"], "saveUnsupportedSetup", "{error}");
    assert_eq!(error["data"]["lakefile"], "lakefile.lean", "{error}");
}
