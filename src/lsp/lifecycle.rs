//! The tasks that keep a connection until its peer is gone. Per client over
//! a process (all ended by the process's exit):
//!
//! * drain — finishes the frames the pipe had no room for (only when Lean is
//!   not reading fast enough), in order;
//! * reader — parses frames from stdout, routes answers to their waiting request,
//!   answers server → client requests with `null`, forwards notifications;
//! * stderr — keeps the last [`STDERR_TAIL_BYTES`] of stderr;
//! * waiter — reaps the process, kills what is left of its tree, fails every
//!   pending request with [`LspError::Exited`] and sends [`ServerEvent::Exited`].
//!
//! Over a stream ([`keep_stream`]): the drain, the reader (which also stops
//! when the connection is stopped, and then finishes the connection: there is
//! no process to reap) and the pump that writes the frames to the stream.
//!
//! [`ServerEvent::Exited`]: super::ServerEvent::Exited
//! [`STDERR_TAIL_BYTES`]: super::client::STDERR_TAIL_BYTES

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdout};
use tokio::sync::oneshot;

use super::connection::Connection;
use super::error::LspError;
use super::framing::{self, FrameError};
use super::server::ExitInfo;
use crate::{log_debug, log_warn};

/// After the process is reaped, how long to wait for the rest of its stdout and
/// stderr before declaring it exited anyway.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

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

/// Start the tasks that keep `connection` over a stream: frames are read
/// from `output` and written by `pump` (see [`super::outgoing::Wire::stream`]).
/// The connection is finished when the stream ends or the connection is
/// stopped.
pub(super) fn keep_stream<R>(
    connection: &Arc<Connection>,
    output: R,
    pump: impl Future<Output = ()> + Send + 'static,
) where
    R: AsyncRead + Unpin + Send + 'static,
{
    let (read_tx, read_done) = oneshot::channel();
    let drain = connection.clone();
    tokio::spawn(async move { drain.drain_until_exit().await });
    tokio::spawn(pump);
    tokio::spawn(reader_task(output, connection.clone(), read_tx));
    let conn = connection.clone();
    tokio::spawn(async move {
        let _ = read_done.await;
        conn.reaped();
        conn.finish(ExitInfo {
            stderr_tail: conn.stderr_tail(),
            ..ExitInfo::default()
        });
    });
}

async fn reader_task<R>(output: R, conn: Arc<Connection>, done: oneshot::Sender<()>)
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let mut reader = BufReader::with_capacity(64 * 1024, output);
    let mut line = Vec::new();
    loop {
        let frame = tokio::select! {
            biased;
            frame = framing::read_frame(&mut reader, &mut line) => frame,
            () = conn.stopped() => break,
        };
        let problem = match frame {
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
    conn.stop_peer();
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
