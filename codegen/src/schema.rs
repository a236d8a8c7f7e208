//! JSON Schemas and the tools/list catalog, computed from the checked table.
//!
//! Schemas are inlined (no `$ref`), every object is closed, and no `type` ever
//! stands beside `anyOf`: several model providers reject anything else. No
//! `$schema` key either: MCP's default dialect (2020-12) applies, and the
//! catalog is in every agent's context, so each byte counts.

use serde_json::{Map, Value, json};

use crate::table::{Arg, ArgType, Table, Tool, resolve_type};

pub fn input_schema(table: &Table, tool: &Tool) -> Value {
    object_schema(table, &tool.args, None)
}

fn object_schema(table: &Table, args: &[Arg], doc: Option<&str>) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for arg in args {
        properties.insert(arg.name.clone(), arg_schema(table, arg));
        if arg.required {
            required.push(json!(arg.name));
        }
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    if let Some(doc) = doc {
        schema.insert("description".into(), json!(doc));
    }
    schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    schema.insert("additionalProperties".into(), json!(false));
    Value::Object(schema)
}

fn arg_schema(table: &Table, arg: &Arg) -> Value {
    let ty = resolve_type(table, arg).expect("checked table");
    let mut schema = type_schema(table, &ty, arg.doc.as_deref());
    let map = schema.as_object_mut().expect("object schema");
    if let Some(values) = &arg.enum_values {
        let target = match ty {
            ArgType::Array(_) => map
                .get_mut("items")
                .and_then(Value::as_object_mut)
                .expect("array items"),
            _ => &mut *map,
        };
        target.insert("enum".into(), json!(values));
    }
    if let Some(min) = arg.minimum {
        map.insert("minimum".into(), json!(min));
    }
    if let Some(keys) = &arg.required_keys {
        map.insert("required".into(), json!(keys));
    }
    if let Some(default) = &arg.default {
        map.insert("default".into(), toml_to_json(default));
    }
    schema
}

/// The schema of one type; `doc` (absent for array items and undocumented
/// shape arguments) becomes its `description`.
fn type_schema(table: &Table, ty: &ArgType, doc: Option<&str>) -> Value {
    let mut schema = match ty {
        ArgType::String => json!({"type": "string"}),
        ArgType::Integer => json!({"type": "integer"}),
        ArgType::Natural => json!({"type": "integer", "minimum": 0}),
        ArgType::Boolean => json!({"type": "boolean"}),
        ArgType::Object => json!({"type": "object", "properties": {}}),
        ArgType::Shape(name) => return object_schema(table, &table.shape[name].fields, doc),
        ArgType::Array(items) => {
            json!({"type": "array", "items": type_schema(table, items, None)})
        }
    };
    if let Some(doc) = doc {
        schema["description"] = json!(doc);
    }
    schema
}

pub fn toml_to_json(value: &toml::Value) -> Value {
    match value {
        toml::Value::String(s) => json!(s),
        toml::Value::Integer(n) => json!(n),
        toml::Value::Float(f) => json!(f),
        toml::Value::Boolean(b) => json!(b),
        toml::Value::Array(items) => Value::Array(items.iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.clone(), toml_to_json(v)))
                .collect(),
        ),
        toml::Value::Datetime(d) => json!(d.to_string()),
    }
}

/// The public description: the table's text, the speculative note when the tool
/// is speculative, and its progress class sentence.
pub fn description(table: &Table, tool: &Tool) -> String {
    let mut text = tool.description.clone();
    if tool.speculative {
        text.push(' ');
        text.push_str(&table.speculative_note);
    }
    let progress = &table.progress[&tool.progress].text;
    if !progress.is_empty() {
        text.push(' ');
        text.push_str(progress);
    }
    text
}

/// MCP annotations, emitting only the hints that differ from the protocol defaults
/// (readOnly false, destructive true, idempotent false).
pub fn annotations(tool: &Tool) -> Option<Value> {
    let mut hints = Map::new();
    if tool.read_only {
        hints.insert("readOnlyHint".into(), json!(true));
    }
    if tool.destructive == Some(false) {
        hints.insert("destructiveHint".into(), json!(false));
    }
    if tool.idempotent {
        hints.insert("idempotentHint".into(), json!(true));
    }
    (!hints.is_empty()).then_some(Value::Object(hints))
}

/// The `tools` array of a tools/list result.
pub fn catalog(table: &Table) -> Value {
    Value::Array(
        table
            .tool
            .iter()
            .map(|tool| {
                let mut entry = Map::new();
                entry.insert("name".into(), json!(tool.name));
                entry.insert("description".into(), json!(description(table, tool)));
                entry.insert("inputSchema".into(), input_schema(table, tool));
                if let Some(hints) = annotations(tool) {
                    entry.insert("annotations".into(), hints);
                }
                Value::Object(entry)
            })
            .collect(),
    )
}
