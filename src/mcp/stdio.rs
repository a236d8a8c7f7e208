//! The stdio transport: one permanent stdin reader, one stdout writer task.
//!
//! Lines longer than the limit are skipped without being buffered, and answered
//! with an error, so a hostile line cannot exhaust memory. EOF on stdin, or a
//! stdout that can no longer be written, starts shutdown: admission stops,
//! cancellable calls are cancelled, admitted calls drain, and the writer flushes.

use std::sync::Arc;

use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter,
};
use tokio::sync::{mpsc, watch};

use super::dispatcher::{Dispatcher, Reply};
use super::jsonrpc::{self, RpcError};
use super::session::Session;
use crate::surface::Handler;
use crate::{log_info, log_warn};

/// The largest accepted message line.
pub const DEFAULT_MAX_LINE: usize = 8 * 1024 * 1024;

/// Outbound lines waiting for the writer; senders wait when it is full.
const OUTBOUND_CAPACITY: usize = 1024;

enum Line {
    Complete(Vec<u8>),
    TooLong(usize),
    Eof,
}

/// Read one `\n`-terminated line of at most `max` bytes (the final line may lack
/// its newline). Longer lines are consumed and reported by size only.
async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R, max: usize) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut skipped = 0usize;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(match (skipped, line.is_empty()) {
                (0, true) => Line::Eof,
                (0, false) => Line::Complete(line),
                (n, _) => Line::TooLong(n),
            });
        }
        let (chunk, found) = match memchr_newline(buf) {
            Some(i) => (&buf[..i], true),
            None => (buf, false),
        };
        let used = chunk.len() + usize::from(found);
        if skipped > 0 || line.len() + chunk.len() > max {
            skipped += line.len() + chunk.len();
            line = Vec::new();
        } else {
            line.extend_from_slice(chunk);
        }
        reader.consume(used);
        if found {
            return Ok(if skipped > 0 {
                Line::TooLong(skipped)
            } else {
                Line::Complete(line)
            });
        }
    }
}

/// Where the first `\n` of `buf` is. `contains` runs the standard library's
/// memchr, which is compiled optimized even into a debug build: a scan of a
/// multi-MiB line chunk by chunk costs a fortieth of a byte loop's, so a
/// hostile 9 MiB line holds the one reader for a few milliseconds, not 50.
/// Only the chunk that holds the newline is walked byte by byte.
fn memchr_newline(buf: &[u8]) -> Option<usize> {
    if !buf.contains(&b'\n') {
        return None;
    }
    buf.iter().position(|&b| b == b'\n')
}

/// The process's stdin and stdout as async streams.
///
/// MCP clients spawn the server with pipes; those are registered with the
/// reactor, so reading a request and writing its answer happen on the worker
/// threads. tokio's `stdin()`/`stdout()` instead hand every read and write to the
/// blocking thread pool: two thread wake-ups per message, which dominated the
/// cost of a `beam_version` round trip. Anything that is not a pipe (a file, a
/// terminal) keeps tokio's blocking stdio. Must be called inside the runtime.
pub fn process_stdio() -> (
    Box<dyn AsyncRead + Unpin + Send>,
    Box<dyn AsyncWrite + Unpin + Send>,
) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;

    let input: Box<dyn AsyncRead + Unpin + Send> = match std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Receiver::from_owned_fd)
    {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdin()),
    };
    let output: Box<dyn AsyncWrite + Unpin + Send> = match std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .inspect(|fd| widen_pipe(fd.as_fd()))
        .and_then(pipe::Sender::from_owned_fd)
    {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdout()),
    };
    (input, output)
}

/// The room asked for in the stdout pipe: a whole tools/list answer (155 KB)
/// or a result at its default cap (64 KiB, twice over: text and structured)
/// fits, so the writer hands it over in one `write` instead of waiting for
/// the client to drain Linux's default 64 KiB in pieces (a wake-up of each
/// side per piece).
const PIPE_BYTES: libc::c_int = 256 * 1024;

/// Grow a pipe's buffer to [`PIPE_BYTES`]. Best effort: past the system's
/// limits (`/proc/sys/fs/pipe-max-size`, the user's pipe pages) or on
/// anything that is not a pipe, it stays as it was.
fn widen_pipe(fd: std::os::fd::BorrowedFd<'_>) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: F_GETPIPE_SZ/F_SETPIPE_SZ take an int and touch no memory.
        unsafe {
            let now = libc::fcntl(fd.as_raw_fd(), libc::F_GETPIPE_SZ);
            if (0..PIPE_BYTES).contains(&now) {
                libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_BYTES);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = fd;
}

/// Serve one stream until EOF or until the output is closed.
pub async fn serve<O, R, W>(dispatcher: Arc<Dispatcher<O>>, input: R, output: W, max_line: usize)
where
    O: Handler + 'static,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, mut rx) = mpsc::channel::<String>(OUTBOUND_CAPACITY);
    let (closed_tx, closed_rx) = watch::channel(false);
    let writer = tokio::spawn(async move {
        let mut output = BufWriter::new(output);
        while let Some(mut line) = rx.recv().await {
            // One write for the line and its newline: a line longer than the
            // buffer goes straight to the pipe, and its newline apart would
            // be a second write (and the client's read of the line a second
            // wake-up). Lines are made with room to spare for it.
            line.push('\n');
            let mut ok = output.write_all(line.as_bytes()).await.is_ok();
            // Flush when nothing else is queued: batches bursts, never delays a lone reply.
            if ok && rx.is_empty() {
                ok = output.flush().await.is_ok();
            }
            if !ok {
                log_warn!("stdout is closed; shutting down");
                let _ = closed_tx.send(true);
                return;
            }
        }
        let _ = output.flush().await;
    });

    // The reader runs as a task rather than in the future that awaits `serve`:
    // on a multi-thread runtime (TOKIO_WORKER_THREADS) the calls it spawns then
    // start on its worker's own queue instead of waking another thread.
    let session = Arc::new(dispatcher.stream_session());
    let reader = tokio::spawn(read_loop(
        Arc::clone(&dispatcher),
        Arc::clone(&session),
        input,
        out.clone(),
        closed_rx,
        max_line,
    ));
    if let Err(err) = reader.await {
        if err.is_panic() {
            std::panic::resume_unwind(err.into_panic());
        }
    }

    let cancelled = session.cancel_all();
    log_info!("input closed; cancelled {cancelled} call(s), draining admitted work");
    dispatcher.drain().await;
    drop(out);
    let _ = writer.await;
}

/// Read and dispatch lines until EOF, a read error, or a closed output.
async fn read_loop<O, R>(
    dispatcher: Arc<Dispatcher<O>>,
    session: Arc<Session>,
    input: R,
    out: mpsc::Sender<String>,
    mut closed_rx: watch::Receiver<bool>,
    max_line: usize,
) where
    O: Handler + 'static,
    R: AsyncRead + Unpin,
{
    let mut input = BufReader::with_capacity(64 * 1024, input);
    loop {
        let line = tokio::select! {
            line = read_line(&mut input, max_line) => line,
            _ = closed_rx.wait_for(|closed| *closed) => break,
        };
        let reply = match line {
            Ok(Line::Complete(bytes)) => dispatcher.handle_line(&session, &bytes, &out).await,
            Ok(Line::TooLong(size)) => {
                dispatcher.stats().record_protocol_error();
                Reply::Line(jsonrpc::error_line(
                    None,
                    &RpcError::invalid_request(format!(
                        "message of {size} bytes exceeds the {max_line}-byte line limit; it was discarded"
                    )),
                ))
            }
            Ok(Line::Eof) => break,
            Err(err) => {
                log_warn!("stdin read failed: {err}; shutting down");
                break;
            }
        };
        if let Reply::Line(line) = reply {
            if out.send(line).await.is_err() {
                break;
            }
        }
    }
}
