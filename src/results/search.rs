//! `lean_search`'s result.

use schemars::JsonSchema;
use serde::Serialize;

use super::{Range, WorkspaceEcho};

/// `lean_search`: the declarations that answer a query, best first.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SearchResult {
    pub workspace: WorkspaceEcho,
    /// At most `limit`, best first.
    pub hits: Vec<SearchHit>,
    /// How many declarations matched in all.
    pub matched: usize,
    /// How many matched beyond `hits` (raise `limit` to see them).
    pub more: usize,
    pub index: SearchIndex,
}

/// One declaration found.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SearchHit {
    /// Its full name (namespaces included).
    pub name: String,
    /// Its keyword: `theorem`, `lemma`, `def`, `abbrev`, `instance`,
    /// `structure`, `class`, `inductive`, `constructor`, `axiom`, `opaque`.
    pub kind: String,
    /// Binders and type after the name, as written in the source.
    pub statement: String,
    /// The docstring's first paragraph.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,
    pub module: String,
    /// Relative to the workspace root when inside it (packages:
    /// `.lake/packages/<name>/…`), else absolute.
    pub path: String,
    /// The declaration's command, docstring and attributes included
    /// (0-based lines, UTF-16 characters).
    pub range: Range,
    /// `workspace`, `package` or `toolchain`.
    pub origin: String,
    /// How the name matched a name query: `exact`, `suffix`, `prefix`,
    /// `substring`, `subsequence`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_match: Option<String>,
}

/// What the index held when it answered.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SearchIndex {
    pub files: usize,
    pub declarations: usize,
    /// The memory the index holds, estimated.
    pub bytes: usize,
    /// Files read again for this query (new or changed since the last).
    pub refreshed_files: usize,
    /// False when a bound left files out: `left_out` says how many and
    /// which variable raises the bound.
    pub complete: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_out: Option<String>,
}
