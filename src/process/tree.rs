//! Finding every process of one server tree, wherever it went.
//!
//! Lean's watchdog starts each file worker with `setsid`: a worker is the leader
//! of its own session and process group, so signalling the server's group does
//! not reach it, and once the server dies the worker is re-parented (no `ppid`
//! link either). A worker busy elaborating keeps running until it next writes to
//! the dead server. What every process of the tree does keep is the environment
//! it inherited, so the client puts a unique `LEAN_BEAM_LSP_TREE=<token>` entry
//! into the server's environment and finds the tree by scanning
//! `/proc/<pid>/environ` (our own processes only; others are unreadable).
//! While the server runs, its workers are still its children, so the scan is
//! kept for when it is gone: [`members`] walks the tree from the server down.
//! Linux only; elsewhere the scan finds nothing and only the group is signalled.

use std::sync::atomic::{AtomicU64, Ordering};

/// Name of the environment variable that marks a server tree.
pub const TREE_ENV: &str = "LEAN_BEAM_LSP_TREE";

/// A token unique to this process and call.
pub fn new_token() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}-{}-{nanos:x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Pids of the live processes whose environment holds `TREE_ENV=token`.
#[cfg(target_os = "linux")]
pub fn processes_with_token(token: &str) -> Vec<u32> {
    let entry = format!("{TREE_ENV}={token}");
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        // Zombies have an empty environ, so they drop out by themselves.
        let Some(environ) = proc_bytes(pid, "environ") else {
            continue;
        };
        if holds(&environ, &entry) {
            pids.push(pid);
        }
    }
    pids.sort_unstable();
    pids
}

#[cfg(not(target_os = "linux"))]
pub fn processes_with_token(_token: &str) -> Vec<u32> {
    Vec::new()
}

/// The processes of tree `token` whose root is `root`: while the root runs,
/// its marked descendants, found from `/proc/<pid>/task/<tid>/children`
/// (Lean's workers are the server's children, in sessions of their own, and
/// Lake's set-up runs are theirs); once it is gone, or where the kernel
/// keeps no `children` lists, [`processes_with_token`], since its workers
/// are re-parented away from it. The walk reads a few files per process of
/// the tree, where the scan reads the environment of every process on the
/// machine: the hostile soak's profile put 23 CPU-seconds in 90 s into
/// scans, for a worker's exit watched every 5 ms and the memory meter,
/// taking the CPU from the runtime on 2 cores (a clean-clone run's soak
/// saw a `beam_version` answer wait 1.7 s).
/// Blocking.
pub fn members(token: &str, root: u32) -> Vec<u32> {
    walk(token, root).unwrap_or_else(|| processes_with_token(token))
}

/// The tree's processes walked down from `root` (see [`members`]); `None`
/// when `root` does not run or its `children` lists cannot be read.
pub fn walk(token: &str, root: u32) -> Option<Vec<u32>> {
    let entry = format!("{TREE_ENV}={token}");
    let mut pids: Vec<u32> = descendants(root)?
        .into_iter()
        .filter(|&pid| proc_bytes(pid, "environ").is_some_and(|env| holds(&env, &entry)))
        .collect();
    pids.sort_unstable();
    Some(pids)
}

/// Whether an `environ` (NUL-separated) holds `entry`.
fn holds(environ: &[u8], entry: &str) -> bool {
    environ.split(|&b| b == 0).any(|kv| kv == entry.as_bytes())
}

/// At most this many processes in one tree walk: a runaway fork loop under a
/// server must not make a walk unbounded (the scan then takes over).
const MAX_TREE: usize = 4096;

/// `root` and every process below it, if `root` runs and its `children`
/// lists can be read.
fn descendants(root: u32) -> Option<Vec<u32>> {
    if !cfg!(target_os = "linux") || !runs(root) {
        return None;
    }
    let mut found = vec![root];
    let mut next = 0;
    while next < found.len() {
        let pid = found[next];
        next += 1;
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            // Gone between the lists: it has no children to give any more.
            continue;
        };
        for task in tasks.flatten() {
            let path = task.path().join("children");
            let Some(children) = read_bytes(&path) else {
                if pid == root && !path.exists() {
                    // No CONFIG_PROC_CHILDREN: only the scan can tell.
                    return None;
                }
                continue;
            };
            for child in children
                .split(u8::is_ascii_whitespace)
                .filter_map(|n| std::str::from_utf8(n).ok()?.parse::<u32>().ok())
            {
                if !found.contains(&child) {
                    found.push(child);
                }
            }
            if found.len() > MAX_TREE {
                return None;
            }
        }
    }
    Some(found)
}

/// One process as seen once: its pid and start time, so that a pid the kernel
/// has since given to another process is not taken for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    pub pid: u32,
    start: u64,
}

impl Seen {
    /// Block until this process has exited, at most `limit`, without
    /// polling: on a pidfd, which turns readable at the exit (by then the
    /// process has let go of its memory; only its zombie is left). `false`
    /// when that cannot be waited for here (no pidfd, the timeout); when the
    /// process is already gone, or its pid was reused, at once `true`.
    pub fn wait_exit(&self, limit: std::time::Duration) -> bool {
        let Some(fd) = super::sys::pidfd_open(self.pid) else {
            return stat_of(self.pid).is_none_or(|stat| stat.start != self.start);
        };
        // Opened after the sighting: the pid may be another process's now.
        if stat_of(self.pid).is_none_or(|stat| stat.start != self.start) {
            return true;
        }
        super::sys::wait_readable(&fd, limit)
    }

    /// The process still runs and will go on running: it has not exited, is
    /// not a zombie waiting for its parent, is not on its way out (a SIGKILL
    /// pending, or already exiting), and its pid was not reused. A process
    /// somebody has killed counts as gone from the moment `kill` returned,
    /// before its pipes close and before its parent notices: whoever saw the
    /// kill must not then be told it runs.
    pub fn is_running(&self) -> bool {
        stat_of(self.pid).is_some_and(|stat| stat.start == self.start && stat.runs())
    }

    /// Process `pid` as it is now, if it runs.
    pub fn of(pid: u32) -> Option<Seen> {
        let stat = stat_of(pid)?;
        stat.runs().then_some(Seen {
            pid,
            start: stat.start,
        })
    }
}

/// Whether child `pid` of ours runs and will go on running: [`Seen::is_running`]
/// from `/proc/<pid>/stat` alone (one read, for every call), blind only for
/// the moment between the kill's signal being taken and the exit starting.
/// A child's pid is not reused before we reap it. Where `/proc` is missing,
/// assumed running: the caller learns of a death by other means, only later.
pub fn runs(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        stat_file(pid).is_some_and(|stat| stat.runs())
    } else {
        true
    }
}

/// A child of ours watched through its `/proc/<pid>/stat` and `status`,
/// opened once: [`Seen::is_running`]'s answer in one `pread` of each per
/// look instead of two opens, reads and closes (a liveness check that every
/// call on a Lean server makes). `status` is what makes it exact: its
/// shared pending set keeps a kill's SIGKILL until the reap, where `stat`
/// alone is blind between the signal being taken and the exit starting (a
/// just-killed child read as running, seen on a busy 2-core machine). The
/// descriptors name the process, not the number: once the child is reaped
/// a read fails (`ESRCH`), so it counts as gone, as a failed open did.
#[derive(Debug)]
pub struct Watched {
    pid: u32,
    files: Option<(std::fs::File, std::fs::File)>,
}

impl Watched {
    pub fn new(pid: u32) -> Self {
        let open = |name: &str| std::fs::File::open(format!("/proc/{pid}/{name}")).ok();
        let files = if cfg!(target_os = "linux") {
            open("stat").zip(open("status"))
        } else {
            None
        };
        Watched { pid, files }
    }

    /// Whether the child runs and will go on running.
    pub fn runs(&self) -> bool {
        let Some((stat, status)) = &self.files else {
            return runs(self.pid);
        };
        let mut bytes = [0u8; 4096];
        let Some(stat) = read_whole(stat, &mut bytes).and_then(parse_stat) else {
            return false;
        };
        let mut bytes = [0u8; 4096];
        let Some(shared) = read_whole(status, &mut bytes).and_then(shared_pending) else {
            return false;
        };
        Stat {
            pending: stat.pending | shared,
            ..stat
        }
        .runs()
    }
}

/// A procfs file read in one `pread` (procfs hands out the whole text in one
/// read when there is room); `None` when it is gone or does not fit.
fn read_whole<'b>(file: &std::fs::File, bytes: &'b mut [u8]) -> Option<&'b str> {
    use std::os::unix::fs::FileExt;
    match file.read_at(bytes, 0) {
        Ok(n) if n < bytes.len() => std::str::from_utf8(&bytes[..n]).ok(),
        _ => None,
    }
}

/// The shared pending signals of a `/proc/<pid>/status` text (`ShdPnd:`).
fn shared_pending(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("ShdPnd:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
}

/// What `/proc/<pid>/stat` and `/proc/<pid>/status` tell of a process's life.
#[derive(Debug, Clone, Copy)]
struct Stat {
    state: char,
    /// The parent's pid.
    ppid: u32,
    /// The kernel's `PF_*` flags.
    flags: u64,
    /// Signals pending for the process as a whole and for its main thread.
    pending: u64,
    /// Start time, in clock ticks since boot.
    start: u64,
}

/// `PF_EXITING`: set as the process starts to exit, before it closes its files.
const PF_EXITING: u64 = 0x4;
/// SIGKILL's bit in a signal set. `kill` puts it into the process's shared
/// pending set, where it stays until the process is reaped: the one mark of
/// a kill that no step of dying takes away again (the main thread's own
/// pending bit is cleared a moment before `PF_EXITING` is set).
const SIGKILL_PENDING: u64 = 1 << (super::sys::SIGKILL - 1);

impl Stat {
    fn runs(&self) -> bool {
        !matches!(self.state, 'Z' | 'X' | 'x')
            && self.flags & PF_EXITING == 0
            && self.pending & SIGKILL_PENDING == 0
    }
}

/// Read both files of `pid`.
fn stat_of(pid: u32) -> Option<Stat> {
    let stat = stat_file(pid)?;
    let shared = shared_pending(&proc_file(pid, "status")?)?;
    Some(Stat {
        pending: stat.pending | shared,
        ..stat
    })
}

/// `/proc/<pid>/<name>` as text (see [`proc_bytes`]).
fn proc_file(pid: u32, name: &str) -> Option<String> {
    String::from_utf8(proc_bytes(pid, name)?).ok()
}

/// `/proc/<pid>/<name>`. procfs reports a size of 0, so `fs::read` would
/// `statx` the file, then read it 32 bytes first and double: ten system
/// calls for a process's `environ`, which a scan reads for every process.
/// Plain reads into room for the usual file take the open, one or two reads,
/// the read that sees the end, and the close.
fn proc_bytes(pid: u32, name: &str) -> Option<Vec<u8>> {
    read_bytes(std::path::Path::new(&format!("/proc/{pid}/{name}")))
}

/// A procfs file, read as [`proc_bytes`] says.
fn read_bytes(path: &std::path::Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).ok()?;
    let mut bytes = vec![0; 4096];
    let mut len = 0;
    loop {
        if len == bytes.len() {
            bytes.resize(2 * len, 0);
        }
        match file.read(&mut bytes[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    bytes.truncate(len);
    Some(bytes)
}

/// `/proc/<pid>/stat` alone, with only the main thread's pending signals.
/// The command name (field 2) may hold spaces and parentheses, so fields are
/// counted after its last `)`.
fn stat_file(pid: u32) -> Option<Stat> {
    parse_stat(&proc_file(pid, "stat")?)
}

/// The fields of a `/proc/<pid>/stat` line.
fn parse_stat(stat: &str) -> Option<Stat> {
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 2..)?.split(' ').collect();
    // Fields 3 (state), 4 (ppid), 9 (flags), 22 (start time), 31 (the main
    // thread's pending signals).
    let field = |n: usize| fields.get(n - 3).copied();
    Some(Stat {
        state: field(3)?.chars().next()?,
        ppid: field(4)?.parse().ok()?,
        flags: field(9)?.parse().ok()?,
        start: field(22)?.parse().ok()?,
        pending: field(31)?.parse().ok()?,
    })
}

/// The live process of `members` (see [`members`]) that has `arg` among its command-line
/// arguments: a document's file worker is `lean --worker ... <uri>`. When
/// there are several (the worker of a closed or crashed opening still
/// exiting beside its successor), the one started last.
pub fn find_with_arg(members: &[u32], arg: &str) -> Option<Seen> {
    members
        .iter()
        .copied()
        .filter_map(|pid| {
            let cmdline = proc_bytes(pid, "cmdline")?;
            if !cmdline.split(|&b| b == 0).any(|a| a == arg.as_bytes()) {
                return None;
            }
            let stat = stat_of(pid)?;
            stat.runs().then_some(Seen {
                pid,
                start: stat.start,
            })
        })
        .max_by_key(|seen| seen.start)
}

/// Whether a process of `members` with `arg` among its arguments is still
/// there: running, or on its way out until it has let go of its memory (from
/// then on `/proc` shows neither its arguments nor its environment, and it
/// holds nothing). Blocking: a scan of `/proc`.
pub fn any_with_arg(members: &[u32], arg: &str) -> bool {
    members.iter().any(|&pid| {
        proc_bytes(pid, "cmdline")
            .is_some_and(|cmdline| cmdline.split(|&b| b == 0).any(|a| a == arg.as_bytes()))
    })
}

/// One process of a server tree and the memory it holds.
#[derive(Debug, Clone)]
pub struct Usage {
    pub seen: Seen,
    pub ppid: u32,
    /// Resident set size (`VmRSS`), in bytes.
    pub rss: u64,
    /// A language server (`--server` among its arguments).
    pub server: bool,
    /// For a file worker (`lean --worker … <uri>`): the document URI it runs.
    pub worker_uri: Option<String>,
}

/// The resident memory of every live process of `members` (blocking: reads
/// of `/proc`; call it off the async runtime).
pub fn usage(members: &[u32]) -> Vec<Usage> {
    members
        .iter()
        .copied()
        .filter_map(|pid| {
            let stat = stat_file(pid).filter(Stat::runs)?;
            let rss = status_kb(pid, "VmRSS")? * 1024;
            let cmdline = proc_bytes(pid, "cmdline")?;
            let args: Vec<&[u8]> = cmdline
                .split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .collect();
            let worker_uri = args
                .iter()
                .any(|a| *a == b"--worker")
                .then(|| args.last().map(|a| String::from_utf8_lossy(a).into_owned()))
                .flatten();
            Some(Usage {
                seen: Seen {
                    pid,
                    start: stat.start,
                },
                ppid: stat.ppid,
                rss,
                server: args.iter().any(|a| *a == b"--server"),
                worker_uri,
            })
        })
        .collect()
}

/// What a process's memory costs, from `/proc/<pid>/smaps_rollup`, in bytes:
/// its proportional set (`Pss`: each page divided among the processes that
/// map it, so the `.olean`s every worker maps are counted once in a sum,
/// where `VmRSS` counts them in every worker) and its private pages (what
/// one more process like it would add).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Proportional {
    pub pss: u64,
    pub private: u64,
}

/// [`Proportional`] of `pid` (blocking: the kernel walks the process's page
/// tables, a few milliseconds for a Lean worker; call it off the async
/// runtime). `None` when it is gone or not ours.
pub fn proportional(pid: u32) -> Option<Proportional> {
    parse_rollup(&proc_file(pid, "smaps_rollup")?)
}

/// The `Pss` and `Private_*` lines of a `smaps_rollup` (kB).
fn parse_rollup(text: &str) -> Option<Proportional> {
    let mut pss = None;
    let mut private = 0;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let kb = || {
            value
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        };
        match key {
            "Pss" => pss = kb(),
            "Private_Clean" | "Private_Dirty" => private += kb().unwrap_or(0),
            _ => {}
        }
    }
    Some(Proportional {
        pss: pss? * 1024,
        private: private * 1024,
    })
}

/// A `kB` field of `/proc/<pid>/status`.
fn status_kb(pid: u32, field: &str) -> Option<u64> {
    let status = proc_file(pid, "status")?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(all(test, target_os = "linux"))]
mod tests;
