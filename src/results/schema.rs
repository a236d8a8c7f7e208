//! Output schemas derived from the result types, in the subset every host
//! reads and documented only where one tool's reader looks.

use schemars::JsonSchema;
use serde_json::{Map, Value};

/// The output schema of a result type: JSON Schema draft 2020-12 describing
/// what the type serializes to (optional keys are the ones it may leave out),
/// without `$schema` (MCP's default dialect) and without the Rust type name as
/// a title. Integer formats (`uint64`, …) are dropped: they are no standard
/// format, and strict validators reject unknown ones; `minimum: 0` says it.
///
/// In the subset every host reads (issue 25: Inspector's warnings, Gemini
/// CLI's older schema path, peers' discovery): self-contained (shared shapes
/// inlined, no `$ref`/`$defs`), no type arrays (an optional key is left out of
/// the result, never null: every `Option` field of a result skips `None`),
/// and every object schema with `properties` (`{}` for a map).
///
/// Documented where a reader of one tool's answer looks: the result's own
/// description and each of its top-level fields'. The nested shapes are
/// inlined at every use, so their docs were most of the catalog (105 of its
/// 213 KB, issue 29; hosts that show output schemas to the model pay for them
/// on every session); they are dropped, and an enum documented variant by
/// variant becomes a plain `enum` of its values.
pub fn output_schema<T: JsonSchema>() -> Value {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12().for_serialize();
    settings.inline_subschemas = true;
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let Value::Object(mut map) = serde_json::to_value(schema).expect("a schema serializes") else {
        unreachable!("a struct's schema is an object")
    };
    map.remove("$schema");
    map.remove("title");
    // What the result is first, the shared definitions last, so that the
    // golden catalog reads from the top.
    let mut ordered = serde_json::Map::new();
    for key in ["description", "type", "properties", "required"] {
        if let Some(value) = map.remove(key) {
            ordered.insert(key.to_owned(), value);
        }
    }
    let defs = map.remove("$defs");
    ordered.extend(map);
    if let Some(defs) = defs {
        ordered.insert("$defs".to_owned(), defs);
    }
    let mut schema = Value::Object(ordered);
    drop_integer_formats(&mut schema);
    portable(&mut schema);
    document_top_level_only(&mut schema);
    schema
}

/// Rewrite a schema into the portable subset: no `null` in type arrays,
/// enums or `anyOf` branches (the key is left out instead, so its schema is the
/// non-null one), and `properties` on every object schema.
fn portable(schema: &mut Value) {
    let Value::Object(map) = schema else {
        if let Value::Array(items) = schema {
            items.iter_mut().for_each(portable);
        }
        return;
    };
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            map.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        branches.retain(|b| b.get("type").is_none_or(|t| t != "null"));
        if branches.len() == 1 {
            let Some(Value::Object(only)) = branches.pop() else {
                unreachable!("a schema branch is an object")
            };
            map.remove("anyOf");
            for (key, value) in only {
                map.entry(key).or_insert(value);
            }
        }
    }
    if map.get("type").is_some_and(|t| t == "object") && !map.contains_key("properties") {
        map.insert("properties".into(), Value::Object(serde_json::Map::new()));
    }
    map.values_mut().for_each(portable);
}

fn drop_integer_formats(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let integer_format = map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| f.starts_with("int") || f.starts_with("uint"));
            if integer_format {
                map.remove("format");
            }
            map.values_mut().for_each(drop_integer_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_integer_formats),
        _ => {}
    }
}

/// The schema of `T` as one field of a result: `description` and nothing
/// documented below it: a shape every result declares, like the budget's
/// `truncated` note, says what its fields are in that one description
/// rather than in four, 31 times over.
pub fn field_schema<T: JsonSchema>(description: &str) -> Value {
    let mut schema = output_schema::<T>();
    if let Value::Object(map) = &mut schema {
        map.iter_mut()
            .for_each(|(keyword, value)| undocument(keyword, value));
        map.insert("description".into(), description.into());
    }
    schema
}

/// Keep `description` on the root and on its `properties`; drop it from
/// every schema below them.
fn document_top_level_only(schema: &mut Value) {
    let Value::Object(root) = schema else { return };
    for (keyword, value) in root.iter_mut() {
        if keyword == "properties" {
            let Value::Object(properties) = value else {
                continue;
            };
            for property in properties.values_mut() {
                let Value::Object(property) = property else {
                    continue;
                };
                property
                    .iter_mut()
                    .filter(|(keyword, _)| *keyword != "description")
                    .for_each(|(keyword, value)| undocument(keyword, value));
                merge_const_branches(property);
            }
        } else {
            undocument(keyword, value);
        }
    }
}

/// Drop `description` from the schemas `value` holds as the value of
/// `keyword` (a map of them, a list, one, or none: `enum`, `required`…).
/// Walking by keyword keeps a property that happens to be named
/// `description` (a key of `properties`, not a keyword).
fn undocument(keyword: &str, value: &mut Value) {
    match (keyword, value) {
        ("properties" | "patternProperties" | "$defs", Value::Object(schemas)) => {
            schemas.values_mut().for_each(undocument_schema)
        }
        ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(schemas)) => {
            schemas.iter_mut().for_each(undocument_schema)
        }
        ("items" | "additionalProperties" | "not" | "contains" | "propertyNames", schema) => {
            undocument_schema(schema)
        }
        _ => {}
    }
}

fn undocument_schema(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    map.remove("description");
    for (keyword, value) in map.iter_mut() {
        undocument(keyword, value);
    }
    merge_const_branches(map);
}

/// `oneOf`/`anyOf` of undocumented `const`/`enum` branches of one type (what
/// schemars makes of an enum with documented variants) → one `enum`.
fn merge_const_branches(map: &mut Map<String, Value>) {
    for keyword in ["oneOf", "anyOf"] {
        let Some(Value::Array(branches)) = map.get(keyword) else {
            continue;
        };
        let mut ty = None;
        let mut values = Vec::new();
        for branch in branches {
            let Value::Object(branch) = branch else {
                return;
            };
            if branch
                .keys()
                .any(|k| !matches!(k.as_str(), "type" | "const" | "enum"))
            {
                return;
            }
            let branch_type = branch.get("type");
            if branch_type.is_none() || ty.is_some_and(|t| Some(t) != branch_type) {
                return;
            }
            ty = branch_type;
            match (branch.get("const"), branch.get("enum")) {
                (Some(value), None) => values.push(value.clone()),
                (None, Some(Value::Array(more))) => values.extend(more.iter().cloned()),
                _ => return,
            }
        }
        let (Some(ty), false) = (ty.cloned(), values.is_empty()) else {
            return;
        };
        if map.get("type").is_some_and(|t| *t != ty) {
            return;
        }
        map.remove(keyword);
        map.insert("type".into(), ty);
        map.insert("enum".into(), Value::Array(values));
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shaped(mut schema: Value) -> Value {
        document_top_level_only(&mut schema);
        schema
    }

    #[test]
    fn docs_stay_on_the_root_and_its_fields_and_leave_nested_shapes() {
        let cases = [
            // (what schemars gives, what the catalog says)
            (
                json!({"description": "R", "type": "object", "properties": {
                    "at": {"description": "where", "type": "object",
                           "properties": {"line": {"description": "0-based", "type": "integer"}}},
                    "all": {"type": "array", "items": {"description": "one", "type": "object",
                           "properties": {"x": {"description": "x", "type": "string"}}}}}}),
                json!({"description": "R", "type": "object", "properties": {
                    "at": {"description": "where", "type": "object",
                           "properties": {"line": {"type": "integer"}}},
                    "all": {"type": "array", "items": {"type": "object",
                           "properties": {"x": {"type": "string"}}}}}}),
            ),
            // A field named `description` is a property, not a keyword.
            (
                json!({"type": "object", "properties": {
                    "item": {"type": "object", "properties": {
                        "description": {"description": "its text", "type": "string"}},
                        "required": ["description"]}}}),
                json!({"type": "object", "properties": {
                    "item": {"type": "object", "properties": {
                        "description": {"type": "string"}},
                        "required": ["description"]}}}),
            ),
            // anyOf branches and maps' value schemas are nested too.
            (
                json!({"type": "object", "properties": {
                    "m": {"type": "object", "properties": {},
                          "additionalProperties": {"description": "d", "type": "integer"}},
                    "u": {"anyOf": [{"description": "a", "type": "string"},
                                    {"description": "b", "type": "object", "properties": {}}]}}}),
                json!({"type": "object", "properties": {
                    "m": {"type": "object", "properties": {},
                          "additionalProperties": {"type": "integer"}},
                    "u": {"anyOf": [{"type": "string"},
                                    {"type": "object", "properties": {}}]}}}),
            ),
        ];
        for (given, expected) in cases {
            assert_eq!(shaped(given.clone()), expected, "{given}");
        }
    }

    #[test]
    fn an_enum_documented_by_variant_becomes_one_enum_and_others_stay() {
        let cases = [
            // Documented variants, at a top-level field: one enum, the
            // field's own description kept.
            (
                json!({"description": "kind", "oneOf": [
                    {"description": "a", "type": "string", "const": "a"},
                    {"description": "b", "type": "string", "enum": ["b", "c"]}]}),
                json!({"description": "kind", "type": "string", "enum": ["a", "b", "c"]}),
            ),
            // Branches of two types are a real union.
            (
                json!({"oneOf": [{"type": "string", "const": "a"}, {"type": "integer", "const": 1}]}),
                json!({"oneOf": [{"type": "string", "const": "a"}, {"type": "integer", "const": 1}]}),
            ),
            // A branch with more than a value is a real union.
            (
                json!({"oneOf": [{"type": "string", "const": "a"},
                                 {"type": "object", "properties": {"k": {"type": "string"}}}]}),
                json!({"oneOf": [{"type": "string", "const": "a"},
                                 {"type": "object", "properties": {"k": {"type": "string"}}}]}),
            ),
        ];
        for (given, expected) in cases {
            let schema = json!({"type": "object", "properties": {"f": given.clone()}});
            assert_eq!(shaped(schema)["properties"]["f"], expected, "{given}");
        }
    }
}
