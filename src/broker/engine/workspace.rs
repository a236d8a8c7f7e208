//! The local workspace descriptor: validation, canonicalization, and how
//! document paths resolve against it.
//!
//! The descriptor selects a Lean runtime; it is not a sandbox. Relative paths
//! resolve under the canonical root, absolute paths are canonicalized on their own
//! and may name files outside it (dependency sources, for example).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::broker::error::{Error, Result};
use crate::results::WorkspaceEcho;
use crate::util::lock;

/// Files whose presence makes a directory a Lean/Lake project.
pub const PROJECT_MARKERS: &[&str] = &["lean-toolchain", "lakefile.lean", "lakefile.toml"];

/// A validated, canonical workspace root.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Root(PathBuf);

impl Root {
    #[cfg(test)]
    pub fn for_tests(path: &str) -> Self {
        Root(PathBuf::from(path))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn display(&self) -> String {
        self.0.to_string_lossy().into_owned()
    }

    /// The canonical descriptor that results echo.
    pub fn descriptor(&self) -> WorkspaceEcho {
        WorkspaceEcho {
            root: self.display(),
        }
    }
}

fn invalid(field: &'static str, value: &str, rule: &str) -> Error {
    Error::invalid_input(field, value, rule)
}

/// Validate a descriptor for an ordinary request: absolute, existing, a
/// directory, and a Lean/Lake project. Symlinked aliases resolve to one root.
pub fn resolve(raw: &str) -> Result<Root> {
    let path = Path::new(raw);
    if !path.is_absolute() {
        return Err(invalid(
            "workspace.root",
            raw,
            "must be an absolute path (relative roots are rejected; the server never guesses a base directory)",
        ));
    }
    let canonical = path.canonicalize().map_err(|e| {
        invalid(
            "workspace.root",
            raw,
            &format!("must name an existing directory ({e})"),
        )
    })?;
    if !canonical.is_dir() {
        return Err(invalid(
            "workspace.root",
            raw,
            "must be a directory (the root of a Lean/Lake project), not a file",
        ));
    }
    if !PROJECT_MARKERS.iter().any(|m| canonical.join(m).is_file()) {
        return Err(invalid(
            "workspace.root",
            raw,
            "is not a Lean/Lake project: it has none of lean-toolchain, lakefile.lean, lakefile.toml",
        ));
    }
    Ok(Root(canonical))
}

/// Resolve a descriptor for cache eviction: a previously echoed canonical root
/// is accepted even if the directory has since disappeared.
pub fn resolve_for_eviction(raw: &str) -> Result<Root> {
    let path = Path::new(raw);
    if !path.is_absolute() {
        return Err(invalid("workspace.root", raw, "must be an absolute path"));
    }
    Ok(Root(
        path.canonicalize().unwrap_or_else(|_| path.to_path_buf()),
    ))
}

/// A document resolved from a call's workspace and path.
#[derive(Debug)]
pub struct Resolved {
    pub root: Root,
    pub doc: DocPath,
    /// The file's metadata as resolving it just read it (`None` when it could
    /// not be read): whether the file changed on disk since a version's text
    /// was read, without another `stat`.
    pub seen: Option<std::fs::Metadata>,
}

/// A resolved document path: the canonical file and how results name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DocPath {
    pub file: PathBuf,
    /// Relative to the root when the file is inside it, else absolute.
    pub shown: String,
}

pub fn resolve_path(root: &Root, path: &str) -> Result<DocPath> {
    if path.is_empty() {
        return Err(invalid("path", path, "must name a .lean file"));
    }
    let file = joined(root, path).canonicalize().map_err(|e| {
        invalid(
            "path",
            path,
            &format!(
                "must name an existing file ({e}); relative paths resolve under {}",
                root.display()
            ),
        )
    })?;
    if !file.is_file() {
        let kind = crate::safe_fs::irregular_kind(&file).unwrap_or("special file");
        return Err(invalid(
            "path",
            path,
            &format!("must name a file, not a {kind}"),
        ));
    }
    if file.extension().and_then(|e| e.to_str()) != Some("lean") {
        return Err(invalid("path", path, "must name a .lean file"));
    }
    Ok(DocPath {
        shown: shown_path(root, &file),
        file,
    })
}

/// A document path as given, made absolute against the root.
fn joined(root: &Root, path: &str) -> PathBuf {
    if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        root.path().join(path)
    }
}

/// How a file is named in results: workspace-relative when inside the root.
pub fn shown_path(root: &Root, file: &Path) -> String {
    match file.strip_prefix(root.path()) {
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => file.to_string_lossy().into_owned(),
    }
}

/// Remembered resolutions, so that the steady state of a session costs one
/// `stat` per call instead of `canonicalize`'s `readlink` per path component
/// (seven for a typical document path) plus the checks of the root.
///
/// A remembered answer is used only after it is re-checked against the file
/// system: the raw name and the canonical name must both still lead to the
/// same device and inode, of the same kind, and the root's project marker
/// must still be there. A document path given relative to the root proves the
/// root too (the root is how the raw name reaches the file), so that is two
/// `stat`s. Anything else (a moved symlink, a file replaced by an editor's
/// rename, a deleted marker) falls back to the full resolution, whose errors
/// are the ones reported.
#[derive(Default)]
pub struct Resolver {
    roots: Mutex<HashMap<String, KnownRoot>>,
    /// By (raw root, relative raw path).
    documents: Mutex<HashMap<(String, String), KnownDocument>>,
}

/// More distinct raw spellings than any session uses; past it the table
/// starts over rather than grow without bound.
const REMEMBERED: usize = 4096;

#[derive(Clone)]
struct KnownRoot {
    root: Root,
    id: FileId,
    marker: PathBuf,
}

#[derive(Clone)]
struct KnownDocument {
    root: KnownRoot,
    doc: DocPath,
    id: FileId,
}

/// What a `stat` tells of a resolved object. The file type is part of it: an
/// inode number is reused as soon as it is free, so a synced document deleted
/// and replaced by a FIFO can have the old one (and a FIFO must never reach a
/// read). Size and mtime are not: an edit in place changes them without
/// changing what the path resolves to, and the read that follows checks the
/// opened descriptor anyway.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct FileId {
    dev: u64,
    ino: u64,
    /// `st_mode & S_IFMT`.
    format: u32,
}

impl FileId {
    fn of(meta: &std::fs::Metadata) -> FileId {
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
            format: meta.mode() & libc::S_IFMT,
        }
    }
}

fn file_id(path: &Path) -> Option<FileId> {
    std::fs::metadata(path).ok().map(|m| FileId::of(&m))
}

/// Both names still lead to the object that was resolved: then its metadata
/// (through `raw`). The canonical name has no link in it, so it is not
/// followed: a link put there since is a change.
fn still_same(raw: &Path, canonical: &Path, id: FileId) -> Option<std::fs::Metadata> {
    let seen = std::fs::metadata(raw).ok()?;
    let same = FileId::of(&seen) == id
        && (raw == canonical
            || std::fs::symlink_metadata(canonical)
                .map(|m| FileId::of(&m))
                .ok()
                == Some(id));
    same.then_some(seen)
}

fn recall<K, Q, V>(map: &Mutex<HashMap<K, V>>, key: &Q) -> Option<V>
where
    K: std::hash::Hash + Eq + std::borrow::Borrow<Q>,
    Q: std::hash::Hash + Eq + ?Sized,
    V: Clone,
{
    lock(map).get(key).cloned()
}

fn remember<K: std::hash::Hash + Eq, V>(map: &Mutex<HashMap<K, V>>, key: K, value: V) {
    let mut map = lock(map);
    if map.len() >= REMEMBERED {
        map.clear();
    }
    map.insert(key, value);
}

impl Resolver {
    /// [`resolve`], answered from memory when the file system agrees.
    pub fn root(&self, raw: &str) -> Result<Root> {
        self.root_entry(raw).map(|(root, _)| root)
    }

    /// The canonical root, with what is remembered of it (none when its
    /// device, inode or marker could not be read).
    fn root_entry(&self, raw_root: &str) -> Result<(Root, Option<KnownRoot>)> {
        let raw = Path::new(raw_root);
        if let Some(known) = recall(&self.roots, raw_root) {
            if still_same(raw, known.root.path(), known.id).is_some() && known.marker.is_file() {
                return Ok((known.root.clone(), Some(known)));
            }
        }
        let root = resolve(raw_root)?;
        let marker = PROJECT_MARKERS
            .iter()
            .map(|m| root.path().join(m))
            .find(|m| m.is_file());
        let known = file_id(root.path())
            .zip(marker)
            .map(|(id, marker)| KnownRoot {
                root: root.clone(),
                id,
                marker,
            });
        if let Some(known) = &known {
            remember(&self.roots, raw_root.to_owned(), known.clone());
        }
        Ok((root, known))
    }

    /// [`resolve`] and [`resolve_path`], answered from memory when the file
    /// system agrees.
    pub fn document(&self, raw: &str, path: &str) -> Result<Resolved> {
        let raw_root = Path::new(raw);
        let relative = !path.is_empty() && !Path::new(path).is_absolute();
        let key = (raw.to_owned(), path.to_owned());
        if relative && raw_root.is_absolute() {
            if let Some(known) = recall(&self.documents, &key) {
                if let Some(seen) = still_same(&raw_root.join(path), &known.doc.file, known.id) {
                    if known.root.marker.is_file() {
                        return Ok(Resolved {
                            root: known.root.root,
                            doc: known.doc,
                            seen: Some(seen),
                        });
                    }
                }
            }
        }
        let (root, known_root) = self.root_entry(raw)?;
        let doc = resolve_path(&root, path)?;
        let seen = std::fs::metadata(&doc.file).ok();
        if let (Some(seen), Some(known_root), true) = (&seen, known_root, relative) {
            let known = KnownDocument {
                root: known_root,
                doc: doc.clone(),
                id: FileId::of(seen),
            };
            remember(&self.documents, key, known);
        }
        Ok(Resolved { root, doc, seen })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::scratch::Scratch;

    /// A fresh `lean-beam-resolver-<tag>-<pid>` holding a project `proj`.
    fn scratch(tag: &str) -> Scratch {
        let s = Scratch::new(&format!("resolver-{tag}"));
        std::fs::create_dir_all(s.0.join("proj/Sub")).unwrap();
        std::fs::write(s.0.join("proj/lean-toolchain"), "x").unwrap();
        std::fs::write(s.0.join("proj/Sub/A.lean"), "a").unwrap();
        std::fs::write(s.0.join("proj/Sub/B.lean"), "b").unwrap();
        s
    }

    fn ws(root: &Path) -> String {
        root.to_string_lossy().into_owned()
    }

    /// Every answer of the resolver is the one the uncached resolution gives,
    /// however the files change between calls.
    fn agree(resolver: &Resolver, root: &Path, path: &str) {
        let cached = resolver.document(&ws(root), path);
        let direct = resolve(&ws(root)).and_then(|r| resolve_path(&r, path).map(|d| (r, d)));
        match (cached, direct) {
            (Ok(a), Ok(b)) => {
                assert_eq!((a.root, a.doc.clone()), b);
                // What resolving saw is the file as it is now.
                let now = std::fs::metadata(&a.doc.file).ok().map(|m| FileId::of(&m));
                assert_eq!(a.seen.map(|m| FileId::of(&m)), now);
            }
            (Err(a), Err(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}")),
            (a, b) => panic!("resolver {:?} but resolution {:?}", a.is_ok(), b.is_ok()),
        }
    }

    #[test]
    fn remembered_answers_follow_the_file_system() {
        let s = scratch("follow");
        let resolver = Resolver::default();
        let proj = s.0.join("proj");
        std::os::unix::fs::symlink(&proj, s.0.join("alias")).unwrap();
        std::os::unix::fs::symlink("A.lean", proj.join("Sub/L.lean")).unwrap();
        let alias = s.0.join("alias");
        for _ in 0..2 {
            agree(&resolver, &proj, "Sub/A.lean");
            agree(&resolver, &alias, "Sub/L.lean");
            agree(
                &resolver,
                &alias,
                &proj.join("Sub/B.lean").to_string_lossy(),
            );
        }
        assert_eq!(
            resolver.root(&ws(&alias)).unwrap().path(),
            proj.as_path(),
            "an alias resolves to the canonical root"
        );

        // A file replaced by an editor's rename (a new inode).
        std::fs::write(proj.join("Sub/new"), "a2").unwrap();
        std::fs::rename(proj.join("Sub/new"), proj.join("Sub/A.lean")).unwrap();
        agree(&resolver, &proj, "Sub/A.lean");

        // A symlink moved to another file.
        std::fs::remove_file(proj.join("Sub/L.lean")).unwrap();
        std::os::unix::fs::symlink("B.lean", proj.join("Sub/L.lean")).unwrap();
        agree(&resolver, &alias, "Sub/L.lean");
        assert!(
            resolver
                .document(&ws(&alias), "Sub/L.lean")
                .unwrap()
                .doc
                .file
                .ends_with("Sub/B.lean")
        );

        // A file deleted, a root alias moved to another directory.
        std::fs::remove_file(proj.join("Sub/B.lean")).unwrap();
        agree(&resolver, &alias, "Sub/L.lean");
        std::fs::create_dir_all(s.0.join("other")).unwrap();
        std::fs::remove_file(&alias).unwrap();
        std::os::unix::fs::symlink(s.0.join("other"), &alias).unwrap();
        agree(&resolver, &alias, "Sub/A.lean");

        // A document deleted and replaced by a FIFO that got the old inode
        // number (the file system reuses free inodes at once): simulated by
        // giving the remembered entry the FIFO's device and inode.
        agree(&resolver, &proj, "Sub/A.lean");
        std::fs::remove_file(proj.join("Sub/A.lean")).unwrap();
        let c = std::ffi::CString::new(proj.join("Sub/A.lean").to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let fifo = std::fs::metadata(proj.join("Sub/A.lean")).unwrap();
        {
            let mut docs = resolver.documents.lock().unwrap();
            let key = (ws(&proj), "Sub/A.lean".to_string());
            let known = docs.get_mut(&key).expect("remembered");
            known.id.dev = fifo.dev();
            known.id.ino = fifo.ino();
        }
        let error = resolver.document(&ws(&proj), "Sub/A.lean").unwrap_err();
        assert!(format!("{error:?}").contains("FIFO"), "{error:?}");
        agree(&resolver, &proj, "Sub/A.lean");
        std::fs::remove_file(proj.join("Sub/A.lean")).unwrap();

        // The project marker removed.
        std::fs::remove_file(proj.join("lean-toolchain")).unwrap();
        agree(&resolver, &proj, "Sub/A.lean");
    }
}
