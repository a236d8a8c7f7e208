//! What a tool implementation knows about the request it serves: its id and era,
//! cancellation, and the request-scoped progress and log channels.

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};

use crate::broker::{self, SinkFuture};
use crate::util::lock;
use crate::wire::{RequestId, notification_line};

/// The protocol era a request was served in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// MCP 2026-07-28: stateless, per-request `_meta`.
    Modern,
    /// MCP 2025-11-25: `initialize` lifecycle.
    Legacy,
    /// In-process (`lean-beam-mcp call`): no protocol, no notifications.
    Direct,
}

impl Era {
    pub const fn as_str(self) -> &'static str {
        match self {
            Era::Modern => crate::identity::MODERN_VERSION,
            Era::Legacy => crate::identity::LEGACY_VERSION,
            Era::Direct => "direct",
        }
    }
}

/// MCP log levels, in increasing severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LogLevel {
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

impl FromStr for LogLevel {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        LogLevel::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or(())
    }
}

/// Cooperative cancellation of one call. Cloning shares the flag.
#[derive(Debug, Clone, Default)]
pub struct Cancellation {
    inner: Arc<CancelInner>,
}

#[derive(Debug, Default)]
struct CancelInner {
    cancelled: AtomicBool,
    notify: Notify,
}

impl Cancellation {
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// Resolves once `cancel` has been called (at once if it already was).
    pub async fn cancelled(&self) {
        loop {
            let notified = self.inner.notify.notified();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

/// Where a request's notifications go: the same ordered stream as its response,
/// so that progress always precedes the result.
pub type Outbound = mpsc::Sender<String>;

/// When a call without a progress token emits its one `beam.status` notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusNotice {
    /// Never (process utilities).
    Never,
    /// When the call is still pending after the status delay.
    AfterDelay,
    /// On the first Lake setup observation, or after the status delay.
    OnSetupOrDelay,
}

/// The tool a call runs, as far as its context needs it. The context does not
/// name the generated `Tool`: the generated dispatch is written against the
/// context, so that would be an import cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallTool {
    pub name: &'static str,
    pub status_notice: StatusNotice,
}

/// The request a tool call serves and its notification channels.
#[derive(Debug)]
pub struct CallContext {
    pub request_id: RequestId,
    pub era: Era,
    pub tool: CallTool,
    pub cancel: Cancellation,
    out: Option<Outbound>,
    progress_token: Option<Value>,
    /// The minimum level that reaches the client; `None` sends no log messages.
    log_level: Option<LogLevel>,
    progress_count: AtomicU64,
    /// The message of the latest progress update.
    last_progress: std::sync::Mutex<Option<String>>,
    status_sent: AtomicBool,
}

impl CallContext {
    pub fn new(
        request_id: RequestId,
        era: Era,
        tool: CallTool,
        out: Option<Outbound>,
        progress_token: Option<Value>,
        log_level: Option<LogLevel>,
    ) -> Self {
        Self {
            request_id,
            era,
            tool,
            cancel: Cancellation::default(),
            out,
            progress_token,
            log_level,
            progress_count: AtomicU64::new(0),
            last_progress: std::sync::Mutex::new(None),
            status_sent: AtomicBool::new(false),
        }
    }

    /// A context for in-process calls (`lean-beam-mcp call`): progress and
    /// logs go to `out` as notification lines, for a local renderer.
    pub fn direct(tool: CallTool, out: Outbound) -> Self {
        Self::new(
            RequestId::Number(0),
            Era::Direct,
            tool,
            Some(out),
            Some(Value::from("cli")),
            Some(LogLevel::Notice),
        )
    }

    pub fn with_cancellation(mut self, cancel: Cancellation) -> Self {
        self.cancel = cancel;
        self
    }

    pub fn has_progress_token(&self) -> bool {
        self.progress_token.is_some()
    }

    /// Whether a log message at `level` reaches the client.
    pub fn admits(&self, level: LogLevel) -> bool {
        self.log_level.is_some_and(|min| level >= min)
    }

    async fn send(&self, method: &str, params: Value) {
        if let Some(out) = &self.out {
            // A closed channel means the transport is gone; the call's result
            // cannot be delivered either, so there is nothing to report.
            let _ = out.send(notification_line(method, &params)).await;
        }
    }

    /// Send one progress update (only with a progress token). `progress` is a
    /// strictly increasing counter kept here, so callers cannot break monotonicity.
    /// An update whose message is the previous one's says nothing new and is
    /// not sent; returns whether it was.
    pub async fn progress(&self, message: &str, extra: Option<Value>) -> bool {
        let Some(token) = &self.progress_token else {
            return false;
        };
        {
            let mut last = lock(&self.last_progress);
            if last.as_deref() == Some(message) {
                return false;
            }
            *last = Some(message.to_owned());
        }
        let n = self.progress_count.fetch_add(1, Ordering::SeqCst) + 1;
        let mut params = json!({ "progressToken": token, "progress": n, "message": message });
        if let Some(Value::Object(extra)) = extra {
            params
                .as_object_mut()
                .expect("object")
                .insert("_meta".into(), json!({ "beam": extra }));
        }
        self.send("notifications/progress", params).await;
        true
    }

    /// Send a `notifications/message` if the active level admits it.
    pub async fn log(&self, level: LogLevel, logger: &str, data: Value) {
        if self.admits(level) {
            self.send(
                "notifications/message",
                json!({ "level": level.as_str(), "logger": logger, "data": data }),
            )
            .await;
        }
    }

    /// The one `beam.status` liveness notice of a call without a progress token.
    /// Later calls are no-ops, so the delay timer and a Lake-setup observation can
    /// both ask for it.
    pub async fn status_notice(&self, state: &str, path: Option<&str>, message: String) {
        if self.progress_token.is_some() || !self.admits(LogLevel::Notice) {
            return;
        }
        if self.status_sent.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut data = json!({
            "requestId": self.request_id.to_value(),
            "tool": self.tool.name,
            "state": state,
            "message": message,
            "progressHint": "For detailed live updates, pass tools/call params._meta.progressToken.",
        });
        if let Some(path) = path {
            data["path"] = Value::from(path);
        }
        self.log(LogLevel::Notice, "beam.status", data).await;
    }
}

impl From<broker::LogLevel> for LogLevel {
    fn from(level: broker::LogLevel) -> Self {
        match level {
            broker::LogLevel::Debug => LogLevel::Debug,
            broker::LogLevel::Info => LogLevel::Info,
            broker::LogLevel::Warning => LogLevel::Warning,
            broker::LogLevel::Error => LogLevel::Error,
        }
    }
}

/// What the broker reports while a call waits on Lean reaches the client as
/// this call's notifications.
impl broker::ProgressSink for CallContext {
    fn has_progress_token(&self) -> bool {
        CallContext::has_progress_token(self)
    }

    fn admits(&self, level: broker::LogLevel) -> bool {
        CallContext::admits(self, level.into())
    }

    fn follows_lake_setup(&self) -> bool {
        self.tool.status_notice == StatusNotice::OnSetupOrDelay
    }

    fn progress<'a>(&'a self, message: &'a str, extra: Option<Value>) -> SinkFuture<'a, bool> {
        Box::pin(CallContext::progress(self, message, extra))
    }

    fn log<'a>(
        &'a self,
        level: broker::LogLevel,
        logger: &'a str,
        data: Value,
    ) -> SinkFuture<'a, ()> {
        Box::pin(CallContext::log(self, level.into(), logger, data))
    }

    fn lake_setup<'a>(&'a self, path: &'a str, output: &'a str) -> SinkFuture<'a, ()> {
        let message = format!(
            "{} on {path} is waiting for Lake to set up its imports ({output}).",
            self.tool.name
        );
        Box::pin(self.status_notice("lakeSetup", Some(path), message))
    }
}
