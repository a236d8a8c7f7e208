//! `lean_search`'s index: the declarations of a workspace, of its Lake
//! packages and of the toolchain's library sources, read from the files by
//! the lexer (no Lean process), queried by name or by statement pattern.
//!
//! One index per workspace (its canonical root), built on first use, shared
//! by every client of the server, and brought up to date at each query. The
//! first query lists the file trees, watching every directory it enters
//! (`watch`: inotify), and reads every file; a later one reads again exactly
//! the files the kernel reported written, created, touched or removed since
//! (`.ilean`s count for their sources), whatever their stamps say, and lists
//! nothing. Where the watch cannot tell (a directory created or removed, a
//! queue overflow, a watch the system refuses, no inotify) the query lists
//! the trees again and reads every file whose stamp (size, modification time,
//! inode; of the source and of its `.ilean`) changed, as every query did
//! before the watch (`walk`, `index`). Listing, reading and the
//! query run on the blocking pool, never on the async runtime; a caller that
//! goes away stops a refresh between two files (what was read stays, so the
//! next query continues from there).
//!
//! Bounds: at most `LEAN_BEAM_SEARCH_MAX_DECLARATIONS` declarations per
//! index (default 1,000,000; about 250 bytes each in the generated
//! benchmark library), past which further files are left out and every
//! answer says `complete: false` naming the variable; at most
//! `LEAN_BEAM_SEARCH_MAX_WORKSPACES` indexes (default 4; the least recently
//! used one is dropped, and rebuilt if asked again); files over 4 MiB are
//! not read.
//!
//! A leaf apart from the Lean-source reading (`source`), `safe_fs` and the
//! result types.

mod decls;
mod index;
mod pattern;
mod query;
mod rank;
mod source;
mod terms;
mod walk;
mod watch;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub use index::{Cancelled, Found, Progress};
pub use query::{Query, parse};
pub use walk::Trees;

use crate::safe_fs;
use crate::util::lock;

pub const MAX_DECLARATIONS_VAR: &str = "LEAN_BEAM_SEARCH_MAX_DECLARATIONS";
pub const MAX_WORKSPACES_VAR: &str = "LEAN_BEAM_SEARCH_MAX_WORKSPACES";
const DEFAULT_MAX_DECLARATIONS: usize = 1_000_000;
const DEFAULT_MAX_WORKSPACES: usize = 4;
/// Source files larger than this are not read.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The indexes of one server process.
pub struct Indexes {
    /// Most recently used last.
    held: Mutex<Vec<(Trees, Arc<Mutex<Held>>)>>,
    max_declarations: usize,
    max_workspaces: usize,
}

fn env_bound(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

impl Indexes {
    pub fn new(max_declarations: usize, max_workspaces: usize) -> Indexes {
        Indexes {
            held: Mutex::new(Vec::new()),
            max_declarations,
            max_workspaces: max_workspaces.max(1),
        }
    }

    /// The bounds from the environment (see the module's text).
    pub fn from_env() -> Indexes {
        Indexes::new(
            env_bound(MAX_DECLARATIONS_VAR, DEFAULT_MAX_DECLARATIONS),
            env_bound(MAX_WORKSPACES_VAR, DEFAULT_MAX_WORKSPACES),
        )
    }

    /// The toolchain prefix remembered for `root` (`Some(None)`: asked, none).
    pub fn toolchain(&self, root: &Path) -> Option<Option<PathBuf>> {
        lock(&self.held)
            .iter()
            .find(|(t, _)| t.root == root)
            .map(|(t, _)| t.toolchain.clone())
    }

    fn index_of(&self, trees: &Trees) -> Arc<Mutex<Held>> {
        let mut held = lock(&self.held);
        let found = held.iter().position(|(t, _)| t == trees);
        // A root met again with another toolchain starts afresh.
        held.retain(|(t, _)| t.root != trees.root || t == trees);
        let entry = match found.and_then(|_| held.iter().position(|(t, _)| t == trees)) {
            Some(k) => held.remove(k),
            None => (
                trees.clone(),
                Arc::new(Mutex::new(Held::new(self.max_declarations))),
            ),
        };
        let index = entry.1.clone();
        held.push(entry);
        if held.len() > self.max_workspaces {
            held.remove(0);
        }
        index
    }

    /// Forget the index of `root` (`lean_drop_workspace`).
    pub fn drop_root(&self, root: &Path) {
        lock(&self.held).retain(|(t, _)| t.root != root);
    }

    /// Start a query: refresh the workspace's index and search it, on the
    /// blocking pool. Dropping the job stops the refresh.
    pub fn start(&self, trees: Trees, query: Query, limit: usize) -> Job {
        let index = self.index_of(&trees);
        let progress = Arc::new(Progress::default());
        let cancel = Arc::new(AtomicBool::new(false));
        let (p, c) = (progress.clone(), cancel.clone());
        let task = tokio::task::spawn_blocking(move || {
            let mut held = lock(&index);
            held.bring_up_to_date(&trees, &c, &p)?;
            Ok(held.index.search(&query, limit, MAX_DECLARATIONS_VAR))
        });
        Job {
            task,
            progress,
            cancel,
        }
    }
}

/// One workspace's index and what keeps it fresh.
struct Held {
    index: index::Index,
    /// Watching the trees since their last listing; `None` before the
    /// first, after an event the watch cannot describe, or where the
    /// system gives no watch (then every query lists and stamps).
    watch: Option<watch::Watch>,
    /// Sources the watch reported and the index has not yet read again
    /// (a cancelled update leaves them here).
    pending: std::collections::BTreeSet<PathBuf>,
}

impl Held {
    fn new(max_declarations: usize) -> Held {
        Held {
            index: index::Index::new(max_declarations),
            watch: None,
            pending: Default::default(),
        }
    }

    fn bring_up_to_date(
        &mut self,
        trees: &Trees,
        cancel: &AtomicBool,
        progress: &Progress,
    ) -> Result<(), Cancelled> {
        let seen = self.watch.as_mut().map(watch::Watch::take);
        match seen {
            Some(seen) if !seen.everything => {
                self.pending
                    .extend(seen.files.iter().filter_map(|f| walk::source_of(trees, f)));
                let look = |path: &Path| walk::listed(trees, path);
                self.index
                    .update(&mut self.pending, &look, &read_source, cancel, progress)
            }
            _ => {
                // Watch first, so that a change made while listing is seen
                // by the next query; keep it only if every directory is
                // watched.
                let mut fresh = watch::Watch::new();
                self.watch = None;
                self.pending.clear();
                let (listing, all_watched) = walk::list(trees, fresh.as_mut());
                self.index
                    .refresh(listing, &read_source, cancel, progress)?;
                self.watch = fresh.filter(|_| all_watched);
                Ok(())
            }
        }
    }
}

fn read_source(listed: &walk::Listed) -> Option<String> {
    let contents = safe_fs::read_regular_blocking(
        &listed.path,
        safe_fs::Links::Follow,
        MAX_FILE_BYTES,
        safe_fs::Oversize::Refuse,
    )
    .ok()?;
    Some(String::from_utf8_lossy(&contents.bytes).into_owned())
}

/// A query running on the blocking pool.
pub struct Job {
    pub task: tokio::task::JoinHandle<Result<Found, Cancelled>>,
    pub progress: Arc<Progress>,
    cancel: Arc<AtomicBool>,
}

impl Job {
    /// Files read so far of those this refresh reads.
    pub fn files_read(&self) -> (usize, usize) {
        (
            self.progress.done.load(Ordering::Relaxed),
            self.progress.total.load(Ordering::Relaxed),
        )
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}
