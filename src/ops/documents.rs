//! Document lifecycle tools: update, sync, refresh, close, drop.

use super::Answer;
use crate::broker::Broker;
use crate::broker::diagnostics;
use crate::broker::document::Doc;
use crate::broker::edit::Mode;
use crate::broker::runtime::{Runtime, RuntimeUse};
use crate::broker::sync::{SyncOptions, Synced};
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
    let (root, doc_path) = broker.resolve_document(&workspace.root, path)?;
    let rt = broker.runtime(&root).await?;
    rt.record_request();
    Ok((rt, doc_path))
}

pub async fn update(broker: &Broker, workspace: &Workspace, path: &str) -> Answer<UpdateResult> {
    let (rt, doc_path) = locate(broker, workspace, path).await?;
    let doc = rt.doc(&doc_path);
    let applied = rt.update(&doc).await?;
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
    let options = SyncOptions {
        scope: scope.into(),
        items,
        mode,
    };
    let synced = rt.sync(&doc, ctx, options).await?;
    Ok(sync_result(&rt, &doc, &synced, options))
}

pub async fn close(broker: &Broker, workspace: &Workspace, path: &str) -> Answer<CloseResult> {
    let (root, doc_path) = broker.resolve_document(&workspace.root, path)?;
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
    if let Some(closed) = rt.close(&doc_path).await {
        result.was_open = closed.was_open;
        result.version = Some(closed.version);
    }
    Ok(result)
}

pub async fn drop_workspace(broker: &Broker, workspace: &Workspace) -> Answer<DropResult> {
    let root = workspace::resolve_for_eviction(&workspace.root)?;
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
