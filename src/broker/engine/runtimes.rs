//! The runtimes of one server process: one per canonical workspace root,
//! created lazily by the first request that needs it, at most
//! `LEAN_BEAM_MAX_RUNTIMES` (the least recently used idle one evicted), kept
//! until dropped or shut down. What every feature starts from: the broker's
//! features are methods of [`Runtimes`], reached through `Broker`'s one-line
//! methods.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use super::launch::{Launcher, Limits, Timeouts};
use super::runtime::{Runtime, RuntimeUse};
use super::workspace::{self, Root};
use super::{bases, checkpoint, docs, handles, memory};
use crate::broker::error::{Error, Limit, Result};
use crate::results::{self, LimitUse, RuntimeStats};
use crate::util::lock;

pub(crate) struct Runtimes {
    pub(crate) launcher: Launcher,
    pub(crate) timeouts: Timeouts,
    pub(crate) limits: Limits,
    /// Identifies this server process in proof handles.
    pub(crate) process: handles::ProcessTag,
    pub(crate) next_runtime_id: std::sync::atomic::AtomicU64,
    /// Versions survive eviction: a recreated runtime continues above them, so
    /// a version returned before a drop never names different content after it.
    pub(crate) version_floors: Arc<docs::VersionFloors>,
    pub(crate) runtimes: Mutex<HashMap<Root, Arc<Runtime>>>,
    /// Held while a runtime is created (and, at the bound, another evicted
    /// for it), so that a new runtime's Lean server never starts before the
    /// evicted one's is gone.
    pub(crate) creating: tokio::sync::Mutex<()>,
    pub(crate) resolver: workspace::Resolver,
    /// `lean_search`'s declaration indexes, one per workspace, shared by
    /// every client.
    pub(crate) indexes: crate::search::Indexes,
    /// The memory budget every runtime's Lean processes draw on.
    pub(crate) memory: Arc<memory::Memory>,
}

impl Runtimes {
    pub fn new(launcher: Launcher, timeouts: Timeouts, limits: Limits) -> Self {
        let memory = Arc::new(memory::Memory::new(
            limits.lean_memory.clone(),
            limits.meter.clone(),
        ));
        Runtimes {
            memory,
            launcher,
            timeouts,
            limits,
            process: handles::ProcessTag::random(),
            next_runtime_id: std::sync::atomic::AtomicU64::new(1),
            version_floors: Arc::default(),
            runtimes: Mutex::new(HashMap::new()),
            creating: tokio::sync::Mutex::new(()),
            resolver: workspace::Resolver::default(),
            indexes: crate::search::Indexes::from_env(),
        }
    }

    /// Refuse a handle that is malformed or from another server process.
    pub(crate) fn check_handle_origin(&self, handle: &str) -> Result<()> {
        handles::check_process(handle, self.process)
    }

    /// The canonical root of a descriptor (see [`workspace::resolve`]).
    pub fn resolve_root(&self, workspace: &str) -> Result<Root> {
        self.resolver.root(workspace)
    }

    /// The canonical root of a descriptor and a document path under it (see
    /// [`workspace::resolve_path`]).
    pub(crate) fn resolve_document(
        &self,
        workspace: &str,
        path: &str,
    ) -> Result<workspace::Resolved> {
        self.resolver.document(workspace, path)
    }

    pub(crate) fn launcher(&self) -> &Launcher {
        &self.launcher
    }

    pub(crate) fn map(&self) -> std::sync::MutexGuard<'_, HashMap<Root, Arc<Runtime>>> {
        lock(&self.runtimes)
    }

    /// The runtime of `root` for a call's use, created if absent. Creating one
    /// is cheap: its Lean server starts on the first request that needs it.
    ///
    /// At most `LEAN_BEAM_MAX_RUNTIMES` runtimes are cached: past it the least
    /// recently used idle one (no call in flight on it) is evicted as
    /// `lean_drop_workspace` would (its Lean processes stopped, its handles
    /// invalidated) before the new one is made; when every one is busy the
    /// call gets a `resourceLimit` error.
    pub(crate) async fn runtime(&self, root: &Root) -> Result<RuntimeUse> {
        if let Some(rt) = self.cached(root) {
            return Ok(rt);
        }
        let _creating = self.creating.lock().await;
        let victim = {
            let mut map = self.map();
            if let Some(rt) = map.get(root) {
                return Ok(rt.begin_use());
            }
            if map.len() >= self.limits.runtimes.max(1) {
                let victim = map
                    .values()
                    .filter(|rt| rt.is_idle())
                    .min_by_key(|rt| rt.last_used())
                    .cloned()
                    .ok_or_else(|| runtimes_busy(root, self.limits.runtimes, map.len()))?;
                map.remove(&victim.root);
                Some(victim)
            } else {
                None
            }
        };
        if let Some(victim) = victim {
            crate::log_info!(
                "evicted the runtime of {} (least recently used) to make room for {} within LEAN_BEAM_MAX_RUNTIMES={}",
                victim.root.display(),
                root.display(),
                self.limits.runtimes
            );
            victim.record_versions();
            victim.shutdown().await;
        }
        let mut map = self.map();
        let id = self
            .next_runtime_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let handles = handles::HandleStore::new(self.process, id, self.limits.handles);
        let rt = Arc::new(Runtime::new(
            Arc::clone(&self.version_floors),
            root.clone(),
            self.launcher.clone(),
            self.timeouts.clone(),
            &self.limits,
            handles,
            Arc::clone(&self.memory),
        ));
        rt.spawn_housekeeping();
        // What killed servers left behind: checkpoint scratch in this root,
        // prefix bases in the temp dir.
        let (stale, bases) = (root.path().to_path_buf(), self.limits.prefix_bases);
        tokio::task::spawn_blocking(move || {
            checkpoint::remove_stale_scratch(&stale);
            if bases {
                bases::remove_orphans();
            }
        });
        map.insert(root.clone(), Arc::clone(&rt));
        Ok(rt.begin_use())
    }

    /// The runtime of `root` for a call's use, only if one is cached (never
    /// creates one).
    pub(crate) fn cached(&self, root: &Root) -> Option<RuntimeUse> {
        self.map().get(root).map(Runtime::begin_use)
    }

    /// Remove and stop the runtime of `root`, if cached.
    pub(crate) async fn evict(&self, root: &Root) -> Option<Arc<Runtime>> {
        let runtime = self.map().remove(root)?;
        runtime.record_versions();
        runtime.shutdown().await;
        Some(runtime)
    }

    /// Stop every runtime (transport shutdown).
    pub async fn shutdown(&self) {
        let runtimes: Vec<Arc<Runtime>> = self.map().drain().map(|(_, rt)| rt).collect();
        let mut stops = tokio::task::JoinSet::new();
        for rt in runtimes {
            stops.spawn(async move { rt.shutdown().await });
        }
        while stops.join_next().await.is_some() {}
    }

    pub fn stats(&self) -> BTreeMap<String, RuntimeStats> {
        let runtimes: Vec<Arc<Runtime>> = self.map().values().cloned().collect();
        runtimes
            .iter()
            .map(|rt| (rt.root.display(), rt.stats()))
            .collect()
    }

    /// Every bound, the variable that sets it, and what is used of it now
    /// (for per-runtime bounds, the most any runtime uses). The memory of
    /// the Lean processes is read now, off the async runtime.
    pub async fn limits(&self) -> results::Limits {
        let runtimes: Vec<Arc<Runtime>> = self.map().values().cloned().collect();
        let most = |f: &dyn Fn(&Runtime) -> u64| runtimes.iter().map(|rt| f(rt)).max().unwrap_or(0);
        let clients: Vec<_> = runtimes
            .iter()
            .filter_map(|rt| rt.server_now())
            .map(|server| server.client)
            .collect();
        let largest_rss = tokio::task::spawn_blocking(move || {
            clients
                .iter()
                .flat_map(|c| c.tree_usage())
                .map(|u| u.rss)
                .max()
        })
        .await
        .ok()
        .flatten();
        let mib = 1024 * 1024;
        let limits = &self.limits;
        let bound = |limit: u64, used: Option<u64>, per: &'static str| LimitUse {
            limit: Some(limit),
            used,
            busy: None,
            per,
        };
        results::Limits {
            max_runtimes: LimitUse {
                busy: Some(runtimes.iter().filter(|rt| !rt.is_idle()).count() as u64),
                ..bound(
                    limits.runtimes as u64,
                    Some(runtimes.len() as u64),
                    "server",
                )
            },
            max_documents: bound(
                limits.documents as u64,
                Some(most(&|rt| rt.open_in_lean() as u64)),
                "runtime",
            ),
            shadow_slots: bound(limits.shadow_slots as u64, None, "document"),
            max_handles: bound(
                limits.handles.count as u64,
                Some(most(&|rt| rt.handle_stats().live)),
                "runtime",
            ),
            max_handle_bytes: bound(
                limits.handles.bytes as u64,
                Some(most(&|rt| rt.handle_stats().bytes)),
                "runtime",
            ),
            max_lean_rss_mib: LimitUse {
                limit: limits.lean_rss.map(|b| b / mib),
                used: largest_rss.map(|b| b / mib),
                busy: None,
                per: "Lean process",
            },
            max_lean_memory: self.memory_use().await,
            max_file_bytes: bound(limits.max_file_bytes, None, "source file"),
            runtime_idle_secs: bound(
                limits.runtime_idle.as_secs(),
                Some(most(&|rt| {
                    if rt.is_idle() {
                        rt.last_used().elapsed().as_secs()
                    } else {
                        0
                    }
                })),
                "runtime",
            ),
        }
    }
}

impl Runtimes {
    /// The memory budget, its use now (measured, at most a second old) and
    /// what it made probes do.
    async fn memory_use(&self) -> results::LeanMemoryUse {
        use memory::Kind;
        use std::sync::atomic::Ordering::Relaxed;
        let memory = &self.memory;
        let reading = memory.reading().await;
        let mib = |b: u64| b.div_ceil(1 << 20);
        let events = &memory.events;
        results::LeanMemoryUse {
            limit_mib: memory.budget.bytes >> 20,
            source: memory.budget.source.clone(),
            used_mib: mib(memory.used(&reading)),
            server_mib: mib(reading.of(Kind::Server)),
            documents_mib: mib(reading.of(Kind::Document)),
            shadows_mib: mib(reading.of(Kind::Shadow)),
            snippets_mib: mib(reading.of(Kind::Snippet)),
            processes: reading.processes.len() as u64,
            worker_estimate_mib: mib(reading.new_worker("")),
            waited: events.waited.load(Relaxed),
            reclaimed: events.reclaimed.load(Relaxed),
            over_budget: events.over.load(Relaxed),
            refused: events.refused.load(Relaxed),
            headers_taken: events.headers_reused.load(Relaxed),
            per: "server",
        }
    }
}

/// Every cached runtime has a call in flight: none can be evicted for `root`.
fn runtimes_busy(root: &Root, limit: usize, used: usize) -> Error {
    Error::ResourceLimit(Limit::Runtimes {
        root: root.display(),
        limit,
        used,
    })
}
