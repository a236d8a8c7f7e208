//! `lean_verify`'s fresh build: the file's module and its whole workspace
//! import closure compiled from the text the server read, in a private
//! folder outside the workspace, in dependency order; then a generated check
//! module that imports the module and asks Lean about `_root_`-qualified
//! names, so nothing the agent wrote decides how the checks' names resolve.
//!
//! The closure is read here (off the runtime): each import is parsed by the
//! lexer (`«…»` components), and resolved only to a source inside the root
//! (no `..`, no link out of it), to a module of the toolchain's own library,
//! or to a package's build layout under `.lake/packages`, taken only while
//! what Lake recorded of the module holds (`check_package`, reading the
//! package's source for its imports). Every build runs
//! the toolchain's `lean -o -i` with a search path of the private folder's
//! modules, the packages' and (implicitly) the toolchain's library: never the
//! workspace's own `.olean`s, which are only compared with what was built.
//!
//! The private cache keys each module by the SHA-256 of its whole source
//! closure (its text and the keys of its imports), the Lean version and the
//! toolchain: a repeat verify rebuilds only modules whose closure changed. It
//! keeps at most 1024 built modules (the oldest not in use go).

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

mod closure;
mod imports;
mod packages;

pub use closure::{Closure, Node, Origin, closure};
pub use packages::PackageStatus;

use super::lake_trace;
use crate::broker::engine::compiler::{self, RunError, Toolchain};
use crate::safe_fs::{self, Dir, Existing, FsError};
use crate::sha256;

/// Built modules the private cache keeps; past it, the least recently built
/// ones not in use go.
const MAX_CACHED_MODULES: usize = 1_024;

/// Folders of the private build cache in the temp dir:
/// `lean-beam-verify-<pid>-<random>`.
const CACHE_PREFIX: &str = "lean-beam-verify-";

/// The private cache folder of this process (0700), created on first use;
/// those of servers that are gone are removed then.
static CACHE_DIR: OnceLock<PathBuf> = OnceLock::new();

fn cache_dir() -> Result<Dir, FsError> {
    let path = CACHE_DIR.get_or_init(|| {
        std::env::temp_dir().join(safe_fs::random_name(&format!(
            "{CACHE_PREFIX}{}-",
            std::process::id()
        )))
    });
    let parent = path.parent().unwrap_or(path);
    let dir = Dir::open(parent)?.subdir(path.file_name().unwrap_or_default(), Some(0o700))?;
    dir.set_mode(0o700)?;
    Ok(dir)
}

/// Remove the verify caches of servers that are gone, once per process, on
/// a blocking thread of its own and unbounded: a dead server's cache may hold
/// a whole library's build, whose removal outlasted the bound on creating
/// this server's cache when it ran inside that step (a `lean_verify` failed
/// with "create the verify cache in /tmp did not finish within 10 s" after a
/// benchmark's server was killed). Only other, dead processes' folders are
/// touched, so nothing waits for it.
fn sweep_dead_caches() {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| {
        drop(tokio::task::spawn_blocking(|| {
            safe_fs::remove_dead_process_dirs(CACHE_PREFIX);
        }));
    });
}

/// Removing this process's own cache at a graceful exit gives up after this
/// long (a whole library's build on a slow disk): what is left is a dead
/// process's folder, which the next server's sweep removes.
const OWN_CACHE_REMOVAL_LIMIT: Duration = Duration::from_secs(10);

/// Remove this process's cache folder, if one was made: otherwise every exit
/// leaves its build in the temp dir until another server starts a
/// `lean_verify` and sweeps it.
pub async fn remove_own_cache() {
    let Some(path) = CACHE_DIR.get().cloned() else {
        return;
    };
    let removal = tokio::task::spawn_blocking(move || {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return;
        };
        if let Ok(temp) = Dir::open(parent) {
            if let Err(e) = temp.remove_tree(name) {
                crate::log_debug!("cannot remove the verify cache {}: {e}", path.display());
            }
        }
    });
    let _ = tokio::time::timeout(OWN_CACHE_REMOVAL_LIMIT, removal).await;
}

/// What the lakefile passes `lean` for a workspace module (the caller
/// checked that it can be passed: a module whose settings cannot is not
/// built).
fn lake_args(closure: &Closure, module: &str) -> Vec<String> {
    closure
        .settings
        .as_ref()
        .ok()
        .and_then(|s| s.args_for(module).ok())
        .unwrap_or_default()
}

/// The cache key of every workspace and package module of the closure: the
/// SHA-256 of its whole source closure. A workspace module's is its text, the
/// lakefile's arguments for it, the Lean version, the toolchain and its
/// imports' keys; a package module's is Lake's hash of its `.olean` and its
/// imports' keys, so a rebuilt dependency below it changes it. Pure (the
/// texts were read with the closure).
pub fn keys(tc: &Toolchain, closure: &Closure) -> HashMap<String, String> {
    let mut keys: HashMap<String, String> = HashMap::new();
    let origins: HashMap<&str, &Origin> = closure
        .order
        .iter()
        .map(|n| (n.name.as_str(), &n.origin))
        .collect();
    for node in &closure.order {
        let mut text = match &node.origin {
            Origin::Toolchain => continue,
            Origin::Package { check, .. } => format!(
                "lean-beam-verify package 1\n{}\n{:?}\n",
                node.name, check.olean_hash
            ),
            Origin::Workspace { text, .. } => format!(
                "lean-beam-verify 2\n{}\n{}\n{}\n{}\n{:?}\n",
                tc.version,
                tc.lib.display(),
                node.name,
                sha256::hex(text.as_bytes()),
                lake_args(closure, &node.name)
            ),
        };
        for import in &node.imports {
            let line = match origins.get(import.as_str()) {
                Some(Origin::Workspace { .. }) | Some(Origin::Package { .. }) => {
                    format!("{import} {}\n", keys.get(import).map_or("", String::as_str))
                }
                _ => format!("t {import}\n"),
            };
            text.push_str(&line);
        }
        keys.insert(node.name.clone(), sha256::hex(text.as_bytes()));
    }
    keys
}

/// Where the fresh build of a workspace module of the closure is (or will
/// be) in this process's cache: `<cache>/<key>/<rel>.<ext>`.
pub fn fresh_artifact(closure: &Closure, node: &Node, ext: &str) -> Option<PathBuf> {
    let Origin::Workspace { rel, .. } = &node.origin else {
        return None;
    };
    let key = closure.keys.get(&node.name)?;
    Some(CACHE_DIR.get()?.join(key).join(rel).with_extension(ext))
}

/// What a fresh build made.
#[derive(Debug, Default)]
pub struct Built {
    /// Each workspace module's folder in the cache (`<dir>/<rel>.olean`).
    pub dirs: HashMap<String, PathBuf>,
    /// The search path: the view of the built modules, then the packages'.
    pub lean_path: String,
    pub rebuilt: u32,
    pub reused: u32,
    view: Option<View>,
}

impl Built {
    pub fn artifact(&self, node: &Node, ext: &str) -> Option<PathBuf> {
        let Origin::Workspace { rel, .. } = &node.origin else {
            return None;
        };
        Some(self.dirs.get(&node.name)?.join(rel).with_extension(ext))
    }
}

/// Why a fresh build stopped.
#[derive(Debug)]
pub enum BuildError {
    /// A module does not compile: Lean's output.
    Failed {
        module: String,
        output: String,
    },
    TimedOut {
        module: String,
        limit: Duration,
    },
    /// The toolchain did not run, or the cache could not be written.
    Setup(String),
}

/// Build the closure's workspace modules in order within `limit`.
pub async fn build(
    tc: &Toolchain,
    closure: &Closure,
    limit: Duration,
) -> Result<Built, BuildError> {
    let deadline = Instant::now() + limit;
    sweep_dead_caches();
    let cache = safe_fs::off_runtime(
        &std::env::temp_dir(),
        "create the verify cache in",
        cache_dir,
    )
    .await
    .map_err(|e| BuildError::Setup(e.to_string()))?;
    let cache = Arc::new(cache);
    let mut built = Built::default();
    let packages: Vec<String> = {
        let mut libs: Vec<String> = closure
            .order
            .iter()
            .filter_map(|n| match &n.origin {
                Origin::Package { lib, .. } => Some(lib.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect();
        libs.sort();
        libs.dedup();
        libs
    };
    // Lean finds a module in the first search-path folder holding its first
    // component, so the modules of one verify share one folder: a view of
    // hard links to the cached artifacts, removed with the `Built`.
    let view_cache = Arc::clone(&cache);
    let view = safe_fs::off_runtime(cache.path(), "create a build view in", move || {
        let name = safe_fs::random_name(".view-");
        view_cache.create_dir_new(OsStr::new(&name), 0o700)?;
        Ok(view_cache.path().join(name))
    })
    .await
    .map_err(|e| BuildError::Setup(e.to_string()))?;
    built.view = Some(View(view.clone()));
    let search = std::iter::once(view.to_string_lossy().into_owned())
        .chain(packages.iter().cloned())
        .collect::<Vec<_>>()
        .join(":");
    for node in &closure.order {
        let Origin::Workspace { rel, text } = &node.origin else {
            continue;
        };
        let key = closure.keys.get(&node.name).cloned().unwrap_or_default();
        let dir = cache.path().join(&key);
        built.dirs.insert(node.name.clone(), dir.clone());
        // Stage, unless built already: a fresh folder with a copy of the
        // source, compiled there, renamed to its key when done.
        let (cache2, rel2, text2, key2) = (
            Arc::clone(&cache),
            rel.clone(),
            Arc::clone(text),
            key.clone(),
        );
        let staged = safe_fs::off_runtime(cache.path(), "stage a module in", move || {
            let done = cache2
                .path()
                .join(&key2)
                .join(&rel2)
                .with_extension("olean");
            if done.is_file() {
                return Ok(None);
            }
            stage(&cache2, &rel2, &text2).map(Some)
        })
        .await
        .map_err(|e| BuildError::Setup(e.to_string()))?;
        let Some(staged) = staged else {
            built.reused += 1;
            link(&dir, &view, rel).await?;
            continue;
        };
        let lean_path = search.clone();
        let out = staged.join(rel).with_extension("olean");
        let mut args = lake_args(closure, &node.name);
        args.extend([
            "-o".to_string(),
            out.to_string_lossy().into_owned(),
            "-i".to_string(),
            out.with_extension("ilean").to_string_lossy().into_owned(),
            rel.to_string_lossy().into_owned(),
        ]);
        let left = deadline.saturating_duration_since(Instant::now());
        let env = vec![("LEAN_PATH".to_string(), lean_path)];
        let run =
            compiler::run_program(&tc.lean, &args, &env, &staged.join("src"), None, left).await;
        let output = match run {
            Ok(o) => o,
            Err(RunError::TimedOut) => {
                return Err(BuildError::TimedOut {
                    module: node.name.clone(),
                    limit,
                });
            }
            Err(e) => return Err(BuildError::Setup(format!("{}: {e:?}", tc.lean.display()))),
        };
        if !output.status.success() {
            let gone = staged.clone();
            let _ = safe_fs::off_runtime(cache.path(), "remove a failed build in", move || {
                let _ = std::fs::remove_dir_all(&gone);
                Ok(())
            })
            .await;
            let mut text = compiler::tail(&output.stdout);
            text.push_str(&compiler::tail(&output.stderr));
            return Err(BuildError::Failed {
                module: node.name.clone(),
                output: text,
            });
        }
        let (cache2, key2) = (Arc::clone(&cache), key.clone());
        safe_fs::off_runtime(cache.path(), "place a module in", move || {
            let name = staged.file_name().unwrap_or_default().to_os_string();
            let placed = cache2.rename(&name, &cache2, OsStr::new(&key2), Existing::Refuse);
            if placed.is_err() {
                // Built by another verify meanwhile: the same bytes.
                let _ = cache2.remove_tree(&name);
            }
            Ok(())
        })
        .await
        .map_err(|e| BuildError::Setup(e.to_string()))?;
        built.rebuilt += 1;
        link(&dir, &view, rel).await?;
    }
    built.lean_path = search;
    let (prune_cache, keep) = (
        Arc::clone(&cache),
        closure.keys.values().cloned().collect::<HashSet<_>>(),
    );
    // Pruning is housekeeping: a failure leaves the cache as it was.
    let _ = safe_fs::off_runtime(cache.path(), "prune the verify cache in", move || {
        prune(&prune_cache, &keep);
        Ok(())
    })
    .await;
    Ok(built)
}

/// Keep at most [`MAX_CACHED_MODULES`] built modules: remove the oldest
/// (by modification time) that `keep` does not name.
fn prune(cache: &Dir, keep: &HashSet<String>) {
    let names = cache.names().unwrap_or_default();
    let mut built: Vec<(std::time::SystemTime, std::ffi::OsString)> = names
        .into_iter()
        .filter(|n| {
            n.to_str()
                .is_some_and(|n| !n.starts_with('.') && !keep.contains(n))
        })
        .filter_map(|n| {
            let modified = std::fs::symlink_metadata(cache.path().join(&n))
                .and_then(|m| m.modified())
                .ok()?;
            Some((modified, n))
        })
        .collect();
    let over = (built.len() + keep.len()).saturating_sub(MAX_CACHED_MODULES);
    built.sort();
    for (_, name) in built.into_iter().take(over) {
        let _ = cache.remove_tree(&name);
    }
}

/// Hard-link a cached module's artifacts into the view.
async fn link(dir: &Path, view: &Path, rel: &Path) -> Result<(), BuildError> {
    let (dir, view, rel) = (dir.to_path_buf(), view.to_path_buf(), rel.to_path_buf());
    let at = view.clone();
    safe_fs::off_runtime(&at, "link a module into", move || {
        let parent = rel.parent().unwrap_or(Path::new(""));
        Dir::open(&view)?.walk(parent, Some(0o700))?;
        for ext in ["olean", "ilean"] {
            let from = dir.join(&rel).with_extension(ext);
            let to = view.join(&rel).with_extension(ext);
            std::fs::hard_link(&from, &to).map_err(|e| FsError::io(&to, "link", e))?;
        }
        Ok(())
    })
    .await
    .map_err(|e| BuildError::Setup(e.to_string()))
}

/// A verify's view folder, removed when dropped (off the runtime when there
/// is one).
#[derive(Debug)]
pub struct View(PathBuf);

impl Drop for View {
    fn drop(&mut self) {
        let path = std::mem::take(&mut self.0);
        let remove = move || {
            let _ = std::fs::remove_dir_all(&path);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(remove)),
            Err(_) => remove(),
        }
    }
}

/// A staging folder: `src/<rel>` holds a copy of the source (0600).
fn stage(cache: &Dir, rel: &Path, text: &str) -> Result<PathBuf, FsError> {
    let name = safe_fs::random_name(".stage-");
    let dir = cache.create_dir_new(OsStr::new(&name), 0o700)?;
    let parent = rel.parent().unwrap_or(Path::new(""));
    dir.walk(&Path::new("src").join(parent), Some(0o700))?;
    dir.walk(parent, Some(0o700))?;
    let src = dir.walk(&Path::new("src").join(parent), None)?;
    let file_name = rel.file_name().unwrap_or_default();
    let mut file = src.create_new(file_name, 0o600)?;
    file.write_all(text.as_bytes())
        .map_err(|e| FsError::io(src.path(), "write a copy of a source in", e))?;
    Ok(dir.path().to_path_buf())
}

/// One message of `lean --json`.
#[derive(Debug, Clone)]
pub struct Message {
    /// 1-based, as Lean prints it.
    pub line: u32,
    pub error: bool,
    pub text: String,
}

/// Elaborate `text` (a generated module read from stdin) with `lean_path`;
/// Lean's messages.
pub async fn check(
    tc: &Toolchain,
    lean_path: &str,
    text: String,
    limit: Duration,
) -> Result<Vec<Message>, String> {
    let cwd = std::env::temp_dir();
    let args = vec!["--stdin".to_string(), "--json".to_string()];
    let env = vec![("LEAN_PATH".to_string(), lean_path.to_string())];
    let output = compiler::run_program(&tc.lean, &args, &env, &cwd, Some(text), limit)
        .await
        .map_err(|e| format!("the check module did not run: {e:?}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut messages = Vec::new();
    for line in stdout.lines() {
        let Ok(m) = serde_json::from_str::<serde_json::Value>(line) else {
            messages.push(Message {
                line: 0,
                error: true,
                text: line.to_string(),
            });
            continue;
        };
        messages.push(Message {
            line: m
                .pointer("/pos/line")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0) as u32,
            error: m["severity"] == "error",
            text: m["data"].as_str().unwrap_or("").to_string(),
        });
    }
    if !output.status.success() && !messages.iter().any(|m| m.error) {
        messages.push(Message {
            line: 0,
            error: true,
            text: format!(
                "the check module failed ({}): {}",
                output.status,
                compiler::tail(&output.stderr)
            ),
        });
    }
    Ok(messages)
}

/// The declarations Lean reports for a module, from its fresh `.ilean`
/// (`decls`: every declaration with its range), in the order of the source.
pub fn declarations(ilean: &[u8]) -> Option<Vec<String>> {
    let v: serde_json::Value = serde_json::from_slice(ilean).ok()?;
    let decls = v.get("decls")?.as_object()?;
    let mut named: Vec<(u64, u64, String)> = decls
        .iter()
        .map(|(name, range)| {
            let at = |i: usize| {
                range
                    .get(i)
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(0)
            };
            (at(0), at(1), name.clone())
        })
        .collect();
    named.sort();
    Some(named.into_iter().map(|(_, _, n)| n).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_come_from_the_ilean_in_source_order() {
        let ilean = r#"{"decls":{"b":[4,0,4,18,4,4,4,5],"«x y»":[2,0,2,34,2,8,2,13],"Evil.Eq":[6,0,6,17,6,7,6,9]},"module":"M"}"#.as_bytes();
        assert_eq!(declarations(ilean).unwrap(), ["«x y»", "b", "Evil.Eq"]);
        assert_eq!(declarations(b"{}"), None);
    }

    #[test]
    fn the_cache_keeps_its_bound_and_the_modules_in_use() {
        let dir = std::env::temp_dir().join(safe_fs::random_name("beam-prune-"));
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..MAX_CACHED_MODULES + 5 {
            std::fs::create_dir(dir.join(format!("k{i:05}"))).unwrap();
        }
        std::fs::create_dir(dir.join(".view-x")).unwrap();
        let keep: HashSet<String> = ["k00000".to_string()].into();
        prune(&Dir::open(&dir).unwrap(), &keep);
        let left = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(left, MAX_CACHED_MODULES + 1, "the bound, and the view");
        assert!(dir.join("k00000").exists(), "in use");
        assert!(dir.join(".view-x").exists(), "a view is not a module");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
