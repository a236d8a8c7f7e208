//! The 2026-07-28 leg: sessionless; every POST is served on a fresh protocol
//! `Session` with the modern family selected, after its mirrored headers were
//! checked against its body. Any `Mcp-Session-Id` is ignored and none is minted.

use std::sync::Arc;

use hyper::http::request::Parts;
use hyper::{Response, StatusCode};

use super::Server;
use super::body::Body;
use super::headers;
use super::reply::{self, Delivery, Later};
use crate::log_warn;
use crate::mcp::jsonrpc::{INTERNAL_ERROR, Incoming, METHOD_NOT_FOUND, TOO_MANY_CALLS};
use crate::surface::Handler;

/// The HTTP status of a modern answer: 404 for an unknown method, 429 for a
/// call past its client's share, 400 for a request the protocol refuses
/// (envelope, headers, version, params), 500 for an internal error.
pub fn status_of(code: Option<i64>) -> StatusCode {
    match code {
        None => StatusCode::OK,
        Some(METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        Some(TOO_MANY_CALLS) => StatusCode::TOO_MANY_REQUESTS,
        Some(INTERNAL_ERROR) => StatusCode::INTERNAL_SERVER_ERROR,
        Some(_) => StatusCode::BAD_REQUEST,
    }
}

impl<O: Handler + 'static> Server<O> {
    pub(super) async fn post_modern(&self, parts: &Parts, message: Incoming) -> Response<Body> {
        // The family is fixed before dispatch: a bare request on this leg is a
        // modern request missing its envelope (-32602), never legacy input.
        let session = Arc::new(self.dispatcher.sessionless());
        session.select_modern();
        let id = match &message {
            Incoming::Notification { .. } => {
                // 2026-07-28 defines no client notification over HTTP; accept it.
                let _ = reply::dispatch(&self.dispatcher, &session, message).await;
                return reply::status(StatusCode::ACCEPTED);
            }
            Incoming::Request { id, method, params } => {
                if let Err(error) = headers::check_modern(&parts.headers, method, params.as_ref()) {
                    self.dispatcher.stats().record_protocol_error();
                    log_warn!(
                        "http: refused {method} (id {id}) with 400: {} ({})",
                        error.message,
                        error.code
                    );
                    return reply::error(StatusCode::BAD_REQUEST, Some(id), &error);
                }
                id.clone()
            }
        };
        match reply::dispatch(&self.dispatcher, &session, message).await {
            Delivery::Now(line) => {
                let status = status_of(reply::error_code(&line));
                if status.is_server_error() {
                    crate::log_error!("http: request {id} failed: {line}");
                } else if status == StatusCode::TOO_MANY_REQUESTS {
                    return reply::too_many_calls(line);
                } else if status != StatusCode::OK {
                    log_warn!(
                        "http: refused request {id} with {}: {line}",
                        status.as_u16()
                    );
                }
                reply::json(status, line)
            }
            Delivery::Later(rx) => {
                self.track_modern(&session);
                // Closing the response is the client's cancellation of the call.
                let cancel = Arc::clone(&session);
                let later = Later {
                    accepts_sse: reply::accepts_sse(&parts.headers),
                    sink: Box::new(|_| {}),
                    on_close: Box::new(move || {
                        cancel.cancel_all();
                    }),
                    streams: Arc::clone(&self.streams),
                };
                match reply::deliver_later(rx, later).await {
                    Some(response) => response,
                    None => self.no_response(&id),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::jsonrpc;

    #[test]
    fn statuses() {
        assert_eq!(status_of(None), StatusCode::OK);
        assert_eq!(status_of(Some(METHOD_NOT_FOUND)), StatusCode::NOT_FOUND);
        assert_eq!(
            status_of(Some(jsonrpc::HEADER_MISMATCH)),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            status_of(Some(jsonrpc::UNSUPPORTED_PROTOCOL_VERSION)),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            status_of(Some(jsonrpc::INVALID_PARAMS)),
            StatusCode::BAD_REQUEST
        );
    }
}
