//! What `ops` asks of a runtime, at the level of its intent: bring a
//! document up to date, sync it, sync it and keep it still for a save,
//! close it. The locking rule (an edit goes through the document's
//! [`DocEdit`] guard) is kept here and in the functions that require the
//! guard, never by `ops`.

use super::document::{Doc, DocEdit};
use super::edit::{self, Applied, Mode};
use super::error::Result;
use super::progress::ProgressSink;
use super::runtime::Runtime;
use super::sync::{self, SyncOptions, Synced};
use super::workspace::DocPath;

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
        edit::apply(&server, &edit, text, disk, Mode::IfChanged).await
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
