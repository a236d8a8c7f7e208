//! Starting the server process, and the tasks that keep its connection until
//! it exits. Per client (all ended by the process's exit):
//!
//! * drain — finishes the frames the pipe had no room for (only when Lean is
//!   not reading fast enough), in order;
//! * reader — parses frames from stdout, routes answers to their waiting request,
//!   answers server → client requests with `null`, forwards notifications;
//! * stderr — keeps the last [`STDERR_TAIL_BYTES`] of stderr;
//! * waiter — reaps the process, kills what is left of its tree, fails every
//!   pending request with [`LspError::Exited`] and sends [`ServerEvent::Exited`].
//!
//! [`ServerEvent::Exited`]: super::ServerEvent::Exited
//! [`STDERR_TAIL_BYTES`]: super::client::STDERR_TAIL_BYTES

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use tokio::sync::oneshot;

use super::connection::Connection;
use super::error::LspError;
use super::framing::{self, FrameError};
use super::server::{ExitInfo, ServerCommand};
use crate::process::{spawn_supervised, tree};
use crate::{log_debug, log_warn};

/// After the process is reaped, how long to wait for the rest of its stdout and
/// stderr before declaring it exited anyway.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

/// Spawn the server process (see [`spawn_supervised`]), marked as the root of
/// tree `tree_token`.
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

/// Start the tasks that keep `connection` until `child` exits.
pub(super) fn keep(
    connection: &Arc<Connection>,
    child: Child,
    stdout: ChildStdout,
    stderr: ChildStderr,
) {
    let (stdout_done_tx, stdout_done) = oneshot::channel();
    let (stderr_done_tx, stderr_done) = oneshot::channel();
    let drain = connection.clone();
    tokio::spawn(async move { drain.drain_until_exit().await });
    tokio::spawn(reader_task(stdout, connection.clone(), stdout_done_tx));
    tokio::spawn(stderr_task(stderr, connection.clone(), stderr_done_tx));
    tokio::spawn(waiter_task(
        child,
        connection.clone(),
        stdout_done,
        stderr_done,
    ));
}

async fn reader_task(stdout: ChildStdout, conn: Arc<Connection>, done: oneshot::Sender<()>) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::new();
    loop {
        let problem = match framing::read_frame(&mut reader, &mut line).await {
            Ok(body) => match conn.dispatch(&body) {
                Ok(()) => continue,
                Err(m) => m,
            },
            Err(FrameError::Eof) => break,
            Err(FrameError::Io(e)) => {
                // Usually the process died mid-frame; the waiter reports that.
                log_debug!("reading from {} failed: {e}", conn.program());
                break;
            }
            Err(FrameError::Garbled(m)) => m,
        };
        log_warn!(
            "language server {} (pid {}) broke the protocol, killing it: {problem}",
            conn.program(),
            conn.pid()
        );
        conn.connection_broken(LspError::Protocol(problem));
        break;
    }
    // stdout closed: the process is exiting (or closed it on purpose: either way
    // the connection is over).
    conn.kill_group();
    let _ = done.send(());
}

async fn stderr_task(mut stderr: ChildStderr, conn: Arc<Connection>, done: oneshot::Sender<()>) {
    let mut buf = vec![0u8; 8192];
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => conn.append_stderr(&buf[..n]),
        }
    }
    let _ = done.send(());
}

async fn waiter_task(
    mut child: Child,
    conn: Arc<Connection>,
    stdout_done: oneshot::Receiver<()>,
    stderr_done: oneshot::Receiver<()>,
) {
    let status = child.wait().await;
    // Off the async runtime: the sweep for stray workers reads the `environ`
    // of every process in /proc.
    let reaping = Arc::clone(&conn);
    if tokio::task::spawn_blocking(move || reaping.reaped())
        .await
        .is_err()
    {
        conn.reaped();
    }
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
            log_warn!("waiting for {} failed: {e}", conn.program());
            (None, None)
        }
    };
    let info = ExitInfo {
        status: code,
        signal,
        stderr_tail: conn.stderr_tail(),
    };
    log_debug!(
        "language server {} (pid {}) ended: {}",
        conn.program(),
        conn.pid(),
        info
    );
    conn.finish(info);
}

#[cfg(unix)]
fn exit_signal(s: &std::process::ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(s)
}

#[cfg(not(unix))]
fn exit_signal(_s: &std::process::ExitStatus) -> Option<i32> {
    None
}
