//! The Lean broker: one runtime per canonical workspace root, created lazily by
//! the first request that needs it and kept until it is dropped or the server
//! shuts down.

pub mod bases;
pub mod checkpoint;
pub mod compiler;
pub mod diagnostics;
pub mod document;
pub mod errors;
pub mod goals;
pub mod handles;
pub mod importers;
pub mod lakefile;
pub mod launch;
pub mod lexer;
pub mod outline;
pub mod runtime;
pub mod shadow;
pub mod snapshot;
pub mod sync;
pub mod text;
pub mod workspace;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use launch::{Launcher, Limits, Timeouts};
use runtime::Runtime;
use workspace::Root;

pub struct Broker {
    launcher: Launcher,
    timeouts: Timeouts,
    limits: Limits,
    /// Identifies this server process in proof handles.
    process_nonce: u64,
    next_runtime_id: std::sync::atomic::AtomicU64,
    /// Versions survive eviction: a recreated runtime continues above them, so
    /// a version returned before a drop never names different content after it.
    version_floors: Arc<runtime::VersionFloors>,
    runtimes: Mutex<HashMap<Root, Arc<Runtime>>>,
    resolver: workspace::Resolver,
}

/// A random number per process, without a randomness crate: std's hasher
/// keys are drawn from the OS for every `RandomState`.
fn process_nonce() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.finish()
}

impl Broker {
    pub fn new(launcher: Launcher, timeouts: Timeouts, limits: Limits) -> Self {
        Broker {
            launcher,
            timeouts,
            limits,
            process_nonce: process_nonce(),
            next_runtime_id: std::sync::atomic::AtomicU64::new(1),
            version_floors: Arc::default(),
            runtimes: Mutex::new(HashMap::new()),
            resolver: workspace::Resolver::default(),
        }
    }

    pub fn from_env() -> Self {
        Self::new(
            Launcher::from_env(),
            Timeouts::from_env(),
            Limits::from_env(),
        )
    }

    /// Refuse a handle that is malformed or from another server process.
    pub fn check_handle_origin(&self, handle: &str) -> Result<(), crate::surface::ToolError> {
        handles::check_process(handle, self.process_nonce)
    }

    /// The canonical root of a descriptor (see [`workspace::resolve`]).
    pub fn resolve_root(
        &self,
        workspace: &crate::surface::Workspace,
    ) -> Result<Root, crate::surface::ToolError> {
        self.resolver.root(workspace)
    }

    /// The canonical root of a descriptor and a document path under it (see
    /// [`workspace::resolve_path`]).
    pub fn resolve_document(
        &self,
        workspace: &crate::surface::Workspace,
        path: &str,
    ) -> Result<(Root, workspace::DocPath), crate::surface::ToolError> {
        self.resolver.document(workspace, path)
    }

    pub fn launcher(&self) -> &Launcher {
        &self.launcher
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<Root, Arc<Runtime>>> {
        self.runtimes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The runtime of `root`, created if absent. Creating one is cheap: its Lean
    /// server starts on the first request that needs it.
    pub fn runtime(&self, root: &Root) -> Arc<Runtime> {
        let mut map = self.map();
        Arc::clone(map.entry(root.clone()).or_insert_with(|| {
            let id = self
                .next_runtime_id
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let handles = handles::HandleStore::new(self.process_nonce, id, self.limits.handles);
            let rt = Arc::new(Runtime::new(
                Arc::clone(&self.version_floors),
                root.clone(),
                self.launcher.clone(),
                self.timeouts.clone(),
                &self.limits,
                handles,
            ));
            tokio::spawn(close_idle_shadows(
                Arc::downgrade(&rt),
                self.limits.shadow_idle,
            ));
            // What killed servers left behind: checkpoint scratch in this
            // root, prefix bases in the temp dir.
            let (stale, bases) = (root.path().to_path_buf(), self.limits.prefix_bases);
            tokio::task::spawn_blocking(move || {
                checkpoint::remove_stale_scratch(&stale);
                if bases {
                    bases::remove_orphans();
                }
            });
            rt
        }))
    }

    /// The runtime of `root` only if one is cached (never creates one).
    pub fn cached(&self, root: &Root) -> Option<Arc<Runtime>> {
        self.map().get(root).cloned()
    }

    /// Remove and stop the runtime of `root`, if cached.
    pub async fn evict(&self, root: &Root) -> Option<Arc<Runtime>> {
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

    pub fn stats(&self) -> Value {
        let runtimes: Vec<Arc<Runtime>> = self.map().values().cloned().collect();
        let mut out = Map::new();
        for rt in runtimes {
            out.insert(rt.root.display(), rt.stats());
        }
        Value::Object(out)
    }
}

/// Close the idle shadow slots of a runtime now and then, for as long as it
/// exists.
async fn close_idle_shadows(rt: std::sync::Weak<Runtime>, idle: std::time::Duration) {
    let period = (idle / 2).clamp(
        std::time::Duration::from_millis(200),
        std::time::Duration::from_secs(60),
    );
    loop {
        tokio::time::sleep(period).await;
        let Some(rt) = rt.upgrade() else {
            return;
        };
        rt.close_idle_shadows(idle).await;
    }
}
