//! The runtime of one canonical workspace root: its Lean server process (started
//! lazily, restarted after it dies), its documents, and the routing of Lean's
//! notifications to them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::bases::{Bases, Rewritten};
use super::document::{DiagnosticSet, Doc};
use super::errors::{from_lsp, runtime_setup};
use super::handles::HandleStore;
use super::launch::{Launcher, Limits, Timeouts};
use super::shadow::Pool;
use super::workspace::{DocPath, Root};
use crate::lsp::uri::path_to_uri;
use crate::lsp::{LspClient, ServerEvent};
use crate::surface::ToolError;
use crate::{log_debug, log_info, log_warn};

/// The highest version each file has had in any runtime of this process.
#[derive(Debug, Default)]
pub struct VersionFloors(Mutex<HashMap<PathBuf, u64>>);

impl VersionFloors {
    pub fn get(&self, file: &std::path::Path) -> u64 {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(file)
            .copied()
            .unwrap_or(0)
    }

    pub fn raise(&self, file: &std::path::Path, version: u64) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let entry = map.entry(file.to_path_buf()).or_insert(0);
        *entry = (*entry).max(version);
    }
}

/// The method of the marker the broker puts behind Lean's notifications (see
/// `Runtime::settle`). Lean never sends it.
const SETTLE_MARKER: &str = "$/beam/settled";

/// A live Lean server of this runtime.
#[derive(Clone)]
pub struct Session {
    pub client: Arc<LspClient>,
    pub generation: u64,
    events: mpsc::UnboundedSender<ServerEvent>,
}

pub struct Runtime {
    pub root: Root,
    launcher: Launcher,
    pub timeouts: Timeouts,
    /// Source files larger than this are refused.
    pub max_file_bytes: u64,
    shadow_slots: usize,
    shadows: Mutex<HashMap<PathBuf, Arc<Pool>>>,
    bases: Bases,
    pub handles: HandleStore,
    version_floors: Arc<VersionFloors>,
    created: Instant,
    session: tokio::sync::Mutex<Option<Session>>,
    docs: Arc<Docs>,
    starts: AtomicU64,
    /// Starts that failed (the server exited or did not answer `initialize`).
    failed_starts: AtomicU64,
    requests: AtomicU64,
    next_marker: AtomicU64,
}

/// Documents by canonical file and by URI (Lean reports by URI).
#[derive(Default)]
struct Docs {
    by_file: Mutex<HashMap<PathBuf, Arc<Doc>>>,
    by_uri: Mutex<HashMap<String, Arc<Doc>>>,
    settle_waiters: Mutex<HashMap<u64, oneshot::Sender<()>>>,
}

impl Runtime {
    pub fn new(
        version_floors: Arc<VersionFloors>,
        root: Root,
        launcher: Launcher,
        timeouts: Timeouts,
        limits: &Limits,
        handles: HandleStore,
    ) -> Self {
        let bases = Bases::new(limits.prefix_bases);
        Runtime {
            root,
            launcher,
            timeouts,
            max_file_bytes: limits.max_file_bytes,
            shadow_slots: limits.shadow_slots,
            shadows: Mutex::new(HashMap::new()),
            bases,
            handles,
            version_floors,
            created: Instant::now(),
            session: tokio::sync::Mutex::new(None),
            docs: Arc::new(Docs::default()),
            starts: AtomicU64::new(0),
            failed_starts: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            next_marker: AtomicU64::new(0),
        }
    }

    pub fn record_request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// The document of `path`, created on first use.
    pub fn doc(&self, path: &DocPath) -> Arc<Doc> {
        let mut by_file = self.docs.by_file.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(doc) = by_file.get(&path.file) {
            return Arc::clone(doc);
        }
        let uri = path_to_uri(&path.file);
        let floor = self.version_floors.get(&path.file);
        let doc = Arc::new(Doc::new(path.clone(), uri.clone(), floor));
        by_file.insert(path.file.clone(), Arc::clone(&doc));
        self.docs
            .by_uri
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(uri, Arc::clone(&doc));
        doc
    }

    /// Remember every document's version, so that a later runtime of the same
    /// files continues above them (called when the runtime is evicted).
    pub fn record_versions(&self) {
        let by_file = self.docs.by_file.lock().unwrap_or_else(|e| e.into_inner());
        for (file, doc) in by_file.iter() {
            self.version_floors.raise(file, doc.state().version);
        }
    }

    /// The shadow slot pool of a document.
    pub fn shadow_pool(&self, path: &DocPath) -> Arc<Pool> {
        let mut shadows = self.shadows.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(
            shadows
                .entry(path.file.clone())
                .or_insert_with(|| Arc::new(Pool::new(path.clone(), self.shadow_slots))),
        )
    }

    /// Give back the Lean workers of shadow slots unused for `idle`.
    pub async fn close_idle_shadows(&self, idle: std::time::Duration) {
        let pools: Vec<Arc<Pool>> = self
            .shadows
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        let session = self.session_if_running().await.ok();
        for pool in pools {
            for slot in pool.take_idle(idle) {
                if super::sync::close_in_lean(session.as_ref(), slot.doc()).await {
                    log_debug!("closed idle shadow {}", slot.doc().path.shown);
                }
            }
        }
    }

    /// `shadow` rewritten onto a prefix base for its first `cut` bytes, when
    /// one is ready (see [`Bases::rewrite`]).
    pub fn rebase(&self, shadow: &str, cut: usize) -> Option<Rewritten> {
        self.bases
            .rewrite(&self.launcher, &self.root, self.timeouts.sync, shadow, cut)
    }

    /// The prefix base `key` did not import: stop using it.
    pub fn base_failed(&self, key: u64) {
        self.bases.failed(key);
    }

    /// A prefix base imported.
    pub fn base_imported(&self) {
        self.bases.imported();
    }

    /// The document of `path` if it was ever synced.
    pub fn existing_doc(&self, path: &DocPath) -> Option<Arc<Doc>> {
        self.docs
            .by_file
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&path.file)
            .cloned()
    }

    /// The live Lean server, started (or restarted after a death) on demand.
    /// Concurrent first callers share one start.
    pub async fn session(&self) -> Result<Session, ToolError> {
        let mut slot = self.session.lock().await;
        if let Some(session) = slot.as_ref() {
            if session.client.is_running() {
                return Ok(session.clone());
            }
            log_warn!(
                "Lean server of {} (pid {}) is gone; restarting",
                self.root.display(),
                session.client.pid()
            );
        }
        let mut command = self.launcher.command(&self.root);
        if let Some(dir) = self.bases.search_dir() {
            add_search_dir(&mut command, dir);
        }
        let (events, rx) = mpsc::unbounded_channel();
        let client = LspClient::start(&command, events.clone(), self.timeouts.startup)
            .await
            .map_err(|e| {
                self.failed_starts.fetch_add(1, Ordering::Relaxed);
                runtime_setup(&self.launcher.describe(&self.root), &self.root, e)
            })?;
        let generation = self.starts.fetch_add(1, Ordering::SeqCst) + 1;
        log_info!(
            "started Lean server for {} (pid {}, generation {generation})",
            self.root.display(),
            client.pid()
        );
        tokio::spawn(route_events(Arc::clone(&self.docs), rx, generation));
        let session = Session {
            client,
            generation,
            events,
        };
        *slot = Some(session.clone());
        Ok(session)
    }

    /// The live Lean server if one is running; never starts one.
    pub async fn session_if_running(&self) -> Result<Session, ()> {
        match self.session.lock().await.as_ref() {
            Some(session) if session.client.is_alive() => Ok(session.clone()),
            _ => Err(()),
        }
    }

    /// Wait until every notification Lean sent before this point has been
    /// applied to the documents. Lean answers `waitForDiagnostics` after it sent
    /// the diagnostics; the answer and the notifications travel separate paths
    /// here, so a marker queued behind them closes the gap.
    pub async fn settle(&self, session: &Session) {
        let id = self.next_marker.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.docs
            .settle_waiters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        let marker = ServerEvent::Notification {
            method: SETTLE_MARKER.into(),
            params: json!(id),
        };
        if session.events.send(marker).is_ok() {
            let _ = rx.await;
        }
    }

    /// Send a request to the current Lean server with the request time limit.
    pub async fn request(
        &self,
        session: &Session,
        method: &str,
        params: Value,
    ) -> Result<Value, ToolError> {
        match tokio::time::timeout(
            self.timeouts.request,
            session.client.request(method, params),
        )
        .await
        {
            Ok(result) => result.map_err(|e| from_lsp(e, method)),
            Err(_) => Err(super::errors::timeout(method, self.timeouts.request)),
        }
    }

    /// Stop the Lean server and its workers (drop, EOF).
    pub async fn shutdown(&self) {
        let session = self.session.lock().await.take();
        if let Some(session) = session {
            session
                .client
                .shutdown(std::time::Duration::from_secs(2))
                .await;
        }
    }

    pub fn stats(&self) -> Value {
        let docs: Vec<Value> = {
            let by_file = self.docs.by_file.lock().unwrap_or_else(|e| e.into_inner());
            let mut docs: Vec<Value> = by_file
                .values()
                .filter(|d| !d.is_shadow())
                .map(|d| {
                    let s = d.state();
                    json!({ "path": d.path.shown, "version": s.version, "open": s.open_in.is_some(), "settled": s.is_settled(), "workerPid": s.worker.map(|w| w.pid) })
                })
                .collect();
            docs.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
            docs
        };
        let session = self.session.try_lock().ok().and_then(|s| s.clone());
        let starts = self.starts.load(Ordering::Relaxed);
        json!({
            "root": self.root.display(),
            "serverCommand": self.launcher.describe(&self.root),
            "pid": session.as_ref().map(|s| s.client.pid()),
            "alive": session.as_ref().is_some_and(|s| s.client.is_alive()),
            "uptimeMs": self.created.elapsed().as_millis() as u64,
            "documents": docs,
            "requests": self.requests.load(Ordering::Relaxed),
            "lspRequests": session.as_ref().map(|s| s.client.stats().requests),
            "starts": starts,
            "restarts": starts.saturating_sub(1),
            "failedStarts": self.failed_starts.load(Ordering::Relaxed),
            "handles": self.handles.stats(),
            "prefixBases": self.bases.stats(),
            "shadowSlots": self.shadows.lock().unwrap_or_else(|e| e.into_inner()).values().map(|p| p.len()).sum::<usize>(),
            "shadowSlotsOpen": self.shadows.lock().unwrap_or_else(|e| e.into_inner()).values().map(|p| p.open_in_lean()).sum::<usize>(),
        })
    }

    /// A checkpoint of module `module` (file `saved`) was published. Lean
    /// reads imports only when a file is opened, so every other open document
    /// that may import it, directly or through the workspace's sources, is
    /// reopened at its next use instead of keeping the old declarations;
    /// the others keep their workers and reports. Shadow slots are all
    /// reopened: a prefix base imports the module's old `.olean` under a name
    /// that says nothing of it. Returns how many documents were marked.
    pub async fn imports_rebuilt(&self, saved: &std::path::Path, module: &str) -> usize {
        self.bases.clear();
        let docs: Vec<(Arc<Doc>, Arc<str>)> = {
            let by_file = self.docs.by_file.lock().unwrap_or_else(|e| e.into_inner());
            by_file
                .iter()
                .filter(|(file, _)| file.as_path() != saved)
                .map(|(_, doc)| (Arc::clone(doc), doc.state()))
                .filter(|(_, state)| state.open_in.is_some())
                .map(|(doc, state)| (doc, Arc::clone(&state.text)))
                .collect()
        };
        // The import graph reads the workspace's headers: off the runtime.
        // If that fails, every open document may import the module.
        let (root, module, texts) = (
            self.root.path().to_path_buf(),
            module.to_owned(),
            docs.iter()
                .map(|(doc, text)| (doc.is_shadow(), Arc::clone(text)))
                .collect::<Vec<_>>(),
        );
        let verdicts =
            crate::safe_fs::off_runtime(self.root.path(), "read the headers under", move || {
                let mut graph = super::importers::ImportGraph::new(&root);
                Ok(texts
                    .iter()
                    .map(|(shadow, text)| *shadow || graph.may_import(text, &module))
                    .collect::<Vec<bool>>())
            })
            .await
            .unwrap_or_else(|_| vec![true; docs.len()]);
        let mut marked = 0;
        for ((doc, _), may_import) in docs.iter().zip(verdicts) {
            if may_import {
                doc.update_state(super::document::DocState::mark_for_reopen);
                marked += 1;
            }
        }
        marked
    }

    /// Open documents, for feedback reports.
    pub fn open_documents(&self) -> Vec<String> {
        let by_file = self.docs.by_file.lock().unwrap_or_else(|e| e.into_inner());
        let mut open: Vec<String> = by_file
            .values()
            .filter(|d| !d.is_shadow() && d.state().open_in.is_some())
            .map(|d| d.path.shown.clone())
            .collect();
        open.sort();
        open
    }
}

/// Apply Lean's notifications to the documents, in arrival order.
async fn route_events(
    docs: Arc<Docs>,
    mut events: mpsc::UnboundedReceiver<ServerEvent>,
    generation: u64,
) {
    while let Some(event) = events.recv().await {
        match event {
            ServerEvent::Notification { method, params } if method == SETTLE_MARKER => {
                if let Some(id) = params.as_u64() {
                    let waiter = docs
                        .settle_waiters
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&id);
                    if let Some(tx) = waiter {
                        let _ = tx.send(());
                    }
                }
            }
            ServerEvent::Notification { .. } => {}
            ServerEvent::Diagnostics(published) => {
                if let Some(doc) = doc_for(&docs, &published.uri) {
                    let Some(version) = report_version(published.version) else {
                        continue;
                    };
                    doc.on_diagnostics(version, DiagnosticSet::published(published.diagnostics));
                }
            }
            ServerEvent::FileProgress(progress) => {
                let document = &progress.text_document;
                if let Some(doc) = doc_for(&docs, &document.uri) {
                    let Some(version) = report_version(document.version.map(i64::from)) else {
                        continue;
                    };
                    doc.on_progress(version, &progress.processing);
                }
            }
            ServerEvent::Exited(info) if info.status == Some(0) => {
                log_info!("Lean server of generation {generation} exited normally");
                mark_closed(&docs, generation);
            }
            ServerEvent::Exited(info) => {
                log_warn!(
                    "Lean server exited (status {:?}, signal {:?}); stderr tail: {}",
                    info.status,
                    info.signal,
                    info.stderr_tail.trim()
                );
                mark_closed(&docs, generation);
            }
        }
    }
    // The client is gone: release any settle waiter still queued.
    docs.settle_waiters
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
}

/// Lean session `generation` is gone: none of its documents is open any more.
fn mark_closed(docs: &Docs, generation: u64) {
    let by_file = docs.by_file.lock().unwrap_or_else(|e| e.into_inner());
    for doc in by_file.values() {
        doc.update_state(|s| {
            if s.open_in == Some(generation) {
                s.open_in = None;
            }
        });
    }
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

fn doc_for(docs: &Docs, uri: &str) -> Option<Arc<Doc>> {
    docs.by_uri
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(uri)
        .cloned()
}

/// Put the prefix bases' directory on the server's module search path: after
/// the root's own entries for a bare `lean --server`; for `lake serve`, on the
/// `LEAN_PATH` it starts with (whether Lake's workers then see it is Lake's
/// business: a base that does not import turns bases off, see
/// [`Bases::failed`]).
fn add_search_dir(command: &mut crate::lsp::ServerCommand, dir: &std::path::Path) {
    let dir = dir.to_string_lossy();
    if let Some((_, value)) = command.env.iter_mut().find(|(k, _)| k == "LEAN_PATH") {
        value.push(':');
        value.push_str(&dir);
        return;
    }
    let value = match std::env::var("LEAN_PATH") {
        Ok(inherited) if !inherited.is_empty() => format!("{inherited}:{dir}"),
        _ => dir.into_owned(),
    };
    command.env.push(("LEAN_PATH".into(), value));
}
