//! The runtime of one canonical workspace root: its Lean server (started
//! lazily, restarted after it dies, stopped when idle), its documents, their
//! probe slots and prefix bases, its proof handles, and its housekeeping.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::bases::{Bases, Rewritten};
use super::docs::{Docs, VersionFloors};
use super::document::{Doc, DocUse};
use super::edit;
use super::handles::HandleStore;
use super::import_stamps::ImportStamps;
use super::launch::{Launcher, Limits, Timeouts};
use super::memory::Memory;
use super::server::{Admission, LeanServer, stop};
use super::shadow::Pool;
use super::workspace::{DocPath, Root};
use crate::broker::error::{Error, MemoryKill, Result};
use crate::results::{DocumentStats, HandleStats, MemoryStats, RuntimeStats};
use crate::util::lock;
use crate::{log_debug, log_info, log_warn};

/// How often the resident memory of the Lean processes is read, when bounded.
const MEMORY_CHECK_PERIOD: Duration = Duration::from_millis(500);

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
    /// The broker's memory budget, which every runtime draws on.
    budget: Arc<Memory>,
    /// Source files larger than this are refused.
    pub max_file_bytes: u64,
    shadow_slots: usize,
    shadows: Mutex<HashMap<PathBuf, Arc<Pool>>>,
    /// The header-keyed virtual documents of `lean_run_code`.
    pub snippets: super::snippet_docs::Headers,
    /// The toolchain `lean_verify` builds with, once found (a toolchain
    /// change needs `lean_drop_workspace` anyway).
    pub toolchain: tokio::sync::OnceCell<super::compiler::Toolchain>,
    bases: Bases,
    pub handles: HandleStore,
    /// The compiled imports Lean loaded, to notice checkpoints written by
    /// other processes on the shared file system.
    import_stamps: Arc<ImportStamps>,
    created: Instant,
    /// The live Lean server, if started.
    server: tokio::sync::Mutex<Option<LeanServer>>,
    docs: Arc<Docs>,
    starts: AtomicU64,
    /// Starts that failed (the server exited or did not answer `initialize`).
    failed_starts: AtomicU64,
    requests: AtomicU64,
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

impl Runtime {
    pub fn new(
        version_floors: Arc<VersionFloors>,
        root: Root,
        launcher: Launcher,
        timeouts: Timeouts,
        limits: &Limits,
        handles: HandleStore,
        budget: Arc<Memory>,
    ) -> Self {
        let bases = Bases::new(limits.prefix_bases);
        let docs = Arc::new(Docs::new(version_floors));
        let import_stamps = Arc::new(ImportStamps::new(root.path()));
        Runtime {
            root,
            launcher,
            timeouts,
            limits: limits.clone(),
            admission: Arc::new(Admission::new(limits.documents)),
            in_flight: AtomicUsize::new(0),
            last_used: Mutex::new(Instant::now()),
            memory: Mutex::default(),
            budget,
            max_file_bytes: limits.max_file_bytes,
            shadow_slots: limits.shadow_slots,
            shadows: Mutex::new(HashMap::new()),
            snippets: Default::default(),
            toolchain: Default::default(),
            bases,
            handles,
            import_stamps,
            created: Instant::now(),
            server: tokio::sync::Mutex::new(None),
            docs,
            starts: AtomicU64::new(0),
            failed_starts: AtomicU64::new(0),
            requests: AtomicU64::new(0),
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
        *lock(&self.last_used)
    }

    fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    /// Documents open in Lean now, shadow slots included (each a worker).
    pub fn open_in_lean(&self) -> usize {
        self.docs.open_in_lean()
    }

    /// The live proof handles.
    pub fn handle_stats(&self) -> HandleStats {
        self.handles.stats()
    }

    /// The document of `path`, created on first use, for a call's use.
    pub fn doc(&self, path: &DocPath) -> DocUse {
        self.docs.doc(path)
    }

    /// Remember every document's version, so that a later runtime of the same
    /// files continues above them (called when the runtime is evicted).
    pub fn record_versions(&self) {
        self.docs.record_versions();
    }

    /// The shadow slot pool of a document.
    pub fn shadow_pool(&self, path: &DocPath) -> Arc<Pool> {
        let mut shadows = lock(&self.shadows);
        Arc::clone(shadows.entry(path.file.clone()).or_insert_with(|| {
            Arc::new(Pool::new(
                path.clone(),
                self.shadow_slots,
                Arc::clone(&self.docs),
                Arc::clone(&self.budget),
            ))
        }))
    }

    /// Every shadow slot pool (probed documents and snippet headers).
    pub fn shadow_pools(&self) -> Vec<Arc<Pool>> {
        lock(&self.shadows).values().cloned().collect()
    }

    /// A shadow slot of `pool` for text `wanted`, within the memory budget
    /// (see [`super::slots`]); its `note` says what the budget made it do.
    pub async fn slot(
        &self,
        server: &LeanServer,
        pool: &Pool,
        wanted: &str,
    ) -> Result<super::shadow::SlotGuard> {
        let others: Vec<Arc<Pool>> = self
            .shadow_pools()
            .into_iter()
            .filter(|p| !std::ptr::eq(p.as_ref(), pool))
            .collect();
        super::slots::acquire(&self.budget, server, pool, &others, wanted).await
    }

    /// The broker's memory budget.
    pub fn memory(&self) -> &Arc<Memory> {
        &self.budget
    }

    /// Whether one more Lean worker like the one of `path` (`None`: the
    /// largest) fits in the memory budget by its last reading (never waits).
    pub fn room_for_worker(&self, path: Option<&DocPath>) -> bool {
        let uri = path.map_or_else(String::new, |p| crate::lsp::uri::path_to_uri(&p.file));
        self.budget.room_now(&uri)
    }

    /// Give back the Lean workers of shadow slots unused for `idle`.
    pub async fn close_idle_shadows(&self, idle: std::time::Duration) {
        let pools: Vec<Arc<Pool>> = lock(&self.shadows).values().cloned().collect();
        let server = self.server_if_running().await;
        for pool in pools {
            for slot in pool.take_idle(idle) {
                let edit = slot.doc().lock_edit().await;
                if edit::close(&edit, server.as_ref()).await {
                    log_debug!("closed idle shadow {}", slot.doc().path.shown);
                }
            }
        }
    }

    /// `shadow` rewritten onto a prefix base for its first `cut` bytes, when
    /// one is ready (see [`Bases::rewrite`]).
    /// A base compiles in a `lean` process of its own: only while one more
    /// worker like `path`'s fits in the memory budget (else later).
    pub fn rebase(&self, path: &DocPath, shadow: &str, cut: usize) -> Option<Rewritten> {
        self.bases.rewrite(
            &self.launcher,
            &self.root,
            self.timeouts.sync,
            shadow,
            cut,
            self.room_for_worker(Some(path)),
        )
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
        self.docs.existing(path)
    }

    /// The live Lean server, started (or restarted after a death) on demand.
    /// Concurrent first callers share one start.
    pub async fn server(&self) -> Result<LeanServer> {
        let mut slot = self.server.lock().await;
        if let Some(server) = slot.as_ref() {
            if server.client.is_running() {
                return Ok(server.clone());
            }
            log_warn!(
                "Lean server of {} (pid {}) is gone; restarting",
                self.root.display(),
                server.client.pid()
            );
        }
        let mut command = self.launcher.command(&self.root);
        if let Some(dir) = self.bases.search_dir() {
            add_search_dir(&mut command, dir);
        }
        // The generation is counted only once the server has started.
        let generation = self.starts.load(Ordering::SeqCst) + 1;
        let server = LeanServer::start(
            &self.launcher,
            &command,
            self.timeouts.startup,
            generation,
            &self.docs,
            &self.admission,
            self.timeouts.request,
        )
        .await
        .map_err(|e| {
            self.failed_starts.fetch_add(1, Ordering::Relaxed);
            Error::Setup {
                command: self.launcher.describe(&self.root),
                root: self.root.display(),
                error: Box::new(e),
            }
        })?;
        self.starts.fetch_add(1, Ordering::SeqCst);
        self.budget.register(&server.client);
        log_info!(
            "started Lean server for {} (pid {}, generation {generation})",
            self.root.display(),
            server.client.pid()
        );
        *slot = Some(server.clone());
        Ok(server)
    }

    /// The live Lean server, unless none runs or one is being started or
    /// stopped right now; never waits.
    pub fn server_now(&self) -> Option<LeanServer> {
        let slot = self.server.try_lock().ok()?;
        slot.as_ref()
            .filter(|server| server.client.is_alive())
            .cloned()
    }

    /// The live Lean server if one is running; never starts one.
    pub async fn server_if_running(&self) -> Option<LeanServer> {
        self.server
            .lock()
            .await
            .as_ref()
            .filter(|server| server.client.is_alive())
            .cloned()
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
        // The server stays locked until it is gone, so a call that begins
        // meanwhile starts the next one only then.
        let mut slot = self.server.lock().await;
        if !self.is_idle() || self.last_used().elapsed() < idle {
            return;
        }
        if let Some(server) = slot.take() {
            log_info!(
                "Lean server of {} (pid {}) stopped: no call for {} s (LEAN_BEAM_RUNTIME_IDLE_SECS)",
                self.root.display(),
                server.client.pid(),
                idle.as_secs()
            );
            stop(&server.client).await;
        }
    }

    /// Read the resident memory of every process of the Lean server's tree
    /// (off the async runtime) and kill the ones over `limit`: a file worker
    /// alone, or the server with all its workers. The calls that were running
    /// on a killed process then get a `resourceLimit` error of kind `memory`
    /// (see [`memory_error`](super::server::memory_error)) instead of a crash.
    async fn check_memory(&self, limit: u64) {
        let Some(server) = self.server_now() else {
            return;
        };
        let client = Arc::clone(&server.client);
        let Ok(usage) = tokio::task::spawn_blocking(move || client.tree_usage()).await else {
            return;
        };
        self.memory_used().largest = usage.iter().map(|u| u.rss).max();
        let server_pid = server.client.pid();
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
            let worker = (!process.server && process.seen.pid != server_pid)
                .then(|| worker_of(&usage, process))
                .flatten();
            let Some(worker) = worker else {
                server.memory_killed(MemoryKill {
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
                server.client.kill().await;
                return;
            };
            if killed.contains(&worker.seen.pid) {
                continue;
            }
            killed.push(worker.seen.pid);
            let doc = worker
                .worker_uri
                .as_deref()
                .and_then(|uri| self.docs.by_uri(uri));
            if let Some(doc) = &doc {
                doc.on_memory_kill(kill);
            }
            self.memory_used().kills += 1;
            log_warn!(
                "killed the Lean worker of {}: pid {} used {} MiB, over LEAN_BEAM_MAX_LEAN_RSS_MIB",
                doc.as_ref()
                    .map_or("a document not known here", |d| d.path.shown.as_str()),
                process.seen.pid,
                process.rss >> 20
            );
            let client = Arc::clone(&server.client);
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
        lock(&self.memory)
    }

    /// Stop the Lean server and its workers (drop, EOF, eviction), and wait
    /// (off the async runtime) until none of them holds memory any more, so
    /// that what replaces them never runs beside them.
    pub async fn shutdown(&self) {
        let server = self.server.lock().await.take();
        if let Some(server) = server {
            stop(&server.client).await;
        }
    }

    pub fn stats(&self) -> RuntimeStats {
        let documents: Vec<DocumentStats> = {
            let mut documents: Vec<DocumentStats> = self
                .docs
                .all()
                .iter()
                .filter(|d| !d.is_shadow())
                .map(|d| {
                    let s = d.state();
                    let lifecycle = s.lifecycle;
                    DocumentStats {
                        path: d.path.shown.clone(),
                        version: s.version,
                        open: lifecycle.generation().is_some(),
                        settled: lifecycle.is_settled(),
                        worker_pid: lifecycle.worker().map(|w| w.pid),
                    }
                })
                .collect();
            documents.sort_by(|a, b| a.path.cmp(&b.path));
            documents
        };
        let server = self.server.try_lock().ok().and_then(|s| s.clone());
        let starts = self.starts.load(Ordering::Relaxed);
        let memory = {
            let memory = self.memory_used();
            MemoryStats {
                largest_mib: memory.largest.map(|b| b >> 20),
                killed: memory.kills,
            }
        };
        let (shadow_slots, shadow_slots_open) = {
            let pools = lock(&self.shadows);
            let slots = pools.values().map(|p| p.len() as u64).sum();
            let open = pools.values().map(|p| p.open_in_lean() as u64).sum();
            (slots, open)
        };
        RuntimeStats {
            root: self.root.display(),
            server_command: self.launcher.describe(&self.root),
            pid: server.as_ref().map(|s| s.client.pid()),
            alive: server.as_ref().is_some_and(|s| s.client.is_alive()),
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
            lsp_requests: server.as_ref().map(|s| s.client.stats().requests),
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
        let docs: Vec<(Arc<Doc>, Arc<str>)> = self
            .docs
            .all()
            .into_iter()
            .filter(|doc| doc.path.file.as_path() != saved)
            .map(|doc| {
                let state = doc.state();
                (doc, state)
            })
            .filter(|(_, state)| state.lifecycle.generation().is_some())
            .map(|(doc, state)| (doc, state.text))
            .collect();
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
                doc.mark_for_reopen();
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
        let mut open: Vec<String> = self
            .docs
            .all()
            .iter()
            .filter(|d| !d.is_shadow() && d.lifecycle().generation().is_some())
            .map(|d| d.path.shown.clone())
            .collect();
        open.sort();
        open
    }
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
