//! Results of the inspection tools: hover, signature help, navigation,
//! symbols, goals, todo and code-action resolution. Lean's own answers pass
//! through under one key named for what they are (LSP shapes, with a
//! workspace-relative `path`/`targetPath` next to each `uri`/`targetUri`).

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::{DeclarationAt, DocHead, Goal, Position, Range, WorkspaceEcho};

/// `lean_hover`: the type and docstring Lean shows at a position.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct HoverResult {
    #[serde(flatten)]
    pub head: DocHead,
    /// Lean's `textDocument/hover` answer: an LSP `Hover`; left out where
    /// Lean has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::passthrough::object")]
    pub hover: Option<Value>,
}

/// `lean_signature_help`: the signature of the function applied at a position.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SignatureHelpResult {
    #[serde(flatten)]
    pub head: DocHead,
    /// Lean's `textDocument/signatureHelp` answer: an LSP `SignatureHelp`;
    /// left out where Lean has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::passthrough::object")]
    pub signature_help: Option<Value>,
}

/// `lean_definition` and `lean_references`: where the constant at a position
/// is declared, or used.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct LocationsResult {
    #[serde(flatten)]
    pub head: DocHead,
    /// LSP locations or location links (never of the server's own shadow
    /// documents); left out where Lean has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::passthrough::locations")]
    pub locations: Option<Value>,
}

/// `lean_document_symbols`: the nested symbols of a version.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct DocumentSymbolsResult {
    #[serde(flatten)]
    pub head: DocHead,
    /// LSP document symbols, nested by `children`, with `kind` named
    /// (`"namespace"`, `"method"`, …) rather than numbered. With `signatures`,
    /// each also has `declaration_kind` (the keyword: `"def"`, `"theorem"`,
    /// `"section"`, …) and each declaration its type `signature` as Lean
    /// prints it. Left out where Lean has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::passthrough::objects")]
    pub symbols: Option<Value>,
}

/// `lean_workspace_symbols`: the symbols matching a query, across the
/// workspace (no document, no version).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct WorkspaceSymbolsResult {
    pub workspace: WorkspaceEcho,
    /// LSP symbol information, with `kind` named; left out where Lean has
    /// none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::passthrough::objects")]
    pub symbols: Option<Value>,
}

/// Which side of the tactic `lean_goals` was asked for (its `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GoalsSide {
    Before,
    After,
}

/// Where goals came from: Lean's interactive goals (RPC), its rendered
/// `plainGoal` (where RPC is unavailable), or the type expected at a term.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum GoalSource {
    Rpc,
    PlainGoal,
    PlainTermGoal,
    /// Lean's "unsolved goals" at the end of a batch candidate's declaration
    /// (the candidate ended inside a nested block, `case x => …`).
    UnsolvedGoals,
}

/// `lean_goals`: the goals before or after the tactic at a position.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct GoalsResult {
    #[serde(flatten)]
    pub head: DocHead,
    /// The declaration named instead of a position, and where it resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declaration: Option<DeclarationAt>,
    pub mode: GoalsSide,
    /// The position whose goals answer `mode` (the tactic's start or end).
    pub position: Position,
    pub source: GoalSource,
    pub goals: Vec<Goal>,
}

/// `lean_term_goal`: the type expected at a position inside a term, and
/// its local context.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TermGoalResult {
    #[serde(flatten)]
    pub head: DocHead,
    /// The declaration named instead of a position, and where it resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declaration: Option<DeclarationAt>,
    /// The expected type as a goal; left out where Lean has no term.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goal: Option<Goal>,
    /// The term Lean found at the position.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<Range>,
}

/// What a todo item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoItemKind {
    Sorry,
    Hole,
    Diagnostic,
    CodeAction,
    IncompleteProof,
}

impl TodoItemKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Sorry => "sorry",
            Self::Hole => "hole",
            Self::Diagnostic => "diagnostic",
            Self::CodeAction => "code_action",
            Self::IncompleteProof => "incomplete_proof",
        }
    }
}

/// One piece of unfinished work, with where to try something and what.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TodoItem {
    pub kind: TodoItemKind,
    /// For `sorry` and hole items, the text a probe at `probe` replaces (the
    /// whole `exact sorry`): write a closing text over it.
    pub range: Range,
    /// The diagnostic's message, or the code action's title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// For diagnostic items: `"error"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub severity: Option<super::Severity>,
    /// For diagnostic items: `error` or `unsolved_goals`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<super::DiagnosticCategory>,
    /// For diagnostic items, Lean's diagnostic code, when it gave one. With
    /// `range`, `message`, `severity` and `full_range` the item carries the
    /// whole diagnostic, each field once.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::passthrough::diagnostic_code")]
    pub code: Option<Value>,
    /// For diagnostic items, the whole span the diagnostic is about, when it
    /// differs from `range`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_range: Option<Range>,
    /// The LSP code action, for `lean_code_action_resolve`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::passthrough::object")]
    pub code_action: Option<Value>,
    /// A probe text to try at `probe` (`exact?`, `by exact?`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_at_text: Option<String>,
    /// The goals Lean shows there, rendered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proof_state: Option<Vec<String>>,
    /// Where to probe, as the arguments `lean_run_at` and `lean_run_batch`
    /// take: add `workspace` and `text`/`texts`.
    pub probe: Probe,
}

/// A probe place, spelled as the probe tools' arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Probe {
    pub path: String,
    pub version: u64,
    pub line: u32,
    pub character: u32,
}

/// `lean_todo`: the unfinished work in a range, in document order.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TodoResult {
    #[serde(flatten)]
    pub head: DocHead,
    /// The declaration named instead of a position, and where it resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declaration: Option<DeclarationAt>,
    pub range: Range,
    pub items: Vec<TodoItem>,
}

/// `lean_code_action_resolve`: the resolved action, not applied.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct CodeActionResult {
    #[serde(flatten)]
    pub head: DocHead,
    /// The LSP code action with its `edit`, to apply yourself.
    #[schemars(schema_with = "super::passthrough::object")]
    pub code_action: Value,
    /// Always false: the server never applies edits.
    pub applied: bool,
    pub note: String,
}
