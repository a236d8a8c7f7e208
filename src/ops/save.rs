//! Checkpoint tools: `lean_save` and `lean_close_save`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::typed;
use crate::broker::Broker;
use crate::broker::checkpoint;
use crate::broker::edit::Mode;
use crate::broker::sync::{self, SyncOptions};
use crate::log_debug;
use crate::surface::{CallContext, DiagnosticScope, ErrorCode, ToolError, ToolOutcome, Workspace};

/// What agents must tell their users about a successful save.
const CHECKPOINT_NOTE: &str = "Development checkpoint from the accepted source: modules importing it see it. It is not a CI or clean `lake build` result; run `lake build` from clean artifacts for that.";

/// The artifacts a checkpoint wrote; anything else is refused before a
/// reply is built.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Artifacts {
    olean: String,
    ilean: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    c: Option<String>,
}

/// The sync result a save embeds (seed: "Stable Result Shapes").
#[derive(Debug, Serialize)]
struct Embedded {
    path: Value,
    version: Value,
    diagnostics: Value,
    readiness: Value,
}

/// A save's result: written, or not because the file's errors make a
/// checkpoint impossible (a Lean result, not a tool error: `sync.readiness`
/// says why).
#[derive(Debug, Serialize)]
struct SaveResult {
    workspace: Value,
    path: String,
    module: String,
    version: u64,
    written: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    source_hash: Option<String>,
    #[serde(flatten)]
    artifacts: Option<Artifacts>,
    sync: Embedded,
    document_progress: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    checkpoint: Option<&'static str>,
    /// Why nothing was written, and what to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    not_written: Option<String>,
}

#[derive(Debug, Serialize)]
struct CloseSaveResult {
    closed: bool,
    saved: SaveResult,
}

async fn save_module(
    broker: &Broker,
    ctx: &CallContext,
    ws: &Workspace,
    path: &str,
    scope: DiagnosticScope,
) -> Result<SaveResult, ToolError> {
    let (root, doc_path) = broker.resolve_document(&ws.root, path)?;
    let module = checkpoint::module_name(&root, &doc_path)?;
    checkpoint::check_setup(&root).await?;
    let rt = broker.runtime(&root).await?;
    rt.record_request();
    let doc = rt.doc(&doc_path);
    let options = SyncOptions {
        scope: scope.into(),
        items: false,
        mode: Mode::IfChanged,
    };
    // The document stays locked from the barrier to the publish, so no edit
    // through this server can slip between what was checked and what is saved.
    let (_edit, synced) = rt.sync_and_hold(&doc, ctx, options).await?;
    let mut sync_result = sync::sync_result(&rt.root, &doc, &synced, options);
    let mut result = SaveResult {
        workspace: root.descriptor(),
        path: doc.path.shown.clone(),
        module,
        version: synced.version,
        written: false,
        source_hash: None,
        artifacts: None,
        sync: Embedded {
            path: sync_result["path"].take(),
            version: sync_result["version"].take(),
            diagnostics: sync_result["diagnostics"].take(),
            readiness: sync_result["readiness"].take(),
        },
        document_progress: sync_result["document_progress"].take(),
        checkpoint: None,
        not_written: None,
    };
    if result.sync.readiness["save_ready"] != true {
        result.not_written = Some(format!(
            "{} is not save-ready ({}): nothing was written. Fix the blocking diagnostics (sync.readiness), then lean_save again",
            result.path,
            result.sync.readiness["reason"].as_str().unwrap_or("?")
        ));
        return Ok(result);
    }
    let hash = checkpoint::source_hash(&synced.text);
    let (_, paths) = checkpoint::save(
        broker.launcher(),
        &root,
        &doc.path,
        &result.module,
        &hash,
        rt.max_file_bytes,
        rt.timeouts.sync,
    )
    .await
    .map_err(crate::broker::Error::from)?;
    let artifacts: Artifacts = serde_json::from_value(paths).map_err(|e| {
        ToolError::new(
            ErrorCode::InternalError,
            format!("the checkpoint reported unexpected artifacts: {e}"),
        )
    })?;
    let reopened = rt.imports_rebuilt(&doc.path.file, &result.module).await;
    log_debug!(
        "{} saved: {reopened} open document(s) that may import it reopen at their next use",
        result.module
    );
    result.written = true;
    result.source_hash = Some(hash);
    result.artifacts = Some(artifacts);
    result.checkpoint = Some(CHECKPOINT_NOTE);
    Ok(result)
}

pub async fn save(
    broker: &Broker,
    ctx: &CallContext,
    ws: &Workspace,
    path: &str,
    scope: DiagnosticScope,
) -> ToolOutcome {
    typed(&save_module(broker, ctx, ws, path, scope).await?)
}

/// Save, then close; a save that wrote nothing leaves the document open.
pub async fn close_save(
    broker: &Broker,
    ctx: &CallContext,
    ws: &Workspace,
    path: &str,
    scope: DiagnosticScope,
) -> ToolOutcome {
    let saved = save_module(broker, ctx, ws, path, scope).await?;
    if saved.written {
        super::documents::close(broker, ws, path).await?;
    }
    typed(&CloseSaveResult {
        closed: saved.written,
        saved,
    })
}
