//! Helpers shared by the integration tests: the spawned server as the protocol
//! suites speak to it line by line ([`stream`]) and as the real-Lean suites
//! speak to it by request id ([`mcp`]), the Lean test toolchain ([`lean`]),
//! `/proc` figures ([`procfs`]), gated operations and schema-derived samples.
//!
//! `tests/lean`, the binary that uses most of it, compiles the harness with no
//! dead-code allowance but on the three modules only the protocol suites use
//! (`gated`, `samples`, `stream`), so a helper nobody calls is reported there.
//! The other binaries each use a slice and allow dead code at `mod common;`.

pub mod child;
#[allow(dead_code)]
pub mod gated;
pub mod lean;
pub mod mcp;
pub mod outputs;
pub mod procfs;
#[allow(dead_code)]
pub mod samples;
#[allow(dead_code)]
pub mod stream;

#[allow(unused_imports)]
pub use stream::{
    LEGACY, MODERN, Server, TIMEOUT, call_params, initialize_params, meta, modern, notification,
    request,
};

use serde_json::{Value, json};

/// The `{code, message, data?}` of a tool error (`isError: true`): the JSON in
/// its `content[0].text`, the only form an error has.
pub fn tool_error(result: &Value) -> Value {
    assert_eq!(result["isError"], true, "not a tool error: {result}");
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a tool error without content[0].text: {result}"));
    serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("a tool error's text is not JSON ({e}): {text}"))
}

/// The byte offset in `text` of an LSP position (UTF-16 characters); a
/// position at the end of its line past the text's end is the text's end.
pub fn byte_offset(text: &str, position: &Value) -> usize {
    let line = position["line"].as_u64().unwrap() as usize;
    let character = position["character"].as_u64().unwrap() as usize;
    let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
    let mut units = 0;
    for (i, c) in text[start..].char_indices() {
        if units == character {
            return start + i;
        }
        units += c.len_utf16();
    }
    assert_eq!(units, character, "position past the text");
    text.len()
}

/// Parse a stdout line and check that it is a JSON-RPC response or notification.
/// The server never sends requests to the client.
pub fn check_line(line: &str) -> Value {
    let value: Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line:?}"));
    let object = value
        .as_object()
        .unwrap_or_else(|| panic!("stdout line is not an object: {line}"));
    assert_eq!(
        object.get("jsonrpc"),
        Some(&json!("2.0")),
        "no jsonrpc 2.0: {line}"
    );
    let has_id = object.contains_key("id");
    let has_method = object.contains_key("method");
    let is_response = object.contains_key("result") ^ object.contains_key("error");
    assert!(!(has_id && has_method), "the server sent a request: {line}");
    if has_method {
        assert!(!is_response, "a notification with a result: {line}");
        for key in object.keys() {
            assert!(
                ["jsonrpc", "method", "params"].contains(&key.as_str()),
                "notification member {key}: {line}"
            );
        }
    } else {
        assert!(
            has_id && is_response,
            "neither a response nor a notification: {line}"
        );
        for key in object.keys() {
            assert!(
                ["jsonrpc", "id", "result", "error"].contains(&key.as_str()),
                "response member {key}: {line}"
            );
        }
    }
    value
}
