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

/// Every source file of the trees: the workspace first, then the packages
/// (by name), then the toolchain.
pub fn list(trees: &Trees) -> Vec<Listed> {
    let mut out = Vec::new();
    let root = &trees.root;
    tree(
        root,
        &root.join(".lake/build/lib/lean"),
        root,
        &Origin::Workspace,
        &mut out,
    );
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
        let build = package.join(".lake/build/lib/lean");
        tree(&package, &build, root, &Origin::Package(name), &mut out);
    }
    if let Some(prefix) = &trees.toolchain {
        let src = prefix.join("src/lean");
        if src.is_dir() {
            tree(
                &src,
                &prefix.join("lib/lean"),
                root,
                &Origin::Toolchain,
                &mut out,
            );
        }
    }
    out
}

fn tree(base: &Path, build: &Path, root: &Path, origin: &Origin, out: &mut Vec<Listed>) {
    let mut stack = vec![base.to_path_buf()];
    let mut files = Vec::new();
    while let Some(dir) = stack.pop() {
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
            } else if name.ends_with(".lean") && !(dir == base && name == "lakefile.lean") {
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
    let built = build.is_dir();
    for (path, stamp) in files {
        let Ok(rel) = path.strip_prefix(base) else {
            continue;
        };
        let module_path = rel.with_extension("");
        let module = module_path
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join(".");
        let ilean = if built {
            Stamp::of(&build.join(&module_path).with_extension("ilean"))
        } else {
            None
        };
        let shown = match path.strip_prefix(root) {
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        };
        out.push(Listed {
            path,
            shown,
            module,
            origin: origin.clone(),
            stamp: (stamp, ilean),
        });
    }
}
