//! The era gate: classification (`is_modern`), modern `_meta` validation and
//! the progress token, with arbitrary `_meta` built from the fuzzer's bytes
//! (and, for inputs that are JSON objects, the object itself as params).
//!
//! Properties: no panic; classification is exactly "`_meta` is an object with a
//! reserved key"; an accepted `_meta` carries a supported version and a
//! capabilities object, and its log level is the one it names; a refusal is
//! -32602 or -32022 and serializes to one JSON-RPC error line.
#![no_main]

use arbitrary::{Result, Unstructured};
use lean_beam_mcp::context::LogLevel;
use lean_beam_mcp::identity;
use lean_beam_mcp::mcp::era::{self, META_PREFIX};
use lean_beam_mcp::mcp::jsonrpc::{self, INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION};
use lean_beam_mcp::wire::RequestId;
use lean_beam_mcp_fuzz::{number, string, value};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

const KEYS: &[&str] = &[
    era::META_PROTOCOL_VERSION,
    era::META_CLIENT_CAPABILITIES,
    era::META_CLIENT_INFO,
    era::META_LOG_LEVEL,
    era::META_SERVER_INFO,
    "io.modelcontextprotocol/",
    "io.modelcontextprotocol/unknown",
    "io.modelcontextprotocol",
    "progressToken",
    "other",
];

fuzz_target!(|data: &[u8]| {
    // A seed from the tests is a params object as JSON: check it as it is.
    if let Ok(Value::Object(params)) = serde_json::from_slice::<Value>(data) {
        check(&params);
    }
    let mut u = Unstructured::new(data);
    let Ok(params) = params(&mut u) else { return };
    check(&params);
});

fn meta_value(u: &mut Unstructured<'_>, key: &str) -> Result<Value> {
    if u.ratio(1u8, 4u8)? {
        return value(u, 2);
    }
    Ok(match key {
        k if k == era::META_PROTOCOL_VERSION => {
            json!(*u.choose(&[
                identity::MODERN_VERSION,
                identity::LEGACY_VERSION,
                "2026-07-29",
                ""
            ])?)
        }
        k if k == era::META_CLIENT_CAPABILITIES => json!({}),
        k if k == era::META_CLIENT_INFO => json!({"name": string(u)?, "version": "1"}),
        k if k == era::META_LOG_LEVEL => {
            json!(*u.choose(&["debug", "info", "emergency", "loud", "Debug"])?)
        }
        "progressToken" => number(u)?,
        _ => value(u, 1)?,
    })
}

fn params(u: &mut Unstructured<'_>) -> Result<Map<String, Value>> {
    let mut params = Map::new();
    if u.ratio(9u8, 10u8)? {
        let meta = if u.ratio(9u8, 10u8)? {
            let mut meta = Map::new();
            for _ in 0..u.int_in_range(0usize..=6)? {
                let key = if u.ratio(5u8, 6u8)? {
                    (*u.choose(KEYS)?).to_string()
                } else {
                    string(u)?
                };
                let v = meta_value(u, &key)?;
                meta.insert(key, v);
            }
            Value::Object(meta)
        } else {
            value(u, 2)?
        };
        params.insert("_meta".into(), meta);
    }
    if u.ratio(1u8, 2u8)? {
        params.insert(string(u)?, value(u, 2)?);
    }
    Ok(params)
}

fn check(params: &Map<String, Value>) {
    let p = Some(params);
    let meta = params.get("_meta").and_then(Value::as_object);
    let expected = meta.is_some_and(|m| m.keys().any(|k| k.starts_with(META_PREFIX)));
    assert_eq!(era::is_modern(p), expected, "classification");
    assert!(!era::is_modern(None));

    match era::progress_token(p) {
        Ok(Some(token)) => assert!(token.is_string() || token.is_i64() || token.is_u64()),
        Ok(None) => assert!(meta.is_none_or(|m| !m.contains_key("progressToken"))),
        Err(e) => assert_eq!(e.code, INVALID_PARAMS),
    }

    match era::validate_modern(p) {
        Ok(accepted) => {
            let meta = meta.expect("accepted without a _meta object");
            assert_eq!(meta[era::META_PROTOCOL_VERSION], identity::MODERN_VERSION);
            assert!(meta[era::META_CLIENT_CAPABILITIES].is_object());
            let named = meta.get(era::META_LOG_LEVEL).and_then(Value::as_str);
            assert_eq!(
                accepted.log_level,
                named.map(|l| l.parse::<LogLevel>().expect("accepted level parses"))
            );
        }
        Err(error) => {
            assert!([INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION].contains(&error.code));
            let line = jsonrpc::error_line(Some(&RequestId::Number(1)), &error);
            let parsed: Value = serde_json::from_str(&line).expect("error line is JSON");
            assert_eq!(parsed["error"]["code"], error.code);
            assert!(!line.contains('\n'));
        }
    }
}
