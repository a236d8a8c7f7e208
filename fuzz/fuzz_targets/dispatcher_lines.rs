//! The protocol core end to end: a short sequence of lines (both eras, the
//! lifecycle, arbitrary `_meta`, tools/call with schema-derived arguments)
//! through one session of the real `Dispatcher`, with operations that answer at
//! once.
//!
//! Properties: no panic; a notification is never answered; every immediate
//! answer is one JSON-RPC response line for the request's id (or null); every
//! call admitted is answered exactly once through the outbound channel, and
//! nothing else is; a request reusing an active id is not answered, however
//! its envelope is malformed.
#![no_main]

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use arbitrary::{Result, Unstructured};
use lean_beam_mcp::context::CallContext;
use lean_beam_mcp::identity;
use lean_beam_mcp::mcp::config::Config;
use lean_beam_mcp::mcp::dispatcher::{Dispatcher, Reply};
use lean_beam_mcp::mcp::era;
use lean_beam_mcp::mcp::jsonrpc::{self, Incoming};
use lean_beam_mcp::mcp::session::Session;
use lean_beam_mcp::stats::Stats;
use lean_beam_mcp::surface::{Handler, Tool, ToolCall, ToolOutcome};
use lean_beam_mcp::wire::RequestId;
use lean_beam_mcp_fuzz::{from_schema, number, string, value};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

/// Answers every call at once with its tool's name.
struct Immediate;

impl Handler for Immediate {
    async fn handle(&self, ctx: &CallContext, _call: ToolCall) -> ToolOutcome {
        Ok(json!({ "tool": ctx.tool.name }))
    }
}

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
});

static SCHEMAS: LazyLock<Vec<Value>> = LazyLock::new(|| {
    Tool::ALL
        .iter()
        .map(|t| serde_json::from_str(t.input_schema()).expect("schema"))
        .collect()
});

const METHODS: &[&str] = &[
    "tools/call",
    "tools/call",
    "tools/list",
    "server/discover",
    "initialize",
    "notifications/initialized",
    "notifications/cancelled",
    "ping",
    "logging/setLevel",
    "resources/list",
];

fn meta(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut m = Map::new();
    if u.ratio(4u8, 5u8)? {
        let v = if u.ratio(7u8, 8u8)? {
            json!(identity::MODERN_VERSION)
        } else {
            json!(string(u)?)
        };
        m.insert(era::META_PROTOCOL_VERSION.into(), v);
    }
    if u.ratio(4u8, 5u8)? {
        let v = if u.ratio(7u8, 8u8)? {
            json!({})
        } else {
            value(u, 1)?
        };
        m.insert(era::META_CLIENT_CAPABILITIES.into(), v);
    }
    if u.ratio(1u8, 4u8)? {
        m.insert(
            era::META_LOG_LEVEL.into(),
            json!(*u.choose(&["debug", "error", "loud"])?),
        );
    }
    if u.ratio(1u8, 4u8)? {
        m.insert("progressToken".into(), number(u)?);
    }
    if u.ratio(1u8, 8u8)? {
        m.insert(string(u)?, value(u, 1)?);
    }
    Ok(Value::Object(m))
}

fn message(u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    if u.ratio(1u8, 16u8)? {
        let n = u.int_in_range(0usize..=64)?;
        return Ok(u.bytes(n)?.to_vec());
    }
    let method = *u.choose(METHODS)?;
    let mut m = json!({"jsonrpc": "2.0", "method": method});
    let notification = method.starts_with("notifications/");
    if !notification || u.ratio(1u8, 10u8)? {
        // Few distinct ids, so that reuse happens.
        m["id"] = if u.ratio(3u8, 4u8)? {
            json!(u.int_in_range(0u8..=3)?)
        } else {
            json!(string(u)?)
        };
    }
    let mut params = Map::new();
    match method {
        "tools/call" => {
            let tool = *u.choose(&Tool::ALL)?;
            params.insert("name".into(), json!(tool.name()));
            if u.ratio(7u8, 8u8)? {
                params.insert(
                    "arguments".into(),
                    from_schema(u, &SCHEMAS[tool.index()], 4)?,
                );
            }
        }
        "initialize" => {
            params.insert("protocolVersion".into(), json!(identity::LEGACY_VERSION));
            params.insert("capabilities".into(), json!({}));
            params.insert("clientInfo".into(), json!({"name": "fuzz"}));
        }
        "notifications/cancelled" => {
            params.insert("requestId".into(), json!(u.int_in_range(0u8..=3)?));
        }
        "logging/setLevel" => {
            params.insert(
                "level".into(),
                json!(*u.choose(&["debug", "error", "loud"])?),
            );
        }
        _ => {}
    }
    if u.ratio(1u8, 2u8)? {
        params.insert("_meta".into(), meta(u)?);
    }
    if u.ratio(1u8, 16u8)? {
        params.insert(string(u)?, value(u, 1)?);
    }
    if !params.is_empty() || u.ratio(1u8, 2u8)? {
        m["params"] = Value::Object(params);
    }
    // A malformed envelope around a readable id.
    if u.ratio(1u8, 8u8)? {
        let object = m.as_object_mut().expect("an object");
        match u.int_in_range(0u8..=4)? {
            0 => drop(object.insert(string(u)?, value(u, 1)?)),
            1 => drop(object.insert("params".into(), json!([]))),
            2 => drop(object.insert("jsonrpc".into(), json!("1.0"))),
            3 => drop(object.remove("method")),
            _ => drop(object.insert("result".into(), json!({}))),
        }
    }
    Ok(serde_json::to_vec(&m).expect("serializes"))
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let mut lines = Vec::new();
    for _ in 0..8 {
        match message(&mut u) {
            Ok(line) => lines.push(line),
            Err(_) => break,
        }
    }
    RUNTIME.block_on(run(lines));
});

async fn run(lines: Vec<Vec<u8>>) {
    let dispatcher = Dispatcher::new(
        Arc::new(Immediate),
        Arc::new(Stats::default()),
        Config::default(),
    );
    let session = Arc::new(Session::default());
    let (out, mut rx) = tokio::sync::mpsc::channel::<String>(64);
    let mut admitted: HashMap<String, usize> = HashMap::new();
    for line in &lines {
        let decoded = jsonrpc::decode(line);
        let request_id = match &decoded {
            Ok(Incoming::Request { id, .. }) => Some(id.clone()),
            Ok(Incoming::Notification { .. }) => None,
            Err(rejected) => rejected.id.clone(),
        };
        let was_active = request_id.as_ref().is_some_and(|id| session.is_active(id));
        let before = session.active_count();
        let reply = dispatcher.handle_line(&session, line, &out).await;
        match reply {
            Reply::Line(answer) => {
                assert!(!answer.contains('\n'));
                let answer: Value = serde_json::from_str(&answer).expect("an answer is JSON");
                assert_eq!(answer["jsonrpc"], "2.0");
                assert!(
                    answer.get("result").is_some() ^ answer.get("error").is_some(),
                    "{answer}"
                );
                assert!(!was_active, "answered a request that reused an active id");
                match (&decoded, &request_id) {
                    (Ok(Incoming::Notification { .. }), _) => {
                        panic!("a notification was answered: {answer}")
                    }
                    (_, Some(id)) => {
                        assert_eq!(RequestId::from_value(&answer["id"]).as_ref(), Some(id))
                    }
                    (Err(_), None) => assert!(answer["id"].is_null(), "{answer}"),
                    (Ok(_), None) => unreachable!(),
                }
            }
            Reply::None => {
                assert!(
                    decoded.is_ok() || was_active,
                    "a malformed message went unanswered"
                );
                if let (Ok(_), Some(id)) = (&decoded, &request_id) {
                    if !was_active {
                        // Admitted: it is active now and will answer later.
                        assert_eq!(
                            session.active_count(),
                            before + 1,
                            "a request vanished unanswered"
                        );
                        *admitted.entry(id.to_value().to_string()).or_default() += 1;
                    }
                }
            }
        }
    }
    drop(out);
    // Let every admitted call run and answer.
    dispatcher.drain().await;
    let mut answered: HashMap<String, usize> = HashMap::new();
    while let Ok(line) = rx.try_recv() {
        let message: Value = serde_json::from_str(&line).expect("JSON");
        if message.get("method").is_some() {
            continue;
        }
        *answered.entry(message["id"].to_string()).or_default() += 1;
    }
    // Cancelled calls may be unanswered; none is answered twice.
    for (id, n) in &answered {
        assert!(
            admitted.get(id).is_some_and(|a| n <= a),
            "{id} answered {n} times, admitted {admitted:?}"
        );
    }
    assert_eq!(session.active_count(), 0);
}
