//! Which sources import a module, directly or through other modules of the
//! workspace, so that a checkpoint reopens only the documents it can affect
//! (Lean reads a file's imports when it opens the file, and nothing else makes
//! an open file see a new `.olean`).
//!
//! The reading errs on the side of reopening: a header it cannot read, a
//! module built in the workspace whose source it cannot find, or an import
//! graph past its limit all count as "may import". It reads files: run it off
//! the runtime.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::lean_source::{lexer, outline};
use crate::safe_fs;

/// Modules looked at per question, far past any real workspace's depth.
const LIMIT: usize = 10_000;

/// What the workspace says about one module.
#[derive(Clone)]
enum Module {
    /// Its source is in the workspace: these are its imports.
    Source(Vec<String>),
    /// Not built or kept here (the toolchain, another package): it cannot
    /// import a module of this workspace.
    Elsewhere,
    /// Built here but unreadable as a source: anything is possible.
    Unknown,
}

/// Headers of the workspace's sources, each read at most once.
pub struct ImportGraph {
    root: PathBuf,
    modules: HashMap<String, Module>,
}

impl ImportGraph {
    pub fn new(root: &Path) -> Self {
        ImportGraph {
            root: root.to_path_buf(),
            modules: HashMap::new(),
        }
    }

    /// Whether a source with `text` may import `module`: `false` only when its
    /// imports, followed through the workspace's sources, never reach it.
    pub fn may_import(&mut self, text: &str, module: &str) -> bool {
        let Some(mut queue) = outline::imports(text) else {
            return true;
        };
        let mut seen = HashSet::new();
        while let Some(next) = queue.pop() {
            if next == module {
                return true;
            }
            if !seen.insert(next.clone()) {
                continue;
            }
            if seen.len() > LIMIT {
                return true;
            }
            match self.module(&next) {
                Module::Source(imports) => queue.extend(imports),
                Module::Elsewhere => {}
                Module::Unknown => return true,
            }
        }
        false
    }

    /// The modules of this workspace (with a source here, or built here)
    /// that a source with `text` reaches through its imports, each once, in
    /// the order met; empty when its header cannot be read.
    pub fn workspace_imports(&mut self, text: &str) -> Vec<String> {
        let mut queue = outline::imports(text).unwrap_or_default();
        queue.reverse();
        let mut seen = HashSet::new();
        let mut found = Vec::new();
        while let Some(next) = queue.pop() {
            if seen.len() >= LIMIT || !seen.insert(next.clone()) {
                continue;
            }
            match self.module(&next) {
                Module::Source(imports) => {
                    found.push(next);
                    queue.extend(imports.into_iter().rev());
                }
                Module::Unknown => found.push(next),
                Module::Elsewhere => {}
            }
        }
        found
    }

    fn module(&mut self, name: &str) -> Module {
        if let Some(known) = self.modules.get(name) {
            return known.clone();
        }
        let parts = lexer::name_components(name);
        if parts
            .iter()
            .any(|p| p.is_empty() || p == "." || p == ".." || p.contains('/'))
        {
            // No module of this workspace has such a name.
            self.modules.insert(name.to_owned(), Module::Unknown);
            return Module::Unknown;
        }
        let rel: PathBuf = parts.iter().collect();
        let source = self.root.join(&rel).with_extension("lean");
        // Only the header matters, and only a regular file is read (a FIFO
        // in a source's place must not hang the question).
        let read = safe_fs::read_regular_blocking(
            &source,
            safe_fs::Links::Follow,
            safe_fs::SMALL_FILE_BYTES,
            safe_fs::Oversize::Truncate,
        );
        let known = match read {
            Ok(c) => outline::imports(&String::from_utf8_lossy(&c.bytes))
                .map_or(Module::Unknown, Module::Source),
            Err(safe_fs::FsError::WrongType { .. }) => Module::Unknown,
            Err(_) => {
                let built = self
                    .root
                    .join(".lake/build/lib/lean")
                    .join(&rel)
                    .with_extension("olean");
                if built.exists() {
                    Module::Unknown
                } else {
                    Module::Elsewhere
                }
            }
        };
        self.modules.insert(name.to_owned(), known.clone());
        known
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::scratch::Scratch;

    fn workspace(files: &[(&str, &str)]) -> Scratch {
        let scratch = Scratch::new(&format!("importers-{}", files.len()));
        for (path, text) in files {
            let file = scratch.0.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            if *text == "fifo" {
                let c = std::ffi::CString::new(file.to_str().unwrap()).unwrap();
                // SAFETY: a NUL-terminated path.
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            } else {
                std::fs::write(file, text).unwrap();
            }
        }
        scratch
    }

    #[test]
    fn follows_the_workspace_sources_and_assumes_the_worst_when_it_cannot() {
        let w = workspace(&[
            ("P/Base.lean", "prelude\n"),
            ("P/Mid.lean", "prelude\nimport P.Base\n"),
            ("P/Top.lean", "prelude\nimport P.Mid\nimport Std.Data\n"),
            ("P/Odd.lean", "import «P».Base\n"),
            ("P/Pipe.lean", "fifo"),
            (".lake/build/lib/lean/Gen/Made.olean", ""),
        ]);
        let mut graph = ImportGraph::new(&w.0);
        assert!(graph.may_import("import P.Base\n", "P.Base"), "directly");
        assert!(
            graph.may_import("import P.Top\n", "P.Base"),
            "through two sources"
        );
        assert!(!graph.may_import("import P.Top\n", "P.Other"));
        assert!(
            !graph.may_import("import Std.Data Lean\n", "P.Base"),
            "modules of other packages cannot import this one"
        );
        assert!(
            graph.may_import("import P.Odd\n", "P.Base"),
            "a header with a quoted component"
        );
        assert!(!graph.may_import("import P.Odd\n", "P.Other"));
        assert!(
            graph.may_import("import «..».P\n", "P.Other"),
            "no name of this workspace: anything is possible"
        );
        assert!(
            graph.may_import("import P.Pipe\n", "P.Other"),
            "a FIFO in a source's place is not read, and may import anything"
        );
        assert!(
            graph.may_import("import Gen.Made\n", "P.Base"),
            "built here, no source"
        );
        assert!(
            graph.may_import("import P.Top\n/- open", "P.Base"),
            "its own header unreadable"
        );
        assert!(!graph.may_import("prelude\ndef x := 1\n", "P.Base"));
        assert_eq!(
            graph.workspace_imports("import P.Top\nimport Gen.Made\n"),
            ["P.Top", "P.Mid", "P.Base", "Gen.Made"],
            "sources and modules built here, not other packages"
        );
        assert!(graph.workspace_imports("import «X»\n").is_empty());
    }
}
