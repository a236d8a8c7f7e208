//! Sample payloads derived from a tool's emitted input schema: valid ones (minimal
//! and full) and targeted mutations, each labelled with the verdict a correct
//! schema must give.

use serde_json::{Map, Value, json};

/// One sample payload and whether a correct schema accepts it.
#[derive(Debug, Clone)]
pub struct Sample {
    pub label: String,
    pub payload: Value,
    pub valid: bool,
}

/// The declared properties; `None` for a free-form object (open, with
/// `properties: {}`).
fn props(schema: &Value) -> Option<&Map<String, Value>> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .filter(|properties| !properties.is_empty() || is_closed(schema))
}

fn required(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn is_closed(schema: &Value) -> bool {
    schema.get("additionalProperties") == Some(&Value::Bool(false))
}

fn ty(schema: &Value) -> &str {
    schema.get("type").and_then(Value::as_str).unwrap_or("")
}

/// A valid instance of `schema`: only required members when `full` is false,
/// every declared member when it is true.
pub fn valid_instance(schema: &Value, full: bool) -> Value {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return if full { values.last() } else { values.first() }
            .cloned()
            .expect("non-empty enum");
    }
    match ty(schema) {
        "string" => json!(if full { "Dir/Main.lean" } else { "Main.lean" }),
        "integer" => match schema.get("minimum").and_then(Value::as_i64) {
            Some(min) if full => json!(min + 41),
            Some(min) => json!(min),
            None => json!(if full { -7 } else { 3 }),
        },
        "boolean" => json!(full),
        "array" => {
            if full {
                json!([valid_instance(&schema["items"], true)])
            } else {
                json!([])
            }
        }
        "object" => {
            let mut object = Map::new();
            if let Some(properties) = props(schema) {
                let required = required(schema);
                for (name, sub) in properties {
                    if full || required.contains(name) {
                        object.insert(name.clone(), valid_instance(sub, full));
                    }
                }
            } else {
                // A free-form object: its required keys, and some content.
                for key in required(schema) {
                    object.insert(key, json!({ "any": [1, "two"] }));
                }
                if full {
                    object.insert("free".into(), json!("form"));
                }
            }
            Value::Object(object)
        }
        other => panic!("sample generator does not know type `{other}` in {schema}"),
    }
}

/// Values of the wrong JSON type for `schema`.
fn wrong_types(schema: &Value) -> Vec<(&'static str, Value)> {
    let mut out = vec![("null", Value::Null)];
    match ty(schema) {
        "string" => out.extend([
            ("number", json!(1)),
            ("boolean", json!(true)),
            ("array", json!(["x"])),
        ]),
        "integer" => out.extend([
            ("string", json!("1")),
            ("fraction", json!(1.5)),
            ("boolean", json!(true)),
            ("object", json!({})),
        ]),
        "boolean" => out.extend([("string", json!("true")), ("number", json!(0))]),
        "object" => out.extend([
            ("array", json!([])),
            ("string", json!("{}")),
            ("number", json!(2)),
        ]),
        "array" => out.extend([("object", json!({})), ("string", json!("[]"))]),
        _ => {}
    }
    out
}

/// Every sample for a tool whose input schema is `schema`.
pub fn samples(schema: &Value) -> Vec<Sample> {
    let mut out = Vec::new();
    let minimal = valid_instance(schema, false);
    let full = valid_instance(schema, true);
    out.push(Sample {
        label: "minimal valid".into(),
        payload: minimal.clone(),
        valid: true,
    });
    out.push(Sample {
        label: "full valid".into(),
        payload: full.clone(),
        valid: true,
    });
    for (label, v) in [
        ("arguments null", Value::Null),
        ("arguments array", json!([])),
        ("arguments string", json!("{}")),
    ] {
        out.push(Sample {
            label: label.into(),
            payload: v,
            valid: false,
        });
    }
    mutate(
        schema,
        &full,
        "",
        &mut |label, payload_at, valid| {
            out.push(Sample {
                label,
                payload: payload_at,
                valid,
            });
        },
        &full,
    );
    // Mutations of the minimal payload catch rules tied to absent members.
    mutate(
        schema,
        &minimal,
        "",
        &mut |label, payload_at, valid| {
            out.push(Sample {
                label: format!("{label} (from minimal)"),
                payload: payload_at,
                valid,
            });
        },
        &minimal,
    );
    out
}

/// Replace the value at JSON pointer `at` in a copy of `root`.
fn replaced(root: &Value, at: &str, value: Option<Value>) -> Value {
    let mut copy = root.clone();
    let (parent, last) = at.rsplit_once('/').expect("pointer has a segment");
    let target = if parent.is_empty() {
        &mut copy
    } else {
        copy.pointer_mut(parent).expect("parent exists")
    };
    match (target, value) {
        (Value::Object(map), Some(v)) => {
            map.insert(last.to_string(), v);
        }
        (Value::Object(map), None) => {
            map.remove(last);
        }
        (Value::Array(items), Some(v)) => items[last.parse::<usize>().expect("index")] = v,
        (Value::Array(items), None) => {
            items.remove(last.parse::<usize>().expect("index"));
        }
        _ => panic!("cannot replace at {at}"),
    }
    copy
}

/// Walk `instance` (valid for `schema`, located at pointer `at` inside `root`) and
/// emit mutations of `root`.
fn mutate(
    schema: &Value,
    instance: &Value,
    at: &str,
    emit: &mut dyn FnMut(String, Value, bool),
    root: &Value,
) {
    let here = if at.is_empty() {
        "(root)".to_string()
    } else {
        at.to_string()
    };
    if !at.is_empty() {
        for (kind, wrong) in wrong_types(schema) {
            emit(
                format!("wrong type {kind} at {here}"),
                replaced(root, at, Some(wrong)),
                false,
            );
        }
    }
    if schema.get("enum").is_some() {
        emit(
            format!("bad enum at {here}"),
            replaced(root, at, Some(json!("zz_not_in_enum"))),
            false,
        );
        emit(
            format!("enum in wrong case at {here}"),
            replaced(
                root,
                at,
                Some(json!(instance.as_str().unwrap_or("x").to_uppercase())),
            ),
            false,
        );
    }
    if ty(schema) == "integer" {
        match schema.get("minimum").and_then(Value::as_i64) {
            Some(min) => {
                emit(
                    format!("below minimum at {here}"),
                    replaced(root, at, Some(json!(min - 1))),
                    false,
                );
                emit(
                    format!("negative natural at {here}"),
                    replaced(root, at, Some(json!(-1))),
                    min <= -1,
                );
                emit(
                    format!("integral float at {here}"),
                    replaced(root, at, Some(json!(min as f64 + 2.0))),
                    true,
                );
            }
            None => emit(
                format!("negative integer at {here}"),
                replaced(root, at, Some(json!(-5))),
                true,
            ),
        }
    }
    match (ty(schema), instance) {
        ("object", Value::Object(map)) => {
            let undeclared = replaced(root, &format!("{at}/zz_undeclared"), Some(json!(true)));
            emit(
                format!("undeclared field in {here}"),
                undeclared,
                !is_closed(schema),
            );
            if let Some(properties) = props(schema) {
                for name in required(schema) {
                    if map.contains_key(&name) {
                        emit(
                            format!("missing required {at}/{name}"),
                            replaced(root, &format!("{at}/{name}"), None),
                            false,
                        );
                    }
                }
                for (name, value) in map {
                    let sub = &properties[name];
                    mutate(sub, value, &format!("{at}/{name}"), emit, root);
                }
            } else {
                for name in required(schema) {
                    emit(
                        format!("missing required key {at}/{name}"),
                        replaced(root, &format!("{at}/{name}"), None),
                        false,
                    );
                }
            }
        }
        ("array", Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                mutate(&schema["items"], item, &format!("{at}/{i}"), emit, root);
            }
            if items.is_empty() {
                // Add a wrong item to an empty array.
                emit(
                    format!("wrong item type in {here}"),
                    replaced(root, at, Some(json!([{"bad": []}]))),
                    false,
                );
            }
        }
        _ => {}
    }
}
