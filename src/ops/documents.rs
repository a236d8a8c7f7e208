//! Document lifecycle tools: update, sync, refresh, close, drop.

use serde_json::{Value, json};

use crate::broker::Broker;
use crate::broker::edit::Mode;
use crate::broker::runtime::RuntimeUse;
use crate::broker::sync::{self, SyncOptions};
use crate::broker::workspace::{self, DocPath};
use crate::surface::{CallContext, DiagnosticScope, ToolOutcome, Workspace};

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

pub async fn update(broker: &Broker, workspace: &Workspace, path: &str) -> ToolOutcome {
    let (rt, doc_path) = locate(broker, workspace, path).await?;
    let doc = rt.doc(&doc_path);
    let applied = rt.update(&doc).await?;
    Ok(json!({
        "workspace": rt.root.descriptor(),
        "path": doc.path.shown,
        "version": applied.version,
        "changed": applied.changed,
    }))
}

pub async fn sync(
    broker: &Broker,
    ctx: &CallContext,
    workspace: &Workspace,
    path: &str,
    scope: DiagnosticScope,
    items: bool,
    mode: Mode,
) -> ToolOutcome {
    let (rt, doc_path) = locate(broker, workspace, path).await?;
    let doc = rt.doc(&doc_path);
    let options = SyncOptions {
        scope: scope.into(),
        items,
        mode,
    };
    let synced = rt.sync(&doc, ctx, options).await?;
    Ok(sync::sync_result(&rt.root, &doc, &synced, options))
}

pub async fn close(broker: &Broker, workspace: &Workspace, path: &str) -> ToolOutcome {
    let (root, doc_path) = broker.resolve_document(&workspace.root, path)?;
    let mut result = json!({ "workspace": root.descriptor(), "path": doc_path.shown, "closed": true, "wasOpen": false });
    // Closing never starts a runtime: a document of an absent runtime is closed.
    let Some(rt) = broker.cached(&root) else {
        return Ok(result);
    };
    rt.record_request();
    if let Some(closed) = rt.close(&doc_path).await {
        result["wasOpen"] = Value::Bool(closed.was_open);
        result["version"] = json!(closed.version);
    }
    Ok(result)
}

pub async fn drop_workspace(broker: &Broker, workspace: &Workspace) -> ToolOutcome {
    let root = workspace::resolve_for_eviction(&workspace.root)?;
    match broker.evict(&root).await {
        Some(rt) => Ok(json!({
            "workspace": root.descriptor(),
            "dropped": true,
            "invalidated_handles": rt.handles.len(),
        })),
        None => Ok(json!({
            "workspace": root.descriptor(),
            "dropped": false,
            "invalidated_handles": 0,
            "reason": "notFound",
        })),
    }
}
