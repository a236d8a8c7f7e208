//! Compiled imports that changed on disk since Lean loaded them.
//!
//! Lean reads a file's imports (their `.olean`) when it opens the file, and
//! nothing tells it later that one was rebuilt. A checkpoint written by this
//! process reopens the importers itself ([`Runtime::imports_rebuilt`]); one
//! written by another process sharing the workspace's file system (another
//! replica behind a load balancer, a `lake build`) is noticed here, at the
//! importer's next sync: the `.olean` of every workspace module the document
//! reaches through its imports is compared with what it was when this runtime
//! last took it as loaded. A module whose artifact changed (rewritten,
//! appeared or vanished) is handled as if this process had saved it.
//!
//! A stamp is taken before Lean is sent the file, so a rebuild racing with
//! the open counts as a change: at worst one reopen too many, never a stale
//! answer. The `stat`s (and the headers read for a new closure) run off the
//! runtime with `safe_fs`'s time limit; a check that fails is skipped (the
//! next sync checks again).
//!
//! [`Runtime::imports_rebuilt`]: super::runtime::Runtime::imports_rebuilt

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::importers::ImportGraph;
use crate::lean_source::outline;
use crate::{log_warn, safe_fs};

/// What a file looked like: enough to tell that it was replaced (checkpoints
/// and Lake publish by rename, so the inode changes too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

fn stamp(path: &Path) -> Option<FileStamp> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some(FileStamp {
        len: meta.len(),
        modified: meta.modified().ok(),
        inode,
    })
}

/// The workspace modules a document's header reaches, for that header.
struct Closure {
    header: Vec<String>,
    modules: Arc<[String]>,
}

#[derive(Default)]
struct Inner {
    /// Each module's artifact as this runtime last took it as loaded
    /// (`None`: absent).
    seen: HashMap<String, Option<FileStamp>>,
    closures: HashMap<PathBuf, Closure>,
}

/// The stamps of one workspace runtime.
pub struct ImportStamps {
    root: PathBuf,
    inner: Mutex<Inner>,
}

impl ImportStamps {
    pub fn new(root: &Path) -> Self {
        ImportStamps {
            root: root.to_path_buf(),
            inner: Mutex::default(),
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where Lake keeps `module`'s `.olean` (see `checkpoint::artifacts`).
    fn olean(&self, module: &str) -> PathBuf {
        let rel: PathBuf = module.split('.').collect();
        self.root
            .join(".lake/build/lib/lean")
            .join(rel)
            .with_extension("olean")
    }

    /// The source file of a workspace module.
    pub fn source(&self, module: &str) -> PathBuf {
        let rel: PathBuf = module.split('.').collect();
        self.root.join(rel).with_extension("lean")
    }

    /// The workspace modules whose artifacts changed since this runtime took
    /// them as loaded, among those the document `file` with `text` reaches;
    /// those seen for the first time are taken as loaded now.
    pub async fn changed(self: &Arc<Self>, file: &Path, text: &str) -> Vec<String> {
        let Some(header) = outline::imports(text) else {
            // A header this reading does not know: Lean reports on it anyway.
            return Vec::new();
        };
        let known = {
            let inner = self.inner();
            inner
                .closures
                .get(file)
                .filter(|c| c.header == header)
                .map(|c| Arc::clone(&c.modules))
        };
        if known.as_ref().is_some_and(|modules| modules.is_empty()) {
            return Vec::new();
        }
        let this = Arc::clone(self);
        let file = file.to_path_buf();
        // The text is needed only to read a new closure.
        let text = known.is_none().then(|| text.to_owned());
        let checked =
            safe_fs::off_runtime(&self.root, "stat the imported modules under", move || {
                let modules = match (known, text) {
                    (Some(modules), _) => modules,
                    (None, text) => this.closure(&file, text.as_deref().unwrap_or(""), header),
                };
                Ok(this.compare(&modules))
            })
            .await;
        checked.unwrap_or_else(|error| {
            log_warn!("skipped the check for rebuilt imports: {}", error);
            Vec::new()
        })
    }

    /// The workspace modules `text` reaches, remembered for `file`.
    fn closure(&self, file: &Path, text: &str, header: Vec<String>) -> Arc<[String]> {
        if let Some(c) = self
            .inner()
            .closures
            .get(file)
            .filter(|c| c.header == header)
        {
            return Arc::clone(&c.modules);
        }
        let modules: Arc<[String]> = ImportGraph::new(&self.root).workspace_imports(text).into();
        self.inner().closures.insert(
            file.to_path_buf(),
            Closure {
                header,
                modules: Arc::clone(&modules),
            },
        );
        modules
    }

    fn compare(&self, modules: &[String]) -> Vec<String> {
        let now: Vec<Option<FileStamp>> = modules.iter().map(|m| stamp(&self.olean(m))).collect();
        let mut inner = self.inner();
        let mut changed = Vec::new();
        for (module, now) in modules.iter().zip(now) {
            match inner.seen.get(module) {
                None => {
                    inner.seen.insert(module.clone(), now);
                }
                Some(seen) if *seen != now => changed.push(module.clone()),
                Some(_) => {}
            }
        }
        changed
    }

    /// `module`'s artifact was rebuilt and the documents that may import it
    /// reopen: take it as loaded as it is now.
    pub async fn reloaded(self: &Arc<Self>, module: &str) {
        let olean = self.olean(module);
        let stamped = safe_fs::off_runtime(&olean.clone(), "stat", move || Ok(stamp(&olean))).await;
        // Unknown now: take it as absent, so that the next check reports it.
        self.inner()
            .seen
            .insert(module.to_owned(), stamped.unwrap_or(None));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::scratch::Scratch;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        // Write then rename, as checkpoints do, so the inode changes.
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
    }

    #[tokio::test]
    async fn a_rebuilt_import_is_reported_once_and_others_are_not() {
        let scratch = Scratch::new("stamps");
        let root = scratch.0.clone();
        write(&root, "P/Base.lean", "prelude\n");
        write(&root, "P/Mid.lean", "prelude\nimport P.Base\n");
        write(&root, "P/Other.lean", "prelude\n");
        write(&root, ".lake/build/lib/lean/P/Base.olean", "base 1");
        write(&root, ".lake/build/lib/lean/P/Other.olean", "other 1");
        let stamps = Arc::new(ImportStamps::new(&scratch.0));
        let top = root.join("P/Top.lean");
        let text = "prelude\nimport P.Mid\nimport Std.Data\n";

        assert!(stamps.changed(&top, text).await.is_empty(), "first sight");
        assert!(
            stamps.changed(&top, text).await.is_empty(),
            "nothing changed"
        );

        write(&root, ".lake/build/lib/lean/P/Other.olean", "other 2");
        assert!(
            stamps.changed(&top, text).await.is_empty(),
            "P.Other is not imported"
        );

        write(&root, ".lake/build/lib/lean/P/Base.olean", "base 2");
        assert_eq!(
            stamps.changed(&top, text).await,
            vec!["P.Base".to_string()],
            "through P.Mid"
        );
        assert_eq!(
            stamps.changed(&top, text).await,
            vec!["P.Base".to_string()],
            "until it is reloaded"
        );
        stamps.reloaded("P.Base").await;
        assert!(stamps.changed(&top, text).await.is_empty());

        // A module without an artifact yet: its first checkpoint is a change.
        assert!(
            stamps
                .changed(&top, "prelude\nimport P.Mid\n")
                .await
                .is_empty()
        );
        assert_eq!(
            stamps.changed(&top, "prelude\nimport P.Mid\n").await,
            Vec::<String>::new()
        );
        write(&root, ".lake/build/lib/lean/P/Mid.olean", "mid 1");
        assert_eq!(
            stamps.changed(&top, "prelude\nimport P.Mid\n").await,
            vec!["P.Mid".to_string()]
        );
    }
}
