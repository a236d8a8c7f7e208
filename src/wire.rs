//! The pieces of JSON-RPC 2.0 that the protocol (`mcp`) and what a tool
//! knows of its request (`context`) both speak: request ids and the
//! notification line. A leaf, so that `context` stands below `mcp`.

use std::fmt;

use serde_json::Value;

/// A request id. `1` and `"1"` are different ids.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RequestId {
    Number(i128),
    String(String),
}

impl RequestId {
    pub fn to_value(&self) -> Value {
        match self {
            // i128 covers every i64 and u64 id; serde_json holds both.
            RequestId::Number(n) => i64::try_from(*n)
                .map(Value::from)
                .unwrap_or_else(|_| Value::from(*n as u64)),
            RequestId::String(s) => Value::String(s.clone()),
        }
    }

    /// Read an id from JSON: a string or an integral number. Anything else
    /// (null, fractional, boolean, object) is not an id.
    pub fn from_value(value: &Value) -> Option<RequestId> {
        match value {
            Value::String(s) => Some(RequestId::String(s.clone())),
            Value::Number(n) => n
                .as_i64()
                .map(i128::from)
                .or_else(|| n.as_u64().map(i128::from))
                .map(RequestId::Number),
            _ => None,
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// A notification (`method`, `params`) as one JSON-RPC 2.0 line, without the
/// newline.
pub fn notification_line(method: &str, params: &Value) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":{},"params":{}}}"#,
        Value::from(method),
        params
    )
}
