//! An MCP stdio client for integration tests against a real Lean server:
//! spawns `lean-beam-mcp` with a chosen environment, speaks either protocol era
//! (modern per-request `_meta`, or the legacy `initialize` lifecycle), keeps
//! every message it reads in arrival order, and awaits responses by id, so that
//! several calls can be in flight at once.
//!
//! Timeouts here are failure guards, never assertions about speed.

use std::collections::HashSet;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub use super::child::Spawn;
use super::child::StdioChild;

/// The longest any single awaited message may take (Lean elaboration under a
/// loaded CI machine included).
pub const GUARD: Duration = Duration::from_secs(120);

pub const MODERN_VERSION: &str = "2026-07-28";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    Modern,
    Legacy,
}

/// Per-call metadata: progress token and (modern) log level.
#[derive(Debug, Clone, Default)]
pub struct CallOpts {
    pub progress_token: Option<Value>,
    /// Modern only: `_meta["io.modelcontextprotocol/logLevel"]`.
    pub log_level: Option<String>,
}

impl CallOpts {
    pub fn token(token: impl Into<Value>) -> CallOpts {
        CallOpts {
            progress_token: Some(token.into()),
            log_level: None,
        }
    }

    pub fn level(level: &str) -> CallOpts {
        CallOpts {
            progress_token: None,
            log_level: Some(level.to_string()),
        }
    }
}

/// A running `lean-beam-mcp` and everything it wrote to stdout.
pub struct Mcp {
    child: StdioChild,
    pub era: Era,
    /// Every message read so far, in arrival order.
    pub received: Vec<Value>,
    /// Ids of responses already handed out.
    taken: HashSet<String>,
    next_id: u64,
}

fn id_key(id: &Value) -> String {
    id.to_string()
}

impl Mcp {
    /// Spawn a server that will be spoken to in `era` (legacy: the lifecycle is
    /// completed here). `LEAN_BEAM_*` variables of the test process are not
    /// inherited unless set in `spawn`.
    pub fn start(era: Era, spawn: Spawn) -> Mcp {
        let mut mcp = Mcp {
            child: StdioChild::spawn(&spawn, true, true),
            era,
            received: Vec::new(),
            taken: HashSet::new(),
            next_id: 0,
        };
        if era == Era::Legacy {
            let init = json!({
                "jsonrpc": "2.0", "id": "init", "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "lean-test", "version": "1"},
                },
            });
            mcp.send(&init);
            let response = mcp.response(&json!("init"));
            assert!(
                response.get("result").is_some(),
                "initialize failed: {response}"
            );
            mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        }
        mcp
    }

    /// A server on the test toolchain (`lean().server_env()`), with `extra`
    /// set after it.
    pub fn on_lean(era: Era, extra: &[(&str, &str)]) -> Mcp {
        let mut spawn = Spawn::default().envs(super::lean::lean().server_env());
        for (k, v) in extra {
            spawn = spawn.env(k, *v);
        }
        Mcp::start(era, spawn)
    }

    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    pub fn stderr(&self) -> String {
        self.child.stderr()
    }

    pub fn send(&mut self, message: &Value) {
        self.child.send(message);
    }

    /// Write several messages in one write.
    pub fn send_all(&mut self, messages: &[Value]) {
        self.child.send_all(messages);
    }

    pub fn fresh_id(&mut self) -> Value {
        self.next_id += 1;
        json!(self.next_id)
    }

    /// The `tools/call` request for `tool` in this client's era.
    pub fn call_request(&self, id: &Value, tool: &str, arguments: Value, opts: &CallOpts) -> Value {
        let mut meta = serde_json::Map::new();
        if self.era == Era::Modern {
            meta.insert(
                "io.modelcontextprotocol/protocolVersion".into(),
                json!(MODERN_VERSION),
            );
            meta.insert(
                "io.modelcontextprotocol/clientCapabilities".into(),
                json!({}),
            );
            meta.insert(
                "io.modelcontextprotocol/clientInfo".into(),
                json!({"name": "lean-test", "version": "1"}),
            );
            if let Some(level) = &opts.log_level {
                meta.insert("io.modelcontextprotocol/logLevel".into(), json!(level));
            }
        } else {
            assert!(
                opts.log_level.is_none(),
                "legacy calls use logging/setLevel"
            );
        }
        if let Some(token) = &opts.progress_token {
            meta.insert("progressToken".into(), token.clone());
        }
        let mut params = json!({"name": tool, "arguments": arguments});
        if !meta.is_empty() {
            params["_meta"] = serde_json::Value::Object(meta);
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    }

    /// Start a call and return its id (the answer is awaited with [`Mcp::response`]).
    pub fn start_call(&mut self, tool: &str, arguments: Value, opts: &CallOpts) -> Value {
        let id = self.fresh_id();
        let request = self.call_request(&id, tool, arguments, opts);
        self.send(&request);
        id
    }

    /// Send `notifications/cancelled` for `id`.
    pub fn cancel(&mut self, id: &Value) {
        self.send(&json!({
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "test"},
        }));
    }

    /// Legacy `logging/setLevel`.
    pub fn set_level(&mut self, level: &str) {
        assert_eq!(self.era, Era::Legacy);
        let id = self.fresh_id();
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "logging/setLevel", "params": {"level": level}}));
        let response = self.response(&id);
        assert!(
            response.get("result").is_some(),
            "setLevel failed: {response}"
        );
    }

    /// Read one more message, within `limit`. None at timeout or EOF.
    pub fn read_within(&mut self, limit: Duration) -> Option<Value> {
        let value = self.child.next_message(limit)?;
        self.received.push(value.clone());
        Some(value)
    }

    /// Tool results checked against their schemas so far
    /// ([`super::outputs`]).
    pub fn results_checked(&self) -> usize {
        self.child.results_checked()
    }

    /// The response to `id` (read as far as needed; other messages are kept).
    pub fn response(&mut self, id: &Value) -> Value {
        self.response_within(id, GUARD).unwrap_or_else(|| {
            panic!(
                "no response to {id} within {GUARD:?}\nstderr:\n{}",
                self.stderr()
            )
        })
    }

    pub fn response_within(&mut self, id: &Value, limit: Duration) -> Option<Value> {
        let key = id_key(id);
        let deadline = Instant::now() + limit;
        let found = |received: &[Value]| {
            received
                .iter()
                .find(|m| {
                    m.get("method").is_none()
                        && m.get("id").map(id_key).as_deref() == Some(key.as_str())
                })
                .cloned()
        };
        loop {
            if let Some(r) = found(&self.received) {
                self.taken.insert(key);
                return Some(r);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            self.read_within(left)?;
        }
    }

    /// Index in [`Mcp::received`] of the response to `id` (which must have arrived).
    pub fn position_of_response(&self, id: &Value) -> usize {
        let key = id_key(id);
        self.received
            .iter()
            .position(|m| {
                m.get("method").is_none()
                    && m.get("id").map(id_key).as_deref() == Some(key.as_str())
            })
            .unwrap_or_else(|| panic!("no response to {id} received"))
    }

    /// Await a tool result (`result` of the response), whatever `isError`.
    pub fn tool_result(&mut self, id: &Value) -> Value {
        let response = self.response(id);
        assert!(
            response.get("error").is_none(),
            "JSON-RPC error for {id}: {response}"
        );
        response["result"].clone()
    }

    /// Call `tool` and return its `structuredContent`; panics on a tool error.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.call_with(tool, arguments, &CallOpts::default())
    }

    pub fn call_with(&mut self, tool: &str, arguments: Value, opts: &CallOpts) -> Value {
        let id = self.start_call(tool, arguments.clone(), opts);
        self.ok(&id, tool, &arguments)
    }

    /// The successful `structuredContent` of the call `id`.
    pub fn ok(&mut self, id: &Value, tool: &str, arguments: &Value) -> Value {
        let result = self.tool_result(id);
        assert_eq!(
            result["isError"],
            false,
            "{tool} {arguments} failed: {}\nstderr:\n{}",
            result["content"][0]["text"],
            self.stderr()
        );
        check_two_forms(&result);
        result["structuredContent"].clone()
    }

    /// Call `tool`, expecting a tool error; returns the error object
    /// (`code`, `message`, `data`).
    pub fn call_err(&mut self, tool: &str, arguments: Value) -> Value {
        let id = self.start_call(tool, arguments.clone(), &CallOpts::default());
        self.err(&id, tool, &arguments)
    }

    pub fn err(&mut self, id: &Value, tool: &str, arguments: &Value) -> Value {
        let result = self.tool_result(id);
        assert_eq!(
            result["isError"], true,
            "{tool} {arguments} should have failed: {}",
            result["structuredContent"]
        );
        super::tool_error(&result)
    }

    /// `beam_stats` (structured).
    pub fn stats(&mut self) -> Value {
        self.call("beam_stats", json!({}))
    }

    /// The `beam_stats` entry of one workspace root, if cached.
    pub fn workspace_stats(&mut self, root: &str) -> Option<Value> {
        let stats = self.stats();
        stats["workspaces"].get(root).cloned()
    }

    /// The `beam_stats` entry of one document of a cached workspace.
    pub fn document_stats(&mut self, root: &str, path: &str) -> Value {
        let stats = self.workspace_stats(root).expect("runtime of the root");
        stats["documents"]
            .as_array()
            .and_then(|docs| docs.iter().find(|d| d["path"] == path))
            .cloned()
            .unwrap_or_else(|| panic!("{path} in {stats}"))
    }

    /// `notifications/progress` for `token`, in arrival order.
    pub fn progress_of(&self, token: &Value) -> Vec<Value> {
        self.received
            .iter()
            .filter(|m| {
                m["method"] == "notifications/progress" && &m["params"]["progressToken"] == token
            })
            .map(|m| m["params"].clone())
            .collect()
    }

    /// `notifications/message` params with `logger`, in arrival order.
    pub fn logs(&self, logger: &str) -> Vec<Value> {
        self.received
            .iter()
            .filter(|m| m["method"] == "notifications/message" && m["params"]["logger"] == logger)
            .map(|m| m["params"].clone())
            .collect()
    }

    /// Forget what was received (responses already awaited and notifications).
    pub fn clear(&mut self) {
        self.received.clear();
    }

    /// Wait until a notification satisfying `pred` arrives (or has arrived).
    pub fn wait_notification(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + GUARD;
        let mut seen = 0;
        loop {
            if let Some(m) = self.received[seen..]
                .iter()
                .find(|m| m.get("method").is_some() && pred(m))
            {
                return m.clone();
            }
            seen = self.received.len();
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.read_within(left).is_none() {
                panic!(
                    "no notification {what} within {GUARD:?}\nstderr:\n{}",
                    self.stderr()
                );
            }
        }
    }

    /// A point in the stream: send a request for an unknown method (answered
    /// at once, by the reader) and read up to its answer, so that everything
    /// the server wrote before it had read that request is in
    /// [`Mcp::received`].
    pub fn sync_point(&mut self) {
        let id = json!(format!("sync-point-{}", self.fresh_id()));
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "zz/sync-point"}));
        self.response(&id);
    }

    /// After a [`Mcp::sync_point`]: whatever the cancelled call `id` was
    /// answered (if at all), it was a `requestCancelled` tool error, never a
    /// result.
    pub fn assert_cancelled_answers(&mut self, id: &Value) {
        self.sync_point();
        for response in self
            .received
            .iter()
            .filter(|m| m.get("method").is_none() && m["id"] == *id)
        {
            assert_eq!(
                super::tool_error(&response["result"])["code"],
                "requestCancelled",
                "{response}"
            );
        }
    }

    /// Run one call to its successful end: its id, its `structuredContent`
    /// and the params of the `beam.status` notices it caused, every one of
    /// which came before its response.
    pub fn call_with_status_notices(
        &mut self,
        tool: &str,
        arguments: Value,
        opts: &CallOpts,
    ) -> (Value, Value, Vec<Value>) {
        self.clear();
        let id = self.start_call(tool, arguments.clone(), opts);
        let result = self.ok(&id, tool, &arguments);
        let at = self.position_of_response(&id);
        let notices = self.logs("beam.status");
        let before = self.received[..at]
            .iter()
            .filter(|m| {
                m["method"] == "notifications/message" && m["params"]["logger"] == "beam.status"
            })
            .count();
        assert_eq!(
            before,
            notices.len(),
            "a status notice after the response: {notices:?}"
        );
        (id, result, notices)
    }

    pub fn close_stdin(&mut self) {
        self.child.close_stdin();
    }

    /// Wait for the process to exit (a failure guard, `limit`).
    pub fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        self.child.wait_exit(limit)
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        // Closing stdin is the real shutdown (EOF tears Lean down too); kill
        // only if it does not go.
        self.child.shut_down(Duration::from_secs(10));
    }
}

/// `content[0].text` is the serialized `structuredContent`.
pub fn check_two_forms(result: &Value) {
    let text = result["content"][0]["text"]
        .as_str()
        .expect("content[0].text");
    let parsed: Value = serde_json::from_str(text).expect("content text is JSON");
    assert_eq!(
        parsed, result["structuredContent"],
        "the two forms of one result differ"
    );
}

/// A workspace descriptor.
pub fn ws(root: &str) -> Value {
    json!({"root": root})
}

/// What the `beam.status` notice of a call says: the call's `state`, its
/// document `path`, and a message with each of `says`.
pub struct StatusNotice {
    pub state: &'static str,
    pub path: &'static str,
    pub says: &'static [&'static str],
}

impl StatusNotice {
    /// Check one notice (the params of its `notifications/message`) of the
    /// call `id` to `tool`: level notice, this state, path and message, and
    /// the hint that a progress token would replace it.
    pub fn assert(&self, notice: &Value, id: &Value, tool: &str) {
        assert_eq!(notice["level"], "notice", "{notice}");
        let data = &notice["data"];
        assert_eq!(&data["requestId"], id, "{data}");
        assert_eq!(data["tool"], tool, "{data}");
        assert_eq!(data["state"], self.state, "{data}");
        assert_eq!(data["path"], self.path, "{data}");
        let message = data["message"].as_str().unwrap_or_default();
        for part in self.says {
            assert!(
                message.contains(part),
                "the message does not say {part:?}: {data}"
            );
        }
        assert!(
            data["progressHint"]
                .as_str()
                .is_some_and(|hint| hint.contains("progressToken")),
            "{data}"
        );
    }
}
