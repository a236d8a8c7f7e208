//! Checkpoint tools: `lean_save` and `lean_close_save`.

use serde_json::{Value, json};

use crate::broker::Broker;
use crate::broker::checkpoint;
use crate::broker::sync::{self, Mode, SyncOptions};
use crate::log_debug;
use crate::surface::{CallContext, DiagnosticScope, ErrorCode, ToolError, ToolOutcome, Workspace};

/// What agents must tell their users about a successful save.
const CHECKPOINT_NOTE: &str = "Development checkpoint from the accepted source: modules importing it see it. It is not a CI or clean `lake build` result; run `lake build` from clean artifacts for that.";

pub async fn save(
    broker: &Broker,
    ctx: &CallContext,
    ws: &Workspace,
    path: &str,
    scope: DiagnosticScope,
) -> ToolOutcome {
    let (root, doc_path) = broker.resolve_document(ws, path)?;
    let module = checkpoint::module_name(&root, &doc_path)?;
    checkpoint::check_setup(&root).await?;
    let rt = broker.runtime(&root);
    rt.record_request();
    let doc = rt.doc(&doc_path);
    let options = SyncOptions {
        scope,
        items: false,
        mode: Mode::IfChanged,
    };
    // The document stays locked from the barrier to the publish, so no edit
    // through this server can slip between what was checked and what is saved.
    let _edit = doc.edit.lock().await;
    let synced = sync::sync_locked(&rt, ctx, &doc, options).await?;
    let sync_result = sync::sync_result(&rt, &doc, &synced, options);
    let embedded = json!({
        "path": sync_result["path"],
        "version": sync_result["version"],
        "diagnostics": sync_result["diagnostics"],
        "readiness": sync_result["readiness"],
    });
    if sync_result["readiness"]["save_ready"] != true {
        return Err(ToolError::new(
            ErrorCode::SaveNotReady,
            format!(
                "{} is not save-ready ({}): fix the blocking diagnostics and sync again; nothing was written",
                doc.path.shown,
                sync_result["readiness"]["reason"].as_str().unwrap_or("?")
            ),
        )
        .with_data(json!({ "sync": embedded })));
    }
    let hash = checkpoint::source_hash(&synced.text);
    let (_, paths) = checkpoint::save(
        broker.launcher(),
        &root,
        &doc.path,
        &module,
        &hash,
        rt.max_file_bytes,
        rt.timeouts.sync,
    )
    .await?;
    let reopened = rt.imports_rebuilt(&doc.path.file, &module).await;
    log_debug!(
        "{module} saved: {reopened} open document(s) that may import it reopen at their next use"
    );
    let mut result = json!({
        "workspace": root.descriptor(),
        "path": doc.path.shown,
        "module": module,
        "version": synced.version,
        "source_hash": hash,
        "sync": embedded,
        "document_progress": sync_result["document_progress"],
        "checkpoint": CHECKPOINT_NOTE,
    });
    if let (Value::Object(out), Value::Object(paths)) = (&mut result, paths) {
        out.extend(paths);
    }
    Ok(result)
}

pub async fn close_save(
    broker: &Broker,
    ctx: &CallContext,
    ws: &Workspace,
    path: &str,
    scope: DiagnosticScope,
) -> ToolOutcome {
    let saved = save(broker, ctx, ws, path, scope).await?;
    super::documents::close(broker, ws, path).await?;
    Ok(json!({ "closed": true, "saved": saved }))
}
