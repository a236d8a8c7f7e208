//! The documents of one runtime, by canonical file and by URI (Lean reports
//! by URI), and the routing of what Lean reports to them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio::sync::{mpsc, oneshot};

use super::document::{DiagnosticSet, Doc, DocUse};
use super::workspace::DocPath;
use crate::lsp::ServerEvent;
use crate::lsp::uri::path_to_uri;
use crate::util::lock;
use crate::{log_info, log_warn};

/// The method of the marker the broker puts behind Lean's notifications (see
/// [`Docs::settle`]). Lean never sends it.
const SETTLE_MARKER: &str = "$/beam/settled";

/// The highest version each file has had in any runtime of this process.
#[derive(Debug, Default)]
pub struct VersionFloors(Mutex<HashMap<PathBuf, u64>>);

impl VersionFloors {
    pub fn get(&self, file: &Path) -> u64 {
        lock(&self.0).get(file).copied().unwrap_or(0)
    }

    pub fn raise(&self, file: &Path, version: u64) {
        let mut map = lock(&self.0);
        let entry = map.entry(file.to_path_buf()).or_insert(0);
        *entry = (*entry).max(version);
    }
}

/// Documents by canonical file and by URI.
pub struct Docs {
    by_file: Mutex<HashMap<PathBuf, Arc<Doc>>>,
    by_uri: Mutex<HashMap<String, Arc<Doc>>>,
    settle_waiters: Mutex<HashMap<u64, oneshot::Sender<()>>>,
    next_marker: std::sync::atomic::AtomicU64,
    /// Versions survive the runtime (see [`VersionFloors`]).
    floors: Arc<VersionFloors>,
}

impl Docs {
    pub fn new(floors: Arc<VersionFloors>) -> Self {
        Docs {
            by_file: Mutex::default(),
            by_uri: Mutex::default(),
            settle_waiters: Mutex::default(),
            next_marker: std::sync::atomic::AtomicU64::new(0),
            floors,
        }
    }

    /// The document of `path`, created on first use, for a call's use.
    pub fn doc(&self, path: &DocPath) -> DocUse {
        let mut by_file = lock(&self.by_file);
        if let Some(doc) = by_file.get(&path.file) {
            return doc.begin_use();
        }
        let uri = path_to_uri(&path.file);
        let floor = self.floors.get(&path.file);
        let doc = Arc::new(Doc::new(path.clone(), uri.clone(), floor));
        by_file.insert(path.file.clone(), Arc::clone(&doc));
        lock(&self.by_uri).insert(uri, Arc::clone(&doc));
        doc.begin_use()
    }

    /// The document of `path` if it was ever synced, for a call's use.
    pub fn existing(&self, path: &DocPath) -> Option<DocUse> {
        lock(&self.by_file).get(&path.file).map(Doc::begin_use)
    }

    /// Every document (shadow slots included).
    pub fn all(&self) -> Vec<Arc<Doc>> {
        lock(&self.by_file).values().cloned().collect()
    }

    /// The document Lean names by `uri`.
    pub fn by_uri(&self, uri: &str) -> Option<Arc<Doc>> {
        lock(&self.by_uri).get(uri).cloned()
    }

    /// Documents open in Lean now, shadow slots included (each a worker).
    pub fn open_in_lean(&self) -> usize {
        lock(&self.by_file)
            .values()
            .filter(|d| d.lifecycle().generation().is_some())
            .count()
    }

    /// Remember every document's version, so that a later runtime of the same
    /// files continues above them (called when the runtime is evicted).
    pub fn record_versions(&self) {
        for (file, doc) in lock(&self.by_file).iter() {
            self.floors.raise(file, doc.state().version);
        }
    }

    /// Wait until every notification Lean sent before this point has been
    /// applied to the documents. Lean answers `waitForDiagnostics` after it
    /// sent the diagnostics; the answer and the notifications travel separate
    /// paths here, so a marker queued behind them on `events` (the channel
    /// [`route_events`] reads) closes the gap.
    pub async fn settle(&self, events: &mpsc::UnboundedSender<ServerEvent>) {
        let id = self
            .next_marker
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.settle_waiters).insert(id, tx);
        let marker = ServerEvent::Notification {
            method: SETTLE_MARKER.into(),
            params: json!(id),
        };
        if events.send(marker).is_ok() {
            let _ = rx.await;
        }
    }
}

/// Apply Lean's notifications to the documents, in arrival order, for as long
/// as server `generation` sends them.
pub async fn route_events(
    docs: Arc<Docs>,
    mut events: mpsc::UnboundedReceiver<ServerEvent>,
    generation: u64,
) {
    while let Some(event) = events.recv().await {
        match event {
            ServerEvent::Notification { method, params } if method == SETTLE_MARKER => {
                if let Some(id) = params.as_u64() {
                    let waiter = lock(&docs.settle_waiters).remove(&id);
                    if let Some(tx) = waiter {
                        let _ = tx.send(());
                    }
                }
            }
            ServerEvent::Notification { .. } => {}
            ServerEvent::Diagnostics(published) => {
                if let Some(doc) = docs.by_uri(&published.uri) {
                    let Some(version) = report_version(published.version) else {
                        continue;
                    };
                    doc.on_diagnostics(version, DiagnosticSet::published(published.diagnostics));
                }
            }
            ServerEvent::FileProgress(progress) => {
                let document = &progress.text_document;
                if let Some(doc) = docs.by_uri(&document.uri) {
                    let Some(version) = report_version(document.version.map(i64::from)) else {
                        continue;
                    };
                    doc.on_progress(version, &progress.processing);
                }
            }
            ServerEvent::Exited(info) => {
                if info.status == Some(0) {
                    log_info!("Lean server of generation {generation} exited normally");
                } else {
                    log_warn!(
                        "Lean server exited (status {:?}, signal {:?}); stderr tail: {}",
                        info.status,
                        info.signal,
                        info.stderr_tail.trim()
                    );
                }
                for doc in docs.all() {
                    doc.on_server_gone(generation);
                }
            }
        }
    }
    // The client is gone: release any settle waiter still queued.
    lock(&docs.settle_waiters).clear();
}

/// The version a report is for: `Some(None)` when it names none, `None` when
/// it names one that is not a version (such a report cannot be tied to the
/// latest version, so it is dropped rather than taken for it).
fn report_version(version: Option<i64>) -> Option<Option<u64>> {
    match version.map(u64::try_from).transpose() {
        Ok(version) => Some(version),
        Err(_) => {
            log_warn!("dropped a Lean report for the malformed version {version:?}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsp::ExitInfo;
    use crate::lsp::protocol::{FileProgressParams, PublishedDiagnostics};
    use serde_json::value::RawValue;

    fn docs_with_one() -> (Arc<Docs>, DocUse) {
        let docs = Arc::new(Docs::new(Arc::default()));
        let doc = docs.doc(&DocPath {
            file: "/w/F.lean".into(),
            shown: "F.lean".into(),
        });
        (docs, doc)
    }

    fn diagnostics(uri: &str, version: i64) -> ServerEvent {
        ServerEvent::Diagnostics(PublishedDiagnostics {
            uri: uri.into(),
            version: Some(version),
            diagnostics: RawValue::from_string(
                r#"[{"severity":1,"message":"m","range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}}}]"#
                    .into(),
            )
            .unwrap(),
        })
    }

    fn progress(uri: &str, version: i64, fatal: bool) -> ServerEvent {
        let kind = if fatal { 2 } else { 1 };
        ServerEvent::FileProgress(
            serde_json::from_value::<FileProgressParams>(json!({
                "textDocument": { "uri": uri, "version": version },
                "processing": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}, "kind": kind}],
            }))
            .unwrap(),
        )
    }

    async fn opened(doc: &Doc, generation: u64) {
        let edit = doc.lock_edit().await;
        edit.open(
            generation,
            Some(super::super::document::Content {
                version: 1,
                text: Arc::from("x\n"),
                disk: None,
            }),
        );
    }

    /// The settle marker is applied after every notification queued before
    /// it: once `settle` returns, the documents show them (the answer to a
    /// wait travels another path and can overtake them).
    #[tokio::test]
    async fn settling_waits_for_the_notifications_sent_before() {
        let (docs, doc) = docs_with_one();
        opened(&doc, 1).await;
        let (tx, rx) = mpsc::unbounded_channel();
        // Queued before the router runs: only the marker can tell the call
        // they have been applied.
        tx.send(diagnostics(&doc.uri, 1)).unwrap();
        tx.send(progress(&doc.uri, 1, true)).unwrap();
        let router = tokio::spawn(route_events(Arc::clone(&docs), rx, 1));
        docs.settle(&tx).await;
        let snap = doc.snapshot();
        assert!(snap.published, "the diagnostics are there");
        assert!(snap.progress.fatal, "and the fatal report");
        assert!(!doc.lifecycle().is_open_in(1), "which stopped the file");
        drop(tx);
        router.await.unwrap();
    }

    /// A server's exit closes its documents, not those of a newer server; a
    /// report naming no valid version is dropped; settling after the router
    /// ended does not hang.
    #[tokio::test]
    async fn an_exit_closes_only_its_own_generation() {
        let (docs, doc) = docs_with_one();
        opened(&doc, 2).await;
        let (tx, rx) = mpsc::unbounded_channel();
        let router = tokio::spawn(route_events(Arc::clone(&docs), rx, 1));
        tx.send(progress(&doc.uri, -1, true)).unwrap();
        tx.send(ServerEvent::Exited(ExitInfo::default())).unwrap();
        docs.settle(&tx).await;
        assert!(doc.lifecycle().is_open_in(2), "{:?}", doc.lifecycle());
        drop(tx);
        router.await.unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        let router = tokio::spawn(route_events(Arc::clone(&docs), rx, 2));
        tx.send(ServerEvent::Exited(ExitInfo::default())).unwrap();
        docs.settle(&tx).await;
        assert_eq!(doc.lifecycle().generation(), None);
        drop(tx);
        router.await.unwrap();
        let (tx, rx) = mpsc::unbounded_channel::<ServerEvent>();
        drop(rx);
        docs.settle(&tx).await;
    }
}
