//! The two protocol eras: how a request is classified, how modern per-request
//! metadata is validated, and which family a stream has selected.

use serde_json::{Map, Value, json};

use super::jsonrpc::{INVALID_PARAMS, RpcError, UNSUPPORTED_PROTOCOL_VERSION};
use crate::context::LogLevel;
use crate::identity::{LEGACY_VERSION, MODERN_VERSION, SUPPORTED_LEGACY, SUPPORTED_MODERN};

/// The revision an `initialize` is answered with (MCP lifecycle, version
/// negotiation): the requested one when supported, else the latest.
pub fn negotiate_legacy(requested: &str) -> &'static str {
    SUPPORTED_LEGACY
        .iter()
        .find(|supported| **supported == requested)
        .copied()
        .unwrap_or(LEGACY_VERSION)
}

pub const META_PREFIX: &str = "io.modelcontextprotocol/";
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// Which protocol family a stream speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Nothing selected yet: discovery and a legacy `initialize` are both possible.
    Unselected,
    /// `initialize` answered with this revision; waiting for
    /// `notifications/initialized`.
    LegacyInitializing(&'static str),
    /// Legacy lifecycle complete, in this revision.
    LegacyReady(&'static str),
    /// A supported modern operation with valid metadata has been served.
    Modern,
}

impl Family {
    pub fn is_legacy(self) -> bool {
        self.legacy_revision().is_some()
    }

    /// The revision `initialize` negotiated, in the legacy family.
    pub fn legacy_revision(self) -> Option<&'static str> {
        match self {
            Family::LegacyInitializing(revision) | Family::LegacyReady(revision) => Some(revision),
            Family::Unselected | Family::Modern => None,
        }
    }
}

/// The request-local metadata of a modern request (never retained).
#[derive(Debug, Clone, PartialEq)]
pub struct ModernMeta {
    pub log_level: Option<LogLevel>,
}

/// Whether `params._meta` carries any reserved modern key.
pub fn is_modern(params: Option<&Map<String, Value>>) -> bool {
    meta(params).is_some_and(|m| m.keys().any(|k| k.starts_with(META_PREFIX)))
}

pub fn meta(params: Option<&Map<String, Value>>) -> Option<&Map<String, Value>> {
    params?.get("_meta")?.as_object()
}

/// The request's `_meta.progressToken`, if it is a string or an integer.
pub fn progress_token(params: Option<&Map<String, Value>>) -> Result<Option<Value>, RpcError> {
    match meta(params).and_then(|m| m.get("progressToken")) {
        None => Ok(None),
        Some(v @ Value::String(_)) => Ok(Some(v.clone())),
        Some(v @ Value::Number(n)) if n.is_i64() || n.is_u64() => Ok(Some(v.clone())),
        Some(_) => Err(RpcError::invalid_params(
            "_meta.progressToken must be a string or an integer",
        )),
    }
}

/// `-32022` for a protocol revision this server does not speak (also used by the
/// HTTP transport for an unsupported `MCP-Protocol-Version` header).
pub fn unsupported_version(requested: &str) -> RpcError {
    RpcError::new(
        UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "unsupported protocol version {requested:?}; supported: {}",
            SUPPORTED_MODERN.join(", ")
        ),
    )
    .with_data(json!({ "supported": SUPPORTED_MODERN, "requested": requested }))
}

/// Validate the per-request metadata of a request classified as modern.
pub fn validate_modern(params: Option<&Map<String, Value>>) -> Result<ModernMeta, RpcError> {
    let empty = Map::new();
    let meta = match params.and_then(|p| p.get("_meta")) {
        None => &empty,
        Some(Value::Object(m)) => m,
        Some(_) => return Err(RpcError::invalid_params("params._meta must be an object")),
    };
    let version = match meta.get(META_PROTOCOL_VERSION) {
        Some(Value::String(v)) => v,
        Some(other) => {
            return Err(RpcError::invalid_params(format!(
                "_meta[\"{META_PROTOCOL_VERSION}\"] must be a string, got {other}"
            )));
        }
        None => {
            return Err(RpcError::invalid_params(format!(
                "missing _meta[\"{META_PROTOCOL_VERSION}\"]: every {MODERN_VERSION} request carries its protocol version"
            )));
        }
    };
    if !SUPPORTED_MODERN.contains(&version.as_str()) {
        return Err(unsupported_version(version));
    }
    match meta.get(META_CLIENT_CAPABILITIES) {
        Some(Value::Object(_)) => {}
        Some(_) => {
            return Err(RpcError::invalid_params(format!(
                "_meta[\"{META_CLIENT_CAPABILITIES}\"] must be an object"
            )));
        }
        None => {
            return Err(RpcError::invalid_params(format!(
                "missing _meta[\"{META_CLIENT_CAPABILITIES}\"]: every {MODERN_VERSION} request carries the client capabilities (may be {{}})"
            )));
        }
    }
    if let Some(info) = meta.get(META_CLIENT_INFO) {
        let valid = info
            .as_object()
            .is_some_and(|o| o.get("name").is_some_and(Value::is_string));
        if !valid {
            return Err(RpcError::invalid_params(format!(
                "_meta[\"{META_CLIENT_INFO}\"] must be an object with a string `name`"
            )));
        }
    }
    let log_level = match meta.get(META_LOG_LEVEL) {
        None => None,
        Some(Value::String(level)) => Some(level.parse().map_err(|()| {
            RpcError::new(
                INVALID_PARAMS,
                format!(
                    "_meta[\"{META_LOG_LEVEL}\"] {level:?} is not a log level (debug, info, notice, warning, error, critical, alert, emergency)"
                ),
            )
        })?),
        Some(_) => {
            return Err(RpcError::invalid_params(format!(
                "_meta[\"{META_LOG_LEVEL}\"] must be a string"
            )));
        }
    };
    Ok(ModernMeta { log_level })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(meta: Value) -> Map<String, Value> {
        json!({ "_meta": meta }).as_object().unwrap().clone()
    }

    #[test]
    fn modern_meta_rules() {
        let ok =
            params(json!({META_PROTOCOL_VERSION: MODERN_VERSION, META_CLIENT_CAPABILITIES: {}}));
        assert_eq!(validate_modern(Some(&ok)).unwrap().log_level, None);

        let no_caps = params(json!({META_PROTOCOL_VERSION: MODERN_VERSION}));
        assert_eq!(
            validate_modern(Some(&no_caps)).unwrap_err().code,
            INVALID_PARAMS
        );

        let old =
            params(json!({META_PROTOCOL_VERSION: "2099-01-01", META_CLIENT_CAPABILITIES: {}}));
        let err = validate_modern(Some(&old)).unwrap_err();
        assert_eq!(err.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(err.data.unwrap()["requested"], "2099-01-01");

        let level = params(
            json!({META_PROTOCOL_VERSION: MODERN_VERSION, META_CLIENT_CAPABILITIES: {}, META_LOG_LEVEL: "loud"}),
        );
        assert_eq!(
            validate_modern(Some(&level)).unwrap_err().code,
            INVALID_PARAMS
        );
    }

    #[test]
    fn initialize_answers_the_requested_revision_when_supported() {
        for (requested, answered) in [
            ("2025-11-25", "2025-11-25"),
            ("2025-06-18", "2025-06-18"),
            ("2025-03-26", LEGACY_VERSION),
            ("2024-11-05", LEGACY_VERSION),
            ("2026-07-28", LEGACY_VERSION),
            ("", LEGACY_VERSION),
        ] {
            assert_eq!(negotiate_legacy(requested), answered, "{requested}");
        }
        assert_eq!(SUPPORTED_LEGACY[0], LEGACY_VERSION, "newest first");
    }

    #[test]
    fn classification_looks_for_reserved_keys_only() {
        assert!(!is_modern(Some(&params(json!({"progressToken": 1})))));
        assert!(is_modern(Some(&params(json!({META_LOG_LEVEL: "debug"})))));
        assert!(!is_modern(None));
    }
}
