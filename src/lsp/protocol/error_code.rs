//! The error codes Lean answers with.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The JSON-RPC error codes Lean answers with (Lean's `JsonRpc.ErrorCode`),
/// carried in [`crate::lsp::LspError::Rpc`]. On the wire, and in `Serialize`, the
/// number ([`LeanErrorCode::code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "i64", into = "i64")]
pub enum LeanErrorCode {
    /// -32700.
    ParseError,
    /// -32600.
    InvalidRequest,
    /// -32601.
    MethodNotFound,
    /// -32602.
    InvalidParams,
    /// -32603; also what the client reports for an answer it cannot read.
    InternalError,
    /// -32002.
    ServerNotInitialized,
    /// -32001.
    UnknownErrorCode,
    /// -32801: a request on a closed or never opened file, or pending when
    /// its worker was terminated.
    ContentModified,
    /// -32800: the answer to `$/cancelRequest`, sent only when the answer was
    /// ready anyway (cancelling does not stop elaboration).
    RequestCancelled,
    /// -32900: the RPC session is unknown or expired: `$/lean/rpc/connect`
    /// again.
    RpcNeedsReconnect,
    /// -32901: the file worker exited with code 1.
    WorkerExited,
    /// -32902: the file worker crashed (killed, stack overflow); it restarts
    /// on the next `didChange`, or on a close and reopen.
    WorkerCrashed,
    /// Any other code (never one of the codes named above: build it with
    /// `LeanErrorCode::from(code)`).
    Other(i64),
}

impl LeanErrorCode {
    const NAMED: [(LeanErrorCode, i64); 12] = [
        (LeanErrorCode::ParseError, -32700),
        (LeanErrorCode::InvalidRequest, -32600),
        (LeanErrorCode::MethodNotFound, -32601),
        (LeanErrorCode::InvalidParams, -32602),
        (LeanErrorCode::InternalError, -32603),
        (LeanErrorCode::ServerNotInitialized, -32002),
        (LeanErrorCode::UnknownErrorCode, -32001),
        (LeanErrorCode::ContentModified, -32801),
        (LeanErrorCode::RequestCancelled, -32800),
        (LeanErrorCode::RpcNeedsReconnect, -32900),
        (LeanErrorCode::WorkerExited, -32901),
        (LeanErrorCode::WorkerCrashed, -32902),
    ];

    /// The number on the wire.
    pub fn code(self) -> i64 {
        match self {
            LeanErrorCode::Other(code) => code,
            named => Self::NAMED
                .iter()
                .find(|(c, _)| *c == named)
                .map(|(_, n)| *n)
                .expect("every named code is in NAMED"),
        }
    }
}

impl From<i64> for LeanErrorCode {
    fn from(code: i64) -> Self {
        Self::NAMED
            .iter()
            .find(|(_, n)| *n == code)
            .map_or(LeanErrorCode::Other(code), |(c, _)| *c)
    }
}

impl From<LeanErrorCode> for i64 {
    fn from(code: LeanErrorCode) -> i64 {
        code.code()
    }
}

/// The number, as Lean sent it.
impl fmt::Display for LeanErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn error_codes_are_numbers_on_the_wire() {
        for (code, n) in LeanErrorCode::NAMED {
            assert_eq!(code.code(), n);
            assert_eq!(LeanErrorCode::from(n), code);
            assert_eq!(serde_json::to_value(code).unwrap(), json!(n));
            assert_eq!(
                serde_json::from_value::<LeanErrorCode>(json!(n)).unwrap(),
                code
            );
        }
        assert_eq!(LeanErrorCode::from(-32902), LeanErrorCode::WorkerCrashed);
        assert_eq!(LeanErrorCode::from(-1), LeanErrorCode::Other(-1));
        assert_eq!(LeanErrorCode::Other(-1).code(), -1);
        assert_eq!(LeanErrorCode::ContentModified.to_string(), "-32801");
    }
}
