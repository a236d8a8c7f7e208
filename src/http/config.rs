//! The HTTP transport's configuration: its bounds and their defaults, and
//! the command line (`--http [ADDR]` and the flags that set the bounds)
//! read into an [`HttpConfig`].

use std::net::SocketAddr;
use std::time::Duration;

use tokio::sync::Semaphore;

use super::{AllowList, Drain, Token};

/// The default port of `--http` when only a host is given.
pub const DEFAULT_PORT: u16 = 8765;

/// One limit for every request body, in both eras.
pub const DEFAULT_BODY_LIMIT: usize = 10 * 1024 * 1024;

/// A legacy session with no request in flight and no open stream expires after this.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);

/// Proved connections (a request with the token came), and apart from them as
/// many pending ones (see `admission`); past them a request is answered 503.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// How long a client may take to send a request's headers, and its body.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Legacy sessions at once; a new one replaces the one idle the longest.
pub const DEFAULT_MAX_SESSIONS: usize = 1024;

#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub allow: AllowList,
    pub session_idle: Duration,
    pub body_limit: usize,
    pub body_timeout: Duration,
    pub max_connections: usize,
    pub max_sessions: usize,
    /// Calls one client (a legacy session, or the root of sessionless calls)
    /// may run at once, see `mcp::share` (applied to the dispatcher's
    /// configuration by the caller); `None` keeps the dispatcher's.
    pub max_in_flight_per_client: Option<usize>,
    /// Required on every request but `/health` when set.
    pub token: Option<Token>,
    /// Set by whoever drains the replica (see `crate::replica`); shutdown sets it too.
    pub drain: Drain,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            allow: AllowList::default(),
            session_idle: DEFAULT_SESSION_IDLE,
            body_limit: DEFAULT_BODY_LIMIT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_in_flight_per_client: None,
            token: None,
            drain: Drain::default(),
        }
    }
}

/// Parse `--http ADDR`: `HOST:PORT`, `[V6]:PORT`, a bare `PORT` (loopback), or
/// a bare host (default port).
pub fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Ok(ip) = text
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<std::net::IpAddr>()
    {
        return Ok(SocketAddr::new(ip, DEFAULT_PORT));
    }
    if text == "localhost" {
        return Ok(SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)));
    }
    if let Some(port) = text
        .strip_prefix("localhost:")
        .and_then(|p| p.parse::<u16>().ok())
    {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    Err(format!(
        "`{text}` is not an address: use PORT, HOST:PORT or [IPV6]:PORT"
    ))
}

fn positive_count(flag: &str, value: &str) -> Result<usize, String> {
    value
        .trim()
        .parse::<usize>()
        .ok()
        .filter(|n| *n > 0 && *n <= Semaphore::MAX_PERMITS)
        .ok_or_else(|| format!("{flag} takes a positive integer, not `{value}`"))
}

fn positive_secs(flag: &str, value: &str) -> Result<Duration, String> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("{flag} takes a positive number of seconds, not `{value}`"))
}

/// Parse the arguments after `--http`: an optional ADDR (default
/// 127.0.0.1:8765), then the options of the command's help. `env` reads the
/// `LEAN_BEAM_HTTP_*` variables (a flag wins over its variable); a token file
/// is read here, before anything is served. Refuses a non-loopback address
/// without a token.
pub fn parse_cli(
    args: &[String],
    env: impl Fn(&str) -> Option<String>,
) -> Result<(SocketAddr, HttpConfig), String> {
    let mut config = HttpConfig::default();
    let (addr, mut rest) = match args.split_first() {
        Some((first, rest)) if !first.starts_with("--") => (parse_addr(first)?, rest),
        _ => (SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)), args),
    };
    let var = |name: &str| env(name).filter(|v| !v.is_empty());
    if let Some(v) = var("LEAN_BEAM_HTTP_SESSION_IDLE_SECS") {
        config.session_idle = positive_secs("LEAN_BEAM_HTTP_SESSION_IDLE_SECS", &v)?;
    }
    if let Some(v) = var("LEAN_BEAM_HTTP_BODY_TIMEOUT_SECS") {
        config.body_timeout = positive_secs("LEAN_BEAM_HTTP_BODY_TIMEOUT_SECS", &v)?;
    }
    if let Some(v) = var("LEAN_BEAM_HTTP_MAX_CONNECTIONS") {
        config.max_connections = positive_count("LEAN_BEAM_HTTP_MAX_CONNECTIONS", &v)?;
    }
    if let Some(v) = var("LEAN_BEAM_HTTP_MAX_SESSIONS") {
        config.max_sessions = positive_count("LEAN_BEAM_HTTP_MAX_SESSIONS", &v)?;
    }
    if let Some(v) = var("LEAN_BEAM_HTTP_MAX_BODY_BYTES") {
        config.body_limit = positive_count("LEAN_BEAM_HTTP_MAX_BODY_BYTES", &v)?;
    }
    if let Some(v) = env("LEAN_BEAM_HTTP_TOKEN") {
        config.token = Some(Token::new(&v, "LEAN_BEAM_HTTP_TOKEN")?);
    }
    while let Some((flag, tail)) = rest.split_first() {
        let Some((value, tail)) = tail.split_first() else {
            return Err(format!("`{flag}` needs a value"));
        };
        match flag.as_str() {
            "--allowed-host" => config.allow.hosts.push(value.clone()),
            "--allowed-origin" => config.allow.origins.push(value.clone()),
            "--session-idle-secs" => config.session_idle = positive_secs(flag, value)?,
            "--body-timeout-secs" => config.body_timeout = positive_secs(flag, value)?,
            "--max-connections" => config.max_connections = positive_count(flag, value)?,
            "--max-sessions" => config.max_sessions = positive_count(flag, value)?,
            "--max-body-bytes" => config.body_limit = positive_count(flag, value)?,
            "--max-in-flight-per-client" => {
                config.max_in_flight_per_client = Some(positive_count(flag, value)?);
            }
            "--http-token-file" => {
                let text = std::fs::read_to_string(value)
                    .map_err(|e| format!("cannot read the token file {value}: {e}"))?;
                config.token = Some(Token::new(&text, &format!("the token file {value}"))?);
            }
            other => return Err(format!("unknown --http option `{other}`")),
        }
        rest = tail;
    }
    if !addr.ip().is_loopback() && config.token.is_none() {
        return Err(format!(
            "refusing to serve on {addr} without authentication: a non-loopback address needs a bearer token (set LEAN_BEAM_HTTP_TOKEN or pass --http-token-file PATH), or bind to 127.0.0.1"
        ));
    }
    Ok((addr, config))
}
