//! Results of the document lifecycle tools: update, sync/refresh, save,
//! close-save, close, and of `lean_drop_workspace`.

use schemars::JsonSchema;
use serde::Serialize;

use super::{DiagnosticCounts, DiagnosticItem, DocumentProgress, Readiness, WorkspaceEcho};

/// `lean_update`: the version now mirrored and whether the file changed.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct UpdateResult {
    pub workspace: WorkspaceEcho,
    pub path: String,
    /// Pass it to the snapshot-bound tools.
    pub version: u64,
    pub changed: bool,
}

/// The diagnostics of a synced version: complete counts, and the items when
/// asked for (`diagnostics_in_result`, filtered by `diagnostic_scope`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SyncDiagnostics {
    pub counts: DiagnosticCounts,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<DiagnosticItem>>,
}

/// `lean_sync` and `lean_refresh`: the exact diagnostics of the version on
/// disk.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SyncResult {
    pub workspace: WorkspaceEcho,
    pub path: String,
    pub version: u64,
    pub diagnostics: SyncDiagnostics,
    pub readiness: Readiness,
    pub document_progress: DocumentProgress,
}

/// The sync a save checked, as the save embeds it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SaveSync {
    pub path: String,
    pub version: u64,
    pub diagnostics: SyncDiagnostics,
    pub readiness: Readiness,
}

/// `lean_save`: a checkpoint written, or not because the file's errors make
/// one impossible (a Lean result, not a tool error: `sync.readiness` says
/// why). The artifact paths and `source_hash` are there when it was written;
/// `c` only when the toolchain produced C.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SaveResult {
    pub workspace: WorkspaceEcho,
    pub path: String,
    pub module: String,
    pub version: u64,
    pub written: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub olean: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ilean: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub c: Option<String>,
    pub sync: SaveSync,
    pub document_progress: DocumentProgress,
    /// What a written checkpoint is (and is not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    /// Why nothing was written, and what to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_written: Option<String>,
}

/// `lean_close_save`: the save, and whether the document was then closed (a
/// save that wrote nothing leaves it open).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct CloseSaveResult {
    pub closed: bool,
    pub saved: SaveResult,
}

/// `lean_close`: the document is closed in Lean (its worker stops); its
/// version stays known. camelCase (`wasOpen`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloseResult {
    pub workspace: WorkspaceEcho,
    pub path: String,
    pub closed: bool,
    /// The document was open in Lean until now.
    pub was_open: bool,
    /// The document's last version, when this server knew it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
}

/// Why nothing was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DropReason {
    /// No runtime was cached for the workspace.
    NotFound,
}

/// `lean_drop_workspace`: the workspace's runtime evicted (its Lean processes
/// stopped, its handles invalid), or `reason` why there was none.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct DropResult {
    pub workspace: WorkspaceEcho,
    pub dropped: bool,
    /// Proof handles of the runtime that are no longer valid.
    pub invalidated_handles: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<DropReason>,
}
