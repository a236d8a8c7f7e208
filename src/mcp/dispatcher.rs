//! The transport-independent protocol core: envelope → era gate → admission →
//! generated parse/validate → `Handler` (the typed `Operations`) → result
//! envelope. Both the stdio and the HTTP transports feed it decoded lines and
//! an `Outbound` channel.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use super::era::{self, Family, LEGACY_VERSION, META_SERVER_INFO, SUPPORTED_MODERN};
use super::fence::{Admission, FenceScope, RootFences};
use super::jsonrpc::{self, Incoming, RequestId, RpcError};
use super::session::{CancelOutcome, Limits, Session};
use crate::context::{CallContext, Cancellation, Era, LogLevel, Outbound};
use crate::identity;
use crate::stats::Stats;
use crate::surface::{
    self, ErrorCode, Handler, ParseError, ProgressClass, StatusNotice, ToolCall, ToolError,
    ToolOutcome, ToolSet,
};
use crate::{log_debug, log_info, log_warn};

/// Tunables of the protocol core.
#[derive(Debug, Clone)]
pub struct Config {
    /// How long a call without a progress token may run before its one
    /// `beam.status` notice.
    pub status_delay: Duration,
    /// Calls running at once across every client (the global cap). A call
    /// admitted beyond it waits for a slot, still cancellable.
    pub max_in_flight: usize,
    /// Calls one HTTP client (a legacy session) may run at once, so that one
    /// client's slow calls leave slots for the others.
    pub max_in_flight_per_client: usize,
    /// Calls one stream may hold admitted (running or waiting for a slot).
    /// Past it a stdio reader waits, which pushes back on a client that floods
    /// requests; below it every line is read, cancellations included.
    pub max_admitted_per_stream: usize,
    /// The tools this server serves (`--tools`, `LEAN_BEAM_TOOLS`): the only
    /// ones in tools/list and the only ones a call may name.
    pub tools: ToolSet,
}

pub const DEFAULT_MAX_IN_FLIGHT: usize = 256;
pub const DEFAULT_MAX_IN_FLIGHT_PER_CLIENT: usize = 64;
pub const DEFAULT_MAX_ADMITTED_PER_STREAM: usize = 1024;

impl Default for Config {
    fn default() -> Self {
        Self {
            status_delay: Duration::from_secs(2),
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            max_in_flight_per_client: DEFAULT_MAX_IN_FLIGHT_PER_CLIENT,
            max_admitted_per_stream: DEFAULT_MAX_ADMITTED_PER_STREAM,
            tools: ToolSet::all(),
        }
    }
}

impl Config {
    /// Defaults, with `LEAN_BEAM_STATUS_DELAY_MS` (tests shorten it),
    /// `LEAN_BEAM_MAX_IN_FLIGHT`, `LEAN_BEAM_MAX_ADMITTED` and
    /// `LEAN_BEAM_HTTP_MAX_IN_FLIGHT_PER_CLIENT` honoured.
    pub fn from_env() -> Result<Self, String> {
        let mut config = Self::default();
        if let Some(ms) = std::env::var("LEAN_BEAM_STATUS_DELAY_MS")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            config.status_delay = Duration::from_millis(ms);
        }
        for (name, field) in [
            ("LEAN_BEAM_MAX_IN_FLIGHT", &mut config.max_in_flight),
            (
                "LEAN_BEAM_MAX_ADMITTED",
                &mut config.max_admitted_per_stream,
            ),
            (
                "LEAN_BEAM_HTTP_MAX_IN_FLIGHT_PER_CLIENT",
                &mut config.max_in_flight_per_client,
            ),
        ] {
            if let Some(value) = positive_env(name)? {
                *field = value;
            }
        }
        Ok(config)
    }
}

/// A positive integer from the environment; `Err` names the variable.
fn positive_env(name: &str) -> Result<Option<usize>, String> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(text) => match text.trim().parse::<usize>() {
            Ok(n) if n > 0 && n <= Semaphore::MAX_PERMITS => Ok(Some(n)),
            _ => Err(format!("{name} takes a positive integer, not `{text}`")),
        },
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
    fn new(tools: &ToolSet) -> Self {
        let server_info = identity::server_info();
        let meta = json!({ META_SERVER_INFO: server_info });
        let modern_suffix = format!(r#","resultType":"complete","_meta":{meta}"#);
        let modern_cache = r#","ttlMs":3600000,"cacheScope":"public""#;
        Cached {
            legacy_tools_list: format!(r#"{{"tools":{}}}"#, tools.catalog_json()),
            modern_tools_list: format!(
                r#"{{"tools":{}{modern_cache}{modern_suffix}}}"#,
                tools.catalog_json()
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
    /// The fences of sessionless (modern HTTP) requests, one per root.
    root_fences: Arc<RootFences>,
    /// The global cap on running calls.
    slots: Arc<Semaphore>,
    /// Calls admitted and not yet finished, across every stream (for drain).
    admitted: watch::Sender<usize>,
    config: Config,
    cached: Cached,
}

/// One admitted call, counted until it has finished.
struct Counted(watch::Sender<usize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

/// What a running call holds until its terminal response is out.
struct Held {
    _admission: Option<Admission>,
    _client: Option<OwnedSemaphorePermit>,
    _global: Option<OwnedSemaphorePermit>,
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
        config.tools.warm();
        let cached = Cached::new(&config.tools);
        Arc::new(Self {
            ops,
            stats,
            root_fences: Arc::default(),
            slots: Arc::new(Semaphore::new(config.max_in_flight)),
            admitted: watch::channel(0).0,
            config,
            cached,
        })
    }

    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// A stdio stream's session: its own full fence, and the bound on admitted
    /// calls that pushes back on its reader.
    pub fn stream_session(&self) -> Session {
        Session::new(
            Limits {
                running: None,
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
                running: Some(Arc::new(Semaphore::new(
                    self.config.max_in_flight_per_client,
                ))),
                admitted: None,
            },
            FenceScope::default(),
        )
    }

    /// A sessionless (modern HTTP) request's session: fenced with the other
    /// calls on its root only. Its client is its connection, which carries one
    /// request at a time, so the global cap is its only running limit.
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
        // Sessionless requests are fenced by root: read it before parsing
        // consumes the arguments.
        let root = match session.fence() {
            FenceScope::Root(_) => arguments
                .as_ref()
                .and_then(|a| a.pointer("/workspace/root"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            FenceScope::Stream(_) => None,
        };
        let call = match self.config.tools.parse(&name, arguments) {
            Ok(call) => call,
            Err(ParseError::UnknownTool(name)) => {
                return Err(unknown_tool(&name, &self.config.tools));
            }
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
        // Resolved before anything is registered: such a request has a task of
        // its own (HTTP), so this wait holds up no other request.
        let root = match root {
            Some(root) if spec.workspace_bound => Some(canonical_root(&root).await),
            _ => None,
        };
        let cancel = Cancellation::default();
        // The stream's bound on admitted calls: waiting here is the push-back
        // on a reader that floods requests. Running slots are waited for later,
        // by the call's own task, so the reader keeps reading meanwhile.
        let queued = match &session.limits().admitted {
            Some(bound) => Some(
                Arc::clone(bound)
                    .acquire_owned()
                    .await
                    .expect("semaphore open"),
            ),
            None => None,
        };
        // Process-local tools (beam_version, beam_stats) answer at once: cancelling
        // them, by notifications/cancelled or at EOF, could only lose the answer
        // (`printf '<call>' | lean-beam-mcp` used to print nothing, because EOF
        // usually won the race against the just-spawned call).
        let cancellable = spec.cancellable && spec.workspace_bound;
        if !session.activate(id.clone(), cancel.clone(), cancellable) {
            return Ok(None);
        }
        // Stream order is fixed here, before the call leaves the reader.
        let admission = match session.fence() {
            FenceScope::Stream(fence) => Some(fence.admit(spec.fence)),
            FenceScope::Root(roots) => root.map(|root| roots.admit(&root, spec.fence)),
        };
        self.admitted.send_modify(|n| *n += 1);
        let counted = Counted(self.admitted.clone());
        let ctx = CallContext::new(
            id.clone(),
            era,
            tool.into(),
            Some(out.clone()),
            progress_token,
            log_level,
        )
        .with_cancellation(cancel);
        let this = Arc::clone(self);
        let session = Arc::clone(session);
        let out = out.clone();
        tokio::spawn(async move {
            this.run_call(session, ctx, call, admission, out).await;
            drop(queued);
            drop(counted);
        });
        Ok(None)
    }

    /// Take the call's turn in fence order, then a running slot: the client's
    /// own first (so that one client's waiting calls never queue ahead of
    /// another's on the global cap), then the global one. In this order no
    /// permit is held while waiting on a fence, so a fence cannot deadlock
    /// against the calls queued behind it.
    async fn take_turn(
        &self,
        session: &Session,
        mut admission: Option<Admission>,
        workspace_bound: bool,
    ) -> Held {
        if let Some(admission) = admission.as_mut() {
            admission.wait_turn().await;
        }
        // Process-local calls hold nothing and answer at once: they never wait
        // for a slot, so a client's `beam_version` is answered however busy
        // the server is.
        let (mut client, mut global) = (None, None);
        if workspace_bound {
            if let Some(slots) = &session.limits().running {
                client = Some(
                    Arc::clone(slots)
                        .acquire_owned()
                        .await
                        .expect("semaphore open"),
                );
            }
            global = Some(
                Arc::clone(&self.slots)
                    .acquire_owned()
                    .await
                    .expect("semaphore open"),
            );
        }
        Held {
            _admission: admission,
            _client: client,
            _global: global,
        }
    }

    async fn run_call(
        self: Arc<Self>,
        session: Arc<Session>,
        ctx: CallContext,
        call: ToolCall,
        admission: Option<Admission>,
        out: Outbound,
    ) {
        let spec = call.tool().spec();
        let path = call.path().map(str::to_owned);
        let work = async {
            if spec.progress != ProgressClass::Quiet && ctx.has_progress_token() {
                ctx.progress(
                    &preparation_message(ctx.tool.name, path.as_deref(), spec.fence),
                    None,
                )
                .await;
            }
            let held = self
                .take_turn(&session, admission, spec.workspace_bound)
                .await;
            // A panic in a tool must still answer its request, exactly once.
            let outcome = CatchPanic(Box::pin(self.ops.handle(&ctx, call)))
                .await
                .unwrap_or_else(|message| {
                    log_warn!("{} panicked: {message}", ctx.tool.name);
                    Err(ToolError::new(
                        ErrorCode::InternalError,
                        format!(
                            "{} failed with an internal error ({message}); this is a bug in lean-beam-mcp, please report it (beam_feedback_report). The server keeps running.",
                            ctx.tool.name
                        ),
                    ))
                });
            (outcome, held)
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
                Some(p) => format!("{} on {p} is still working.", ctx.tool.name),
                None => format!("{} is still working.", ctx.tool.name),
            };
            ctx.status_notice("running", path.as_deref(), message).await;
            work.await
        };
        let finished: Option<(ToolOutcome, Held)> = if spec.cancellable {
            tokio::select! {
                biased;
                () = ctx.cancel.cancelled() => None,
                finished = with_status => Some(finished),
            }
        } else {
            Some(with_status.await)
        };
        // Retire the id before publishing, so a client may reuse it on sight.
        let deliver = session.retire(&ctx.request_id);
        match finished {
            Some((outcome, held)) if deliver => {
                if outcome.is_err() {
                    self.stats.record_tool_error();
                }
                let line =
                    jsonrpc::response_line(&ctx.request_id, &self.tool_result(ctx.era, &outcome));
                let _ = out.send(line).await;
                // Calls fenced behind this one start after its terminal result.
                drop(held);
            }
            _ => {
                self.stats.record_cancelled();
                log_debug!("request {} cancelled; no response", ctx.request_id);
            }
        }
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
        let mut admitted = self.admitted.subscribe();
        let _ = admitted.wait_for(|n| *n == 0).await;
    }

    /// Calls admitted and not yet finished, across every stream.
    pub fn admitted(&self) -> usize {
        *self.admitted.borrow()
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

/// The canonical form of a root, as the key of its fence: symlinked aliases
/// meet. A root that cannot be resolved (gone, or a file system that does not
/// answer within the limit) is its own key, lexically normalized.
async fn canonical_root(root: &str) -> std::path::PathBuf {
    const LIMIT: Duration = Duration::from_secs(5);
    match tokio::time::timeout(LIMIT, tokio::fs::canonicalize(root)).await {
        Ok(Ok(path)) => path,
        _ => std::path::Path::new(root).components().collect(),
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
/// serves that need, and a tool left out of this server's set at the option
/// that serves it.
fn unknown_tool(name: &str, tools: &ToolSet) -> RpcError {
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
    let message = if let Some(tool) = tools.left_out(name) {
        format!(
            "`{}` is not served: this server was started with --tools {} (see tools/list)",
            tool.name(),
            tools.spelling()
        )
    } else if let Some(tool) = hint.filter(|tool| tools.served(tool)) {
        format!("`{name}` is a raw LSP method, not a tool; use `{tool}`")
    } else if name.contains('/') || name.starts_with('$') {
        format!(
            "`{name}` is a raw LSP method, not a tool; raw LSP methods are not exposed (see tools/list)"
        )
    } else if let Some(near) = tools.nearest(name) {
        format!(
            "unknown tool `{name}`; did you mean `{}`? (see tools/list)",
            near.name()
        )
    } else {
        format!("unknown tool `{name}` (see tools/list)")
    };
    RpcError::invalid_params(message)
}
