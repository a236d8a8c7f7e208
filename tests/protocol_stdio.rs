//! The stdio server, spawned as a process and spoken to in raw newline-delimited
//! JSON-RPC: every protocol rule of issue 2 (point 4), in both eras.
//!
//! Rules that need a call to stay active (reuse of an active id, cancellation
//! winning, the drop fence, draining at EOF) are tested in-process with a
//! controllable `Operations` in `tests/protocol_core.rs`; the binary's Lean tools
//! answer too fast to hold an id open without a Lean toolchain.

#[allow(dead_code)] // this binary uses a slice of the harness (see tests/common/mod.rs)
mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::{
    LEGACY, MODERN, Server, call_params, initialize_params, modern, notification, request,
};
use lean_beam_mcp::surface::TOOL_COUNT;
use serde_json::{Value, json};

const INVALID_REQUEST: i64 = -32600;
const PARSE_ERROR: i64 = -32700;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const UNSUPPORTED_VERSION: i64 = -32022;
const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

fn sync_args() -> Value {
    json!({"workspace": {"root": "/nonexistent/lean-beam-test"}, "path": "Main.lean"})
}

/// A modern request whose `_meta` is `meta` exactly.
fn with_meta(id: impl Into<Value>, method: &str, mut params: Value, meta: Value) -> Value {
    params["_meta"] = meta;
    request(id, method, params)
}

fn assert_modern_envelope(result: &Value) {
    assert_eq!(
        result["resultType"], "complete",
        "modern result without resultType: {result}"
    );
    let info = &result["_meta"][SERVER_INFO];
    assert_eq!(
        info["name"], "lean-beam-mcp",
        "modern result without serverInfo: {result}"
    );
    assert!(info["version"].is_string(), "{result}");
}

fn assert_legacy_envelope(result: &Value) {
    assert!(
        result.get("resultType").is_none(),
        "legacy result with resultType: {result}"
    );
    assert!(
        result.get("ttlMs").is_none() && result.get("cacheScope").is_none(),
        "{result}"
    );
}

/// The JSON of a tool result: a success's two forms are one JSON value; an
/// error has only its text (no `structuredContent` an SDK-v1 host would
/// check against the success's `outputSchema`).
fn structured(result: &Value) -> Value {
    let content = result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content: {result}"));
    assert_eq!(content.len(), 1, "{result}");
    assert_eq!(content[0]["type"], "text", "{result}");
    let text: Value = serde_json::from_str(content[0]["text"].as_str().expect("text"))
        .expect("content[0].text is JSON");
    match result["isError"].as_bool() {
        Some(false) => assert_eq!(
            text, result["structuredContent"],
            "content[0].text and structuredContent differ: {result}"
        ),
        Some(true) => assert!(
            result.get("structuredContent").is_none(),
            "a tool error with structuredContent: {result}"
        ),
        None => panic!("isError is not a boolean: {result}"),
    }
    text
}

// ---------------------------------------------------------------------------
// Modern 2026-07-28
// ---------------------------------------------------------------------------

#[test]
fn modern_discover() {
    let mut s = Server::spawn();
    let result = s.result(&modern("d1", "server/discover", Value::Null));
    assert_eq!(
        result["supportedVersions"],
        json!([MODERN]),
        "legacy revisions are not discovery results"
    );
    assert_eq!(result["ttlMs"], 3_600_000);
    assert_eq!(result["cacheScope"], "public");
    assert!(result["capabilities"]["tools"].is_object(), "{result}");
    assert!(result["capabilities"]["logging"].is_object(), "{result}");
    assert!(
        result["instructions"]
            .as_str()
            .is_some_and(|i| !i.is_empty())
    );
    assert_modern_envelope(&result);
}

#[test]
fn modern_tools_list_is_public_cacheable() {
    let mut s = Server::spawn();
    let result = s.result(&modern(1, "tools/list", Value::Null));
    assert_eq!(result["tools"].as_array().unwrap().len(), TOOL_COUNT);
    assert_eq!(result["ttlMs"], 3_600_000);
    assert_eq!(result["cacheScope"], "public");
    assert!(result.get("nextCursor").is_none());
    assert_modern_envelope(&result);
}

#[test]
fn modern_missing_metadata_is_invalid_params() {
    let mut s = Server::spawn();
    let version_only = json!({"io.modelcontextprotocol/protocolVersion": MODERN});
    let caps_only = json!({"io.modelcontextprotocol/clientCapabilities": {}});
    for (method, params) in [
        ("server/discover", json!({})),
        ("tools/list", json!({})),
        ("tools/call", call_params("beam_version", json!({}))),
    ] {
        s.expect_error(
            &with_meta(
                format!("{method}-caps"),
                method,
                params.clone(),
                version_only.clone(),
            ),
            INVALID_PARAMS,
        );
        s.expect_error(
            &with_meta(
                format!("{method}-ver"),
                method,
                params.clone(),
                caps_only.clone(),
            ),
            INVALID_PARAMS,
        );
        let caps_not_object = json!({"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": []});
        s.expect_error(
            &with_meta(
                format!("{method}-arr"),
                method,
                params.clone(),
                caps_not_object,
            ),
            INVALID_PARAMS,
        );
    }
    // discover without any params is modern and lacks both.
    s.expect_error(
        &request("bare-discover", "server/discover", Value::Null),
        INVALID_PARAMS,
    );
    // clientInfo is optional.
    let no_info = json!({"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}});
    s.result(&with_meta("no-info", "tools/list", json!({}), no_info));
}

#[test]
fn modern_unsupported_version() {
    let mut s = Server::spawn();
    for (i, method) in ["server/discover", "tools/list", "tools/call"]
        .into_iter()
        .enumerate()
    {
        let params = if method == "tools/call" {
            call_params("beam_version", json!({}))
        } else {
            json!({})
        };
        let bad = json!({"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}});
        let response = s.expect_error(
            &with_meta(i as i64, method, params, bad),
            UNSUPPORTED_VERSION,
        );
        assert_eq!(
            response["error"]["data"]["supported"],
            json!([MODERN]),
            "{response}"
        );
        assert_eq!(
            response["error"]["data"]["requested"], "2099-01-01",
            "{response}"
        );
    }
    // The legacy revision is not a per-request revision either.
    let legacy = json!({"io.modelcontextprotocol/protocolVersion": LEGACY, "io.modelcontextprotocol/clientCapabilities": {}});
    let response = s.expect_error(
        &with_meta("legacy-rev", "tools/list", json!({}), legacy),
        UNSUPPORTED_VERSION,
    );
    assert_eq!(response["error"]["data"]["requested"], LEGACY);
}

#[test]
fn modern_results_all_carry_result_type_and_server_info() {
    let mut s = Server::spawn();
    assert_modern_envelope(&s.result(&modern(1, "server/discover", Value::Null)));
    assert_modern_envelope(&s.result(&modern(2, "tools/list", Value::Null)));
    // A successful tool call, an invalid-input tool error, and a tool error from
    // the operation itself.
    for (id, name, args) in [
        (3, "beam_version", json!({})),
        (4, "beam_stats", json!({})),
        (5, "lean_sync", json!({"path": 1})),
        (6, "lean_sync", sync_args()),
    ] {
        let result = s.result(&modern(id, "tools/call", call_params(name, args)));
        assert_modern_envelope(&result);
        structured(&result);
    }
}

#[test]
fn modern_lifecycle_methods_do_not_exist() {
    let mut s = Server::spawn();
    s.expect_error(
        &modern(1, "initialize", initialize_params()),
        METHOD_NOT_FOUND,
    );
    s.expect_error(&modern(2, "ping", Value::Null), METHOD_NOT_FOUND);
    s.expect_error(
        &modern(3, "logging/setLevel", json!({"level": "debug"})),
        METHOD_NOT_FOUND,
    );
    s.expect_error(&modern(4, "resources/list", Value::Null), METHOD_NOT_FOUND);
    // After selection too.
    s.result(&modern(5, "tools/list", Value::Null));
    s.expect_error(&modern(6, "ping", Value::Null), METHOD_NOT_FOUND);
    s.expect_error(
        &modern(7, "initialize", initialize_params()),
        METHOD_NOT_FOUND,
    );
}

#[test]
fn modern_metadata_is_request_local() {
    let mut s = Server::spawn();
    s.result(&modern(1, "tools/list", Value::Null));
    // The next request must carry its own metadata: nothing was retained.
    let version_only = json!({"io.modelcontextprotocol/protocolVersion": MODERN});
    s.expect_error(
        &with_meta(2, "tools/list", json!({}), version_only),
        INVALID_PARAMS,
    );
    s.expect_error(&request(3, "tools/list", Value::Null), INVALID_PARAMS);
    s.result(&modern(4, "tools/list", Value::Null));
}

#[test]
fn modern_beam_version_and_stats() {
    let mut s = Server::spawn();
    let version = structured(&s.result(&modern(
        1,
        "tools/call",
        call_params("beam_version", json!({})),
    )));
    assert_eq!(version["name"], "lean-beam-mcp");
    assert_eq!(version["mcp_protocol"], MODERN);
    assert!(
        version["version"].is_string() && version["build"].is_object(),
        "{version}"
    );
    // Arguments may be omitted.
    s.result(&modern(2, "tools/call", json!({"name": "beam_version"})));
    let stats = structured(&s.result(&modern(
        3,
        "tools/call",
        call_params("beam_stats", json!({})),
    )));
    assert_eq!(
        stats["requests"]["byTool"]["beam_version"][MODERN], 2,
        "{stats}"
    );
    assert!(
        stats["workspaces"].is_array() || stats["workspaces"].is_object(),
        "{stats}"
    );
    assert!(stats["uptimeMs"].is_u64(), "{stats}");
}

// ---------------------------------------------------------------------------
// Legacy 2025-11-25
// ---------------------------------------------------------------------------

#[test]
fn legacy_lifecycle() {
    let mut s = Server::spawn();
    // Before initialize: operations are refused, ping works.
    s.expect_error(&request(1, "tools/list", Value::Null), INVALID_REQUEST);
    s.expect_error(
        &request(2, "tools/call", call_params("beam_version", json!({}))),
        INVALID_REQUEST,
    );
    s.expect_error(
        &request(3, "logging/setLevel", json!({"level": "info"})),
        INVALID_REQUEST,
    );
    assert_eq!(s.result(&request(4, "ping", Value::Null)), json!({}));

    // initialize answers 2025-11-25 whatever was proposed.
    let init = s.result(&request(5, "initialize", initialize_params()));
    assert_eq!(init["protocolVersion"], LEGACY);
    assert_eq!(init["serverInfo"]["name"], "lean-beam-mcp");
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    assert_legacy_envelope(&init);

    // Between initialize and notifications/initialized: still refused.
    s.expect_error(&request(6, "tools/list", Value::Null), INVALID_REQUEST);
    s.expect_error(
        &request(7, "initialize", initialize_params()),
        INVALID_REQUEST,
    );
    assert_eq!(s.result(&request(8, "ping", Value::Null)), json!({}));

    s.send(&notification("notifications/initialized", Value::Null));
    let list = s.result(&request(9, "tools/list", Value::Null));
    assert_eq!(list["tools"].as_array().unwrap().len(), TOOL_COUNT);
    assert_legacy_envelope(&list);
    assert_eq!(s.result(&request(10, "ping", Value::Null)), json!({}));
    assert_eq!(
        s.result(&request(
            11,
            "logging/setLevel",
            json!({"level": "warning"})
        )),
        json!({})
    );
    s.expect_error(
        &request(12, "logging/setLevel", json!({"level": "loud"})),
        INVALID_PARAMS,
    );
    s.expect_error(
        &request(13, "logging/setLevel", Value::Null),
        INVALID_PARAMS,
    );
    s.expect_error(
        &request(14, "initialize", initialize_params()),
        INVALID_REQUEST,
    );

    let version = s.result(&request(
        15,
        "tools/call",
        call_params("beam_version", json!({})),
    ));
    assert_legacy_envelope(&version);
    assert_eq!(structured(&version)["name"], "lean-beam-mcp");
    s.expect_error(
        &request(16, "resources/list", Value::Null),
        METHOD_NOT_FOUND,
    );
}

#[test]
fn legacy_initialize_answers_the_requested_revision_when_supported() {
    for (proposed, answered) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        // Unsupported: the latest supported revision, for the client to judge.
        ("2025-03-26", LEGACY),
        ("2024-11-05", LEGACY),
        ("1999-01-01", LEGACY),
        ("2026-07-28", LEGACY),
    ] {
        let mut s = Server::spawn();
        let mut params = initialize_params();
        params["protocolVersion"] = json!(proposed);
        let init = s.result(&request(1, "initialize", params));
        assert_eq!(init["protocolVersion"], answered, "proposed {proposed}");
    }
}

/// Every supported initialize-based revision gets the same session: the same
/// catalog, results and tool errors, logging and ping; a modern request mixed
/// in is refused naming the revision the stream negotiated.
#[test]
fn each_legacy_revision_serves_the_same_session() {
    let mut lines: Vec<(&str, Value)> = Vec::new();
    for revision in lean_beam_mcp::identity::SUPPORTED_LEGACY {
        let mut s = Server::spawn();
        let mut params = initialize_params();
        params["protocolVersion"] = json!(revision);
        let init = s.result(&request(1, "initialize", params));
        assert_eq!(init["protocolVersion"], *revision);
        assert_legacy_envelope(&init);
        // Only what the oldest supported revision (2025-06-18) defines:
        // 2025-11-25 added Implementation.icons/description/websiteUrl and
        // the tasks capability.
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        for key in keys(&init["serverInfo"]) {
            assert!(
                ["name", "title", "version"].contains(&key.as_str()),
                "{init}"
            );
        }
        for key in keys(&init["capabilities"]) {
            let in_2025_06_18 = [
                "experimental",
                "logging",
                "completions",
                "prompts",
                "resources",
                "tools",
            ];
            assert!(in_2025_06_18.contains(&key.as_str()), "{init}");
        }
        s.send(&notification("notifications/initialized", Value::Null));
        let list = s.result(&request(2, "tools/list", Value::Null));
        assert_eq!(list["tools"].as_array().unwrap().len(), TOOL_COUNT);
        let version = s.result(&request(
            3,
            "tools/call",
            call_params("beam_version", json!({})),
        ));
        assert_eq!(version["isError"], false, "{version}");
        let error = s.result(&request(
            4,
            "tools/call",
            call_params("lean_sync", json!({})),
        ));
        assert_eq!(error["isError"], true, "{error}");
        assert_eq!(
            s.result(&request(5, "logging/setLevel", json!({"level": "info"}))),
            json!({})
        );
        assert_eq!(s.result(&request(6, "ping", Value::Null)), json!({}));
        let mixed = s.expect_error(&modern(7, "tools/list", json!({})), INVALID_REQUEST);
        let message = mixed["error"]["message"].as_str().unwrap();
        assert!(message.contains(&format!("MCP {revision}")), "{message}");
        let mut version = structured(&version);
        version.as_object_mut().unwrap().remove("build");
        lines.push((
            revision,
            json!([init["capabilities"], list, version, error]),
        ));
    }
    let (latest, expected) = &lines[0];
    for (revision, got) in &lines[1..] {
        assert_eq!(got, expected, "{revision} differs from {latest}");
    }
}

#[test]
fn legacy_initialize_is_validated_before_state_changes() {
    let mut s = Server::spawn();
    let good = initialize_params();
    let mut bad = Vec::new();
    for (key, value) in [
        ("protocolVersion", json!(20251125)),
        ("protocolVersion", Value::Null),
        ("capabilities", json!([])),
        ("capabilities", json!("all")),
        ("clientInfo", json!("client")),
        ("clientInfo", json!({"version": "1"})),
        ("clientInfo", json!({"name": 7})),
    ] {
        let mut params = good.clone();
        params[key] = value;
        bad.push(params);
    }
    for key in ["protocolVersion", "capabilities", "clientInfo"] {
        let mut params = good.clone();
        params.as_object_mut().unwrap().remove(key);
        bad.push(params);
    }
    for (i, params) in bad.into_iter().enumerate() {
        let response = s.expect_error(
            &request(i as i64, "initialize", params.clone()),
            INVALID_PARAMS,
        );
        assert!(response["error"]["message"].is_string(), "{response}");
        // State unchanged: still no lifecycle, and no family selected.
        s.expect_error(
            &request(format!("list-{i}"), "tools/list", Value::Null),
            INVALID_REQUEST,
        );
    }
    s.expect_error(
        &request("no-params", "initialize", Value::Null),
        INVALID_PARAMS,
    );
    // A correct initialize afterwards still works.
    assert_eq!(
        s.result(&request("ok", "initialize", good))["protocolVersion"],
        LEGACY
    );
    s.send(&notification("notifications/initialized", Value::Null));
    s.result(&request("list", "tools/list", Value::Null));
}

#[test]
fn a_failed_initialize_does_not_lock_out_the_modern_family() {
    let mut s = Server::spawn();
    s.expect_error(
        &request(1, "initialize", json!({"capabilities": {}})),
        INVALID_PARAMS,
    );
    s.result(&modern(2, "tools/list", Value::Null));
}

// ---------------------------------------------------------------------------
// Family selection and lock-out
// ---------------------------------------------------------------------------

#[test]
fn discover_is_neutral_then_legacy() {
    let mut s = Server::spawn();
    s.result(&modern(1, "server/discover", Value::Null));
    s.result(&modern(2, "server/discover", Value::Null));
    // A bare request is still legacy input (not -32602): the family is open.
    s.expect_error(&request(3, "tools/list", Value::Null), INVALID_REQUEST);
    s.legacy_init();
    s.result(&request(4, "tools/list", Value::Null));
}

#[test]
fn discover_is_neutral_then_modern() {
    let mut s = Server::spawn();
    s.result(&modern(1, "server/discover", Value::Null));
    s.result(&modern(
        2,
        "tools/call",
        call_params("beam_version", json!({})),
    ));
    s.result(&modern(3, "server/discover", Value::Null));
}

#[test]
fn legacy_selection_locks_out_modern_requests() {
    let mut s = Server::spawn();
    s.result(&request(1, "initialize", initialize_params()));
    // Even before notifications/initialized the family is legacy.
    s.expect_error(&modern(2, "tools/list", Value::Null), INVALID_REQUEST);
    s.send(&notification("notifications/initialized", Value::Null));
    s.expect_error(&modern(3, "tools/list", Value::Null), INVALID_REQUEST);
    s.expect_error(
        &modern(4, "tools/call", call_params("beam_version", json!({}))),
        INVALID_REQUEST,
    );
    s.expect_error(&modern(5, "server/discover", Value::Null), INVALID_REQUEST);
    // Any reserved modern key classifies a request as modern.
    let log_only = json!({"io.modelcontextprotocol/logLevel": "debug"});
    s.expect_error(
        &with_meta(6, "tools/list", json!({}), log_only),
        INVALID_REQUEST,
    );
    // Legacy keeps working; a non-reserved _meta key is not modern.
    s.result(&request(7, "tools/list", Value::Null));
    s.result(&request(
        8,
        "tools/call",
        json!({"name": "beam_version", "_meta": {"progressToken": "t"}}),
    ));
}

#[test]
fn modern_selection_locks_out_legacy_requests() {
    for selector in [
        modern("sel", "tools/list", Value::Null),
        modern("sel", "tools/call", call_params("beam_version", json!({}))),
    ] {
        let mut s = Server::spawn();
        s.result(&selector);
        s.expect_error(
            &request(1, "initialize", initialize_params()),
            INVALID_REQUEST,
        );
        s.expect_error(&request(2, "tools/list", Value::Null), INVALID_PARAMS);
        s.expect_error(
            &request(3, "tools/call", call_params("beam_version", json!({}))),
            INVALID_PARAMS,
        );
        s.expect_error(&request(4, "ping", Value::Null), INVALID_PARAMS);
        s.expect_error(
            &request(5, "logging/setLevel", json!({"level": "info"})),
            INVALID_PARAMS,
        );
        s.result(&modern(6, "tools/list", Value::Null));
    }
}

#[test]
fn failed_modern_requests_do_not_select_the_family() {
    let mut s = Server::spawn();
    let version_only = json!({"io.modelcontextprotocol/protocolVersion": MODERN});
    s.expect_error(
        &with_meta(1, "tools/list", json!({}), version_only),
        INVALID_PARAMS,
    );
    let unsupported = json!({"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}});
    s.expect_error(
        &with_meta(2, "tools/list", json!({}), unsupported),
        UNSUPPORTED_VERSION,
    );
    s.expect_error(&modern(3, "ping", Value::Null), METHOD_NOT_FOUND);
    // Still open: legacy may start.
    s.legacy_init();
    s.result(&request(4, "tools/list", Value::Null));
}

// ---------------------------------------------------------------------------
// Envelope strictness
// ---------------------------------------------------------------------------

#[test]
fn undeclared_and_mixed_members_are_rejected() {
    let mut s = Server::spawn();
    let response = s.expect_error(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "extra": true}),
        INVALID_REQUEST,
    );
    assert_eq!(
        response["id"], 1,
        "an envelope error names the request id when it could be read"
    );
    s.expect_error(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "ping", "result": {}}),
        INVALID_REQUEST,
    );
    s.expect_error(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "ping", "error": {"code": 1, "message": "x"}}),
        INVALID_REQUEST,
    );
    s.expect_error(
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized", "extra": 1}),
        INVALID_REQUEST,
    );
    s.expect_error(
        &json!({"jsonrpc": "1.0", "id": 4, "method": "ping"}),
        INVALID_REQUEST,
    );
    s.expect_error(&json!({"id": 5, "method": "ping"}), INVALID_REQUEST);
    s.expect_error(
        &json!({"jsonrpc": "2.0", "id": 6, "method": 7}),
        INVALID_REQUEST,
    );
    s.expect_error(&json!({"jsonrpc": "2.0", "id": 7}), INVALID_REQUEST);
    s.expect_error(
        &json!({"jsonrpc": "2.0", "id": 8, "method": "ping", "params": [1]}),
        INVALID_REQUEST,
    );
    // None of that changed anything: the stream still works.
    assert_eq!(s.result(&request(9, "ping", Value::Null)), json!({}));
}

#[test]
fn unsolicited_client_responses_are_rejected_with_a_null_id() {
    let mut s = Server::spawn();
    for message in [
        json!({"jsonrpc": "2.0", "id": 7, "result": {}}),
        json!({"jsonrpc": "2.0", "id": "abc", "error": {"code": -32000, "message": "no"}}),
    ] {
        let response = s.expect_error(&message, INVALID_REQUEST);
        assert_eq!(response["id"], Value::Null, "{response}");
    }
    s.legacy_init();
    let response = s.expect_error(
        &json!({"jsonrpc": "2.0", "id": 1, "result": {"roots": []}}),
        INVALID_REQUEST,
    );
    assert_eq!(response["id"], Value::Null);
}

#[test]
fn string_and_numeric_ids_are_distinct() {
    let mut s = Server::spawn();
    s.legacy_init();
    s.send_all(&[
        request(1, "tools/call", call_params("beam_version", json!({}))),
        request("1", "tools/call", call_params("beam_stats", json!({}))),
        request(2, "ping", Value::Null),
        request("2", "ping", Value::Null),
    ]);
    let mut answers = Vec::new();
    for _ in 0..4 {
        answers.push(s.recv_response());
    }
    // Both kinds of id come back with their exact JSON type, each answered once.
    for id in [json!(1), json!("1"), json!(2), json!("2")] {
        let matching: Vec<_> = answers.iter().filter(|a| a["id"] == id).collect();
        assert_eq!(matching.len(), 1, "id {id}: {answers:?}");
        assert!(matching[0].get("result").is_some(), "{answers:?}");
    }
    let tool_of =
        |id: Value| structured(&answers.iter().find(|a| a["id"] == id).unwrap()["result"]);
    assert_eq!(tool_of(json!(1))["name"], "lean-beam-mcp");
    assert!(
        tool_of(json!("1"))["requests"].is_object(),
        "id \"1\" must get beam_stats"
    );
}

#[test]
fn malformed_ids_are_invalid_requests() {
    let mut s = Server::spawn();
    for id in [
        json!(1.5),
        json!(-0.25),
        json!(null),
        json!(true),
        json!({"n": 1}),
        json!([1]),
    ] {
        let response = s.expect_error(
            &json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
            INVALID_REQUEST,
        );
        assert_eq!(response["id"], Value::Null, "id {id}: {response}");
    }
    // Large integral ids are fine.
    for id in [json!(u64::MAX), json!(i64::MIN), json!(0), json!("")] {
        let response = s.request(&request(id.clone(), "ping", Value::Null));
        assert_eq!(response["id"], id);
    }
}

#[test]
fn parse_errors_have_a_null_id() {
    let mut s = Server::spawn();
    for line in [
        "",
        "   ",
        "{not json",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"",
        "nul",
        "\u{feff}",
        // A form feed is no JSON white space (found by fuzzing: the message
        // was read and its id answered).
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\u{c}",
        "\u{c}{\"id\":7}",
    ] {
        assert!(s.send_raw(line));
        let response = s.recv();
        assert_eq!(
            response["error"]["code"], PARSE_ERROR,
            "line {line:?}: {response}"
        );
        assert_eq!(response["id"], Value::Null, "{response}");
    }
    // Non-object JSON and batches are invalid requests.
    for line in [
        "[]",
        "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]",
        "42",
        "\"ping\"",
        "null",
    ] {
        assert!(s.send_raw(line));
        let response = s.recv();
        assert_eq!(
            response["error"]["code"], INVALID_REQUEST,
            "line {line:?}: {response}"
        );
        assert_eq!(response["id"], Value::Null, "{response}");
    }
    assert_eq!(s.result(&request(1, "ping", Value::Null)), json!({}));
}

#[test]
fn an_id_may_be_reused_after_its_response() {
    for era_modern in [true, false] {
        let mut s = Server::spawn();
        if !era_modern {
            s.legacy_init();
        }
        let make = |id: i64, name: &str| {
            if era_modern {
                modern(id, "tools/call", call_params(name, json!({})))
            } else {
                request(id, "tools/call", call_params(name, json!({})))
            }
        };
        for name in ["beam_version", "beam_stats", "beam_version"] {
            let result = s.result(&make(42, name));
            assert_eq!(result["isError"], false);
        }
        let list = if era_modern {
            modern(42, "tools/list", Value::Null)
        } else {
            request(42, "tools/list", Value::Null)
        };
        s.result(&list);
    }
}

// ---------------------------------------------------------------------------
// tools/call
// ---------------------------------------------------------------------------

fn both_eras(mut test: impl FnMut(&mut Server, &dyn Fn(Value, &str, Value) -> Value)) {
    let mut s = Server::spawn();
    test(&mut s, &|id, method, params| modern(id, method, params));
    let mut s = Server::spawn();
    s.legacy_init();
    test(&mut s, &|id, method, params| request(id, method, params));
}

#[test]
fn unknown_tools_and_raw_lsp_methods_are_invalid_params() {
    both_eras(|s, make| {
        s.expect_error(
            &make(
                json!(1),
                "tools/call",
                call_params("no_such_tool", json!({})),
            ),
            INVALID_PARAMS,
        );
        // A near miss names the tool it was probably meant to be.
        let typo = s.expect_error(
            &make(json!(11), "tools/call", call_params("lean_synk", json!({}))),
            INVALID_PARAMS,
        );
        assert!(
            typo["error"]["message"]
                .as_str()
                .unwrap()
                .contains("did you mean `lean_sync`?"),
            "{typo}"
        );
        let hover = s.expect_error(
            &make(
                json!(2),
                "tools/call",
                call_params("textDocument/hover", json!({})),
            ),
            INVALID_PARAMS,
        );
        assert!(
            hover["error"]["message"]
                .as_str()
                .unwrap()
                .contains("lean_hover"),
            "{hover}"
        );
        s.expect_error(
            &make(
                json!(3),
                "tools/call",
                call_params("$/lean/plainGoal", json!({})),
            ),
            INVALID_PARAMS,
        );
        s.expect_error(
            &make(
                json!(4),
                "tools/call",
                call_params("workspace/symbol", json!({})),
            ),
            INVALID_PARAMS,
        );
        s.expect_error(
            &make(
                json!(5),
                "tools/call",
                call_params("BEAM_VERSION", json!({})),
            ),
            INVALID_PARAMS,
        );
        // Raw LSP methods are not JSON-RPC methods of this server either.
        s.expect_error(
            &make(json!(6), "textDocument/hover", json!({})),
            METHOD_NOT_FOUND,
        );
        // Malformed tools/call params.
        s.expect_error(&make(json!(7), "tools/call", json!({})), INVALID_PARAMS);
        s.expect_error(
            &make(json!(8), "tools/call", json!({"name": 3})),
            INVALID_PARAMS,
        );
        s.expect_error(
            &make(
                json!(9),
                "tools/call",
                json!({"name": "beam_version", "arguments": []}),
            ),
            INVALID_PARAMS,
        );
        s.expect_error(
            &make(
                json!(10),
                "tools/call",
                json!({"name": "beam_version", "task": {}}),
            ),
            INVALID_PARAMS,
        );
        // A bad progress token is malformed metadata.
        let mut bad_token = make(
            json!(11),
            "tools/call",
            call_params("beam_version", json!({})),
        );
        bad_token["params"]["_meta"]["progressToken"] = json!(1.5);
        s.expect_error(&bad_token, INVALID_PARAMS);
        // tools/list takes no cursor (it never issues one).
        s.expect_error(
            &make(json!(12), "tools/list", json!({"cursor": "x"})),
            INVALID_PARAMS,
        );
    });
}

#[test]
fn mrtr_continuation_fields_are_invalid_params() {
    both_eras(|s, make| {
        for (i, field) in ["inputResponses", "requestState"].into_iter().enumerate() {
            let mut params = call_params("beam_version", json!({}));
            params[field] = if field == "requestState" {
                json!("opaque")
            } else {
                json!({})
            };
            let response = s.expect_error(&make(json!(i), "tools/call", params), INVALID_PARAMS);
            assert!(
                response["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains(field),
                "{response}"
            );
        }
    });
}

#[test]
fn invalid_arguments_are_tool_errors_listing_every_violation() {
    both_eras(|s, make| {
        let args = json!({
            "workspace": {"root": 1, "alias": "x"},
            "path": 3,
            "diagnostic_scope": "some",
            "zz_undeclared": true,
        });
        let result = s.result(&make(
            json!("bad"),
            "tools/call",
            call_params("lean_sync", args),
        ));
        assert_eq!(result["isError"], true, "{result}");
        let error = structured(&result);
        assert_eq!(error["code"], "invalidInput", "{error}");
        assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()));
        let violations = error["data"]["violations"]
            .as_array()
            .unwrap_or_else(|| panic!("{error}"));
        let pointers: Vec<&str> = violations
            .iter()
            .map(|v| v["pointer"].as_str().unwrap())
            .collect();
        for expected in [
            "/workspace/root",
            "/workspace/alias",
            "/path",
            "/diagnostic_scope",
            "/zz_undeclared",
        ] {
            assert!(
                pointers.contains(&expected),
                "no violation at {expected}: {violations:?}"
            );
        }
        assert!(
            violations
                .iter()
                .all(|v| v["reason"].as_str().is_some_and(|r| !r.is_empty()))
        );

        // A missing required argument points at the object that lacks it.
        let result = s.result(&make(
            json!("missing"),
            "tools/call",
            call_params("lean_sync", json!({"path": "A.lean"})),
        ));
        let error = structured(&result);
        assert_eq!(error["code"], "invalidInput");
        let violations = error["data"]["violations"].as_array().unwrap();
        assert!(
            violations
                .iter()
                .any(|v| v["pointer"] == "" && v["reason"].as_str().unwrap().contains("workspace")),
            "{violations:?}"
        );

        // Process tools take no arguments at all.
        let result = s.result(&make(
            json!("extra"),
            "tools/call",
            call_params("beam_version", json!({"verbose": true})),
        ));
        assert_eq!(
            structured(&result)["data"]["violations"][0]["pointer"],
            "/verbose"
        );
    });
}

#[test]
fn both_result_forms_carry_the_same_json() {
    both_eras(|s, make| {
        for (i, (name, args, is_error)) in [
            ("beam_version", json!({}), false),
            ("beam_stats", json!({}), false),
            ("lean_hover", json!({"line": -1}), true),
            ("lean_sync", sync_args(), true),
        ]
        .into_iter()
        .enumerate()
        {
            let result = s.result(&make(json!(i), "tools/call", call_params(name, args)));
            assert_eq!(result["isError"], is_error, "{name}: {result}");
            let value = structured(&result);
            if is_error {
                assert!(
                    value["code"].is_string() && value["message"].is_string(),
                    "{value}"
                );
            }
        }
    });
}

// ---------------------------------------------------------------------------
// Concurrency, cancellation, shutdown
// ---------------------------------------------------------------------------

#[test]
fn overlapping_calls_are_each_answered_exactly_once() {
    both_eras(|s, make| {
        let mut burst = Vec::new();
        let mut expected = HashMap::new();
        for i in 0..300 {
            let id = if i % 2 == 0 {
                json!(i)
            } else {
                json!(format!("s{i}"))
            };
            let message = match i % 5 {
                0 => make(
                    id.clone(),
                    "tools/call",
                    call_params("beam_stats", json!({})),
                ),
                1 => make(
                    id.clone(),
                    "tools/call",
                    call_params("lean_goals", json!({"bad": 1})),
                ),
                2 => make(id.clone(), "tools/list", Value::Null),
                _ => make(
                    id.clone(),
                    "tools/call",
                    call_params("beam_version", json!({})),
                ),
            };
            expected.insert(id.to_string(), 0usize);
            burst.push(message);
        }
        s.send_all(&burst);
        for _ in 0..burst.len() {
            let response = s.recv_response();
            let key = response["id"].to_string();
            let seen = expected
                .get_mut(&key)
                .unwrap_or_else(|| panic!("response to an unknown id: {response}"));
            *seen += 1;
            assert!(response.get("result").is_some(), "{response}");
        }
        assert!(
            expected.values().all(|n| *n == 1),
            "some id answered twice or never: {expected:?}"
        );
        // Nothing extra follows.
        s.assert_nothing_before_sentinel("sentinel");
    });
}

#[test]
fn cancellation_of_unknown_or_finished_ids_is_ignored() {
    both_eras(|s, make| {
        s.result(&make(
            json!(1),
            "tools/call",
            call_params("beam_version", json!({})),
        ));
        for params in [
            json!({"requestId": 1}),
            json!({"requestId": 999, "reason": "never sent"}),
            json!({"requestId": "1"}),
            json!({"requestId": 1.5}),
            json!({}),
        ] {
            s.send(&notification("notifications/cancelled", params));
        }
        s.send(&notification(
            "notifications/progress",
            json!({"progressToken": 1, "progress": 1}),
        ));
        s.send(&notification("notifications/whatever", Value::Null));
        s.assert_nothing_before_sentinel("sentinel");
        // The stream is intact.
        s.result(&make(
            json!(1),
            "tools/call",
            call_params("beam_version", json!({})),
        ));
    });
}

#[test]
fn eof_shuts_down_promptly_with_admitted_answers_written() {
    let mut s = Server::spawn();
    s.legacy_init();
    let mut burst = Vec::new();
    for i in 0..50 {
        burst.push(request(i, "ping", Value::Null));
        burst.push(request(format!("list{i}"), "tools/list", Value::Null));
        burst.push(request(
            format!("call{i}"),
            "tools/call",
            call_params("beam_version", json!({})),
        ));
        burst.push(request(
            format!("sync{i}"),
            "tools/call",
            call_params("lean_sync", sync_args()),
        ));
    }
    s.send_all(&burst);
    s.close_stdin();
    let rest = s.drain_to_eof();
    // A safety limit (minutes), not a judgement of speed: the exit is the
    // event; it only stops a server that would never exit.
    let status = s.wait_exit(Duration::from_secs(300));
    assert!(
        status.success(),
        "exit status {status:?}\nstderr:\n{}",
        s.stderr()
    );
    let mut ids: HashMap<String, usize> = HashMap::new();
    for message in &rest {
        *ids.entry(message["id"].to_string()).or_default() += 1;
    }
    // Every immediate answer and every process-tool call admitted before EOF
    // is answered exactly once; Lean work may be cancelled by EOF instead.
    for i in 0..50 {
        assert_eq!(
            ids.get(&json!(format!("call{i}")).to_string()),
            Some(&1),
            "beam_version {i} admitted before EOF was not answered once"
        );
        assert!(
            ids.get(&json!(format!("sync{i}")).to_string())
                .copied()
                .unwrap_or(0)
                <= 1
        );
        assert_eq!(
            ids.get(&json!(i).to_string()),
            Some(&1),
            "ping {i} not answered once"
        );
        assert_eq!(
            ids.get(&json!(format!("list{i}")).to_string()),
            Some(&1),
            "tools/list {i}"
        );
    }
    assert!(!s.stderr().contains("panicked"), "{}", s.stderr());
}

#[test]
fn a_call_piped_in_with_eof_right_behind_it_is_answered() {
    // `printf '<call>' | lean-beam-mcp`: EOF arrives with the request.
    for era_modern in [true, false] {
        for _ in 0..10 {
            let mut s = Server::spawn();
            let mut burst = Vec::new();
            if era_modern {
                burst.push(modern(
                    1,
                    "tools/call",
                    call_params("beam_version", json!({})),
                ));
            } else {
                burst.push(request("init", "initialize", initialize_params()));
                burst.push(notification("notifications/initialized", Value::Null));
                burst.push(request(
                    1,
                    "tools/call",
                    call_params("beam_stats", json!({})),
                ));
            }
            s.send_all(&burst);
            s.close_stdin();
            let rest = s.drain_to_eof();
            assert!(s.wait_exit(Duration::from_secs(300)).success());
            let answers: Vec<_> = rest.iter().filter(|m| m["id"] == 1).collect();
            assert_eq!(answers.len(), 1, "{rest:?}");
            assert_eq!(answers[0]["result"]["isError"], false, "{rest:?}");
        }
    }
}

#[test]
fn eof_right_away_exits_zero() {
    let mut s = Server::spawn();
    s.close_stdin();
    assert!(s.drain_to_eof().is_empty());
    let status = s.wait_exit(Duration::from_secs(300));
    assert!(status.success(), "{status:?}\n{}", s.stderr());
}

#[test]
fn eof_after_a_final_line_without_newline_answers_it() {
    let mut s = Server::spawn();
    s.send_bytes(request(1, "ping", Value::Null).to_string().as_bytes());
    s.close_stdin();
    let rest = s.drain_to_eof();
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0]["id"], 1);
    assert!(s.wait_exit(Duration::from_secs(300)).success());
}

#[test]
fn closed_stdout_ends_the_process_cleanly() {
    let mut s = Server::spawn_with_closed_stdout();
    // Keep stdin open: the server must notice the dead stdout by itself.
    let mut wrote = 0;
    for i in 0..200 {
        let message = if i % 2 == 0 {
            modern(i, "tools/list", Value::Null)
        } else {
            modern(i, "tools/call", call_params("beam_version", json!({})))
        };
        if !s.send_raw(&message.to_string()) {
            break;
        }
        wrote += 1;
    }
    assert!(wrote > 0);
    let status = s.wait_exit(Duration::from_secs(300));
    let stderr = s.stderr();
    assert!(
        !stderr.contains("panicked"),
        "panic on closed stdout:\n{stderr}"
    );
    assert!(
        status.success(),
        "exit status {status:?}\nstderr:\n{stderr}"
    );
}

#[test]
fn stdout_carries_only_json_rpc_and_logs_go_to_stderr() {
    // Every test checks each stdout line (common::check_line); this one drives a
    // mixed session with verbose logging and checks the whole transcript.
    let mut s = Server::spawn_with(&[("LEAN_BEAM_LOG", "debug")]);
    s.send_raw("garbage");
    s.recv();
    s.result(&modern(1, "server/discover", Value::Null));
    s.result(&modern(
        2,
        "tools/call",
        call_params("beam_version", json!({})),
    ));
    s.expect_error(
        &request(3, "initialize", initialize_params()),
        INVALID_REQUEST,
    );
    s.close_stdin();
    s.drain_to_eof();
    assert!(s.wait_exit(Duration::from_secs(300)).success());
    assert_eq!(s.transcript.len(), 4, "{:#?}", s.transcript);
    assert!(!s.stderr().is_empty(), "debug logging writes to stderr");
}

/// The server grows its stdout pipe so that a whole tools/list answer (and
/// a result at its default cap) is handed to the client in one write,
/// instead of in pieces of Linux's default 64 KiB, each waiting for the
/// client to drain the last.
#[cfg(target_os = "linux")]
#[test]
fn stdout_pipe_holds_a_whole_tools_list_answer() {
    use std::io::{BufRead, BufReader, Write};
    use std::os::fd::AsRawFd;
    use std::process::{Command, Stdio};

    let mut child = Command::new(env!("CARGO_BIN_EXE_lean-beam-mcp"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the server");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let line = modern(1, "tools/list", json!({})).to_string() + "\n";
    stdin.write_all(line.as_bytes()).unwrap();
    let mut reader = BufReader::new(stdout);
    let mut answer = String::new();
    reader.read_line(&mut answer).unwrap();
    let answer: Value = serde_json::from_str(&answer).expect("one JSON line");
    assert_eq!(answer["id"], 1);
    let bytes = answer.to_string().len();
    // SAFETY: F_GETPIPE_SZ reads an int of the pipe the descriptor names.
    let room = unsafe { libc::fcntl(reader.get_ref().as_raw_fd(), libc::F_GETPIPE_SZ) };
    assert!(
        usize::try_from(room).is_ok_and(|room| room > bytes),
        "the stdout pipe holds {room} bytes, less than the {bytes}-byte tools/list answer"
    );
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
