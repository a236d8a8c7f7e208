//! The Streamable HTTP contract, over loopback, against the real binary
//! (`lean-beam-mcp --http`): every status and JSON-RPC error code of both eras,
//! DNS-rebinding refusal, the body limit, session expiry, SSE streams, CORS,
//! /health and graceful shutdown.

use std::io::{BufRead, BufReader};
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

mod common;

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
        let mut child = Command::new(env!("CARGO_BIN_EXE_lean-beam-mcp"))
            .args(["--http", "127.0.0.1:0"])
            .args(extra)
            .env("LEAN_BEAM_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn lean-beam-mcp");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("listening on http://127.0.0.1:").nth(1) {
                    let port: u16 = rest.trim_end_matches("/mcp").parse().unwrap();
                    let _ = port_tx.send(port);
                }
                sink.lock().unwrap().push(line);
            }
        });
        let port = port_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("server announces its port");
        Server { child, port, log }
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
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
    sender
        .send_request(builder.body(Full::new(Bytes::from(body))).unwrap())
        .await
        .unwrap()
}

async fn send(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Response {
    let response = open(port, method, path, headers, body).await;
    let status = response.status();
    let headers = response.headers().clone();
    let body = tokio::time::timeout(Duration::from_secs(20), response.into_body().collect())
        .await
        .expect("body within 20 s")
        .unwrap()
        .to_bytes()
        .to_vec();
    Response {
        status,
        headers,
        body,
    }
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
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "contract", "version": "1"}}});
    let response = post(port, &[ACCEPT_BOTH], &init).await;
    assert_eq!(response.status, StatusCode::OK, "{}", response.text());
    assert_eq!(response.json()["result"]["protocolVersion"], LEGACY);
    let sid = response
        .header("mcp-session-id")
        .expect("initialize mints a session id")
        .to_string();
    assert!(sid.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = post(
        port,
        &[("mcp-session-id", &sid), ("mcp-protocol-version", LEGACY)],
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

#[tokio::test]
async fn legacy_sessions_expire_when_idle() {
    let server = Server::start(&["--session-idle-secs", "0.3"]);
    let port = server.port;
    let sid = legacy_session(port).await;
    assert_eq!(
        legacy(port, &sid, 1, "ping", json!({}), &[]).await.status,
        StatusCode::OK
    );
    let health = send(port, "GET", "/health", &[], vec![]).await.json();
    assert_eq!(health["sessions"], 1);
    tokio::time::sleep(Duration::from_millis(900)).await;
    let expired = legacy(port, &sid, 2, "ping", json!({}), &[]).await;
    assert_eq!(expired.status, StatusCode::NOT_FOUND);
    assert_eq!(
        send(port, "GET", "/health", &[], vec![]).await.json()["sessions"],
        0
    );

    // An open GET stream keeps a session attended.
    let sid = legacy_session(port).await;
    let stream = open(
        port,
        "GET",
        "/mcp",
        &[("accept", "text/event-stream"), ("mcp-session-id", &sid)],
        vec![],
    )
    .await;
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(
        legacy(port, &sid, 3, "ping", json!({}), &[]).await.status,
        StatusCode::OK
    );
    drop(stream);
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

    // A modern header without the envelope: -32602, 400.
    let bare = post(
        port,
        &[
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/list"),
        ],
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
    )
    .await;
    assert_eq!(bare.status, StatusCode::BAD_REQUEST);
    assert_eq!(bare.error_code(), -32602);
    assert_eq!(bare.json()["id"], 4);

    // Missing or mismatching mirrored headers: -32020, 400.
    let envelope = |id: i64, method: &str, name: Option<&str>| {
        let mut params = json!({"_meta": meta()});
        if let Some(name) = name {
            params["name"] = json!(name);
            params["arguments"] = json!({});
        }
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    };
    for (headers, what) in [
        (vec![("mcp-protocol-version", MODERN)], "missing Mcp-Method"),
        (
            vec![
                ("mcp-protocol-version", MODERN),
                ("mcp-method", "tools/call"),
            ],
            "mismatching Mcp-Method",
        ),
        (
            vec![("mcp-method", "tools/list")],
            "missing MCP-Protocol-Version",
        ),
    ] {
        let response = post(port, &headers, &envelope(5, "tools/list", None)).await;
        assert_eq!(response.status, StatusCode::BAD_REQUEST, "{what}");
        assert_eq!(response.error_code(), -32020, "{what}");
    }
    let no_name = post(
        port,
        &[
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/call"),
        ],
        &envelope(6, "tools/call", Some("beam_version")),
    )
    .await;
    assert_eq!(
        (no_name.status, no_name.error_code()),
        (StatusCode::BAD_REQUEST, -32020)
    );
    let wrong_name = post(
        port,
        &[
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/call"),
            ("mcp-name", "beam_stats"),
        ],
        &envelope(7, "tools/call", Some("beam_version")),
    )
    .await;
    assert_eq!(
        (wrong_name.status, wrong_name.error_code()),
        (StatusCode::BAD_REQUEST, -32020)
    );
    let encoded = post(
        port,
        &[
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?YmVhbV92ZXJzaW9u?="),
        ],
        &envelope(8, "tools/call", Some("beam_version")),
    )
    .await;
    assert_eq!(encoded.status, StatusCode::OK, "{}", encoded.text());
    let mut other_version = envelope(9, "server/discover", None);
    other_version["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] =
        json!("2099-01-01");
    let mismatch = post(
        port,
        &[
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "server/discover"),
        ],
        &other_version,
    )
    .await;
    assert_eq!(
        (mismatch.status, mismatch.error_code()),
        (StatusCode::BAD_REQUEST, -32020)
    );

    // An unsupported revision: -32022 with data.supported, 400.
    let unsupported = post(
        port,
        &[
            ("mcp-protocol-version", "2099-01-01"),
            ("mcp-method", "server/discover"),
        ],
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
    let header_only = post(
        port,
        &[
            ("mcp-protocol-version", "2099-01-01"),
            ("mcp-method", "tools/list"),
        ],
        &json!({"jsonrpc": "2.0", "id": 10, "method": "tools/list"}),
    )
    .await;
    assert_eq!(
        (header_only.status, header_only.error_code()),
        (StatusCode::BAD_REQUEST, -32022)
    );

    // Missing envelope members: -32602, 400.
    let no_caps = post(port, &[("mcp-protocol-version", MODERN), ("mcp-method", "server/discover")],
        &json!({"jsonrpc": "2.0", "id": 11, "method": "server/discover", "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}})).await;
    assert_eq!(
        (no_caps.status, no_caps.error_code()),
        (StatusCode::BAD_REQUEST, -32602)
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
    let ok = post(
        port,
        &headers(&[("host", "localhost"), ("origin", &local)]),
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
    let l = common::lean::lean();
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
