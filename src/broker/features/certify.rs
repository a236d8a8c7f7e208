//! `lean_verify`'s fresh build: the file's module and its whole workspace
//! import closure compiled from the text the server read, in a private
//! folder outside the workspace, in dependency order; then a generated check
//! module that imports the module and asks Lean about `_root_`-qualified
//! names, so nothing the agent wrote decides how the checks' names resolve.
//!
//! The closure is read here (off the runtime): each import is parsed by the
//! lexer (`«…»` components), and resolved only to a source inside the root
//! (no `..`, no link out of it), to a module of the toolchain's own library,
//! or to a package's build layout under `.lake/packages`. Every build runs
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

use crate::broker::engine::compiler::{self, RunError};
use crate::broker::engine::launch::Launcher;
use crate::broker::engine::workspace::Root;
use crate::lean_source::lexer::{self, LexemeKind};
use crate::lean_source::outline;
use crate::safe_fs::{self, Dir, Existing, FsError};
use crate::sha256;

/// Modules one verify may build, far past a real workspace's closure.
pub const MAX_MODULES: usize = 2_000;

/// Built modules the private cache keeps; past it, the least recently built
/// ones not in use go.
const MAX_CACHED_MODULES: usize = 1_024;

/// Folders of the private build cache in the temp dir:
/// `lean-beam-verify-<pid>-<random>`.
const CACHE_PREFIX: &str = "lean-beam-verify-";

/// The toolchain a workspace builds with.
#[derive(Debug, Clone)]
pub struct Toolchain {
    /// Its `lean` (`<prefix>/bin/lean`).
    pub lean: PathBuf,
    /// Its own library (`<prefix>/lib/lean`).
    pub lib: PathBuf,
    /// The first line of `lean --version`.
    pub version: String,
}

impl Toolchain {
    /// Ask the workspace's compiler for its prefix and version.
    pub async fn find(launcher: &Launcher, root: &Root, limit: Duration) -> Result<Self, String> {
        let ask = |flag: &str| {
            let args = [flag.to_string()];
            async move {
                let (describe, run) = compiler::run(launcher, root, &args, None, limit).await;
                match run {
                    Ok(o) if o.status.success() => {
                        let text = String::from_utf8_lossy(&o.stdout);
                        Ok(text.lines().next().unwrap_or("").trim().to_string())
                    }
                    Ok(o) => Err(format!(
                        "`{describe}` failed: {}",
                        compiler::tail(&o.stderr)
                    )),
                    Err(e) => Err(format!("`{describe}` did not run: {e:?}")),
                }
            }
        };
        let prefix = PathBuf::from(ask("--print-prefix").await?);
        let version = ask("--version").await?;
        Ok(Toolchain {
            lean: prefix.join("bin/lean"),
            lib: prefix.join("lib/lean"),
            version,
        })
    }
}

/// Where a module of the closure comes from.
#[derive(Debug, Clone)]
pub enum Origin {
    /// A source of the workspace (or the verified file itself), as read.
    Workspace { rel: PathBuf, text: Arc<str> },
    /// The toolchain's own library.
    Toolchain,
    /// Another Lake package's build layout: its `lib/lean` folder.
    Package { lib: PathBuf },
}

/// One module of the closure.
#[derive(Debug, Clone)]
pub struct Node {
    pub name: String,
    pub origin: Origin,
    pub imports: Vec<String>,
}

/// The import closure of the file, dependencies first, the file last; or
/// why it cannot be built.
#[derive(Debug, Default)]
pub struct Closure {
    pub order: Vec<Node>,
    /// Imports refused or not found, one sentence each.
    pub refused: Vec<String>,
}

impl Closure {
    pub fn workspace(&self) -> impl Iterator<Item = (&Node, &Path, &Arc<str>)> {
        self.order.iter().filter_map(|n| match &n.origin {
            Origin::Workspace { rel, text } => Some((n, rel.as_path(), text)),
            _ => None,
        })
    }
}

/// Whether a header begins with `prelude` (else Lean imports `Init`).
fn has_prelude(text: &str) -> bool {
    lexer::lex(text)
        .into_iter()
        .filter(|l| !matches!(l.kind, LexemeKind::Comment { .. }))
        .take(2)
        .any(|l| l.kind == LexemeKind::Word && &text[l.start..l.end] == "prelude")
}

/// The modules a source imports (`Init` when it has no `prelude`).
fn header(text: &str) -> Option<Vec<String>> {
    let mut imports = outline::imports(text)?;
    if !has_prelude(text) {
        imports.insert(0, "Init".to_string());
    }
    Some(imports)
}

/// Read the closure of `module` (text `text`, at `rel` in the root). Blocking.
pub fn closure(root: &Path, lib: &Path, module: &str, rel: &Path, text: &str) -> Closure {
    let canonical_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let packages: Vec<PathBuf> = {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join(".lake/packages"))
            .map(|e| e.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        dirs.sort();
        dirs
    };
    let mut walk = Walk {
        root: &canonical_root,
        lib,
        packages: &packages,
        out: Closure::default(),
        done: HashSet::new(),
        on_path: HashSet::new(),
    };
    let text: Arc<str> = Arc::from(text);
    match header(&text) {
        Some(imports) => {
            walk.on_path.insert(module.to_string());
            for import in &imports {
                walk.visit(import, module);
            }
            walk.out.order.push(Node {
                name: module.to_string(),
                origin: Origin::Workspace {
                    rel: rel.to_path_buf(),
                    text,
                },
                imports,
            });
        }
        None => walk.out.refused.push(format!(
            "the header of {} cannot be read as imports",
            rel.display()
        )),
    }
    walk.out
}

struct Walk<'a> {
    root: &'a Path,
    lib: &'a Path,
    packages: &'a [PathBuf],
    out: Closure,
    done: HashSet<String>,
    on_path: HashSet<String>,
}

impl Walk<'_> {
    fn visit(&mut self, name: &str, from: &str) {
        if self.done.contains(name) {
            return;
        }
        if self.on_path.contains(name) {
            self.out
                .refused
                .push(format!("{name} imports itself through {from} (a cycle)"));
            return;
        }
        if self.done.len() >= MAX_MODULES {
            self.out.refused.push(format!(
                "the import closure has more than {MAX_MODULES} modules"
            ));
            return;
        }
        let node = match self.resolve(name, from) {
            Ok(node) => node,
            Err(why) => {
                self.done.insert(name.to_string());
                self.out.refused.push(why);
                return;
            }
        };
        self.on_path.insert(name.to_string());
        for import in &node.imports {
            self.visit(import, name);
        }
        self.on_path.remove(name);
        self.done.insert(name.to_string());
        self.out.order.push(node);
    }

    fn resolve(&self, name: &str, from: &str) -> Result<Node, String> {
        let parts = lexer::name_components(name);
        if let Some(bad) = parts
            .iter()
            .find(|p| p.is_empty() || *p == "." || *p == ".." || p.contains(['/', '\0']))
        {
            return Err(format!(
                "import {name} (in {from}) is refused: its component {bad:?} is not a module name inside the workspace"
            ));
        }
        let rel: PathBuf = parts.iter().collect();
        let source = self.root.join(&rel).with_extension("lean");
        let toolchain = self.lib.join(&rel).with_extension("olean").is_file();
        if std::fs::symlink_metadata(&source).is_ok() {
            // A source in the workspace: reached without leaving the root.
            let real = source
                .canonicalize()
                .map_err(|e| format!("{} cannot be resolved: {e}", source.display()))?;
            if !real.starts_with(self.root) {
                return Err(format!(
                    "import {name} (in {from}) is refused: {} is a link out of the workspace root",
                    rel.with_extension("lean").display()
                ));
            }
            if toolchain {
                return Err(format!(
                    "{name} ({}) has the name of a module of the toolchain's own library: rename it",
                    rel.with_extension("lean").display()
                ));
            }
            let read = safe_fs::read_regular_blocking(
                &real,
                safe_fs::Links::Refuse,
                safe_fs::DEFAULT_MAX_FILE_BYTES,
                safe_fs::Oversize::Refuse,
            )
            .map_err(|e| format!("{name} cannot be read: {e}"))?;
            let text: Arc<str> = Arc::from(String::from_utf8_lossy(&read.bytes).as_ref());
            let imports = header(&text).ok_or_else(|| {
                format!(
                    "the header of {} cannot be read as imports",
                    rel.with_extension("lean").display()
                )
            })?;
            let rel = real
                .strip_prefix(self.root)
                .map(Path::to_path_buf)
                .unwrap_or(rel);
            return Ok(Node {
                name: name.to_string(),
                origin: Origin::Workspace { rel, text },
                imports,
            });
        }
        let built = self.root.join(".lake/build/lib/lean").join(&rel);
        if built.with_extension("olean").exists() {
            return Err(format!(
                "{name} is built in the workspace but has no source {}: it cannot be rebuilt",
                rel.with_extension("lean").display()
            ));
        }
        if toolchain {
            return Ok(Node {
                name: name.to_string(),
                origin: Origin::Toolchain,
                imports: Vec::new(),
            });
        }
        let packages_dir = self.root.join(".lake/packages");
        for package in self.packages {
            let lib = package.join(".lake/build/lib/lean");
            if lib.join(&rel).with_extension("olean").is_file() {
                let real = lib.canonicalize().unwrap_or(lib.clone());
                if !real.starts_with(&packages_dir) {
                    return Err(format!(
                        "import {name} (in {from}) is refused: package {} is a link out of the workspace",
                        package.display()
                    ));
                }
                return Ok(Node {
                    name: name.to_string(),
                    origin: Origin::Package { lib: real },
                    imports: Vec::new(),
                });
            }
        }
        Err(format!(
            "import {name} (in {from}) is not a source of the workspace, a package module or a module of the toolchain"
        ))
    }
}

/// The private cache folder of this process (0700), created on first use;
/// those of servers that are gone are removed then.
fn cache_dir() -> Result<Dir, FsError> {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let path = DIR.get_or_init(|| {
        remove_orphans();
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

fn remove_orphans() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    if !Path::new("/proc/self").exists() {
        return;
    }
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(CACHE_PREFIX)) else {
            continue;
        };
        let pid = rest.split('-').next().unwrap_or("");
        if !pid.is_empty()
            && pid.bytes().all(|b| b.is_ascii_digit())
            && !Path::new("/proc").join(pid).exists()
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
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
    let cache = safe_fs::off_runtime(
        &std::env::temp_dir(),
        "create the verify cache in",
        cache_dir,
    )
    .await
    .map_err(|e| BuildError::Setup(e.to_string()))?;
    let cache = Arc::new(cache);
    let mut keys: HashMap<String, String> = HashMap::new();
    let mut built = Built::default();
    let packages: Vec<String> = {
        let mut libs: Vec<String> = closure
            .order
            .iter()
            .filter_map(|n| match &n.origin {
                Origin::Package { lib } => Some(lib.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect();
        libs.sort();
        libs.dedup();
        libs
    };
    let origins: HashMap<&str, &Origin> = closure
        .order
        .iter()
        .map(|n| (n.name.as_str(), &n.origin))
        .collect();
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
        let mut closure_text = format!(
            "lean-beam-verify 1\n{}\n{}\n{}\n{}\n",
            tc.version,
            tc.lib.display(),
            node.name,
            sha256::hex(text.as_bytes())
        );
        for import in &node.imports {
            let line = match origins.get(import.as_str()) {
                Some(Origin::Workspace { .. }) => {
                    format!(
                        "w {import} {}\n",
                        keys.get(import).map_or("", String::as_str)
                    )
                }
                Some(Origin::Package { lib }) => {
                    let olean = lib
                        .join(lexer::name_components(import).iter().collect::<PathBuf>())
                        .with_extension("olean");
                    let stamp = std::fs::metadata(&olean)
                        .map(|m| {
                            use std::os::unix::fs::MetadataExt;
                            format!("{} {} {}", m.len(), m.mtime(), m.mtime_nsec())
                        })
                        .unwrap_or_default();
                    format!("p {import} {stamp}\n")
                }
                _ => format!("t {import}\n"),
            };
            closure_text.push_str(&line);
        }
        let key = sha256::hex(closure_text.as_bytes());
        keys.insert(node.name.clone(), key.clone());
        let dir = cache.path().join(&key);
        let olean = dir.join(rel).with_extension("olean");
        built.dirs.insert(node.name.clone(), dir.clone());
        if olean.is_file() {
            built.reused += 1;
            link(&dir, &view, rel).await?;
            continue;
        }
        // Stage: a fresh folder with a copy of the source, compiled there,
        // renamed to its key when done.
        let (cache2, rel2, text2) = (Arc::clone(&cache), rel.clone(), Arc::clone(text));
        let staged = safe_fs::off_runtime(cache.path(), "stage a module in", move || {
            stage(&cache2, &rel2, &text2)
        })
        .await
        .map_err(|e| BuildError::Setup(e.to_string()))?;
        let lean_path = search.clone();
        let out = staged.join(rel).with_extension("olean");
        let args = vec![
            "-o".to_string(),
            out.to_string_lossy().into_owned(),
            "-i".to_string(),
            out.with_extension("ilean").to_string_lossy().into_owned(),
            rel.to_string_lossy().into_owned(),
        ];
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
            let _ = std::fs::remove_dir_all(&staged);
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
        keys.into_values().collect::<HashSet<_>>(),
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
    fn a_header_without_prelude_imports_init() {
        assert_eq!(header("import A\n").unwrap(), ["Init", "A"]);
        assert_eq!(header("/- c -/\nprelude\nimport A\n").unwrap(), ["A"]);
        assert_eq!(header("module\nprelude\n").unwrap(), Vec::<String>::new());
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
