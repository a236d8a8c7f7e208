//! What changed in an index's trees since the last query, from the kernel:
//! an inotify instance watching every directory the listing entered (the
//! source trees and the build trees holding the `.ilean`s).
//!
//! Why this is exact: Linux queues a file's event inside the system call
//! that changes it (`write`, `truncate`, `rename`, `unlink`, a `utimes`), so
//! a change that completed before a query began is in the queue when the
//! query drains it. What it cannot see is said here and handled by falling
//! back to stamping every file (the listing of `walk`): a queue overflow, a
//! directory created, removed or moved (its files are listed again), a watch
//! the system refuses (`fs.inotify.max_user_watches`), and no inotify at all.
//! Not seen at all, as by the stamps before it only after the fact: writes
//! through a shared `mmap` (no event, and their modification time moves only
//! at writeback) and changes made by another machine on a network file
//! system.
//!
//! Written on `libc` (already a direct dependency for `safe_fs` and process
//! supervision): the calls are three, and a watcher crate would bring its
//! own thread and channel for what one non-blocking `read` does.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What the queue held.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// Files (of any name) created, written, truncated, touched, removed or
    /// renamed in a watched directory.
    pub files: Vec<PathBuf>,
    /// Something the file events cannot describe happened (see the module's
    /// text): every file must be listed and stamped again.
    pub everything: bool,
}

/// One inotify instance and the directories it watches.
#[derive(Debug)]
pub struct Watch {
    fd: OwnedFd,
    dirs: HashMap<i32, PathBuf>,
}

const FILE_EVENTS: u32 = libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_CLOSE_WRITE
    | libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO;
const SELF_EVENTS: u32 = libc::IN_DELETE_SELF | libc::IN_MOVE_SELF;
/// Events after which the file events no longer describe the trees.
const LOST: u32 = libc::IN_Q_OVERFLOW | libc::IN_IGNORED | libc::IN_UNMOUNT | SELF_EVENTS;

impl Watch {
    /// A new instance, or `None` where the system has none to give.
    pub fn new() -> Option<Watch> {
        // SAFETY: no pointers; the descriptor returned is owned here alone.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        (fd >= 0).then(|| Watch {
            // SAFETY: `fd` is a fresh descriptor nobody else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            dirs: HashMap::new(),
        })
    }

    /// Watch `dir` (not following a link). False when the system refuses
    /// (no such directory, or past the user's watch limit).
    pub fn add(&mut self, dir: &Path) -> bool {
        let Ok(name) = CString::new(dir.as_os_str().as_bytes()) else {
            return false;
        };
        let mask = FILE_EVENTS | SELF_EVENTS | libc::IN_ONLYDIR | libc::IN_DONT_FOLLOW;
        // SAFETY: `name` is a NUL-terminated string that outlives the call.
        let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), name.as_ptr(), mask) };
        if wd < 0 {
            return false;
        }
        self.dirs.insert(wd, dir.to_path_buf());
        true
    }

    /// Everything queued so far (without waiting).
    pub fn take(&mut self) -> Seen {
        let mut seen = Seen::default();
        // Aligned for `inotify_event`; room for many events per read.
        let mut buf = vec![0u64; 8192];
        loop {
            let bytes = std::mem::size_of_val(buf.as_slice());
            // SAFETY: reads at most `bytes` into the buffer it owns.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast::<libc::c_void>(),
                    bytes,
                )
            };
            if n < 0 {
                let err = std::io::Error::last_os_error();
                match err.kind() {
                    std::io::ErrorKind::WouldBlock => return seen,
                    std::io::ErrorKind::Interrupted => continue,
                    _ => {
                        seen.everything = true;
                        return seen;
                    }
                }
            }
            let n = n as usize;
            if n == 0 {
                return seen;
            }
            // SAFETY: the kernel wrote `n` bytes of whole events.
            let raw = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), n) };
            self.events(raw, &mut seen);
        }
    }

    /// Decode the events of one read.
    fn events(&self, raw: &[u8], seen: &mut Seen) {
        const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
        let mut at = 0;
        while at + HEADER <= raw.len() {
            // SAFETY: a whole header lies at `at` (checked); unaligned read.
            let event: libc::inotify_event =
                unsafe { std::ptr::read_unaligned(raw[at..].as_ptr().cast()) };
            let name_len = event.len as usize;
            let name = &raw[at + HEADER..(at + HEADER + name_len).min(raw.len())];
            let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
            at += HEADER + name_len;
            if event.mask & LOST != 0 || event.mask & libc::IN_ISDIR != 0 {
                seen.everything = true;
                continue;
            }
            match self.dirs.get(&event.wd) {
                Some(dir) if !name.is_empty() => {
                    seen.files.push(dir.join(std::ffi::OsStr::from_bytes(name)))
                }
                Some(_) => {}
                None => seen.everything = true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_file_changes_and_directory_changes() {
        let tmp = std::env::temp_dir().join(format!("lean-beam-watch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).unwrap();
        let file = tmp.join("A.lean");
        std::fs::write(&file, "x").unwrap();
        let mut watch = Watch::new().expect("inotify");
        assert!(watch.add(&tmp));
        assert!(!watch.add(&tmp.join("missing")));
        assert_eq!(watch.take(), Seen::default(), "nothing yet");

        // Queued inside the write itself: the next take sees it, no waiting.
        std::fs::write(&file, "y").unwrap();
        let seen = watch.take();
        assert!(!seen.everything);
        assert!(seen.files.iter().all(|f| f == &file), "{seen:?}");
        assert!(!seen.files.is_empty());
        assert_eq!(watch.take(), Seen::default(), "drained");

        std::fs::remove_file(&file).unwrap();
        let removed = watch.take();
        assert!(!removed.everything && !removed.files.is_empty());
        assert!(removed.files.iter().all(|f| f == &file), "{removed:?}");

        std::fs::create_dir(tmp.join("Sub")).unwrap();
        assert!(watch.take().everything, "a new directory is listed again");
        std::fs::remove_dir_all(&tmp).unwrap();
        assert!(watch.take().everything, "the watched directory is gone");
    }
}
