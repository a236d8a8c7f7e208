//! The Streamable HTTP transport: one `/mcp` endpoint for both protocol eras,
//! over the same dispatcher and tool surface as stdio.
//!
//! - legacy 2025-11-25: `initialize` creates a session (`Mcp-Session-Id`), `GET`
//!   opens its SSE stream, `DELETE` ends it, idle sessions expire;
//! - modern 2026-07-28: sessionless; every POST gets a fresh protocol `Session`
//!   and its mirrored headers are checked against the body.
//!
//! A call's progress and log notifications travel in its POST's SSE response
//! (or, for a legacy client that accepts only JSON, on the session's GET stream).

mod admission;
mod auth;
mod body;
mod config;
mod drain;
pub mod guard;
mod headers;
mod legacy;
mod metrics;
mod modern;
mod observe;
mod reply;
mod sessions;
mod status;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use crate::logging::Level;
use crate::mcp::dispatcher::{Dispatcher, Reply};
use crate::mcp::jsonrpc::{self, INTERNAL_ERROR, RpcError};
use crate::mcp::session::Session;
use crate::surface::Handler;
use crate::util::lock;
use crate::{log_error, log_info, log_warn};

pub use auth::Token;
pub use body::Body;
pub use config::{
    DEFAULT_BODY_LIMIT, DEFAULT_BODY_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_SESSIONS,
    DEFAULT_PORT, DEFAULT_SESSION_IDLE, HttpConfig, parse_addr, parse_cli,
};
pub use drain::Drain;
pub use guard::AllowList;
use sessions::Sessions;

/// The paths that need the bearer token when one is set.
const GUARDED: &[&str] = &["/mcp", "/metrics", "/status"];

/// How long shutdown waits for connections to finish after the calls drained.
const CLOSE_GRACE: Duration = Duration::from_secs(5);
/// Evicted connections being answered 503 at once; past it they are closed
/// unanswered.
const MAX_REFUSING: usize = 64;
/// The most hyper buffers per connection (request heads must fit in it).
const READ_BUFFER: usize = 64 * 1024;

/// The transport's state, shared by every connection.
pub(crate) struct Server<O> {
    dispatcher: Arc<Dispatcher<O>>,
    config: HttpConfig,
    sessions: Sessions,
    /// The sessions of modern calls that may still run, so that shutdown can
    /// cancel them (an entry dies with its call).
    modern_live: Mutex<Vec<Weak<Session>>>,
    streams: Arc<AtomicUsize>,
    /// Pending and proved connections (see `admission`).
    admission: Arc<admission::Admission>,
    refused_connections: AtomicU64,
    legacy_requests: AtomicU64,
    modern_requests: AtomicU64,
    started: Instant,
    draining: Drain,
}

impl<O: Handler + 'static> Server<O> {
    fn new(dispatcher: Arc<Dispatcher<O>>, config: HttpConfig) -> Self {
        let draining = config.drain.clone();
        Self {
            dispatcher,
            sessions: Sessions::new(config.session_idle, config.max_sessions),
            modern_live: Mutex::new(Vec::new()),
            streams: Arc::new(AtomicUsize::new(0)),
            admission: Arc::new(admission::Admission::new(config.max_connections)),
            refused_connections: AtomicU64::new(0),
            legacy_requests: AtomicU64::new(0),
            modern_requests: AtomicU64::new(0),
            started: Instant::now(),
            draining,
            config,
        }
    }

    /// Whether a request's head proves its connection: it came complete and,
    /// when the server has a token, carried it.
    fn proves(&self, headers: &hyper::HeaderMap) -> bool {
        self.config.token.as_ref().is_none_or(|t| t.admits(headers))
    }

    /// A proving request whose connection gets no slot: 503, and closed.
    fn connection_refused(&self, refused: admission::Refused) -> Response<Body> {
        let message = match refused {
            admission::Refused::Full => {
                let refused_so_far = self.refused_connections.fetch_add(1, Ordering::Relaxed);
                if refused_so_far.is_power_of_two() {
                    log_warn!(
                        "http: {} connection(s) open, the limit (--max-connections); answering 503 ({} refused so far)",
                        self.config.max_connections,
                        refused_so_far + 1
                    );
                }
                "too many open connections (the server's --max-connections limit); retry shortly"
            }
            // Counted as evicted already.
            admission::Refused::Evicted => EVICTED,
        };
        let mut response = reply::error(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            &RpcError::new(INTERNAL_ERROR, message),
        );
        let headers = response.headers_mut();
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    }

    /// Remember a modern call's session for shutdown.
    fn track_modern(&self, session: &Arc<Session>) {
        let mut live = lock(&self.modern_live);
        if live.len() >= 64 && live.len().is_power_of_two() {
            live.retain(|s| s.strong_count() > 0);
        }
        live.push(Arc::downgrade(session));
    }

    fn count(&self, modern: bool) {
        let counter = if modern {
            &self.modern_requests
        } else {
            &self.legacy_requests
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    async fn handle(
        self: Arc<Self>,
        connection: Arc<admission::Connection>,
        request: Request<Incoming>,
    ) -> Result<Response<Body>, std::convert::Infallible> {
        let (parts, body) = request.into_parts();
        if !connection.is_proved() && self.proves(&parts.headers) {
            if let Err(refused) = connection.prove() {
                return Ok(self.connection_refused(refused));
            }
        }
        let path = parts.uri.path();
        let mut response = if let Err(refusal) = self.config.allow.check(&parts.headers) {
            if path == "/mcp" {
                self.count(headers::claims_modern(&parts.headers));
            }
            let status = match refusal {
                guard::Refusal::MissingHost | guard::Refusal::DuplicateHost => {
                    StatusCode::BAD_REQUEST
                }
                _ => StatusCode::FORBIDDEN,
            };
            refuse(
                status,
                &parts.method,
                path,
                &RpcError::invalid_request(refusal.message()),
            )
        } else if GUARDED.contains(&path)
            && parts.method != Method::OPTIONS
            && let Some(refusal) = self
                .config
                .token
                .as_ref()
                .and_then(|t| t.refusal(&parts.headers))
        {
            // Only what serves something is guarded: `/health` is for load
            // balancers, CORS preflights never carry credentials, and every
            // other path is a 404 whoever asks (the OAuth discovery and
            // registration paths included: there is no OAuth here, and a 401
            // on them sends hosts into an OAuth flow that cannot succeed).
            if path == "/mcp" {
                self.count(headers::claims_modern(&parts.headers));
            }
            Self::unauthorized(&parts.method, path, refusal)
        } else {
            match (path, &parts.method) {
                ("/mcp", &Method::POST) => self.post(&parts, body).await,
                ("/mcp", &Method::GET) => self.get(&parts),
                ("/mcp", &Method::DELETE) => self.delete(&parts),
                ("/mcp" | "/health", &Method::OPTIONS) => {
                    let mut response = reply::status(StatusCode::NO_CONTENT);
                    guard::preflight(&parts.headers, response.headers_mut());
                    return Ok(response);
                }
                ("/health", &Method::GET) => {
                    // `?after=N`: answer once the connection counts changed
                    // past `N` (`connectionChanges`), at most 10 s from now,
                    // so a watcher waits on the server instead of a timer.
                    let after = parts.uri.query().and_then(|q| {
                        q.split('&')
                            .find_map(|kv| kv.strip_prefix("after="))
                            .and_then(|n| n.parse::<u64>().ok())
                    });
                    if let Some(seen) = after {
                        self.admission
                            .changed_after(seen, Duration::from_secs(10))
                            .await;
                    }
                    self.health()
                }
                ("/metrics", &Method::GET) => self.metrics().await,
                ("/status", &Method::GET) => self.status().await,
                ("/metrics" | "/status", _) => method_not_allowed(&parts.method, path, "GET"),
                ("/mcp", _) => {
                    method_not_allowed(&parts.method, path, "GET, POST, DELETE, OPTIONS")
                }
                ("/health", _) => method_not_allowed(&parts.method, path, "GET, OPTIONS"),
                _ => not_found(&parts.method, path),
            }
        };
        guard::cors(&parts.headers, response.headers_mut());
        Ok(response)
    }

    /// 401 with `WWW-Authenticate: Bearer` and a message naming the header
    /// to configure. A request without any credentials is what a client not
    /// configured with the token (or probing for OAuth) sends: logged at info;
    /// a wrong token at warn.
    fn unauthorized(method: &Method, path: &str, denied: auth::Denied) -> Response<Body> {
        let level = match denied {
            auth::Denied::Missing => Level::Info,
            auth::Denied::Wrong => Level::Warn,
        };
        let mut response = refuse_at(
            level,
            StatusCode::UNAUTHORIZED,
            method,
            path,
            &RpcError::invalid_request(denied.message()),
        );
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(r#"Bearer realm="lean-beam-mcp""#),
        );
        response
    }

    async fn post(&self, parts: &hyper::http::request::Parts, body: Incoming) -> Response<Body> {
        let (method, path) = (&parts.method, parts.uri.path());
        if self.draining.is_draining() {
            let mut response = refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                method,
                path,
                &RpcError::new(
                    INTERNAL_ERROR,
                    "this server is draining (shutting down): nothing of this request was done; retry it, behind a load balancer on another replica",
                ),
            );
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from_static(drain::RETRY_AFTER_SECS),
            );
            return response;
        }
        if let Some(kind) = parts.headers.get(header::CONTENT_TYPE) {
            let json = kind
                .to_str()
                .ok()
                .and_then(|k| k.split(';').next())
                .is_some_and(|k| k.trim().eq_ignore_ascii_case("application/json"));
            if !json {
                self.count(headers::claims_modern(&parts.headers));
                return refuse(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    method,
                    path,
                    &RpcError::invalid_request("the body must be application/json"),
                );
            }
        }
        let read = tokio::time::timeout(
            self.config.body_timeout,
            body::read_limited(body, self.config.body_limit),
        );
        let bytes = match read.await.unwrap_or(Err(body::ReadError::TimedOut)) {
            Ok(bytes) => bytes,
            Err(err) => {
                self.count(headers::claims_modern(&parts.headers));
                return match err {
                    body::ReadError::TooLarge => refuse(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        method,
                        path,
                        &RpcError::invalid_request(format!(
                            "the body exceeds the {}-byte limit",
                            self.config.body_limit
                        )),
                    ),
                    body::ReadError::TimedOut => {
                        let mut response = refuse(
                            StatusCode::REQUEST_TIMEOUT,
                            method,
                            path,
                            &RpcError::invalid_request(format!(
                                "the body did not arrive within {:?} (the time limit on reading a request)",
                                self.config.body_timeout
                            )),
                        );
                        response
                            .headers_mut()
                            .insert(header::CONNECTION, HeaderValue::from_static("close"));
                        response
                    }
                    body::ReadError::Io(err) => refuse(
                        StatusCode::BAD_REQUEST,
                        method,
                        path,
                        &RpcError::invalid_request(format!("the body could not be read: {err}")),
                    ),
                };
            }
        };
        let decoded = jsonrpc::decode(&bytes);
        let modern = headers::is_modern(&parts.headers, decoded.as_ref().ok());
        self.count(modern);
        match decoded {
            Ok(message) if modern => self.post_modern(parts, message).await,
            Ok(message) => self.post_legacy(parts, message).await,
            Err(_) => {
                // The dispatcher answers malformed input itself (and counts it),
                // on the legacy session the request names: there a malformed
                // request reusing an active id is ignored, not answered.
                let (tx, _rx) = tokio::sync::mpsc::channel(1);
                let session = match self.lookup(parts) {
                    legacy::Lookup::Found(session) if !modern => Arc::clone(&session.core),
                    _ => Arc::new(Session::default()),
                };
                match self.dispatcher.handle_line(&session, &bytes, &tx).await {
                    Reply::Line(line) => {
                        log_warn!("http: refused {method} {path} with 400: {line}");
                        reply::json(StatusCode::BAD_REQUEST, line)
                    }
                    Reply::None => legacy::active_id_conflict(parts),
                }
            }
        }
    }

    /// A call ended without a response: cancelled by the client (legacy
    /// `notifications/cancelled`) or by shutdown.
    fn no_response(&self, id: &crate::wire::RequestId) -> Response<Body> {
        if self.draining.is_draining() {
            reply::error(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(id),
                &RpcError::new(
                    INTERNAL_ERROR,
                    "the server shut down before the call finished",
                ),
            )
        } else {
            reply::status(StatusCode::NO_CONTENT)
        }
    }

    fn health(&self) -> Response<Body> {
        // A draining server is unhealthy, so that load balancers and
        // Kubernetes stop sending it work.
        let (status, code) = if self.draining.is_draining() {
            ("draining", StatusCode::SERVICE_UNAVAILABLE)
        } else {
            ("ok", StatusCode::OK)
        };
        let body = json!({
            "status": status,
            "uptimeMs": self.started.elapsed().as_millis() as u64,
            "sessions": self.sessions.len(),
            "streams": self.streams.load(Ordering::Relaxed),
            "connections": self.admission.proved(),
            "pendingConnections": self.admission.pending(),
            "refusedConnections": self.refused_connections.load(Ordering::Relaxed),
            "evictedConnections": self.admission.evicted.load(Ordering::Relaxed),
            "connectionChanges": self.admission.changes(),
            "admittedCalls": self.dispatcher.admitted(),
            "limits": {
                "maxConnections": self.config.max_connections,
                "maxSessions": self.config.max_sessions,
                "bodyBytes": self.config.body_limit,
                "bodyTimeoutMs": self.config.body_timeout.as_millis() as u64,
                "maxInFlight": self.dispatcher.config().max_in_flight,
                "maxInFlightPerClient": self.dispatcher.config().max_in_flight_per_client,
            },
            "requests": {
                "legacy": self.legacy_requests.load(Ordering::Relaxed),
                "modern": self.modern_requests.load(Ordering::Relaxed),
            },
        });
        reply::json(code, body.to_string())
    }

    /// `GET /metrics`: Prometheus's text format (`metrics.rs`).
    async fn metrics(&self) -> Response<Body> {
        let text = metrics::render(&self.observe().await);
        observe::text(metrics::CONTENT_TYPE, text)
    }

    /// `GET /status`: the self-contained status page (`status.rs`).
    async fn status(&self) -> Response<Body> {
        let page = status::render(&self.observe().await);
        let mut response = observe::text("text/html; charset=utf-8", page);
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(status::CONTENT_SECURITY_POLICY),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }

    /// Cancel every cancellable call, wait for admitted work, end the sessions.
    async fn drain(&self) {
        let live: Vec<Arc<Session>> = lock(&self.modern_live)
            .drain(..)
            .filter_map(|s| s.upgrade())
            .collect();
        let cancelled =
            self.sessions.cancel_all() + live.iter().map(|s| s.cancel_all()).sum::<usize>();
        log_info!("http: shutting down; cancelled {cancelled} call(s), draining admitted work");
        self.dispatcher.drain().await;
        self.sessions.end_all();
    }
}

/// A refused request: logged as a warning, answered with a JSON-RPC error body.
fn refuse(status: StatusCode, method: &Method, path: &str, error: &RpcError) -> Response<Body> {
    refuse_at(Level::Warn, status, method, path, error)
}

/// A refused request logged at `level`: the answers to what ordinary clients
/// send while finding out what the server offers (OAuth discovery, a `GET`
/// stream the server may not offer) are not the operator's concern.
fn refuse_at(
    level: Level,
    status: StatusCode,
    method: &Method,
    path: &str,
    error: &RpcError,
) -> Response<Body> {
    crate::logging::write(
        level,
        format_args!(
            "http: refused {method} {path} with {}: {}",
            status.as_u16(),
            error.message
        ),
    );
    reply::error(status, None, error)
}

/// A path with nothing behind it: 404 whoever asks, logged at debug (clients
/// probe `/.well-known/oauth-*`, `/register` and the like). There is no OAuth
/// here, which the answer says, so that a host stops looking for it.
fn not_found(method: &Method, path: &str) -> Response<Body> {
    let oauth = path.starts_with("/.well-known/") || path == "/register" || path == "/token";
    let message = if oauth {
        format!(
            "no endpoint at {path}: this server has no OAuth; when it requires a token, configure the client to send the header `Authorization: Bearer <token>` (the MCP endpoint is /mcp)"
        )
    } else {
        format!("no endpoint at {path}: the MCP endpoint is /mcp")
    };
    refuse_at(
        Level::Debug,
        StatusCode::NOT_FOUND,
        method,
        path,
        &RpcError::invalid_request(message),
    )
}

fn method_not_allowed(method: &Method, path: &str, allow: &'static str) -> Response<Body> {
    method_not_allowed_at(Level::Warn, method, path, allow)
}

fn method_not_allowed_at(
    level: Level,
    method: &Method,
    path: &str,
    allow: &'static str,
) -> Response<Body> {
    let mut response = refuse_at(
        level,
        StatusCode::METHOD_NOT_ALLOWED,
        method,
        path,
        &RpcError::invalid_request(format!(
            "{method} is not served at {path} (allowed: {allow})"
        )),
    );
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

/// Bind the listener (separate from `serve` so that callers learn the port).
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// Serve until `shutdown` resolves, then stop accepting, cancel and drain the
/// admitted calls through the dispatcher, close the streams and let the open
/// connections finish.
pub async fn serve<O, S>(
    dispatcher: Arc<Dispatcher<O>>,
    mut config: HttpConfig,
    listener: TcpListener,
    shutdown: S,
) where
    O: Handler + 'static,
    S: Future<Output = ()>,
{
    config.allow.bound = listener.local_addr().ok();
    let header_timeout = config.body_timeout;
    let server = Arc::new(Server::new(dispatcher, config));
    let (stop_tx, stop_rx) = watch::channel(false);
    let reaper = tokio::spawn(reap(Arc::clone(&server), stop_rx.clone()));
    let refusing = Arc::new(Semaphore::new(MAX_REFUSING));
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        while connections.try_join_next().is_some() {}
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(err) => {
                // Out of descriptors and the like: wait a moment rather than spin.
                log_error!("http: accept failed: {err}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let connection = server.admission.accept();
        let _ = stream.set_nodelay(true);
        let server = Arc::clone(&server);
        let mut stop = stop_rx.clone();
        let refusing = Arc::clone(&refusing);
        connections.spawn(async move {
            let mut stream = stream;
            let connection = Arc::new(connection);
            let place = Arc::clone(&connection);
            let service =
                service_fn(move |request| Arc::clone(&server).handle(Arc::clone(&place), request));
            let mut http = Box::pin(
                http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(header_timeout)
                    // hyper's read buffer per connection, 400 KiB by default; the
                    // body is copied out of it as it arrives.
                    .max_buf_size(READ_BUFFER)
                    .serve_connection(TokioIo::new(&mut stream), service),
            );
            let result = tokio::select! {
                result = http.as_mut() => Some(result),
                () = connection.evicted() => None,
                () = stopped(&mut stop) => {
                    http.as_mut().graceful_shutdown();
                    Some(http.as_mut().await)
                }
            };
            match result {
                Some(Err(err)) if !err.is_incomplete_message() && !err.is_canceled() => {
                    log_info!("http: connection from {peer} ended: {err}");
                }
                Some(_) => {}
                None => {
                    // Evicted while pending: told so when there is room to
                    // answer, else closed unanswered.
                    drop(http);
                    drop(connection);
                    if let Ok(_permit) = refusing.try_acquire_owned() {
                        refuse_connection(stream, EVICTED).await;
                    }
                }
            }
        });
    }
    drop(listener);
    server.draining.start();
    let _ = stop_tx.send(true);
    server.drain().await;
    reaper.abort();
    let finished = tokio::time::timeout(CLOSE_GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if finished.is_err() {
        log_warn!(
            "http: {} connection(s) still open after the grace period; closing them",
            connections.len()
        );
        connections.shutdown().await;
    }
}

/// What an evicted connection is told.
const EVICTED: &str = "too many connections are yet to send a request with the token (the server's --max-connections limit on them); this one waited the longest and was closed to make room: retry";

/// Answer a connection with 503 and close it. What the client sends is then
/// read (and discarded) for a moment, so that it reads the answer rather than
/// a reset.
async fn refuse_connection(mut stream: TcpStream, message: &str) {
    const READ_FOR: Duration = Duration::from_secs(1);
    let body = jsonrpc::error_line(None, &RpcError::new(INTERNAL_ERROR, message));
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(READ_FOR, async {
        let mut scratch = [0u8; 4096];
        if stream.write_all(response.as_bytes()).await.is_ok() {
            let _ = stream.shutdown().await;
            let mut seen = 0usize;
            while seen < 1024 * 1024 {
                match stream.read(&mut scratch).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen += n,
                }
            }
        }
    })
    .await;
}

async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stop| *stop).await;
}

/// Expire idle legacy sessions.
async fn reap<O: Handler + 'static>(server: Arc<Server<O>>, mut stop: watch::Receiver<bool>) {
    let period =
        (server.sessions.idle / 2).clamp(Duration::from_millis(50), Duration::from_secs(30));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = stopped(&mut stop) => return,
        }
        for id in server.sessions.expire(Instant::now()) {
            log_info!(
                "http: session {id} expired after {:?} idle",
                server.sessions.idle
            );
        }
    }
}

#[cfg(test)]
mod tests;
