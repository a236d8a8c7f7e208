//! Prefix bases: the text before a probe's declaration, compiled once into a
//! module that shadow documents import instead of carrying that text.
//!
//! Lean's language server spends time on every command before an edit each
//! time a document changes (about 0.2 ms per command), so a probe at the end of
//! a long file would cost the file, not its declaration. A shadow built on a
//! base is `prelude import <base>` on its first line, the prefix's scope
//! commands on their own lines (see [`outline`](crate::lean_source::outline)), empty lines
//! elsewhere, then the declaration and the probe, all at their original lines:
//! every position Lean reports is the position in the user's file.
//!
//! Bases are an optimization with an exact fallback: a probe without a ready
//! base (or whose base failed to import) runs on the whole prefix as before. A
//! base is compiled in the background by the workspace's own `lean --stdin`
//! when the same prefix is probed a second time and holds enough commands to
//! matter; it lives in a private directory (0700, its files 0600, never
//! reached through a link) on the Lean server's search path, written through
//! a rename, and removed with the runtime. Under `lake serve`
//! the directory is on the `LEAN_PATH` Lake starts with; if the first base
//! does not import there, bases are off for the runtime.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::compiler;
use super::launch::Launcher;
use super::workspace::Root;
use crate::lean_source::outline::Skeleton;
use crate::results::PrefixBaseStats;
use crate::safe_fs::{self, Dir, Existing, FsError};
use crate::util::lock;
use crate::{log_debug, log_info};

/// The name of every base directory: this prefix, the server's pid, a tag.
/// Private to the server: no answer shows it (see
/// [`diagnostics::scrub_private_paths`](super::diagnostics::scrub_private_paths)).
pub const DIR_PREFIX: &str = "lean-beam-bases-";

/// The first component of every base module name.
const MODULE_ROOT: &str = "LeanBeamBase";
/// Fewer commands than this before a declaration cost a probe too little for
/// a base to pay off (a base costs an import when a slot changes base).
const MIN_COMMANDS: usize = 32;
/// Ready bases kept per runtime (least recently used dropped past this).
const MAX_READY: usize = 16;

/// A shadow text rewritten onto a base.
pub struct Rewritten {
    pub text: String,
    /// Added to a byte offset past the base's prefix in the original shadow
    /// text, gives the offset in `text`.
    pub shift: isize,
    pub key: u64,
}

pub struct Bases {
    /// The search-path directory; `None` when bases are off.
    dir: Option<PathBuf>,
    hasher: std::collections::hash_map::RandomState,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    entries: HashMap<u64, Entry>,
    /// Ready bases, least recently used first.
    ready: Vec<Ready>,
    compiling: Option<tokio::task::AbortHandle>,
    compiles: u64,
    failures: u64,
    /// Probes that ran on a base.
    uses: u64,
    /// Compiles put off because the memory budget had no room.
    deferred: u64,
    /// A base has imported in this runtime: the search path reaches them.
    confirmed: bool,
    /// Bases do not import here (the first one failed): off for good.
    off: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// Probed once.
    Seen,
    Compiling,
    Ready,
    /// Not worth a base, or refused by the outline, or failed to compile or
    /// import: never tried again for this prefix.
    Never,
}

struct Ready {
    key: u64,
    len: usize,
    module: String,
    skeleton: Skeleton,
}

impl Bases {
    /// Bases in a fresh private directory (created with the first base), or
    /// off.
    pub fn new(enabled: bool) -> Self {
        let hasher = std::collections::hash_map::RandomState::new();
        let dir = enabled.then(|| {
            let tag = hasher.hash_one(std::time::SystemTime::now());
            std::env::temp_dir().join(format!("{DIR_PREFIX}{}-{tag:016x}", std::process::id()))
        });
        Bases {
            dir,
            hasher,
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    /// The directory to put on the Lean server's search path.
    pub fn search_dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    fn key(&self, prefix: &str) -> u64 {
        self.hasher.hash_one(prefix)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// `shadow` rewritten onto the best ready base for its first `cut` bytes
    /// (the prefix before the probe's declaration), if there is one; also
    /// notes the probe, and starts compiling a base for exactly this prefix
    /// when it is probed again and worth it.
    pub fn rewrite(
        &self,
        launcher: &Launcher,
        root: &Root,
        limit: Duration,
        shadow: &str,
        cut: usize,
        may_compile: bool,
    ) -> Option<Rewritten> {
        let dir = self.dir.as_ref()?;
        if cut > shadow.len() || !shadow.is_char_boundary(cut) {
            return None;
        }
        let key = self.key(&shadow[..cut]);
        let mut state = self.lock();
        if state.off {
            return None;
        }
        let best = state
            .ready
            .iter()
            .enumerate()
            .filter(|(_, r)| r.len <= cut && (r.key == key || self.key(&shadow[..r.len]) == r.key))
            .max_by_key(|(_, r)| r.len)
            .map(|(i, _)| i);
        let base_len = best.map_or(0, |i| state.ready[i].len);
        let entry = state.entries.get(&key).copied();
        match entry {
            None => {
                state.entries.insert(key, Entry::Seen);
            }
            // No room in the memory budget for the compile's `lean`: the
            // prefix stays seen, and a later probe compiles it.
            Some(Entry::Seen) if state.compiling.is_none() && !may_compile => {
                state.deferred += 1;
            }
            Some(Entry::Seen) if state.compiling.is_none() => {
                let verdict = Skeleton::of(&shadow[..cut]).and_then(|sk| {
                    let saved = sk
                        .commands
                        .saturating_sub(best.map_or(0, |i| state.ready[i].skeleton.commands));
                    if saved < MIN_COMMANDS {
                        Err(format!("{saved} commands past the nearest base"))
                    } else {
                        Ok(sk)
                    }
                });
                match verdict {
                    Ok(skeleton) => {
                        state.entries.insert(key, Entry::Compiling);
                        let task = tokio::spawn(compile(
                            Arc::clone(&self.state),
                            dir.clone(),
                            launcher.clone(),
                            root.clone(),
                            limit,
                            key,
                            shadow[..cut].to_string(),
                            skeleton,
                        ));
                        state.compiling = Some(task.abort_handle());
                    }
                    Err(why) => {
                        log_debug!("no prefix base for {}: {why}", root.display());
                        state.entries.insert(key, Entry::Never);
                    }
                }
            }
            _ => {}
        }
        let i = best?;
        // Most recently used last.
        let ready = state.ready.remove(i);
        let text = format!(
            "{}{}",
            ready.skeleton.render(&shadow[..base_len], &ready.module),
            &shadow[base_len..]
        );
        let shift = text.len() as isize - shadow.len() as isize;
        let rewritten = Rewritten {
            text,
            shift,
            key: ready.key,
        };
        state.ready.push(ready);
        state.uses += 1;
        Some(rewritten)
    }

    /// The base `key` did not import (its shadow reported an error on the
    /// import line): never use it again. If no base ever imported in this
    /// runtime, the server's search path does not reach them (under
    /// `lake serve` that is Lake's choice): bases are turned off.
    pub fn failed(&self, key: u64) {
        let mut state = self.lock();
        state.failures += 1;
        state.ready.retain(|r| r.key != key);
        state.entries.insert(key, Entry::Never);
        if !state.confirmed {
            state.off = true;
            if let Some(task) = state.compiling.take() {
                task.abort();
            }
        }
    }

    /// A shadow on a base elaborated with its import in place.
    pub fn imported(&self) {
        self.lock().confirmed = true;
    }

    /// A module of the workspace was rebuilt: bases compiled against the old
    /// one are stale.
    pub fn clear(&self) {
        let mut state = self.lock();
        if let Some(task) = state.compiling.take() {
            task.abort();
        }
        let stale: Vec<PathBuf> = state
            .ready
            .drain(..)
            .filter_map(|ready| Some(olean_path(self.dir.as_ref()?, &ready.module)))
            .collect();
        remove_later(move || stale.iter().for_each(|p| drop(std::fs::remove_file(p))));
        state.entries.clear();
    }

    pub fn stats(&self) -> PrefixBaseStats {
        let state = self.lock();
        PrefixBaseStats {
            enabled: self.dir.is_some() && !state.off,
            dir: self.dir.as_ref().map(|d| d.display().to_string()),
            ready: state.ready.len() as u64,
            uses: state.uses,
            compiling: state.compiling.is_some(),
            compiled: state.compiles,
            failed: state.failures,
            deferred: state.deferred,
        }
    }
}

impl Drop for Bases {
    fn drop(&mut self) {
        if let Some(task) = self.lock().compiling.take() {
            task.abort();
        }
        if let Some(dir) = self.dir.clone() {
            remove_later(move || drop(std::fs::remove_dir_all(dir)));
        }
    }
}

/// Run a removal off the runtime when there is one (else here).
fn remove_later(remove: impl FnOnce() + Send + 'static) {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => drop(handle.spawn_blocking(remove)),
        Err(_) => remove(),
    }
}

/// Remove the base directories of servers that are gone (killed before they
/// could clean up): those whose pid names no running process. Blocking: run
/// it off the runtime.
pub fn remove_orphans() {
    safe_fs::remove_dead_process_dirs(DIR_PREFIX);
}

fn olean_path(dir: &Path, module: &str) -> PathBuf {
    let mut path = dir.to_path_buf();
    path.extend(module.split('.'));
    path.with_extension("olean")
}

/// Compile `prefix` into the base `key`, then make it ready.
#[allow(clippy::too_many_arguments)]
async fn compile(
    state: Arc<Mutex<State>>,
    dir: PathBuf,
    launcher: Launcher,
    root: Root,
    limit: Duration,
    key: u64,
    prefix: String,
    skeleton: Skeleton,
) {
    let module = format!("{MODULE_ROOT}.P{key:016x}");
    let target = olean_path(&dir, &module);
    let staged = target.with_extension("olean.partial");
    let private = dir.clone();
    let made = safe_fs::off_runtime(&dir, "create", move || private_dir(&private)).await;
    if let Err(e) = made {
        log_debug!("no prefix bases: {e}");
    }
    let args = vec![
        "--stdin".to_string(),
        "-o".to_string(),
        staged.to_string_lossy().into_owned(),
    ];
    let started = std::time::Instant::now();
    let (describe, output) =
        compiler::run(&launcher, &root, &args, Some(prefix.clone()), limit).await;
    let outcome = match output {
        Ok(output) if output.status.success() => {
            let (from, to, private) = (staged.clone(), target.clone(), dir.clone());
            safe_fs::off_runtime(&target, "place", move || place(&private, &from, &to))
                .await
                .map_err(|e| e.to_string())
        }
        Ok(output) => Err(format!(
            "`{describe}` failed ({}): {}",
            output.status,
            compiler::tail(&output.stdout)
        )),
        Err(e) => Err(format!("`{describe}`: {e:?}")),
    };
    let mut state = lock(&state);
    state.compiling = None;
    match outcome {
        Ok(()) => {
            log_info!(
                "prefix base {module} of {} ready ({} commands, {} ms)",
                root.display(),
                skeleton.commands,
                started.elapsed().as_millis()
            );
            state.compiles += 1;
            state.entries.insert(key, Entry::Ready);
            state.ready.push(Ready {
                key,
                len: prefix.len(),
                module,
                skeleton,
            });
            if state.ready.len() > MAX_READY {
                let evicted = state.ready.remove(0);
                state.entries.remove(&evicted.key);
                let old = olean_path(&dir, &evicted.module);
                remove_later(move || drop(std::fs::remove_file(old)));
            }
        }
        Err(why) => {
            remove_later(move || drop(std::fs::remove_file(staged)));
            log_debug!("prefix base of {} not built: {why}", root.display());
            state.failures += 1;
            state.entries.insert(key, Entry::Never);
        }
    }
}

/// The base directory and its module folder, private to this user: created
/// 0700 (an existing one must be ours: `fchmod` fails on anybody else's) and
/// never reached through a link.
fn private_dir(dir: &Path) -> Result<Dir, FsError> {
    let parent = dir.parent().unwrap_or(dir);
    let name = dir.file_name().unwrap_or_default();
    let base = Dir::open(parent)?.subdir(name, Some(0o700))?;
    base.set_mode(0o700)?;
    let modules = base.subdir(std::ffi::OsStr::new(MODULE_ROOT), Some(0o700))?;
    modules.set_mode(0o700)?;
    Ok(modules)
}

/// Make a compiled base private (0600) and move it into place.
fn place(dir: &Path, staged: &Path, target: &Path) -> Result<(), FsError> {
    use std::os::unix::fs::PermissionsExt;
    let modules = private_dir(dir)?;
    std::fs::set_permissions(staged, std::fs::Permissions::from_mode(0o600)).map_err(|e| {
        FsError::Io {
            path: staged.to_path_buf(),
            op: "change the mode of",
            error: e,
        }
    })?;
    let name = |p: &Path| p.file_name().unwrap_or_default().to_os_string();
    modules.rename(&name(staged), &modules, &name(target), Existing::Replace)
}
