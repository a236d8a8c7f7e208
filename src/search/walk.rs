//! The files an index reads: the workspace's Lean sources, its Lake
//! packages' (`.lake/packages/*`), and the toolchain's library sources when
//! the toolchain ships them (`<prefix>/src/lean`), each with its module name
//! and a stamp of the source and of its built `.ilean` (size, modification
//! time, inode: what the import stamps compare), so a rewritten source, a
//! rebuild or a package update is seen at the next query.
//!
//! Directories whose name starts with `.` (`.lake`, `.git`) are not entered
//! (the packages are listed on purpose), links to directories are not
//! followed, and each tree's `lakefile.lean` is not a module.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::watch::Watch;

/// What a file looked like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl Stamp {
    pub fn of(path: &Path) -> Option<Stamp> {
        std::fs::metadata(path).ok().map(|m| Stamp::of_meta(&m))
    }

    fn of_meta(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode: std::os::unix::fs::MetadataExt::ino(meta),
        }
    }
}

/// Where a file comes from, in the order results prefer.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Origin {
    Workspace,
    Package(String),
    Toolchain,
}

/// One source file to index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub path: PathBuf,
    /// The path shown to agents: relative to the workspace root inside it
    /// (packages too: `.lake/packages/P/…`), else absolute.
    pub shown: String,
    pub module: String,
    pub origin: Origin,
    /// The source's stamp and its `.ilean`'s (absent: `None`).
    pub stamp: (Stamp, Option<Stamp>),
}

/// The trees of one workspace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Trees {
    pub root: PathBuf,
    /// `<prefix>` of the toolchain, if known.
    pub toolchain: Option<PathBuf>,
}

/// One tree of sources: where its files are, where their `.ilean`s are
/// built, and whose it is.
struct Tree {
    base: PathBuf,
    build: PathBuf,
    origin: Origin,
    /// Directories above the build folder (and the packages' folder) that
    /// are watched so that their creation is seen.
    chain: Vec<PathBuf>,
}

/// The trees, in listing order: the workspace, then the packages (by
/// name), then the toolchain's library sources when it ships them.
fn trees_of(trees: &Trees) -> Vec<Tree> {
    let root = &trees.root;
    let lake = |base: &Path| {
        let build = base.join(".lake/build/lib/lean");
        let chain = [".lake", ".lake/build", ".lake/build/lib"]
            .iter()
            .map(|d| base.join(d))
            .collect::<Vec<_>>();
        (build, chain)
    };
    let (build, mut chain) = lake(root);
    chain.push(root.join(".lake/packages"));
    let mut out = vec![Tree {
        base: root.clone(),
        build,
        origin: Origin::Workspace,
        chain,
    }];
    let mut packages: Vec<PathBuf> = std::fs::read_dir(root.join(".lake/packages"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    packages.sort();
    for package in packages {
        let name = package
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (build, chain) = lake(&package);
        out.push(Tree {
            base: package,
            build,
            origin: Origin::Package(name),
            chain,
        });
    }
    if let Some(prefix) = &trees.toolchain {
        let src = prefix.join("src/lean");
        if src.is_dir() {
            out.push(Tree {
                base: src,
                build: prefix.join("lib/lean"),
                origin: Origin::Toolchain,
                chain: vec![prefix.join("lib")],
            });
        }
    }
    out
}

/// Every source file of the trees: the workspace first, then the packages
/// (by name), then the toolchain. With a `watch`, every directory entered
/// (and the build trees' and the folders above them) is watched before it is
/// read; the answer's flag is false if one could not be.
pub fn list(trees: &Trees, mut watch: Option<&mut Watch>) -> (Vec<Listed>, bool) {
    let mut out = Vec::new();
    let mut watched = true;
    for t in trees_of(trees) {
        if let Some(w) = watch.as_deref_mut() {
            for dir in &t.chain {
                if dir.is_dir() && !w.add(dir) {
                    watched = false;
                }
            }
            watched &= watch_tree(&t.build, w);
        }
        watched &= tree(&t, &trees.root, watch.as_deref_mut(), &mut out);
    }
    (out, watched)
}

/// Watch `dir` and every directory under it (a build tree); true when all
/// could be (a missing tree is seen through its parent's watch).
fn watch_tree(dir: &Path, watch: &mut Watch) -> bool {
    let mut stack = vec![dir.to_path_buf()];
    let mut ok = true;
    while let Some(dir) = stack.pop() {
        if !dir.is_dir() {
            continue;
        }
        ok &= watch.add(&dir);
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if entry.file_type().is_ok_and(|k| k.is_dir()) {
                stack.push(entry.path());
            }
        }
    }
    ok
}

/// The source file an event at `path` is about: a `.lean` of a tree
/// (outside its dot-folders, not its `lakefile.lean`) or the source of a
/// built `.ilean`; `None` for anything else.
pub fn source_of(trees: &Trees, path: &Path) -> Option<PathBuf> {
    for t in trees_of(trees) {
        if let Ok(rel) = path.strip_prefix(&t.build) {
            if rel.extension().is_some_and(|e| e == "ilean") {
                return Some(t.base.join(rel.with_extension("lean")));
            }
            return None;
        }
    }
    // The deepest base first: a package's files are under the workspace's
    // `.lake`, which the workspace's own tree does not enter.
    let mut all = trees_of(trees);
    all.sort_by_key(|t| std::cmp::Reverse(t.base.as_os_str().len()));
    let t = all.iter().find(|t| path.starts_with(&t.base))?;
    let rel = path.strip_prefix(&t.base).ok()?;
    let mut dirs = rel.parent().into_iter().flat_map(Path::components);
    let hidden = dirs.any(|c| c.as_os_str().as_encoded_bytes().starts_with(b"."));
    let lean = rel.extension().is_some_and(|e| e == "lean");
    (lean && !hidden && rel != Path::new("lakefile.lean")).then(|| path.to_path_buf())
}

/// `path` (a source [`source_of`] gave) as listed now; `None` when it is
/// gone or no longer a regular file or link.
pub fn listed(trees: &Trees, path: &Path) -> Option<Listed> {
    let mut all = trees_of(trees);
    all.sort_by_key(|t| std::cmp::Reverse(t.base.as_os_str().len()));
    let t = all.iter().find(|t| path.starts_with(&t.base))?;
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.is_dir() {
        return None;
    }
    entry(
        t,
        &trees.root,
        path.to_path_buf(),
        Stamp::of_meta(&meta),
        t.build.is_dir(),
    )
}

/// List one tree into `out`, watching each directory before reading it;
/// false when a watch was refused.
fn tree(t: &Tree, root: &Path, mut watch: Option<&mut Watch>, out: &mut Vec<Listed>) -> bool {
    let base = &t.base;
    let mut stack = vec![base.to_path_buf()];
    let mut files = Vec::new();
    let mut watched = true;
    while let Some(dir) = stack.pop() {
        if let Some(w) = watch.as_deref_mut() {
            watched &= w.add(&dir) || !dir.is_dir();
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if !name.starts_with('.') {
                    stack.push(entry.path());
                }
            } else if name.ends_with(".lean") && !(dir == *base && name == "lakefile.lean") {
                // Stat through the directory (`fstatat`), not the full path.
                let Some(stamp) = entry.metadata().ok().map(|m| Stamp::of_meta(&m)) else {
                    continue;
                };
                files.push((entry.path(), stamp));
            }
        }
    }
    // By bytes: a component-wise comparison costs more, and any fixed order
    // serves (it decides only which files a bound leaves out).
    files.sort_by(|a, b| a.0.as_os_str().cmp(b.0.as_os_str()));
    // Without a build folder there is no `.ilean` to stat.
    let built = t.build.is_dir();
    out.extend(
        files
            .into_iter()
            .filter_map(|(path, stamp)| entry(t, root, path, stamp, built)),
    );
    watched
}

/// One listed file of tree `t`, with its `.ilean`'s stamp when `built`.
fn entry(t: &Tree, root: &Path, path: PathBuf, stamp: Stamp, built: bool) -> Option<Listed> {
    let rel = path.strip_prefix(&t.base).ok()?;
    let module_path = rel.with_extension("");
    let module = module_path
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join(".");
    let ilean = if built {
        Stamp::of(&t.build.join(&module_path).with_extension("ilean"))
    } else {
        None
    };
    let shown = match path.strip_prefix(root) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    };
    Some(Listed {
        path,
        shown,
        module,
        origin: t.origin.clone(),
        stamp: (stamp, ilean),
    })
}
