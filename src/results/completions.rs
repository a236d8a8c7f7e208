//! The result of `lean_completions`.

use schemars::JsonSchema;
use serde::Serialize;

use super::{DocHead, Range};

/// An LSP text edit: replace `range` by `newText`. The server never applies it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TextEdit {
    pub range: Range,
    pub new_text: String,
}

/// One completion item.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct CompletionItem {
    pub label: String,
    /// The LSP completion kind by name (Lean marks theorems `event`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Its type, as Lean shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Inserts the item: replaces the identifier component before the position.
    pub edit: TextEdit,
}

/// `lean_completions`: what Lean offers at a position, in its order, capped.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct CompletionsResult {
    #[serde(flatten)]
    pub head: DocHead,
    pub items: Vec<CompletionItem>,
    /// How many items Lean offered before the `limit`.
    pub offered: u64,
    /// Typing more may bring items this list lacks.
    pub is_incomplete: bool,
}
