//! Results that carry text edits for the client to apply: `lean_completions`
//! and `lean_handle_edit`. The server never applies them.

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

/// What a handle edit takes the place of in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Placeholder {
    Sorry,
    Hole,
}

/// `lean_handle_edit`: the edit that writes a handle's chain of steps into
/// the version it was cut from.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct HandleEditResult {
    #[serde(flatten)]
    pub head: DocHead,
    /// Apply it to this version's text, then `lean_sync`.
    pub edit: TextEdit,
    /// The `sorry` or hole the edit replaces; absent when it inserts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaces: Option<Placeholder>,
}
