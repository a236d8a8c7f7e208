//! The JSON-RPC line decoder and envelope rules (`jsonrpc::decode`).
//!
//! Every input is tried twice: as a raw line, and as the seed of a structured
//! envelope (an object with the members the rules look at). Properties: no
//! panic; an accepted message re-encodes to itself; the id of a request
//! round-trips through the response line; every refusal serializes to a
//! JSON-RPC error line with a parse or invalid-request code, and names an id
//! only when the line really carried that id.
#![no_main]

use arbitrary::{Result, Unstructured};
use lean_beam_mcp::mcp::jsonrpc::{self, Incoming};
use lean_beam_mcp::wire::RequestId;
use lean_beam_mcp_fuzz::{WORDS, number, object, string, value};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

fuzz_target!(|data: &[u8]| {
    check(data);
    let mut u = Unstructured::new(data);
    if let Ok(envelope) = envelope(&mut u) {
        let line = serde_json::to_vec(&envelope).expect("a Value serializes");
        check(&line);
    }
});

fn envelope(u: &mut Unstructured<'_>) -> Result<Value> {
    if u.ratio(1u8, 10u8)? {
        // Anything at all, or a deeply nested one.
        let mut v = value(u, 3)?;
        for _ in 0..u.int_in_range(0usize..=300)? {
            v = json!([v]);
        }
        return Ok(v);
    }
    let mut m = Map::new();
    if u.ratio(9u8, 10u8)? {
        let v = if u.ratio(9u8, 10u8)? {
            json!("2.0")
        } else {
            value(u, 1)?
        };
        m.insert("jsonrpc".into(), v);
    }
    if u.ratio(3u8, 4u8)? {
        let id = match u.int_in_range(0u8..=3)? {
            0 => Value::String(string(u)?),
            1 | 2 => number(u)?,
            _ => value(u, 1)?,
        };
        m.insert("id".into(), id);
    }
    if u.ratio(9u8, 10u8)? {
        let method = if u.ratio(4u8, 5u8)? {
            json!(*u.choose(WORDS)?)
        } else {
            value(u, 1)?
        };
        m.insert("method".into(), method);
    }
    if u.ratio(3u8, 4u8)? {
        let params = if u.ratio(9u8, 10u8)? {
            Value::Object(object(u, 3)?)
        } else {
            value(u, 2)?
        };
        m.insert("params".into(), params);
    }
    for key in ["result", "error"] {
        if u.ratio(1u8, 12u8)? {
            m.insert(key.into(), value(u, 1)?);
        }
    }
    if u.ratio(1u8, 12u8)? {
        m.insert(string(u)?, value(u, 1)?);
    }
    Ok(Value::Object(m))
}

fn check(line: &[u8]) {
    match jsonrpc::decode(line) {
        Ok(message) => {
            let (id, method, params) = match &message {
                Incoming::Request { id, method, params } => (Some(id), method, params),
                Incoming::Notification { method, params } => (None, method, params),
            };
            // Re-encoding an accepted message decodes to the same message.
            let mut again = json!({"jsonrpc": "2.0", "method": method});
            if let Some(id) = id {
                again["id"] = id.to_value();
            }
            if let Some(p) = params {
                again["params"] = Value::Object(p.clone());
            }
            let redecoded = jsonrpc::decode(again.to_string().as_bytes())
                .expect("a re-encoded message is accepted");
            assert_eq!(redecoded, message, "re-encoding changed the message");
            if let Some(id) = id {
                // The answer names exactly the id that was asked.
                let response: Value = serde_json::from_str(&jsonrpc::response_line(id, "null"))
                    .expect("response line is JSON");
                assert_eq!(RequestId::from_value(&response["id"]).as_ref(), Some(id));
            }
        }
        Err(rejected) => {
            assert!(
                [jsonrpc::PARSE_ERROR, jsonrpc::INVALID_REQUEST].contains(&rejected.error.code),
                "unexpected code {}",
                rejected.error.code
            );
            let line_out = jsonrpc::error_line(rejected.id.as_ref(), &rejected.error);
            let response: Value = serde_json::from_str(&line_out).expect("error line is JSON");
            assert_eq!(response["error"]["code"], rejected.error.code);
            assert!(!line_out.contains('\n'), "an error line spans lines");
            match &rejected.id {
                None => assert!(response["id"].is_null()),
                Some(id) => {
                    let parsed: Value = serde_json::from_slice(line).expect("an id came from JSON");
                    assert_eq!(
                        RequestId::from_value(&parsed["id"]).as_ref(),
                        Some(id),
                        "id not from the line"
                    );
                    assert_eq!(RequestId::from_value(&response["id"]).as_ref(), Some(id));
                }
            }
        }
    }
}
