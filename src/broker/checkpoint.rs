//! Development checkpoints: compiling the accepted on-disk source of a module
//! with the workspace's own toolchain into Lake's build layout, published so
//! that no reader ever sees a mix of old and new artifacts or a partial file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use super::compiler::{self, RunError};
use super::launch::Launcher;
use super::workspace::{DocPath, Root};
use crate::surface::{ErrorCode, ToolError};

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
pub fn module_name(root: &Root, doc: &DocPath) -> Result<String, ToolError> {
    let not_module = |why: &str| {
        ToolError::new(
            ErrorCode::SaveTargetNotModule,
            format!("{} is not a module of the workspace: {why}", doc.shown),
        )
        .with_data(json!({ "path": doc.shown, "root": root.display() }))
    };
    let rel = doc.file.strip_prefix(root.path()).map_err(|_| {
        not_module("it lies outside the workspace root, in no source directory of the package")
    })?;
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
            return Err(not_module(&format!(
                "`{part}` is not a Lean identifier, so the path names no module"
            )));
        }
        parts.push(part);
    }
    if parts.first().is_some_and(|p| p == ".lake") {
        return Err(not_module(
            "it is inside .lake (a build or dependency directory)",
        ));
    }
    Ok(parts.join("."))
}

/// Refuse setups whose batch build we cannot reproduce from here.
pub fn check_setup(root: &Root) -> Result<(), ToolError> {
    for name in ["lakefile.lean", "lakefile.toml"] {
        let Ok(text) = std::fs::read_to_string(root.path().join(name)) else {
            continue;
        };
        if text.contains("moreLeanArgs") {
            return Err(ToolError::new(
                ErrorCode::SaveUnsupportedSetup,
                format!(
                    "{name} passes batch-only `moreLeanArgs`, which the language server does not apply, so a checkpoint would not match a build. Move shared -D settings to `leanOptions`, or use `lake build` when the arguments are meant for batch builds only"
                ),
            )
            .with_data(json!({ "reason": "moreLeanArgs", "lakefile": name })));
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

/// A scratch directory inside the build folder (same file system, so renames
/// are atomic), removed on drop whatever happens.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
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
) -> Result<Artifacts, ToolError> {
    let staged = Artifacts {
        olean: scratch.join("out.olean"),
        ilean: scratch.join("out.ilean"),
        c: scratch.join("out.c"),
    };
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
            return Err(ToolError::new(
                ErrorCode::RuntimeSetup,
                format!("cannot run `{describe}`: {e}"),
            )
            .with_data(json!({ "command": describe })));
        }
        Err(RunError::TimedOut) => {
            return Err(ToolError::new(
                ErrorCode::InternalError,
                format!(
                    "compiling {} took longer than {} s; nothing was published",
                    doc.shown,
                    limit.as_secs()
                ),
            ));
        }
        Err(RunError::Wait(e)) => {
            return Err(ToolError::new(
                ErrorCode::InternalError,
                format!("`{describe}` failed: {e}"),
            ));
        }
    };
    if !output.status.success() {
        return Err(ToolError::new(
            ErrorCode::InternalError,
            format!(
                "`{describe}` failed ({}) although the language server accepted the file; nothing was published",
                output.status
            ),
        )
        .with_data(json!({
            "command": describe,
            "status": output.status.code(),
            "stdout": compiler::tail(&output.stdout),
            "stderr": compiler::tail(&output.stderr),
        })));
    }
    Ok(staged)
}

/// Move the staged artifacts into place. Old artifacts are set aside first and
/// put back if any step fails, so readers see all old or all new files.
fn publish(staged: &Artifacts, target: &Artifacts) -> Result<(), ToolError> {
    let fail = |what: String| ToolError::new(ErrorCode::InternalError, what);
    let mut backups: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut placed: Vec<PathBuf> = Vec::new();
    let result = (|| {
        for ((_, from), (_, to)) in staged.all().into_iter().zip(target.all()) {
            if !from.exists() {
                continue; // the toolchain did not produce this artifact
            }
            if let Some(dir) = to.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
            }
            if to.is_file() {
                let backup = to.with_extension(format!(
                    "{}.beam-old",
                    to.extension().and_then(|e| e.to_str()).unwrap_or("")
                ));
                std::fs::rename(to, &backup)
                    .map_err(|e| fail(format!("cannot set aside {}: {e}", to.display())))?;
                backups.push((backup, to.to_path_buf()));
            }
            std::fs::rename(from, to)
                .map_err(|e| fail(format!("cannot publish {}: {e}", to.display())))?;
            placed.push(to.to_path_buf());
        }
        Ok(())
    })();
    match result {
        Ok(()) => {
            for (backup, _) in backups {
                let _ = std::fs::remove_file(backup);
            }
            Ok(())
        }
        Err(error) => {
            for path in placed {
                let _ = std::fs::remove_file(path);
            }
            for (backup, original) in backups {
                let _ = std::fs::rename(backup, original);
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
    limit: Duration,
) -> Result<(Artifacts, Value), ToolError> {
    let target = artifacts(root, module);
    let build = root.path().join(".lake/build");
    std::fs::create_dir_all(&build).map_err(|e| {
        ToolError::new(
            ErrorCode::InternalError,
            format!("cannot create {}: {e}", build.display()),
        )
    })?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let scratch_dir = build.join(format!(".beam-save-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&scratch_dir).map_err(|e| {
        ToolError::new(
            ErrorCode::InternalError,
            format!("cannot create {}: {e}", scratch_dir.display()),
        )
    })?;
    let scratch = Scratch(scratch_dir);
    let changed = |when: &str| {
        ToolError::new(
            ErrorCode::ContentModified,
            format!(
                "{} changed on disk {when}; nothing was saved. Call lean_sync, then lean_save again",
                doc.shown
            ),
        )
        .with_data(json!({ "reason": "sourceChanged", "path": doc.shown }))
    };
    let on_disk = |path: &Path| std::fs::read_to_string(path).map(|t| source_hash(&t)).ok();
    if on_disk(&doc.file).as_deref() != Some(expected_hash) {
        return Err(changed("since it was synced"));
    }
    let staged = compile(launcher, root, doc, &scratch.0, limit).await?;
    if on_disk(&doc.file).as_deref() != Some(expected_hash) {
        return Err(changed("while it was being compiled"));
    }
    publish(&staged, &target)?;
    let mut paths = json!({
        "olean": target.olean.to_string_lossy(),
        "ilean": target.ilean.to_string_lossy(),
    });
    if target.c.is_file() {
        paths["c"] = Value::String(target.c.to_string_lossy().into_owned());
    }
    drop(scratch);
    Ok((target, paths))
}

/// Kills the compiler's process group when a compile is abandoned (timeout,
/// cancelled call) before its leader was reaped.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_rolls_back_when_a_later_artifact_cannot_be_placed() {
        let dir = std::env::temp_dir().join(format!("beam-publish-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("stage")).unwrap();
        std::fs::create_dir_all(dir.join("out")).unwrap();
        let staged = Artifacts {
            olean: dir.join("stage/a.olean"),
            ilean: dir.join("stage/a.ilean"),
            c: dir.join("stage/a.c"),
        };
        let target = Artifacts {
            olean: dir.join("out/a.olean"),
            ilean: dir.join("out/a.ilean"),
            c: dir.join("out/a.c"),
        };
        for p in [&staged.olean, &staged.ilean, &staged.c] {
            std::fs::write(p, "new").unwrap();
        }
        std::fs::write(&target.olean, "old").unwrap();
        // A non-empty directory where the second artifact goes: the rename fails.
        std::fs::create_dir_all(target.ilean.join("blocker")).unwrap();
        assert!(publish(&staged, &target).is_err());
        assert_eq!(std::fs::read_to_string(&target.olean).unwrap(), "old");
        let leftovers: Vec<_> = std::fs::read_dir(dir.join("out"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            !leftovers.iter().any(|n| n.contains("beam-old")),
            "{leftovers:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
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
