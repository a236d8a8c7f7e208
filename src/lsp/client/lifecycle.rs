//! Starting the server process, and the tasks that keep its connection until
//! it exits (see the list in [`super`]).

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::io::{AsyncReadExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use tokio::sync::{oneshot, watch};

use super::super::framing::{self, FrameError};
use super::super::{ExitInfo, LspError, ServerCommand, ServerEvent};
use super::{STDERR_TAIL_BYTES, Shared};
use crate::process::{spawn_supervised, tree};
use crate::util::lock;
use crate::{log_debug, log_warn};

/// After the process is reaped, how long to wait for the rest of its stdout and
/// stderr before declaring it exited anyway.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

/// Spawn the server process (see [`spawn_supervised`]).
pub(super) async fn spawn(cmd: &ServerCommand, tree_token: &str) -> std::io::Result<Child> {
    let mut command = Command::new(&cmd.program);
    for name in &cmd.env_remove {
        command.env_remove(name);
    }
    command
        .args(&cmd.args)
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .env(tree::TREE_ENV, tree_token)
        .current_dir(&cmd.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    spawn_supervised(command).await
}

/// Finish the frames the [`super::super::outgoing::Sink`] could not write at once, in order, as the
/// pipe drains; ends at the process's exit or when a write fails.
pub(super) async fn drain_task(shared: Arc<Shared>, mut exit: watch::Receiver<Option<ExitInfo>>) {
    let result = tokio::select! {
        biased;
        result = shared.outgoing.drain_forever() => result,
        _ = exit.wait_for(|e| e.is_some()) => return,
    };
    if let Err(e) = result {
        shared.write_failed(&e);
    }
}

pub(super) async fn reader_task(
    stdout: ChildStdout,
    shared: Arc<Shared>,
    done: oneshot::Sender<()>,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::new();
    loop {
        let problem = match framing::read_frame(&mut reader, &mut line).await {
            Ok(body) => match shared.dispatch(&body) {
                Ok(()) => continue,
                Err(m) => m,
            },
            Err(FrameError::Eof) => break,
            Err(FrameError::Io(e)) => {
                // Usually the process died mid-frame; the waiter reports that.
                log_debug!("reading from {} failed: {e}", shared.program);
                break;
            }
            Err(FrameError::Garbled(m)) => m,
        };
        log_warn!(
            "language server {} (pid {}) broke the protocol, killing it: {problem}",
            shared.program,
            shared.pid
        );
        shared.connection_broken(LspError::Protocol(problem));
        break;
    }
    // stdout closed: the process is exiting (or closed it on purpose: either way
    // the connection is over).
    shared.kill_group();
    let _ = done.send(());
}

pub(super) async fn stderr_task(
    mut stderr: ChildStderr,
    shared: Arc<Shared>,
    done: oneshot::Sender<()>,
) {
    let mut buf = vec![0u8; 8192];
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let mut tail = lock(&shared.stderr_tail);
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > STDERR_TAIL_BYTES {
                    let excess = tail.len() - STDERR_TAIL_BYTES;
                    tail.drain(..excess);
                }
            }
        }
    }
    let _ = done.send(());
}

pub(super) async fn waiter_task(
    mut child: Child,
    shared: Arc<Shared>,
    stdout_done: oneshot::Receiver<()>,
    stderr_done: oneshot::Receiver<()>,
) {
    let status = child.wait().await;
    // Kill whatever is left of the group and of the tree (no-op after a clean
    // exit) so nothing is orphaned; the server is gone, so nothing new can start.
    shared.kill_group();
    shared.group_gone.store(true, Ordering::Release);
    shared.sweep_tree();
    shared.tree_swept.store(true, Ordering::Release);
    // Let the reader deliver what the server wrote before dying, and collect the
    // last of stderr, but do not wait forever for pipes a stray process may hold.
    let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, async {
        let _ = stdout_done.await;
        let _ = stderr_done.await;
    })
    .await;
    let (code, signal) = match &status {
        Ok(s) => (s.code(), exit_signal(s)),
        Err(e) => {
            log_warn!("waiting for {} failed: {e}", shared.program);
            (None, None)
        }
    };
    let info = ExitInfo {
        status: code,
        signal,
        stderr_tail: String::from_utf8_lossy(&lock(&shared.stderr_tail)).into_owned(),
    };
    log_debug!(
        "language server {} (pid {}) ended: {}",
        shared.program,
        shared.pid,
        info
    );
    shared.pending.finish(&LspError::Exited(info.clone()));
    shared.exit.send_replace(Some(info.clone()));
    let _ = shared.events.send(ServerEvent::Exited(info));
}

#[cfg(unix)]
fn exit_signal(s: &std::process::ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(s)
}

#[cfg(not(unix))]
fn exit_signal(_s: &std::process::ExitStatus) -> Option<i32> {
    None
}
