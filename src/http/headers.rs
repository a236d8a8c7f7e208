//! The MCP request headers: era classification and the 2026-07-28 rule that
//! `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` mirror the body.

use data_encoding::BASE64;
use hyper::HeaderMap;
use serde_json::{Map, Value};

use crate::identity::SUPPORTED_MODERN;
use crate::mcp::era::{self, META_PROTOCOL_VERSION};
use crate::mcp::jsonrpc::{HEADER_MISMATCH, Incoming, RpcError};

pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
pub const SESSION_ID: &str = "mcp-session-id";
pub const METHOD: &str = "mcp-method";
pub const NAME: &str = "mcp-name";

/// The revisions a legacy (initialize-based) client may name in
/// `MCP-Protocol-Version`.
pub const LEGACY_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// A header as text; `Err` when present but not visible ASCII.
pub fn get<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, ()> {
    match headers.get(name) {
        None => Ok(None),
        Some(value) => value.to_str().map(Some).map_err(|_| ()),
    }
}

/// Whether a POST speaks the modern era: its body carries the per-request
/// envelope (or is discovery), or its `MCP-Protocol-Version` is not a legacy one.
pub fn is_modern(headers: &HeaderMap, message: Option<&Incoming>) -> bool {
    let envelope = match message {
        Some(Incoming::Request { method, params, .. })
        | Some(Incoming::Notification { method, params }) => {
            method == "server/discover" || era::is_modern(params.as_ref())
        }
        None => false,
    };
    envelope || claims_modern(headers)
}

/// `MCP-Protocol-Version` is present and not a legacy revision.
pub fn claims_modern(headers: &HeaderMap) -> bool {
    match get(headers, PROTOCOL_VERSION) {
        Ok(Some(version)) => !LEGACY_VERSIONS.contains(&version),
        Ok(None) => false,
        Err(()) => true,
    }
}

fn mismatch(message: String) -> RpcError {
    RpcError::new(HEADER_MISMATCH, message)
}

/// Decode a header value that may use the `=?base64?…?=` sentinel.
fn decode(value: &str) -> Result<String, ()> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => {
            let bytes = BASE64.decode(encoded.as_bytes()).map_err(|_| ())?;
            String::from_utf8(bytes).map_err(|_| ())
        }
        None => Ok(value.to_string()),
    }
}

/// The body value `Mcp-Name` mirrors, for the methods that have one.
fn name_source(method: &str, params: Option<&Map<String, Value>>) -> Option<Option<String>> {
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return None,
    };
    Some(
        params
            .and_then(|p| p.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned),
    )
}

/// Check the mirrored headers of a modern request against its body. Envelope
/// validation itself stays with the dispatcher, except for a header naming a
/// revision that neither the header nor the body supports.
pub fn check_modern(
    headers: &HeaderMap,
    method: &str,
    params: Option<&Map<String, Value>>,
) -> Result<(), RpcError> {
    let text = |name: &str| {
        get(headers, name).map_err(|()| mismatch(format!("the {name} header is not visible ASCII")))
    };
    match text(METHOD)? {
        None => {
            return Err(mismatch(format!(
                "missing Mcp-Method header (expected {method:?})"
            )));
        }
        Some(value) if value != method => {
            return Err(mismatch(format!(
                "Mcp-Method header {value:?} does not match the body method {method:?}"
            )));
        }
        Some(_) => {}
    }
    let body_version = era::meta(params)
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .and_then(Value::as_str);
    match (text(PROTOCOL_VERSION)?, body_version) {
        (None, _) => return Err(mismatch("missing MCP-Protocol-Version header".into())),
        (Some(header), Some(body)) if header != body => {
            return Err(mismatch(format!(
                "MCP-Protocol-Version header {header:?} does not match the body's {META_PROTOCOL_VERSION} {body:?}"
            )));
        }
        (Some(header), None) if !SUPPORTED_MODERN.contains(&header) => {
            return Err(era::unsupported_version(header));
        }
        _ => {}
    }
    if let Some(body_name) = name_source(method, params) {
        let header = text(NAME)?
            .map(|v| {
                decode(v).map_err(|()| {
                    mismatch(format!("Mcp-Name header {v:?} is not valid base64 UTF-8"))
                })
            })
            .transpose()?;
        match (header, body_name) {
            (Some(h), Some(b)) if h == b => {}
            (None, Some(b)) => {
                return Err(mismatch(format!(
                    "missing Mcp-Name header (expected {b:?})"
                )));
            }
            (Some(h), Some(b)) => {
                return Err(mismatch(format!(
                    "Mcp-Name header {h:?} does not match the body value {b:?}"
                )));
            }
            (Some(h), None) => {
                return Err(mismatch(format!(
                    "Mcp-Name header {h:?} names nothing in the body"
                )));
            }
            (None, None) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::{HeaderName, HeaderValue};
    use serde_json::json;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    fn params(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    const V: &str = "2026-07-28";

    #[test]
    fn mirrored_headers_must_match() {
        let p = params(json!({"name": "beam_version", "_meta": {META_PROTOCOL_VERSION: V}}));
        let ok = headers(&[
            (METHOD, "tools/call"),
            (PROTOCOL_VERSION, V),
            (NAME, "beam_version"),
        ]);
        assert_eq!(check_modern(&ok, "tools/call", Some(&p)), Ok(()));

        for bad in [
            headers(&[(PROTOCOL_VERSION, V), (NAME, "beam_version")]),
            headers(&[
                (METHOD, "tools/list"),
                (PROTOCOL_VERSION, V),
                (NAME, "beam_version"),
            ]),
            headers(&[(METHOD, "tools/call"), (NAME, "beam_version")]),
            headers(&[
                (METHOD, "tools/call"),
                (PROTOCOL_VERSION, "2099-01-01"),
                (NAME, "beam_version"),
            ]),
            headers(&[(METHOD, "tools/call"), (PROTOCOL_VERSION, V)]),
            headers(&[
                (METHOD, "tools/call"),
                (PROTOCOL_VERSION, V),
                (NAME, "beam_stats"),
            ]),
        ] {
            assert_eq!(
                check_modern(&bad, "tools/call", Some(&p)).unwrap_err().code,
                HEADER_MISMATCH
            );
        }
    }

    #[test]
    fn base64_sentinel_names_are_decoded() {
        let p = params(json!({"name": "héllo", "_meta": {META_PROTOCOL_VERSION: V}}));
        let encoded = format!("=?base64?{}?=", BASE64.encode("héllo".as_bytes()));
        let h = headers(&[
            (METHOD, "tools/call"),
            (PROTOCOL_VERSION, V),
            (NAME, &encoded),
        ]);
        assert_eq!(check_modern(&h, "tools/call", Some(&p)), Ok(()));
    }

    #[test]
    fn an_unsupported_header_without_envelope_is_32022() {
        let h = headers(&[(METHOD, "tools/list"), (PROTOCOL_VERSION, "2099-01-01")]);
        let err = check_modern(&h, "tools/list", None).unwrap_err();
        assert_eq!(err.code, crate::mcp::jsonrpc::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(err.data.unwrap()["supported"], json!([V]));
        // A supported header without the envelope is the dispatcher's -32602.
        let h = headers(&[(METHOD, "tools/list"), (PROTOCOL_VERSION, V)]);
        assert_eq!(check_modern(&h, "tools/list", None), Ok(()));
    }

    #[test]
    fn classification() {
        assert!(claims_modern(&headers(&[(PROTOCOL_VERSION, V)])));
        assert!(!claims_modern(&headers(&[(
            PROTOCOL_VERSION,
            "2025-11-25"
        )])));
        assert!(!claims_modern(&HeaderMap::new()));
        let discover = Incoming::Request {
            id: crate::wire::RequestId::Number(1),
            method: "server/discover".into(),
            params: None,
        };
        assert!(is_modern(&HeaderMap::new(), Some(&discover)));
    }
}
