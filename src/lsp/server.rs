//! The server process as the broker sees it: how to start it, what it does on
//! its own, how it ended.

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

use super::protocol::{FileProgressParams, PublishedDiagnostics};

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
    /// The last bytes (at most [`super::client::STDERR_TAIL_BYTES`]) the server wrote to
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
pub(super) fn short_tail(tail: &str) -> (&str, bool) {
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
