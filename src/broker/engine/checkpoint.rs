//! Development checkpoints: compiling the accepted on-disk source of a module
//! with the workspace's own toolchain into Lake's build layout, published so
//! that no reader ever sees a mix of old and new artifacts or a partial file.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::compiler::{self, RunError};
use super::launch::Launcher;
use super::workspace::{DocPath, Root};
use crate::broker::error::{Error, NotModule, Result, SaveError};
use crate::lean_source::lakefile;
use crate::safe_fs::{self, Dir, Existing, FsError, Links, Oversize};

/// Scratch directories of checkpoints: `.beam-save-<pid>-<random>` in the
/// build folder.
const SCRATCH_PREFIX: &str = ".beam-save-";

/// Lake's build folder, relative to the root.
const BUILD: &str = ".lake/build";

/// Directories Lake would create are created as Lake creates them.
const BUILD_DIR_MODE: u32 = 0o755;

/// A module's artifacts in Lake's build layout.
#[derive(Debug, Clone)]
pub struct Artifacts {
    pub olean: PathBuf,
    pub ilean: PathBuf,
    pub c: PathBuf,
}

impl Artifacts {
    fn all(&self) -> [(&'static str, &Path); 3] {
        [
            ("olean", &self.olean),
            ("ilean", &self.ilean),
            ("c", &self.c),
        ]
    }
}

/// What a checkpoint published: the artifacts the toolchain produced (C only
/// when it did).
#[derive(Debug, Clone)]
pub struct Published {
    pub olean: PathBuf,
    pub ilean: PathBuf,
    pub c: Option<PathBuf>,
}

/// A stable 64-bit FNV-1a hash of the source, as 16 hex digits.
pub fn source_hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The module a file is, relative to the workspace root: `A/B.lean` is `A.B`.
pub fn module_name(root: &Root, doc: &DocPath) -> Result<String> {
    let not_module = |why: NotModule| {
        Error::Save(SaveError::NotModule {
            path: doc.shown.clone(),
            root: root.display(),
            why,
        })
    };
    let rel = doc
        .file
        .strip_prefix(root.path())
        .map_err(|_| not_module(NotModule::OutsideRoot))?;
    let mut parts = Vec::new();
    for component in rel.with_extension("").components() {
        let part = component.as_os_str().to_string_lossy().into_owned();
        let valid = part
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && part
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '\'' || c == '!' || c == '?');
        if !valid {
            return Err(not_module(NotModule::NotIdentifier(part)));
        }
        parts.push(part);
    }
    if parts.first().is_some_and(|p| p == ".lake") {
        return Err(not_module(NotModule::InsideLake));
    }
    Ok(parts.join("."))
}

/// Refuse setups whose batch build we cannot reproduce from here. A lakefile
/// that is not a regular file (a FIFO, a device) is refused by name, never
/// read.
pub async fn check_setup(root: &Root) -> Result<()> {
    for name in ["lakefile.lean", "lakefile.toml"] {
        let Some(text) = safe_fs::read_small_text(&root.path().join(name))
            .await
            .map_err(Error::Fs)?
        else {
            continue;
        };
        let sets = if name.ends_with(".toml") {
            lakefile::toml_sets_more_lean_args(&text)
        } else {
            lakefile::lean_sets_more_lean_args(&text)
        };
        if sets {
            return Err(Error::Save(SaveError::MoreLeanArgs { lakefile: name }));
        }
    }
    Ok(())
}

pub fn artifacts(root: &Root, module: &str) -> Artifacts {
    let rel: PathBuf = module.split('.').collect();
    let lib = root.path().join(".lake/build/lib/lean").join(&rel);
    let ir = root.path().join(".lake/build/ir").join(&rel);
    Artifacts {
        olean: lib.with_extension("olean"),
        ilean: lib.with_extension("ilean"),
        c: ir.with_extension("c"),
    }
}

/// A private scratch directory inside the build folder (same file system, so
/// renames are atomic), removed on drop whatever happens (off the runtime
/// when there is one).
struct Scratch {
    build: Option<Dir>,
    name: OsString,
    dir: Dir,
}

impl Scratch {
    /// Create `<root>/.lake/build/.beam-save-<pid>-<random>` (0700), and the
    /// directories `target`'s artifacts go to, without following a link
    /// anywhere under the root.
    fn create(root: &Path, target: &Artifacts) -> Result<Scratch, FsError> {
        let root_dir = Dir::open(root)?;
        for (_, path) in target.all() {
            let parent = path.parent().unwrap_or(path);
            let rel = parent.strip_prefix(root).unwrap_or(parent);
            root_dir.walk(rel, Some(BUILD_DIR_MODE))?;
        }
        let build = root_dir.walk(Path::new(BUILD), Some(BUILD_DIR_MODE))?;
        let name = OsString::from(safe_fs::random_name(&format!(
            "{SCRATCH_PREFIX}{}-",
            std::process::id()
        )));
        let dir = build.create_dir_new(&name, 0o700)?;
        Ok(Scratch {
            build: Some(build),
            name,
            dir,
        })
    }
}

impl Scratch {
    /// Remove the directory here and now: the caller is off the async
    /// runtime.
    fn remove_now(mut self) {
        if let Some(build) = self.build.take() {
            let _ = build.remove_tree(&self.name);
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let Some(build) = self.build.take() else {
            return;
        };
        let name = std::mem::take(&mut self.name);
        let remove = move || {
            let _ = build.remove_tree(&name);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(remove)),
            Err(_) => remove(),
        }
    }
}

/// Remove the scratch directories that servers killed in the middle of a save
/// left in `root`'s build folder: those whose pid names no running process.
/// Called when a runtime for the root starts, off the runtime.
pub fn remove_stale_scratch(root: &Path) {
    if !Path::new("/proc/self").exists() {
        return; // no way to tell a live pid here
    }
    let Ok(build) = Dir::open(root).and_then(|r| r.walk(Path::new(BUILD), None)) else {
        return;
    };
    for name in build.names().unwrap_or_default() {
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(SCRATCH_PREFIX)) else {
            continue;
        };
        let pid = rest.split('-').next().unwrap_or("");
        if !pid.is_empty()
            && pid.bytes().all(|b| b.is_ascii_digit())
            && pid != std::process::id().to_string()
            && !Path::new("/proc").join(pid).exists()
        {
            match build.remove_tree(&name) {
                Ok(()) => crate::log_info!(
                    "removed {}, left by a server that is gone",
                    build.path().join(&name).display()
                ),
                Err(e) => {
                    crate::log_debug!("cannot remove {}: {e}", build.path().join(&name).display())
                }
            }
        }
    }
}

/// Compile `file` (module `module`) into a scratch directory with the
/// workspace's toolchain.
async fn compile(
    launcher: &Launcher,
    root: &Root,
    doc: &DocPath,
    scratch: &Path,
    limit: Duration,
) -> Result<Artifacts, SaveError> {
    let staged = staged_in(scratch);
    let rel = doc.file.strip_prefix(root.path()).unwrap_or(&doc.file);
    let mut args = Vec::new();
    for (flag, path) in [
        ("-o", &staged.olean),
        ("-i", &staged.ilean),
        ("-c", &staged.c),
    ] {
        args.push(flag.to_string());
        args.push(path.to_string_lossy().into_owned());
    }
    args.push(rel.to_string_lossy().into_owned());
    let (describe, output) = compiler::run(launcher, root, &args, None, limit).await;
    let output = match output {
        Ok(output) => output,
        Err(RunError::Spawn(e)) => {
            return Err(SaveError::Spawn {
                command: describe,
                error: e.to_string(),
            });
        }
        Err(RunError::TimedOut) => {
            return Err(SaveError::CompileTimeout {
                path: doc.shown.clone(),
                limit,
            });
        }
        Err(RunError::Wait(e)) => {
            return Err(SaveError::CompilerWait {
                command: describe,
                error: e.to_string(),
            });
        }
    };
    if !output.status.success() {
        return Err(SaveError::CompileFailed {
            command: describe,
            status: output.status.to_string(),
            code: output.status.code(),
            stdout: compiler::tail(&output.stdout),
            stderr: compiler::tail(&output.stderr),
        });
    }
    Ok(staged)
}

/// The staged file name of each artifact in the scratch directory.
fn staged_in(scratch: &Path) -> Artifacts {
    Artifacts {
        olean: scratch.join("out.olean"),
        ilean: scratch.join("out.ilean"),
        c: scratch.join("out.c"),
    }
}

/// Move the staged artifacts (in `scratch`) into place under `root`, walking
/// to each target without following a link. Old artifacts are set aside
/// first and put back if any step fails, so readers see all old or all new
/// files. Returns the kinds published.
fn publish(root: &Path, scratch: &Dir, target: &Artifacts) -> Result<Vec<&'static str>, FsError> {
    let root_dir = Dir::open(root)?;
    let staged = staged_in(scratch.path());
    let mut backups: Vec<(&Dir, OsString, OsString)> = Vec::new();
    let mut placed: Vec<(&Dir, OsString)> = Vec::new();
    let mut dirs: Vec<(&'static str, Dir, OsString, OsString)> = Vec::new();
    for ((kind, from), (_, to)) in staged.all().into_iter().zip(target.all()) {
        let from_name = from.file_name().unwrap_or_default().to_os_string();
        if scratch.kind(&from_name).ok().flatten().is_none() {
            continue; // the toolchain did not produce this artifact
        }
        let parent = to.parent().unwrap_or(to);
        let rel = parent.strip_prefix(root).unwrap_or(parent);
        let dir = root_dir.walk(rel, Some(BUILD_DIR_MODE))?;
        let to_name = to.file_name().unwrap_or_default().to_os_string();
        dirs.push((kind, dir, from_name, to_name));
    }
    let result = (|| {
        for (_, dir, from, to) in &dirs {
            if dir.kind(to).ok().flatten() == Some("regular file") {
                let mut backup = to.clone();
                backup.push(".beam-old");
                dir.rename(to, dir, &backup, Existing::Replace)?;
                backups.push((dir, backup, to.clone()));
            }
            scratch.rename(from, dir, to, Existing::Replace)?;
            placed.push((dir, to.clone()));
        }
        Ok(())
    })();
    match result {
        Ok(()) => {
            for (dir, backup, _) in backups {
                let _ = dir.remove_file(&backup);
            }
            Ok(dirs.iter().map(|(kind, ..)| *kind).collect())
        }
        Err(error) => {
            for (dir, name) in placed {
                let _ = dir.remove_file(&name);
            }
            for (dir, backup, original) in backups {
                let _ = dir.rename(&backup, dir, &original, Existing::Replace);
            }
            Err(error)
        }
    }
}

/// Compile and publish a checkpoint of `doc`, whose accepted source hashes to
/// `expected_hash`. Fails with `contentModified` if the file changed on disk.
pub async fn save(
    launcher: &Launcher,
    root: &Root,
    doc: &DocPath,
    module: &str,
    expected_hash: &str,
    max_bytes: u64,
    limit: Duration,
) -> Result<Published, SaveError> {
    let target = artifacts(root, module);
    let refused = SaveError::Publish;
    let (root_path, targets) = (root.path().to_path_buf(), target.clone());
    let scratch = safe_fs::off_runtime(root.path(), "prepare a checkpoint in", move || {
        Scratch::create(&root_path, &targets)
    })
    .await
    .map_err(refused)?;
    let changed = |when: &'static str| SaveError::SourceChanged {
        path: doc.shown.clone(),
        when,
    };
    let on_disk = || async {
        safe_fs::read_regular(&doc.file, Links::Refuse, max_bytes, Oversize::Refuse)
            .await
            .ok()
            .and_then(|c| String::from_utf8(c.bytes).ok())
            .map(|t| source_hash(&t))
    };
    if on_disk().await.as_deref() != Some(expected_hash) {
        return Err(changed("since it was synced"));
    }
    compile(launcher, root, doc, scratch.dir.path(), limit).await?;
    if on_disk().await.as_deref() != Some(expected_hash) {
        return Err(changed("while it was being compiled"));
    }
    let (root_path, targets) = (root.path().to_path_buf(), target.clone());
    let published = safe_fs::off_runtime(root.path(), "publish a checkpoint in", move || {
        let published = publish(&root_path, &scratch.dir, &targets);
        // Gone before the save answers (a drop here would hand the removal
        // to yet another blocking task, which can finish after the reply).
        scratch.remove_now();
        published
    })
    .await
    .map_err(refused)?;
    let c = published.contains(&"c").then(|| target.c.clone());
    Ok(Published {
        olean: target.olean,
        ilean: target.ilean,
        c,
    })
}

/// Kills the compiler's process group when a compile is abandoned (timeout,
/// cancelled call) before its leader was reaped.
#[cfg(test)]
mod tests {
    use super::*;

    // The module's own `Scratch` is a checkpoint's; this one is a test's directory.
    use crate::scratch::Scratch as TempDir;

    fn staged(dir: &Path) -> Dir {
        std::fs::create_dir_all(dir.join("stage")).unwrap();
        for p in staged_in(&dir.join("stage"))
            .all()
            .map(|(_, p)| p.to_path_buf())
        {
            std::fs::write(p, "new").unwrap();
        }
        Dir::open(&dir.join("stage")).unwrap()
    }

    fn target(dir: &Path) -> Artifacts {
        Artifacts {
            olean: dir.join("out/lib/a.olean"),
            ilean: dir.join("out/lib/a.ilean"),
            c: dir.join("out/ir/a.c"),
        }
    }

    #[test]
    fn publish_rolls_back_when_a_later_artifact_cannot_be_placed() {
        let dir = TempDir::new("publish");
        let stage = staged(&dir.0);
        let target = target(&dir.0);
        std::fs::create_dir_all(dir.0.join("out/lib")).unwrap();
        std::fs::write(&target.olean, "old").unwrap();
        // A non-empty directory where the second artifact goes: the rename fails.
        std::fs::create_dir_all(target.ilean.join("blocker")).unwrap();
        assert!(publish(&dir.0, &stage, &target).is_err());
        assert_eq!(std::fs::read_to_string(&target.olean).unwrap(), "old");
        let leftovers: Vec<_> = std::fs::read_dir(dir.0.join("out/lib"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            !leftovers.iter().any(|n| n.contains("beam-old")),
            "{leftovers:?}"
        );
    }

    #[test]
    fn publish_never_follows_a_link_out_of_the_root() {
        let dir = TempDir::new("publish-link");
        let outside = TempDir::new("publish-outside");
        let stage = staged(&dir.0);
        let target = target(&dir.0);
        std::fs::create_dir_all(dir.0.join("out")).unwrap();
        std::os::unix::fs::symlink(&outside.0, dir.0.join("out/ir")).unwrap();
        let error = publish(&dir.0, &stage, &target).unwrap_err();
        assert!(
            matches!(
                error,
                FsError::WrongType {
                    kind: "symbolic link",
                    ..
                }
            ),
            "{error}"
        );
        assert!(error.to_string().contains("out/ir"), "{error}");
        assert_eq!(std::fs::read_dir(&outside.0).unwrap().count(), 0);
        assert!(!target.olean.exists(), "nothing published");
        let scratch = Scratch::create(&dir.0, &target);
        assert!(scratch.is_err(), "the scratch walk refuses it too");
    }

    #[test]
    fn scratch_is_private_and_stale_scratch_of_dead_servers_goes() {
        use std::os::unix::fs::PermissionsExt;
        let dir = TempDir::new("scratch");
        let build = dir.0.join(BUILD);
        let dead = build.join(format!("{SCRATCH_PREFIX}4999999-1"));
        let live = build.join(format!("{SCRATCH_PREFIX}1-1"));
        for d in [&dead, &live] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join("out.olean"), "x").unwrap();
        }
        let scratch = Scratch::create(&dir.0, &target(&dir.0)).unwrap();
        let mode = std::fs::metadata(scratch.dir.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        remove_stale_scratch(&dir.0);
        assert!(!dead.exists(), "pid 4999999 is above any pid_max");
        assert!(live.exists(), "pid 1 runs");
        assert!(scratch.dir.path().exists(), "ours stays while in use");
        let path = scratch.dir.path().to_path_buf();
        drop(scratch);
        assert!(!path.exists(), "removed on drop");
    }

    #[test]
    fn module_names_follow_the_path() {
        let root = Root::for_tests("/w");
        let doc = |p: &str| DocPath {
            file: PathBuf::from(p),
            shown: p.into(),
        };
        assert_eq!(
            module_name(&root, &doc("/w/Fix/Basic.lean")).unwrap(),
            "Fix.Basic"
        );
        assert!(module_name(&root, &doc("/elsewhere/A.lean")).is_err());
        assert!(module_name(&root, &doc("/w/my file.lean")).is_err());
    }
}
