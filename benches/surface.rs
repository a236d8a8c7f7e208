//! `cargo bench`: the per-request costs of the protocol core, in-process.
//!
//! Targets (issue 2): parse+validate of a typical `lean_sync` payload < 5 µs;
//! serving tools/list in-process < 20 µs. The stdio round trip, cold start and
//! idle RSS are measured by `scripts/bench-stdio.py`.

use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use divan::Bencher;
use lean_beam_mcp::context::CallContext;
use lean_beam_mcp::mcp::config::Config;
use lean_beam_mcp::mcp::dispatcher::{Dispatcher, Reply};
use lean_beam_mcp::mcp::session::Session;
use lean_beam_mcp::stats::Stats;
use lean_beam_mcp::surface::{self, Operations, ToolError};
use serde_json::{Value, json};

fn main() {
    divan::main();
}

/// Operations that are never reached by these benchmarks (tools/list and
/// argument parsing do not dispatch).
struct Unused;

macro_rules! unused_operations {
    ($($method:ident: $args:ty => $result:ty,)*) => {
        impl Operations for Unused {
            $(async fn $method(&self, _ctx: &CallContext, _args: $args) -> Result<$result, ToolError> {
                unreachable!("benchmarks do not dispatch")
            })*
        }
    };
}

lean_beam_mcp::for_each_tool!(unused_operations);

fn lean_sync_arguments() -> Value {
    json!({
        "workspace": {"root": "/home/user/projects/mathlib-demo"},
        "path": "Demo/Basic.lean",
        "diagnostic_scope": "all",
        "diagnostics_in_result": true,
    })
}

/// Validate against the emitted schema and deserialize into `LeanSyncArgs`.
#[divan::bench(sample_count = 500, sample_size = 100)]
fn parse_validate_lean_sync(bencher: Bencher) {
    let arguments = lean_sync_arguments();
    bencher
        .with_inputs(|| arguments.clone())
        .bench_values(|arguments| surface::parse("lean_sync", Some(arguments)).expect("valid"));
}

/// The same, starting from the arguments' JSON text.
#[divan::bench(sample_count = 500, sample_size = 100)]
fn parse_validate_lean_sync_from_text(bencher: Bencher) {
    let text = lean_sync_arguments().to_string();
    bencher.bench(|| {
        let arguments: Value = serde_json::from_str(divan::black_box(&text)).expect("json");
        surface::parse("lean_sync", Some(arguments)).expect("valid")
    });
}

/// An invalid payload: the error path lists every violation.
#[divan::bench(sample_count = 500, sample_size = 100)]
fn parse_validate_lean_sync_invalid(bencher: Bencher) {
    let arguments = json!({"workspace": {"root": 1, "alias": "x"}, "path": 3, "extra": true});
    bencher
        .with_inputs(|| arguments.clone())
        .bench_values(|arguments| {
            surface::parse("lean_sync", Some(arguments)).expect_err("invalid")
        });
}

/// Poll a future that must complete without waiting (tools/list never awaits).
fn ready<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the request did not complete synchronously"),
    }
}

fn dispatcher() -> Arc<Dispatcher<Unused>> {
    Dispatcher::new(
        Arc::new(Unused),
        Arc::new(Stats::default()),
        Config::default(),
    )
}

fn outbound() -> lean_beam_mcp::context::Outbound {
    // Immediate answers are returned, not sent; the receiver may be dropped.
    tokio::sync::mpsc::channel(1).0
}

fn answer(reply: Reply) -> String {
    match reply {
        Reply::Line(line) => line,
        Reply::None => panic!("no immediate answer"),
    }
}

/// The answer's length: the line is dropped inside the measured loop, as the
/// server drops it after writing. (Returning the 34 KB line would make divan
/// keep a sample's worth of them alive and measure heap growth instead.)
fn answered(reply: Reply) -> usize {
    answer(reply).len()
}

/// A modern tools/list line through `handle_line`: decode, envelope and era
/// checks, metadata validation, and the cached catalog.
#[divan::bench(sample_count = 500, sample_size = 100)]
fn tools_list_modern(bencher: Bencher) {
    let dispatcher = dispatcher();
    let session = Arc::new(Session::default());
    let out = outbound();
    let line = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}}}})
    .to_string();
    bench_tools_list(bencher, &dispatcher, &session, &out, &line);
}

/// A legacy tools/list line on an initialized stream.
#[divan::bench(sample_count = 500, sample_size = 100)]
fn tools_list_legacy(bencher: Bencher) {
    let dispatcher = dispatcher();
    let session = Arc::new(Session::default());
    let out = outbound();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench"}}})
    .to_string();
    answer(ready(dispatcher.handle_line(
        &session,
        init.as_bytes(),
        &out,
    )));
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    ready(dispatcher.handle_line(&session, initialized.as_bytes(), &out));
    let line = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    bench_tools_list(bencher, &dispatcher, &session, &out, line);
}

/// Checks that `line` lists the tools on `session`, then times answering it.
fn bench_tools_list(
    bencher: Bencher,
    dispatcher: &Arc<Dispatcher<Unused>>,
    session: &Arc<Session>,
    out: &lean_beam_mcp::context::Outbound,
    line: &str,
) {
    let first = answer(ready(dispatcher.handle_line(session, line.as_bytes(), out)));
    assert!(first.contains("\"tools\":["), "{first}");
    bencher.bench(|| {
        answered(ready(dispatcher.handle_line(
            session,
            divan::black_box(line.as_bytes()),
            out,
        )))
    });
}
