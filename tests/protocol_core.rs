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

use std::sync::Arc;
use std::time::Duration;

use lean_beam_mcp::mcp::config::Config;
use lean_beam_mcp::mcp::dispatcher::Dispatcher;
use lean_beam_mcp::mcp::stdio;
use lean_beam_mcp::stats::Stats;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

#[allow(dead_code)] // this binary uses a slice of the harness (see tests/common/mod.rs)
mod common;

use common::gated::{Event, Gated};

// A safety limit that stops a hang, never a judgement of speed.
const TIMEOUT: Duration = Duration::from_secs(120);

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
        Self::start_with(Config {
            status_delay,
            ..Config::default()
        })
    }

    fn start_with(config: Config) -> Stream {
        let (ops, events) = Gated::with_events();
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
        assert_eq!(s.stats.snapshot().cancelled, 1);
        // The cancelled id is free again; a late cancellation of its new use,
        // after the response, changes nothing.
        s.send(era.call("c", "beam_version", json!({}))).await;
        assert_eq!(s.recv_some().await["id"], "c");
        assert_eq!(s.event().await, Event::Started("beam_version", json!("c")));
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c"}}))
            .await;
        s.assert_quiet(era).await;
        assert_eq!(s.stats.snapshot().cancelled, 1);
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

/// The seed: "a malformed second request using an ID that is still active is
/// ignored". Every kind of malformation (of the envelope as well as of the
/// params) reusing the active id 901 gets no answer; the call that owns 901
/// answers once; the same malformations with an unused id are answered.
#[tokio::test]
async fn a_malformed_request_reusing_an_active_id_is_ignored() {
    for era in ERAS {
        let mut s = era.open().await;
        s.send(era.call(901, "lean_sync", sync("owner"))).await;
        assert_eq!(s.event().await, Event::Started("lean_sync", json!(901)));
        let well_formed = era.call(901, "beam_version", json!({}));
        let mut malformed = Vec::new();
        let mut with = |edit: &dyn Fn(&mut Value)| {
            let mut m = well_formed.clone();
            edit(&mut m);
            malformed.push(m);
        };
        with(&|m| m["extra"] = json!(1));
        with(&|m| m["params"] = json!([]));
        with(&|m| m["params"] = json!("text"));
        with(&|m| m["jsonrpc"] = json!("1.0"));
        with(&|m| m["jsonrpc"] = json!(2));
        with(&|m| drop(m.as_object_mut().unwrap().remove("jsonrpc")));
        with(&|m| m["method"] = json!(5));
        with(&|m| drop(m.as_object_mut().unwrap().remove("method")));
        with(&|m| m["params"]["bogus"] = json!(true));
        with(&|m| m["params"]["name"] = json!("no_such_tool"));
        with(&|m| m["params"]["arguments"] = json!([]));
        with(&|m| m["method"] = json!("no/such/method"));
        with(&|m| m["params"]["_meta"] = json!("not an object"));
        for message in &malformed {
            s.send(message.clone()).await;
        }
        // A raw line with an extra member after the id, as a client might write it.
        s.send(
            json!({"jsonrpc": "2.0", "id": 901, "method": "tools/list", "params": {}, "result": 1}),
        )
        .await;
        s.assert_quiet(era).await;

        s.ops.open("owner");
        let response = s.recv_some().await;
        assert_eq!(response["id"], 901);
        assert_eq!(answer(&response)["tool"], "lean_sync", "{era:?}");
        s.assert_quiet(era).await;

        // With an id nobody owns, the envelope errors are answered to it.
        for (i, message) in malformed.iter().take(8).enumerate() {
            let mut message = message.clone();
            if message.get("id").is_some() {
                message["id"] = json!(format!("free-{i}"));
            }
            s.send(message).await;
            let answer = s.recv_some().await;
            assert_eq!(answer["id"], format!("free-{i}"), "{era:?}: {answer}");
            assert!(answer["error"]["code"].is_i64(), "{answer}");
        }
    }
}

/// `notifications/cancelled` is read while every running slot is busy: a
/// running call and one waiting for a slot are both cancelled at once, and
/// neither answers (the reader used to wait for a slot before reading on).
#[tokio::test]
async fn cancellation_is_read_while_every_slot_is_busy() {
    for era in ERAS {
        let mut s = era
            .open_with(Stream::start_with(Config {
                status_delay: Duration::from_secs(3600),
                max_in_flight: 2,
                ..Config::default()
            }))
            .await;
        s.send(era.call("a", "lean_sync", sync("busy-a"))).await;
        s.send(era.call("b", "lean_sync", sync("busy-b"))).await;
        let mut started = vec![s.event().await, s.event().await];
        started.sort_by_key(|e| format!("{e:?}"));
        assert_eq!(
            started,
            [
                Event::Started("lean_sync", json!("a")),
                Event::Started("lean_sync", json!("b"))
            ]
        );
        // Both slots are taken: "c" waits for one.
        s.send(era.call("c", "lean_sync", sync("busy-c"))).await;
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c"}}))
            .await;
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "a"}}))
            .await;
        assert_eq!(s.event().await, Event::Dropped("lean_sync", json!("a")));
        // Requests are read too, and process-local ones need no slot.
        s.send(era.call("v", "beam_version", json!({}))).await;
        let version = s.recv_some().await;
        assert_eq!(version["id"], "v", "{version}");
        assert_eq!(s.event().await, Event::Started("beam_version", json!("v")));
        s.assert_quiet(era).await;
        s.ops.open("busy-b");
        s.ops.open("busy-c");
        assert_eq!(s.recv_some().await["id"], "b");
        s.assert_quiet(era).await;
        assert!(
            s.events.try_recv().is_err(),
            "the cancelled call that waited for a slot never ran"
        );
        assert_eq!(s.stats.snapshot().cancelled, 2);
    }
}

/// lean_handle_edit waiting behind a `lean_drop_workspace` fence is not
/// silent (issue 26, item 8): with a token it sends its preparation update at
/// once, and without one, past the status delay, its `beam.status` notice,
/// both while the fence still holds; it answers after the fence.
#[tokio::test]
async fn handle_edit_behind_a_fence_reports_progress_and_the_status_notice() {
    let mut s = Stream::start_with_status_delay(Duration::from_millis(20));
    let era = Era::Modern;
    let edit = || json!({"workspace": {"root": "/fast"}, "path": "Main.lean", "handle": "h"});
    s.send(era.call("drop", "lean_drop_workspace", drop_ws("fence")))
        .await;
    assert_eq!(
        s.event().await,
        Event::Started("lean_drop_workspace", json!("drop"))
    );
    let mut with_token = era.call("tok", "lean_handle_edit", edit());
    with_token["params"]["_meta"]["progressToken"] = json!("edit");
    s.send(with_token).await;
    let progress = s.recv_some().await;
    assert_eq!(progress["method"], "notifications/progress", "{progress}");
    assert_eq!(progress["params"]["progressToken"], "edit");
    let mut without = era.call("quiet", "lean_handle_edit", edit());
    without["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("notice");
    s.send(without).await;
    let mut notice = s.recv_some().await;
    // The fence's own notice may come first (it started earlier).
    while notice["params"]["data"]["requestId"] != "quiet" {
        assert_eq!(notice["params"]["logger"], "beam.status", "{notice}");
        assert!(notice.get("id").is_none(), "answered early: {notice}");
        notice = s.recv_some().await;
    }
    assert_eq!(notice["method"], "notifications/message", "{notice}");
    assert_eq!(notice["params"]["logger"], "beam.status");
    assert_eq!(notice["params"]["data"]["tool"], "lean_handle_edit");
    // Neither edit ran yet: both wait on the fence.
    assert_eq!(s.ops.running(), 1, "only the fence runs");
    s.ops.open("fence");
    let mut ids = Vec::new();
    while ids.len() < 3 {
        let message = s.recv_some().await;
        if let Some(id) = message.get("id") {
            ids.push(id.clone());
        }
    }
    assert_eq!(ids[0], "drop", "{ids:?}");
}
