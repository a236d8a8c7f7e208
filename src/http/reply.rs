//! Turning the dispatcher's answers into HTTP responses: one JSON document, or
//! an SSE stream of the request's notifications followed by its response.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use tokio::sync::mpsc;

use super::body::{Body, OnClose, SseStream};
use crate::mcp::dispatcher::{Dispatcher, Reply};
use crate::mcp::jsonrpc::{self, Incoming, RpcError};
use crate::mcp::session::Session;
use crate::surface::Handler;
use crate::wire::RequestId;

/// Lines one request may queue before its tool waits for the client to read.
const REQUEST_CAPACITY: usize = 256;

/// Every notification line starts like this (see `wire::notification_line`);
/// a response line starts with `{"jsonrpc":"2.0","id":`.
const NOTIFICATION_PREFIX: &str = r#"{"jsonrpc":"2.0","method":"#;

pub fn is_notification(line: &str) -> bool {
    line.starts_with(NOTIFICATION_PREFIX)
}

/// The `error.code` of a serialized JSON-RPC response, if it is an error.
pub fn error_code(line: &str) -> Option<i64> {
    #[derive(serde::Deserialize)]
    struct Probe {
        error: Option<Code>,
    }
    #[derive(serde::Deserialize)]
    struct Code {
        code: i64,
    }
    serde_json::from_str::<Probe>(line)
        .ok()?
        .error
        .map(|e| e.code)
}

pub fn json(status: StatusCode, line: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(Body::text(line));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A JSON-RPC error document with an HTTP status.
pub fn error(status: StatusCode, id: Option<&RequestId>, error: &RpcError) -> Response<Body> {
    json(status, jsonrpc::error_line(id, error))
}

/// A call past its client's share (`jsonrpc::TOO_MANY_CALLS`): 429, to be
/// retried once one of the client's calls has finished.
pub fn too_many_calls(line: String) -> Response<Body> {
    crate::log_info!("http: refused a call with 429: {line}");
    let mut response = json(StatusCode::TOO_MANY_REQUESTS, line);
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    // A flood's surplus keeps no connection either.
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

pub fn status(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = status;
    response
}

pub fn sse(first: Option<String>, rx: mpsc::Receiver<String>, on_close: OnClose) -> Response<Body> {
    let mut response = Response::new(Body::Sse(SseStream::new(first, rx, on_close)));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// What the dispatcher did with one message.
pub enum Delivery {
    /// Answered at once with this line.
    Now(String),
    /// A call was admitted: its notifications and response arrive here, and the
    /// channel closes when the call has finished (with no response when it was
    /// cancelled).
    Later(mpsc::Receiver<String>),
}

/// Hand one decoded message to the shared dispatcher, with a channel of its own.
pub async fn dispatch<O: Handler + 'static>(
    dispatcher: &Arc<Dispatcher<O>>,
    session: &Arc<Session>,
    message: Incoming,
) -> Delivery {
    let (tx, rx) = mpsc::channel(REQUEST_CAPACITY);
    let reply = dispatcher.handle_message(session, message, &tx).await;
    drop(tx);
    match reply {
        Reply::Line(line) => Delivery::Now(line),
        Reply::None => Delivery::Later(rx),
    }
}

/// How a deferred call's messages reach the client.
pub struct Later {
    pub accepts_sse: bool,
    /// Where notifications go when the response is plain JSON.
    pub sink: Box<dyn Fn(String) + Send + Sync>,
    /// Runs when the exchange ends: the SSE stream closed, or the JSON
    /// response was produced, or the client went away while waiting.
    pub on_close: OnClose,
    /// The server's count of open SSE streams.
    pub streams: Arc<AtomicUsize>,
}

/// Wait for a deferred call: the first notification turns the response into an
/// SSE stream (when the client accepts one); a response that arrives first is
/// sent as plain JSON. `None` when the call ended without a response.
pub async fn deliver_later(mut rx: mpsc::Receiver<String>, later: Later) -> Option<Response<Body>> {
    /// Runs `on_close` if this future is dropped before handing it on.
    struct Closer(Option<OnClose>);
    impl Drop for Closer {
        fn drop(&mut self) {
            if let Some(close) = self.0.take() {
                close();
            }
        }
    }
    let mut closer = Closer(Some(later.on_close));
    loop {
        let line = rx.recv().await?;
        if !is_notification(&line) {
            return Some(json(StatusCode::OK, line));
        }
        if later.accepts_sse {
            let on_close = closer.0.take().expect("not yet handed on");
            return Some(sse(Some(line), rx, counted(&later.streams, on_close)));
        }
        (later.sink)(line);
    }
}

/// Count an SSE stream as open until it closes.
pub fn counted(streams: &Arc<AtomicUsize>, on_close: OnClose) -> OnClose {
    streams.fetch_add(1, Ordering::Relaxed);
    let streams = Arc::clone(streams);
    Box::new(move || {
        streams.fetch_sub(1, Ordering::Relaxed);
        on_close();
    })
}

/// The client's `Accept` admits an SSE response.
pub fn accepts_sse(headers: &hyper::HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| {
            t.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("text/event-stream")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn line_shapes_match_the_jsonrpc_module() {
        let note =
            crate::wire::notification_line("notifications/progress", &json!({"progress": 1}));
        assert!(is_notification(&note));
        let id = RequestId::Number(7);
        let response = jsonrpc::response_line(&id, "{}");
        assert!(!is_notification(&response));
        assert_eq!(error_code(&response), None);
        let error = jsonrpc::error_line(Some(&id), &RpcError::method_not_found("x"));
        assert_eq!(error_code(&error), Some(jsonrpc::METHOD_NOT_FOUND));
    }

    #[test]
    fn accept_header_parsing() {
        let mut headers = hyper::HeaderMap::new();
        assert!(!accepts_sse(&headers));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream;q=0.9"),
        );
        assert!(accepts_sse(&headers));
        headers.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
        assert!(!accepts_sse(&headers));
    }
}
