//! Generated parse + validate of every tool's arguments (`surface::parse`).
//!
//! The first byte picks the tool; the rest builds its arguments, derived from the
//! tool's own input schema (mostly valid, sometimes broken in one place), or, for
//! one input in eight, as arbitrary JSON. An input that is a JSON
//! `{"name", "arguments"}` object (the seeds) is also checked as it is.
//!
//! Properties: no panic; `parse` accepts exactly what the schema validator
//! accepts, except a schema-valid number that does not fit the Rust integer
//! (refused with `invalidInput`, never accepted wrongly); every refusal becomes a
//! serializable `invalidInput` tool error with at least one violation; an
//! accepted call is for the tool that was named.
#![no_main]

use std::sync::LazyLock;

use arbitrary::Unstructured;
use lean_beam_mcp::surface::{self, ErrorCode, ParseError, Tool};
use lean_beam_mcp_fuzz::{from_schema, value};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

static SCHEMAS: LazyLock<Vec<Value>> = LazyLock::new(|| {
    Tool::ALL
        .iter()
        .map(|t| serde_json::from_str(t.input_schema()).expect("schema is JSON"))
        .collect()
});

fuzz_target!(|data: &[u8]| {
    // A seed from the tests is `{"name": tool, "arguments": {...}}` as JSON.
    if let Ok(Value::Object(call)) = serde_json::from_slice::<Value>(data) {
        let tool = call
            .get("name")
            .and_then(Value::as_str)
            .and_then(Tool::from_name);
        if let (Some(tool), Some(arguments)) = (tool, call.get("arguments")) {
            check(tool, arguments.clone());
        }
    }
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let tool = Tool::ALL[pick as usize % Tool::ALL.len()];
    let mut u = Unstructured::new(rest);
    let arguments = if pick >= 224 {
        value(&mut u, 4)
    } else {
        from_schema(&mut u, &SCHEMAS[tool.index()], 6)
    };
    let Ok(arguments) = arguments else { return };
    check(tool, arguments);
});

fn check(tool: Tool, arguments: Value) {
    let schema_ok = surface::validate::run(surface::VALIDATORS[tool.index()], &arguments).is_ok();
    match surface::parse(tool.name(), Some(arguments.clone())) {
        Ok(call) => {
            assert_eq!(call.tool(), tool);
            assert!(
                schema_ok,
                "parse accepted what the schema refuses: {arguments}"
            );
        }
        Err(ParseError::UnknownTool(name)) => panic!("{name} is a tool"),
        Err(ParseError::Invalid(violations)) => {
            assert!(!violations.is_empty(), "a refusal without a violation");
            if schema_ok {
                // Only a whole number outside the Rust type may pass the schema and
                // fail serde.
                assert!(
                    violations
                        .iter()
                        .all(|v| v.reason.contains("invalid value")),
                    "schema and Rust type disagree on {arguments}: {violations:?}"
                );
            }
            let error = ParseError::Invalid(violations).into_tool_error(tool.name());
            assert_eq!(error.code, ErrorCode::InvalidInput);
            let json = serde_json::to_value(&error).expect("tool error serializes");
            assert!(
                json["data"]["violations"]
                    .as_array()
                    .is_some_and(|v| !v.is_empty())
            );
        }
    }
}
