//! The transport-independent protocol core: envelope → era gate → admission →
//! generated parse/validate → `Operations` → result envelope. Both the stdio and
//! the HTTP transports feed it decoded lines and an `Outbound` channel.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::era::{self, Family, LEGACY_VERSION, META_SERVER_INFO, SUPPORTED_MODERN};
use super::fence::{Admission, Fence};
use super::jsonrpc::{self, Incoming, RequestId, RpcError};
use super::session::{CancelOutcome, Session};
use crate::context::{CallContext, Cancellation, Era, LogLevel, Outbound};
use crate::identity;
use crate::stats::Stats;
use crate::surface::{
    self, ErrorCode, Operations, ParseError, ProgressClass, StatusNotice, ToolCall, ToolError,
    ToolOutcome,
};
use crate::{log_debug, log_info, log_warn};

/// Tunables of the protocol core.
#[derive(Debug, Clone)]
pub struct Config {
    /// How long a call without a progress token may run before its one
    /// `beam.status` notice.
    pub status_delay: Duration,
    /// Calls admitted and not yet finished, across all streams. The reader waits
    /// for a slot, which pushes back on a client that floods requests.
    pub max_in_flight: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            status_delay: Duration::from_secs(2),
            max_in_flight: 256,
        }
    }
}

impl Config {
    /// Defaults, with `LEAN_BEAM_STATUS_DELAY_MS` honoured (tests shorten it).
    pub fn from_env() -> Self {
        let mut config = Self::default();
        if let Some(ms) = std::env::var("LEAN_BEAM_STATUS_DELAY_MS")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            config.status_delay = Duration::from_millis(ms);
        }
        config
    }
}

/// Results that never change, serialized once.
#[derive(Debug)]
struct Cached {
    legacy_tools_list: String,
    modern_tools_list: String,
    modern_discover: String,
    modern_empty: String,
    modern_suffix: String,
}

impl Cached {
    fn new() -> Self {
        let server_info = identity::server_info();
        let meta = json!({ META_SERVER_INFO: server_info });
        let modern_suffix = format!(r#","resultType":"complete","_meta":{meta}"#);
        let modern_cache = r#","ttlMs":3600000,"cacheScope":"public""#;
        Cached {
            legacy_tools_list: format!(r#"{{"tools":{}}}"#, surface::CATALOG_JSON),
            modern_tools_list: format!(
                r#"{{"tools":{}{modern_cache}{modern_suffix}}}"#,
                surface::CATALOG_JSON
            ),
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

fn capabilities() -> Value {
    json!({ "tools": { "listChanged": false }, "logging": {} })
}

/// The protocol core, shared by every stream of one server process.
pub struct Dispatcher<O> {
    ops: Arc<O>,
    stats: Arc<Stats>,
    fence: Arc<Fence>,
    slots: Arc<Semaphore>,
    config: Config,
    cached: Cached,
}

/// What the transport should do after a message.
pub enum Reply {
    /// Nothing to send now (a notification, an ignored duplicate, or a call that
    /// answers later through the outbound channel).
    None,
    /// Send this line now.
    Line(String),
}

impl<O: Operations + 'static> Dispatcher<O> {
    pub fn new(ops: Arc<O>, stats: Arc<Stats>, config: Config) -> Arc<Self> {
        surface::warm();
        Arc::new(Self {
            ops,
            stats,
            fence: Arc::new(Fence::default()),
            slots: Arc::new(Semaphore::new(config.max_in_flight)),
            config,
            cached: Cached::new(),
        })
    }

    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
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
                    Ok(Some(result)) => Reply::Line(jsonrpc::response_line(&id, &result)),
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
                if session.family() == Family::LegacyInitializing {
                    session.set_family(Family::LegacyReady);
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

    /// Returns the serialized `result` of an immediate answer, `None` when the
    /// answer comes later, or a JSON-RPC error.
    async fn handle_request(
        self: &Arc<Self>,
        session: &Arc<Session>,
        id: &RequestId,
        method: &str,
        params: Option<Map<String, Value>>,
        out: &Outbound,
    ) -> Result<Option<String>, RpcError> {
        let modern = method == "server/discover" || era::is_modern(params.as_ref());
        if modern {
            if session.family().is_legacy() {
                return Err(RpcError::invalid_request(format!(
                    "this stream selected MCP {LEGACY_VERSION} with initialize; a {} request cannot be mixed into it",
                    era::MODERN_VERSION
                )));
            }
            let meta = era::validate_modern(params.as_ref())?;
            return match method {
                "server/discover" => {
                    only_members(params.as_ref(), &["_meta"])?;
                    Ok(Some(self.cached.modern_discover.clone()))
                }
                "tools/list" => {
                    check_tools_list(params.as_ref())?;
                    session.select_modern();
                    Ok(Some(self.cached.modern_tools_list.clone()))
                }
                "tools/call" => {
                    session.select_modern();
                    self.start_call(session, id, params, Era::Modern, meta.log_level, out)
                        .await
                }
                "initialize" | "ping" | "logging/setLevel" => Err(RpcError::new(
                    jsonrpc::METHOD_NOT_FOUND,
                    format!(
                        "`{method}` is not part of MCP {}: it has no lifecycle, ping or session log level",
                        era::MODERN_VERSION
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
                    era::MODERN_VERSION
                ))
            } else {
                RpcError::invalid_params(format!(
                    "missing per-request _meta: this stream speaks MCP {} and every request carries io.modelcontextprotocol/protocolVersion and clientCapabilities",
                    era::MODERN_VERSION
                ))
            });
        }
        match method {
            "ping" => Ok(Some(self.empty_result(Era::Legacy))),
            "initialize" if family == Family::Unselected => {
                validate_initialize(params.as_ref())?;
                session.set_family(Family::LegacyInitializing);
                Ok(Some(self.initialize_result()))
            }
            "initialize" => Err(RpcError::invalid_request(
                "initialize was already received on this stream",
            )),
            "tools/list" | "tools/call" | "logging/setLevel" if family != Family::LegacyReady => {
                Err(RpcError::invalid_request(format!(
                    "`{method}` before the lifecycle completed: send initialize, then notifications/initialized (or use MCP {} per-request _meta)",
                    era::MODERN_VERSION
                )))
            }
            "tools/list" => {
                check_tools_list(params.as_ref())?;
                Ok(Some(self.cached.legacy_tools_list.clone()))
            }
            "tools/call" => {
                let level = session.log_level();
                self.start_call(session, id, params, Era::Legacy, Some(level), out)
                    .await
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
                Ok(Some(self.empty_result(Era::Legacy)))
            }
            other => Err(RpcError::method_not_found(other)),
        }
    }

    fn empty_result(&self, era: Era) -> String {
        match era {
            Era::Modern => self.cached.modern_empty.clone(),
            _ => "{}".to_string(),
        }
    }

    fn initialize_result(&self) -> String {
        json!({
            "protocolVersion": LEGACY_VERSION,
            "capabilities": capabilities(),
            "serverInfo": identity::server_info(),
            "instructions": identity::INSTRUCTIONS,
        })
        .to_string()
    }

    /// Validate a tools/call and either answer at once (invalid input) or admit
    /// it and run it on its own task.
    async fn start_call(
        self: &Arc<Self>,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<Map<String, Value>>,
        era: Era,
        log_level: Option<LogLevel>,
        out: &Outbound,
    ) -> Result<Option<String>, RpcError> {
        let mut params = params
            .ok_or_else(|| RpcError::invalid_params("tools/call needs params with `name`"))?;
        for key in ["inputResponses", "requestState"] {
            if params.contains_key(key) {
                return Err(RpcError::invalid_params(format!(
                    "`{key}` continues a multi-round-trip request, but this server never returned input_required"
                )));
            }
        }
        only_members(Some(&params), &["name", "arguments", "_meta"])?;
        let progress_token = era::progress_token(Some(&params))?;
        let name = match params.remove("name") {
            Some(Value::String(name)) => name,
            _ => return Err(RpcError::invalid_params("tools/call needs a string `name`")),
        };
        let arguments = match params.remove("arguments") {
            None => None,
            Some(v @ Value::Object(_)) => Some(v),
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "tools/call `arguments` must be an object",
                ));
            }
        };
        let call = match surface::parse(&name, arguments) {
            Ok(call) => call,
            Err(ParseError::UnknownTool(name)) => return Err(unknown_tool(&name)),
            Err(invalid) => {
                let tool = surface::Tool::from_name(&name).expect("known tool");
                self.stats.record_call(tool, era);
                self.stats.record_tool_error();
                return Ok(Some(
                    self.tool_result(era, &Err(invalid.into_tool_error(&name))),
                ));
            }
        };

        let tool = call.tool();
        let spec = tool.spec();
        self.stats.record_call(tool, era);
        let cancel = Cancellation::default();
        // Stream order is fixed here, before the call leaves the reader.
        let permit = Arc::clone(&self.slots)
            .acquire_owned()
            .await
            .expect("semaphore open");
        // Process-local tools (beam_version, beam_stats) answer at once: cancelling
        // them, by notifications/cancelled or at EOF, could only lose the answer
        // (`printf '<call>' | lean-beam-mcp` used to print nothing, because EOF
        // usually won the race against the just-spawned call).
        let cancellable = spec.cancellable && spec.workspace_bound;
        if !session.activate(id.clone(), cancel.clone(), cancellable) {
            return Ok(None);
        }
        let admission = self.fence.admit(spec.fence);
        let ctx = CallContext::new(
            id.clone(),
            era,
            tool,
            Some(out.clone()),
            progress_token,
            log_level,
        )
        .with_cancellation(cancel);
        let this = Arc::clone(self);
        let session = Arc::clone(session);
        let out = out.clone();
        tokio::spawn(async move {
            this.run_call(session, ctx, call, admission, out, permit)
                .await;
        });
        Ok(None)
    }

    async fn run_call(
        self: Arc<Self>,
        session: Arc<Session>,
        ctx: CallContext,
        call: ToolCall,
        mut admission: Admission,
        out: Outbound,
        _permit: OwnedSemaphorePermit,
    ) {
        let spec = ctx.tool.spec();
        let path = call.path().map(str::to_owned);
        let work = async {
            if spec.progress != ProgressClass::Quiet && ctx.has_progress_token() {
                ctx.progress(
                    &preparation_message(ctx.tool.name(), path.as_deref(), spec.fence),
                    None,
                )
                .await;
            }
            admission.wait_turn().await;
            // A panic in a tool must still answer its request, exactly once.
            CatchPanic(Box::pin(surface::dispatch(&*self.ops, &ctx, call)))
                .await
                .unwrap_or_else(|message| {
                    log_warn!("{} panicked: {message}", ctx.tool.name());
                    Err(ToolError::new(
                        ErrorCode::InternalError,
                        format!(
                            "{} failed with an internal error ({message}); this is a bug in lean-beam-mcp, please report it (beam_feedback_report). The server keeps running.",
                            ctx.tool.name()
                        ),
                    ))
                })
        };
        let with_status = async {
            tokio::pin!(work);
            if spec.status_notice == StatusNotice::Never {
                return work.await;
            }
            tokio::select! {
                outcome = &mut work => return outcome,
                () = tokio::time::sleep(self.config.status_delay) => {}
            }
            let message = match &path {
                Some(p) => format!("{} on {p} is still working.", ctx.tool.name()),
                None => format!("{} is still working.", ctx.tool.name()),
            };
            ctx.status_notice("running", path.as_deref(), message).await;
            work.await
        };
        let outcome: Option<ToolOutcome> = if spec.cancellable {
            tokio::select! {
                biased;
                () = ctx.cancel.cancelled() => None,
                outcome = with_status => Some(outcome),
            }
        } else {
            Some(with_status.await)
        };
        // Retire the id before publishing, so a client may reuse it on sight.
        let deliver = session.retire(&ctx.request_id);
        match outcome {
            Some(outcome) if deliver => {
                if outcome.is_err() {
                    self.stats.record_tool_error();
                }
                let line =
                    jsonrpc::response_line(&ctx.request_id, &self.tool_result(ctx.era, &outcome));
                let _ = out.send(line).await;
            }
            _ => {
                self.stats.record_cancelled();
                log_debug!("request {} cancelled; no response", ctx.request_id);
            }
        }
        drop(admission);
    }

    /// `{"content":[{"type":"text","text":…}],"structuredContent":…,"isError":…}`:
    /// one result in two forms, serialized once.
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
        result.push_str(r#"}],"structuredContent":"#);
        result.push_str(&structured);
        result.push_str(if outcome.is_err() {
            r#","isError":true"#
        } else {
            r#","isError":false"#
        });
        result.push_str(suffix);
        result.push('}');
        result
    }

    /// Wait until every admitted call has finished (transport shutdown).
    pub async fn drain(&self) {
        let all = u32::try_from(self.config.max_in_flight).unwrap_or(u32::MAX);
        if let Ok(permits) = self.slots.acquire_many(all).await {
            drop(permits);
        }
    }
}

/// Runs a future, turning a panic while polling it into `Err(message)`.
struct CatchPanic<F>(std::pin::Pin<Box<F>>);

impl<F: std::future::Future> std::future::Future for CatchPanic<F> {
    type Output = Result<F::Output, String>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let future = self.0.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| future.poll(cx))) {
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Ok(std::task::Poll::Ready(output)) => std::task::Poll::Ready(Ok(output)),
            Err(payload) => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".to_string());
                std::task::Poll::Ready(Err(message))
            }
        }
    }
}

fn preparation_message(tool: &str, path: Option<&str>, fence: bool) -> String {
    match (path, fence) {
        (_, true) => format!("{tool}: waiting for earlier requests to finish"),
        (Some(path), false) => format!("{tool}: preparing {path}"),
        (None, false) => format!("{tool}: preparing"),
    }
}

fn only_members(params: Option<&Map<String, Value>>, allowed: &[&str]) -> Result<(), RpcError> {
    if let Some(extra) = params.and_then(|p| p.keys().find(|k| !allowed.contains(&k.as_str()))) {
        return Err(RpcError::invalid_params(format!(
            "undeclared params member `{extra}` (allowed: {})",
            allowed.join(", ")
        )));
    }
    Ok(())
}

fn check_tools_list(params: Option<&Map<String, Value>>) -> Result<(), RpcError> {
    only_members(params, &["cursor", "_meta"])?;
    if params.is_some_and(|p| p.contains_key("cursor")) {
        return Err(RpcError::invalid_params(
            "invalid cursor: tools/list returns every tool in one page and never issues a cursor",
        ));
    }
    Ok(())
}

fn validate_initialize(params: Option<&Map<String, Value>>) -> Result<(), RpcError> {
    let params = params.ok_or_else(|| RpcError::invalid_params("initialize needs params"))?;
    if !params.get("protocolVersion").is_some_and(Value::is_string) {
        return Err(RpcError::invalid_params(
            "initialize needs a string `protocolVersion`",
        ));
    }
    if !params.get("capabilities").is_some_and(Value::is_object) {
        return Err(RpcError::invalid_params(
            "initialize needs a `capabilities` object",
        ));
    }
    let info_ok = params
        .get("clientInfo")
        .and_then(Value::as_object)
        .is_some_and(|info| info.get("name").is_some_and(Value::is_string));
    if !info_ok {
        return Err(RpcError::invalid_params(
            "initialize needs `clientInfo` with a string `name`",
        ));
    }
    Ok(())
}

/// `-32602` for an unknown tool, pointing raw LSP method names at the tool that
/// serves that need.
fn unknown_tool(name: &str) -> RpcError {
    const LSP_HINTS: &[(&str, &str)] = &[
        ("textDocument/hover", "lean_hover"),
        ("textDocument/definition", "lean_definition"),
        ("textDocument/references", "lean_references"),
        ("textDocument/documentSymbol", "lean_document_symbols"),
        ("textDocument/signatureHelp", "lean_signature_help"),
        ("workspace/symbol", "lean_workspace_symbols"),
        ("$/lean/plainGoal", "lean_goals"),
        ("textDocument/codeAction", "lean_todo"),
        ("textDocument/didOpen", "lean_sync"),
        ("textDocument/didChange", "lean_sync"),
    ];
    let hint = LSP_HINTS.iter().find(|(m, _)| *m == name).map(|(_, t)| *t);
    let message = if let Some(tool) = hint {
        format!("`{name}` is a raw LSP method, not a tool; use `{tool}`")
    } else if name.contains('/') || name.starts_with('$') {
        format!(
            "`{name}` is a raw LSP method, not a tool; raw LSP methods are not exposed (see tools/list)"
        )
    } else if let Some(near) = surface::nearest_tool(name) {
        format!(
            "unknown tool `{name}`; did you mean `{}`? (see tools/list)",
            near.name()
        )
    } else {
        format!("unknown tool `{name}` (see tools/list)")
    };
    RpcError::invalid_params(message)
}
