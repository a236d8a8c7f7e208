//! The model of `operations.toml` and the checks run when it is read.
//!
//! Serde rejects unknown keys and wrong value types (with the TOML position);
//! `check` adds the semantic rules serde cannot express. Every error names the
//! table entry it is about, because the build stops on it and the message is all
//! a developer sees.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    /// The sentence appended to the description of every `speculative` tool.
    #[serde(default)]
    pub speculative_note: String,
    /// Arguments MCP hosts add to every call on their own (e.g. Gemini CLI's
    /// `wait_for_previous`): accepted by every tool and dropped before
    /// validation; no tool may declare one.
    #[serde(default)]
    pub host_injected: Vec<String>,
    pub progress: BTreeMap<String, ProgressClass>,
    #[serde(default)]
    pub shape: BTreeMap<String, Shape>,
    /// Named tool sets for `--tools` (see `crate::profiles`).
    #[serde(default)]
    pub profile: BTreeMap<String, crate::profiles::Profile>,
    pub tool: Vec<Tool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgressClass {
    pub status_notice: StatusNotice,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StatusNotice {
    Never,
    AfterDelay,
    OnSetupOrDelay,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shape {
    pub doc: String,
    pub fields: Vec<Arg>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    pub name: String,
    pub description: String,
    /// The Rust type of the tool's structured result (in `crate::results`);
    /// its schema is the tool's `outputSchema`. Tools may share one.
    pub result: String,
    pub progress: String,
    #[serde(default)]
    pub workspace_bound: bool,
    #[serde(default)]
    pub snapshot_bound: bool,
    #[serde(default = "yes")]
    pub cancellable: bool,
    #[serde(default)]
    pub fence: bool,
    #[serde(default)]
    pub read_only: bool,
    #[serde(default)]
    pub destructive: Option<bool>,
    #[serde(default)]
    pub idempotent: bool,
    /// Runs caller-supplied text in a shadow document: the description gets the
    /// table's `speculative_note` (the IO boundary of the read-only hint).
    #[serde(default)]
    pub speculative: bool,
    /// Its result has bounds of its own (the feedback report: items and bytes
    /// capped where it is built), so the generic output budget (field and
    /// result caps) is not applied to it.
    #[serde(default)]
    pub own_bounds: bool,
    /// The profiles (`[profile.<name>]`) this tool belongs to.
    #[serde(default)]
    pub profiles: Vec<String>,
    pub args: Vec<Arg>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arg {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
    /// Omitted when the name says it all (the catalog is in every agent's
    /// context); a shape-typed argument's fields carry their own docs.
    #[serde(default)]
    pub doc: Option<String>,
    #[serde(default)]
    pub required: bool,
    #[serde(default, rename = "enum")]
    pub enum_values: Option<Vec<String>>,
    #[serde(default)]
    pub items: Option<String>,
    #[serde(default)]
    pub default: Option<toml::Value>,
    #[serde(default)]
    pub minimum: Option<i64>,
    #[serde(default)]
    pub required_keys: Option<Vec<String>>,
    /// The name of the generated Rust enum (for `enum` arguments).
    #[serde(default)]
    pub rust_enum: Option<String>,
}

/// The resolved type of an argument, after the table has been checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgType {
    String,
    Integer,
    Natural,
    Boolean,
    Object,
    Shape(String),
    Array(Box<ArgType>),
}

pub const SCALARS: &[&str] = &["string", "integer", "natural", "boolean", "object"];

#[derive(Debug)]
pub struct TableError(pub String);

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TableError {}

pub fn read(source: &str) -> Result<Table, TableError> {
    let table: Table = toml::from_str(source).map_err(|e| {
        let entry = e
            .span()
            .and_then(|span| entry_at(source, span.start))
            .map(|entry| format!(" {entry}:"))
            .unwrap_or_default();
        TableError(format!("operations.toml:{entry} {e}"))
    })?;
    check(&table)?;
    Ok(table)
}

/// The table entry (`tool `name``, `shape `Name``, `progress class `name``) whose
/// text contains byte `offset`, so that a serde error names it as the semantic
/// checks do.
fn entry_at(source: &str, offset: usize) -> Option<String> {
    let mut tools_seen = 0usize;
    let mut current = None;
    let mut start = 0usize;
    for line in source.split_inclusive('\n') {
        if start > offset {
            break;
        }
        start += line.len();
        let header = line.trim();
        if header.starts_with("[[tool]]") {
            tools_seen += 1;
            current = Some(Header::Tool(tools_seen - 1));
        } else if let Some(rest) = header.strip_prefix("[shape.") {
            current = Some(Header::Named(
                "shape",
                rest.trim_end_matches(']').to_string(),
            ));
        } else if let Some(rest) = header.strip_prefix("[profile.") {
            current = Some(Header::Named(
                "profile",
                rest.trim_end_matches(']').to_string(),
            ));
        } else if let Some(rest) = header.strip_prefix("[progress.") {
            current = Some(Header::Named(
                "progress class",
                rest.trim_end_matches(']').to_string(),
            ));
        } else if header
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .is_some_and(|h| {
                !h.is_empty()
                    && h.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_.-[]".contains(c))
            })
        {
            // Some other table header.
            current = None;
        }
    }
    match current? {
        Header::Named(kind, name) => Some(format!("{kind} `{name}`")),
        Header::Tool(index) => {
            // The syntax is valid (serde failed on the data model), so a generic
            // parse finds the tool's name even when it follows the bad key.
            let generic: toml::Table = toml::from_str(source).ok()?;
            let name = generic.get("tool")?.as_array()?.get(index)?.get("name");
            Some(match name.and_then(toml::Value::as_str) {
                Some(name) => format!("tool `{name}`"),
                None => format!("tool #{}", index + 1),
            })
        }
    }
}

enum Header {
    Tool(usize),
    Named(&'static str, String),
}

pub(crate) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn is_type_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_alphanumeric())
}

fn check(table: &Table) -> Result<(), TableError> {
    let mut injected = BTreeSet::new();
    for name in &table.host_injected {
        if !injected.insert(name.as_str()) {
            return Err(TableError(format!(
                "operations.toml: host_injected: duplicate `{name}`"
            )));
        }
        if let Some(tool) = table
            .tool
            .iter()
            .find(|tool| tool.args.iter().any(|arg| &arg.name == name))
        {
            return Err(TableError(format!(
                "operations.toml: host_injected: tool `{}` declares `{name}`, which would be dropped before it reads it",
                tool.name
            )));
        }
    }
    let mut tools = BTreeSet::new();
    for (name, shape) in &table.shape {
        if !name.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
            return Err(TableError(format!(
                "operations.toml: shape `{name}`: shape names start with an upper-case letter"
            )));
        }
        check_args(table, &format!("shape `{name}`"), &shape.fields)?;
    }
    for tool in &table.tool {
        let entry = format!("tool `{}`", tool.name);
        if !is_identifier(&tool.name) {
            return Err(TableError(format!(
                "operations.toml: {entry}: a tool name is lower_snake_case ASCII"
            )));
        }
        if !tools.insert(tool.name.as_str()) {
            return Err(TableError(format!(
                "operations.toml: {entry}: duplicate tool"
            )));
        }
        if !is_type_name(&tool.result) {
            return Err(TableError(format!(
                "operations.toml: {entry}: `result` names a Rust type (UpperCamelCase ASCII), not `{}`",
                tool.result
            )));
        }
        if tool.description.trim().is_empty() {
            return Err(TableError(format!(
                "operations.toml: {entry}: empty description"
            )));
        }
        if !table.progress.contains_key(&tool.progress) {
            return Err(TableError(format!(
                "operations.toml: {entry}: unknown progress class `{}` (known: {})",
                tool.progress,
                table
                    .progress
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        if tool.read_only && (tool.destructive.is_some() || tool.idempotent) {
            return Err(TableError(format!(
                "operations.toml: {entry}: a read-only tool carries no destructive/idempotent hint"
            )));
        }
        if tool.speculative && table.speculative_note.trim().is_empty() {
            return Err(TableError(format!(
                "operations.toml: {entry}: `speculative` needs a top-level `speculative_note`"
            )));
        }
        if tool.fence && tool.cancellable {
            return Err(TableError(format!(
                "operations.toml: {entry}: a fence cannot be rolled back, so it must be `cancellable = false`"
            )));
        }
        let has_workspace = tool.args.iter().any(|a| a.name == "workspace");
        if has_workspace != tool.workspace_bound {
            return Err(TableError(format!(
                "operations.toml: {entry}: `workspace_bound` must match whether a `workspace` argument exists"
            )));
        }
        let has_version = tool.args.iter().any(|a| a.name == "version");
        if has_version != tool.snapshot_bound {
            return Err(TableError(format!(
                "operations.toml: {entry}: `snapshot_bound` must match whether a `version` argument exists"
            )));
        }
        check_args(table, &entry, &tool.args)?;
    }
    crate::profiles::check(table)
}

fn check_args(table: &Table, entry: &str, args: &[Arg]) -> Result<(), TableError> {
    let mut seen = BTreeSet::new();
    for arg in args {
        let at = format!("operations.toml: {entry}, argument `{}`", arg.name);
        if !is_identifier(&arg.name) {
            return Err(TableError(format!(
                "{at}: an argument name is lower_snake_case ASCII"
            )));
        }
        if !seen.insert(arg.name.as_str()) {
            return Err(TableError(format!("{at}: duplicate argument")));
        }
        let ty = resolve_type(table, arg).map_err(|why| TableError(format!("{at}: {why}")))?;
        if arg.doc.as_deref().is_some_and(|doc| doc.trim().is_empty()) {
            return Err(TableError(format!(
                "{at}: empty doc (omit `doc` when the name says it all)"
            )));
        }
        if let Some(values) = &arg.enum_values {
            let element = match &ty {
                ArgType::Array(inner) => inner.as_ref(),
                other => other,
            };
            if *element != ArgType::String {
                return Err(TableError(format!("{at}: `enum` applies to strings only")));
            }
            if values.is_empty() {
                return Err(TableError(format!("{at}: empty `enum`")));
            }
            let unique: BTreeSet<_> = values.iter().collect();
            if unique.len() != values.len() {
                return Err(TableError(format!("{at}: duplicate `enum` value")));
            }
            for value in values {
                if !value
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                    || value.is_empty()
                {
                    return Err(TableError(format!(
                        "{at}: enum value `{value}` must be lower_snake_case ASCII"
                    )));
                }
            }
        }
        if arg.rust_enum.is_some() && arg.enum_values.is_none() {
            return Err(TableError(format!(
                "{at}: `rust_enum` applies to `enum` arguments"
            )));
        }
        if arg.minimum.is_some() && !matches!(ty, ArgType::Integer) {
            return Err(TableError(format!(
                "{at}: `minimum` applies to `integer` (a `natural` already has minimum 0)"
            )));
        }
        if arg.required_keys.is_some() && ty != ArgType::Object {
            return Err(TableError(format!(
                "{at}: `required_keys` applies to `object`"
            )));
        }
        if let Some(default) = &arg.default {
            if arg.required {
                return Err(TableError(format!(
                    "{at}: a required argument has no default"
                )));
            }
            check_default(arg, &ty, default).map_err(|why| TableError(format!("{at}: {why}")))?;
        }
    }
    Ok(())
}

pub fn resolve_type(table: &Table, arg: &Arg) -> Result<ArgType, String> {
    if arg.ty == "array" {
        let items = arg.items.as_deref().ok_or("an `array` needs `items`")?;
        return Ok(ArgType::Array(Box::new(scalar_or_shape(table, items)?)));
    }
    if arg.items.is_some() {
        return Err("`items` applies to `array`".into());
    }
    scalar_or_shape(table, &arg.ty)
}

fn scalar_or_shape(table: &Table, name: &str) -> Result<ArgType, String> {
    Ok(match name {
        "string" => ArgType::String,
        "integer" => ArgType::Integer,
        "natural" => ArgType::Natural,
        "boolean" => ArgType::Boolean,
        "object" => ArgType::Object,
        "array" => return Err("nested arrays are not supported".into()),
        shape if table.shape.contains_key(shape) => ArgType::Shape(shape.to_string()),
        other => {
            return Err(format!(
                "unknown type `{other}` (known: {}, array, or a shape: {})",
                SCALARS.join(", "),
                table.shape.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    })
}

fn check_default(arg: &Arg, ty: &ArgType, default: &toml::Value) -> Result<(), String> {
    match (ty, default) {
        (ArgType::String, toml::Value::String(s)) => match &arg.enum_values {
            Some(values) if !values.contains(s) => Err(format!(
                "default `{s}` is not one of the enum values ({})",
                values.join(", ")
            )),
            _ => Ok(()),
        },
        (ArgType::Boolean, toml::Value::Boolean(_)) => Ok(()),
        (ArgType::Natural, toml::Value::Integer(n)) if *n >= 0 => Ok(()),
        (ArgType::Integer, toml::Value::Integer(n)) => match arg.minimum {
            Some(min) if *n < min => Err(format!("default {n} is below the minimum {min}")),
            _ => Ok(()),
        },
        _ => Err(format!(
            "default `{default}` does not fit type `{}`",
            arg.ty
        )),
    }
}
