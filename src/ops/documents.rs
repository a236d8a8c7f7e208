//! Document lifecycle tools: update, sync, refresh, close, drop.

use super::Answer;
use crate::broker::Broker;
use crate::broker::diagnostics;
use crate::broker::document::Doc;
use crate::broker::runtime::{Runtime, RuntimeUse};
use crate::broker::sync::{self, Mode, SyncOptions, Synced};
use crate::broker::workspace::{self, DocPath};
use crate::results::{
    CloseResult, DropReason, DropResult, SyncDiagnostics, SyncResult, UpdateResult,
};
use crate::surface::{CallContext, DiagnosticScope, Workspace};

async fn locate(
    broker: &Broker,
    workspace: &Workspace,
    path: &str,
) -> Result<(RuntimeUse, DocPath), crate::surface::ToolError> {
    let (root, doc_path) = broker.resolve_document(workspace, path)?;
    let rt = broker.runtime(&root).await?;
    rt.record_request();
    Ok((rt, doc_path))
}

pub async fn update(broker: &Broker, workspace: &Workspace, path: &str) -> Answer<UpdateResult> {
    let (rt, doc_path) = locate(broker, workspace, path).await?;
    let doc = rt.doc(&doc_path);
    let _edit = doc.edit.lock().await;
    let (text, disk) = sync::read_disk(&doc, rt.max_file_bytes).await?;
    let session = rt.session().await?;
    let applied = sync::apply(&session, &doc, text, disk, Mode::IfChanged).await?;
    Ok(UpdateResult {
        workspace: rt.root.descriptor(),
        path: doc.path.shown.clone(),
        version: applied.version,
        changed: applied.changed,
    })
}

/// What a completed sync answers (seed: "Stable Result Shapes"): complete
/// counts, readiness and progress; the items in scope when asked for.
pub(super) fn sync_result(
    rt: &Runtime,
    doc: &Doc,
    synced: &Synced,
    options: SyncOptions,
) -> SyncResult {
    let diags = synced.snapshot.diagnostics.items();
    let items = options.items.then(|| {
        diags
            .iter()
            .filter(|d| diagnostics::in_scope(d, options.scope))
            .map(diagnostics::item)
            .collect()
    });
    SyncResult {
        workspace: rt.root.descriptor(),
        path: doc.path.shown.clone(),
        version: synced.version,
        diagnostics: SyncDiagnostics {
            counts: diagnostics::counts(diags),
            items,
        },
        readiness: diagnostics::readiness(diags, synced.snapshot.progress.fatal),
        document_progress: synced.snapshot.progress.summary(),
    }
}

pub async fn sync(
    broker: &Broker,
    ctx: &CallContext,
    workspace: &Workspace,
    path: &str,
    scope: DiagnosticScope,
    items: bool,
    mode: Mode,
) -> Answer<SyncResult> {
    let (rt, doc_path) = locate(broker, workspace, path).await?;
    let doc = rt.doc(&doc_path);
    let options = SyncOptions { scope, items, mode };
    let _edit = doc.edit.lock().await;
    let synced = sync::sync_locked(&rt, ctx, &doc, options).await?;
    Ok(sync_result(&rt, &doc, &synced, options))
}

pub async fn close(broker: &Broker, workspace: &Workspace, path: &str) -> Answer<CloseResult> {
    let (root, doc_path) = broker.resolve_document(workspace, path)?;
    let mut result = CloseResult {
        workspace: root.descriptor(),
        path: doc_path.shown.clone(),
        closed: true,
        was_open: false,
        version: None,
    };
    // Closing never starts a runtime: a document of an absent runtime is closed.
    let Some(rt) = broker.cached(&root) else {
        return Ok(result);
    };
    rt.record_request();
    let Some(doc) = rt.existing_doc(&doc_path) else {
        return Ok(result);
    };
    let state = doc.state();
    let session = rt.session_if_running().await.ok();
    // The document's shadow slots go too: each holds a Lean worker.
    for shadow in rt.shadow_pool(&doc_path).docs() {
        sync::close_in_lean(session.as_ref(), &shadow).await;
    }
    result.was_open = sync::close_in_lean(session.as_ref(), &doc).await;
    result.version = Some(state.version);
    Ok(result)
}

pub async fn drop_workspace(broker: &Broker, workspace: &Workspace) -> Answer<DropResult> {
    let root = workspace::resolve_for_eviction(workspace)?;
    Ok(match broker.evict(&root).await {
        Some(rt) => DropResult {
            workspace: root.descriptor(),
            dropped: true,
            invalidated_handles: rt.handles.len() as u64,
            reason: None,
        },
        None => DropResult {
            workspace: root.descriptor(),
            dropped: false,
            invalidated_handles: 0,
            reason: Some(DropReason::NotFound),
        },
    })
}
