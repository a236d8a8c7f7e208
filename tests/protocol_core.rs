//! The protocol core with a controllable `Operations`: rules that need a call to
//! stay active, tested in-process through the same `stdio::serve` the binary runs
//! (over in-memory pipes). Tools whose workspace root is `/gate/NAME` block until
//! the test opens gate NAME; every other call answers at once.
//!
//! Covered here: a request reusing an active id is ignored (the id is reusable
//! after the response); responses come out of order; `notifications/cancelled`
//! wins with no response and stops the work; cancellation before dispatch
//! prevents it; `lean_drop_workspace` is a non-cancellable full stream-order
//! fence; EOF cancels cancellable work, drains the rest and writes its answers;
//! progress precedes the response.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lean_beam_mcp::context::CallContext;
use lean_beam_mcp::mcp::dispatcher::{Config, Dispatcher};
use lean_beam_mcp::mcp::stdio;
use lean_beam_mcp::stats::Stats;
use lean_beam_mcp::surface::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;

const TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Debug, Clone, PartialEq)]
enum Event {
    /// The operation started running (it was dispatched).
    Started(&'static str, Value),
    /// The operation's future was dropped before it finished (cancelled).
    Dropped(&'static str, Value),
}

#[derive(Default)]
struct Gated {
    gates: Mutex<HashMap<String, Arc<Semaphore>>>,
    events: Mutex<Option<mpsc::UnboundedSender<Event>>>,
    /// Ids of the operations running right now.
    running: Arc<Mutex<Vec<Value>>>,
    /// For each id: the ids that were running when it started.
    running_at_start: Mutex<HashMap<String, Vec<Value>>>,
}

struct DropGuard {
    tool: &'static str,
    id: Value,
    finished: bool,
    events: Option<mpsc::UnboundedSender<Event>>,
    running: Arc<Mutex<Vec<Value>>>,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.running.lock().unwrap().retain(|id| *id != self.id);
        if !self.finished {
            if let Some(tx) = &self.events {
                let _ = tx.send(Event::Dropped(self.tool, self.id.clone()));
            }
        }
    }
}

impl Gated {
    fn gate(&self, name: &str) -> Arc<Semaphore> {
        let mut gates = self.gates.lock().unwrap();
        Arc::clone(
            gates
                .entry(name.to_string())
                .or_insert_with(|| Arc::new(Semaphore::new(0))),
        )
    }

    /// The operations that were running when `id` started.
    fn running_at_start(&self, id: Value) -> Vec<Value> {
        self.running_at_start.lock().unwrap()[&id.to_string()].clone()
    }

    fn open(&self, name: &str) {
        self.gate(name).add_permits(1_000);
    }

    async fn run(&self, ctx: &CallContext, root: Option<&str>) -> ToolOutcome {
        let tool = ctx.tool.name();
        let id = ctx.request_id.to_value();
        let events = self.events.lock().unwrap().clone();
        {
            let mut running = self.running.lock().unwrap();
            self.running_at_start
                .lock()
                .unwrap()
                .insert(id.to_string(), running.clone());
            running.push(id.clone());
        }
        if let Some(tx) = &events {
            let _ = tx.send(Event::Started(tool, id.clone()));
        }
        let mut guard = DropGuard {
            tool,
            id: id.clone(),
            finished: false,
            events,
            running: Arc::clone(&self.running),
        };
        if let Some(name) = root.and_then(|r| r.strip_prefix("/gate/")) {
            let gate = self.gate(name);
            let _permit = gate.acquire().await.expect("gate open");
        }
        guard.finished = true;
        Ok(json!({ "tool": tool, "id": id }))
    }
}

/// Every tool runs through `Gated::run`; the ones with a workspace block on the
/// gate named by its root.
macro_rules! gated_operations {
    ($($method:ident: $args:ty,)*) => {
        impl Operations for Gated {
            $(async fn $method(&self, ctx: &CallContext, args: $args) -> ToolOutcome {
                let args = serde_json::to_value(&args).expect("arguments serialize");
                self.run(ctx, args.pointer("/workspace/root").and_then(Value::as_str)).await
            })*
        }
    };
}

lean_beam_mcp::for_each_tool!(gated_operations);

/// One in-process stream.
struct Stream {
    input: Option<DuplexStream>,
    output: Lines<BufReader<DuplexStream>>,
    events: mpsc::UnboundedReceiver<Event>,
    ops: Arc<Gated>,
    stats: Arc<Stats>,
    server: JoinHandle<()>,
}

impl Stream {
    fn start() -> Stream {
        // No beam.status notices unless a test asks for them: they would interleave.
        Self::start_with_status_delay(Duration::from_secs(3600))
    }

    fn start_with_status_delay(status_delay: Duration) -> Stream {
        let ops = Arc::new(Gated::default());
        let (tx, events) = mpsc::unbounded_channel();
        *ops.events.lock().unwrap() = Some(tx);
        let config = Config {
            status_delay,
            ..Config::default()
        };
        let stats = Arc::new(Stats::default());
        let dispatcher = Dispatcher::new(Arc::clone(&ops), Arc::clone(&stats), config);
        let (client_in, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, client_out) = tokio::io::duplex(1 << 16);
        let server = tokio::spawn(stdio::serve(
            dispatcher,
            server_in,
            server_out,
            stdio::DEFAULT_MAX_LINE,
        ));
        Stream {
            input: Some(client_in),
            output: BufReader::new(client_out).lines(),
            events,
            ops,
            stats,
            server,
        }
    }

    async fn send(&mut self, message: Value) {
        let input = self.input.as_mut().expect("input open");
        let mut line = message.to_string();
        line.push('\n');
        input.write_all(line.as_bytes()).await.expect("write");
    }

    async fn recv(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(TIMEOUT, self.output.next_line())
            .await
            .expect("no output within the failure guard")
            .expect("read output")?;
        Some(
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("non-JSON output {line:?}: {e}")),
        )
    }

    async fn recv_some(&mut self) -> Value {
        self.recv().await.expect("output ended")
    }

    async fn event(&mut self) -> Event {
        tokio::time::timeout(TIMEOUT, self.events.recv())
            .await
            .expect("no operation event within the failure guard")
            .expect("event channel open")
    }

    /// The next message must be the answer to a sentinel sent now: proves that
    /// nothing else was written in between.
    async fn assert_quiet(&mut self, era: Era) {
        self.send(era.request(json!("sentinel"), "tools/list", Value::Null))
            .await;
        let next = self.recv_some().await;
        assert_eq!(
            next["id"], "sentinel",
            "expected nothing before the sentinel, got {next}"
        );
    }

    async fn close_input(&mut self) {
        if let Some(mut input) = self.input.take() {
            input.shutdown().await.expect("shutdown input");
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Era {
    Modern,
    Legacy,
}

impl Era {
    fn request(self, id: Value, method: &str, params: Value) -> Value {
        let mut params = match params {
            Value::Null => json!({}),
            p => p,
        };
        if let Era::Modern = self {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            });
        }
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    fn call(self, id: impl Into<Value>, tool: &str, args: Value) -> Value {
        self.request(
            id.into(),
            "tools/call",
            json!({"name": tool, "arguments": args}),
        )
    }

    async fn open(self) -> Stream {
        self.open_with(Stream::start()).await
    }

    /// Complete the legacy lifecycle on `stream` (nothing to do in the modern era).
    async fn open_with(self, mut stream: Stream) -> Stream {
        if let Era::Legacy = self {
            stream
                .send(json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "core-test"}}}))
                .await;
            assert_eq!(stream.recv_some().await["id"], "init");
            stream
                .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .await;
        }
        stream
    }
}

const ERAS: [Era; 2] = [Era::Modern, Era::Legacy];

fn sync(gate: &str) -> Value {
    json!({"workspace": {"root": format!("/gate/{gate}")}, "path": "Main.lean"})
}

fn drop_ws(gate: &str) -> Value {
    json!({"workspace": {"root": format!("/gate/{gate}")}})
}

fn hover() -> Value {
    json!({"workspace": {"root": "/fast"}, "path": "Main.lean", "version": 1, "line": 0, "character": 0})
}

/// The `structuredContent` of a successful tool response.
fn answer(response: &Value) -> Value {
    assert!(response.get("error").is_none(), "{response}");
    assert_eq!(response["result"]["isError"], false, "{response}");
    response["result"]["structuredContent"].clone()
}

#[tokio::test]
async fn a_request_reusing_an_active_id_is_ignored() {
    for era in ERAS {
        let mut s = era.open().await;
        s.send(era.call(7, "lean_sync", sync("a"))).await;
        assert_eq!(s.event().await, Event::Started("lean_sync", json!(7)));
        // Same id while 7 is active: another tool call, and a plain request.
        s.send(era.call(7, "beam_version", json!({}))).await;
        s.send(era.request(json!(7), "tools/list", Value::Null))
            .await;
        s.assert_quiet(era).await;
        // The string id "7" is another id: answered at once.
        s.send(era.call("7", "beam_version", json!({}))).await;
        let other = s.recv_some().await;
        assert_eq!(other["id"], "7");
        assert_eq!(answer(&other)["tool"], "beam_version");

        s.ops.open("a");
        let response = s.recv_some().await;
        assert_eq!(response["id"], 7);
        assert_eq!(
            answer(&response)["tool"],
            "lean_sync",
            "{era:?}: the original call answers id 7"
        );
        s.assert_quiet(era).await;
        // After its response the id may be reused.
        s.send(era.call(7, "beam_version", json!({}))).await;
        let reused = s.recv_some().await;
        assert_eq!(reused["id"], 7);
        assert_eq!(answer(&reused)["tool"], "beam_version");
    }
}

#[tokio::test]
async fn responses_may_come_out_of_order() {
    for era in ERAS {
        let mut s = era.open().await;
        s.send(era.call(1, "lean_sync", sync("slow"))).await;
        s.send(era.call(2, "lean_hover", hover())).await;
        s.send(era.call(3, "beam_version", json!({}))).await;
        let mut early = vec![
            s.recv_some().await["id"].clone(),
            s.recv_some().await["id"].clone(),
        ];
        early.sort_by_key(|v| v.as_i64());
        assert_eq!(early, vec![json!(2), json!(3)]);
        s.ops.open("slow");
        assert_eq!(s.recv_some().await["id"], 1);
    }
}

#[tokio::test]
async fn cancellation_wins_without_a_response() {
    for era in ERAS {
        let mut s = era.open().await;
        s.send(era.call("c", "lean_sync", sync("never"))).await;
        assert_eq!(s.event().await, Event::Started("lean_sync", json!("c")));
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c", "reason": "test"}}))
            .await;
        // The work stops (its future is dropped) and nothing is sent for "c".
        assert_eq!(s.event().await, Event::Dropped("lean_sync", json!("c")));
        s.assert_quiet(era).await;
        assert_eq!(s.stats.snapshot()["cancelled"], 1);
        // The cancelled id is free again; a late cancellation of its new use,
        // after the response, changes nothing.
        s.send(era.call("c", "beam_version", json!({}))).await;
        assert_eq!(s.recv_some().await["id"], "c");
        assert_eq!(s.event().await, Event::Started("beam_version", json!("c")));
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c"}}))
            .await;
        s.assert_quiet(era).await;
        assert_eq!(s.stats.snapshot()["cancelled"], 1);
    }
}

#[tokio::test]
async fn drop_workspace_is_a_non_cancellable_stream_order_fence() {
    for era in ERAS {
        let mut s = era.open().await;
        s.send(era.call("before", "lean_sync", sync("a"))).await;
        s.send(era.call("drop", "lean_drop_workspace", drop_ws("d")))
            .await;
        s.send(era.call("after", "lean_hover", hover())).await;
        s.send(era.call("cancelled-after", "lean_hover", hover()))
            .await;
        assert_eq!(
            s.event().await,
            Event::Started("lean_sync", json!("before"))
        );
        // Cancelling the fence does nothing: it runs to completion once admitted.
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "drop"}}))
            .await;
        // Cancelling a call queued behind the fence prevents its dispatch.
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "cancelled-after"}}))
            .await;
        // Nothing behind the earlier call has run or answered.
        s.assert_quiet(era).await;

        s.ops.open("a");
        assert_eq!(s.recv_some().await["id"], "before");
        // Now the fence runs; the later call still waits for it.
        assert_eq!(
            s.event().await,
            Event::Started("lean_drop_workspace", json!("drop"))
        );
        assert_eq!(
            s.ops.running_at_start(json!("drop")),
            Vec::<Value>::new(),
            "the fence ran beside an earlier call"
        );
        s.assert_quiet(era).await;
        s.ops.open("d");
        let dropped = s.recv_some().await;
        assert_eq!(
            dropped["id"], "drop",
            "the fence answers before later calls: {dropped}"
        );
        assert_eq!(answer(&dropped)["tool"], "lean_drop_workspace");
        let after = s.recv_some().await;
        assert_eq!(after["id"], "after");
        assert_eq!(
            s.event().await,
            Event::Started("lean_hover", json!("after"))
        );
        assert_eq!(
            s.ops.running_at_start(json!("after")),
            Vec::<Value>::new(),
            "a later call ran beside the fence"
        );
        s.assert_quiet(era).await;
        // "cancelled-after" was never dispatched and never answered.
        assert!(
            s.events.try_recv().is_err(),
            "a call cancelled before dispatch ran"
        );
    }
}

#[tokio::test]
async fn eof_cancels_cancellable_work_and_drains_the_rest() {
    for era in ERAS {
        let mut s = era.open().await;
        s.send(era.call("sync", "lean_sync", sync("eof-a"))).await;
        s.send(era.call("drop", "lean_drop_workspace", drop_ws("eof-d")))
            .await;
        s.send(era.request(json!("list"), "tools/list", Value::Null))
            .await;
        assert_eq!(s.event().await, Event::Started("lean_sync", json!("sync")));
        assert_eq!(s.recv_some().await["id"], "list");
        s.close_input().await;
        // EOF cancels the cancellable call: its work stops, no response.
        assert_eq!(s.event().await, Event::Dropped("lean_sync", json!("sync")));
        // The fence then runs (the call before it is finished) and is drained.
        assert_eq!(
            s.event().await,
            Event::Started("lean_drop_workspace", json!("drop"))
        );
        s.ops.open("eof-d");
        let last = s.recv_some().await;
        assert_eq!(last["id"], "drop");
        assert!(
            s.recv().await.is_none(),
            "output ends after the drained answer"
        );
        tokio::time::timeout(TIMEOUT, &mut s.server)
            .await
            .expect("serve returns after EOF")
            .expect("serve did not panic");
    }
}

#[tokio::test]
async fn closed_output_ends_serve() {
    let mut s = Era::Modern.open().await;
    s.send(Era::Modern.call(1, "lean_sync", sync("closed")))
        .await;
    assert_eq!(s.event().await, Event::Started("lean_sync", json!(1)));
    // The client goes away without closing its input.
    let Stream {
        output,
        mut server,
        ops,
        input,
        ..
    } = s;
    drop(output);
    ops.open("closed");
    let mut input = input.expect("input");
    // The server notices on its next write and stops reading.
    for i in 0..64 {
        let line = Era::Modern
            .request(json!(i), "tools/list", Value::Null)
            .to_string()
            + "\n";
        if input.write_all(line.as_bytes()).await.is_err() {
            break;
        }
        if server.is_finished() {
            break;
        }
    }
    tokio::time::timeout(TIMEOUT, &mut server)
        .await
        .expect("serve returns when its output is closed")
        .expect("serve did not panic");
}

#[tokio::test]
async fn progress_precedes_the_response() {
    for era in ERAS {
        let mut s = era.open().await;
        let mut call = era.call(5, "lean_sync", sync("p"));
        call["params"]["_meta"]["progressToken"] = json!("tok");
        s.send(call).await;
        assert_eq!(s.event().await, Event::Started("lean_sync", json!(5)));
        let progress = s.recv_some().await;
        assert_eq!(progress["method"], "notifications/progress", "{progress}");
        assert_eq!(progress["params"]["progressToken"], "tok");
        assert_eq!(progress["params"]["progress"], 1);
        s.ops.open("p");
        let response = s.recv_some().await;
        assert_eq!(response["id"], 5);
        // A call without a token sends no progress.
        s.send(era.call(6, "lean_hover", hover())).await;
        assert_eq!(s.recv_some().await["id"], 6);
    }
}

/// The `beam.status` notice of a call still running after the status delay
/// follows the request's own log level: modern `_meta` logLevel is
/// request-local (never retained), legacy follows `logging/setLevel`.
#[tokio::test]
async fn status_notices_follow_the_request_log_level() {
    let mut s = Stream::start_with_status_delay(Duration::from_millis(20));
    let era = Era::Modern;
    // A: no logLevel. B: logLevel notice. A starts first, so its delay ends first.
    s.send(era.call("a", "lean_sync", sync("status-a"))).await;
    assert_eq!(s.event().await, Event::Started("lean_sync", json!("a")));
    let mut b = era.call("b", "lean_sync", sync("status-b"));
    b["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("notice");
    s.send(b).await;
    assert_eq!(s.event().await, Event::Started("lean_sync", json!("b")));
    let notice = s.recv_some().await;
    assert_eq!(notice["method"], "notifications/message", "{notice}");
    assert_eq!(notice["params"]["level"], "notice");
    assert_eq!(notice["params"]["logger"], "beam.status");
    assert_eq!(notice["params"]["data"]["requestId"], "b");
    assert_eq!(notice["params"]["data"]["tool"], "lean_sync");
    assert!(
        notice["params"]["data"]["progressHint"]
            .as_str()
            .unwrap()
            .contains("progressToken")
    );
    // C: after B, again without logLevel: B's level was not retained.
    s.send(era.call("c", "lean_sync", sync("status-c"))).await;
    assert_eq!(s.event().await, Event::Started("lean_sync", json!("c")));
    // D: logLevel warning does not admit a notice.
    let mut d = era.call("d", "lean_sync", sync("status-d"));
    d["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("warning");
    s.send(d).await;
    assert_eq!(s.event().await, Event::Started("lean_sync", json!("d")));
    // E: a later notice-level call proves the earlier delays have passed.
    let mut e = era.call("e", "lean_sync", sync("status-e"));
    e["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
    s.send(e).await;
    assert_eq!(s.event().await, Event::Started("lean_sync", json!("e")));
    let notice = s.recv_some().await;
    assert_eq!(
        notice["params"]["data"]["requestId"], "e",
        "only B and E may send a notice: {notice}"
    );
    for gate in ["status-a", "status-b", "status-c", "status-d", "status-e"] {
        s.ops.open(gate);
    }
    let mut ids = Vec::new();
    for _ in 0..5 {
        let message = s.recv_some().await;
        assert!(
            message.get("method").is_none(),
            "unexpected notification {message}"
        );
        ids.push(message["id"].as_str().unwrap().to_string());
    }
    ids.sort();
    assert_eq!(ids, ["a", "b", "c", "d", "e"]);

    // Legacy: the session level starts at debug (notice admitted) and follows
    // logging/setLevel.
    let era = Era::Legacy;
    let mut s = era
        .open_with(Stream::start_with_status_delay(Duration::from_millis(20)))
        .await;
    s.send(era.call("l1", "lean_sync", sync("legacy-1"))).await;
    let notice = s.recv_some().await;
    assert_eq!(notice["params"]["data"]["requestId"], "l1", "{notice}");
    s.send(era.request(
        json!("lvl"),
        "logging/setLevel",
        json!({"level": "warning"}),
    ))
    .await;
    assert_eq!(s.recv_some().await["id"], "lvl");
    s.send(era.call("l2", "lean_sync", sync("legacy-2"))).await;
    s.send(era.request(json!("lvl2"), "logging/setLevel", json!({"level": "debug"})))
        .await;
    assert_eq!(s.recv_some().await["id"], "lvl2");
    s.send(era.call("l3", "lean_sync", sync("legacy-3"))).await;
    let notice = s.recv_some().await;
    assert_eq!(
        notice["params"]["data"]["requestId"], "l3",
        "l2 ran at level warning: {notice}"
    );
    for gate in ["legacy-1", "legacy-2", "legacy-3"] {
        s.ops.open(gate);
    }
    for _ in 0..3 {
        let message = s.recv_some().await;
        assert!(
            message.get("method").is_none(),
            "unexpected notification {message}"
        );
    }
}
