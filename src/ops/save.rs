//! Checkpoint tools: `lean_save` and `lean_close_save`.

use super::Answer;
use super::documents::sync_result;
use crate::broker::Broker;
use crate::broker::checkpoint;
use crate::broker::edit::Mode;
use crate::broker::sync::SyncOptions;
use crate::log_debug;
use crate::results::{CloseSaveResult, SaveResult, SaveSync};
use crate::surface::{CallContext, DiagnosticScope, ToolError, Workspace};

/// What agents must tell their users about a successful save.
const CHECKPOINT_NOTE: &str = "Development checkpoint from the accepted source: modules importing it see it. It is not a CI or clean `lake build` result; run `lake build` from clean artifacts for that.";

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
    let checked = sync_result(&rt, &doc, &synced, options);
    let mut result = SaveResult {
        workspace: checked.workspace,
        path: doc.path.shown.clone(),
        module,
        version: synced.version,
        written: false,
        source_hash: None,
        olean: None,
        ilean: None,
        c: None,
        sync: SaveSync {
            path: checked.path,
            version: checked.version,
            diagnostics: checked.diagnostics,
            readiness: checked.readiness,
        },
        document_progress: checked.document_progress,
        checkpoint: None,
        not_written: None,
    };
    if !result.sync.readiness.save_ready {
        result.not_written = Some(format!(
            "{} is not save-ready ({}): nothing was written. Fix the blocking diagnostics (sync.readiness), then lean_save again",
            result.path,
            result.sync.readiness.reason.as_str()
        ));
        return Ok(result);
    }
    let hash = checkpoint::source_hash(&synced.text);
    let published = checkpoint::save(
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
    let shown = |path: std::path::PathBuf| path.to_string_lossy().into_owned();
    let reopened = rt.imports_rebuilt(&doc.path.file, &result.module).await;
    log_debug!(
        "{} saved: {reopened} open document(s) that may import it reopen at their next use",
        result.module
    );
    result.written = true;
    result.source_hash = Some(hash);
    result.olean = Some(shown(published.olean));
    result.ilean = Some(shown(published.ilean));
    result.c = published.c.map(shown);
    result.checkpoint = Some(CHECKPOINT_NOTE.to_owned());
    Ok(result)
}

pub async fn save(
    broker: &Broker,
    ctx: &CallContext,
    ws: &Workspace,
    path: &str,
    scope: DiagnosticScope,
) -> Answer<SaveResult> {
    save_module(broker, ctx, ws, path, scope).await
}

/// Save, then close; a save that wrote nothing leaves the document open.
pub async fn close_save(
    broker: &Broker,
    ctx: &CallContext,
    ws: &Workspace,
    path: &str,
    scope: DiagnosticScope,
) -> Answer<CloseSaveResult> {
    let saved = save_module(broker, ctx, ws, path, scope).await?;
    if saved.written {
        super::documents::close(broker, ws, path).await?;
    }
    Ok(CloseSaveResult {
        closed: saved.written,
        saved,
    })
}
