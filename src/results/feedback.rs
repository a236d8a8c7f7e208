//! The result of `beam_feedback_report`. Its strings are redacted as a whole
//! (home directory, user name, credentials), so these types also read back
//! what they wrote.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{RuntimeStats, Truncated, WorkspaceEcho};

/// What the report is, as its table at the top of the Markdown shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FeedbackMetadata {
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub severity: Option<String>,
    pub tags: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_request_id: Option<String>,
    /// This server's name and version.
    pub server: String,
    /// Unix seconds.
    pub created: u64,
    pub confidential: bool,
    pub redacted: bool,
    /// Always false: nothing is uploaded.
    pub uploaded: bool,
}

/// One piece of evidence, with a file's contents read into `content`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FeedbackEvidence {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// For a file that was read: whether only its beginning was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// How much was read, and which cap cut it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncation: Option<String>,
    /// Why the file was not read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    pub content: String,
}

/// The project context of a non-confidential report, from files and the
/// cached runtime only (a report never starts Lean).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackCollected {
    pub root: String,
    /// The contents of `lean-toolchain`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toolchain: Option<String>,
    pub lakefiles: Vec<String>,
    /// How Lean is started for this root.
    pub server_command: String,
    /// The cached runtime's statistics, if one is cached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeStats>,
    /// The documents open in Lean, if a runtime is cached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_files: Option<Vec<String>>,
}

/// `beam_feedback_report`: the rendered report and what went into it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FeedbackResult {
    pub metadata: FeedbackMetadata,
    pub evidence: Vec<FeedbackEvidence>,
    /// With `include_collected` (never in confidential reports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collected: Option<FeedbackCollected>,
    pub collection_warnings: Vec<String>,
    pub markdown: String,
    /// The evidence bundle folder (`bundle: "dir"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bundle_dir: Option<String>,
    /// The evidence bundle archive (`bundle: "zip"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zip_path: Option<String>,
    /// Left out of confidential reports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<WorkspaceEcho>,
    /// Present when the report's own caps cut its evidence (the output
    /// budget does not apply to it): evidence files cut or not read for the
    /// budget (`fields`), evidence items left out past 32 (`items`), the size
    /// of the evidence given inline and of the files opened (`bytes`) and the
    /// report's evidence budget (`limit`); each cut item also says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncated>,
}
