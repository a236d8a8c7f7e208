//! The emitted input schema of every tool (what clients see in tools/list) and the
//! schema schemars derives from the generated argument struct must accept and
//! reject the same payloads. A disagreement is a generator bug: fix
//! `codegen/src/emit.rs`, not this test.

#[allow(dead_code)] // this binary uses a slice of the harness (see tests/common/mod.rs)
mod common;

use common::samples::samples;
use lean_beam_mcp::surface::{self, INPUT_SCHEMAS, ParseError, Tool, Violation};
use serde_json::{Map, Value, json};

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

/// The violations the `jsonschema` crate finds, in the form the server reports
/// them (an undeclared field pointed at itself): what `parse` answered before
/// the validators were generated.
fn jsonschema_violations(validator: &jsonschema::Validator, instance: &Value) -> Vec<Violation> {
    let mut violations = Vec::new();
    for error in validator.iter_errors(instance) {
        let base = error.instance_path().to_string();
        if let jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } =
            error.kind()
        {
            for name in unexpected {
                let segment = name.replace('~', "~0").replace('/', "~1");
                violations.push(Violation {
                    pointer: format!("{base}/{segment}"),
                    reason: format!("undeclared field `{name}` (additionalProperties is false)"),
                });
            }
            continue;
        }
        violations.push(Violation {
            pointer: base,
            reason: error.to_string(),
        });
    }
    violations
}

/// Payloads wrong in many places at once: every declared member (and each
/// shape's members, and array items) set to one probe value, plus an
/// undeclared member; and arguments that are not an object at all.
fn messy_payloads(schema: &Value) -> Vec<Value> {
    let probes = [
        json!(null),
        json!(true),
        json!(-1),
        json!(-1.5),
        json!(2.0),
        json!(18446744073709551615u64),
        json!("zz"),
        json!([]),
        json!([1, "x", {"zz": 1}, null]),
        json!({}),
        json!({"zz": 1, "a/b~c": 2}),
        json!({"root": 5, "name": [1], "path": {}}),
    ];
    let mut payloads: Vec<Value> = vec![
        json!(null),
        json!([]),
        json!("x"),
        json!(1),
        json!({"extra": 1}),
        json!({"zz": 1, "workspace": 5, "path": 1}),
        json!({"workspace": {"zz": 1}, "declarations": [{"zz": 1}]}),
    ];
    for probe in &probes {
        payloads.push(fill(schema, probe, 0));
    }
    payloads
}

/// `schema`'s declared members each set to `probe` (shapes filled in turn,
/// to a depth of two), plus an undeclared member `extra`.
fn fill(schema: &Value, probe: &Value, depth: usize) -> Value {
    let mut object = Map::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, sub) in properties {
            let value = match sub.get("type").and_then(Value::as_str) {
                Some("object") if depth < 2 => fill(sub, probe, depth + 1),
                Some("array") if depth < 2 => match sub["items"].get("type") {
                    Some(t) if t == "object" => {
                        json!([fill(&sub["items"], probe, depth + 1), probe])
                    }
                    _ => json!([probe, "ok", 3]),
                },
                _ => probe.clone(),
            };
            object.insert(name.clone(), value);
        }
    }
    object.insert("extra".into(), probe.clone());
    Value::Object(object)
}

/// The generated validators (what the server runs) find exactly what the
/// `jsonschema` crate finds on the same schema: the same violations, with the
/// same pointers and texts.
#[test]
fn generated_validators_agree_with_jsonschema() {
    let mut failures = Vec::new();
    let mut checked = 0usize;
    let mut rejected = 0usize;
    for tool in Tool::ALL {
        let emitted: Value = serde_json::from_str(INPUT_SCHEMAS[tool.index()]).unwrap();
        let engine = compile(&emitted);
        let payloads = samples(&emitted)
            .into_iter()
            .map(|case| case.payload)
            .chain(messy_payloads(&emitted));
        for payload in payloads {
            checked += 1;
            let mut expected = jsonschema_violations(&engine, &payload);
            let mut generated =
                match surface::validate::run(surface::VALIDATORS[tool.index()], &payload) {
                    Ok(()) => Vec::new(),
                    Err(ParseError::Invalid(violations)) => violations,
                    Err(other) => panic!("{}: {other:?}", tool.name()),
                };
            rejected += usize::from(!expected.is_empty());
            // The order within one payload is not compared: jsonschema's
            // depends on how it fuses keywords (a closed object with one
            // required member reports it after the undeclared ones, with
            // several before); ours is fixed (tests below pin it).
            let key = |v: &Violation| (v.pointer.clone(), v.reason.clone());
            expected.sort_by_key(key);
            generated.sort_by_key(key);
            if generated != expected {
                failures.push(format!(
                    "{}: payload {payload}\n  jsonschema: {expected:?}\n  generated:  {generated:?}",
                    tool.name()
                ));
            }
        }
    }
    assert!(
        rejected > checked / 2,
        "{rejected} of {checked} rejected: too few invalid payloads"
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} payloads judged differently:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// What an agent reads for the usual mistakes: the field (a JSON pointer),
/// the rule it broke and, with it, what to send instead; in a fixed order:
/// an object's type, the members it lacks, what is wrong with those sent (in
/// the order sent), what it does not take.
#[test]
fn invalid_arguments_read_as_before() {
    let root = json!({"root": "/w"});
    for (tool, arguments, expected) in [
        (
            "lean_hover",
            json!({"workspace": root, "version": 1, "line": 3, "character": 0}),
            r#""path" is a required property"#,
        ),
        (
            "lean_hover",
            json!({"workspace": root, "path": "A.lean", "version": 1, "line": "3", "character": -1}),
            r#"/line: "3" is not of type "integer"; /character: -1 is less than the minimum of 0"#,
        ),
        (
            "lean_hover",
            json!({"wrkspace": root, "workspace": {"root": 1}, "path": "A.lean", "line": 2.5, "character": 0}),
            r#""version" is a required property; /workspace/root: 1 is not of type "string"; /line: 2.5 is not of type "integer"; /wrkspace: undeclared field `wrkspace` (additionalProperties is false)"#,
        ),
        (
            "lean_save",
            json!({"workspace": root, "path": "A.lean", "diagnostic_scope": "some"}),
            r#"/diagnostic_scope: "some" is not one of "errors" or "all""#,
        ),
        ("beam_version", json!([1]), r#"[1] is not of type "object""#),
    ] {
        let error = surface::parse(tool, Some(arguments))
            .expect_err("invalid")
            .into_tool_error(tool);
        let expected = format!("invalid arguments for `{tool}`: {expected}");
        assert_eq!(error.message, expected, "{tool}");
    }
}
