//! The result of `lean_run_code`.

use schemars::JsonSchema;
use serde::Serialize;

use super::{Range, Severity, WorkspaceEcho};

/// One message Lean gave about a snippet; `range` counts from the snippet's
/// first character (line 0 is its first line).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SnippetMessage {
    pub severity: Severity,
    pub category: super::DiagnosticCategory,
    pub text: String,
    pub range: Range,
}

/// The snippet's header did not import: nothing after it ran.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct HeaderError {
    /// The module that failed, when Lean's report names one of the header's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub import: Option<String>,
    pub message: String,
}

/// What Lean said about a snippet.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RunCodeResult {
    pub workspace: WorkspaceEcho,
    /// No error, the header imported, and it finished within `timeout_ms`.
    pub success: bool,
    /// A declaration of the snippet uses `sorry`.
    pub sorry: bool,
    pub messages: Vec<SnippetMessage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_error: Option<HeaderError>,
    /// Present when a budget ran out (then `success` is false): for
    /// `timeout`, `messages` holds what Lean had reported by then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exhausted: Option<super::Exhausted>,
    /// Present when the memory budget (`LEAN_BEAM_MAX_LEAN_MEMORY`) made
    /// the snippet wait for a Lean worker or take another header's: what it did, with
    /// the figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
}
