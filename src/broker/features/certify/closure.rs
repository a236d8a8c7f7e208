//! The import closure of the verified module: each import of a header read
//! by the lexer and resolved only to a source inside the root (no `..`, no
//! link out of it), to a module of the toolchain's own library, or to a
//! package's build layout under `.lake/packages` (`packages`), in
//! dependency order.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::imports::header;
use super::packages::{PackageCheck, check_package, read_lake_file};
use crate::lean_source::lakefile::{self, LeanSettings};
use crate::lean_source::lexer;
use crate::safe_fs;

/// Modules one import closure may hold (workspace, package and toolchain
/// modules), past a Mathlib closure (about 8,000 in 2026).
pub const MAX_MODULES: usize = 20_000;

/// Where a module of the closure comes from.
#[derive(Debug, Clone)]
pub enum Origin {
    /// A source of the workspace (or the verified file itself), as read.
    Workspace { rel: PathBuf, text: Arc<str> },
    /// The toolchain's own library.
    Toolchain,
    /// Another Lake package's build layout: its `lib/lean` folder, and
    /// what its Lake trace says of the module.
    Package { lib: PathBuf, check: PackageCheck },
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
#[derive(Debug)]
pub struct Closure {
    pub order: Vec<Node>,
    /// Imports refused or not found, one sentence each.
    pub refused: Vec<String>,
    /// What the workspace's lakefile sets for elaboration, or why it cannot
    /// be read.
    pub settings: Result<LeanSettings, String>,
    /// Each workspace and package module's cache key ([`keys`]), once
    /// computed.
    pub keys: HashMap<String, String>,
}

/// Read the workspace package's lakefile settings (`lakefile.lean` first, as
/// Lake does; none without a lakefile). Blocking.
pub fn lakefile_settings(root: &Path) -> Result<LeanSettings, String> {
    for name in ["lakefile.lean", "lakefile.toml"] {
        let path = root.join(name);
        if std::fs::symlink_metadata(&path).is_err() {
            continue;
        }
        let bytes = read_lake_file(&path).map_err(|e| format!("{name} cannot be read: {e}"))?;
        let text = String::from_utf8_lossy(&bytes);
        return if name.ends_with(".toml") {
            lakefile::toml_settings(&text)
        } else {
            Ok(lakefile::lean_settings(&text))
        };
    }
    Ok(LeanSettings::default())
}

impl Closure {
    pub fn workspace(&self) -> impl Iterator<Item = (&Node, &Path, &Arc<str>)> {
        self.order.iter().filter_map(|n| match &n.origin {
            Origin::Workspace { rel, text } => Some((n, rel.as_path(), text)),
            _ => None,
        })
    }
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
        out: Closure {
            order: Vec::new(),
            refused: Vec::new(),
            settings: lakefile_settings(&canonical_root),
            keys: HashMap::new(),
        },
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
                let real_package = package.canonicalize().unwrap_or(package.clone());
                if !real.starts_with(&packages_dir) || !real.starts_with(&real_package) {
                    return Err(format!(
                        "import {name} (in {from}) is refused: package {} is a link out of the workspace",
                        package.display()
                    ));
                }
                let (check, imports) = check_package(self.root, &real_package, &real, &rel);
                return Ok(Node {
                    name: name.to_string(),
                    origin: Origin::Package { lib: real, check },
                    imports,
                });
            }
        }
        Err(format!(
            "import {name} (in {from}) is not a source of the workspace, a package module or a module of the toolchain"
        ))
    }
}
