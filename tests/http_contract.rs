//! The Streamable HTTP contract, over loopback, against the real binary
//! (`lean-beam-mcp --http`): every status and JSON-RPC error code of both eras,
//! DNS-rebinding refusal, the body limit, session expiry, SSE streams, CORS,
//! /health and graceful shutdown.

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{HeaderMap, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpStream;

#[allow(dead_code)] // this binary uses a slice of the harness (see tests/common/mod.rs)
mod common;
use common::procfs;

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

/// A running `lean-beam-mcp --http` on an ephemeral loopback port.
struct Server {
    child: Child,
    port: u16,
    log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        Self::start_with(&["127.0.0.1:0"], extra, &[])
    }

    /// `--http ADDR... EXTRA...` with these environment variables (and no
    /// inherited LEAN_BEAM_HTTP_TOKEN).
    fn start_with(addr: &[&str], extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_lean-beam-mcp"));
        command
            .arg("--http")
            .args(addr)
            .args(extra)
            .env("LEAN_BEAM_LOG", "warn")
            .env_remove("LEAN_BEAM_HTTP_TOKEN")
            .envs(env.iter().copied());
        let (child, port, log) = common::child::spawn_http(command, Duration::from_secs(20));
        Server { child, port, log }
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// The log once a line matching `marker` has been read (within 20 s).
    fn log_until(&self, marker: impl Fn(&str) -> bool) -> Vec<String> {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let log = self.log();
            if log.iter().any(|l| marker(l)) {
                return log;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the marker never reached the log: {log:#?}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        for _ in 0..200 {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("the server did not exit within 5 s of SIGTERM");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Response {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Response {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    fn error_code(&self) -> i64 {
        self.json()["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("no error code: {}", self.text()))
    }

    /// The JSON-RPC messages of an SSE body.
    fn events(&self) -> Vec<Value> {
        assert_eq!(
            self.header("content-type"),
            Some("text/event-stream"),
            "{}",
            self.text()
        );
        sse_messages(&self.text())
    }
}

fn sse_messages(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// Open one request on a fresh connection; the body is left to the caller.
async fn open(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> hyper::Response<Incoming> {
    let stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut builder = Request::builder().method(method).uri(path);
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        builder = builder.header("host", format!("127.0.0.1:{port}"));
    }
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    let request = sender.send_request(builder.body(Full::new(Bytes::from(body))).unwrap());
    tokio::time::timeout(Duration::from_secs(20), request)
        .await
        .expect("response headers within 20 s")
        .unwrap()
}

/// `/health` once `done` holds, read over one kept-alive connection (so the
/// watcher's own connection is opened once): each read after the first is
/// `/health?after=N`, which the server answers once its connection counts
/// changed past the `connectionChanges` it last reported, so nothing waits
/// on a timer. A 503 (a full server) closes the connection: a new one asks
/// again. The limit only stops a hang.
async fn until_health(port: u16, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut seen: Option<u64> = None;
    'connect: loop {
        let stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(connection);
        loop {
            assert!(
                std::time::Instant::now() < deadline,
                "no such /health within 20 s"
            );
            let path = match seen {
                Some(n) => format!("/health?after={n}"),
                None => "/health".to_string(),
            };
            let request = Request::builder()
                .uri(path)
                .header("host", format!("127.0.0.1:{port}"))
                .body(Full::new(Bytes::new()))
                .unwrap();
            let Ok(response) = sender.send_request(request).await else {
                continue 'connect;
            };
            let status = response.status();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            if status != StatusCode::OK {
                seen = None;
                continue 'connect;
            }
            let health: Value = serde_json::from_slice(&body).unwrap();
            if done(&health) {
                return health;
            }
            seen = health["connectionChanges"].as_u64();
        }
    }
}

/// Ports of the in-process servers over gated test doubles (`InProcess`),
/// whose tools answer `{tool, id}` rather than their results.
static DOUBLES: Mutex<Vec<u16>> = Mutex::new(Vec::new());

/// Send one request and read its whole response. The answer to a tool call
/// of the real server is checked against the tool's schemas
/// (`common::outputs`), whether it came as JSON or as an SSE stream.
async fn send(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Response {
    let mut calls = common::outputs::Calls::default();
    match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Array(batch)) => batch.iter().for_each(|m| calls.sent(m)),
        Ok(message) => calls.sent(&message),
        Err(_) => {}
    }
    let response = open(port, method, path, headers, body).await;
    let status = response.status();
    let headers = response.headers().clone();
    let body = tokio::time::timeout(Duration::from_secs(20), response.into_body().collect())
        .await
        .expect("body within 20 s")
        .unwrap()
        .to_bytes()
        .to_vec();
    let response = Response {
        status,
        headers,
        body,
    };
    if !DOUBLES.lock().unwrap().contains(&port) {
        let media = response
            .header("content-type")
            .and_then(|t| t.split(';').next());
        let messages = match media {
            Some("application/json") => {
                serde_json::from_slice(&response.body).into_iter().collect()
            }
            Some("text/event-stream") => sse_messages(&response.text()),
            _ => Vec::new(),
        };
        messages.iter().for_each(|m| calls.received(m));
    }
    response
}

const JSON: (&str, &str) = ("content-type", "application/json");
const ACCEPT_BOTH: (&str, &str) = ("accept", "application/json, text/event-stream");

async fn post(port: u16, headers: &[(&str, &str)], body: &Value) -> Response {
    let mut all = vec![JSON];
    all.extend_from_slice(headers);
    send(port, "POST", "/mcp", &all, body.to_string().into_bytes()).await
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// A modern request with its envelope and mirrored headers.
async fn modern(
    port: u16,
    id: i64,
    method: &str,
    mut params: Value,
    extra: &[(&str, &str)],
) -> Response {
    let mut envelope = meta();
    if let Some(Value::Object(extra)) = params.get("_meta") {
        for (k, v) in extra {
            envelope[k] = v.clone();
        }
    }
    params["_meta"] = envelope;
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut headers = vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
    if !extra.iter().any(|(k, _)| *k == "accept") {
        headers.push(ACCEPT_BOTH);
    }
    if let Some(name) = name.as_deref() {
        headers.push(("mcp-name", name));
    }
    headers.extend_from_slice(extra);
    post(
        port,
        &headers,
        &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    )
    .await
}

/// initialize + notifications/initialized; returns the session id.
async fn legacy_session(port: u16) -> String {
    legacy_session_at(port, LEGACY).await
}

/// A session of an initialize-based revision the server supports.
async fn legacy_session_at(port: u16, revision: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": "contract", "version": "1"}}});
    let response = post(port, &[ACCEPT_BOTH], &init).await;
    assert_eq!(response.status, StatusCode::OK, "{}", response.text());
    assert_eq!(response.json()["result"]["protocolVersion"], revision);
    let sid = response
        .header("mcp-session-id")
        .expect("initialize mints a session id")
        .to_string();
    assert!(sid.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = post(
        port,
        &[("mcp-session-id", &sid), ("mcp-protocol-version", revision)],
        &done,
    )
    .await;
    assert_eq!(response.status, StatusCode::ACCEPTED);
    assert!(response.body.is_empty());
    sid
}

async fn legacy(
    port: u16,
    sid: &str,
    id: i64,
    method: &str,
    params: Value,
    extra: &[(&str, &str)],
) -> Response {
    let mut headers = vec![("mcp-session-id", sid), ("mcp-protocol-version", LEGACY)];
    headers.extend_from_slice(extra);
    post(
        port,
        &headers,
        &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    )
    .await
}

/// A call that emits a progress notification before its (error) result, with
/// no Lean needed: the preparation update precedes workspace resolution.
fn progress_call() -> Value {
    json!({"name": "lean_sync", "arguments": {"workspace": {"root": "/nonexistent/beam-http-test"}, "path": "A.lean"},
           "_meta": {"progressToken": "tok"}})
}

/// Each supported initialize-based revision gets its own revision back and the
/// same session: catalog, a call streamed with its progress, a tool error.
#[tokio::test]
async fn each_legacy_revision_is_negotiated_over_http() {
    let server = Server::start(&[]);
    let port = server.port;
    let mut seen: Vec<(&str, Value)> = Vec::new();
    for revision in lean_beam_mcp::identity::SUPPORTED_LEGACY {
        let sid = legacy_session_at(port, revision).await;
        let headers = [
            ("mcp-session-id", sid.as_str()),
            ("mcp-protocol-version", revision),
            ACCEPT_BOTH,
        ];
        let message = |id: i64, method: &str, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let list = post(port, &headers, &message(1, "tools/list", json!({}))).await;
        assert_eq!(list.status, StatusCode::OK, "{revision}: {}", list.text());
        let call = post(port, &headers, &message(2, "tools/call", progress_call())).await;
        assert_eq!(call.status, StatusCode::OK, "{revision}: {}", call.text());
        let events = call.events();
        assert_eq!(events[0]["method"], "notifications/progress", "{revision}");
        let result = &events.last().unwrap()["result"];
        assert_eq!(result["isError"], true, "{revision}: {result}");
        seen.push((revision, json!([list.json()["result"], result])));
    }
    let (latest, expected) = &seen[0];
    for (revision, got) in &seen[1..] {
        assert_eq!(got, expected, "{revision} differs from {latest}");
    }
    // An unsupported request is answered with the latest revision.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "old"}}});
    let response = post(port, &[ACCEPT_BOTH], &init).await;
    assert_eq!(response.json()["result"]["protocolVersion"], LEGACY);
}

#[tokio::test]
async fn legacy_session_lifecycle_and_statuses() {
    let server = Server::start(&[]);
    let port = server.port;
    let sid = legacy_session(port).await;

    let list = legacy(port, &sid, 1, "tools/list", json!({}), &[ACCEPT_BOTH]).await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(list.header("content-type"), Some("application/json"));
    assert!(list.json()["result"]["tools"].as_array().unwrap().len() > 10);
    assert!(
        list.json()["result"].get("ttlMs").is_none(),
        "legacy results carry no cache fields"
    );

    let call = legacy(
        port,
        &sid,
        2,
        "tools/call",
        json!({"name": "beam_version", "arguments": {}}),
        &[ACCEPT_BOTH],
    )
    .await;
    assert_eq!(call.status, StatusCode::OK);
    let result = &call.json()["result"];
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"]["name"], "lean-beam-mcp");

    // JSON-RPC errors of the protocol core are answered with 200 in this era.
    let unknown = legacy(
        port,
        &sid,
        3,
        "tools/call",
        json!({"name": "no_such_tool"}),
        &[],
    )
    .await;
    assert_eq!(unknown.status, StatusCode::OK);
    assert_eq!(unknown.error_code(), -32602);
    assert_eq!(unknown.json()["id"], 3);
    let again = post(
        port,
        &[("mcp-session-id", &sid)],
        &json!({"jsonrpc": "2.0", "id": 4, "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "c"}}}),
    )
    .await;
    assert_eq!(again.error_code(), -32600);

    // Missing session: 400. Unknown session: 404.
    let missing = post(
        port,
        &[],
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}),
    )
    .await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    assert_eq!(missing.error_code(), -32600);
    let unknown = legacy(port, "0123456789abcdef", 6, "tools/list", json!({}), &[]).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.error_code(), -32001);

    // A request before notifications/initialized is the core's -32600.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "early"}}});
    let fresh = post(port, &[], &init).await;
    let early_sid = fresh.header("mcp-session-id").unwrap().to_string();
    let early = legacy(port, &early_sid, 1, "tools/list", json!({}), &[]).await;
    assert_eq!(early.error_code(), -32600);

    // An invalid initialize creates no session.
    let bad = post(
        port,
        &[],
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}),
    )
    .await;
    assert_eq!(bad.error_code(), -32602);
    assert!(bad.header("mcp-session-id").is_none());

    // A client response (this server never asks) and a batch are refused with 400.
    let response = post(
        port,
        &[("mcp-session-id", &sid)],
        &json!({"jsonrpc": "2.0", "id": 9, "result": {}}),
    )
    .await;
    assert_eq!(response.status, StatusCode::BAD_REQUEST);
    assert_eq!(response.error_code(), -32600);
    let batch = post(
        port,
        &[("mcp-session-id", &sid)],
        &json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]),
    )
    .await;
    assert_eq!(batch.status, StatusCode::BAD_REQUEST);
    let parse = send(
        port,
        "POST",
        "/mcp",
        &[JSON, ("mcp-session-id", &sid)],
        b"{not json".to_vec(),
    )
    .await;
    assert_eq!(parse.status, StatusCode::BAD_REQUEST);
    assert_eq!(parse.error_code(), -32700);
    let media = send(
        port,
        "POST",
        "/mcp",
        &[("content-type", "text/plain"), ("mcp-session-id", &sid)],
        b"{}".to_vec(),
    )
    .await;
    assert_eq!(media.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);

    // DELETE ends the session; afterwards it is unknown.
    let delete = send(port, "DELETE", "/mcp", &[("mcp-session-id", &sid)], vec![]).await;
    assert_eq!(delete.status, StatusCode::OK);
    let after = legacy(port, &sid, 7, "tools/list", json!({}), &[]).await;
    assert_eq!(after.status, StatusCode::NOT_FOUND);
    let twice = send(port, "DELETE", "/mcp", &[("mcp-session-id", &sid)], vec![]).await;
    assert_eq!(twice.status, StatusCode::NOT_FOUND);
    let no_id = send(port, "DELETE", "/mcp", &[], vec![]).await;
    assert_eq!(no_id.status, StatusCode::BAD_REQUEST);

    // Refusals are warnings, never errors.
    let log = server.log();
    assert!(
        log.iter().any(|l| l.contains("WARN") && l.contains("404")),
        "{log:#?}"
    );
    assert!(!log.iter().any(|l| l.contains("ERROR")), "{log:#?}");
}

#[tokio::test]
async fn legacy_get_stream_and_post_sse() {
    let server = Server::start(&[]);
    let port = server.port;
    let sid = legacy_session(port).await;

    // GET needs a session and an SSE Accept.
    let no_session = send(
        port,
        "GET",
        "/mcp",
        &[("accept", "text/event-stream")],
        vec![],
    )
    .await;
    assert_eq!(no_session.status, StatusCode::BAD_REQUEST);
    let unknown = send(
        port,
        "GET",
        "/mcp",
        &[("accept", "text/event-stream"), ("mcp-session-id", "nope")],
        vec![],
    )
    .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    let not_sse = send(
        port,
        "GET",
        "/mcp",
        &[("accept", "application/json"), ("mcp-session-id", &sid)],
        vec![],
    )
    .await;
    assert_eq!(not_sse.status, StatusCode::NOT_ACCEPTABLE);

    let stream = open(
        port,
        "GET",
        "/mcp",
        &[("accept", "text/event-stream"), ("mcp-session-id", &sid)],
        vec![],
    )
    .await;
    assert_eq!(stream.status(), StatusCode::OK);
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    let second = send(
        port,
        "GET",
        "/mcp",
        &[("accept", "text/event-stream"), ("mcp-session-id", &sid)],
        vec![],
    )
    .await;
    assert_eq!(second.status, StatusCode::CONFLICT);
    let health = send(port, "GET", "/health", &[], vec![]).await.json();
    assert_eq!(health["streams"], 1);

    // A client that accepts SSE gets the call's progress and its response in
    // the POST's own stream, in order.
    let sse = legacy(port, &sid, 1, "tools/call", progress_call(), &[ACCEPT_BOTH]).await;
    assert_eq!(sse.status, StatusCode::OK);
    let events = sse.events();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["method"], "notifications/progress");
    assert_eq!(events[0]["params"]["progressToken"], "tok");
    assert_eq!(events[1]["id"], 1);
    assert_eq!(events[1]["result"]["isError"], true);

    // A JSON-only client gets the response as JSON; its progress goes to the
    // session's GET stream.
    let plain = legacy(
        port,
        &sid,
        2,
        "tools/call",
        progress_call(),
        &[("accept", "application/json")],
    )
    .await;
    assert_eq!(plain.header("content-type"), Some("application/json"));
    assert_eq!(plain.json()["id"], 2);
    let mut body = stream.into_body();
    let frame = tokio::time::timeout(Duration::from_secs(5), body.frame())
        .await
        .expect("a notification on the GET stream")
        .unwrap()
        .unwrap();
    let text = String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap();
    let messages = sse_messages(&text);
    assert_eq!(messages[0]["method"], "notifications/progress");

    // DELETE closes the GET stream.
    let delete = send(port, "DELETE", "/mcp", &[("mcp-session-id", &sid)], vec![]).await;
    assert_eq!(delete.status, StatusCode::OK);
    let end = tokio::time::timeout(Duration::from_secs(5), body.frame())
        .await
        .expect("the stream ends");
    assert!(end.is_none() || end.unwrap().is_err());
}

/// Poll `/health` (which belongs to no session, so it keeps none alive) until
/// it counts `n` legacy sessions (`expected` says why); returns that report.
async fn until_sessions(port: u16, n: u64, expected: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let health = send(port, "GET", "/health", &[], vec![]).await.json();
        let sessions = health["sessions"].as_u64().expect("a session count");
        if sessions == n {
            return health;
        }
        assert!(sessions > n, "{expected}, but fewer are left: {health}");
        assert!(
            std::time::Instant::now() < deadline,
            "{expected}, but after 20 s: {health}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn legacy_sessions_expire_when_idle() {
    // At level info the server logs each expiry.
    let server = Server::start_with(
        &["127.0.0.1:0"],
        &["--session-idle-secs", "0.3"],
        &[("LEAN_BEAM_LOG", "info")],
    );
    let port = server.port;
    let sid = legacy_session(port).await;
    assert_eq!(
        legacy(port, &sid, 1, "ping", json!({}), &[]).await.status,
        StatusCode::OK
    );
    let health = send(port, "GET", "/health", &[], vec![]).await.json();
    assert_eq!(health["sessions"], 1);
    // Idle past 0.3 s, the reaper ends it, and says so.
    until_sessions(port, 0, "the idle session expires").await;
    // The reaper logs once the session is gone: wait for the line.
    server.log_until(|l| l.contains(&format!("session {sid} expired")));
    let expired = legacy(port, &sid, 2, "ping", json!({}), &[]).await;
    assert_eq!(expired.status, StatusCode::NOT_FOUND);

    // An open GET stream keeps a session attended: a second session, idle
    // from after that stream opened, expires (the reaper has seen the first
    // one idle past the limit too, were the stream not counted), and the
    // first one lives on.
    let sid = legacy_session(port).await;
    let stream = open(
        port,
        "GET",
        "/mcp",
        &[("accept", "text/event-stream"), ("mcp-session-id", &sid)],
        vec![],
    )
    .await;
    let idle = legacy_session(port).await;
    until_sessions(
        port,
        1,
        "the idle second session expires, the attended one stays",
    )
    .await;
    assert_eq!(
        legacy(port, &idle, 1, "ping", json!({}), &[]).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        legacy(port, &sid, 3, "ping", json!({}), &[]).await.status,
        StatusCode::OK
    );
    // A session whose only activity was that stream expires once it ends.
    drop(stream);
    let health = until_sessions(port, 0, "the session expires once its stream ended").await;
    assert_eq!(health["streams"], 0);
    assert_eq!(
        legacy(port, &sid, 4, "ping", json!({}), &[]).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn modern_requests_are_sessionless_and_header_checked() {
    let server = Server::start(&[]);
    let port = server.port;

    let discover = modern(port, 1, "server/discover", json!({}), &[]).await;
    assert_eq!(discover.status, StatusCode::OK);
    assert!(discover.header("mcp-session-id").is_none());
    let result = discover.json()["result"].clone();
    assert_eq!(result["supportedVersions"], json!([MODERN]));
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "lean-beam-mcp"
    );

    let list = modern(port, 2, "tools/list", json!({}), &[]).await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(list.json()["result"]["cacheScope"], "public");
    assert!(list.json()["result"]["ttlMs"].is_u64());

    // A stale legacy session id is ignored.
    let stale = modern(
        port,
        3,
        "tools/call",
        json!({"name": "beam_version", "arguments": {}}),
        &[("mcp-session-id", "stale")],
    )
    .await;
    assert_eq!(stale.status, StatusCode::OK, "{}", stale.text());
    assert_eq!(stale.json()["result"]["resultType"], "complete");
    assert_eq!(
        stale.json()["result"]["structuredContent"]["name"],
        "lean-beam-mcp"
    );
    assert!(stale.header("mcp-session-id").is_none());

    // Header and envelope checks: each request, and the status and JSON-RPC
    // error it gets (None: it is served). -32602: a modern header without the
    // envelope, or envelope members missing; -32020: a mirrored header missing
    // or not matching the body; -32022: an unsupported revision.
    let envelope = |id: i64, method: &str, name: Option<&str>| {
        let mut params = json!({"_meta": meta()});
        if let Some(name) = name {
            params["name"] = json!(name);
            params["arguments"] = json!({});
        }
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    };
    let mut other_version = envelope(9, "server/discover", None);
    other_version["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] =
        json!("2099-01-01");
    let (version, method, name) = ("mcp-protocol-version", "mcp-method", "mcp-name");
    let bad = StatusCode::BAD_REQUEST;
    /// What is checked, the headers, the body, the status, the error code.
    type Case<'a> = (
        &'a str,
        Vec<(&'a str, &'a str)>,
        Value,
        StatusCode,
        Option<i64>,
    );
    let cases: Vec<Case> = vec![
        (
            "modern headers, no envelope",
            vec![(version, MODERN), (method, "tools/list")],
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
            bad,
            Some(-32602),
        ),
        (
            "missing Mcp-Method",
            vec![(version, MODERN)],
            envelope(5, "tools/list", None),
            bad,
            Some(-32020),
        ),
        (
            "mismatching Mcp-Method",
            vec![(version, MODERN), (method, "tools/call")],
            envelope(5, "tools/list", None),
            bad,
            Some(-32020),
        ),
        (
            "missing MCP-Protocol-Version",
            vec![(method, "tools/list")],
            envelope(5, "tools/list", None),
            bad,
            Some(-32020),
        ),
        (
            "missing Mcp-Name",
            vec![(version, MODERN), (method, "tools/call")],
            envelope(6, "tools/call", Some("beam_version")),
            bad,
            Some(-32020),
        ),
        (
            "mismatching Mcp-Name",
            vec![
                (version, MODERN),
                (method, "tools/call"),
                (name, "beam_stats"),
            ],
            envelope(7, "tools/call", Some("beam_version")),
            bad,
            Some(-32020),
        ),
        (
            "Mcp-Name base64-encoded",
            vec![
                (version, MODERN),
                (method, "tools/call"),
                (name, "=?base64?YmVhbV92ZXJzaW9u?="),
            ],
            envelope(8, "tools/call", Some("beam_version")),
            StatusCode::OK,
            None,
        ),
        (
            "the body's revision differs from the header's",
            vec![(version, MODERN), (method, "server/discover")],
            other_version.clone(),
            bad,
            Some(-32020),
        ),
        (
            "an unsupported revision in the header only",
            vec![(version, "2099-01-01"), (method, "tools/list")],
            json!({"jsonrpc": "2.0", "id": 10, "method": "tools/list"}),
            bad,
            Some(-32022),
        ),
        (
            "no client capabilities in the envelope",
            vec![(version, MODERN), (method, "server/discover")],
            json!({"jsonrpc": "2.0", "id": 11, "method": "server/discover", "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}}),
            bad,
            Some(-32602),
        ),
    ];
    for (what, headers, body, status, code) in cases {
        let response = post(port, &headers, &body).await;
        assert_eq!(response.status, status, "{what}: {}", response.text());
        match code {
            Some(code) => {
                assert_eq!(response.error_code(), code, "{what}");
                assert_eq!(response.json()["id"], body["id"], "{what}");
            }
            None => assert!(response.json().get("error").is_none(), "{what}"),
        }
    }

    // An unsupported revision names the supported ones: -32022, 400.
    let unsupported = post(
        port,
        &[(version, "2099-01-01"), (method, "server/discover")],
        &other_version,
    )
    .await;
    assert_eq!(unsupported.status, StatusCode::BAD_REQUEST);
    assert_eq!(unsupported.error_code(), -32022);
    assert_eq!(
        unsupported.json()["error"]["data"]["supported"],
        json!([MODERN])
    );
    assert_eq!(
        unsupported.json()["error"]["data"]["requested"],
        "2099-01-01"
    );

    // Unknown and removed methods: 404 with -32601.
    for method in ["unknown/method", "initialize", "ping", "logging/setLevel"] {
        let response = modern(port, 12, method, json!({}), &[]).await;
        assert_eq!(response.status, StatusCode::NOT_FOUND, "{method}");
        assert_eq!(response.error_code(), -32601, "{method}");
        assert_eq!(response.json()["id"], 12);
    }

    // Unknown tool: the core's -32602, 400 on this leg.
    let unknown = modern(
        port,
        13,
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
        &[],
    )
    .await;
    assert_eq!(
        (unknown.status, unknown.error_code()),
        (StatusCode::BAD_REQUEST, -32602)
    );

    // A parse error: -32700, 400.
    let parse = send(
        port,
        "POST",
        "/mcp",
        &[JSON, ("mcp-protocol-version", MODERN)],
        b"{".to_vec(),
    )
    .await;
    assert_eq!(
        (parse.status, parse.error_code()),
        (StatusCode::BAD_REQUEST, -32700)
    );

    // The call's progress streams in its POST's SSE response; JSON otherwise.
    let streamed = modern(port, 14, "tools/call", progress_call(), &[]).await;
    let events = streamed.events();
    assert_eq!(events[0]["method"], "notifications/progress");
    assert_eq!(events.last().unwrap()["id"], 14);
    assert_eq!(events.last().unwrap()["result"]["resultType"], "complete");
    let plain = modern(
        port,
        15,
        "tools/call",
        progress_call(),
        &[("accept", "application/json")],
    )
    .await;
    assert_eq!(plain.header("content-type"), Some("application/json"));
    assert_eq!(plain.json()["id"], 15);

    // No GET stream and no DELETE in this era.
    let get = send(
        port,
        "GET",
        "/mcp",
        &[
            ("accept", "text/event-stream"),
            ("mcp-protocol-version", MODERN),
        ],
        vec![],
    )
    .await;
    assert_eq!(get.status, StatusCode::METHOD_NOT_ALLOWED);
    let delete = send(
        port,
        "DELETE",
        "/mcp",
        &[("mcp-protocol-version", MODERN)],
        vec![],
    )
    .await;
    assert_eq!(delete.status, StatusCode::METHOD_NOT_ALLOWED);

    let health = send(port, "GET", "/health", &[], vec![]).await.json();
    assert_eq!(health["sessions"], 0, "modern requests create no session");
    assert!(health["requests"]["modern"].as_u64().unwrap() >= 20);
    assert!(
        !server.log().iter().any(|l| l.contains("ERROR")),
        "{:#?}",
        server.log()
    );
}

#[tokio::test]
async fn dns_rebinding_is_refused_and_cors_is_answered() {
    let server = Server::start(&["--allowed-origin", "https://app.example"]);
    let port = server.port;
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}});
    fn headers<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut h = vec![
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "server/discover"),
        ];
        h.extend_from_slice(extra);
        h
    }

    let rebound = post(
        port,
        &headers(&[
            ("host", "evil.example.com"),
            ("origin", "http://evil.example.com"),
        ]),
        &discover,
    )
    .await;
    assert_eq!(rebound.status, StatusCode::FORBIDDEN);
    assert!(
        rebound.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("DNS-rebinding")
    );
    let bad_origin = post(
        port,
        &headers(&[("origin", "http://evil.example.com")]),
        &discover,
    )
    .await;
    assert_eq!(bad_origin.status, StatusCode::FORBIDDEN);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "c"}}});
    let legacy_rebound = post(port, &[("host", "evil.example.com")], &init).await;
    assert_eq!(legacy_rebound.status, StatusCode::FORBIDDEN);
    assert_eq!(
        send(
            port,
            "GET",
            "/health",
            &[("host", "evil.example.com")],
            vec![]
        )
        .await
        .status,
        StatusCode::FORBIDDEN
    );

    let local = format!("http://localhost:{port}");
    let authority = format!("localhost:{port}");
    let ok = post(
        port,
        &headers(&[("host", &authority), ("origin", &local)]),
        &discover,
    )
    .await;
    assert_eq!(ok.status, StatusCode::OK);
    assert_eq!(
        ok.header("access-control-allow-origin"),
        Some(local.as_str())
    );
    let exposed = ok.header("access-control-expose-headers").unwrap();
    for name in [
        "Mcp-Session-Id",
        "MCP-Protocol-Version",
        "Mcp-Method",
        "Mcp-Name",
        "Last-Event-Id",
    ] {
        assert!(exposed.contains(name), "{name} exposed");
    }
    let configured = post(
        port,
        &headers(&[("origin", "https://app.example")]),
        &discover,
    )
    .await;
    assert_eq!(configured.status, StatusCode::OK);

    let preflight = send(
        port,
        "OPTIONS",
        "/mcp",
        &[
            ("origin", "https://app.example"),
            ("access-control-request-method", "POST"),
            (
                "access-control-request-headers",
                "content-type, mcp-param-region",
            ),
        ],
        vec![],
    )
    .await;
    assert_eq!(preflight.status, StatusCode::NO_CONTENT);
    let allowed = preflight.header("access-control-allow-headers").unwrap();
    assert!(
        allowed.contains("mcp-param-region")
            && allowed.contains("Mcp-Session-Id")
            && allowed.contains("Mcp-Name")
    );
    assert!(
        preflight
            .header("access-control-allow-methods")
            .unwrap()
            .contains("DELETE")
    );
    let log = server.log();
    assert!(
        log.iter().any(|l| l.contains("WARN") && l.contains("403")),
        "{log:#?}"
    );
}

/// Only the bound authority and the loopback names with the bound port pass
/// the guard (not `localhost:*`); two Host headers are malformed (RFC 9112);
/// every Origin header is checked, not only the first.
#[tokio::test]
async fn the_guard_accepts_only_the_bound_authorities() {
    let server = Server::start(&[]);
    let port = server.port;
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}});
    let call = |extra: Vec<(String, String)>| {
        let discover = discover.clone();
        async move {
            let mut headers = vec![
                ("mcp-protocol-version".to_string(), MODERN.to_string()),
                ("mcp-method".to_string(), "server/discover".to_string()),
            ];
            headers.extend(extra);
            let headers: Vec<(&str, &str)> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            post(port, &headers, &discover).await
        }
    };
    let h = |k: &str, v: String| (k.to_string(), v);
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ] {
        let ok = call(vec![
            h("host", host.clone()),
            h("origin", format!("http://{host}")),
        ])
        .await;
        assert_eq!(ok.status, StatusCode::OK, "{host}: {}", ok.text());
    }
    let other = port.wrapping_add(1).max(1);
    for host in [
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        format!("localhost:{other}"),
        format!("127.0.0.1:{other}"),
    ] {
        let refused = call(vec![h("host", host.clone())]).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{host}");
        assert_eq!(refused.error_code(), -32600);
    }
    // A page served by another local program is another origin.
    for origin in [
        "http://localhost:3000".to_string(),
        format!("http://localhost:{other}"),
        "http://localhost".to_string(),
    ] {
        let refused = call(vec![h("origin", origin.clone())]).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{origin}");
    }
    // Two Host headers: 400, even when both are allowed.
    let host = format!("127.0.0.1:{port}");
    let twice = call(vec![h("host", host.clone()), h("host", host.clone())]).await;
    assert_eq!(twice.status, StatusCode::BAD_REQUEST, "{}", twice.text());
    assert!(
        twice.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Host"),
        "{}",
        twice.text()
    );
    // A second Origin header is checked too.
    let origins = call(vec![
        h("origin", format!("http://{host}")),
        h("origin", "http://evil.example.com".into()),
    ])
    .await;
    assert_eq!(origins.status, StatusCode::FORBIDDEN);
    assert!(!server.log().iter().any(|l| l.contains("ERROR")));
}

/// With a token, every request but `/health` (and CORS preflights, which never
/// carry credentials) needs `Authorization: Bearer <token>`, from the
/// environment or from a file.
#[tokio::test]
async fn a_bearer_token_is_required_on_every_request_but_health() {
    const TOKEN: &str = "beam-test-token-3f9c2a";
    let dir = std::env::temp_dir().join(format!("beam-token-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("token");
    std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
    let from_env = Server::start_with(&["127.0.0.1:0"], &[], &[("LEAN_BEAM_HTTP_TOKEN", TOKEN)]);
    let from_file = Server::start_with(
        &["127.0.0.1:0"],
        &["--http-token-file", file.to_str().unwrap()],
        &[],
    );
    let bearer = format!("Bearer {TOKEN}");
    for server in [&from_env, &from_file] {
        let port = server.port;
        let discover = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "server/discover", "params": {"_meta": meta()}});
        let mirrored = [
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "server/discover"),
        ];
        for credentials in [
            None,
            Some("Bearer wrong-token"),
            Some("Bearer beam-test-token-3f9c2"),
            Some("Basic YmVhbTp0b2tlbg=="),
            Some(TOKEN),
        ] {
            let mut headers = mirrored.to_vec();
            if let Some(c) = credentials {
                headers.push(("authorization", c));
            }
            let refused = post(port, &headers, &discover(1)).await;
            assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{credentials:?}");
            assert_eq!(refused.error_code(), -32600);
            assert!(
                refused
                    .header("www-authenticate")
                    .unwrap()
                    .starts_with("Bearer")
            );
            assert!(
                !refused.text().contains(TOKEN),
                "the answer never shows the token"
            );
        }
        let mut headers = mirrored.to_vec();
        headers.push(("authorization", &bearer));
        let ok = post(port, &headers, &discover(2)).await;
        assert_eq!(ok.status, StatusCode::OK, "{}", ok.text());

        // The legacy era too, on every method of /mcp.
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "c"}}});
        assert_eq!(
            post(port, &[], &init).await.status,
            StatusCode::UNAUTHORIZED
        );
        let session = post(port, &[("authorization", &bearer)], &init).await;
        assert_eq!(session.status, StatusCode::OK);
        let sid = session.header("mcp-session-id").unwrap().to_string();
        for method in ["GET", "DELETE"] {
            let response = send(
                port,
                method,
                "/mcp",
                &[("mcp-session-id", &sid), ("accept", "text/event-stream")],
                vec![],
            )
            .await;
            assert_eq!(response.status, StatusCode::UNAUTHORIZED, "{method}");
        }
        let delete = send(
            port,
            "DELETE",
            "/mcp",
            &[("mcp-session-id", &sid), ("authorization", &bearer)],
            vec![],
        )
        .await;
        assert_eq!(delete.status, StatusCode::OK);

        // Health checks of a load balancer need no token.
        let health = send(port, "GET", "/health", &[], vec![]).await;
        assert_eq!(health.status, StatusCode::OK);
        let preflight = send(
            port,
            "OPTIONS",
            "/mcp",
            &[
                ("origin", &format!("http://127.0.0.1:{port}")),
                ("access-control-request-method", "POST"),
                ("access-control-request-headers", "authorization"),
            ],
            vec![],
        )
        .await;
        assert_eq!(preflight.status, StatusCode::NO_CONTENT);
        // Only what serves something is guarded: an unknown path is 404.
        let unknown = send(port, "GET", "/elsewhere", &[], vec![]).await;
        assert_eq!(unknown.status, StatusCode::NOT_FOUND);
        assert!(
            !server.log().iter().any(|l| l.contains(TOKEN)),
            "the token is never logged"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client without the token is told what to configure instead of being sent
/// into an OAuth maze: the OAuth discovery and registration paths answer 404
/// (there is no OAuth here) whatever the credentials, `/mcp` answers 401 with
/// `WWW-Authenticate: Bearer` and a message naming the header. What ordinary
/// clients send while probing (OAuth discovery, no credentials yet, a `GET`
/// stream without `text/event-stream` or without a session, a modern `GET`)
/// logs nothing at the default level; a wrong token does (a misconfiguration).
#[tokio::test]
async fn a_client_without_the_token_is_told_the_header_and_not_sent_to_oauth() {
    const TOKEN: &str = "probe-token-5d1e";
    let server = Server::start_with(&["127.0.0.1:0"], &[], &[("LEAN_BEAM_HTTP_TOKEN", TOKEN)]);
    let port = server.port;
    let bearer = format!("Bearer {TOKEN}");
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-authorization-server/mcp",
        "/.well-known/openid-configuration",
    ] {
        for credentials in [None, Some(bearer.as_str()), Some("Bearer wrong")] {
            let headers: Vec<_> = credentials
                .map(|c| ("authorization", c))
                .into_iter()
                .collect();
            let response = send(port, "GET", path, &headers, vec![]).await;
            assert_eq!(
                response.status,
                StatusCode::NOT_FOUND,
                "{path} {credentials:?}"
            );
            assert!(response.header("www-authenticate").is_none(), "{path}");
            let message = response.json()["error"]["message"]
                .as_str()
                .unwrap()
                .to_string();
            assert!(
                message.contains("no OAuth") && message.contains("Authorization: Bearer <token>"),
                "{path}: {message}"
            );
        }
    }
    let register = json!({"client_name": "host", "redirect_uris": ["http://127.0.0.1:1/cb"]});
    let response = post(port, &[], &register).await;
    // `post` goes to /mcp; registration is its own path.
    assert_eq!(response.status, StatusCode::UNAUTHORIZED);
    let response = send(
        port,
        "POST",
        "/register",
        &[JSON],
        register.to_string().into_bytes(),
    )
    .await;
    assert_eq!(
        response.status,
        StatusCode::NOT_FOUND,
        "{}",
        response.text()
    );

    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "c"}}});
    for (credentials, says) in [
        (None, "carried none"),
        (Some("Bearer wrong"), "wrong bearer token"),
    ] {
        let headers: Vec<_> = credentials
            .map(|c| ("authorization", c))
            .into_iter()
            .collect();
        let refused = post(port, &headers, &init).await;
        assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{credentials:?}");
        assert!(
            refused
                .header("www-authenticate")
                .unwrap()
                .starts_with("Bearer"),
            "{credentials:?}"
        );
        let message = refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            message.contains("`Authorization: Bearer <token>`") && message.contains(says),
            "{message}"
        );
    }
    // GET probes with the token: no SSE accepted, no session, a modern GET.
    let auth = ("authorization", bearer.as_str());
    let no_sse = send(
        port,
        "GET",
        "/mcp",
        &[auth, ("accept", "application/json")],
        vec![],
    )
    .await;
    assert_eq!(no_sse.status, StatusCode::NOT_ACCEPTABLE);
    let no_session = send(
        port,
        "GET",
        "/mcp",
        &[auth, ("accept", "text/event-stream")],
        vec![],
    )
    .await;
    assert_eq!(no_session.status, StatusCode::BAD_REQUEST);
    let modern_get = send(
        port,
        "GET",
        "/mcp",
        &[
            auth,
            ("accept", "text/event-stream"),
            ("mcp-protocol-version", MODERN),
        ],
        vec![],
    )
    .await;
    assert_eq!(modern_get.status, StatusCode::METHOD_NOT_ALLOWED);
    // A refusal that does warn marks the end of the log to judge: stderr is
    // one pipe, so once its line is read every earlier line is too.
    let put = send(port, "PUT", "/mcp", &[auth], vec![]).await;
    assert_eq!(put.status, StatusCode::METHOD_NOT_ALLOWED);
    let warnings = server.log_until(|l| l.contains("refused PUT /mcp"));
    let warnings: Vec<_> = warnings
        .into_iter()
        .filter(|l| l.contains("WARN") || l.contains("ERROR"))
        .collect();
    assert_eq!(
        warnings.len(),
        2,
        "only the wrong token warns: {warnings:#?}"
    );
    assert!(warnings[0].contains("wrong bearer token"), "{warnings:#?}");
    assert!(!server.log().iter().any(|l| l.contains(TOKEN)));
}

/// `--http` on an address other clients can reach refuses to start without a
/// token, and serves with one.
#[tokio::test]
async fn a_non_loopback_address_needs_a_token() {
    let refused = Command::new(env!("CARGO_BIN_EXE_lean-beam-mcp"))
        .args(["--http", "0.0.0.0:0"])
        .env_remove("LEAN_BEAM_HTTP_TOKEN")
        .stdin(Stdio::null())
        .output()
        .expect("run lean-beam-mcp");
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("LEAN_BEAM_HTTP_TOKEN") && stderr.contains("--http-token-file"),
        "{stderr}"
    );

    const TOKEN: &str = "wildcard-token-77";
    let server = Server::start_with(&["0.0.0.0:0"], &[], &[("LEAN_BEAM_HTTP_TOKEN", TOKEN)]);
    let port = server.port;
    let bearer = format!("Bearer {TOKEN}");
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}});
    let headers = [
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "server/discover"),
        ("authorization", bearer.as_str()),
    ];
    let ok = post(port, &headers, &discover).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.text());
    assert_eq!(
        post(port, &headers[..2], &discover).await.status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn oversized_bodies_are_413_in_both_eras() {
    let server = Server::start(&[]);
    let port = server.port;
    let big = vec![b' '; 12 * 1024 * 1024];
    let legacy = send(port, "POST", "/mcp", &[JSON], big.clone()).await;
    assert_eq!(legacy.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(legacy.error_code(), -32600);
    let modern = send(
        port,
        "POST",
        "/mcp",
        &[
            JSON,
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/list"),
        ],
        big,
    )
    .await;
    assert_eq!(modern.status, StatusCode::PAYLOAD_TOO_LARGE);
    // Just under the limit is read (and here refused as JSON, not as size).
    let mut under = vec![b' '; 10 * 1024 * 1024 - 64];
    under.extend_from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let fits = send(port, "POST", "/mcp", &[JSON], under).await;
    assert_eq!(
        fits.status,
        StatusCode::BAD_REQUEST,
        "no session, but read: {}",
        fits.text()
    );
    assert!(
        !server.log().iter().any(|l| l.contains("ERROR")),
        "{:#?}",
        server.log()
    );
}

/// A slow-body flood: connections past `--max-connections` are answered 503
/// and closed, the held ones get 408 once `--body-timeout-secs` has passed, and
/// the server keeps serving. Descriptors stay within the cap, and body buffers
/// grow with the data received, not with the 10 MiB each request declares
/// (before: every connection was accepted and reserved its declared length;
/// 1200 of them took the server from 16 to 500 MiB and to its descriptor limit).
#[tokio::test]
async fn slow_bodies_are_bounded_by_the_connection_cap_and_the_body_timeout() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const CAP: usize = 64;
    const CLIENTS: usize = 100;
    let server = Server::start(&[
        "--max-connections",
        &CAP.to_string(),
        "--body-timeout-secs",
        "3",
    ]);
    let port = server.port;
    let pid = server.child.id();
    let (rss_before, data_before, fds_before) = (
        procfs::rss(pid),
        procfs::status_kb(pid, "VmData").unwrap(),
        procfs::fd_count(pid),
    );
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        10 * 1024 * 1024
    );
    let (status_tx, mut statuses_rx) = tokio::sync::mpsc::unbounded_channel();
    for _ in 0..CLIENTS {
        let head = head.clone();
        let status = status_tx.clone();
        tokio::spawn(async move {
            let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
            stream.write_all(head.as_bytes()).await.unwrap();
            stream.write_all(&vec![b' '; 64 * 1024]).await.unwrap();
            let mut answer = Vec::new();
            let read =
                tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer))
                    .await;
            assert!(read.is_ok(), "no answer within 20 s");
            let code = String::from_utf8_lossy(&answer)
                .split(' ')
                .nth(1)
                .unwrap_or("none")
                .to_string();
            let _ = status.send(code);
        });
    }
    let mut statuses = std::collections::BTreeMap::<String, usize>::new();
    // The connections over the cap are answered at once: by then every
    // connection has been accepted, and the rest are held.
    for _ in 0..CLIENTS - CAP {
        *statuses
            .entry(statuses_rx.recv().await.unwrap())
            .or_default() += 1;
    }
    // The refused sockets close as their clients read the answer (a wait on
    // that event; its limit only stops a hang).
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while procfs::fd_count(pid) > fds_before + CAP && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (rss_held, data_held, fds_held) = (
        procfs::rss(pid),
        procfs::status_kb(pid, "VmData").unwrap(),
        procfs::fd_count(pid),
    );
    eprintln!(
        "{CLIENTS} slow bodies (64 KiB of a declared 10 MiB each), cap {CAP}: RSS {} -> {} KiB, VmData {} -> {} KiB, fds {fds_before} -> {fds_held}",
        rss_before / 1024,
        rss_held / 1024,
        data_before / 1024,
        data_held / 1024
    );
    assert_eq!(statuses.get("503"), Some(&(CLIENTS - CAP)), "{statuses:?}");
    assert!(
        fds_held <= fds_before + CAP,
        "{fds_held} descriptors open (cap {CAP})"
    );
    assert!(
        data_held.saturating_sub(data_before) < 200 * 1024 * 1024,
        "VmData grew by {} MiB: buffers sized by the declared length",
        (data_held - data_before) / (1024 * 1024)
    );
    assert!(
        rss_held.saturating_sub(rss_before) < 64 * 1024 * 1024,
        "RSS grew by {} MiB",
        (rss_held - rss_before) / (1024 * 1024)
    );
    for _ in 0..CAP {
        *statuses
            .entry(statuses_rx.recv().await.unwrap())
            .or_default() += 1;
    }
    assert_eq!(
        statuses,
        [("408".to_string(), CAP), ("503".to_string(), CLIENTS - CAP)]
            .into_iter()
            .collect(),
        "{statuses:?}"
    );
    // Serving again, and counting.
    let health = send(port, "GET", "/health", &[], vec![]).await.json();
    // Refused for want of a slot once their heads came, or evicted while
    // pending (at most one per accept past CAP pending): CLIENTS - CAP in all.
    let refused = health["refusedConnections"].as_u64().unwrap();
    let evicted = health["evictedConnections"].as_u64().unwrap();
    assert_eq!(refused + evicted, (CLIENTS - CAP) as u64, "{health}");
    assert_eq!(health["limits"]["maxConnections"], CAP as u64);
    let log = server.log();
    assert!(!log.iter().any(|l| l.contains("ERROR")), "{log:#?}");
    assert!(log.iter().any(|l| l.contains("408")), "{log:#?}");
}

/// With a token, connections that have not yet sent a request with it are
/// bounded apart from the authorized ones: a flood of token-less slow heads,
/// twice `--max-connections`, does not lock out a client with the token (the
/// flood's oldest connections are evicted with 503 as new ones come; before,
/// the authorized client got 503 until the header timeout).
#[tokio::test]
async fn a_token_less_flood_cannot_lock_out_a_client_with_the_token() {
    use tokio::io::AsyncWriteExt;
    const TOKEN: &str = "flood-token-0c4b";
    const CAP: usize = 8;
    let server = Server::start_with(
        &["127.0.0.1:0"],
        &[
            "--max-connections",
            &CAP.to_string(),
            // Far longer than the test: the flood is never timed out.
            "--body-timeout-secs",
            "600",
        ],
        &[("LEAN_BEAM_HTTP_TOKEN", TOKEN)],
    );
    let port = server.port;
    let partial = format!("POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: appl");
    let mut flood = Vec::new();
    for _ in 0..2 * CAP {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream.write_all(partial.as_bytes()).await.unwrap();
        flood.push(stream);
    }
    // Every flood connection accepted: the pending ones are at the cap, and
    // every one past it evicted one (a health check's own connection is
    // pending too, and evicts one more).
    let health = until_health(port, |h| {
        h["evictedConnections"].as_u64().unwrap() >= CAP as u64
    })
    .await;
    assert_eq!(health["pendingConnections"], CAP as u64, "{health}");
    assert_eq!(health["connections"], 0, "{health}");
    let bearer = format!("Bearer {TOKEN}");
    for id in 0..3 {
        let version = modern(
            port,
            id,
            "tools/call",
            json!({"name": "beam_version", "arguments": {}}),
            &[("accept", "application/json"), ("authorization", &bearer)],
        )
        .await;
        assert_eq!(version.status, StatusCode::OK, "{}", version.text());
        assert_eq!(version.json()["result"]["isError"], false);
    }
    // A token-less request is still answered 401, and proves nothing.
    let refused = modern(port, 9, "server/discover", json!({}), &[]).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    let health = send(port, "GET", "/health", &[], vec![]).await.json();
    assert_eq!(health["refusedConnections"], 0, "{health}");
    // The oldest flood connection was told why it was closed.
    let mut oldest = flood.remove(0);
    let mut answer = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut oldest, &mut answer)
        .await
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 503") && answer.contains("waited the longest"),
        "{answer}"
    );
}

/// A chunked body sent a byte per chunk is read whole (the pieces it is kept
/// in are joined exactly).
#[tokio::test]
async fn a_body_in_one_byte_chunks_is_read_exactly() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = Server::start(&[]);
    let port = server.port;
    let mut body = json!({"jsonrpc": "2.0", "id": "chunks", "method": "server/discover",
        "params": {"_meta": meta(), "pad": "x".repeat(40_000)}})
    .to_string();
    // `pad` is not a discover member: the answer names it, proving every byte arrived.
    body.push(' ');
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\nmcp-protocol-version: {MODERN}\r\nmcp-method: server/discover\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    );
    for byte in body.chars() {
        request.push_str(&format!("1\r\n{byte}\r\n"));
    }
    request.push_str("0\r\n\r\n");
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer))
        .await
        .expect("an answer within 20 s")
        .unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let json: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(json["id"], "chunks", "{answer}");
    assert!(
        json["error"]["message"].as_str().unwrap().contains("`pad`"),
        "{answer}"
    );
}

/// At most `--max-sessions` legacy sessions: a new one replaces the one idle
/// the longest; with every session attended (a call or a stream open) a new
/// one is refused with 503.
#[tokio::test]
async fn legacy_sessions_are_capped_oldest_idle_first() {
    let server = Server::start(&["--max-sessions", "2"]);
    let port = server.port;
    let first = legacy_session(port).await;
    let second = legacy_session(port).await;
    // `second` is used after `first`: `first` has been idle longer.
    assert_eq!(
        legacy(port, &second, 1, "ping", json!({}), &[])
            .await
            .status,
        StatusCode::OK
    );
    let third = legacy_session(port).await;
    let gone = legacy(port, &first, 2, "ping", json!({}), &[]).await;
    assert_eq!(
        gone.status,
        StatusCode::NOT_FOUND,
        "the oldest idle session made room"
    );
    assert_eq!(
        legacy(port, &second, 3, "ping", json!({}), &[])
            .await
            .status,
        StatusCode::OK
    );
    // Both sessions hold a stream: nothing is idle, so a new session is refused.
    let mut streams = Vec::new();
    for sid in [&second, &third] {
        let stream = open(
            port,
            "GET",
            "/mcp",
            &[("accept", "text/event-stream"), ("mcp-session-id", sid)],
            vec![],
        )
        .await;
        assert_eq!(stream.status(), StatusCode::OK);
        streams.push(stream);
    }
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "late"}}});
    let refused = post(port, &[ACCEPT_BOTH], &init).await;
    assert_eq!(
        refused.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        refused.text()
    );
    assert!(refused.header("mcp-session-id").is_none());
    assert!(
        refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-sessions")
    );
    let health = send(port, "GET", "/health", &[], vec![]).await.json();
    assert_eq!(health["sessions"], 2);
    assert_eq!(health["limits"]["maxSessions"], 2);
    drop(streams);
}

#[tokio::test]
async fn health_routes_and_methods() {
    let server = Server::start(&[]);
    let port = server.port;
    let health = send(port, "GET", "/health", &[], vec![]).await;
    assert_eq!(health.status, StatusCode::OK);
    let body = health.json();
    assert_eq!(body["status"], "ok");
    for key in ["uptimeMs", "sessions", "streams"] {
        assert!(body[key].is_u64(), "{key}: {body}");
    }
    assert!(body["requests"]["legacy"].is_u64() && body["requests"]["modern"].is_u64());
    assert_eq!(
        send(port, "GET", "/elsewhere", &[], vec![]).await.status,
        StatusCode::NOT_FOUND
    );
    let put = send(port, "PUT", "/mcp", &[], vec![]).await;
    assert_eq!(put.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(put.header("allow").unwrap().contains("POST"));
}

#[tokio::test]
async fn sigterm_closes_streams_and_exits_cleanly() {
    let mut server = Server::start(&[]);
    let port = server.port;
    let sid = legacy_session(port).await;
    let stream = open(
        port,
        "GET",
        "/mcp",
        &[("accept", "text/event-stream"), ("mcp-session-id", &sid)],
        vec![],
    )
    .await;
    let mut body = stream.into_body();
    let status = tokio::task::spawn_blocking(move || {
        let status = server.terminate();
        (status, server)
    });
    let end = tokio::time::timeout(Duration::from_secs(5), body.frame())
        .await
        .expect("the stream closes");
    assert!(end.is_none() || end.unwrap().is_err());
    let (status, server) = status.await.unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        server.log().iter().any(|l| l.contains("stopped")),
        "{:#?}",
        server.log()
    );
}

// ---------------------------------------------------------------------------
// The official Python SDK over HTTP with the real Lean broker.

#[test]
fn official_python_client_calls_lean_sync_over_http() {
    let Some(l) = common::lean::lean_or_skip() else {
        return;
    };
    let stdout = l.run_python_client("lean_sync_http.py");
    for mode in [
        "mode=2026-07-28 protocol=2026-07-28",
        "mode=legacy protocol=2025-11-25",
        "mode=auto protocol=2026-07-28",
    ] {
        assert!(
            stdout.contains(&format!("OK lean_sync over http {mode}")),
            "{stdout}"
        );
    }
}

// ---------------------------------------------------------------------------
// In process, with gated operations (tests/common/gated.rs): tools whose root
// is `/gate/NAME` run until the test opens gate NAME. Fairness between
// clients and the scope of the drop fence.

use common::gated::{Event, Gated};
use lean_beam_mcp::http::{self, HttpConfig};
use lean_beam_mcp::mcp::config::Config;
use lean_beam_mcp::mcp::dispatcher::Dispatcher;
use lean_beam_mcp::stats::Stats;

/// `lean-beam-mcp --http` served in this process over gated operations.
/// Its port is one of the [`DOUBLES`] while it lives.
struct InProcess {
    port: u16,
    ops: Arc<Gated>,
    events: tokio::sync::mpsc::UnboundedReceiver<Event>,
    dispatcher: Arc<Dispatcher<Gated>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl InProcess {
    async fn start(core: Config, config: HttpConfig) -> InProcess {
        let (ops, events) = Gated::with_events();
        let core = Config {
            status_delay: Duration::from_secs(3600),
            ..core
        };
        let dispatcher = Dispatcher::new(Arc::clone(&ops), Arc::new(Stats::default()), core);
        let listener = http::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        DOUBLES.lock().unwrap().push(port);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(http::serve(
            Arc::clone(&dispatcher),
            config,
            listener,
            async move {
                let _ = stopped.await;
            },
        ));
        InProcess {
            port,
            ops,
            events,
            dispatcher,
            _stop: stop,
        }
    }

    async fn event(&mut self) -> Event {
        tokio::time::timeout(Duration::from_secs(20), self.events.recv())
            .await
            .expect("no operation event within the failure guard")
            .expect("event channel open")
    }

    /// Wait until `n` calls are admitted (running or waiting for a slot): on
    /// the dispatcher's own count as it changes (its limit only stops a
    /// hang).
    async fn until_admitted(&self, n: usize) {
        let mut admitted = self.dispatcher.admitted_changes();
        let reached = tokio::time::timeout(Duration::from_secs(20), admitted.wait_for(|a| *a == n))
            .await
            .map(|r| r.is_ok())
            .unwrap_or(false);
        assert!(
            reached,
            "{} calls admitted, expected {n}",
            self.dispatcher.admitted()
        );
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        DOUBLES.lock().unwrap().retain(|p| *p != self.port);
    }
}

fn gated_sync(gate: &str) -> Value {
    json!({"name": "lean_sync", "arguments": {"workspace": {"root": format!("/gate/{gate}")}, "path": "Main.lean"}})
}

fn gated_drop(gate: &str) -> Value {
    json!({"name": "lean_drop_workspace", "arguments": {"workspace": {"root": format!("/gate/{gate}")}}})
}

/// A JSON-only request in the background (its response is the call's answer).
fn spawn_legacy(port: u16, sid: &str, id: i64, params: Value) -> tokio::task::JoinHandle<Response> {
    let sid = sid.to_string();
    tokio::spawn(async move {
        legacy(
            port,
            &sid,
            id,
            "tools/call",
            params,
            &[("accept", "application/json")],
        )
        .await
    })
}

fn spawn_modern(port: u16, id: i64, params: Value) -> tokio::task::JoinHandle<Response> {
    tokio::spawn(async move {
        modern(
            port,
            id,
            "tools/call",
            params,
            &[("accept", "application/json")],
        )
        .await
    })
}

fn tool_of(response: &Response) -> String {
    let body = response.json();
    assert_eq!(body["result"]["isError"], false, "{body}");
    body["result"]["structuredContent"]["tool"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The answers of background requests, as they come.
fn as_they_come(
    calls: Vec<tokio::task::JoinHandle<Response>>,
) -> tokio::sync::mpsc::UnboundedReceiver<Response> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    for call in calls {
        let tx = tx.clone();
        tokio::spawn(async move {
            let _ = tx.send(call.await.unwrap());
        });
    }
    rx
}

/// A call refused for its client's share: 429 with `Retry-After`, the
/// connection closed, and a JSON-RPC error saying nothing was done.
fn assert_too_many_calls(response: &Response) {
    assert_eq!(
        response.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        response.text()
    );
    assert_eq!(response.header("retry-after"), Some("1"));
    assert_eq!(response.header("connection"), Some("close"));
    assert_eq!(response.error_code(), -32030);
    assert!(
        response.text().contains("nothing of this call was done"),
        "{}",
        response.text()
    );
}

/// Wait until at most `n` proved connections are open (the watcher's own
/// connection among them).
async fn until_connections_at_most(port: u16, n: u64) {
    until_health(port, |h| h["connections"].as_u64().unwrap() <= n).await;
}

/// One client's 256 slow calls leave room for the others, at the default
/// limits (256 connections, 64 calls running per client): a legacy session
/// runs its share, holds as many again waiting, and the rest of its calls are
/// refused at once (429), so they hold neither a slot nor a connection;
/// another session's Lean call runs, and `beam_version` is answered in both
/// eras (before: the 256 calls held every connection, and the other client's
/// `beam_version` got 503).
#[tokio::test]
async fn one_clients_slow_calls_do_not_block_another_client() {
    let mut server = InProcess::start(Config::default(), HttpConfig::default()).await;
    let port = server.port;
    let health = send(port, "GET", "/health", &[], vec![]).await.json();
    assert_eq!(health["limits"]["maxInFlight"], 256);
    assert_eq!(health["limits"]["maxInFlightPerClient"], 64);
    assert_eq!(health["limits"]["maxConnections"], 256);

    let greedy = legacy_session(port).await;
    let slow: Vec<_> = (0..256)
        .map(|i| spawn_legacy(port, &greedy, 1000 + i, gated_sync("slow")))
        .collect();
    let mut answers = as_they_come(slow);
    for _ in 0..128 {
        assert_too_many_calls(&answers.recv().await.unwrap());
    }
    server.until_admitted(128).await;
    for _ in 0..64 {
        assert!(matches!(
            server.event().await,
            Event::Started("lean_sync", _)
        ));
    }
    assert_eq!(server.ops.running(), 64, "a session runs at most its share");
    until_connections_at_most(port, 128 + 1).await;

    // Another legacy session: its Lean call runs and answers.
    let other = legacy_session(port).await;
    server.ops.open("fast");
    let fast = legacy(
        port,
        &other,
        1,
        "tools/call",
        gated_sync("fast"),
        &[("accept", "application/json")],
    )
    .await;
    assert_eq!(tool_of(&fast), "lean_sync");
    assert_eq!(server.event().await, Event::Started("lean_sync", json!(1)));
    let version = legacy(
        port,
        &other,
        2,
        "tools/call",
        json!({"name": "beam_version", "arguments": {}}),
        &[],
    )
    .await;
    assert_eq!(tool_of(&version), "beam_version");
    // A sessionless client too.
    let modern_version = modern(
        port,
        3,
        "tools/call",
        json!({"name": "beam_version", "arguments": {}}),
        &[("accept", "application/json")],
    )
    .await;
    assert_eq!(tool_of(&modern_version), "beam_version");

    server.ops.open("slow");
    for _ in 0..128 {
        assert_eq!(tool_of(&answers.recv().await.unwrap()), "lean_sync");
    }
    server.until_admitted(0).await;
}

/// A 2026-07-28 client flooding one workspace from many connections runs at
/// most the workspace's share there, so another client's call on another
/// workspace gets a slot at once (before: the flood took every global slot,
/// and the other call waited for one of them to finish, 13.5 s where it took
/// 0.02 s alone).
#[tokio::test]
async fn a_sessionless_flood_on_one_root_leaves_slots_for_other_roots() {
    let mut server = InProcess::start(
        Config {
            max_in_flight: 8,
            max_in_flight_per_client: 4,
            ..Config::default()
        },
        HttpConfig::default(),
    )
    .await;
    let port = server.port;
    let flood: Vec<_> = (0..12)
        .map(|i| spawn_modern(port, 100 + i, gated_sync("flood")))
        .collect();
    let mut answers = as_they_come(flood);
    // 4 run, 4 wait for the root's share, 4 are refused at once.
    for _ in 0..4 {
        assert_too_many_calls(&answers.recv().await.unwrap());
    }
    server.until_admitted(8).await;
    for _ in 0..4 {
        assert!(matches!(
            server.event().await,
            Event::Started("lean_sync", _)
        ));
    }
    assert_eq!(server.ops.running(), 4);
    // Another workspace's call runs while the flood holds its share.
    server.ops.open("other");
    let other = modern(
        port,
        1,
        "tools/call",
        gated_sync("other"),
        &[("accept", "application/json")],
    )
    .await;
    assert_eq!(tool_of(&other), "lean_sync");
    assert_eq!(server.event().await, Event::Started("lean_sync", json!(1)));
    server.ops.open("flood");
    for _ in 0..8 {
        assert_eq!(tool_of(&answers.recv().await.unwrap()), "lean_sync");
    }
    server.until_admitted(0).await;
}

/// Even when one client holds every global slot (sessionless requests, one
/// connection each), a `beam_version` of another client is answered: it holds
/// no slot.
#[tokio::test]
async fn beam_version_is_answered_when_every_slot_is_taken() {
    let mut server = InProcess::start(
        Config {
            max_in_flight: 8,
            ..Config::default()
        },
        HttpConfig::default(),
    )
    .await;
    let port = server.port;
    let slow: Vec<_> = (0..12)
        .map(|i| spawn_modern(port, 100 + i, gated_sync("held")))
        .collect();
    server.until_admitted(12).await;
    for _ in 0..8 {
        assert!(matches!(
            server.event().await,
            Event::Started("lean_sync", _)
        ));
    }
    let version = modern(
        port,
        1,
        "tools/call",
        json!({"name": "beam_version", "arguments": {}}),
        &[("accept", "application/json")],
    )
    .await;
    assert_eq!(tool_of(&version), "beam_version");
    server.ops.open("held");
    for call in slow {
        assert_eq!(tool_of(&call.await.unwrap()), "lean_sync");
    }
}

/// Over HTTP the drop fence covers the calls of the same legacy session (its
/// stream), and, for sessionless requests, the calls on the same root: a drop
/// never stalls another client's calls on other roots.
#[tokio::test]
async fn the_drop_fence_covers_one_session_or_one_root() {
    let mut server = InProcess::start(Config::default(), HttpConfig::default()).await;
    let port = server.port;

    // Legacy: session A's call is slow; session B's drop does not wait for it.
    let a = legacy_session(port).await;
    let b = legacy_session(port).await;
    let slow_a = spawn_legacy(port, &a, 1, gated_sync("legacy-a"));
    assert_eq!(server.event().await, Event::Started("lean_sync", json!(1)));
    server.ops.open("legacy-d");
    let dropped = legacy(port, &b, 2, "tools/call", gated_drop("legacy-d"), &[]).await;
    assert_eq!(tool_of(&dropped), "lean_drop_workspace");
    assert_eq!(
        server.event().await,
        Event::Started("lean_drop_workspace", json!(2))
    );
    // Session A's own drop waits for A's earlier call, on any root.
    let drop_a = spawn_legacy(port, &a, 3, gated_drop("legacy-d"));
    server.until_admitted(2).await;
    server.ops.open("legacy-a");
    assert_eq!(tool_of(&slow_a.await.unwrap()), "lean_sync");
    assert_eq!(
        server.event().await,
        Event::Started("lean_drop_workspace", json!(3))
    );
    assert_eq!(
        server.ops.running_at_start(json!(3)),
        Vec::<Value>::new(),
        "the session's drop ran beside its earlier call"
    );
    assert_eq!(tool_of(&drop_a.await.unwrap()), "lean_drop_workspace");

    // Sessionless: a slow call on root r1; a drop of r2 answers at once, a
    // drop of r1 waits for it, and a later call on r1 waits for that drop.
    let slow_r1 = spawn_modern(port, 10, gated_sync("r1"));
    assert_eq!(server.event().await, Event::Started("lean_sync", json!(10)));
    server.ops.open("r2");
    let other_root = modern(
        port,
        11,
        "tools/call",
        gated_drop("r2"),
        &[("accept", "application/json")],
    )
    .await;
    assert_eq!(tool_of(&other_root), "lean_drop_workspace");
    assert_eq!(
        server.event().await,
        Event::Started("lean_drop_workspace", json!(11))
    );
    let drop_r1 = spawn_modern(port, 12, gated_drop("r1-drop"));
    server.until_admitted(2).await;
    let drop_same = spawn_modern(
        port,
        13,
        json!({"name": "lean_drop_workspace", "arguments": {"workspace": {"root": "/gate/r1"}}}),
    );
    server.until_admitted(3).await;
    let after = spawn_modern(port, 14, gated_sync("r1"));
    server.until_admitted(4).await;
    // The drop of another spelling of a root ("/gate/r1-drop") is its own root.
    assert_eq!(
        server.event().await,
        Event::Started("lean_drop_workspace", json!(12))
    );
    server.ops.open("r1-drop");
    assert_eq!(tool_of(&drop_r1.await.unwrap()), "lean_drop_workspace");
    // Nothing else on r1 started while its first call runs.
    assert_eq!(server.ops.running(), 1);
    server.ops.open("r1");
    assert_eq!(tool_of(&slow_r1.await.unwrap()), "lean_sync");
    assert_eq!(
        server.event().await,
        Event::Started("lean_drop_workspace", json!(13))
    );
    assert_eq!(tool_of(&drop_same.await.unwrap()), "lean_drop_workspace");
    assert_eq!(server.event().await, Event::Started("lean_sync", json!(14)));
    assert_eq!(server.ops.running_at_start(json!(14)), Vec::<Value>::new());
    assert_eq!(tool_of(&after.await.unwrap()), "lean_sync");
}

/// A malformed request reusing the id of a call in flight on its legacy
/// session is ignored like a well-formed one (409, null id): the call that
/// owns the id answers once.
#[tokio::test]
async fn a_malformed_request_reusing_an_active_id_is_ignored_over_http() {
    let mut server = InProcess::start(Config::default(), HttpConfig::default()).await;
    let port = server.port;
    let sid = legacy_session(port).await;
    let owner = spawn_legacy(port, &sid, 901, gated_sync("owner"));
    assert_eq!(
        server.event().await,
        Event::Started("lean_sync", json!(901))
    );
    let base = json!({"jsonrpc": "2.0", "id": 901, "method": "tools/call",
        "params": {"name": "beam_version", "arguments": {}}});
    let mut malformed = Vec::new();
    for edit in [
        &(|m: &mut Value| m["extra"] = json!(1)) as &dyn Fn(&mut Value),
        &|m| m["params"] = json!([]),
        &|m| m["jsonrpc"] = json!("1.0"),
        &|m| drop(m.as_object_mut().unwrap().remove("method")),
        &|m| m["params"]["bogus"] = json!(1),
        &|m| m["params"]["name"] = json!("no_such_tool"),
        &|m| m["method"] = json!("no/such/method"),
    ] {
        let mut m = base.clone();
        edit(&mut m);
        malformed.push(m);
    }
    malformed.push(base.clone());
    for message in &malformed {
        let response = post(
            port,
            &[("mcp-session-id", &sid), ("mcp-protocol-version", LEGACY)],
            message,
        )
        .await;
        assert_eq!(
            response.status,
            StatusCode::CONFLICT,
            "{message}: {}",
            response.text()
        );
        assert_eq!(response.json()["id"], Value::Null, "{message}");
    }
    server.ops.open("owner");
    let answer = owner.await.unwrap();
    assert_eq!(answer.json()["id"], 901);
    assert_eq!(tool_of(&answer), "lean_sync");
    // On another session, or once the id is free, the errors are answered.
    let free = post(
        port,
        &[("mcp-session-id", &sid), ("mcp-protocol-version", LEGACY)],
        &malformed[0],
    )
    .await;
    assert_eq!(free.status, StatusCode::BAD_REQUEST);
    assert_eq!(free.json()["id"], 901);
}
