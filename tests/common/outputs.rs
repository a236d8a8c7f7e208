//! Every tool result the tests see is checked against what the server
//! advertises: a success's `structuredContent` against its tool's
//! `outputSchema`; an error (`isError: true`) as SDK-v1 hosts check it (a
//! `structuredContent`, if any, must satisfy the tool's `outputSchema`:
//! typescript-sdk#1943), and its `content[0].text` against the tool-error
//! schema.
//! The stdio harnesses ([`super::Server`], [`super::mcp::Mcp`], through
//! [`super::child::StdioChild`]) and the HTTP helpers call [`Calls`], so no
//! test has to ask for it.
//!
//! The schemas are those of the catalog string `tools/list` serves
//! (`surface::catalog_json`; `tests/catalog.rs` checks that the served one is
//! that string). Each result is checked twice: against the schema as
//! advertised, and against a closed copy (`additionalProperties: false` on
//! every object that lists its properties), so a key the schema does not
//! declare is caught too; the advertised schemas stay open, so a later server
//! that adds a key still satisfies a client's cached copy.

use std::collections::HashMap;
use std::sync::LazyLock;

use lean_beam_mcp::surface;
use serde_json::{Value, json};

struct Check {
    advertised: jsonschema::Validator,
    closed: jsonschema::Validator,
}

impl Check {
    fn new(schema: &Value) -> Check {
        let mut closed = schema.clone();
        close(&mut closed);
        Check {
            advertised: compile(schema),
            closed: compile(&closed),
        }
    }

    fn check(&self, what: &str, instance: &Value) {
        for (form, validator) in [("", &self.advertised), (" (closed)", &self.closed)] {
            let errors: Vec<String> = validator
                .iter_errors(instance)
                .map(|e| format!("{} at {:?}", e, e.instance_path().to_string()))
                .collect();
            assert!(
                errors.is_empty(),
                "{what} does not satisfy its schema{form}:\n  {}\nresult: {instance:#}",
                errors.join("\n  ")
            );
        }
    }
}

fn compile(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .unwrap_or_else(|e| panic!("schema does not compile: {e}\n{schema:#}"))
}

/// `additionalProperties: false` on every object schema that lists its
/// properties and says nothing of others.
fn close(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            // `properties: {}` is a free-form object (an LSP object passed
            // through verbatim): it stays open.
            let declares = map
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|properties| !properties.is_empty());
            if declares && !map.contains_key("additionalProperties") {
                map.insert("additionalProperties".into(), json!(false));
            }
            map.values_mut().for_each(close);
        }
        Value::Array(items) => items.iter_mut().for_each(close),
        _ => {}
    }
}

static OUTPUTS: LazyLock<HashMap<String, Check>> = LazyLock::new(|| {
    let catalog: Vec<Value> =
        serde_json::from_str(surface::catalog_json()).expect("the catalog is JSON");
    catalog
        .iter()
        .map(|tool| {
            let name = tool["name"].as_str().expect("tool name").to_string();
            let schema = tool
                .get("outputSchema")
                .unwrap_or_else(|| panic!("{name} has no outputSchema"));
            (name, Check::new(schema))
        })
        .collect()
});

static ERRORS: LazyLock<Check> = LazyLock::new(|| Check::new(&surface::tool_error_schema()));

/// Check one `tools/call` result (`{content, structuredContent, isError}`)
/// of `tool`.
pub fn check_result(tool: &str, result: &Value) {
    if result["isError"] == true {
        // What the TypeScript SDK v1 client does with every result of a tool
        // that has an outputSchema, errors included.
        if let (Some(content), Some(check)) = (result.get("structuredContent"), OUTPUTS.get(tool)) {
            check.check(&format!("the {tool} error's structuredContent"), content);
        }
        check_content(tool, &super::tool_error(result), true);
        return;
    }
    let Some(content) = result.get("structuredContent") else {
        panic!("{tool}: a tool result without structuredContent: {result}");
    };
    check_content(tool, content, false);
}

/// Check the structured content of a success or an error of `tool`. Unknown
/// tools are the server's to refuse (a JSON-RPC error), so none is checked.
pub fn check_content(tool: &str, content: &Value, is_error: bool) {
    if is_error {
        ERRORS.check(&format!("the {tool} error"), content);
    } else if let Some(check) = OUTPUTS.get(tool) {
        check.check(&format!("the {tool} result"), content);
    }
}

/// The `tools/call` requests in flight on one connection, by id: a response
/// carrying one of their ids is checked when it is read.
#[derive(Debug, Default)]
pub struct Calls {
    pending: HashMap<String, String>,
    /// Results checked so far.
    pub checked: usize,
}

impl Calls {
    /// Note a message sent to the server. A request reusing the id of a call
    /// still in flight is ignored by the server, so the first one stays.
    pub fn sent(&mut self, message: &Value) {
        if message.get("method").and_then(Value::as_str) != Some("tools/call") {
            return;
        }
        let (Some(id), Some(tool)) = (
            message.get("id"),
            message.pointer("/params/name").and_then(Value::as_str),
        ) else {
            return;
        };
        self.pending
            .entry(id.to_string())
            .or_insert_with(|| tool.to_string());
    }

    /// Note a line sent as it is: checked when it is one JSON message. The
    /// hostile tests' huge lines that name no call are not parsed.
    pub fn sent_line(&mut self, line: &str) {
        if !line.contains("tools/call") {
            return;
        }
        if let Ok(message) = serde_json::from_str::<Value>(line) {
            self.sent(&message);
        }
    }

    /// Check a message read from the server, if it answers a call.
    pub fn received(&mut self, message: &Value) {
        if message.get("method").is_some() {
            return;
        }
        let Some(id) = message.get("id") else { return };
        let Some(tool) = self.pending.remove(&id.to_string()) else {
            return;
        };
        if let Some(result) = message.get("result") {
            check_result(&tool, result);
            self.checked += 1;
        }
    }
}
