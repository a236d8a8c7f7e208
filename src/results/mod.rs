//! What the tools answer: one `Serialize + JsonSchema` struct per tool result
//! (named by `result = "…"` in `operations.toml`) and the shapes they share.
//! The catalog's `outputSchema` of every tool is derived from these types
//! ([`output_schema`]), so what a tool returns and what it advertises cannot
//! drift apart; the tests validate every result they see against it.
//!
//! This module is a leaf: plain data, no behaviour beyond serialization. The
//! operations (`ops`) build the results from what the broker returns; the
//! broker builds only the shared vocabulary it also puts in its logs, errors
//! and statistics (diagnostic counts and items, readiness, document progress,
//! goals, runtime statistics).
//!
//! # Key casing, one rule per struct
//!
//! Field names are written in Rust as snake_case; each struct states its wire
//! rule with `#[serde(rename_all = …)]` (or none, when the wire is snake_case):
//!
//! - **snake_case**, the rule of the tool results (`save_ready`, `blocking_error_count`, `range_end_line`,
//!   `proof_state`, `next_handle`, `source_hash`, `invalidated_handles`, …):
//!   every top-level result except the two below, and the nested shapes
//!   [`DocumentProgress`], [`Readiness`], the run messages, the todo items,
//!   the feedback metadata.
//! - **camelCase**, the rule of shapes that follow LSP or Lean (`fullRange`,
//!   `goalPrefix`, `userName`) and of the debug statistics (`uptimeMs`,
//!   `serverCommand`, `byEra`): [`DiagnosticItem`], [`Goal`], `StatsResult`
//!   and everything under it, the feedback's collected context, and
//!   `CloseResult` (`wasOpen`, its one multi-word key).
//!
//! Every key kept the name it had before the results were typed; no key was
//! renamed.

mod batch;
mod documents;
mod edits;
mod feedback;
mod inspect;
mod process;
mod run_code;
mod schema;
mod search;
mod speculate;
mod suggest;
mod truncated;
mod verify;

pub use batch::*;
pub use documents::*;
pub use edits::*;
pub use feedback::*;
pub use inspect::*;
pub use process::*;
pub use run_code::*;
pub use schema::{field_schema, output_schema};
pub use search::*;
pub use speculate::*;
pub use suggest::*;
pub use truncated::*;
pub use verify::*;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The canonical workspace descriptor a result echoes (`{"root": …}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceEcho {
    /// The canonical absolute root: pass it back as `workspace.root`.
    pub root: String,
}

/// A position in a document: 0-based line, UTF-16 character.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Position {
    pub line: u32,
    pub character: u32,
}

impl Position {
    pub fn new((line, character): (u32, u32)) -> Position {
        Position { line, character }
    }
}

/// The declaration a call named instead of a position, and the place it
/// resolved to in the pinned version (its first `sorry` or hole, or the
/// start or end of its proof; for `lean_todo`, the declaration's start).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct DeclarationAt {
    /// Its full name.
    pub name: String,
    /// The resolved place: 0-based line, UTF-16 character.
    pub line: u32,
    pub character: u32,
}

/// A range of a document (`end` exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Range {
    pub start: Position,
    pub end: Position,
}

impl Range {
    pub fn new(start: (u32, u32), end: (u32, u32)) -> Range {
        Range {
            start: Position::new(start),
            end: Position::new(end),
        }
    }
}

/// What every answer about a pinned document version names first.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct DocHead {
    pub workspace: WorkspaceEcho,
    /// The document, as the caller named it (relative to the root when inside it).
    pub path: String,
    /// The version the answer is about.
    pub version: u64,
    /// The addressed line, for answers at a position: an off-by-one shows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_text: Option<String>,
    /// Present (true) when the file changed on disk since this version was
    /// read from it: sync before trusting the answer.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disk_changed: bool,
}

/// A diagnostic severity by name (`unknown`: a severity outside LSP's four).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Information,
    Hint,
    Unknown,
}

/// What a diagnostic is, read from Lean's severity, tags and codes; where
/// Lean gives no mark (`sorry`, `suggestion`, a linter without a tag), from
/// its fixed wording.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosticCategory {
    /// An error other than unsolved goals.
    Error,
    /// Lean's "unsolved goals" error (by its tag): the goals follow the
    /// first line.
    UnsolvedGoals,
    /// The warning "declaration uses `sorry`".
    Sorry,
    /// A linter's warning (unused variable, deprecation, …): noise to a
    /// proof.
    Linter,
    /// Any other warning.
    Warning,
    /// A "Try this": its edits are in `suggestions`.
    Suggestion,
    /// Any other information (`#check`, `#eval`, traces) or hint.
    Info,
}

/// The complete counts of a version's diagnostics, by severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DiagnosticCounts {
    pub error: u64,
    pub warning: u64,
    pub information: u64,
    pub hint: u64,
    pub unknown: u64,
    pub total: u64,
}

/// One diagnostic as agents see it: the LSP fields that matter, with the
/// severity named.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosticItem {
    /// Lean's range of the message.
    pub range: Range,
    pub severity: Severity,
    pub category: DiagnosticCategory,
    pub message: String,
    /// The whole span the message is about, when it differs from `range`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_range: Option<Range>,
    /// Lean's diagnostic code, when it gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "passthrough::diagnostic_code")]
    pub code: Option<Value>,
    /// For a `suggestion`, each "Try this" as an edit of `range` (where
    /// Lean reports it; `show_term` reports at its keyword, while its code
    /// action replaces the whole tactic).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<TextEdit>,
}

/// Why a version is or is not save-ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ReadinessReason {
    /// No blocking evidence.
    Ok,
    /// Error diagnostics.
    Errors,
    /// Lean stopped processing the file.
    FatalError,
}

impl ReadinessReason {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Errors => "errors",
            Self::FatalError => "fatalError",
        }
    }
}

/// Save readiness of one elaborated version. `blocking_error_count` counts
/// save-blocking evidence, which can include a message that has no
/// diagnostic, so it may differ from `diagnostics.counts.error`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Readiness {
    pub save_ready: bool,
    pub reason: ReadinessReason,
    pub blocking_error_count: u64,
    pub blocking_diagnostics: Vec<DiagnosticItem>,
    pub blocking_messages: Vec<String>,
}

/// How far Lean got with a version: the latest observation when the result
/// was built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct DocumentProgress {
    /// `$/lean/fileProgress` notifications received for this version.
    pub updates: u64,
    /// Lean reported no remaining work.
    pub done: bool,
    /// The first line still being processed, or the last line once done.
    pub range_end_line: u32,
}

/// One proof goal as Lean prints it; its parts only on request
/// (`structured_goals`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Goal {
    /// The goal as Lean prints it (case, hypotheses, target).
    pub pretty: String,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub parts: Option<GoalParts>,
}

/// A goal's parts (`structured_goals`): its hypotheses and its target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalParts {
    /// What Lean prints before the target (`⊢ `).
    pub goal_prefix: String,
    pub target: String,
    pub hyps: Vec<Hypothesis>,
    /// The case name (`succ`), when the goal has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_name: Option<String>,
}

impl Goal {
    /// The goal's case name, when it has one.
    pub fn user_name(&self) -> Option<&str> {
        self.parts.as_ref()?.user_name.as_deref()
    }

    /// Its hypotheses (none known without its parts).
    pub fn hyps(&self) -> &[Hypothesis] {
        self.parts.as_ref().map_or(&[], |p| &p.hyps)
    }
}

/// Which form of goals a result carries: Lean's text, or also its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoalForm {
    Pretty,
    Structured,
}

impl GoalForm {
    /// The form a call's `structured_goals` asks for (unset: pretty).
    pub fn of(structured: Option<bool>) -> GoalForm {
        if structured == Some(true) {
            GoalForm::Structured
        } else {
            GoalForm::Pretty
        }
    }

    /// `goals` in this form: their parts dropped unless asked for.
    pub fn apply<'a>(self, goals: impl IntoIterator<Item = &'a mut Goal>) {
        if self == GoalForm::Pretty {
            goals.into_iter().for_each(|g| g.parts = None);
        }
    }
}

/// One hypothesis line: the names it binds, their type, and a `let` value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Hypothesis {
    pub names: Vec<String>,
    #[serde(rename = "type")]
    pub ty: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_schemas_are_objects_without_dialect_title_or_integer_formats() {
        let schema = output_schema::<Readiness>();
        assert_eq!(schema["type"], "object");
        assert!(schema.get("$schema").is_none(), "{schema}");
        assert!(schema.get("title").is_none(), "{schema}");
        assert!(!schema.to_string().contains("uint"), "{schema}");
        assert_eq!(
            schema["properties"]["blocking_error_count"]["minimum"], 0,
            "{schema}"
        );
    }

    #[test]
    fn optional_keys_are_the_ones_left_out_when_empty() {
        let schema = output_schema::<DocHead>();
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(required, ["workspace", "path", "version"], "{schema}");
    }
}

/// Output schemas of the values passed through from Lean (LSP shapes) or
/// built as JSON, written in the portable subset: each says what the value
/// is without re-stating LSP, and none is keyword-less (Inspector 2.12 warns
/// on a schema that accepts anything) or an object without `properties`
/// (Gemini CLI's schema path refuses it).
pub mod passthrough {
    use schemars::{Schema, SchemaGenerator, json_schema};

    /// An LSP object, verbatim (`Hover`, `SignatureHelp`, `CodeAction`).
    pub fn object(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "object", "properties": {}})
    }

    /// A list of LSP objects (`DocumentSymbol[]`, `SymbolInformation[]`).
    pub fn objects(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "array", "items": {"type": "object", "properties": {}}})
    }

    /// LSP locations: `Location[]`, `LocationLink[]` or one `Location`.
    pub fn locations(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"anyOf": [
            {"type": "array", "items": {"type": "object", "properties": {}}},
            {"type": "object", "properties": {}}
        ]})
    }

    /// An LSP diagnostic code: `integer | string`.
    pub fn diagnostic_code(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
    }

    /// This server's name and version ([`crate::identity::server_info`]).
    pub fn server_info(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "version": {"type": "string"}},
            "required": ["name", "version"]
        })
    }

    /// Lean's answer, or `None` where it answered `null` (the key is left
    /// out rather than sent as `null`).
    pub fn present(value: serde_json::Value) -> Option<serde_json::Value> {
        (!value.is_null()).then_some(value)
    }
}
