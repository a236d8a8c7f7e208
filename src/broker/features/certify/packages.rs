//! A package module of the closure, taken from its build layout under
//! `.lake/packages` only while what Lake recorded of it holds: its trace's
//! source and `.olean` hashes, read without following a link out of the
//! package.

use std::path::{Path, PathBuf};

use super::imports::header;
use super::lake_trace;
use crate::safe_fs::{self, FsError};

/// A package module's build checked against its sources as Lake records
/// them (`features::lake_trace`).
#[derive(Debug, Clone)]
pub struct PackageCheck {
    /// The module's `.olean`, absolute.
    pub olean: PathBuf,
    /// Its source, relative to the root, once found.
    pub source: Option<PathBuf>,
    /// Lake's hash of the `.olean` (its `.olean.hash`), once read.
    pub olean_hash: Option<u64>,
    pub status: PackageStatus,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PackageStatus {
    /// Every recorded input (the source, each import's `.olean`) is what the
    /// package holds now: `hash` is Lake's hash of the source.
    Matches { hash: u64 },
    /// A recorded input changed since Lake built the module: which.
    Stale(String),
    /// What Lake records cannot be read or does not say: why.
    Unchecked(String),
}

/// Read a small file of Lake's (a trace, a `.hash`) without following a link.
pub(super) fn read_lake_file(path: &Path) -> Result<Vec<u8>, FsError> {
    safe_fs::read_regular_blocking(
        path,
        safe_fs::Links::Refuse,
        safe_fs::DEFAULT_MAX_FILE_BYTES,
        safe_fs::Oversize::Refuse,
    )
    .map(|c| c.bytes)
}

/// A path Lake recorded (relative to the workspace root, where Lake runs,
/// or absolute), resolved without leaving `inside`.
fn recorded_path(root: &Path, inside: &Path, caption: &str) -> Result<PathBuf, String> {
    let path = Path::new(caption);
    let path = if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    };
    let real = path
        .canonicalize()
        .map_err(|e| format!("{caption} cannot be found ({e})"))?;
    if !real.starts_with(inside) {
        return Err(format!("{caption} is outside {}", inside.display()));
    }
    Ok(real)
}

/// Lake's hash of an `.olean`: its `.hash` file, else the bytes' hash (what
/// Lake's `fetchFileHash` does when it trusts `.hash` files, its default).
fn olean_hash(olean: &Path) -> Result<u64, String> {
    let hash_file = PathBuf::from(format!("{}.hash", olean.display()));
    match read_lake_file(&hash_file) {
        Ok(bytes) => lake_trace::parse_hash_file(&String::from_utf8_lossy(&bytes))
            .ok_or_else(|| format!("{} is not a hash Lake wrote", hash_file.display())),
        Err(_) => {
            let bytes = safe_fs::read_regular_blocking(
                olean,
                safe_fs::Links::Refuse,
                4 * 1024 * 1024 * 1024,
                safe_fs::Oversize::Refuse,
            )
            .map_err(|e| format!("{} cannot be read: {e}", olean.display()))?;
            Ok(lake_trace::bytes_hash(&bytes.bytes))
        }
    }
}

/// Check a package module's build against what Lake recorded (its `.trace`):
/// the source's hash and every import `.olean`'s hash must be the package's
/// current ones. Also the module's imports, read from that source. Blocking.
pub(super) fn check_package(
    root: &Path,
    package: &Path,
    lib: &Path,
    rel: &Path,
) -> (PackageCheck, Vec<String>) {
    let olean = lib.join(rel).with_extension("olean");
    let mut check = PackageCheck {
        olean: olean.clone(),
        source: None,
        olean_hash: None,
        status: PackageStatus::Unchecked(String::new()),
    };
    let shown = |p: &Path| {
        p.strip_prefix(root)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned()
    };
    let trace_file = lib.join(rel).with_extension("trace");
    let unchecked = |why: String| PackageStatus::Unchecked(why);
    let trace = match read_lake_file(&trace_file) {
        Ok(bytes) => lake_trace::Trace::parse(&bytes),
        Err(e) => {
            check.status = unchecked(format!(
                "has no readable Lake trace {} ({e}): build the package with `lake build`",
                shown(&trace_file)
            ));
            return (check, Vec::new());
        }
    };
    let trace = match trace {
        Ok(t) => t,
        Err(why) => {
            check.status = unchecked(format!("its trace {} {why}", shown(&trace_file)));
            return (check, Vec::new());
        }
    };
    let source_rel = rel
        .with_extension("lean")
        .to_string_lossy()
        .replace('\\', "/");
    let Some((caption, recorded)) = trace.input_ending_with(&source_rel) else {
        check.status = unchecked(format!(
            "its trace {} records no source {source_rel}",
            shown(&trace_file)
        ));
        return (check, Vec::new());
    };
    let source = match recorded_path(root, package, caption) {
        Ok(p) => p,
        Err(why) => {
            check.status = PackageStatus::Stale(format!("its recorded source {why}"));
            return (check, Vec::new());
        }
    };
    check.source = Some(source.strip_prefix(root).unwrap_or(&source).to_path_buf());
    let text = match read_lake_file(&source) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => {
            check.status = PackageStatus::Stale(format!("its source cannot be read: {e}"));
            return (check, Vec::new());
        }
    };
    let imports = header(&text).unwrap_or_default();
    match olean_hash(&olean) {
        Ok(h) => check.olean_hash = Some(h),
        Err(why) => {
            check.status = unchecked(why);
            return (check, imports);
        }
    }
    let hash = lake_trace::text_hash(&text);
    if hash != recorded {
        check.status = PackageStatus::Stale(format!(
            "its source {} changed since Lake built it (Lake's hash of it {}, recorded {})",
            shown(&source),
            lake_trace::hex(hash),
            lake_trace::hex(recorded)
        ));
        return (check, imports);
    }
    for (caption, recorded) in trace.leaves.iter().filter(|(c, _)| c.ends_with(".olean")) {
        let now = recorded_path(root, root, caption).and_then(|p| olean_hash(&p));
        match now {
            Ok(h) if h == *recorded => {}
            Ok(h) => {
                check.status = PackageStatus::Stale(format!(
                    "it was built against {caption}, which changed since (hash {}, recorded {})",
                    lake_trace::hex(h),
                    lake_trace::hex(*recorded)
                ));
                return (check, imports);
            }
            Err(why) => {
                check.status =
                    PackageStatus::Stale(format!("it was built against {caption}: {why}"));
                return (check, imports);
            }
        }
    }
    check.status = PackageStatus::Matches { hash };
    (check, imports)
}
