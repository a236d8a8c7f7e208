//! JSON-RPC 2.0 framing with MCP's envelope strictness: one message per line,
//! closed top-level members, string and integer ids kept distinct, no batches.

use serde_json::{Map, Value};

use crate::wire::RequestId;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
pub const HEADER_MISMATCH: i64 = -32020;
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// A client (an HTTP session, or the root of sessionless calls) already holds
/// every call its share admits; nothing of this one was done (HTTP 429).
pub const TOO_MANY_CALLS: i64 = -32030;

/// A JSON-RPC error object (before it is wrapped in a response).
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(INVALID_REQUEST, message)
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }

    pub fn method_not_found(method: &str) -> Self {
        Self::new(METHOD_NOT_FOUND, format!("method not found: `{method}`"))
    }
}

/// One decoded incoming message.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Request {
        id: RequestId,
        method: String,
        params: Option<Map<String, Value>>,
    },
    Notification {
        method: String,
        params: Option<Map<String, Value>>,
    },
}

/// A message that could not be accepted, with the id to answer (if one could be
/// read) and the error to answer with.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    pub id: Option<RequestId>,
    pub error: RpcError,
}

impl Rejected {
    fn new(id: Option<RequestId>, error: RpcError) -> Self {
        Self { id, error }
    }
}

/// Decode one line. Blank lines and non-JSON are parse errors with a null id.
// `Rejected` is large, but it is the cold path of a per-line call; boxing it
// would cost every caller an indirection for nothing.
#[allow(clippy::result_large_err)]
pub fn decode(line: &[u8]) -> Result<Incoming, Rejected> {
    // JSON's own white space only: `trim_ascii` would also drop a form feed,
    // and accept a line that is not JSON.
    let is_json_space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let start = line
        .iter()
        .position(|b| !is_json_space(b))
        .unwrap_or(line.len());
    let end = line
        .iter()
        .rposition(|b| !is_json_space(b))
        .map_or(start, |i| i + 1);
    let trimmed = &line[start..end];
    if trimmed.is_empty() {
        return Err(Rejected::new(
            None,
            RpcError::new(
                PARSE_ERROR,
                "parse error: empty line (expected one JSON-RPC message per line)",
            ),
        ));
    }
    let value: Value = serde_json::from_slice(trimmed).map_err(|e| {
        Rejected::new(
            None,
            RpcError::new(PARSE_ERROR, format!("parse error: {e}")),
        )
    })?;
    classify(value)
}

/// Apply the envelope rules to a parsed JSON value.
#[allow(clippy::result_large_err)]
pub fn classify(value: Value) -> Result<Incoming, Rejected> {
    let Value::Object(mut object) = value else {
        let what = if value.is_array() {
            "batches are not supported; send one JSON-RPC message per line"
        } else {
            "a JSON-RPC message is a JSON object"
        };
        return Err(Rejected::new(None, RpcError::invalid_request(what)));
    };

    // Read the id first, so that every later refusal can be answered to it.
    let raw_id = object.remove("id");
    let id = match &raw_id {
        None => None,
        Some(v) => match RequestId::from_value(v) {
            Some(id) => Some(id),
            None => {
                let why = match v {
                    Value::Null => "id must not be null",
                    Value::Number(_) => {
                        "id must be an integer or a string (fractional ids are invalid)"
                    }
                    _ => "id must be an integer or a string",
                };
                return Err(Rejected::new(None, RpcError::invalid_request(why)));
            }
        },
    };
    #[allow(clippy::result_large_err)]
    let reject = |message: String| {
        Err(Rejected::new(
            id.clone(),
            RpcError::invalid_request(message),
        ))
    };

    match object.remove("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        Some(_) => return reject("`jsonrpc` must be \"2.0\"".into()),
        None => return reject("missing `jsonrpc: \"2.0\"`".into()),
    }

    let is_response = object.contains_key("result") || object.contains_key("error");
    let method = object.remove("method");
    if is_response {
        if method.is_some() {
            return reject("a message cannot be both a request and a response".into());
        }
        // Never echo the id of an unsolicited response: it names no request of
        // ours and could collide with one of the client's own ids.
        return Err(Rejected::new(
            None,
            RpcError::invalid_request(
                "unsolicited response: this server never sends requests to the client",
            ),
        ));
    }
    let method = match method {
        Some(Value::String(m)) => m,
        Some(_) => return reject("`method` must be a string".into()),
        None => return reject("missing `method`".into()),
    };
    let params = match object.remove("params") {
        None => None,
        Some(Value::Object(p)) => Some(p),
        Some(_) => return reject("`params` must be an object".into()),
    };
    if let Some(extra) = object.keys().next() {
        return reject(format!("undeclared top-level member `{extra}`"));
    }
    Ok(match id {
        Some(id) => Incoming::Request { id, method, params },
        None => Incoming::Notification { method, params },
    })
}

fn id_json(id: Option<&RequestId>) -> String {
    match id {
        Some(id) => id.to_value().to_string(),
        None => "null".to_string(),
    }
}

/// `{"jsonrpc":"2.0","id":…,"result":<result_json>}` with `result_json` already
/// serialized (so that cached results are served as bytes).
pub fn response_line(id: &RequestId, result_json: &str) -> String {
    response_line_of(id, &[result_json])
}

/// [`response_line`] of a result given in pieces, joined in the line itself
/// (a tools/list answer is the build-time catalog between its head and tail,
/// copied once, into its line). The line is allocated at its exact length
/// plus one byte for the newline the stdio writer appends: it never grows
/// (a 212 KB tools/list line that grew by a byte was moved whole into a
/// 416 KiB allocation).
pub fn response_line_of(id: &RequestId, result_parts: &[&str]) -> String {
    const HEAD: &str = r#"{"jsonrpc":"2.0","id":"#;
    const RESULT: &str = r#","result":"#;
    let id = id_json(Some(id));
    let body: usize = result_parts.iter().map(|part| part.len()).sum();
    let mut line = String::with_capacity(HEAD.len() + id.len() + RESULT.len() + body + 2);
    line.push_str(HEAD);
    line.push_str(&id);
    line.push_str(RESULT);
    for part in result_parts {
        line.push_str(part);
    }
    line.push('}');
    line
}

pub fn error_line(id: Option<&RequestId>, error: &RpcError) -> String {
    let mut body = Map::new();
    body.insert("code".into(), Value::from(error.code));
    body.insert("message".into(), Value::from(error.message.clone()));
    if let Some(data) = &error.data {
        body.insert("data".into(), data.clone());
    }
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"error":{}}}"#,
        id_json(id),
        Value::Object(body)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_line_has_room_for_its_newline_and_joins_its_pieces() {
        for id in [
            RequestId::from_value(&Value::from(7)),
            RequestId::from_value(&Value::from("a\"b")),
        ] {
            let id = id.expect("a valid id");
            let whole = response_line(&id, r#"{"tools":[1,2],"x":true}"#);
            let joined = response_line_of(&id, &[r#"{"tools":"#, "[1,2]", r#","x":true}"#]);
            assert_eq!(whole, joined);
            let parsed: Value = serde_json::from_str(&whole).expect("the line is JSON");
            assert_eq!(parsed["result"]["tools"], serde_json::json!([1, 2]));
            assert_eq!(parsed["id"], id.to_value());
            // The stdio writer appends the newline without a reallocation.
            assert!(whole.capacity() > whole.len(), "{whole}");
        }
    }
}
