//! The tools/list catalog: the checked-in golden file, the number of tools, and
//! the schema rules every client relies on.

mod common;

use common::samples::valid_instance;
use lean_beam_mcp::surface::{self, CATALOG_JSON, INPUT_SCHEMAS, ParseError, TOOL_COUNT, Tool};
use serde_json::{Value, json};

const REFRESH: &str = "cargo run -q -- tools > tests/golden/tools.json";

fn catalog() -> Vec<Value> {
    match serde_json::from_str(CATALOG_JSON).expect("CATALOG_JSON is JSON") {
        Value::Array(tools) => tools,
        other => panic!("CATALOG_JSON is not an array: {other}"),
    }
}

#[test]
fn golden_catalog_matches_the_generated_one() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/tools.json");
    let golden = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {path}: {e}; create it with `{REFRESH}`"));
    // Exactly what `lean-beam-mcp tools` prints.
    let generated =
        serde_json::to_string_pretty(&serde_json::from_str::<Value>(CATALOG_JSON).unwrap())
            .unwrap()
            + "\n";
    if golden != generated {
        let first = golden
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| golden.lines().count().min(generated.lines().count()));
        panic!(
            "tests/golden/tools.json is out of date with operations.toml (first difference at line {}):\n  golden:    {}\n  generated: {}\nIf the change is intended, refresh it with:\n    {REFRESH}",
            first + 1,
            golden.lines().nth(first).unwrap_or("<end of file>"),
            generated.lines().nth(first).unwrap_or("<end of file>"),
        );
    }
}

#[test]
fn catalog_lists_24_tools_in_table_order() {
    let tools = catalog();
    assert_eq!(tools.len(), 24);
    assert_eq!(TOOL_COUNT, 24);
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
        assert_eq!(
            schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{name}"
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
