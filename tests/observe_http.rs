//! `/metrics` and `/status` on the real server over HTTP, with the real Lean:
//! both need the bearer token when one is set (as `/mcp` does; `/health`
//! does not), `/metrics` counts the calls made, their errors and latencies,
//! and shows the Lean process a `lean_sync` started; `/status` shows the
//! workspace and its document, the last error, and loads nothing from
//! elsewhere. `promtool check metrics` and the browser test are lanes of
//! scripts/test.sh (scripts/observe-lane.py).

#[allow(dead_code)] // this binary uses a slice of the harness (see tests/common/mod.rs)
mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use common::child::HttpChild;

const TOKEN: &str = "observe-test-token-51d0";

fn start(lean: &std::path::Path) -> HttpChild {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lean-beam-mcp"));
    command
        .args(["--http", "127.0.0.1:0", "--replica-id", "observe-r1"])
        .env("LEAN_BEAM_LOG", "warn")
        .env("LEAN_BEAM_HTTP_TOKEN", TOKEN)
        .env("LEAN_BEAM_LEAN", lean);
    HttpChild::spawn(command, Duration::from_secs(30))
}

struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// One request on its own connection (`Connection: close`), read to the end.
fn request(port: u16, method: &str, path: &str, token: bool, body: Option<&Value>) -> Reply {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if token {
        head.push_str(&format!("Authorization: Bearer {TOKEN}\r\n"));
    }
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n");
    }
    stream
        .write_all(format!("{head}\r\n{body}").as_bytes())
        .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a response head");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    Reply {
        status,
        head: head.to_string(),
        body,
    }
}

fn dechunk(mut text: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = text.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        text = &rest[n + 2..];
    }
    out
}

/// A modern `tools/call`; the result as its JSON (the last SSE data line, or
/// the JSON body).
fn call(port: u16, id: u64, tool: &str, arguments: Value) -> Value {
    let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": tool, "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let body = message.to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: {}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8_lossy(&raw);
    let (_, body) = raw.split_once("\r\n\r\n").unwrap();
    let body = if raw
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    let last = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m.get("id").is_some())
        .or_else(|| serde_json::from_str(&body).ok())
        .unwrap_or_else(|| panic!("no response in {body}"));
    last["result"].clone()
}

/// The value of the sample `series` (its whole spelling, labels included).
fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn metrics_and_status_show_the_calls_behind_the_token() {
    let Some(lean) = common::lean::lean_or_skip() else {
        return;
    };
    let root = lean.fixture("basic");
    let root_text = root.to_string_lossy().into_owned();
    let server = start(&lean.lean);
    let port = server.port;

    // Behind the token, as /mcp; /health is not.
    for path in ["/metrics", "/status"] {
        let refused = request(port, "GET", path, false, None);
        assert_eq!(refused.status, 401, "{path}: {}", refused.body);
        assert!(refused.header("www-authenticate").is_some(), "{path}");
    }
    assert_eq!(request(port, "GET", "/health", false, None).status, 200);
    // The container's health check: `lean-beam-mcp health ADDR` asks /health.
    let health = |addr: &str| {
        Command::new(env!("CARGO_BIN_EXE_lean-beam-mcp"))
            .args(["health", addr])
            .output()
            .unwrap()
    };
    let healthy = health(&format!("127.0.0.1:{port}"));
    assert!(healthy.status.success(), "{healthy:?}");
    assert!(String::from_utf8_lossy(&healthy.stdout).starts_with("healthy: HTTP/1.1 200"));
    let refused = health("127.0.0.1:1");
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("unhealthy: cannot connect"));
    assert_eq!(request(port, "POST", "/metrics", true, None).status, 405);

    let before = request(port, "GET", "/metrics", true, None);
    assert_eq!(before.status, 200, "{}", before.body);
    assert_eq!(
        before.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert_eq!(sample(&before.body, "lean_beam_runtimes"), Some(0.0));
    assert_eq!(sample(&before.body, "lean_beam_lean_servers"), Some(0.0));

    let synced = call(
        port,
        1,
        "lean_sync",
        json!({"workspace": {"root": root_text}, "path": "Fix/Errors.lean"}),
    );
    assert_eq!(synced["isError"], false, "{synced}");
    // A call with an argument of the wrong type: a tool error, counted by code.
    let wrong = call(
        port,
        2,
        "lean_goals",
        json!({"workspace": {"root": root_text}, "path": "Fix/Errors.lean", "version": 1, "line": "x", "character": 0}),
    );
    assert_eq!(wrong["isError"], true, "{wrong}");

    let metrics = request(port, "GET", "/metrics", true, None).body;
    let series = |s: &str| sample(&metrics, s).unwrap_or_else(|| panic!("no {s} in\n{metrics}"));
    assert_eq!(
        series(r#"lean_beam_tool_calls_total{tool="lean_sync",era="2026-07-28"}"#),
        1.0
    );
    assert_eq!(
        series(r#"lean_beam_tool_errors_total{tool="lean_goals",code="invalidInput"}"#),
        1.0
    );
    assert_eq!(
        series(r#"lean_beam_tool_call_duration_seconds_count{tool="lean_sync"}"#),
        1.0
    );
    assert_eq!(
        series(r#"lean_beam_tool_call_duration_seconds_bucket{tool="lean_sync",le="+Inf"}"#),
        1.0
    );
    assert!(series(r#"lean_beam_tool_call_duration_seconds_sum{tool="lean_sync"}"#) > 0.0);
    assert_eq!(series("lean_beam_runtimes"), 1.0);
    assert_eq!(series("lean_beam_lean_servers"), 1.0);
    assert!(series("lean_beam_lean_documents_open") >= 1.0);
    assert_eq!(series("lean_beam_lean_starts_total"), 1.0);
    assert_eq!(
        series(r#"lean_beam_bound_used{bound="LEAN_BEAM_MAX_RUNTIMES",per="server"}"#),
        1.0
    );
    assert_eq!(
        series(r#"lean_beam_bound_limit{bound="LEAN_BEAM_MAX_RUNTIMES",per="server"}"#),
        8.0
    );
    assert_eq!(
        series(r#"lean_beam_info{version="0.1.0",replica="observe-r1"}"#),
        1.0
    );
    assert!(
        !metrics.contains(&root_text),
        "no workspace path is a label"
    );
    // Looking is not a call: beam_stats, which /metrics reads, is not counted.
    assert!(!metrics.contains(r#"tool="beam_stats""#), "{metrics}");

    let status = request(port, "GET", "/status", true, None);
    assert_eq!(status.status, 200);
    assert_eq!(
        status.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let csp = status.header("content-security-policy").unwrap();
    assert!(csp.starts_with("default-src 'none'"), "{csp}");
    let page = &status.body;
    for expected in [
        root_text.as_str(),
        "Fix/Errors.lean",
        "observe-r1",
        "LEAN_BEAM_MAX_DOCUMENTS",
        "invalidInput",
        "http-equiv=\"refresh\"",
    ] {
        assert!(
            page.contains(expected),
            "{expected} not on the page:\n{page}"
        );
    }
    assert!(!page.contains("<script"), "{page}");
}
