//! The runtime of one canonical workspace root: its Lean server process (started
//! lazily, restarted after it dies), its documents, and the routing of Lean's
//! notifications to them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::bases::{Bases, Rewritten};
use super::document::{DiagnosticSet, Doc, DocUse};
use super::errors::{MemoryKill, from_lsp, resource_limit, runtime_setup};
use super::handles::HandleStore;
use super::import_stamps::ImportStamps;
use super::launch::{Launcher, Limits, Timeouts};
use super::shadow::Pool;
use super::workspace::{DocPath, Root};
use crate::lsp::uri::path_to_uri;
use crate::lsp::{LspClient, ServerEvent};
use crate::results::{DocumentStats, HandleStats, MemoryStats, RuntimeStats};
use crate::surface::{ErrorCode, ToolError};
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

/// How long the worker of a document closed to make room may take to stop
/// before it is killed.
const WORKER_EXIT_WAIT: Duration = Duration::from_secs(5);

/// How often the resident memory of the Lean processes is read, when bounded.
const MEMORY_CHECK_PERIOD: Duration = Duration::from_millis(500);

/// A live Lean server of this runtime.
#[derive(Clone)]
pub struct Session {
    pub client: Arc<LspClient>,
    pub generation: u64,
    events: mpsc::UnboundedSender<ServerEvent>,
    admission: Arc<Admission>,
    /// Set when this server was killed for its memory.
    memory_kill: Arc<Mutex<Option<MemoryKill>>>,
}

/// The documents a runtime may have open in Lean at once (each one a Lean
/// worker process), and the turn that makes each opening count them and make
/// room in one step.
struct Admission {
    docs: Arc<Docs>,
    limit: usize,
    turn: tokio::sync::Mutex<()>,
}

pub struct Runtime {
    pub root: Root,
    launcher: Launcher,
    pub timeouts: Timeouts,
    limits: Limits,
    admission: Arc<Admission>,
    /// Calls in flight on this runtime (see [`RuntimeUse`]).
    in_flight: AtomicUsize,
    /// When a call last began or ended on it.
    last_used: Mutex<Instant>,
    memory: Mutex<MemoryUse>,
    /// Source files larger than this are refused.
    pub max_file_bytes: u64,
    shadow_slots: usize,
    shadows: Mutex<HashMap<PathBuf, Arc<Pool>>>,
    /// The header-keyed virtual documents of `lean_run_code`.
    pub snippets: super::snippets::Headers,
    /// `lean --version` of the workspace's toolchain, once read (a toolchain
    /// change needs `lean_drop_workspace` anyway).
    pub lean_version: tokio::sync::OnceCell<String>,
    bases: Bases,
    pub handles: HandleStore,
    /// The compiled imports Lean loaded, to notice checkpoints written by
    /// other processes on the shared file system.
    import_stamps: Arc<ImportStamps>,
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

/// What the memory checks saw.
#[derive(Debug, Default)]
struct MemoryUse {
    /// The largest resident set among the Lean processes at the last check.
    largest: Option<u64>,
    /// Processes killed for their memory.
    kills: u64,
}

/// A call's use of a runtime. While one exists the runtime is busy: it is
/// neither evicted to make room for another nor stopped as idle.
pub struct RuntimeUse(Arc<Runtime>);

impl std::ops::Deref for RuntimeUse {
    type Target = Arc<Runtime>;

    fn deref(&self) -> &Arc<Runtime> {
        &self.0
    }
}

impl Drop for RuntimeUse {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
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
        let docs = Arc::new(Docs::default());
        let import_stamps = Arc::new(ImportStamps::new(root.path()));
        Runtime {
            root,
            launcher,
            timeouts,
            limits: limits.clone(),
            admission: Arc::new(Admission {
                docs: Arc::clone(&docs),
                limit: limits.documents.max(1),
                turn: tokio::sync::Mutex::new(()),
            }),
            in_flight: AtomicUsize::new(0),
            last_used: Mutex::new(Instant::now()),
            memory: Mutex::default(),
            max_file_bytes: limits.max_file_bytes,
            shadow_slots: limits.shadow_slots,
            shadows: Mutex::new(HashMap::new()),
            snippets: Default::default(),
            lean_version: Default::default(),
            bases,
            handles,
            import_stamps,
            version_floors,
            created: Instant::now(),
            session: tokio::sync::Mutex::new(None),
            docs,
            starts: AtomicU64::new(0),
            failed_starts: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            next_marker: AtomicU64::new(0),
        }
    }

    pub fn record_request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// Begin a call's use of the runtime (ends when the use is dropped). The
    /// broker hands these out under its map lock, so an evicted runtime never
    /// gets a new one.
    pub fn begin_use(self: &Arc<Self>) -> RuntimeUse {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.touch();
        RuntimeUse(Arc::clone(self))
    }

    /// No call is in flight on the runtime.
    pub fn is_idle(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
    }

    /// When a call last began or ended on the runtime.
    pub fn last_used(&self) -> Instant {
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    /// Documents open in Lean now, shadow slots included (each a worker).
    pub fn open_in_lean(&self) -> usize {
        self.docs
            .by_file
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|d| d.state().open_in.is_some())
            .count()
    }

    /// The live proof handles.
    pub fn handle_stats(&self) -> HandleStats {
        self.handles.stats()
    }

    /// The document of `path`, created on first use, for a call's use.
    pub fn doc(&self, path: &DocPath) -> DocUse {
        let mut by_file = self.docs.by_file.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(doc) = by_file.get(&path.file) {
            return doc.begin_use();
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
        doc.begin_use()
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

    /// The document of `path` if it was ever synced, for a call's use.
    pub fn existing_doc(&self, path: &DocPath) -> Option<DocUse> {
        self.docs
            .by_file
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&path.file)
            .map(Doc::begin_use)
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
            admission: Arc::clone(&self.admission),
            memory_kill: Arc::default(),
        };
        *slot = Some(session.clone());
        Ok(session)
    }

    /// The live Lean server, unless none runs or one is being started or
    /// stopped right now; never waits.
    pub fn session_now(&self) -> Option<Session> {
        let slot = self.session.try_lock().ok()?;
        slot.as_ref()
            .filter(|session| session.client.is_alive())
            .cloned()
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
            Ok(result) => result.map_err(|e| memory_error(session, None, from_lsp(e, method))),
            Err(_) => Err(super::errors::timeout(method, self.timeouts.request)),
        }
    }

    /// Housekeeping, now and then, for as long as the runtime exists: shadow
    /// slots unused for a while give their workers back, an idle runtime
    /// stops its Lean server, and (when bounded) a Lean process holding too
    /// much memory is killed.
    pub fn spawn_housekeeping(self: &Arc<Self>) {
        let limits = &self.limits;
        let mut period = (limits.shadow_idle.min(limits.runtime_idle) / 2)
            .clamp(Duration::from_millis(200), Duration::from_secs(60));
        if limits.lean_rss.is_some() {
            period = period.min(MEMORY_CHECK_PERIOD);
        }
        let rt = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(period).await;
                let Some(rt) = rt.upgrade() else {
                    return;
                };
                rt.close_idle_shadows(rt.limits.shadow_idle).await;
                rt.stop_if_idle().await;
                if let Some(limit) = rt.limits.lean_rss {
                    rt.check_memory(limit).await;
                }
            }
        });
    }

    /// A runtime without a call for `LEAN_BEAM_RUNTIME_IDLE_SECS` gives its
    /// Lean processes back. Its documents, versions and handles stay (handles
    /// then answer that the Lean server restarted); the next call starts a new
    /// server and reopens what it needs.
    async fn stop_if_idle(&self) {
        let idle = self.limits.runtime_idle;
        if !self.is_idle() || self.last_used().elapsed() < idle {
            return;
        }
        // The session stays locked until the server is gone, so a call that
        // begins meanwhile starts the next one only then.
        let mut slot = self.session.lock().await;
        if !self.is_idle() || self.last_used().elapsed() < idle {
            return;
        }
        if let Some(session) = slot.take() {
            log_info!(
                "Lean server of {} (pid {}) stopped: no call for {} s (LEAN_BEAM_RUNTIME_IDLE_SECS)",
                self.root.display(),
                session.client.pid(),
                idle.as_secs()
            );
            stop(&session.client).await;
        }
    }

    /// Read the resident memory of every process of the Lean server's tree
    /// (off the async runtime) and kill the ones over `limit`: a file worker
    /// alone, or the server with all its workers. The calls that were running
    /// on a killed process then get a `resourceLimit` error of kind `memory`
    /// (see [`memory_error`]) instead of a crash.
    async fn check_memory(&self, limit: u64) {
        let Some(session) = self.session_now() else {
            return;
        };
        let client = Arc::clone(&session.client);
        let Ok(usage) = tokio::task::spawn_blocking(move || client.tree_usage()).await else {
            return;
        };
        self.memory_used().largest = usage.iter().map(|u| u.rss).max();
        let server = session.client.pid();
        let mut killed = Vec::new();
        for process in usage.iter().filter(|u| u.rss > limit) {
            let kill = MemoryKill {
                pid: process.seen.pid,
                rss: process.rss,
                limit,
                server: false,
            };
            // A worker, or what a worker started (Lake setting up its
            // imports): that worker goes. Anything else is the server's (the
            // server itself, or Lake serving it): the whole tree goes, and
            // every call on it learns why.
            let worker = (!process.server && process.seen.pid != server)
                .then(|| worker_of(&usage, process))
                .flatten();
            let Some(worker) = worker else {
                *session
                    .memory_kill
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some(MemoryKill {
                    server: true,
                    ..kill
                });
                self.memory_used().kills += 1;
                log_warn!(
                    "killed the Lean server of {} with its workers: pid {} used {} MiB, over LEAN_BEAM_MAX_LEAN_RSS_MIB",
                    self.root.display(),
                    process.seen.pid,
                    process.rss >> 20
                );
                let client = Arc::clone(&session.client);
                let _ = tokio::task::spawn_blocking(move || client.kill()).await;
                return;
            };
            if killed.contains(&worker.seen.pid) {
                continue;
            }
            killed.push(worker.seen.pid);
            let doc = worker
                .worker_uri
                .as_deref()
                .and_then(|uri| doc_for(&self.docs, uri));
            if let Some(doc) = &doc {
                doc.update_state(|s| s.memory_kill = Some(kill));
            }
            self.memory_used().kills += 1;
            log_warn!(
                "killed the Lean worker of {}: pid {} used {} MiB, over LEAN_BEAM_MAX_LEAN_RSS_MIB",
                doc.as_ref()
                    .map_or("a document not known here", |d| d.path.shown.as_str()),
                process.seen.pid,
                process.rss >> 20
            );
            let client = Arc::clone(&session.client);
            let processes = [worker.seen, process.seen];
            let _ = tokio::task::spawn_blocking(move || {
                for seen in processes {
                    client.kill_in_tree(seen);
                }
            })
            .await;
        }
    }

    fn memory_used(&self) -> std::sync::MutexGuard<'_, MemoryUse> {
        self.memory.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stop the Lean server and its workers (drop, EOF, eviction), and wait
    /// (off the async runtime) until none of them holds memory any more, so
    /// that what replaces them never runs beside them.
    pub async fn shutdown(&self) {
        let session = self.session.lock().await.take();
        if let Some(session) = session {
            stop(&session.client).await;
        }
    }

    pub fn stats(&self) -> RuntimeStats {
        let documents: Vec<DocumentStats> = {
            let by_file = self.docs.by_file.lock().unwrap_or_else(|e| e.into_inner());
            let mut documents: Vec<DocumentStats> = by_file
                .values()
                .filter(|d| !d.is_shadow())
                .map(|d| {
                    let s = d.state();
                    DocumentStats {
                        path: d.path.shown.clone(),
                        version: s.version,
                        open: s.open_in.is_some(),
                        settled: s.is_settled(),
                        worker_pid: s.worker.map(|w| w.pid),
                    }
                })
                .collect();
            documents.sort_by(|a, b| a.path.cmp(&b.path));
            documents
        };
        let session = self.session.try_lock().ok().and_then(|s| s.clone());
        let starts = self.starts.load(Ordering::Relaxed);
        let memory = {
            let memory = self.memory_used();
            MemoryStats {
                largest_mib: memory.largest.map(|b| b >> 20),
                killed: memory.kills,
            }
        };
        let (shadow_slots, shadow_slots_open) = {
            let pools = self.shadows.lock().unwrap_or_else(|e| e.into_inner());
            let slots = pools.values().map(|p| p.len() as u64).sum();
            let open = pools.values().map(|p| p.open_in_lean() as u64).sum();
            (slots, open)
        };
        RuntimeStats {
            root: self.root.display(),
            server_command: self.launcher.describe(&self.root),
            pid: session.as_ref().map(|s| s.client.pid()),
            alive: session.as_ref().is_some_and(|s| s.client.is_alive()),
            uptime_ms: self.created.elapsed().as_millis() as u64,
            idle_ms: if self.is_idle() {
                self.last_used().elapsed().as_millis() as u64
            } else {
                0
            },
            calls_in_flight: self.in_flight.load(Ordering::Relaxed) as u64,
            documents,
            documents_open_in_lean: self.open_in_lean() as u64,
            memory,
            requests: self.requests.load(Ordering::Relaxed),
            lsp_requests: session.as_ref().map(|s| s.client.stats().requests),
            starts,
            restarts: starts.saturating_sub(1),
            failed_starts: self.failed_starts.load(Ordering::Relaxed),
            handles: self.handles.stats(),
            prefix_bases: self.bases.stats(),
            shadow_slots,
            shadow_slots_open,
        }
    }

    /// A checkpoint of module `module` (file `saved`) was published. Lean
    /// reads imports only when a file is opened, so every other open document
    /// that may import it, directly or through the workspace's sources, is
    /// reopened at its next use instead of keeping the old declarations;
    /// the others keep their workers and reports. Shadow slots are all
    /// reopened: a prefix base imports the module's old `.olean` under a name
    /// that says nothing of it. Returns how many documents were marked.
    pub async fn imports_rebuilt(&self, saved: &std::path::Path, module: &str) -> usize {
        self.import_stamps.reloaded(module).await;
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

    /// Before a sync of `doc` with `text`: the checkpoints another process
    /// (another replica on the shared workspace, a `lake build`) published
    /// since Lean loaded them, among the workspace modules `doc` imports, are
    /// handled as this process's own (see [`Runtime::imports_rebuilt`]), so
    /// that this sync and the next uses of the other importers see them.
    pub async fn notice_rebuilt_imports(&self, doc: &Doc, text: &str) {
        for module in self.import_stamps.changed(&doc.path.file, text).await {
            let source = self.import_stamps.source(&module);
            let marked = self.imports_rebuilt(&source, &module).await;
            log_info!(
                "{module} was rebuilt outside this server (another replica or a build): {marked} open document(s) that may import it reopen"
            );
        }
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

impl Session {
    /// Room for `doc` to be opened in this Lean server, within
    /// `LEAN_BEAM_MAX_DOCUMENTS`. Called, with `doc.edit` held, right before
    /// the document is opened; `reopen`: the caller just closed its last
    /// opening in this server.
    ///
    /// Past the bound, the least recently used idle document is closed: idle
    /// means no call is in flight on it (no call holds it, see [`DocUse`],
    /// and its edit lock is free). Each closed document's worker is waited for
    /// (and killed after [`WORKER_EXIT_WAIT`]), as is the previous worker of
    /// a reopen when the server is at the bound, so the number of workers
    /// never goes past it. When no document is idle, a `resourceLimit` error
    /// says so.
    /// On success `doc` counts as open.
    pub async fn admit(&self, doc: &Doc, reopen: bool) -> Result<(), ToolError> {
        let admission = &self.admission;
        let _turn = admission.turn.lock().await;
        loop {
            let open: Vec<Arc<Doc>> = admission
                .docs
                .by_file
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .values()
                .filter(|d| !std::ptr::eq(d.as_ref(), doc))
                .filter(|d| d.state().open_in == Some(self.generation))
                .cloned()
                .collect();
            if open.len() < admission.limit {
                if reopen && open.len() + 1 >= admission.limit {
                    self.wait_worker_gone(doc).await;
                }
                break;
            }
            let mut idle: Vec<&Arc<Doc>> = open.iter().filter(|d| d.is_idle()).collect();
            idle.sort_by_key(|d| d.last_used());
            let Some((victim, _edit)) = idle
                .into_iter()
                .find_map(|d| d.edit.try_lock().ok().map(|edit| (d, edit)))
            else {
                return Err(documents_busy(doc, admission.limit, open.len()));
            };
            let _ = self.client.notify(
                "textDocument/didClose",
                json!({ "textDocument": { "uri": victim.uri } }),
            );
            victim.update_state(|s| s.open_in = None);
            log_debug!(
                "closed {} (least recently used) to open {} within LEAN_BEAM_MAX_DOCUMENTS={}",
                victim.path.shown,
                doc.path.shown,
                admission.limit
            );
            self.wait_worker_gone(victim).await;
        }
        doc.update_state(|s| s.open_in = Some(self.generation));
        Ok(())
    }

    /// Wait (off the async runtime) until the worker of `doc` is gone: not
    /// only stopped, but no longer holding its memory (a worker that exits
    /// still shows in `/proc` while it lets go of hundreds of MiB). Lean has
    /// let go of it (the document was closed), so one that takes longer than
    /// [`WORKER_EXIT_WAIT`] is killed.
    ///
    /// Lean starts a worker some time after it reads the `didOpen`, which a
    /// call without a barrier (`lean_update`) does not wait for: a worker
    /// never seen since the document was opened is first waited for to
    /// appear (for [`WORKER_EXIT_WAIT`] at most), since one not there yet is
    /// no worker gone. A fork of the server not yet turned into the program
    /// it runs counts as a worker being started.
    pub async fn wait_worker_gone(&self, doc: &Doc) {
        let client = Arc::clone(&self.client);
        let uri = doc.uri.to_string();
        let mut appeared = doc.state().worker.is_some();
        let _ = tokio::task::spawn_blocking(move || {
            let deadline = Instant::now() + WORKER_EXIT_WAIT;
            let mut killed = false;
            loop {
                let present = client.tree_has(&uri) || worker_starting(&client.tree_usage());
                if !present && (appeared || Instant::now() >= deadline) {
                    return;
                }
                appeared |= present;
                if present && Instant::now() >= deadline && !killed {
                    if let Some(worker) = client.find_in_tree(&uri) {
                        client.kill_in_tree(worker);
                    }
                    killed = true;
                }
                if Instant::now() >= deadline + WORKER_EXIT_WAIT {
                    crate::log_warn!("the Lean worker of {uri} is still there after it was killed");
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
        .await;
    }
}

/// Stop a Lean server and its workers (killed after a grace), and wait until
/// none of them holds memory any more.
async fn stop(client: &Arc<LspClient>) {
    client.shutdown(Duration::from_secs(2)).await;
    let client = Arc::clone(client);
    let _ = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + WORKER_EXIT_WAIT;
        while !client.process_tree().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    })
    .await;
}

/// Whether a Lean server of the tree has a child that is not yet the
/// program it will run: a fork still showing the server's own command line,
/// before its `exec` (a worker being started, whose document cannot be told).
fn worker_starting(tree: &[crate::process::tree::Usage]) -> bool {
    tree.iter().any(|child| {
        child.server
            && tree
                .iter()
                .any(|parent| parent.server && parent.seen.pid == child.ppid)
    })
}

/// The file worker that `process` is, or that started it (through any
/// number of parents within the tree).
fn worker_of<'a>(
    tree: &'a [crate::process::tree::Usage],
    process: &'a crate::process::tree::Usage,
) -> Option<&'a crate::process::tree::Usage> {
    let mut at = process;
    for _ in 0..tree.len() {
        if at.worker_uri.is_some() {
            return Some(at);
        }
        at = tree.iter().find(|u| u.seen.pid == at.ppid)?;
    }
    None
}

/// No document open in a runtime's Lean server can be closed to open `doc`.
fn documents_busy(doc: &Doc, limit: usize, open: usize) -> ToolError {
    resource_limit(
        "documents",
        super::launch::env::MAX_DOCUMENTS,
        limit as u64,
        open as u64,
        format!(
            "cannot open {} in Lean: {open} documents of this workspace are open (each a Lean worker, probe slots included) and every one has a call in flight, so none can be closed to make room. Retry when a call has finished, or close a document with lean_close",
            doc.path.shown
        ),
    )
}

/// The error of a call whose Lean process was killed for its memory, in place
/// of the crash it saw: the server's (any call on it) or `doc`'s worker.
/// Other errors pass unchanged.
pub fn memory_error(session: &Session, doc: Option<&Doc>, error: ToolError) -> ToolError {
    if !matches!(
        error.code,
        ErrorCode::WorkerCrashed | ErrorCode::WorkerExited
    ) {
        return error;
    }
    let shown = |doc: &Doc| {
        let shown = doc.path.shown.as_str();
        // A probe slot is named after the document it probes.
        shown
            .split_once('#')
            .map_or(shown, |(file, _)| file)
            .to_string()
    };
    let server = *session
        .memory_kill
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(kill) = server {
        return kill.error(doc.map(shown).as_deref());
    }
    match doc.and_then(|d| d.state().memory_kill.map(|kill| (d, kill))) {
        Some((doc, kill)) => kill.error(Some(&shown(doc))),
        None => error,
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
