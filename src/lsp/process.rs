//! The server as a process: spawned in its own process group with a
//! parent-death signal, its tree (Lean's file workers run in sessions of
//! their own, found by an environment mark, see [`tree`]), killing it, and
//! what `/proc` says of it. Nothing here speaks JSON-RPC: that is
//! [`super::connection`], which runs over the process's pipes or over any
//! other byte stream.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::process::{Child, Command};

use super::server::ServerCommand;
use crate::process::{spawn_supervised, sys, tree};
use crate::{log_debug, log_warn};

/// One spawned language-server process and its tree.
pub struct Process {
    /// Program name, for messages.
    program: String,
    /// Pid of the server = its process group id.
    pid: u32,
    /// The server's `/proc/<pid>/stat`, kept open for [`Process::runs`].
    watched: tree::Watched,
    /// Marks every process of this server's tree (see [`tree`]).
    tree_token: String,
    /// Set once the tree was swept after the server was reaped.
    tree_swept: AtomicBool,
    /// Set after the final post-reap group kill: from then on the pgid may be
    /// reused by an unrelated process and must never be signalled again.
    group_gone: AtomicBool,
}

impl Process {
    /// Spawn `cmd` (see [`spawn_supervised`]), marked as the root of a new
    /// tree, with stdin, stdout and stderr piped.
    pub(super) async fn spawn(cmd: &ServerCommand) -> std::io::Result<(Arc<Process>, Child)> {
        let tree_token = tree::new_token();
        let mut command = Command::new(&cmd.program);
        for name in &cmd.env_remove {
            command.env_remove(name);
        }
        command
            .args(&cmd.args)
            .envs(cmd.env.iter().map(|(k, v)| (k, v)))
            .env(tree::TREE_ENV, &tree_token)
            .current_dir(&cmd.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let child = spawn_supervised(command).await?;
        let pid = child.id().ok_or_else(|| {
            std::io::Error::other(format!("`{}` exited at once", cmd.program.display()))
        })?;
        let process = Process {
            program: cmd.program.display().to_string(),
            pid,
            watched: tree::Watched::new(pid),
            tree_token,
            tree_swept: AtomicBool::new(false),
            group_gone: AtomicBool::new(false),
        };
        Ok((Arc::new(process), child))
    }

    /// Pid of the server = its process group id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the server process still runs (not a zombie, not killed;
    /// one `pread` of its `/proc/<pid>/stat`, see [`tree::Watched`]).
    pub fn runs(&self) -> bool {
        self.watched.runs()
    }

    /// SIGKILL the process group, unless it was reaped already (its id may
    /// then name another group).
    pub fn kill_group(&self) {
        if self.group_gone.load(Ordering::Acquire) {
            return;
        }
        if let Err(e) = sys::kill_process_group(self.pid, sys::SIGKILL) {
            log_warn!(
                "cannot kill process group {} ({}): {e}",
                self.pid,
                self.program
            );
        }
    }

    /// [`Process::kill_group`], then SIGKILL every process carrying the tree's
    /// mark (workers in their own sessions, or re-parented after the server
    /// died). Blocking: a scan of `/proc`.
    pub fn kill_tree(&self) {
        self.kill_group();
        if self.tree_swept.load(Ordering::Acquire) {
            return;
        }
        self.sweep_tree();
    }

    /// [`Process::kill_tree`] without the scan of `/proc`, for a destructor on
    /// the async runtime: the tree is walked down from the server before the
    /// group kill, while its workers are still its children (a few files per
    /// process, where the scan reads every process on the machine), and the
    /// walked ones are killed after the group. Strays re-parented earlier are
    /// left to the scan of the reap ([`Process::reaped`], on the blocking
    /// pool); a server that is dead already has only the scan to find them.
    pub fn kill_tree_walked(&self) {
        if self.tree_swept.load(Ordering::Acquire) {
            return;
        }
        let Some(walked) = tree::walk(&self.tree_token, self.pid) else {
            return self.kill_tree();
        };
        self.kill_group();
        self.kill_all(walked.into_iter().filter(|&pid| pid != self.pid));
    }

    /// The process was reaped: kill whatever is left of the group and of the
    /// tree (no-op after a clean exit) so nothing is orphaned. The group id
    /// may be reused from now on and is never signalled again.
    pub(super) fn reaped(&self) {
        self.kill_group();
        self.group_gone.store(true, Ordering::Release);
        self.sweep_tree();
        self.tree_swept.store(true, Ordering::Release);
    }

    fn sweep_tree(&self) {
        self.kill_all(tree::processes_with_token(&self.tree_token));
    }

    /// SIGKILL each of `pids`, processes of this tree.
    fn kill_all(&self, pids: impl IntoIterator<Item = u32>) {
        for pid in pids {
            log_debug!("killing pid {pid} of the tree of {}", self.program);
            if let Err(e) = sys::kill_process(pid, sys::SIGKILL) {
                log_warn!("cannot kill pid {pid} of the tree of {}: {e}", self.program);
            }
        }
    }

    /// The processes of the tree now (see [`tree::members`]: walked down from
    /// the server while it runs, found by a scan of `/proc` once it is gone).
    fn members(&self) -> Vec<u32> {
        tree::members(&self.tree_token, self.pid)
    }

    /// Pids of the live processes of the tree.
    pub fn processes(&self) -> Vec<u32> {
        self.members()
    }

    /// The resident memory of every live process of the tree (blocking).
    pub fn usage(&self) -> Vec<tree::Usage> {
        tree::usage(&self.members())
    }

    /// Whether a process of the tree with `arg` on its command line is there
    /// (see [`tree::any_with_arg`]).
    pub fn has(&self, arg: &str) -> bool {
        tree::any_with_arg(&self.members(), arg)
    }

    /// The live process of the tree with `arg` on its command line.
    pub fn find(&self, arg: &str) -> Option<tree::Seen> {
        tree::find_with_arg(&self.members(), arg)
    }

    /// SIGKILL one process of the tree, if it is still the process seen.
    pub fn kill_one(&self, process: tree::Seen) {
        if process.is_running() {
            if let Err(e) = sys::kill_process(process.pid, sys::SIGKILL) {
                log_warn!(
                    "cannot kill pid {} of the tree of {}: {e}",
                    process.pid,
                    self.program
                );
            }
        }
    }
}
