//! What the server sends, told apart: notifications (the bulk ones parsed
//! typed, in one pass when possible), requests of its own, and answers to
//! ours. Pure: the client acts on what [`classify`] returns.

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

use lsp_types::notification::{Notification, PublishDiagnostics};

use super::error::LspError;
use super::protocol::{FileProgress, LeanErrorCode};
use super::server::ServerEvent;

const FILE_PROGRESS: &str = FileProgress::METHOD;
const PUBLISH_DIAGNOSTICS: &str = PublishDiagnostics::METHOD;

/// One message from the server.
#[derive(Debug)]
pub(super) enum Received {
    /// A notification, as the event to deliver.
    Notification(ServerEvent),
    /// A bulk notification whose params do not have the expected shape; it is
    /// dropped (the connection itself is intact).
    MalformedNotification { method: String, problem: String },
    /// A server → client request.
    Request { method: String, id: Value },
    /// The answer to our request `id`.
    Answer {
        id: i64,
        answer: Result<Value, LspError>,
    },
    /// An answer whose id is not one we use (ours are integers).
    ForeignAnswer(Value),
    /// An error the server reported with neither id nor method.
    PeerError {
        code: LeanErrorCode,
        message: String,
    },
}

/// What `body` (one frame's JSON) is. `Err` when it is no JSON-RPC message at
/// all: the server broke the protocol.
pub(super) fn classify(body: &[u8]) -> Result<Received, String> {
    if let Some(event) = typed_notification_fast(body) {
        return Ok(Received::Notification(event));
    }
    let msg: ServerMessage = serde_json::from_slice(body).map_err(|e| {
        let start = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
        format!("invalid JSON-RPC message ({e}): {start}")
    })?;
    Ok(match (msg.method, msg.id) {
        (Some(method), Some(id)) => Received::Request { method, id },
        (Some(method), None) => {
            let raw = msg.params.map_or("null", |p| p.get());
            match typed_notification(&method, raw) {
                Some(Ok(event)) => Received::Notification(event),
                Some(Err(problem)) => Received::MalformedNotification { method, problem },
                None => {
                    let params = serde_json::from_str(raw)
                        .map_err(|e| format!("invalid params of {method}: {e}"))?;
                    Received::Notification(ServerEvent::Notification { method, params })
                }
            }
        }
        (None, Some(id)) => {
            let Some(id) = id.as_i64() else {
                return Ok(Received::ForeignAnswer(id));
            };
            let answer = match (msg.result, msg.error) {
                (_, Some(e)) => Err(LspError::Rpc {
                    code: e.code,
                    message: e.message,
                    data: e.data,
                }),
                (Some(result), None) => Ok(result),
                // One malformed answer; the connection itself is intact, so
                // this is not the connection-breaking `Protocol` error.
                (None, None) => Err(LspError::Rpc {
                    code: LeanErrorCode::InternalError,
                    message: format!("answer to request {id} has neither result nor error"),
                    data: None,
                }),
            };
            Received::Answer { id, answer }
        }
        (None, None) => match msg.error {
            Some(e) => Received::PeerError {
                code: e.code,
                message: e.message,
            },
            None => return Err("message with neither method nor id".into()),
        },
    })
}

/// The notifications that make up the bulk of what Lean sends, as typed
/// events (see [`ServerEvent::FileProgress`], [`ServerEvent::Diagnostics`]).
fn typed_notification(method: &str, params: &str) -> Option<Result<ServerEvent, String>> {
    let event = match method {
        FILE_PROGRESS => serde_json::from_str(params).map(ServerEvent::FileProgress),
        PUBLISH_DIAGNOSTICS => serde_json::from_str(params).map(ServerEvent::Diagnostics),
        _ => return None,
    };
    Some(event.map_err(|e| e.to_string()))
}

/// A typed notification parsed in one pass, when its method comes first (Lean
/// writes object members in key order, so `"method"` precedes `"params"`).
/// Anything else, or anything unexpected, takes the general path.
fn typed_notification_fast(body: &[u8]) -> Option<ServerEvent> {
    #[derive(Deserialize)]
    struct Message<P> {
        #[serde(default)]
        id: Option<serde::de::IgnoredAny>,
        method: String,
        params: P,
    }
    fn parse<P: serde::de::DeserializeOwned>(body: &[u8], method: &str) -> Option<P> {
        let msg: Message<P> = serde_json::from_slice(body).ok()?;
        (msg.id.is_none() && msg.method == method).then_some(msg.params)
    }
    const PREFIX: &[u8] = br#""method":""#;
    let head = &body[..body.len().min(64)];
    let at = head.windows(PREFIX.len()).position(|w| w == PREFIX)? + PREFIX.len();
    let names =
        |m: &str| body[at..].starts_with(m.as_bytes()) && body.get(at + m.len()) == Some(&b'"');
    if names(FILE_PROGRESS) {
        parse(body, FILE_PROGRESS).map(ServerEvent::FileProgress)
    } else if names(PUBLISH_DIAGNOSTICS) {
        parse(body, PUBLISH_DIAGNOSTICS).map(ServerEvent::Diagnostics)
    } else {
        None
    }
}

/// Any message from the server; which fields are present tells what it is.
/// The params stay raw until the method says how to parse them.
#[derive(Deserialize)]
struct ServerMessage<'a> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
    /// `Some(Value::Null)` for `"result": null`, `None` when absent.
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    #[serde(default)]
    error: Option<RpcErrorObject>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A JSON-RPC error object.
#[derive(Deserialize)]
struct RpcErrorObject {
    code: LeanErrorCode,
    #[serde(default)]
    message: String,
    #[serde(default)]
    data: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_notifications_are_parsed_in_one_pass_only_when_they_surely_are() {
        let progress = r#""params":{"processing":[{"kind":1,"range":{"end":{"character":0,"line":9},"start":{"character":0,"line":3}}}],"textDocument":{"uri":"file:///a.lean","version":4}}"#;
        let lean = format!(r#"{{"jsonrpc":"2.0","method":"$/lean/fileProgress",{progress}}}"#);
        match typed_notification_fast(lean.as_bytes()) {
            Some(ServerEvent::FileProgress(p)) => {
                assert_eq!(p.text_document.version, Some(4));
                assert_eq!(p.processing[0].range.start.line, 3);
            }
            other => panic!("Lean's own order: {other:?}"),
        }
        let diagnostics = r#"{"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"diagnostics":[{"message":"m","range":{"end":{"character":1,"line":0},"start":{"character":0,"line":0}}}],"uri":"file:///a.lean","version":2}}"#;
        match typed_notification_fast(diagnostics.as_bytes()) {
            Some(ServerEvent::Diagnostics(p)) => {
                assert_eq!((p.uri.as_str(), p.version), ("file:///a.lean", Some(2)));
                assert!(p.diagnostics.get().starts_with(r#"[{"message":"m""#));
            }
            other => panic!("Lean's own order: {other:?}"),
        }
        // A request with that method, params that do not fit, a method that
        // only starts alike, or a method after a long member: the general
        // path decides.
        let request = format!(r#"{{"id":1,"method":"$/lean/fileProgress",{progress}}}"#);
        assert!(typed_notification_fast(request.as_bytes()).is_none());
        let odd = r#"{"method":"$/lean/fileProgress","params":{"processing":7}}"#;
        assert!(typed_notification_fast(odd.as_bytes()).is_none());
        let longer = format!(r#"{{"method":"$/lean/fileProgressX",{progress}}}"#);
        assert!(typed_notification_fast(longer.as_bytes()).is_none());
        let late = format!(
            r#"{{"jsonrpc":"2.0","x":"{}","method":"$/lean/fileProgress",{progress}}}"#,
            "y".repeat(64)
        );
        assert!(typed_notification_fast(late.as_bytes()).is_none());
        // The general path reads the late one typed too.
        assert!(matches!(
            classify(late.as_bytes()),
            Ok(Received::Notification(ServerEvent::FileProgress(_)))
        ));
    }

    /// Every kind of message, as the reader task sees it.
    #[test]
    fn messages_are_told_apart_by_their_members() {
        let kind = |body: &str| match classify(body.as_bytes()) {
            Ok(Received::Notification(ServerEvent::Notification { method, params })) => {
                format!("notification {method} {params}")
            }
            Ok(Received::Notification(other)) => format!("typed {other:?}"),
            Ok(Received::MalformedNotification { method, .. }) => format!("malformed {method}"),
            Ok(Received::Request { method, id }) => format!("request {method} {id}"),
            Ok(Received::Answer { id, answer: Ok(v) }) => format!("answer {id} {v}"),
            Ok(Received::Answer { id, answer: Err(e) }) => format!("error {id} {e}"),
            Ok(Received::ForeignAnswer(id)) => format!("foreign {id}"),
            Ok(Received::PeerError { code, message }) => format!("peer {code} {message}"),
            Err(problem) => format!("broken: {problem}"),
        };
        let cases = [
            (
                r#"{"method":"window/logMessage","params":{"type":3,"message":"hi"}}"#,
                r#"notification window/logMessage {"type":3,"message":"hi"}"#,
            ),
            (r#"{"method":"x"}"#, "notification x null"),
            (
                r#"{"id":"r1","method":"client/registerCapability","params":{}}"#,
                r#"request client/registerCapability "r1""#,
            ),
            (r#"{"id":4,"result":null}"#, "answer 4 null"),
            (r#"{"id":5,"result":{"a":1}}"#, r#"answer 5 {"a":1}"#),
            (
                r#"{"id":6,"error":{"code":-32801,"message":"closed file"}}"#,
                "error 6 language server error -32801: closed file",
            ),
            (
                r#"{"id":7}"#,
                "error 7 language server error -32603: answer to request 7 has neither result nor error",
            ),
            (r#"{"id":"s","result":1}"#, r#"foreign "s""#),
            (
                r#"{"error":{"code":-32700,"message":"parse error"}}"#,
                "peer -32700 parse error",
            ),
            (
                r#"{"method":"$/lean/fileProgress","params":{"processing":7}}"#,
                "malformed $/lean/fileProgress",
            ),
            (
                r#"{"jsonrpc":"2.0"}"#,
                "broken: message with neither method nor id",
            ),
            (
                r#"{"method":"x","params":[1,}"#,
                "broken: invalid JSON-RPC message",
            ),
        ];
        for (body, want) in cases {
            let got = kind(body);
            assert!(
                got.starts_with(want),
                "{body}\n  got:  {got}\n  want: {want}"
            );
        }
    }
}
