//! The server's only way to touch the file system: bounded reads of regular
//! files and writes confined to a directory tree, both run off the async
//! runtime with a time limit.
//!
//! Why a module of its own: a read of a FIFO, a pipe or a hung mount blocks the
//! thread that makes it, and on the stdio server's one-thread runtime that is
//! every tool, every cancel and EOF. So every read here opens with
//! `O_NONBLOCK` (opening a FIFO without a writer then returns at once instead
//! of waiting), checks the opened descriptor with `fstat` and refuses anything
//! that is not a regular file, reads at most a given number of bytes, and runs
//! on the blocking pool under [`TIME_LIMIT`]. Writes walk from a trusted
//! directory one component at a time with `O_NOFOLLOW` (a symbolic link
//! anywhere on the way is refused, so nothing is written outside the tree),
//! create files with `O_CREAT | O_EXCL | O_NOFOLLOW` under random names and
//! publish them by `rename`.
//!
//! A leaf: it depends on std, libc, tokio and getrandom; nothing depends back.
//! Its errors become tool errors in `src/ops/errors.rs`.
//!
//! Why `unsafe` here: std has no `openat`/`mkdirat`/`renameat2`/`fstatat`,
//! which are what make a walk immune to a symbolic link swapped in between a
//! check and a use. Each call passes a descriptor this module owns and a
//! NUL-terminated name built here; nothing else is unsafe.

use std::ffi::{CString, OsStr};
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// How long one file-system step may take before the call gets an error (the
/// blocking thread is left to finish on its own; the runtime goes on).
pub const TIME_LIMIT: Duration = Duration::from_secs(10);

/// Default bound on a Lean source file (`LEAN_BEAM_MAX_FILE_BYTES`).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Bound on small project files read for their content (`lean-toolchain`,
/// lakefiles): far past any real one.
pub const SMALL_FILE_BYTES: u64 = 1024 * 1024;

/// Why a file-system step failed, with the path it was about.
#[derive(Debug)]
pub enum FsError {
    /// The path names something other than a regular file (or, for a walk,
    /// other than a directory): its kind in words.
    WrongType {
        path: PathBuf,
        kind: &'static str,
        wanted: &'static str,
    },
    /// A regular file over the size bound.
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    /// A path that leaves the tree it must stay in (`..`, an absolute part).
    Outside { path: PathBuf, base: PathBuf },
    /// The step did not finish within [`TIME_LIMIT`].
    TimedOut { path: PathBuf, op: &'static str },
    Io {
        path: PathBuf,
        op: &'static str,
        error: io::Error,
    },
}

impl FsError {
    pub fn path(&self) -> &Path {
        match self {
            FsError::WrongType { path, .. }
            | FsError::TooLarge { path, .. }
            | FsError::Outside { path, .. }
            | FsError::TimedOut { path, .. }
            | FsError::Io { path, .. } => path,
        }
    }

    /// A stable word for `data.reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            FsError::WrongType { .. } => "notRegularFile",
            FsError::TooLarge { .. } => "fileTooLarge",
            FsError::Outside { .. } => "outsideRoot",
            FsError::TimedOut { .. } => "timedOut",
            FsError::Io { .. } => "io",
        }
    }

    pub(crate) fn io(path: &Path, op: &'static str, error: io::Error) -> FsError {
        FsError::Io {
            path: path.to_path_buf(),
            op,
            error,
        }
    }
}

impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FsError::WrongType { path, kind, wanted } => write!(
                f,
                "{} is a {kind}, not a {wanted}; the server only reads regular files and only writes through real directories",
                path.display()
            ),
            FsError::TooLarge { path, size, limit } => write!(
                f,
                "{} has {size} bytes, more than the limit of {limit}",
                path.display()
            ),
            FsError::Outside { path, base } => {
                write!(f, "{} is not inside {}", path.display(), base.display())
            }
            FsError::TimedOut { path, op } => write!(
                f,
                "{op} {} did not finish within {} s (a slow or hung file system?)",
                path.display(),
                TIME_LIMIT.as_secs()
            ),
            FsError::Io { path, op, error } => write!(f, "cannot {op} {}: {error}", path.display()),
        }
    }
}

impl std::error::Error for FsError {}

/// A file kind in words.
fn kind_of(file_type: std::fs::FileType) -> &'static str {
    if file_type.is_file() {
        "regular file"
    } else if file_type.is_dir() {
        "directory"
    } else if file_type.is_symlink() {
        "symbolic link"
    } else if file_type.is_fifo() {
        "FIFO (named pipe)"
    } else if file_type.is_char_device() {
        "character device"
    } else if file_type.is_block_device() {
        "block device"
    } else if file_type.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

/// Run a blocking file-system step on the blocking pool, bounded by
/// [`TIME_LIMIT`]. `path` names the step in errors.
pub async fn off_runtime<T, F>(path: &Path, op: &'static str, step: F) -> Result<T, FsError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, FsError> + Send + 'static,
{
    let task = tokio::task::spawn_blocking(step);
    match tokio::time::timeout(TIME_LIMIT, task).await {
        Ok(Ok(result)) => result,
        Ok(Err(join)) => Err(FsError::io(path, op, io::Error::other(join.to_string()))),
        Err(_) => Err(FsError::TimedOut {
            path: path.to_path_buf(),
            op,
        }),
    }
}

/// Whether the last component of a path may be a symbolic link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Follow it (a project file such as `lean-toolchain` may be a link).
    Follow,
    /// Refuse it: the path is canonical, so a link there was swapped in.
    Refuse,
}

/// What to do with a file over the size bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Oversize {
    /// Fail with [`FsError::TooLarge`].
    Refuse,
    /// Read the first `max` bytes and say so.
    Truncate,
}

/// What a rename does to a file already at its target name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Replace it, atomically (a checkpoint's new copy over the old one).
    Replace,
    /// Fail with `AlreadyExists` and leave it (a bundle's unique name).
    Refuse,
}

/// The bounded contents of a regular file.
#[derive(Debug)]
pub struct Contents {
    pub bytes: Vec<u8>,
    /// The file's size (at least what was read: `/proc` files report 0).
    pub size: u64,
    /// Only the first `bytes.len()` bytes were read.
    pub truncated: bool,
}

/// Read a regular file, at most `max` bytes, on this thread. Refuses every
/// other kind of file without blocking on it.
pub fn read_regular_blocking(
    path: &Path,
    links: Links,
    max: u64,
    oversize: Oversize,
) -> Result<Contents, FsError> {
    let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY;
    if links == Links::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) if links == Links::Refuse => FsError::WrongType {
                path: path.to_path_buf(),
                kind: "symbolic link",
                wanted: "regular file",
            },
            _ => FsError::io(path, "read", e),
        })?;
    let meta = file.metadata().map_err(|e| FsError::io(path, "read", e))?;
    if !meta.file_type().is_file() {
        return Err(FsError::WrongType {
            path: path.to_path_buf(),
            kind: kind_of(meta.file_type()),
            wanted: "regular file",
        });
    }
    let size = meta.len();
    if oversize == Oversize::Refuse && size > max {
        return Err(FsError::TooLarge {
            path: path.to_path_buf(),
            size,
            limit: max,
        });
    }
    let mut bytes = Vec::with_capacity(size.min(max) as usize);
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| FsError::io(path, "read", e))?;
    let read = bytes.len() as u64;
    let truncated = read > max;
    if truncated {
        if oversize == Oversize::Refuse {
            return Err(FsError::TooLarge {
                path: path.to_path_buf(),
                size: size.max(read),
                limit: max,
            });
        }
        bytes.truncate(max as usize);
    }
    Ok(Contents {
        bytes,
        size: size.max(read),
        truncated,
    })
}

/// [`read_regular_blocking`] off the runtime, within [`TIME_LIMIT`].
pub async fn read_regular(
    path: &Path,
    links: Links,
    max: u64,
    oversize: Oversize,
) -> Result<Contents, FsError> {
    let owned = path.to_path_buf();
    off_runtime(path, "read", move || {
        read_regular_blocking(&owned, links, max, oversize)
    })
    .await
}

/// A small project file as text, if it exists: `Ok(None)` when absent.
pub async fn read_small_text(path: &Path) -> Result<Option<String>, FsError> {
    match read_regular(path, Links::Follow, SMALL_FILE_BYTES, Oversize::Refuse).await {
        Ok(c) => Ok(Some(String::from_utf8_lossy(&c.bytes).into_owned())),
        Err(FsError::Io { error, .. }) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// What `lstat` says of a path, in words, when it is not a regular file
/// (`None` for a regular file or a path that does not exist). One `lstat`,
/// no open.
pub fn irregular_kind(path: &Path) -> Option<&'static str> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    (!meta.file_type().is_file()).then(|| kind_of(meta.file_type()))
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn cvt(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// A directory held open, reached from a trusted directory without following
/// any symbolic link: every name below is resolved relative to it.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

impl Dir {
    /// Open a trusted directory (a canonical workspace root, the temp dir).
    pub fn open(path: &Path) -> Result<Dir, FsError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| FsError::io(path, "open directory", e))?;
        Ok(Dir {
            fd: OwnedFd::from(file),
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn openat_dir(&self, name: &OsStr) -> io::Result<Dir> {
        let c = c_name(name)?;
        // SAFETY: a descriptor we own and a NUL-terminated name.
        let fd = cvt(unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        })?;
        Ok(Dir {
            // SAFETY: `fd` was just opened and is owned by nobody else.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            path: self.path.join(name),
        })
    }

    /// What `name` is here, without following a link (`None` if absent).
    pub fn kind(&self, name: &OsStr) -> io::Result<Option<&'static str>> {
        let c = c_name(name)?;
        // SAFETY: `stat` is plain data that fstatat fills in.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a descriptor we own, a NUL-terminated name, a valid buffer.
        let rc = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::NotFound {
                Ok(None)
            } else {
                Err(e)
            };
        }
        Ok(Some(match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => "regular file",
            libc::S_IFDIR => "directory",
            libc::S_IFLNK => "symbolic link",
            libc::S_IFIFO => "FIFO (named pipe)",
            libc::S_IFCHR => "character device",
            libc::S_IFBLK => "block device",
            libc::S_IFSOCK => "socket",
            _ => "special file",
        }))
    }

    /// The subdirectory `name`, created with `mode` if absent; a symbolic
    /// link or anything but a directory there is refused.
    pub fn subdir(&self, name: &OsStr, create: Option<u32>) -> Result<Dir, FsError> {
        let path = self.path.join(name);
        let wrong = |kind| FsError::WrongType {
            path: path.clone(),
            kind,
            wanted: "directory",
        };
        match self.openat_dir(name) {
            Ok(dir) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::NotFound && create.is_some() => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
                let kind = self.kind(name).ok().flatten().unwrap_or("special file");
                return Err(wrong(kind));
            }
            Err(e) => return Err(FsError::io(&path, "open directory", e)),
        }
        let mode = create.unwrap_or(0o700);
        let c = c_name(name).map_err(|e| FsError::io(&path, "create", e))?;
        // SAFETY: a descriptor we own and a NUL-terminated name.
        let made = cvt(unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), mode) });
        match made {
            Ok(_) => {}
            // Made by someone else meanwhile: open it like any other.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(FsError::io(&path, "create directory", e)),
        }
        self.openat_dir(name).map_err(|e| {
            if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) {
                wrong(self.kind(name).ok().flatten().unwrap_or("special file"))
            } else {
                FsError::io(&path, "open directory", e)
            }
        })
    }

    /// Walk `rel` (plain names only: no `..`, no absolute part) below this
    /// directory, creating missing directories with `create`'s mode.
    pub fn walk(&self, rel: &Path, create: Option<u32>) -> Result<Dir, FsError> {
        let mut names = Vec::new();
        for component in rel.components() {
            match component {
                Component::Normal(name) => names.push(name),
                Component::CurDir => {}
                _ => {
                    return Err(FsError::Outside {
                        path: self.path.join(rel),
                        base: self.path.clone(),
                    });
                }
            }
        }
        let mut dir = self
            .openat_dir(OsStr::new("."))
            .map_err(|e| FsError::io(&self.path, "open directory", e))?;
        for name in names {
            dir = dir.subdir(name, create)?;
        }
        Ok(dir)
    }

    /// Set this directory's permission bits.
    pub fn set_mode(&self, mode: u32) -> Result<(), FsError> {
        // SAFETY: a descriptor we own.
        cvt(unsafe { libc::fchmod(self.fd.as_raw_fd(), mode) })
            .map(drop)
            .map_err(|e| FsError::io(&self.path, "change the mode of", e))
    }

    /// Create the new file `name` (never an existing one, never through a
    /// link) with `mode`, open for writing.
    pub fn create_new(&self, name: &OsStr, mode: u32) -> Result<File, FsError> {
        let path = self.path.join(name);
        let c = c_name(name).map_err(|e| FsError::io(&path, "create", e))?;
        // SAFETY: a descriptor we own and a NUL-terminated name.
        let fd = cvt(unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                mode as libc::c_uint,
            )
        })
        .map_err(|e| FsError::io(&path, "create", e))?;
        // SAFETY: `fd` was just opened and is owned by nobody else.
        let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        // The umask may have taken bits away, never added any; make it exact.
        file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))
            .map_err(|e| FsError::io(&path, "create", e))?;
        Ok(file)
    }

    /// Create the new directory `name` with `mode` and open it.
    pub fn create_dir_new(&self, name: &OsStr, mode: u32) -> Result<Dir, FsError> {
        let path = self.path.join(name);
        let c = c_name(name).map_err(|e| FsError::io(&path, "create directory", e))?;
        // SAFETY: a descriptor we own and a NUL-terminated name.
        cvt(unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), mode) })
            .map_err(|e| FsError::io(&path, "create directory", e))?;
        let dir = self
            .openat_dir(name)
            .map_err(|e| FsError::io(&path, "open directory", e))?;
        dir.set_mode(mode)?;
        Ok(dir)
    }

    /// Rename `from` (here) to `to` in `target`; what happens to an existing
    /// `to` is `existing`'s choice.
    pub fn rename(
        &self,
        from: &OsStr,
        target: &Dir,
        to: &OsStr,
        existing: Existing,
    ) -> Result<(), FsError> {
        let path = target.path.join(to);
        let fail = |e| FsError::io(&path, "rename into", e);
        let (cf, ct) = (c_name(from).map_err(fail)?, c_name(to).map_err(fail)?);
        let flags = match existing {
            Existing::Replace => 0,
            Existing::Refuse => libc::RENAME_NOREPLACE,
        };
        // SAFETY: descriptors we own and NUL-terminated names.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                self.fd.as_raw_fd(),
                cf.as_ptr(),
                target.fd.as_raw_fd(),
                ct.as_ptr(),
                flags,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if existing == Existing::Refuse
            && matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS))
        {
            // A file system without RENAME_NOREPLACE: check, then rename
            // (the names are ours and random, so the window is harmless).
            if target.kind(to).map_err(fail)?.is_some() {
                return Err(fail(io::Error::from(io::ErrorKind::AlreadyExists)));
            }
            return self.rename(from, target, to, Existing::Replace);
        }
        Err(fail(e))
    }

    /// Remove the file `name` (a link is removed, never followed).
    pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: a descriptor we own and a NUL-terminated name.
        cvt(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) }).map(drop)
    }

    /// Remove the directory `name` and everything in it, if it is a real
    /// directory (a link there is removed, never followed).
    pub fn remove_tree(&self, name: &OsStr) -> io::Result<()> {
        match self.kind(name)? {
            None => Ok(()),
            Some("directory") => {
                let dir = self.openat_dir(name)?;
                // std's remove_dir_all never follows links inside the tree;
                // through our descriptor, no component above it is followed
                // either.
                std::fs::remove_dir_all(dir.proc_path())
                    .or_else(|_| std::fs::remove_dir_all(self.path.join(name)))
            }
            Some(_) => self.remove_file(name),
        }
    }

    /// This directory named through its descriptor.
    fn proc_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }

    /// The names in this directory.
    pub fn names(&self) -> io::Result<Vec<std::ffi::OsString>> {
        let entries =
            std::fs::read_dir(self.proc_path()).or_else(|_| std::fs::read_dir(&self.path))?;
        Ok(entries.flatten().map(|e| e.file_name()).collect())
    }
}

/// A random name for a temporary file: `prefix` and 128 random bits.
pub fn random_name(prefix: &str) -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness: std's hasher keys still differ per call.
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        bytes[..8].copy_from_slice(&h.finish().to_le_bytes());
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}{hex}")
}

#[cfg(test)]
mod tests;

/// Remove the folders `<temp dir>/<prefix><pid>-…` of processes that are
/// gone (killed before they could clean up): those whose pid names no
/// running process. Where `/proc` cannot tell, nothing is removed.
/// Blocking: run it off the runtime.
pub fn remove_dead_process_dirs(prefix: &str) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
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
