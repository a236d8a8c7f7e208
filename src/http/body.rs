//! Response bodies (one JSON document, or a server-sent-event stream fed by a
//! channel of serialized JSON-RPC lines) and the bounded request body reader.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Frame, SizeHint};
use tokio::sync::mpsc;
use tokio::time::Sleep;

/// An SSE comment every so often, so that a vanished client of a long-lived
/// stream is noticed (a write fails) and intermediaries keep the stream open.
const KEEPALIVE: Duration = Duration::from_secs(25);

/// Runs when a stream ends, however it ends (completed, client gone, shutdown).
pub type OnClose = Box<dyn FnOnce() + Send + Sync>;

pub enum Body {
    Full(Option<Bytes>),
    Sse(SseStream),
}

impl Body {
    pub fn empty() -> Self {
        Body::Full(None)
    }

    pub fn text(text: impl Into<Bytes>) -> Self {
        Body::Full(Some(text.into()))
    }
}

/// A `text/event-stream` body: every line from the channel becomes one
/// `event: message` whose data is the line. The stream ends when every sender
/// is gone.
pub struct SseStream {
    first: Option<String>,
    rx: mpsc::Receiver<String>,
    keepalive: Pin<Box<Sleep>>,
    on_close: Option<OnClose>,
}

impl SseStream {
    pub fn new(first: Option<String>, rx: mpsc::Receiver<String>, on_close: OnClose) -> Self {
        Self {
            first,
            rx,
            keepalive: Box::pin(tokio::time::sleep(KEEPALIVE)),
            on_close: Some(on_close),
        }
    }
}

impl Drop for SseStream {
    fn drop(&mut self) {
        if let Some(on_close) = self.on_close.take() {
            on_close();
        }
    }
}

/// One SSE event carrying one JSON-RPC message (serialized JSON has no newline).
pub fn event(line: &str) -> Bytes {
    let mut out = String::with_capacity(line.len() + 24);
    out.push_str("event: message\ndata: ");
    out.push_str(line);
    out.push_str("\n\n");
    Bytes::from(out)
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Body::Full(data) => Poll::Ready(data.take().map(|d| Ok(Frame::data(d)))),
            Body::Sse(stream) => {
                if let Some(line) = stream.first.take() {
                    return Poll::Ready(Some(Ok(Frame::data(event(&line)))));
                }
                match stream.rx.poll_recv(cx) {
                    Poll::Ready(Some(line)) => {
                        stream
                            .keepalive
                            .as_mut()
                            .reset(tokio::time::Instant::now() + KEEPALIVE);
                        Poll::Ready(Some(Ok(Frame::data(event(&line)))))
                    }
                    Poll::Ready(None) => Poll::Ready(None),
                    Poll::Pending => match stream.keepalive.as_mut().poll(cx) {
                        Poll::Ready(()) => {
                            stream
                                .keepalive
                                .as_mut()
                                .reset(tokio::time::Instant::now() + KEEPALIVE);
                            Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(
                                b": keepalive\n\n",
                            )))))
                        }
                        Poll::Pending => Poll::Pending,
                    },
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Body::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Full(Some(data)) => SizeHint::with_exact(data.len() as u64),
            Body::Full(None) => SizeHint::with_exact(0),
            Body::Sse(_) => SizeHint::default(),
        }
    }
}

/// Why a request body could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// Longer than the limit (declared or actual).
    TooLarge,
    /// The connection failed while the body was being read.
    Io(String),
    /// The body did not arrive within the time limit.
    TimedOut,
}

/// After refusing an oversized body, keep reading (and discarding) this much
/// more, so that a client still writing its request reads the 413 instead of a
/// broken pipe. Past it, or past `DRAIN_TIME`, the connection is dropped.
const DRAIN_CAP: usize = 64 * 1024 * 1024;
const DRAIN_TIME: Duration = Duration::from_secs(30);

fn drain_later(mut body: hyper::body::Incoming) {
    tokio::spawn(async move {
        let drain = async {
            let mut seen = 0usize;
            while let Some(Ok(frame)) = body.frame().await {
                seen += frame.data_ref().map_or(0, Bytes::len);
                if seen > DRAIN_CAP {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(DRAIN_TIME, drain).await;
    });
}

/// Read a whole request body of at most `limit` bytes. A `Content-Length` above
/// the limit is refused before anything is buffered.
pub async fn read_limited(
    mut body: hyper::body::Incoming,
    limit: usize,
) -> Result<Bytes, ReadError> {
    use hyper::body::Body as _;
    let declared = body.size_hint().lower();
    if declared > limit as u64 {
        drain_later(body);
        return Err(ReadError::TooLarge);
    }
    // Keep the data in pieces as it arrives and join them once at the end:
    // memory follows the data received. Reserving the declared length instead
    // let every slow client hold the whole limit, and growing one buffer leaves
    // the smaller ones it outgrew behind. Small frames (a chunked body may
    // send a byte at a time) are gathered into pieces of at least `PIECE`.
    const PIECE: usize = 16 * 1024;
    let mut frames: Vec<Bytes> = Vec::new();
    let mut small: Vec<u8> = Vec::new();
    let mut received = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ReadError::Io(e.to_string()))?;
        if let Ok(data) = frame.into_data() {
            received += data.len();
            if received > limit {
                drain_later(body);
                return Err(ReadError::TooLarge);
            }
            if data.len() >= PIECE {
                if !small.is_empty() {
                    frames.push(Bytes::from(std::mem::take(&mut small)));
                }
                frames.push(data);
            } else {
                if small.is_empty() {
                    small.reserve_exact(PIECE);
                }
                small.extend_from_slice(&data);
                if small.len() >= PIECE {
                    frames.push(Bytes::from(std::mem::take(&mut small)));
                }
            }
        }
    }
    if !small.is_empty() {
        frames.push(Bytes::from(small));
    }
    Ok(match frames.len() {
        0 => Bytes::new(),
        1 => frames.pop().expect("one frame"),
        _ => {
            let mut joined = Vec::with_capacity(received);
            for frame in &frames {
                joined.extend_from_slice(frame);
            }
            Bytes::from(joined)
        }
    })
}
