//! The protocol suites' client: a spawned `lean-beam-mcp` read message by
//! message in stream order (every stdout line checked by [`super::check_line`]),
//! and builders for raw JSON-RPC requests of either era.

use std::process::ExitStatus;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::child::{Spawn, StdioChild};

/// How long any single expected message may take. A failure guard, never an
/// assertion about speed.
/// A safety limit that stops a hang (minutes above any stall), never a
/// judgement of speed.
pub const TIMEOUT: Duration = Duration::from_secs(120);

pub const MODERN: &str = "2026-07-28";
pub const LEGACY: &str = "2025-11-25";

/// The modern per-request metadata.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "protocol-test", "version": "1"},
    })
}

/// A request; `params` may be `Value::Null` for none.
pub fn request(id: impl Into<Value>, method: &str, params: Value) -> Value {
    let mut message = json!({"jsonrpc": "2.0", "id": id.into(), "method": method});
    if !params.is_null() {
        message["params"] = params;
    }
    message
}

/// A modern request: `params` (an object or null) plus `_meta`.
pub fn modern(id: impl Into<Value>, method: &str, params: Value) -> Value {
    let mut params = match params {
        Value::Null => Map::new(),
        Value::Object(map) => map,
        other => panic!("params must be an object: {other}"),
    };
    params.insert("_meta".into(), meta());
    request(id, method, Value::Object(params))
}

pub fn notification(method: &str, params: Value) -> Value {
    let mut message = json!({"jsonrpc": "2.0", "method": method});
    if !params.is_null() {
        message["params"] = params;
    }
    message
}

pub fn call_params(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

pub fn initialize_params() -> Value {
    json!({
        "protocolVersion": "2024-11-05",
        "capabilities": {},
        "clientInfo": {"name": "protocol-test", "version": "1"},
    })
}

/// One running server and the lines it wrote.
pub struct Server {
    child: StdioChild,
    /// Every line read from stdout so far, in order.
    pub transcript: Vec<Value>,
}

impl Server {
    pub fn spawn() -> Server {
        Self::spawn_with(&[])
    }

    pub fn spawn_with(env: &[(&str, &str)]) -> Server {
        let spawn = env.iter().fold(Spawn::default(), |s, (k, v)| s.env(k, *v));
        Self::launch(&spawn, true)
    }

    /// A server whose stdout read end is closed at once.
    pub fn spawn_with_closed_stdout() -> Server {
        Self::launch(&Spawn::default(), false)
    }

    fn launch(spawn: &Spawn, read_stdout: bool) -> Server {
        Server {
            child: StdioChild::spawn(spawn, false, read_stdout),
            transcript: Vec::new(),
        }
    }

    pub fn stderr(&self) -> String {
        self.child.stderr()
    }

    /// Write one raw line (a newline is appended). Returns false when the
    /// server no longer reads its input.
    pub fn send_raw(&mut self, line: &str) -> bool {
        self.child.send_raw(line)
    }

    /// Write raw bytes as they are (no newline added).
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        self.child.send_bytes(bytes);
    }

    pub fn send(&mut self, message: &Value) {
        self.child.send(message);
    }

    /// Write several messages in one write (they arrive as a burst).
    pub fn send_all(&mut self, messages: &[Value]) {
        self.child.send_all(messages);
    }

    /// The next stdout line, parsed and checked to be a JSON-RPC response or
    /// notification. Panics (with the server's stderr) on timeout or EOF.
    pub fn recv(&mut self) -> Value {
        match self.recv_within(TIMEOUT) {
            Some(v) => v,
            None => panic!(
                "no message from the server within {TIMEOUT:?} (or stdout closed)\ntranscript: {:#?}\nstderr:\n{}",
                self.transcript,
                self.stderr()
            ),
        }
    }

    /// The next message, or None at EOF / after `limit`.
    pub fn recv_within(&mut self, limit: Duration) -> Option<Value> {
        let value = self.child.next_message(limit)?;
        self.transcript.push(value.clone());
        Some(value)
    }

    /// Tool results checked against their schemas so far ([`super::outputs`]).
    pub fn results_checked(&self) -> usize {
        self.child.results_checked()
    }

    /// The next message that is a response (notifications are kept in the
    /// transcript and skipped).
    pub fn recv_response(&mut self) -> Value {
        loop {
            let message = self.recv();
            if message.get("id").is_some() {
                return message;
            }
        }
    }

    /// Send a request and return its response, which must be the next response
    /// on the stream and carry the same id.
    pub fn request(&mut self, message: &Value) -> Value {
        self.send(message);
        let response = self.recv_response();
        assert_eq!(
            response["id"], message["id"],
            "response to {message} carries another id: {response}"
        );
        response
    }

    /// Send a request whose answer is a JSON-RPC error; return the error object.
    pub fn expect_error(&mut self, message: &Value, code: i64) -> Value {
        self.send(message);
        let response = self.recv_response();
        assert_eq!(
            response["error"]["code"], code,
            "expected error {code} for {message}, got {response}"
        );
        assert!(response.get("result").is_none(), "{response}");
        response
    }

    /// Send a request and return its `result` (panics on an error response).
    pub fn result(&mut self, message: &Value) -> Value {
        let response = self.request(message);
        assert!(
            response.get("error").is_none(),
            "{message} failed: {response}"
        );
        response["result"].clone()
    }

    /// Prove that nothing was written in answer to what was sent before: send a
    /// `ping`-like sentinel request and check that the very next message is its
    /// answer. Works in any state: the sentinel's answer (result or error) is
    /// immediate and stream-ordered.
    pub fn assert_nothing_before_sentinel(&mut self, sentinel_id: &str) {
        let sentinel = request(sentinel_id, "zz/sentinel", Value::Null);
        self.send(&sentinel);
        let next = self.recv();
        assert_eq!(
            next["id"], sentinel_id,
            "expected no message before the sentinel's answer, got {next}"
        );
    }

    /// Complete the legacy lifecycle.
    pub fn legacy_init(&mut self) -> Value {
        let result = self.result(&request("init", "initialize", initialize_params()));
        self.send(&notification("notifications/initialized", Value::Null));
        result
    }

    pub fn close_stdin(&mut self) {
        self.child.close_stdin();
    }

    /// Wait for the process to exit, within `limit`.
    pub fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        self.child.wait_exit(limit)
    }

    /// Every remaining stdout message until EOF.
    pub fn drain_to_eof(&mut self) -> Vec<Value> {
        let mut rest = Vec::new();
        while let Some(v) = self.recv_within(TIMEOUT) {
            rest.push(v);
        }
        rest
    }
}
