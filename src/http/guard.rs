//! DNS-rebinding protection and CORS.
//!
//! A browser page on `evil.example` whose name resolves to 127.0.0.1 can reach a
//! loopback server, but its requests still carry `Host: evil.example` and
//! `Origin: http://evil.example`. Both headers must therefore name an allowed
//! host: the loopback names by default, plus whatever the operator adds.

use hyper::HeaderMap;
use hyper::header::{self, HeaderValue};

/// Loopback host names, always allowed.
const LOOPBACK: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

/// The MCP headers a browser client may send and read.
pub const MCP_HEADERS: &str =
    "Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-Id";

/// Which `Host` and `Origin` values are accepted.
#[derive(Debug, Clone, Default)]
pub struct AllowList {
    /// Extra host names (compared without port, case-insensitively); `*` allows any.
    pub hosts: Vec<String>,
    /// Extra origins (`scheme://host[:port]`, compared exactly); `*` allows any.
    pub origins: Vec<String>,
}

/// Why a request was refused by the guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    MissingHost,
    Host(String),
    Origin(String),
}

impl Refusal {
    pub fn message(&self) -> String {
        match self {
            Refusal::MissingHost => "the Host header is required".into(),
            Refusal::Host(h) => format!(
                "Host {h:?} is not allowed (DNS-rebinding protection; allow it with --allowed-host)"
            ),
            Refusal::Origin(o) => format!(
                "Origin {o:?} is not allowed (DNS-rebinding protection; allow it with --allowed-origin)"
            ),
        }
    }
}

/// `host[:port]` → the lowercase host name without the port (`[::1]` keeps its brackets).
fn host_name(authority: &str) -> String {
    let authority = authority.trim();
    let name = if authority.starts_with('[') {
        match authority.find(']') {
            Some(end) => &authority[..=end],
            None => authority,
        }
    } else {
        authority.split(':').next().unwrap_or(authority)
    };
    name.to_ascii_lowercase()
}

impl AllowList {
    fn host_allowed(&self, name: &str) -> bool {
        LOOPBACK.contains(&name) || self.hosts.iter().any(|h| h == "*" || host_name(h) == name)
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        if self
            .origins
            .iter()
            .any(|o| o == "*" || o.eq_ignore_ascii_case(origin))
        {
            return true;
        }
        // Any origin served from an allowed host name (loopback by default).
        let Some((scheme, rest)) = origin.split_once("://") else {
            return false;
        };
        if !matches!(scheme, "http" | "https") || rest.contains('/') || rest.is_empty() {
            return false;
        }
        self.host_allowed(&host_name(rest))
    }

    /// Check `Host` and (when present) `Origin`.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .ok_or(Refusal::MissingHost)?;
        if !self.host_allowed(&host_name(host)) {
            return Err(Refusal::Host(host.to_string()));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let text = origin.to_str().unwrap_or("");
            if !self.origin_allowed(text) {
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

    #[test]
    fn loopback_hosts_pass_with_any_port() {
        let allow = AllowList::default();
        for host in ["localhost", "127.0.0.1:8080", "[::1]:9", "LOCALHOST:1"] {
            assert_eq!(allow.check(&headers(&[("host", host)])), Ok(()), "{host}");
        }
        let origin = headers(&[("host", "127.0.0.1:1"), ("origin", "http://localhost:3000")]);
        assert_eq!(allow.check(&origin), Ok(()));
    }

    #[test]
    fn rebinding_attempts_are_refused() {
        let allow = AllowList::default();
        assert!(matches!(
            allow.check(&headers(&[("host", "evil.example.com")])),
            Err(Refusal::Host(_))
        ));
        let origin = headers(&[("host", "127.0.0.1"), ("origin", "http://evil.example.com")]);
        assert!(matches!(allow.check(&origin), Err(Refusal::Origin(_))));
        let null = headers(&[("host", "127.0.0.1"), ("origin", "null")]);
        assert!(matches!(allow.check(&null), Err(Refusal::Origin(_))));
        assert_eq!(allow.check(&HeaderMap::new()), Err(Refusal::MissingHost));
        // `localhost.evil.com` is not `localhost`.
        assert!(
            allow
                .check(&headers(&[("host", "localhost.evil.com")]))
                .is_err()
        );
    }

    #[test]
    fn the_allow_list_is_configurable() {
        let allow = AllowList {
            hosts: vec!["mcp.internal".into()],
            origins: vec!["https://app.example".into()],
        };
        assert_eq!(
            allow.check(&headers(&[("host", "mcp.internal:443")])),
            Ok(())
        );
        let origin = headers(&[("host", "mcp.internal"), ("origin", "https://app.example")]);
        assert_eq!(allow.check(&origin), Ok(()));
        let origin = headers(&[("host", "mcp.internal"), ("origin", "https://mcp.internal")]);
        assert_eq!(allow.check(&origin), Ok(()));
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
