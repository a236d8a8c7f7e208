//! What an operator sees of a running server, read once per request of
//! `/metrics` or `/status`: the protocol core's counters (`crate::stats`), the
//! transport's own (connections, sessions, streams), and the broker's
//! runtimes and bounds as `beam_stats` reports them — asked of the handler
//! directly, so that looking is not counted as a call.

use std::collections::BTreeMap;

use serde::Deserialize;

use hyper::Response;
use hyper::header::{self, HeaderValue};

use super::{Body, Server};
use crate::context::{CallContext, Era};
use crate::identity;
use crate::results::RuntimeStats;
use crate::stats::{Latency, RecentError};
use crate::surface::{BeamStatsArgs, Handler, Tool, ToolCall};
use crate::wire::RequestId;

/// A text response of `/metrics` or `/status`.
pub(super) fn text(content_type: &'static str, body: String) -> Response<Body> {
    let mut response = Response::new(Body::text(body));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// One bound and its use, as `beam_stats.limits` names it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(super) struct Bound {
    pub limit: Option<u64>,
    #[serde(default)]
    pub used: Option<u64>,
    #[serde(default)]
    pub busy: Option<u64>,
    pub per: String,
}

/// The broker's part of `beam_stats`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct BrokerView {
    pub replica: String,
    pub pid: u32,
    pub limits: BTreeMap<String, Bound>,
    pub workspaces: BTreeMap<String, RuntimeStats>,
}

/// The transport's counters.
#[derive(Debug, Clone, Default)]
pub(super) struct HttpUse {
    pub connections: usize,
    pub max_connections: usize,
    pub refused_connections: u64,
    pub sessions: usize,
    pub max_sessions: usize,
    pub streams: usize,
    pub legacy_requests: u64,
    pub modern_requests: u64,
}

#[derive(Debug, Clone, Default)]
pub(super) struct Observation {
    pub version: &'static str,
    pub uptime_ms: u64,
    pub draining: bool,
    /// Tool calls by (tool, era).
    pub calls: Vec<(String, String, u64)>,
    pub cancelled: u64,
    pub protocol_errors: u64,
    /// Tool errors by (tool, code).
    pub errors: Vec<(&'static str, &'static str, u64)>,
    pub latencies: Vec<Latency>,
    pub recent_errors: Vec<RecentError>,
    /// Calls admitted (running or waiting), and running (holding a slot).
    pub admitted: usize,
    pub running: usize,
    pub max_in_flight: usize,
    pub http: HttpUse,
    /// `None` when the handler answered `beam_stats` with an error (a test
    /// double), or its answer did not read as `beam_stats`.
    pub broker: Option<BrokerView>,
}

impl<O: Handler + 'static> Server<O> {
    pub(super) async fn observe(&self) -> Observation {
        let stats = self.dispatcher.stats();
        let requests = stats.snapshot();
        let calls = requests
            .by_tool
            .iter()
            .flat_map(|(tool, eras)| {
                eras.iter()
                    .map(move |(era, n)| (tool.clone(), era.clone(), *n))
            })
            .collect();
        let ctx = CallContext::new(
            RequestId::Number(0),
            Era::Direct,
            Tool::BeamStats.into(),
            None,
            None,
            None,
        );
        let call = ToolCall::BeamStats(BeamStatsArgs {});
        let broker = match self.dispatcher.handler().handle(&ctx, call).await {
            Ok(value) => serde_json::from_value::<BrokerView>(value).ok(),
            Err(_) => None,
        };
        Observation {
            version: identity::VERSION,
            uptime_ms: stats.uptime_ms(),
            draining: self.draining.is_draining(),
            calls,
            cancelled: requests.cancelled,
            protocol_errors: requests.protocol_errors,
            errors: stats.errors_by_code(),
            latencies: stats.latencies(),
            recent_errors: stats.recent_errors(),
            admitted: self.dispatcher.admitted(),
            running: self.dispatcher.running(),
            max_in_flight: self.dispatcher.config().max_in_flight,
            http: HttpUse {
                connections: self.admission.proved(),
                max_connections: self.config.max_connections,
                refused_connections: self
                    .refused_connections
                    .load(std::sync::atomic::Ordering::Relaxed),
                sessions: self.sessions.len(),
                max_sessions: self.config.max_sessions,
                streams: self.streams.load(std::sync::atomic::Ordering::Relaxed),
                legacy_requests: self
                    .legacy_requests
                    .load(std::sync::atomic::Ordering::Relaxed),
                modern_requests: self
                    .modern_requests
                    .load(std::sync::atomic::Ordering::Relaxed),
            },
            broker,
        }
    }
}
