//! Bearer-token authentication of the HTTP transport.
//!
//! One shared token (`LEAN_BEAM_HTTP_TOKEN` or `--http-token-file`), so that
//! several replicas behind a load balancer accept the same clients. Every
//! request except `/health` and CORS preflights must carry
//! `Authorization: Bearer <token>`; the comparison takes the same time whatever
//! the first differing byte.

use std::fmt;

use hyper::HeaderMap;
use hyper::header;

/// The configured token. Its `Debug` form never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(Vec<u8>);

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token(<{} bytes>)", self.0.len())
    }
}

impl Token {
    /// A token from its configured text (surrounding white space, such as the
    /// newline that ends a token file, is not part of it).
    pub fn new(text: &str, source: &str) -> Result<Token, String> {
        let token = text.trim();
        if token.is_empty() {
            return Err(format!("{source} is empty: the bearer token must not be"));
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(format!(
                "{source}: the bearer token must be visible ASCII without spaces (it travels in an HTTP header)"
            ));
        }
        Ok(Token(token.as_bytes().to_vec()))
    }

    /// Whether the request carries exactly one `Authorization: Bearer` header
    /// with this token.
    pub fn admits(&self, headers: &HeaderMap) -> bool {
        self.refusal(headers).is_none()
    }

    /// Why the request is not admitted, or `None` when it carries exactly one
    /// `Authorization: Bearer` header with this token.
    pub fn refusal(&self, headers: &HeaderMap) -> Option<Denied> {
        let mut values = headers.get_all(header::AUTHORIZATION).iter();
        let value = match (values.next(), values.next()) {
            (None, _) => return Some(Denied::Missing),
            (Some(_), Some(_)) => return Some(Denied::Wrong),
            (Some(value), None) => value.as_bytes(),
        };
        let Some(space) = value.iter().position(|&b| b == b' ') else {
            return Some(Denied::Wrong);
        };
        let (scheme, presented) = (&value[..space], &value[space + 1..]);
        let good = scheme.eq_ignore_ascii_case(b"bearer") && constant_time_eq(presented, &self.0);
        (!good).then_some(Denied::Wrong)
    }
}

/// Why a request was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    /// No `Authorization` header: a client not configured with the token (or
    /// one probing for OAuth before it sends any).
    Missing,
    /// A header that is not exactly `Bearer <this token>`: a misconfigured client.
    Wrong,
}

impl Denied {
    /// The agent-facing message: what to configure, never the token.
    pub fn message(self) -> &'static str {
        match self {
            Denied::Missing => {
                "this server requires a bearer token and the request carried none: configure the client to send the header `Authorization: Bearer <token>` with the token the server was started with (LEAN_BEAM_HTTP_TOKEN or --http-token-file); there is no OAuth"
            }
            Denied::Wrong => {
                "wrong bearer token: configure the client to send exactly one header `Authorization: Bearer <token>` with the token the server was started with (LEAN_BEAM_HTTP_TOKEN or --http-token-file); there is no OAuth"
            }
        }
    }
}

/// Compare in time that depends only on the lengths, never on where the
/// contents differ.
fn constant_time_eq(presented: &[u8], expected: &[u8]) -> bool {
    let mut difference = u8::from(presented.len() != expected.len());
    for (i, &e) in expected.iter().enumerate() {
        let p = presented.get(i).copied().unwrap_or(!e);
        difference |= p ^ e;
    }
    // Keep the optimizer from turning the loop into an early exit.
    std::hint::black_box(difference) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn with(values: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for v in values {
            map.append(header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn only_the_exact_bearer_token_is_admitted() {
        let token = Token::new("s3cret-token\n", "test").unwrap();
        assert!(token.admits(&with(&["Bearer s3cret-token"])));
        assert!(token.admits(&with(&["bearer s3cret-token"])));
        for bad in [
            "Bearer s3cret-toke",
            "Bearer s3cret-token2",
            "Bearer  s3cret-token",
            "Basic s3cret-token",
            "s3cret-token",
            "Bearer",
            "",
        ] {
            assert!(!token.admits(&with(&[bad])), "{bad:?}");
        }
        assert_eq!(token.refusal(&HeaderMap::new()), Some(Denied::Missing));
        assert_eq!(token.refusal(&with(&["Bearer nope"])), Some(Denied::Wrong));
        assert!(
            !token.admits(&with(&["Bearer s3cret-token", "Bearer s3cret-token"])),
            "two Authorization headers are ambiguous"
        );
    }

    #[test]
    fn empty_or_unprintable_tokens_are_refused() {
        assert!(Token::new(" \n", "LEAN_BEAM_HTTP_TOKEN").is_err());
        assert!(Token::new("a b", "file").is_err());
        assert!(format!("{:?}", Token::new("abc", "x").unwrap()).contains("3 bytes"));
    }

    #[test]
    fn comparison_handles_every_length() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"ab", b"abc"));
        assert!(!constant_time_eq(b"abcd", b"abc"));
        assert!(!constant_time_eq(b"", b"abc"));
        // A presented byte equal to `!e` past the end cannot make a match.
        assert!(!constant_time_eq(&[!b'a'], b"a\x00"));
    }
}
