//! How what Lean reports while a call waits reaches the caller. The broker
//! speaks to a [`ProgressSink`]; the protocol layer's `CallContext`
//! implements it (src/context.rs), so the broker knows nothing of MCP
//! notifications, tokens or log levels.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

/// A sink's answer, boxed so that the sink can be a trait object.
pub type SinkFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The levels the broker logs at (diagnostics by their severity).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    Debug,
    Info,
    Warning,
    Error,
}

/// Where a call's progress, live logs and status notice go.
pub trait ProgressSink: Send + Sync {
    /// The caller follows progress updates (it passed a progress token).
    fn has_progress_token(&self) -> bool;

    /// A log message at `level` would reach the caller.
    fn admits(&self, level: LogLevel) -> bool;

    /// The caller is told when Lake sets up a document's imports (the
    /// call's status notice goes out on it).
    fn follows_lake_setup(&self) -> bool;

    /// One progress update; `extra` goes with it as structured data.
    /// Resolves to whether it went out (an update that says nothing new, or
    /// one without a progress token, does not).
    fn progress<'a>(&'a self, message: &'a str, extra: Option<Value>) -> SinkFuture<'a, bool>;

    /// One log message from `logger`, if the caller admits its level.
    fn log<'a>(&'a self, level: LogLevel, logger: &'a str, data: Value) -> SinkFuture<'a, ()>;

    /// The call's status notice: Lake is setting up the imports of `path`;
    /// `output` is its latest line.
    fn lake_setup<'a>(&'a self, path: &'a str, output: &'a str) -> SinkFuture<'a, ()>;
}

/// A progress sink for tests that follows Lake set-up and keeps each line it
/// was told, and nothing else.
#[cfg(test)]
#[derive(Default)]
pub(crate) struct LakeLines(std::sync::Mutex<Vec<String>>);

#[cfg(test)]
impl LakeLines {
    /// The lines told so far, in order.
    pub(crate) fn lines(&self) -> Vec<String> {
        crate::util::lock(&self.0).clone()
    }
}

#[cfg(test)]
impl ProgressSink for LakeLines {
    fn has_progress_token(&self) -> bool {
        false
    }
    fn admits(&self, _: LogLevel) -> bool {
        false
    }
    fn follows_lake_setup(&self) -> bool {
        true
    }
    fn progress<'a>(&'a self, _: &'a str, _: Option<Value>) -> SinkFuture<'a, bool> {
        Box::pin(async { false })
    }
    fn log<'a>(&'a self, _: LogLevel, _: &'a str, _: Value) -> SinkFuture<'a, ()> {
        Box::pin(async {})
    }
    fn lake_setup<'a>(&'a self, _: &'a str, output: &'a str) -> SinkFuture<'a, ()> {
        crate::util::lock(&self.0).push(output.to_owned());
        Box::pin(async {})
    }
}
