//! What an agent reads before its first call: the tools/list catalog (the
//! number of tools, the schema rules every client relies on, what the
//! descriptions must say, its size) and the server instructions. The
//! checked-in copy of the catalog is pinned by `tests/golden.rs`.

#[allow(dead_code)] // this binary uses a slice of the harness (see tests/common/mod.rs)
mod common;

use common::samples::valid_instance;
use common::{Server, modern, request};
use lean_beam_mcp::surface::{self, CATALOG_JSON, INPUT_SCHEMAS, ParseError, TOOL_COUNT, Tool};
use serde_json::{Value, json};

fn catalog() -> Vec<Value> {
    match serde_json::from_str(CATALOG_JSON).expect("CATALOG_JSON is JSON") {
        Value::Array(tools) => tools,
        other => panic!("CATALOG_JSON is not an array: {other}"),
    }
}

#[test]
fn catalog_lists_26_tools_in_table_order() {
    let tools = catalog();
    assert_eq!(tools.len(), 26);
    assert_eq!(TOOL_COUNT, 26);
    for (i, (entry, tool)) in tools.iter().zip(Tool::ALL).enumerate() {
        assert_eq!(entry["name"], tool.name(), "tool {i}");
        assert_eq!(Tool::from_name(tool.name()), Some(tool));
        assert!(
            entry["description"]
                .as_str()
                .is_some_and(|d| !d.trim().is_empty()),
            "{}: description",
            tool.name()
        );
        // The catalog's schema is the one the validator uses.
        let emitted: Value = serde_json::from_str(INPUT_SCHEMAS[i]).unwrap();
        assert_eq!(
            entry["inputSchema"],
            emitted,
            "{}: catalog schema differs from INPUT_SCHEMAS",
            tool.name()
        );
        let members: Vec<&str> = entry
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for m in &members {
            assert!(
                ["name", "description", "inputSchema", "annotations"].contains(m),
                "{}: member {m}",
                tool.name()
            );
        }
    }
    assert_eq!(tools[0]["name"], "beam_version");
    assert_eq!(tools[1]["name"], "beam_stats");
}

/// Walk every subschema, calling `visit(pointer, schema)`.
fn walk(
    pointer: &str,
    schema: &Value,
    visit: &mut dyn FnMut(&str, &serde_json::Map<String, Value>),
) {
    let Value::Object(map) = schema else { return };
    visit(pointer, map);
    for (key, sub) in map {
        match (key.as_str(), sub) {
            (
                "properties" | "$defs" | "definitions" | "patternProperties",
                Value::Object(children),
            ) => {
                for (name, child) in children {
                    walk(&format!("{pointer}/{key}/{name}"), child, visit);
                }
            }
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(children)) => {
                for (i, child) in children.iter().enumerate() {
                    walk(&format!("{pointer}/{key}/{i}"), child, visit);
                }
            }
            (
                "items" | "additionalProperties" | "not" | "if" | "then" | "else" | "contains",
                Value::Object(_),
            ) => {
                walk(&format!("{pointer}/{key}"), sub, visit);
            }
            _ => {}
        }
    }
}

#[test]
fn every_schema_is_closed_typed_and_provider_friendly() {
    for entry in catalog() {
        let name = entry["name"].as_str().unwrap();
        let schema = &entry["inputSchema"];
        assert!(
            schema.get("$schema").is_none(),
            "{name}: no `$schema` key (MCP's default dialect applies)"
        );
        assert_eq!(
            schema["type"], "object",
            "{name}: top-level type must be \"object\""
        );
        assert_eq!(
            schema["additionalProperties"],
            json!(false),
            "{name}: top level must be closed"
        );
        assert!(schema["properties"].is_object(), "{name}: properties");
        walk("", schema, &mut |pointer, map| {
            assert!(
                !(map.contains_key("anyOf") && map.contains_key("type")),
                "{name}: `type` beside `anyOf` at {pointer:?}"
            );
            assert!(
                !map.contains_key("$ref"),
                "{name}: schemas are inlined, found $ref at {pointer:?}"
            );
            if map.get("type") == Some(&json!("object")) && map.contains_key("properties") {
                assert_eq!(
                    map.get("additionalProperties"),
                    Some(&json!(false)),
                    "{name}: object with declared properties at {pointer:?} must be closed"
                );
            }
        });
    }
}

#[test]
fn every_tool_rejects_an_undeclared_field() {
    for tool in Tool::ALL {
        let schema: Value = serde_json::from_str(INPUT_SCHEMAS[tool.index()]).unwrap();
        let minimal = valid_instance(&schema, false);
        assert!(
            surface::parse(tool.name(), Some(minimal.clone())).is_ok(),
            "{}: minimal payload {minimal}",
            tool.name()
        );

        let mut payload = minimal;
        payload
            .as_object_mut()
            .unwrap()
            .insert("undeclared_field".into(), json!(1));
        match surface::parse(tool.name(), Some(payload)) {
            Err(ParseError::Invalid(violations)) => {
                assert!(
                    violations.iter().any(|v| v.pointer == "/undeclared_field"),
                    "{}: violation must point at the field: {violations:?}",
                    tool.name()
                );
            }
            other => panic!("{}: undeclared field accepted: {other:?}", tool.name()),
        }

        // A workspace-bound tool also rejects an undeclared workspace selector alias.
        if tool.spec().workspace_bound {
            let mut payload = valid_instance(&schema, false);
            payload["workspace"]["path"] = json!("/abs");
            assert!(
                matches!(surface::parse(tool.name(), Some(payload)), Err(ParseError::Invalid(v)) if v.iter().any(|v| v.pointer == "/workspace/path")),
                "{}: workspace alias accepted",
                tool.name()
            );
            for alias in ["root", "workspace_root", "project", "cwd"] {
                let mut payload = valid_instance(&schema, false);
                payload[alias] = json!("/abs");
                assert!(
                    surface::parse(tool.name(), Some(payload)).is_err(),
                    "{}: top-level `{alias}` accepted",
                    tool.name()
                );
            }
        }
    }
}

/// The whole tools/list result, as the server writes it in each era, stays at
/// or below 20 KB: about 5k tokens in every agent's context.
#[test]
fn tools_list_result_is_at_most_20_kb() {
    const LIMIT: usize = 20_000;
    let mut server = Server::spawn();
    let modern_result = server.result(&modern(1, "tools/list", Value::Null));
    let mut legacy = Server::spawn();
    legacy.legacy_init();
    let legacy_result = legacy.result(&request(2, "tools/list", Value::Null));
    for (era, result) in [("2026-07-28", modern_result), ("2025-11-25", legacy_result)] {
        assert_eq!(result["tools"].as_array().map(Vec::len), Some(TOOL_COUNT));
        let bytes = serde_json::to_string(&result).unwrap().len();
        let schemas: usize = result["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| serde_json::to_string(&t["inputSchema"]).unwrap().len())
            .sum();
        println!(
            "tools/list result ({era}): {bytes} bytes ({schemas} of them input schemas), limit {LIMIT}"
        );
        assert!(
            bytes <= LIMIT,
            "the {era} tools/list result is {bytes} bytes, above {LIMIT}: shorten descriptions or argument docs in operations.toml"
        );
    }
}

/// Every tool that reports progress says so in its description (MCP puts
/// `_meta.progressToken` outside the arguments, so the schema cannot).
#[test]
fn every_reporting_tool_advertises_the_progress_token() {
    for (entry, tool) in catalog().iter().zip(Tool::ALL) {
        let description = entry["description"].as_str().unwrap();
        let quiet = tool.spec().progress == surface::ProgressClass::Quiet;
        assert_eq!(
            description.contains("_meta.progressToken"),
            !quiet,
            "{}: {description}",
            tool.name()
        );
    }
}

/// The read-only hint is not an OS sandbox: every speculative tool's
/// description states the IO boundary (seed: "The generated descriptions for
/// speculative tools state that boundary directly").
#[test]
fn speculative_tools_state_the_io_boundary() {
    const BOUNDARY: &str = "user Lean code and project metaprogramming may still perform IO";
    let speculative = [
        "lean_run_at",
        "lean_run_at_handle",
        "lean_run_with",
        "lean_run_with_linear",
        "lean_run_code",
        "lean_verify",
    ];
    for entry in catalog() {
        let name = entry["name"].as_str().unwrap();
        let description = entry["description"].as_str().unwrap();
        assert_eq!(
            description.contains(BOUNDARY),
            speculative.contains(&name),
            "{name}: {description}"
        );
    }
}

/// The server instructions, in both eras (initialize and server/discover), say
/// that positions are 0-based in UTF-16 code units and what the usual loop is.
#[test]
fn instructions_state_positions_and_the_loop_in_both_eras() {
    let mut modern_server = Server::spawn();
    let discover = modern_server.result(&modern("d", "server/discover", Value::Null));
    let mut legacy_server = Server::spawn();
    let initialize = legacy_server.legacy_init();
    for (era, result) in [("2026-07-28", discover), ("2025-11-25", initialize)] {
        let text = result["instructions"]
            .as_str()
            .unwrap_or_else(|| panic!("{era}: no instructions in {result}"));
        for fact in [
            "Lines and characters are 0-based",
            "UTF-16 code units",
            "The usual loop: edit the file",
            "lean_sync",
            "lean_goals",
            "lean_run_at",
        ] {
            assert!(
                text.contains(fact),
                "{era}: instructions lack {fact:?}: {text}"
            );
        }
    }
}
