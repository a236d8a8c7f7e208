//! LSP base protocol framing: `Content-Length: N\r\n\r\n` + N bytes of JSON.

use std::fmt;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

/// Largest accepted body. Lean answers are big (a `references` over a library, a
/// semantic-tokens array) but never near this; anything larger is a garbled length.
pub const MAX_BODY: usize = 1 << 30;
/// Longest accepted header line (the only real headers are two short ones).
const MAX_HEADER_LINE: u64 = 8 * 1024;

/// Why reading a frame failed.
#[derive(Debug)]
pub enum FrameError {
    /// Clean end of stream between frames.
    Eof,
    /// The stream broke (or ended) inside a frame.
    Io(std::io::Error),
    /// The bytes do not follow the framing rules.
    Garbled(String),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Eof => f.write_str("end of stream"),
            FrameError::Io(e) => write!(f, "read error: {e}"),
            FrameError::Garbled(m) => f.write_str(m),
        }
    }
}

/// Read one frame and return its body. `line` is a scratch buffer reused across
/// calls.
pub async fn read_frame<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> Result<Vec<u8>, FrameError> {
    let mut content_length: Option<usize> = None;
    let mut first = true;
    loop {
        line.clear();
        let n = (&mut *reader)
            .take(MAX_HEADER_LINE)
            .read_until(b'\n', line)
            .await
            .map_err(FrameError::Io)?;
        if n == 0 {
            return Err(if first {
                FrameError::Eof
            } else {
                FrameError::Io(std::io::ErrorKind::UnexpectedEof.into())
            });
        }
        first = false;
        if line.last() != Some(&b'\n') {
            return Err(if n as u64 >= MAX_HEADER_LINE {
                FrameError::Garbled(format!("header line longer than {MAX_HEADER_LINE} bytes"))
            } else {
                FrameError::Io(std::io::ErrorKind::UnexpectedEof.into())
            });
        }
        let text = trim_line_end(line);
        if text.is_empty() {
            break;
        }
        let Some(colon) = text.iter().position(|&b| b == b':') else {
            return Err(FrameError::Garbled(format!(
                "header line without ':': {:?}",
                String::from_utf8_lossy(&text[..text.len().min(120)])
            )));
        };
        let (name, value) = (&text[..colon], &text[colon + 1..]);
        if name.eq_ignore_ascii_case(b"content-length") {
            let value = std::str::from_utf8(value).unwrap_or("").trim();
            let len: usize = value
                .parse()
                .map_err(|_| FrameError::Garbled(format!("bad Content-Length {value:?}")))?;
            if len > MAX_BODY {
                return Err(FrameError::Garbled(format!(
                    "Content-Length {len} exceeds {MAX_BODY}"
                )));
            }
            content_length = Some(len);
        }
        // Other headers (Content-Type) are ignored.
    }
    let len =
        content_length.ok_or_else(|| FrameError::Garbled("frame without Content-Length".into()))?;
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).await.map_err(FrameError::Io)?;
    Ok(body)
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && (line[end - 1] == b'\n' || line[end - 1] == b'\r') {
        end -= 1;
    }
    &line[..end]
}

/// The longest header [`put_header`] writes: `Content-Length: ` (16 bytes), 20
/// digits, `\r\n\r\n`.
pub const MAX_HEADER_LEN: usize = 40;

/// `buf` is `room` bytes of space followed by a body: write the body's header
/// at the end of that space and return where the frame starts.
///
/// # Panics
///
/// If `room` is less than the header's length ([`MAX_HEADER_LEN`] always fits).
pub fn put_header(buf: &mut [u8], room: usize) -> usize {
    let header = format!("Content-Length: {}\r\n\r\n", buf.len() - room);
    let start = room - header.len();
    buf[start..room].copy_from_slice(header.as_bytes());
    start
}

/// Write one frame (header then body; the caller flushes).
#[cfg(test)]
pub async fn write_frame<W: tokio::io::AsyncWrite + Unpin>(
    writer: &mut W,
    body: &[u8],
) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    let header = format!("Content-Length: {}\r\n\r\n", body.len());
    writer.write_all(header.as_bytes()).await?;
    writer.write_all(body).await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8]) -> (Vec<Vec<u8>>, FrameError) {
        let mut r = tokio::io::BufReader::new(input);
        let mut line = Vec::new();
        let mut out = Vec::new();
        loop {
            match read_frame(&mut r, &mut line).await {
                Ok(b) => out.push(b),
                Err(e) => return (out, e),
            }
        }
    }

    #[tokio::test]
    async fn reads_consecutive_frames_and_ignores_other_headers() {
        let input = b"Content-Length: 2\r\n\r\n{}content-length:7\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n[1,2,3]";
        let (got, end) = frames(input).await;
        assert_eq!(got, vec![b"{}".to_vec(), b"[1,2,3]".to_vec()]);
        assert!(matches!(end, FrameError::Eof));
    }

    #[tokio::test]
    async fn multibyte_bodies_are_counted_in_bytes() {
        let body = "{\"m\":\"⊢ 𝔽\"}".as_bytes();
        let mut input = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        input.extend_from_slice(body);
        let (got, _) = frames(&input).await;
        assert_eq!(got, vec![body.to_vec()]);
    }

    #[tokio::test]
    async fn garbled_input_is_reported() {
        let (_, e) = frames(b"Content-Length: x\r\n\r\n{}").await;
        assert!(
            matches!(e, FrameError::Garbled(ref m) if m.contains("bad Content-Length")),
            "{e}"
        );
        let (_, e) = frames(b"hello world\r\n\r\n").await;
        assert!(matches!(e, FrameError::Garbled(_)), "{e}");
        let (_, e) = frames(b"Content-Type: x\r\n\r\n{}").await;
        assert!(matches!(e, FrameError::Garbled(ref m) if m.contains("without Content-Length")));
        let long = vec![b'a'; 10_000];
        let (_, e) = frames(&long).await;
        assert!(
            matches!(e, FrameError::Garbled(ref m) if m.contains("longer")),
            "{e}"
        );
        let (_, e) = frames(b"Content-Length: 99999999999\r\n\r\n").await;
        assert!(
            matches!(e, FrameError::Garbled(ref m) if m.contains("exceeds")),
            "{e}"
        );
    }

    #[tokio::test]
    async fn truncated_frames_are_io_errors() {
        let (got, e) = frames(b"Content-Length: 10\r\n\r\n{}").await;
        assert!(got.is_empty());
        assert!(matches!(e, FrameError::Io(_)), "{e}");
        let (_, e) = frames(b"Content-Length: 10\r\n").await;
        assert!(matches!(e, FrameError::Io(_)), "{e}");
    }

    #[tokio::test]
    async fn put_header_frames_a_body_in_place() {
        let body = b"{\"a\":\"\xce\xbb\"}";
        let mut buf = vec![0u8; MAX_HEADER_LEN];
        buf.extend_from_slice(body);
        let start = put_header(&mut buf, MAX_HEADER_LEN);
        let (got, end) = frames(&buf[start..]).await;
        assert_eq!(got, vec![body.to_vec()]);
        assert!(matches!(end, FrameError::Eof));
        let longest = format!("Content-Length: {}\r\n\r\n", u64::MAX);
        assert_eq!(longest.len(), MAX_HEADER_LEN);
    }

    #[tokio::test]
    async fn write_then_read_roundtrip() {
        let mut buf = Vec::new();
        write_frame(&mut buf, b"{\"a\":1}").await.unwrap();
        write_frame(&mut buf, b"[]").await.unwrap();
        let (got, end) = frames(&buf).await;
        assert_eq!(got, vec![b"{\"a\":1}".to_vec(), b"[]".to_vec()]);
        assert!(matches!(end, FrameError::Eof));
    }
}
