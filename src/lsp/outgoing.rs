//! What the client writes to the server: each message encoded once into a
//! whole frame, written by the sending task with non-blocking writes under a
//! lock and no await in between, so frames never interleave and a cancelled
//! caller can never leave half a frame; and the debug trace of every frame.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::{Notify, mpsc};

use super::error::LspError;
use super::framing;
use crate::log_debug;
use crate::util::lock;

/// How many frames may wait for room in the server's stdin (beyond what the
/// pipe holds). A notification fails with [`LspError::Io`] when that many are
/// waiting (the server has stopped reading).
pub const OUTGOING_QUEUE: usize = 4096;

/// How much of each frame the debug trace shows.
const TRACE_BYTES: usize = 320;

/// An outgoing request or notification, serialized without moving `params`.
#[derive(Serialize)]
pub(super) struct Outgoing<'a, P: ?Sized> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<i64>,
    method: &'a str,
    /// JSON-RPC's `params` is an object or an array when present, never
    /// `null`: `None` leaves it out (see [`value_params`], [`typed_params`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a P>,
}

impl<'a, P: Serialize + ?Sized> Outgoing<'a, P> {
    /// Request `id`.
    pub(super) fn request(id: i64, method: &'a str, params: Option<&'a P>) -> Self {
        Outgoing {
            jsonrpc: "2.0",
            id: Some(id),
            method,
            params,
        }
    }

    /// A notification.
    pub(super) fn notification(method: &'a str, params: Option<&'a P>) -> Self {
        Outgoing {
            jsonrpc: "2.0",
            id: None,
            method,
            params,
        }
    }

    /// The message as one frame.
    pub(super) fn encode(&self) -> Result<Frame, LspError> {
        Frame::encode(self)
            .map_err(|e| LspError::Protocol(format!("cannot serialize {}: {e}", self.method)))
    }
}

/// Untyped params: `null` means none.
pub(super) fn value_params(params: &Value) -> Option<&Value> {
    (!params.is_null()).then_some(params)
}

/// Typed params: `()` (the params of lsp_types' `Shutdown`, `Exit`) means none.
pub(super) fn typed_params<P: 'static>(params: &P) -> Option<&P> {
    (std::any::TypeId::of::<P>() != std::any::TypeId::of::<()>()).then_some(params)
}

/// One whole frame, header and body, in one buffer: `bytes[start..]`.
pub(super) struct Frame {
    bytes: Vec<u8>,
    start: usize,
}

impl Frame {
    /// Serialize `msg` behind room for its header, then put the header in front
    /// of it: one allocation, no copy of the body.
    pub(super) fn encode<T: Serialize>(msg: &T) -> serde_json::Result<Frame> {
        const ROOM: usize = framing::MAX_HEADER_LEN;
        let mut bytes = Vec::with_capacity(512);
        bytes.resize(ROOM, 0);
        serde_json::to_writer(&mut bytes, msg)?;
        let start = framing::put_header(&mut bytes[..], ROOM);
        Ok(Frame { bytes, start })
    }

    /// What is still to be written.
    pub(super) fn rest(&self) -> &[u8] {
        &self.bytes[self.start..]
    }
}

/// Why [`Sink`] did not take a frame.
pub(super) enum SendError {
    /// [`OUTGOING_QUEUE`] frames are already waiting.
    Full,
    /// An earlier write failed.
    Closed,
    Io(std::io::Error),
}

/// Where frames go: the server process's stdin, or any byte stream through
/// a pump task (an in-process server over `tokio::io::duplex`, a socket).
pub(super) enum Wire {
    /// A pipe, written with non-blocking writes by the sending task.
    Pipe(pipe::Sender),
    /// Whole frames handed to [`pump`], which writes them to the stream in
    /// order; a full channel is a pipe without room.
    Stream {
        frames: mpsc::Sender<Vec<u8>>,
        /// Tells the pump to close the stream (see [`Sink::close`]).
        close: Arc<Notify>,
    },
}

/// Frames handed to the pump of a [`Wire::Stream`] not yet written.
const STREAM_FRAMES: usize = 64;

impl Wire {
    /// A wire to `stream`, and the pump that must run for frames to reach it.
    pub(super) fn stream<W>(stream: W) -> (Wire, impl Future<Output = ()> + Send + 'static)
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (frames, rx) = mpsc::channel(STREAM_FRAMES);
        let close = Arc::new(Notify::new());
        let pump = pump(stream, rx, Arc::clone(&close));
        (Wire::Stream { frames, close }, pump)
    }

    fn try_write(&self, bytes: &[u8]) -> std::io::Result<usize> {
        match self {
            Wire::Pipe(pipe) => pipe.try_write(bytes),
            Wire::Stream { frames, .. } => match frames.try_send(bytes.to_vec()) {
                Ok(()) => Ok(bytes.len()),
                Err(mpsc::error::TrySendError::Full(_)) => {
                    Err(std::io::ErrorKind::WouldBlock.into())
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    Err(std::io::ErrorKind::BrokenPipe.into())
                }
            },
        }
    }

    async fn writable(&self) -> std::io::Result<()> {
        match self {
            Wire::Pipe(pipe) => pipe.writable().await,
            Wire::Stream { frames, .. } => frames
                .reserve()
                .await
                .map(drop)
                .map_err(|_| std::io::ErrorKind::BrokenPipe.into()),
        }
    }
}

/// Write the frames of a [`Wire::Stream`] to `stream` in order until the
/// wire is closed or a write fails, then shut the stream down (the peer reads
/// its end).
async fn pump<W: AsyncWrite + Unpin>(
    mut stream: W,
    mut frames: mpsc::Receiver<Vec<u8>>,
    close: Arc<Notify>,
) {
    loop {
        let frame = tokio::select! {
            biased;
            _ = close.notified() => break,
            frame = frames.recv() => frame,
        };
        let Some(frame) = frame else { break };
        if stream.write_all(&frame).await.is_err() || stream.flush().await.is_err() {
            break;
        }
    }
    frames.close();
    let _ = stream.shutdown().await;
}

/// The server's input. A frame is written by the task that sends it, with
/// non-blocking writes under a lock and no await, so it costs no task switch,
/// and cancelling the sender cannot cut a frame. What the wire has no room for
/// waits in `backlog`, finished by [`Sink::drain_forever`] (the client's drain
/// task); later frames queue behind it.
pub(super) struct Sink {
    pipe: Wire,
    state: Mutex<SinkState>,
    /// Wakes [`Sink::drain_forever`] when the backlog becomes non-empty.
    backlog_added: Notify,
}

#[derive(Default)]
struct SinkState {
    /// Frames not yet written completely; the first may be partly written.
    backlog: VecDeque<Frame>,
    /// Set after a write failed: nothing more is written.
    broken: bool,
}

impl Sink {
    pub(super) fn new(pipe: Wire) -> Self {
        Sink {
            pipe,
            state: Mutex::new(SinkState::default()),
            backlog_added: Notify::new(),
        }
    }

    /// Write nothing more; a stream is closed (its pump ends), a pipe is
    /// left to the process's end.
    pub(super) fn close(&self) {
        lock(&self.state).broken = true;
        if let Wire::Stream { close, .. } = &self.pipe {
            close.notify_one();
        }
    }

    /// Write `frame` now, or queue it behind the frames already waiting while
    /// fewer than [`OUTGOING_QUEUE`] are.
    pub(super) fn send(&self, frame: Frame) -> Result<(), SendError> {
        self.send_within(frame, OUTGOING_QUEUE)
    }

    /// [`Sink::send`], queued however many frames wait: for requests, which
    /// are never refused for a full backlog (the calls in flight are bounded
    /// by the MCP dispatcher already).
    pub(super) fn send_unbounded(&self, frame: Frame) -> Result<(), SendError> {
        self.send_within(frame, usize::MAX)
    }

    fn send_within(&self, mut frame: Frame, limit: usize) -> Result<(), SendError> {
        let mut st = lock(&self.state);
        if st.broken {
            return Err(SendError::Closed);
        }
        if !st.backlog.is_empty() {
            if st.backlog.len() >= limit {
                return Err(SendError::Full);
            }
            st.backlog.push_back(frame);
            return Ok(());
        }
        match self.write_some(&mut frame) {
            Ok(true) => Ok(()),
            Ok(false) => {
                st.backlog.push_back(frame);
                self.backlog_added.notify_one();
                Ok(())
            }
            Err(e) => {
                st.broken = true;
                Err(SendError::Io(e))
            }
        }
    }

    /// Write as much of `frame` as the pipe takes; `true` once it is all written.
    fn write_some(&self, frame: &mut Frame) -> std::io::Result<bool> {
        while frame.start < frame.bytes.len() {
            match self.pipe.try_write(frame.rest()) {
                Ok(n) => frame.start += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Whenever frames wait in the backlog, write them as the pipe takes them.
    /// Returns only when a write fails.
    pub(super) async fn drain_forever(&self) -> std::io::Result<()> {
        loop {
            while !self.drain_some()? {
                self.pipe.writable().await?;
            }
            self.backlog_added.notified().await;
        }
    }

    /// Write what the pipe takes from the backlog; `true` once it is empty.
    fn drain_some(&self) -> std::io::Result<bool> {
        let mut st = lock(&self.state);
        if st.broken {
            return Ok(true);
        }
        while let Some(frame) = st.backlog.front_mut() {
            match self.write_some(frame) {
                Ok(true) => {
                    st.backlog.pop_front();
                }
                Ok(false) => return Ok(false),
                Err(e) => {
                    st.broken = true;
                    st.backlog.clear();
                    return Err(e);
                }
            }
        }
        Ok(true)
    }
}

/// At debug level, the start of every frame to and from the server, for
/// reconstructing what Lean was told and when (frames can be megabytes).
pub(super) fn trace_frame(pid: u32, direction: &str, bytes: &[u8]) {
    if crate::logging::enabled(crate::logging::Level::Debug) {
        let body = bytes
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(bytes, |at| &bytes[at + 4..]);
        let shown = String::from_utf8_lossy(&body[..body.len().min(TRACE_BYTES)]);
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        log_debug!(
            "lsp {pid} {direction} {}.{:06} {shown}",
            since_epoch.as_secs(),
            since_epoch.subsec_micros()
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tokio::io::BufReader;

    use super::*;

    /// Frames larger than the pipe, and frames sent while others wait, arrive
    /// whole and in order.
    #[tokio::test]
    async fn sink_keeps_frames_whole_and_in_order_when_the_pipe_is_full() {
        let (tx, rx) = pipe::pipe().expect("pipe");
        let sink = Arc::new(Sink::new(Wire::Pipe(tx)));
        let drainer = {
            let sink = Arc::clone(&sink);
            tokio::spawn(async move { sink.drain_forever().await })
        };
        let big = "x".repeat(300 * 1024);
        let mut expected = Vec::new();
        for i in 0..20 {
            let text = if i % 3 == 0 { big.as_str() } else { "small" };
            let msg = json!({ "i": i, "text": text });
            expected.push(serde_json::to_vec(&msg).unwrap());
            sink.send_unbounded(Frame::encode(&msg).unwrap())
                .unwrap_or_else(|_| panic!("send {i}"));
        }
        assert!(
            !lock(&sink.state).backlog.is_empty(),
            "the pipe never filled"
        );
        let mut reader = BufReader::new(rx);
        let mut line = Vec::new();
        for (i, want) in expected.iter().enumerate() {
            let got = framing::read_frame(&mut reader, &mut line).await.unwrap();
            assert!(got == *want, "frame {i} differs");
        }
        assert!(lock(&sink.state).backlog.is_empty());
        drainer.abort();
    }

    /// A bounded frame is refused once OUTGOING_QUEUE frames wait; an unbounded
    /// one is queued anyway.
    #[tokio::test]
    async fn sink_refuses_bounded_frames_when_the_backlog_is_full() {
        let (tx, _rx) = pipe::pipe().expect("pipe");
        let sink = Sink::new(Wire::Pipe(tx));
        let big = json!({ "text": "x".repeat(256 * 1024) });
        sink.send(Frame::encode(&big).unwrap())
            .unwrap_or_else(|_| panic!("first send"));
        for _ in 1..OUTGOING_QUEUE {
            sink.send(Frame::encode(&json!(1)).unwrap())
                .unwrap_or_else(|_| panic!("queued send"));
        }
        assert!(matches!(
            sink.send(Frame::encode(&json!(1)).unwrap()),
            Err(SendError::Full)
        ));
        assert!(
            sink.send_unbounded(Frame::encode(&json!(1)).unwrap())
                .is_ok()
        );
    }

    /// `null` and `()` params are left out (JSON-RPC allows an object or an
    /// array only).
    #[test]
    fn absent_params_are_left_out() {
        let body = |frame: Frame| String::from_utf8(frame.rest().to_vec()).unwrap();
        let shutdown = Outgoing::request(7, "shutdown", value_params(&Value::Null));
        assert!(
            body(shutdown.encode().unwrap())
                .ends_with(r#"{"jsonrpc":"2.0","id":7,"method":"shutdown"}"#)
        );
        let exit = Outgoing::notification("exit", typed_params(&()));
        assert!(body(exit.encode().unwrap()).ends_with(r#"{"jsonrpc":"2.0","method":"exit"}"#));
        let params = json!({ "id": 3 });
        let cancel = Outgoing::notification("$/cancelRequest", value_params(&params));
        assert!(
            body(cancel.encode().unwrap())
                .ends_with(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":3}}"#)
        );
        let empty = lsp_types::InitializedParams {};
        let initialized = Outgoing::notification("initialized", typed_params(&empty));
        assert!(
            body(initialized.encode().unwrap()).ends_with(r#""method":"initialized","params":{}}"#)
        );
    }
}
