//! The emitted input schema of every tool (what clients see in tools/list) and the
//! schema schemars derives from the generated argument struct must accept and
//! reject the same payloads. A disagreement is a generator bug: fix
//! `codegen/src/emit.rs`, not this test.

#[allow(dead_code)] // this binary uses a slice of the harness (see tests/common/mod.rs)
mod common;

use common::samples::samples;
use lean_beam_mcp::surface::{self, INPUT_SCHEMAS, ParseError, Tool};
use serde_json::Value;

fn compile(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .unwrap_or_else(|e| panic!("schema does not compile: {e}\n{schema:#}"))
}

#[test]
fn emitted_and_derived_schemas_agree_on_samples() {
    let mut failures = Vec::new();
    let mut checked = 0usize;
    for tool in Tool::ALL {
        let emitted: Value =
            serde_json::from_str(INPUT_SCHEMAS[tool.index()]).expect("emitted schema is JSON");
        let derived = tool.derived_schema();
        let emitted_v = compile(&emitted);
        let derived_v = compile(&derived);
        let cases = samples(&emitted);
        assert!(cases.len() >= 5, "{}: too few samples", tool.name());
        for case in cases {
            checked += 1;
            let by_emitted = emitted_v.is_valid(&case.payload);
            let by_derived = derived_v.is_valid(&case.payload);
            if by_emitted != case.valid || by_derived != case.valid {
                failures.push(format!(
                    "{} / {}: expected {}, emitted schema says {}, schemars schema says {}\n  payload: {}",
                    tool.name(),
                    case.label,
                    verdict(case.valid),
                    verdict(by_emitted),
                    verdict(by_derived),
                    case.payload
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} samples disagree (fix codegen/src/emit.rs, not this test):\n{}\n\nderived schema of the first tool involved:\n{}",
        failures.len(),
        failures.join("\n"),
        first_tool_schema(&failures)
    );
}

/// The full pipeline agrees too: `parse` (validator + serde) accepts exactly the
/// samples the schema accepts, and reports rejections as `Invalid`, never as a
/// serde disagreement with an empty pointer.
#[test]
fn parse_agrees_with_the_schema() {
    let mut failures = Vec::new();
    for tool in Tool::ALL {
        let emitted: Value = serde_json::from_str(INPUT_SCHEMAS[tool.index()]).unwrap();
        for case in samples(&emitted) {
            let parsed = surface::parse(tool.name(), Some(case.payload.clone()));
            let ok = match (&parsed, case.valid) {
                (Ok(call), true) => call.tool() == tool,
                (Err(ParseError::Invalid(violations)), false) => {
                    !violations.is_empty() && violations.iter().all(|v| !v.reason.is_empty())
                }
                _ => false,
            };
            if !ok {
                failures.push(format!(
                    "{} / {}: {:?}\n  payload: {}",
                    tool.name(),
                    case.label,
                    parsed,
                    case.payload
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "parse disagrees with the schema:\n{}",
        failures.join("\n")
    );
}

fn verdict(valid: bool) -> &'static str {
    if valid { "accept" } else { "reject" }
}

fn first_tool_schema(failures: &[String]) -> String {
    let Some(name) = failures.first().and_then(|f| f.split(" / ").next()) else {
        return String::new();
    };
    let tool = Tool::from_name(name).expect("tool");
    format!("{:#}", tool.derived_schema())
}
