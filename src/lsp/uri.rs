//! File path ↔ `file://` URI, with the exact escaping Lean uses.
//!
//! Lean (`System.Uri.pathToUri`) percent-encodes, byte by byte in UTF-8, the RFC 3986
//! reserved characters `; : ? # [ ] @ & = + $ , ! ' ( ) *`, plus `%`, space, control
//! characters, DEL and every non-ASCII byte, in upper-case hex, and leaves all other
//! ASCII (including `/ ~ < > " { } | \ ^` and backquote) as is. Producing the same
//! strings means a URI we open compares equal to one Lean generates for the same
//! file (e.g. in go-to-definition results), without normalizing either.

use std::path::{Path, PathBuf};

const HEX: &[u8; 16] = b"0123456789ABCDEF";

fn must_escape(b: u8) -> bool {
    const RESERVED: &[u8] = b";:?#[]@&=+$,!'()*% ";
    !(0x20..0x7F).contains(&b) || RESERVED.contains(&b)
}

/// `file://` URI of `path`. A relative path is first made absolute against the
/// current directory (lexically: no symlinks resolved, nothing canonicalized).
pub fn path_to_uri(path: &Path) -> String {
    let abs;
    let path = if path.is_absolute() {
        path
    } else {
        abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        &abs
    };
    let bytes = path_bytes(path);
    let mut out = String::with_capacity(bytes.len() + 16);
    out.push_str("file://");
    if bytes.first() != Some(&b'/') {
        out.push('/');
    }
    for &b in bytes.iter() {
        if must_escape(b) {
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 0xF)] as char);
        } else {
            out.push(b as char);
        }
    }
    out
}

/// The path of a `file://` URI (any host part ignored, `%HH` decoded; a `%` not
/// followed by two hex digits is kept literally, as Lean does). `None` for other
/// schemes and for a URI without a path.
pub fn uri_to_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    // Skip an authority (`file://host/path`); `file:///path` has an empty one.
    let path = &rest[rest.find('/')?..];
    let raw = path.as_bytes();
    let mut bytes = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let escaped = match raw.get(i..i + 3) {
            Some([b'%', h, l]) => hex_val(*h).zip(hex_val(*l)),
            _ => None,
        };
        match escaped {
            Some((h, l)) => {
                bytes.push(h << 4 | l);
                i += 3;
            }
            None => {
                bytes.push(raw[i]);
                i += 1;
            }
        }
    }
    Some(bytes_to_path(bytes))
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(unix)]
fn path_bytes(p: &Path) -> std::borrow::Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    std::borrow::Cow::Borrowed(p.as_os_str().as_bytes())
}

#[cfg(not(unix))]
fn path_bytes(p: &Path) -> std::borrow::Cow<'_, [u8]> {
    std::borrow::Cow::Owned(p.to_string_lossy().replace('\\', "/").into_bytes())
}

#[cfg(unix)]
fn bytes_to_path(bytes: Vec<u8>) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(std::ffi::OsString::from_vec(bytes))
}

#[cfg(not(unix))]
fn bytes_to_path(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(p: &str) -> String {
        let uri = path_to_uri(Path::new(p));
        assert_eq!(
            uri_to_path(&uri).as_deref(),
            Some(Path::new(p)),
            "{p} -> {uri}"
        );
        uri
    }

    #[test]
    fn plain_paths() {
        assert_eq!(
            roundtrip("/work/ws/Fix/Goals.lean"),
            "file:///work/ws/Fix/Goals.lean"
        );
        assert_eq!(
            roundtrip("/a/b-c_d.e~f/x.lean"),
            "file:///a/b-c_d.e~f/x.lean"
        );
    }

    #[test]
    fn spaces_and_reserved_characters() {
        assert_eq!(roundtrip("/my dir/A B.lean"), "file:///my%20dir/A%20B.lean");
        assert_eq!(
            roundtrip("/x/a;b:c?d#e[f]g@h&i=j+k$l,m!n'o(p)q*r%s.lean"),
            "file:///x/a%3Bb%3Ac%3Fd%23e%5Bf%5Dg%40h%26i%3Dj%2Bk%24l%2Cm%21n%27o%28p%29q%2Ar%25s.lean"
        );
        // Left alone by Lean, so by us.
        assert_eq!(
            roundtrip("/x/<a>\"{b}|\\^`.lean"),
            "file:///x/<a>\"{b}|\\^`.lean"
        );
        assert_eq!(roundtrip("/x/tab\there\u{7f}"), "file:///x/tab%09here%7F");
    }

    #[test]
    fn non_ascii_is_utf8_percent_encoded() {
        assert_eq!(
            roundtrip("/ws/Ünïcode/𝔽.lean"),
            "file:///ws/%C3%9Cn%C3%AFcode/%F0%9D%94%BD.lean"
        );
        assert_eq!(
            roundtrip("/ws/α₁ β.lean"),
            "file:///ws/%CE%B1%E2%82%81%20%CE%B2.lean"
        );
    }

    #[cfg(unix)]
    #[test]
    fn non_utf8_bytes_roundtrip() {
        use std::os::unix::ffi::OsStrExt;
        let p = Path::new(std::ffi::OsStr::from_bytes(b"/ws/\xff\xfe.lean"));
        let uri = path_to_uri(p);
        assert_eq!(uri, "file:///ws/%FF%FE.lean");
        assert_eq!(uri_to_path(&uri).as_deref(), Some(p));
    }

    #[test]
    fn decoding_is_lenient_like_lean() {
        assert_eq!(
            uri_to_path("file:///a%2fb%2Fc").unwrap(),
            Path::new("/a/b/c")
        );
        assert_eq!(uri_to_path("file:///100%").unwrap(), Path::new("/100%"));
        assert_eq!(uri_to_path("file:///a%zzb").unwrap(), Path::new("/a%zzb"));
        assert_eq!(uri_to_path("file:///a%4").unwrap(), Path::new("/a%4"));
        assert_eq!(
            uri_to_path("file://host/srv/x.lean").unwrap(),
            Path::new("/srv/x.lean")
        );
        assert_eq!(uri_to_path("untitled:Scratch-1"), None);
        assert_eq!(uri_to_path("file://"), None);
    }

    #[test]
    fn relative_paths_become_absolute() {
        let uri = path_to_uri(Path::new("Fix/Goals.lean"));
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(uri_to_path(&uri).unwrap(), cwd.join("Fix/Goals.lean"));
    }
}
