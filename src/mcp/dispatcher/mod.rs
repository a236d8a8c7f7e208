//! The transport-independent protocol core: envelope → era gate → admission →
//! generated parse/validate → `Handler` (the typed `Operations`) → result
//! envelope. Both the stdio and the HTTP transports feed it decoded lines and
//! an `Outbound` channel.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio::sync::{Semaphore, watch};

mod tool_call;

use super::config::Config;
use super::era::{self, Family, META_SERVER_INFO};
use super::fence::{FenceScope, RootFences};
use super::jsonrpc::{self, Incoming, RpcError};
use super::params::{check_tools_list, only_members, validate_initialize};
use super::session::{CancelOutcome, Limits, Session};
use super::share::{RootShares, Share};
use crate::context::{Era, LogLevel, Outbound};
use crate::fifo_timer::FifoTimer;
use crate::identity;
use crate::identity::SUPPORTED_MODERN;
use crate::stats::Stats;
use crate::surface::{Handler, ToolOutcome};
use crate::wire::RequestId;
use crate::{log_debug, log_info, log_warn};

/// Results that never change, serialized once. A tools/list result is the
/// build-time catalog (`ToolSet::catalog_json`) between `{"tools":` and its
/// era's tail, joined only in each answer's line: no 212 KB copy of it is
/// made at start-up or kept.
#[derive(Debug)]
struct Cached {
    modern_tools_list_tail: String,
    modern_discover: String,
    modern_empty: String,
    modern_suffix: String,
}

/// What a tools/list result opens with, before the catalog.
const TOOLS_LIST_HEAD: &str = r#"{"tools":"#;
/// A legacy tools/list result's tail, after the catalog.
const LEGACY_TOOLS_LIST_TAIL: &str = "}";

impl Cached {
    fn new() -> Self {
        let server_info = identity::server_info();
        let meta = json!({ META_SERVER_INFO: server_info });
        let modern_suffix = format!(r#","resultType":"complete","_meta":{meta}"#);
        let modern_cache = r#","ttlMs":3600000,"cacheScope":"public""#;
        Cached {
            modern_tools_list_tail: format!("{modern_cache}{modern_suffix}}}"),
            modern_discover: {
                let body = json!({
                    "supportedVersions": SUPPORTED_MODERN,
                    "capabilities": capabilities(),
                    "instructions": identity::INSTRUCTIONS,
                });
                let body = body.to_string();
                format!("{}{modern_cache}{modern_suffix}}}", &body[..body.len() - 1])
            },
            modern_empty: format!("{{{}}}", &modern_suffix[1..]),
            modern_suffix,
        }
    }
}

/// An immediate answer's `result`, serialized: whole, or a tools/list
/// catalog between its head and tail (joined in the answer's line).
enum Answer<'a> {
    Json(Cow<'a, str>),
    ToolsList { catalog: &'a str, tail: &'a str },
}

impl Answer<'_> {
    fn line(&self, id: &RequestId) -> String {
        match self {
            Answer::Json(result) => jsonrpc::response_line(id, result),
            Answer::ToolsList { catalog, tail } => {
                jsonrpc::response_line_of(id, &[TOOLS_LIST_HEAD, catalog, tail])
            }
        }
    }
}

fn capabilities() -> Value {
    json!({ "tools": { "listChanged": false }, "logging": {} })
}

/// The protocol core, shared by every stream of one server process.
pub struct Dispatcher<O> {
    ops: Arc<O>,
    stats: Arc<Stats>,
    /// The fences of sessionless (modern HTTP) requests, one per root.
    root_fences: Arc<RootFences>,
    /// The shares of sessionless requests, one per root (see `share`).
    root_shares: RootShares,
    /// The global cap on running calls.
    slots: Arc<Semaphore>,
    /// Calls admitted and not yet finished, across every stream (for drain).
    admitted: watch::Sender<usize>,
    config: Config,
    cached: Cached,
    /// The status notice's delay: one clock for every call (see
    /// [`FifoTimer`]).
    status_timer: FifoTimer,
}

/// One admitted call, counted until it has finished.
struct Counted(watch::Sender<usize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

/// What the transport should do after a message.
pub enum Reply {
    /// Nothing to send now (a notification, an ignored duplicate, or a call that
    /// answers later through the outbound channel).
    None,
    /// Send this line now.
    Line(String),
}

impl<O: Handler + 'static> Dispatcher<O> {
    pub fn new(ops: Arc<O>, stats: Arc<Stats>, config: Config) -> Arc<Self> {
        let cached = Cached::new();
        Arc::new(Self {
            ops,
            stats,
            root_fences: Arc::default(),
            root_shares: RootShares::new(config.max_in_flight_per_client),
            slots: Arc::new(Semaphore::new(config.max_in_flight)),
            admitted: watch::channel(0).0,
            status_timer: FifoTimer::new(config.status_delay),
            config,
            cached,
        })
    }

    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// The operations behind the dispatcher (the HTTP transport's `/metrics`
    /// and `/status` read `beam_stats` through it, as no call is counted).
    pub fn handler(&self) -> &O {
        &self.ops
    }

    /// Calls holding a global running slot now (of `max_in_flight`).
    pub fn running(&self) -> usize {
        self.config.max_in_flight - self.slots.available_permits()
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// A stdio stream's session: its own full fence, and the bound on admitted
    /// calls that pushes back on its reader.
    pub fn stream_session(&self) -> Session {
        Session::new(
            Limits {
                share: None,
                admitted: Some(Arc::new(Semaphore::new(
                    self.config.max_admitted_per_stream,
                ))),
            },
            FenceScope::default(),
        )
    }

    /// A legacy HTTP session: a full fence over its own calls, and its share
    /// of the running slots.
    pub fn client_session(&self) -> Session {
        Session::new(
            Limits {
                share: Some(Arc::new(Share::new(self.config.max_in_flight_per_client))),
                admitted: None,
            },
            FenceScope::default(),
        )
    }

    /// A sessionless (modern HTTP) request's session: fenced with the other
    /// calls on its root only, and sharing that root's share of the running
    /// slots (see `share`).
    pub fn sessionless(&self) -> Session {
        Session::new(
            Limits::default(),
            FenceScope::Root(Arc::clone(&self.root_fences)),
        )
    }

    /// Handle one raw line. Immediate answers are returned; a tool call answers
    /// later through `out`.
    pub async fn handle_line(
        self: &Arc<Self>,
        session: &Arc<Session>,
        line: &[u8],
        out: &Outbound,
    ) -> Reply {
        match jsonrpc::decode(line) {
            Ok(message) => self.handle_message(session, message, out).await,
            Err(rejected) => {
                self.stats.record_protocol_error();
                if let Some(id) = rejected.id.as_ref().filter(|id| session.is_active(id)) {
                    // However it is malformed, an answer would be a second
                    // terminal response for the call that owns this id.
                    log_warn!(
                        "ignored a malformed request reusing active id {id}: {}",
                        rejected.error.message
                    );
                    return Reply::None;
                }
                log_info!("refused message: {}", rejected.error.message);
                Reply::Line(jsonrpc::error_line(rejected.id.as_ref(), &rejected.error))
            }
        }
    }

    pub async fn handle_message(
        self: &Arc<Self>,
        session: &Arc<Session>,
        message: Incoming,
        out: &Outbound,
    ) -> Reply {
        match message {
            Incoming::Notification { method, params } => {
                self.handle_notification(session, &method, params.as_ref());
                Reply::None
            }
            Incoming::Request { id, method, params } => {
                if session.is_active(&id) {
                    // Answering would create two indistinguishable responses.
                    log_warn!("ignored request {method} reusing active id {id}");
                    return Reply::None;
                }
                match self
                    .handle_request(session, &id, &method, params, out)
                    .await
                {
                    Ok(Some(answer)) => Reply::Line(answer.line(&id)),
                    Ok(None) => Reply::None,
                    Err(error) => {
                        self.stats.record_protocol_error();
                        log_info!("refused {method} (id {id}): {}", error.message);
                        Reply::Line(jsonrpc::error_line(Some(&id), &error))
                    }
                }
            }
        }
    }

    fn handle_notification(
        &self,
        session: &Session,
        method: &str,
        params: Option<&Map<String, Value>>,
    ) {
        match method {
            "notifications/initialized" => {
                if let Family::LegacyInitializing(revision) = session.family() {
                    session.set_family(Family::LegacyReady(revision));
                } else {
                    log_debug!(
                        "ignored notifications/initialized in state {:?}",
                        session.family()
                    );
                }
            }
            "notifications/cancelled" => {
                let Some(id) = params
                    .and_then(|p| p.get("requestId"))
                    .and_then(RequestId::from_value)
                else {
                    log_debug!("ignored notifications/cancelled without a valid requestId");
                    return;
                };
                match session.cancel(&id) {
                    CancelOutcome::Cancelled => log_debug!("cancelling request {id}"),
                    CancelOutcome::NotCancellable => {
                        log_info!(
                            "request {id} is not cancellable once admitted; it runs to completion"
                        )
                    }
                    CancelOutcome::Unknown => {
                        log_debug!("cancellation for unknown or finished request {id}")
                    }
                }
            }
            other => log_debug!("ignored notification {other}"),
        }
    }

    /// Returns the serialized `result` of an immediate answer (the cached
    /// ones borrowed: a tools/list answer is copied once, into its line),
    /// `None` when the answer comes later, or a JSON-RPC error.
    async fn handle_request(
        self: &Arc<Self>,
        session: &Arc<Session>,
        id: &RequestId,
        method: &str,
        params: Option<Map<String, Value>>,
        out: &Outbound,
    ) -> Result<Option<Answer<'_>>, RpcError> {
        let modern = method == "server/discover" || era::is_modern(params.as_ref());
        if modern {
            if let Some(revision) = session.family().legacy_revision() {
                return Err(RpcError::invalid_request(format!(
                    "this stream selected MCP {revision} with initialize; a {} request cannot be mixed into it",
                    identity::MODERN_VERSION
                )));
            }
            let meta = era::validate_modern(params.as_ref())?;
            return match method {
                "server/discover" => {
                    only_members(params.as_ref(), &["_meta"])?;
                    Ok(Some(Answer::Json(Cow::Borrowed(
                        &self.cached.modern_discover,
                    ))))
                }
                "tools/list" => {
                    check_tools_list(params.as_ref())?;
                    session.select_modern();
                    Ok(Some(Answer::ToolsList {
                        catalog: self.config.tools.catalog_json(),
                        tail: &self.cached.modern_tools_list_tail,
                    }))
                }
                "tools/call" => {
                    session.select_modern();
                    self.start_call(session, id, params, Era::Modern, meta.log_level, out)
                        .await
                        .map(|answer| answer.map(|line| Answer::Json(Cow::Owned(line))))
                }
                "initialize" | "ping" | "logging/setLevel" => Err(RpcError::new(
                    jsonrpc::METHOD_NOT_FOUND,
                    format!(
                        "`{method}` is not part of MCP {}: it has no lifecycle, ping or session log level",
                        identity::MODERN_VERSION
                    ),
                )),
                other => Err(RpcError::method_not_found(other)),
            };
        }

        let family = session.family();
        if family == Family::Modern {
            return Err(if method == "initialize" {
                RpcError::invalid_request(format!(
                    "this stream selected MCP {} with per-request metadata; initialize cannot be mixed into it",
                    identity::MODERN_VERSION
                ))
            } else {
                RpcError::invalid_params(format!(
                    "missing per-request _meta: this stream speaks MCP {} and every request carries io.modelcontextprotocol/protocolVersion and clientCapabilities",
                    identity::MODERN_VERSION
                ))
            });
        }
        match method {
            "ping" => Ok(Some(Answer::Json(self.empty_result(Era::Legacy)))),
            "initialize" if family == Family::Unselected => {
                let requested = validate_initialize(params.as_ref())?;
                let revision = era::negotiate_legacy(requested);
                session.set_family(Family::LegacyInitializing(revision));
                Ok(Some(Answer::Json(Cow::Owned(
                    self.initialize_result(revision),
                ))))
            }
            "initialize" => Err(RpcError::invalid_request(
                "initialize was already received on this stream",
            )),
            "tools/list" | "tools/call" | "logging/setLevel"
                if !matches!(family, Family::LegacyReady(_)) =>
            {
                Err(RpcError::invalid_request(format!(
                    "`{method}` before the lifecycle completed: send initialize, then notifications/initialized (or use MCP {} per-request _meta)",
                    identity::MODERN_VERSION
                )))
            }
            "tools/list" => {
                check_tools_list(params.as_ref())?;
                Ok(Some(Answer::ToolsList {
                    catalog: self.config.tools.catalog_json(),
                    tail: LEGACY_TOOLS_LIST_TAIL,
                }))
            }
            "tools/call" => {
                let level = session.log_level();
                self.start_call(session, id, params, Era::Legacy, Some(level), out)
                    .await
                    .map(|answer| answer.map(|line| Answer::Json(Cow::Owned(line))))
            }
            "logging/setLevel" => {
                let level = params
                    .as_ref()
                    .and_then(|p| p.get("level"))
                    .and_then(Value::as_str)
                    .and_then(|l| l.parse::<LogLevel>().ok())
                    .ok_or_else(|| {
                        RpcError::invalid_params(
                            "logging/setLevel needs `level`: one of debug, info, notice, warning, error, critical, alert, emergency",
                        )
                    })?;
                only_members(params.as_ref(), &["level", "_meta"])?;
                session.set_log_level(level);
                Ok(Some(Answer::Json(self.empty_result(Era::Legacy))))
            }
            other => Err(RpcError::method_not_found(other)),
        }
    }

    fn empty_result(&self, era: Era) -> Cow<'_, str> {
        match era {
            Era::Modern => Cow::Borrowed(&self.cached.modern_empty),
            _ => Cow::Borrowed("{}"),
        }
    }

    /// The same result in every supported revision but for the one it names.
    fn initialize_result(&self, revision: &str) -> String {
        json!({
            "protocolVersion": revision,
            "capabilities": capabilities(),
            "serverInfo": identity::server_info(),
            "instructions": identity::INSTRUCTIONS,
        })
        .to_string()
    }

    /// A success: `{"content":[{"type":"text","text":…}],"structuredContent":…,"isError":false}`,
    /// one result in two forms, serialized once. A tool error:
    /// `{"content":[{"type":"text","text":…}],"isError":true}`, its
    /// `{code, message, data?}` in the text only: `structuredContent` is the
    /// tool's `outputSchema` shape, which an error is not, and SDK-v1 hosts
    /// (TypeScript SDK <= 1.32, the Inspectors, Gemini CLI, mcp-remote)
    /// validate it even on errors and then show their own complaint instead
    /// of the error (typescript-sdk#1943).
    pub fn tool_result(&self, era: Era, outcome: &ToolOutcome) -> String {
        let structured = match outcome {
            Ok(value) => serde_json::to_string(value),
            Err(error) => serde_json::to_string(error),
        }
        .expect("a JSON value serializes");
        let suffix = match era {
            Era::Modern => self.cached.modern_suffix.as_str(),
            _ => "",
        };
        let mut result = String::with_capacity(2 * structured.len() + suffix.len() + 96);
        result.push_str(r#"{"content":[{"type":"text","text":"#);
        // The text form: the same JSON as a string literal.
        result.push_str(&serde_json::to_string(structured.as_str()).expect("a string serializes"));
        if outcome.is_ok() {
            result.push_str(r#"}],"structuredContent":"#);
            result.push_str(&structured);
            result.push_str(r#","isError":false"#);
        } else {
            result.push_str(r#"}],"isError":true"#);
        }
        result.push_str(suffix);
        result.push('}');
        result
    }

    /// Wait until every admitted call has finished (transport shutdown).
    pub async fn drain(&self) {
        let mut admitted = self.admitted.subscribe();
        let _ = admitted.wait_for(|n| *n == 0).await;
    }

    /// Calls admitted and not yet finished, across every stream.
    pub fn admitted(&self) -> usize {
        *self.admitted.borrow()
    }

    /// The count of admitted calls as it changes: what waits on it sees each
    /// admission and each finished call (the in-process tests wait on it,
    /// never polling).
    pub fn admitted_changes(&self) -> watch::Receiver<usize> {
        self.admitted.subscribe()
    }
}
