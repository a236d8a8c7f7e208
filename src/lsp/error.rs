//! Why a request, or the start of a server, failed.

use std::fmt;

use serde_json::Value;

use super::protocol::LeanErrorCode;
use super::server::ExitInfo;

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
