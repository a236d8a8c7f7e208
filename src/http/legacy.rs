//! The 2025-11-25 leg: sessions created by `initialize`, the session's `GET`
//! stream, `DELETE`.

use std::sync::Arc;

use hyper::header::HeaderValue;
use hyper::http::request::Parts;
use hyper::{Method, Response, StatusCode};

use super::body::Body;
use super::headers::{self, SESSION_ID};
use super::reply::{self, Delivery, Later};
use super::sessions;
use super::sessions::LegacySession;
use super::{Server, method_not_allowed, method_not_allowed_at, refuse, refuse_at};
use crate::logging::Level;
use crate::mcp::jsonrpc::{INTERNAL_ERROR, INVALID_REQUEST, Incoming, RpcError, TOO_MANY_CALLS};
use crate::surface::Handler;

/// A request reusing the id of a call in flight on its session, well-formed
/// or not: ignored (an answer with that id would be a second terminal
/// response), and the POST is told why with a null id.
pub(super) fn active_id_conflict(parts: &Parts) -> Response<Body> {
    refuse(
        StatusCode::CONFLICT,
        &parts.method,
        parts.uri.path(),
        &RpcError::invalid_request(
            "the request reuses the id of a call still in flight on this session; it was ignored",
        ),
    )
}

/// JSON-RPC code of "no such session" (implementation-defined range).
pub const SESSION_NOT_FOUND: i64 = -32001;

/// Where a request's session id pointed.
pub(super) enum Lookup {
    Missing,
    Unknown(String),
    Found(Arc<LegacySession>),
    Malformed,
}

impl<O: Handler + 'static> Server<O> {
    pub(super) fn lookup(&self, parts: &Parts) -> Lookup {
        match headers::get(&parts.headers, SESSION_ID) {
            Ok(None) => Lookup::Missing,
            Ok(Some(id)) => match self.sessions.get(id) {
                Some(session) => Lookup::Found(session),
                None => Lookup::Unknown(id.to_string()),
            },
            Err(()) => Lookup::Malformed,
        }
    }

    /// The session a non-initialize request names, or the refusal to send.
    fn require_session(&self, parts: &Parts) -> Result<Arc<LegacySession>, Box<Response<Body>>> {
        self.require_session_at(parts, Level::Warn)
    }

    /// `require_session`, a request without any session id logged at
    /// `missing` (a `GET` without one is a client probing for a stream).
    fn require_session_at(
        &self,
        parts: &Parts,
        missing: Level,
    ) -> Result<Arc<LegacySession>, Box<Response<Body>>> {
        let lookup = self.lookup(parts);
        let level = match lookup {
            Lookup::Missing => missing,
            _ => Level::Warn,
        };
        let (status, error) = match lookup {
            Lookup::Found(session) => return Ok(session),
            Lookup::Missing => (
                StatusCode::BAD_REQUEST,
                RpcError::new(
                    INVALID_REQUEST,
                    "missing Mcp-Session-Id: send initialize first (MCP 2025-11-25), or use MCP 2026-07-28 per-request _meta",
                ),
            ),
            Lookup::Malformed => (
                StatusCode::BAD_REQUEST,
                RpcError::new(
                    INVALID_REQUEST,
                    "the Mcp-Session-Id header is not visible ASCII",
                ),
            ),
            Lookup::Unknown(id) => (
                StatusCode::NOT_FOUND,
                RpcError::new(
                    SESSION_NOT_FOUND,
                    format!(
                        "session {id:?} not found (it ended or expired): initialize a new session"
                    ),
                ),
            ),
        };
        Err(Box::new(refuse_at(
            level,
            status,
            &parts.method,
            parts.uri.path(),
            &error,
        )))
    }

    pub(super) async fn post_legacy(&self, parts: &Parts, message: Incoming) -> Response<Body> {
        let is_initialize =
            matches!(&message, Incoming::Request { method, .. } if method == "initialize");
        if is_initialize && matches!(self.lookup(parts), Lookup::Missing) {
            return self.initialize(message).await;
        }
        let session = match self.require_session(parts) {
            Ok(session) => session,
            Err(refusal) => return *refusal,
        };
        let busy = session.busy();
        let id = match &message {
            Incoming::Notification { .. } => {
                let _ = reply::dispatch(&self.dispatcher, &session.core, message).await;
                return reply::status(StatusCode::ACCEPTED);
            }
            Incoming::Request { id, .. } => id.clone(),
        };
        if session.core.is_active(&id) {
            return active_id_conflict(parts);
        }
        match reply::dispatch(&self.dispatcher, &session.core, message).await {
            Delivery::Now(line) if reply::error_code(&line) == Some(TOO_MANY_CALLS) => {
                reply::too_many_calls(line)
            }
            Delivery::Now(line) => reply::json(StatusCode::OK, line),
            Delivery::Later(rx) => {
                let stream_to = Arc::clone(&session);
                let later = Later {
                    accepts_sse: reply::accepts_sse(&parts.headers),
                    sink: Box::new(move |line| stream_to.to_stream(line)),
                    on_close: Box::new(move || drop(busy)),
                    streams: Arc::clone(&self.streams),
                };
                match reply::deliver_later(rx, later).await {
                    Some(response) => response,
                    None => self.no_response(&id),
                }
            }
        }
    }

    /// `initialize` without a session id: a new session, registered only when
    /// the dispatcher accepted the handshake and there is room for it.
    async fn initialize(&self, message: Incoming) -> Response<Body> {
        let session = self
            .sessions
            .create(Arc::new(self.dispatcher.client_session()));
        let line = match reply::dispatch(&self.dispatcher, &session.core, message).await {
            Delivery::Now(line) => line,
            Delivery::Later(_) => unreachable!("initialize is answered at once"),
        };
        if reply::error_code(&line).is_some() {
            return reply::json(StatusCode::OK, line);
        }
        let id = session.id.clone();
        match self.sessions.register(session) {
            Ok(replaced) => {
                if let Some(old) = replaced {
                    crate::log_info!(
                        "http: session {} ended to make room for a new one ({} sessions, the limit)",
                        old.id,
                        self.sessions.max
                    );
                }
                let mut response = reply::json(StatusCode::OK, line);
                let value = HeaderValue::from_str(&id).expect("session ids are visible ASCII");
                response.headers_mut().insert(SESSION_ID, value);
                response
            }
            Err(sessions::Full) => refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                &Method::POST,
                "/mcp",
                &RpcError::new(
                    INTERNAL_ERROR,
                    format!(
                        "too many sessions: {} legacy sessions are open and none is idle; end one with DELETE, or raise --max-sessions",
                        self.sessions.max
                    ),
                ),
            ),
        }
    }

    pub(super) fn get(&self, parts: &Parts) -> Response<Body> {
        let modern = headers::claims_modern(&parts.headers);
        self.count(modern);
        // Clients probe for a stream the server may not offer: the refusals
        // of a GET are ordinary answers, logged at debug.
        if modern {
            return method_not_allowed_at(
                Level::Debug,
                &parts.method,
                parts.uri.path(),
                "POST, OPTIONS",
            );
        }
        if !reply::accepts_sse(&parts.headers) {
            return refuse_at(
                Level::Debug,
                StatusCode::NOT_ACCEPTABLE,
                &parts.method,
                parts.uri.path(),
                &RpcError::invalid_request(
                    "GET /mcp opens an SSE stream: Accept must include text/event-stream",
                ),
            );
        }
        let session = match self.require_session_at(parts, Level::Debug) {
            Ok(session) => session,
            Err(refusal) => return *refusal,
        };
        let Some(rx) = session.open_stream() else {
            return refuse(
                StatusCode::CONFLICT,
                &Method::GET,
                parts.uri.path(),
                &RpcError::invalid_request("this session already has an open GET stream"),
            );
        };
        let closed = Arc::clone(&session);
        reply::sse(
            None,
            rx,
            reply::counted(&self.streams, Box::new(move || closed.stream_closed())),
        )
    }

    pub(super) fn delete(&self, parts: &Parts) -> Response<Body> {
        let modern = headers::claims_modern(&parts.headers);
        self.count(modern);
        if modern {
            return method_not_allowed(&parts.method, parts.uri.path(), "POST, OPTIONS");
        }
        let session = match self.require_session(parts) {
            Ok(session) => session,
            Err(refusal) => return *refusal,
        };
        self.sessions.remove(&session.id);
        crate::log_info!("http: session {} ended by DELETE", session.id);
        reply::status(StatusCode::OK)
    }
}
