//! Client for the Lean 4 language server (`lake serve` / `lean --server`).
//!
//! This module owns one server process per [`LspClient`]: it spawns it in its own
//! process group, speaks JSON-RPC over `Content-Length` framed stdio, answers the
//! server's own requests, streams server notifications to an event channel and
//! tears the whole process tree down on shutdown, kill or drop (the group, plus
//! Lean's file workers, which run in sessions of their own: see
//! [`crate::process::tree`]). It knows nothing about documents or versions:
//! that is the broker's job.
//!
//! * [`client`]: the public [`LspClient`] and the tasks that keep its
//!   connection; `outgoing` (frames, the non-blocking writer, the frame trace),
//!   `incoming` (what a server frame is), `pending` (requests awaiting their
//!   answer, cancel-on-drop), `capabilities` (`initialize`), `framing`.
//! * [`protocol`]: Lean's extensions as `lsp_types` requests and notifications
//!   (`waitForDiagnostics`, plain goals, RPC, `fileProgress`), its error codes
//!   ([`LeanErrorCode`]), a borrowed view of its diagnostics, and a
//!   `TaggedText` flattener.
//! * [`uri`]: file path ↔ `file://` URI, encoded exactly as Lean encodes them.
//!
//! Requests are typed ([`LspClient::request_typed`]) or, while the broker
//! still sends them that way, method strings with `serde_json::Value` params.

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

mod capabilities;
pub mod client;
mod framing;
mod incoming;
mod outgoing;
mod pending;
pub mod protocol;
pub mod uri;

pub use client::{ClientStats, LspClient};
pub use protocol::LeanErrorCode;
use protocol::{FileProgressParams, PublishedDiagnostics};

/// How to start a language server process.
///
/// The child inherits this process's environment, with `env` applied on top
/// (plus one `LEAN_BEAM_LSP_TREE` entry that marks the process tree, see
/// [`crate::process::tree`]).
/// For `lean --server` set `LEAN_PATH` (and `LEAN_SRC_PATH`, or go-to-definition
/// into imported modules finds nothing) and make sure `LAKE` is not set to a stand-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerCommand {
    /// Executable; a bare name is looked up on `PATH`.
    pub program: PathBuf,
    /// Arguments, e.g. `["--server", "-Dserver.reportDelayMs=0"]` or `["serve", "--", …]`.
    pub args: Vec<String>,
    /// Environment variables set (overriding inherited ones) in the child.
    pub env: Vec<(String, String)>,
    /// Inherited environment variables removed in the child (e.g. `LAKE`).
    pub env_remove: Vec<String>,
    /// Working directory: the workspace root. Also sent as `rootUri`.
    pub cwd: PathBuf,
}

/// Something the server did on its own initiative, delivered in arrival order.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    /// A server → client notification (`textDocument/publishDiagnostics`,
    /// `window/logMessage`, …), params moved out unparsed (`Value::Null` when
    /// absent).
    Notification { method: String, params: Value },
    /// `$/lean/fileProgress`, parsed typed. Each update lists every range
    /// still pending, so an elaboration sends O(n²) bytes of them (14 MB for
    /// a 2000-line file); as JSON trees they cost the server a fifth of a core
    /// that Lean needs.
    FileProgress(FileProgressParams),
    /// `textDocument/publishDiagnostics`, its list unparsed. Lean republishes
    /// a document's whole set after each command that adds to it, O(n²) bytes
    /// over an elaboration (44 MB for a file with 400 warnings), and usually
    /// only the last set is ever read.
    Diagnostics(PublishedDiagnostics),
    /// The server process has exited and been reaped; always the last event of a
    /// client. Sent whether the exit was requested (shutdown, kill) or not.
    Exited(ExitInfo),
}

/// How the server process ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExitInfo {
    /// Exit code, when it exited normally.
    pub status: Option<i32>,
    /// Terminating signal (9 after a kill), when it was killed by one.
    pub signal: Option<i32>,
    /// The last bytes (at most [`client::STDERR_TAIL_BYTES`]) the server wrote to
    /// stderr, lossily decoded as UTF-8.
    pub stderr_tail: String,
}

impl fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.status, self.signal) {
            (Some(code), _) => write!(f, "exit status {code}")?,
            (None, Some(sig)) => write!(f, "killed by signal {sig}")?,
            (None, None) => f.write_str("unknown exit status")?,
        }
        let (shown, cut) = short_tail(&self.stderr_tail);
        if !shown.is_empty() {
            let label = if cut { "stderr (last lines)" } else { "stderr" };
            write!(f, "; {label}: {shown}")?;
        }
        Ok(())
    }
}

/// The end of a stderr tail short enough for an error message: at most ~2 KB,
/// starting at a line boundary when cut; `true` when something was cut.
pub(crate) fn short_tail(tail: &str) -> (&str, bool) {
    const SHOWN: usize = 2048;
    let tail = tail.trim_end();
    let mut start = tail.len().saturating_sub(SHOWN);
    if start == 0 {
        return (tail, false);
    }
    while !tail.is_char_boundary(start) {
        start += 1;
    }
    let shown = &tail[start..];
    let shown = shown.find('\n').map_or(shown, |nl| &shown[nl + 1..]);
    (shown, true)
}

/// Why a request (or the start) failed.
#[derive(Debug, Clone, PartialEq)]
pub enum LspError {
    /// The server answered with a JSON-RPC error, or with an answer the
    /// client cannot read ([`LeanErrorCode::InternalError`]; the connection
    /// stays up).
    Rpc {
        code: LeanErrorCode,
        message: String,
        data: Option<Value>,
    },
    /// The server process is gone (exited, crashed, killed or shut down).
    Exited(ExitInfo),
    /// An I/O failure talking to the process, including failure to spawn it (the
    /// message names the program).
    Io(String),
    /// The server broke the protocol (garbled frame, malformed message) or did not
    /// answer `initialize` in time. The connection is then treated as dead.
    Protocol(String),
}

impl LspError {
    /// The JSON-RPC error code, for [`LspError::Rpc`].
    pub fn rpc_code(&self) -> Option<LeanErrorCode> {
        match self {
            LspError::Rpc { code, .. } => Some(*code),
            _ => None,
        }
    }
}

impl fmt::Display for LspError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LspError::Rpc { code, message, .. } => {
                write!(f, "language server error {code}: {message}")
            }
            LspError::Exited(info) => write!(f, "language server exited ({info})"),
            LspError::Io(m) => write!(f, "language server I/O error: {m}"),
            LspError::Protocol(m) => write!(f, "language server protocol error: {m}"),
        }
    }
}

impl std::error::Error for LspError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_info_display_keeps_the_tail_short() {
        let info = ExitInfo {
            status: None,
            signal: Some(9),
            stderr_tail: format!("{}\nlast line\n", "x".repeat(5000)),
        };
        let s = LspError::Exited(info).to_string();
        assert!(s.starts_with("language server exited (killed by signal 9; stderr"));
        assert!(s.ends_with("last line)"), "{s}");
        assert!(s.len() < 2200);
        let short = ExitInfo {
            status: Some(3),
            signal: None,
            stderr_tail: "boom\n".into(),
        };
        assert_eq!(short.to_string(), "exit status 3; stderr: boom");
    }
}
