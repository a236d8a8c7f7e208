//! DNS-rebinding protection and CORS.
//!
//! A browser page on `evil.example` whose name resolves to 127.0.0.1 can reach a
//! loopback server, but its requests still carry `Host: evil.example` and
//! `Origin: http://evil.example`. Both headers must therefore name an allowed
//! authority: the address the server is bound to, or `localhost`, `127.0.0.1`
//! or `[::1]`, each with the bound port (a page served by another local
//! program, `http://localhost:3000`, is another origin), plus whatever the
//! operator adds.

use std::net::SocketAddr;

use hyper::HeaderMap;
use hyper::header::{self, HeaderValue};

/// Loopback host names, allowed with the bound port.
const LOOPBACK: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

/// The MCP headers a browser client may send and read.
pub const MCP_HEADERS: &str =
    "Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-Id";

/// Which `Host` and `Origin` values are accepted.
#[derive(Debug, Clone, Default)]
pub struct AllowList {
    /// Extra hosts: `NAME` (any port), `NAME:PORT` (exactly), `*` (any).
    pub hosts: Vec<String>,
    /// Extra origins (`scheme://host[:port]`, compared exactly); `*` allows any.
    pub origins: Vec<String>,
    /// The address the server listens on; set once bound. Until then (and in
    /// unit tests without it) only the operator's entries match.
    pub bound: Option<SocketAddr>,
}

/// Why a request was refused by the guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    MissingHost,
    DuplicateHost,
    Host(String),
    Origin(String),
}

impl Refusal {
    pub fn message(&self) -> String {
        match self {
            Refusal::MissingHost => "the Host header is required".into(),
            Refusal::DuplicateHost => {
                "more than one Host header (RFC 9112 section 3.2: a request has exactly one)".into()
            }
            Refusal::Host(h) => format!(
                "Host {h:?} is not allowed (DNS-rebinding protection; allow it with --allowed-host)"
            ),
            Refusal::Origin(o) => format!(
                "Origin {o:?} is not allowed (DNS-rebinding protection; allow it with --allowed-origin)"
            ),
        }
    }
}

/// `host[:port]` → the lowercase host name (`[::1]` keeps its brackets) and the
/// port, if one is written. `None` when the port is not a number.
fn split_authority(authority: &str) -> Option<(String, Option<u16>)> {
    let authority = authority.trim();
    let (name, rest) = if authority.starts_with('[') {
        let end = authority.find(']')?;
        (&authority[..=end], &authority[end + 1..])
    } else {
        match authority.find(':') {
            Some(i) => (&authority[..i], &authority[i..]),
            None => (authority, ""),
        }
    };
    let port = match rest {
        "" => None,
        _ => Some(rest.strip_prefix(':')?.parse().ok()?),
    };
    Some((name.to_ascii_lowercase(), port))
}

/// How the bound address is written in a `Host` header.
fn bound_name(addr: &SocketAddr) -> Option<String> {
    if addr.ip().is_unspecified() {
        return None;
    }
    Some(match addr {
        SocketAddr::V4(v4) => v4.ip().to_string(),
        SocketAddr::V6(v6) => format!("[{}]", v6.ip()),
    })
}

impl AllowList {
    /// Whether `name` with `port` (the scheme's default when none is written)
    /// is an allowed authority.
    fn authority_allowed(&self, name: &str, port: u16) -> bool {
        if let Some(bound) = &self.bound {
            let ours = LOOPBACK.contains(&name) || bound_name(bound).is_some_and(|b| b == name);
            if ours && port == bound.port() {
                return true;
            }
        }
        self.hosts.iter().any(|entry| {
            entry == "*"
                || match split_authority(entry) {
                    Some((allowed, None)) => allowed == name,
                    Some((allowed, Some(allowed_port))) => allowed == name && allowed_port == port,
                    None => false,
                }
        })
    }

    fn host_allowed(&self, host: &str) -> bool {
        split_authority(host).is_some_and(|(name, port)| {
            !name.is_empty() && self.authority_allowed(&name, port.unwrap_or(80))
        })
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        if self
            .origins
            .iter()
            .any(|o| o == "*" || o.eq_ignore_ascii_case(origin))
        {
            return true;
        }
        let Some((scheme, rest)) = origin.split_once("://") else {
            return false;
        };
        let default_port = match scheme.to_ascii_lowercase().as_str() {
            "http" => 80,
            "https" => 443,
            _ => return false,
        };
        if rest.contains('/') || rest.contains('@') {
            return false;
        }
        split_authority(rest).is_some_and(|(name, port)| {
            !name.is_empty() && self.authority_allowed(&name, port.unwrap_or(default_port))
        })
    }

    /// Check `Host` (exactly one) and every `Origin`.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let mut hosts = headers.get_all(header::HOST).iter();
        let host = hosts.next().ok_or(Refusal::MissingHost)?;
        if hosts.next().is_some() {
            return Err(Refusal::DuplicateHost);
        }
        let text = host.to_str().unwrap_or("");
        if !self.host_allowed(text) {
            return Err(Refusal::Host(
                String::from_utf8_lossy(host.as_bytes()).into_owned(),
            ));
        }
        for origin in headers.get_all(header::ORIGIN) {
            if !self.origin_allowed(origin.to_str().unwrap_or("")) {
                return Err(Refusal::Origin(
                    String::from_utf8_lossy(origin.as_bytes()).into_owned(),
                ));
            }
        }
        Ok(())
    }
}

/// Add the CORS headers of an ordinary response (the origin was already checked).
pub fn cors(request: &HeaderMap, response: &mut HeaderMap) {
    if let Some(origin) = request.get(header::ORIGIN) {
        response.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
        response.append(header::VARY, HeaderValue::from_static("Origin"));
        response.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(MCP_HEADERS),
        );
    }
}

/// The headers of a preflight answer: the MCP headers plus whatever the browser
/// asked for (which covers `Mcp-Param-*`).
pub fn preflight(request: &HeaderMap, response: &mut HeaderMap) {
    cors(request, response);
    response.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, DELETE, OPTIONS"),
    );
    let mut allowed = format!("Content-Type, Accept, Authorization, {MCP_HEADERS}");
    if let Some(asked) = request
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .and_then(|v| v.to_str().ok())
    {
        for name in asked.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if !allowed.split(", ").any(|a| a.eq_ignore_ascii_case(name)) {
                allowed.push_str(", ");
                allowed.push_str(name);
            }
        }
    }
    if let Ok(value) = HeaderValue::from_str(&allowed) {
        response.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, value);
    }
    response.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    fn bound(port: u16) -> AllowList {
        AllowList {
            bound: Some(SocketAddr::from(([127, 0, 0, 1], port))),
            ..AllowList::default()
        }
    }

    #[test]
    fn loopback_hosts_pass_with_the_bound_port_only() {
        let allow = bound(8080);
        for host in [
            "localhost:8080",
            "127.0.0.1:8080",
            "[::1]:8080",
            "LOCALHOST:8080",
        ] {
            assert_eq!(allow.check(&headers(&[("host", host)])), Ok(()), "{host}");
        }
        for host in [
            "localhost",
            "127.0.0.1:8081",
            "[::1]:9",
            "localhost:80",
            "127.0.0.1:x",
        ] {
            assert!(
                matches!(
                    allow.check(&headers(&[("host", host)])),
                    Err(Refusal::Host(_))
                ),
                "{host}"
            );
        }
        let origin = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://localhost:8080"),
        ]);
        assert_eq!(allow.check(&origin), Ok(()));
        // Another local program's page is another origin.
        let other = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://localhost:3000"),
        ]);
        assert!(matches!(allow.check(&other), Err(Refusal::Origin(_))));
        // The default ports count: port 80 is http://localhost.
        let on_80 = bound(80);
        assert_eq!(on_80.check(&headers(&[("host", "localhost")])), Ok(()));
        let origin = headers(&[("host", "localhost"), ("origin", "http://localhost")]);
        assert_eq!(on_80.check(&origin), Ok(()));
        let origin = headers(&[("host", "localhost"), ("origin", "https://localhost")]);
        assert!(on_80.check(&origin).is_err(), "https defaults to 443");
    }

    #[test]
    fn the_bound_address_is_an_allowed_authority() {
        let allow = AllowList {
            bound: Some("10.1.2.3:9000".parse().unwrap()),
            ..AllowList::default()
        };
        assert_eq!(allow.check(&headers(&[("host", "10.1.2.3:9000")])), Ok(()));
        assert_eq!(allow.check(&headers(&[("host", "localhost:9000")])), Ok(()));
        assert!(allow.check(&headers(&[("host", "10.1.2.4:9000")])).is_err());
        // A wildcard bind names no host of its own.
        let any = AllowList {
            bound: Some("0.0.0.0:9000".parse().unwrap()),
            ..AllowList::default()
        };
        assert!(any.check(&headers(&[("host", "0.0.0.0:9000")])).is_err());
        assert_eq!(any.check(&headers(&[("host", "127.0.0.1:9000")])), Ok(()));
    }

    #[test]
    fn rebinding_attempts_are_refused() {
        let allow = bound(1);
        assert!(matches!(
            allow.check(&headers(&[("host", "evil.example.com")])),
            Err(Refusal::Host(_))
        ));
        let origin = headers(&[
            ("host", "127.0.0.1:1"),
            ("origin", "http://evil.example.com"),
        ]);
        assert!(matches!(allow.check(&origin), Err(Refusal::Origin(_))));
        let null = headers(&[("host", "127.0.0.1:1"), ("origin", "null")]);
        assert!(matches!(allow.check(&null), Err(Refusal::Origin(_))));
        let userinfo = headers(&[
            ("host", "127.0.0.1:1"),
            ("origin", "http://evil@localhost:1"),
        ]);
        assert!(matches!(allow.check(&userinfo), Err(Refusal::Origin(_))));
        assert_eq!(allow.check(&HeaderMap::new()), Err(Refusal::MissingHost));
        // `localhost.evil.com` is not `localhost`.
        assert!(
            allow
                .check(&headers(&[("host", "localhost.evil.com:1")]))
                .is_err()
        );
        // Two Host headers: 400, whatever they say.
        let two = headers(&[("host", "127.0.0.1:1"), ("host", "127.0.0.1:1")]);
        assert_eq!(allow.check(&two), Err(Refusal::DuplicateHost));
        // Every Origin header is checked, not only the first.
        let origins = headers(&[
            ("host", "127.0.0.1:1"),
            ("origin", "http://127.0.0.1:1"),
            ("origin", "http://evil.example.com"),
        ]);
        assert!(matches!(allow.check(&origins), Err(Refusal::Origin(_))));
    }

    #[test]
    fn the_allow_list_is_configurable() {
        let allow = AllowList {
            hosts: vec!["mcp.internal".into(), "proxy.lan:8443".into()],
            origins: vec!["https://app.example".into()],
            bound: Some(SocketAddr::from(([127, 0, 0, 1], 7))),
        };
        assert_eq!(
            allow.check(&headers(&[("host", "mcp.internal:443")])),
            Ok(())
        );
        assert_eq!(allow.check(&headers(&[("host", "mcp.internal")])), Ok(()));
        assert_eq!(allow.check(&headers(&[("host", "proxy.lan:8443")])), Ok(()));
        assert!(
            allow
                .check(&headers(&[("host", "proxy.lan:8444")]))
                .is_err()
        );
        let origin = headers(&[("host", "mcp.internal"), ("origin", "https://app.example")]);
        assert_eq!(allow.check(&origin), Ok(()));
        let origin = headers(&[("host", "mcp.internal"), ("origin", "https://mcp.internal")]);
        assert_eq!(allow.check(&origin), Ok(()));
        let any = AllowList {
            hosts: vec!["*".into()],
            ..AllowList::default()
        };
        assert_eq!(any.check(&headers(&[("host", "whatever:1")])), Ok(()));
    }

    #[test]
    fn preflight_echoes_requested_headers() {
        let request = headers(&[
            ("origin", "http://localhost:5173"),
            (
                "access-control-request-headers",
                "mcp-param-region, content-type",
            ),
        ]);
        let mut response = HeaderMap::new();
        preflight(&request, &mut response);
        let allowed = response[header::ACCESS_CONTROL_ALLOW_HEADERS]
            .to_str()
            .unwrap();
        assert!(allowed.contains("mcp-param-region"));
        assert!(allowed.contains("Mcp-Session-Id"));
        assert_eq!(
            response[header::ACCESS_CONTROL_ALLOW_ORIGIN],
            "http://localhost:5173"
        );
        assert!(
            response[header::ACCESS_CONTROL_EXPOSE_HEADERS]
                .to_str()
                .unwrap()
                .contains("Last-Event-Id")
        );
    }
}
