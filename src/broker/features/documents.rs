//! What `ops` asks of the broker about documents, at the level of its
//! intent: bring a document up to date, sync it, save a checkpoint of it,
//! close it, drop a workspace. The locking rule (an edit goes through the
//! document's [`DocEdit`] guard) is kept here and in the functions that
//! require the guard, never by `ops`.

use crate::broker::ask::{DiagnosticScope, EditMode, Pinned, Spot, SyncOptions};
use crate::broker::engine::checkpoint;
use crate::broker::engine::diagnostics::{self};
use crate::broker::engine::document::{Doc, DocEdit};
use crate::broker::engine::edit::{self, Applied};
use crate::broker::engine::runtime::{Runtime, RuntimeUse};
use crate::broker::engine::runtimes::Runtimes;
use crate::broker::engine::sync::{self, Synced};
use crate::broker::engine::workspace::{self, DocPath};
use crate::broker::error::{Error, Result};
use crate::broker::progress::ProgressSink;
use crate::lean_source::declarations;
use crate::results::{
    CloseResult, DeclarationAt, DropReason, DropResult, SaveResult, SaveSync, SyncDiagnostics,
    SyncResult, UpdateResult,
};

/// What agents must tell their users about a successful save.
const CHECKPOINT_NOTE: &str = "Development checkpoint from the accepted source: modules importing it see it. It is not a CI or clean `lake build` result; run `lake build` from clean artifacts for that.";

/// A declaration of a pinned version that a call named: the place it
/// resolved to (echoed) and its range.
#[derive(Debug, Clone)]
pub struct Located {
    pub at: DeclarationAt,
    pub start: (u32, u32),
    pub end: (u32, u32),
}

impl Runtimes {
    /// The declaration `name` of a pinned version and the place `spot` in
    /// it; without a spot, its start (`lean_todo` takes its range).
    pub async fn declaration(
        &self,
        sink: &dyn ProgressSink,
        pinned: &Pinned<'_>,
        name: &str,
        spot: Option<Spot>,
    ) -> Result<Located> {
        let bound = self
            .bind(sink, pinned.workspace, pinned.path, pinned.version)
            .await?;
        let text = &*bound.state.text;
        let unresolved = |problem| Error::Declaration {
            name: name.to_owned(),
            problem,
        };
        let (found, offset) = match spot {
            Some(spot) => declarations::resolve(text, name, spot).map_err(unresolved)?,
            None => {
                let found = declarations::find(&declarations::declarations(text), name)
                    .map_err(unresolved)?;
                let start = found.start;
                (found, start)
            }
        };
        let index = &bound.state.index;
        let (line, character) = index.position(text, offset);
        Ok(Located {
            at: DeclarationAt {
                name: found.name,
                line,
                character,
            },
            start: index.position(text, found.start),
            end: index.position(text, found.end),
        })
    }

    /// The runtime of a document (created if absent), its use recorded.
    async fn locate(&self, workspace: &str, path: &str) -> Result<(RuntimeUse, DocPath)> {
        let workspace::Resolved {
            root,
            doc: doc_path,
            ..
        } = self.resolve_document(workspace, path)?;
        let rt = self.runtime(&root).await?;
        rt.record_request();
        Ok((rt, doc_path))
    }

    /// Bring Lean's copy of a document up to date with the file on disk,
    /// without waiting for Lean (`lean_update`).
    pub async fn update(&self, workspace: &str, path: &str) -> Result<UpdateResult> {
        let (rt, doc_path) = self.locate(workspace, path).await?;
        let doc = rt.doc(&doc_path);
        let applied = rt.update(&doc).await?;
        Ok(UpdateResult {
            workspace: rt.root.descriptor(),
            path: doc.path.shown.clone(),
            version: applied.version,
            changed: applied.changed,
        })
    }

    /// The diagnostics of exactly the version on disk (`lean_sync`,
    /// `lean_refresh`).
    pub async fn sync(
        &self,
        sink: &dyn ProgressSink,
        workspace: &str,
        path: &str,
        options: SyncOptions,
    ) -> Result<SyncResult> {
        let (rt, doc_path) = self.locate(workspace, path).await?;
        let doc = rt.doc(&doc_path);
        let synced = rt.sync(&doc, sink, options).await?;
        Ok(sync_result(&rt, &doc, &synced, options))
    }

    /// Sync a module and, when it is save-ready, write its checkpoint
    /// (`lean_save`). The document stays locked from the barrier to the
    /// publish, so no edit through this server can slip between what was
    /// checked and what is saved.
    pub async fn save(
        &self,
        sink: &dyn ProgressSink,
        workspace: &str,
        path: &str,
        scope: DiagnosticScope,
    ) -> Result<SaveResult> {
        let workspace::Resolved {
            root,
            doc: doc_path,
            ..
        } = self.resolve_document(workspace, path)?;
        let module = checkpoint::module_name(&root, &doc_path)?;
        checkpoint::check_setup(&root).await?;
        let rt = self.runtime(&root).await?;
        rt.record_request();
        let doc = rt.doc(&doc_path);
        let options = SyncOptions {
            scope,
            items: false,
            mode: EditMode::IfChanged,
        };
        let (_edit, synced) = rt.sync_and_hold(&doc, sink, options).await?;
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
            &self.launcher,
            &root,
            &doc.path,
            &result.module,
            &hash,
            rt.max_file_bytes,
            rt.timeouts.sync,
        )
        .await?;
        let shown = |path: std::path::PathBuf| path.to_string_lossy().into_owned();
        let reopened = rt.imports_rebuilt(&doc.path.file, &result.module).await;
        crate::log_debug!(
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

    /// Close a document and its shadow slots (`lean_close`). Never starts a
    /// runtime: a document of an absent runtime is closed.
    pub async fn close(&self, workspace: &str, path: &str) -> Result<CloseResult> {
        let workspace::Resolved {
            root,
            doc: doc_path,
            ..
        } = self.resolve_document(workspace, path)?;
        let mut result = CloseResult {
            workspace: root.descriptor(),
            path: doc_path.shown.clone(),
            closed: true,
            was_open: false,
            version: None,
        };
        let Some(rt) = self.cached(&root) else {
            return Ok(result);
        };
        rt.record_request();
        if let Some(closed) = rt.close(&doc_path).await {
            result.was_open = closed.was_open;
            result.version = Some(closed.version);
        }
        Ok(result)
    }

    /// Stop a workspace's runtime and invalidate its handles
    /// (`lean_drop_workspace`); a root that has since disappeared is
    /// accepted.
    pub async fn drop_workspace(&self, workspace: &str) -> Result<DropResult> {
        let root = workspace::resolve_for_eviction(workspace)?;
        self.indexes.drop_root(root.path());
        Ok(match self.evict(&root).await {
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
}

/// What a completed sync answers: complete
/// counts, readiness and progress; the items in scope when asked for.
fn sync_result(rt: &Runtime, doc: &Doc, synced: &Synced, options: SyncOptions) -> SyncResult {
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

/// What closing a document found.
#[derive(Debug, Clone, Copy)]
pub struct Closed {
    /// The document was open in Lean.
    pub was_open: bool,
    /// Its latest version.
    pub version: u64,
}

impl Runtime {
    /// Bring Lean's copy of `doc` up to date with the file on disk, without
    /// waiting for Lean (`lean_update`).
    pub async fn update(&self, doc: &Doc) -> Result<Applied> {
        let edit = doc.lock_edit().await;
        let (text, disk) = sync::read_disk(doc, self.max_file_bytes).await?;
        let server = self.server().await?;
        edit::apply(&server, &edit, text, disk, EditMode::IfChanged).await
    }

    /// The diagnostics of exactly the version on disk (`lean_sync`,
    /// `lean_refresh`).
    pub async fn sync(
        &self,
        doc: &Doc,
        sink: &dyn ProgressSink,
        options: SyncOptions,
    ) -> Result<Synced> {
        let edit = doc.lock_edit().await;
        self.sync_locked(sink, &edit, options).await
    }

    /// [`Runtime::sync`], and the document stays locked while the returned
    /// guard lives, so no edit through this server can slip between what was
    /// checked and what the caller does next (a save publishes then).
    pub async fn sync_and_hold<'d>(
        &self,
        doc: &'d Doc,
        sink: &dyn ProgressSink,
        options: SyncOptions,
    ) -> Result<(DocEdit<'d>, Synced)> {
        let edit = doc.lock_edit().await;
        let synced = self.sync_locked(sink, &edit, options).await?;
        Ok((edit, synced))
    }

    /// Read, apply and wait, under the edit guard the caller holds.
    pub async fn sync_locked(
        &self,
        sink: &dyn ProgressSink,
        edit: &DocEdit<'_>,
        options: SyncOptions,
    ) -> Result<Synced> {
        let read = sync::read_disk(edit, self.max_file_bytes).await?;
        self.notice_rebuilt_imports(edit, &read.0).await;
        let server = self.server().await?;
        sync::apply_and_wait(&server, sink, edit, read, options, self.timeouts.sync).await
    }

    /// Close the document at `path` and its shadow slots (each holds a Lean
    /// worker). Never starts a Lean server; `None` when the runtime never
    /// knew the document.
    pub async fn close(&self, path: &DocPath) -> Option<Closed> {
        let doc = self.existing_doc(path)?;
        let version = doc.state().version;
        let server = self.server_if_running().await;
        for shadow in self.shadow_pool(path).docs() {
            edit::close(&shadow.lock_edit().await, server.as_ref()).await;
        }
        let was_open = edit::close(&doc.lock_edit().await, server.as_ref()).await;
        Some(Closed { was_open, version })
    }
}
