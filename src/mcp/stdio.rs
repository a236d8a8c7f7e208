//! The stdio transport: one permanent stdin reader, one stdout writer task.
//!
//! Lines longer than the limit are skipped without being buffered, and answered
//! with an error, so a hostile line cannot exhaust memory. EOF on stdin, or a
//! stdout that can no longer be written, starts shutdown: admission stops,
//! cancellable calls are cancelled, admitted calls drain, and the writer flushes.

use std::sync::Arc;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::{mpsc, watch};

use super::dispatcher::{Dispatcher, Reply};
use super::jsonrpc::{self, RpcError};
use super::session::Session;
use crate::surface::Operations;
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
            return Ok(if skipped > 0 { Line::TooLong(skipped) } else { Line::Complete(line) });
        }
    }
}

fn memchr_newline(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|&b| b == b'\n')
}

/// Serve one stream until EOF or until the output is closed.
pub async fn serve<O, R, W>(dispatcher: Arc<Dispatcher<O>>, input: R, output: W, max_line: usize)
where
    O: Operations + 'static,
    R: tokio::io::AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, mut rx) = mpsc::channel::<String>(OUTBOUND_CAPACITY);
    let (closed_tx, mut closed_rx) = watch::channel(false);
    let writer = tokio::spawn(async move {
        let mut output = BufWriter::new(output);
        while let Some(line) = rx.recv().await {
            let mut ok = output.write_all(line.as_bytes()).await.is_ok()
                && output.write_all(b"\n").await.is_ok();
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

    let session = Arc::new(Session::default());
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

    let cancelled = session.cancel_all();
    log_info!("input closed; cancelled {cancelled} call(s), draining admitted work");
    dispatcher.drain().await;
    drop(out);
    let _ = writer.await;
}
