//! The tool surface: the code generated from `operations.toml` plus the small set
//! of hand-written types it is written against (call context, outcomes, errors,
//! the checks the generated validators call, the catalog with its output schemas).

use std::fmt;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};

pub use crate::context::{CallContext, CallTool, StatusNotice};
/// The result types the table names (`result = "…"`).
pub use crate::results;

mod generated {
    #![allow(clippy::all, clippy::pedantic)]
    include!(concat!(env!("OUT_DIR"), "/operations.rs"));
}

pub use generated::*;

pub mod budget;
mod tool_set;
pub mod validate;
pub use tool_set::ToolSet;

impl From<Tool> for CallTool {
    fn from(tool: Tool) -> Self {
        CallTool {
            name: tool.name(),
            status_notice: tool.spec().status_notice,
        }
    }
}

/// The result of one tool call: the `structuredContent` of a success, or a
/// structured tool error (`isError: true`).
pub type ToolOutcome = Result<Value, ToolError>;

/// How a tool's result is bounded.
#[derive(Debug, Clone, Copy)]
pub enum Limit {
    /// The output budget: fields to their cap, the whole to these bytes (the
    /// server's cap when `None`).
    Bytes(Option<u64>),
    /// By the tool itself where the result is built (the feedback report's
    /// item and byte caps).
    Own,
}

/// The structured content of a typed result.
pub fn structured(result: &impl Serialize, limit: Limit) -> ToolOutcome {
    let mut value = serde_json::to_value(result).map_err(|e| {
        ToolError::new(
            ErrorCode::InternalError,
            format!("could not encode the result: {e}"),
        )
    })?;
    if let Limit::Bytes(limit) = limit {
        budget::bound(&mut value, limit).map_err(|e| {
            ToolError::new(
                ErrorCode::ResourceLimit,
                format!(
                    "the edit is too large to return whole: the result is {} bytes with every other field cut, past its cap of {} (edit text is never cut); pass a larger max_result_bytes",
                    e.bytes, e.limit
                ),
            )
            .with_data(serde_json::json!({ "reason": "editTooLarge", "bytes": e.bytes, "limit": e.limit }))
        })?;
    }
    Ok(value)
}

/// A structured tool error: `{code, message, data?}`, the JSON in
/// `content[0].text` of every `isError: true` result, which carries no
/// `structuredContent` (its schema: [`tool_error_schema`]).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ToolError {
    pub code: ErrorCode,
    /// What went wrong and what to do.
    pub message: String,
    /// Facts for programs (`reason`, `path`, `expected`, …), by error.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Map<String, Value>>")]
    pub data: Option<Value>,
}

/// The schema every tool error's text satisfies. MCP has no place for it in
/// the catalog (a tool's `outputSchema` describes its successes, and hosts
/// check any `structuredContent` against it); the tests validate every error
/// they see against it.
pub fn tool_error_schema() -> Value {
    results::output_schema::<ToolError>()
}

impl ToolError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Facts for programs. Their keys are snake_case, as every result's
    /// fields are (`line_text` in a result and in a position error's data):
    /// one casing an agent can rely on, checked wherever a debug build (every
    /// test) makes an error.
    pub fn with_data(mut self, data: Value) -> Self {
        debug_assert!(
            snake_keys(&data),
            "error data keys must be snake_case: {data}"
        );
        self.data = Some(data);
        self
    }
}

/// Whether every top-level key of `data` is snake_case: a lowercase ASCII
/// letter first, then lowercase letters, digits and `_`.
fn snake_keys(data: &Value) -> bool {
    data.as_object().is_none_or(|map| {
        map.keys().all(|key| {
            key.starts_with(|c: char| c.is_ascii_lowercase())
                && key
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
    })
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

/// The tool error taxonomy: one code per kind of failure, what an agent
/// matches on (`data` carries the particulars).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ErrorCode {
    InvalidInput,
    InvalidParams,
    ContentModified,
    RequestCancelled,
    WorkerExited,
    WorkerCrashed,
    SyncBarrierIncomplete,
    SaveTargetNotModule,
    SaveUnsupportedSetup,
    RuntimeSetup,
    /// A configured bound was reached (`data.kind` says which, `data.env`
    /// names the variable that raises it).
    ResourceLimit,
    InternalError,
}

impl ErrorCode {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InvalidInput => "invalidInput",
            Self::InvalidParams => "invalidParams",
            Self::ContentModified => "contentModified",
            Self::RequestCancelled => "requestCancelled",
            Self::WorkerExited => "workerExited",
            Self::WorkerCrashed => "workerCrashed",
            Self::SyncBarrierIncomplete => "syncBarrierIncomplete",
            Self::SaveTargetNotModule => "saveTargetNotModule",
            Self::SaveUnsupportedSetup => "saveUnsupportedSetup",
            Self::RuntimeSetup => "runtimeSetup",
            Self::ResourceLimit => "resourceLimit",
            Self::InternalError => "internalError",
        }
    }
}

/// One schema violation: where (a JSON pointer into `arguments`) and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub pointer: String,
    pub reason: String,
}

/// Why `parse` refused a call.
#[derive(Debug, Clone, PartialEq)]
pub enum ParseError {
    /// No tool of that name: a JSON-RPC `-32602`.
    UnknownTool(String),
    /// The arguments break the tool's schema: a tool error `invalidInput`.
    Invalid(Vec<Violation>),
}

impl ParseError {
    pub(crate) fn from_serde(err: serde_json::Error) -> Self {
        // The schema accepted the payload, so this is a disagreement between the
        // schema and the Rust type; report it rather than hide it.
        ParseError::Invalid(vec![Violation {
            pointer: String::new(),
            reason: err.to_string(),
        }])
    }

    /// The `invalidInput` tool error for an `Invalid` parse.
    pub fn into_tool_error(self, tool: &str) -> ToolError {
        match self {
            ParseError::UnknownTool(name) => {
                ToolError::new(ErrorCode::InvalidInput, format!("unknown tool `{name}`"))
            }
            ParseError::Invalid(violations) => {
                let summary = violations
                    .iter()
                    .map(|v| {
                        if v.pointer.is_empty() {
                            v.reason.clone()
                        } else {
                            format!("{}: {}", v.pointer, v.reason)
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("; ");
                ToolError::new(
                    ErrorCode::InvalidInput,
                    format!("invalid arguments for `{tool}`: {summary}"),
                )
                .with_data(json!({ "violations": violations }))
            }
        }
    }
}

/// Integer arguments as JSON Schema reads them: `2.0` is the integer 2 (the schema
/// accepts it, and Python clients send whole floats that way), so serde must
/// accept it too. The generator points every `integer`/`natural` field here.
pub mod lenient {
    use std::fmt;

    use serde::Deserializer;
    use serde::de::{self, Visitor};

    struct Whole<T>(std::marker::PhantomData<T>);

    macro_rules! whole_visitor {
        ($t:ty, $what:literal) => {
            impl<'de> Visitor<'de> for Whole<$t> {
                type Value = $t;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str($what)
                }
                fn visit_u64<E: de::Error>(self, v: u64) -> Result<$t, E> {
                    <$t>::try_from(v)
                        .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
                }
                fn visit_i64<E: de::Error>(self, v: i64) -> Result<$t, E> {
                    <$t>::try_from(v)
                        .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
                }
                fn visit_f64<E: de::Error>(self, v: f64) -> Result<$t, E> {
                    // Exactly integral and inside the range of the target type.
                    if v.fract() == 0.0 && v >= <$t>::MIN as f64 && v < <$t>::MAX as f64 {
                        Ok(v as $t)
                    } else {
                        Err(E::invalid_value(de::Unexpected::Float(v), &self))
                    }
                }
            }
        };
    }
    whole_visitor!(u64, "a non-negative integer");
    whole_visitor!(i64, "an integer");

    pub fn natural<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        d.deserialize_u64(Whole::<u64>(std::marker::PhantomData))
    }

    pub fn integer<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        d.deserialize_i64(Whole::<i64>(std::marker::PhantomData))
    }

    /// For optional fields: absence is handled by `#[serde(default)]`, and the
    /// schema has already refused `null`.
    pub fn opt_natural<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        natural(d).map(Some)
    }

    pub fn opt_integer<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        integer(d).map(Some)
    }

    macro_rules! whole_vec {
        ($name:ident, $t:ty, $one:ident) => {
            pub fn $name<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<$t>, D::Error> {
                struct Item($t);
                impl<'de> serde::Deserialize<'de> for Item {
                    fn deserialize<D2: Deserializer<'de>>(d: D2) -> Result<Self, D2::Error> {
                        $one(d).map(Item)
                    }
                }
                let items: Vec<Item> = serde::Deserialize::deserialize(d)?;
                Ok(items.into_iter().map(|i| i.0).collect())
            }
        };
    }
    whole_vec!(vec_natural, u64, natural);
    whole_vec!(vec_integer, i64, integer);
}

mod rendered {
    include!(concat!(env!("OUT_DIR"), "/catalog.rs"));
}

/// The `tools` array of a tools/list result: the table's catalog with each
/// tool's `outputSchema` (derived from its result type) after its
/// `inputSchema`. Rendered at build time (`build.rs`) as one literal, so a
/// start derives, parses, serializes and copies nothing: a tools/list answer
/// is this text between its head and tail, joined in the answer's line.
pub fn catalog_json() -> &'static str {
    rendered::CATALOG
}

/// The `tools` array of the tools/list result of `tools`, in table order.
pub(crate) fn catalog_of(tools: impl IntoIterator<Item = Tool>) -> String {
    let entries: Vec<&str> = tools
        .into_iter()
        .map(|tool| {
            let (start, end) = rendered::CATALOG_ENTRIES[tool.index()];
            &rendered::CATALOG[start..end]
        })
        .collect();
    let mut catalog = String::with_capacity(entries.iter().map(|e| e.len() + 1).sum::<usize>() + 2);
    catalog.push('[');
    for (i, entry) in entries.into_iter().enumerate() {
        if i > 0 {
            catalog.push(',');
        }
        catalog.push_str(entry);
    }
    catalog.push(']');
    catalog
}

/// The known tool whose name is nearest to `name`, if one is near enough to be
/// a likely typo (`lean_synk`, `lean-goals`) or the name without its prefix
/// (`hover`). Case and `-`/`_` do not count.
pub fn nearest_tool(name: &str) -> Option<Tool> {
    nearest_tool_among(name, Tool::ALL)
}

/// [`nearest_tool`] among `tools` only (a server's tool set).
fn nearest_tool_among(name: &str, tools: impl IntoIterator<Item = Tool>) -> Option<Tool> {
    let wanted = name.to_ascii_lowercase().replace('-', "_");
    tools
        .into_iter()
        .map(|tool| {
            let full = tool.name();
            let bare = full.split_once('_').map_or(full, |(_, rest)| rest);
            (
                edit_distance(&wanted, full).min(edit_distance(&wanted, bare)),
                tool,
            )
        })
        .filter(|&(distance, tool)| distance <= 1 + tool.name().len() / 4)
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, tool)| tool)
}

/// Levenshtein distance over bytes (tool names are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &y) in b.iter().enumerate() {
            let next = (diagonal + usize::from(x != y))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::{ErrorCode, Tool, catalog_json, catalog_of, nearest_tool, snake_keys};

    #[test]
    fn the_rendered_catalog_is_its_entries_joined() {
        // Every tool's array is the one build-time literal; a subset's is
        // joined from that literal's entry slices: both agree.
        assert_eq!(catalog_of(Tool::ALL), catalog_json());
        let entries: Vec<serde_json::Value> =
            serde_json::from_str(catalog_json()).expect("the catalog is JSON");
        assert_eq!(entries.len(), Tool::ALL.len());
        for (entry, tool) in entries.iter().zip(Tool::ALL) {
            assert_eq!(entry["name"], tool.name());
            let one: serde_json::Value =
                serde_json::from_str(&catalog_of([tool])).expect("a subset's catalog is JSON");
            assert_eq!(one, serde_json::Value::Array(vec![entry.clone()]));
        }
    }

    #[test]
    fn error_data_keys_are_snake_case() {
        use serde_json::json;
        for (data, snake) in [
            (json!({"lsp_method": "x", "line": 1, "b2": 0}), true),
            (json!({"documentProgress": {}}), false),
            (json!({"Path": "a"}), false),
            (json!({"my-key": 1}), false),
            (json!({"outer": {"innerCamel": 1}}), true),
            (json!([1, 2]), true),
        ] {
            assert_eq!(snake_keys(&data), snake, "{data}");
        }
    }

    #[test]
    fn error_codes_serialize_as_their_names() {
        use ErrorCode::*;
        for code in [
            InvalidInput,
            InvalidParams,
            ContentModified,
            RequestCancelled,
            WorkerExited,
            WorkerCrashed,
            SyncBarrierIncomplete,
            SaveTargetNotModule,
            SaveUnsupportedSetup,
            RuntimeSetup,
            ResourceLimit,
            InternalError,
        ] {
            assert_eq!(serde_json::to_value(code).unwrap(), code.as_str());
        }
    }

    #[test]
    fn nearest_tool_suggests_typos_and_bare_names_only() {
        for (typed, expected) in [
            ("lean_synk", Tool::LeanSync),
            ("lean-goals", Tool::LeanGoals),
            ("Lean_Hover", Tool::LeanHover),
            ("hover", Tool::LeanHover),
            ("run_at", Tool::LeanRunAt),
            ("lean_run_with_linaer", Tool::LeanRunWithLinear),
            ("beam_versions", Tool::BeamVersion),
        ] {
            assert_eq!(nearest_tool(typed), Some(expected), "{typed}");
        }
        for unrelated in ["", "x", "delete_everything", "textDocument/hover"] {
            assert_eq!(nearest_tool(unrelated), None, "{unrelated}");
        }
    }
}
