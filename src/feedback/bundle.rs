//! Evidence bundles of feedback reports, as a directory or a zip file. They
//! are written in a directory reached without following any link, under a
//! random temporary name created exclusively (`O_CREAT | O_EXCL |
//! O_NOFOLLOW`), private to the user (directories 0700, files 0600), and
//! renamed into a name nobody has taken, so none is ever seen half written
//! and nothing else is ever overwritten.

use std::ffi::OsStr;
use std::io::Write;
use std::path::PathBuf;

use crate::safe_fs::{self, Dir, Existing, FsError};

/// Names tried before giving up (`stem`, `stem-2`, …).
const NAME_ATTEMPTS: usize = 1000;

/// One file of a bundle.
pub struct Entry {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// A safe file name inside a bundle.
pub fn safe_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    let cleaned = cleaned.trim_start_matches('.').to_string();
    if cleaned.is_empty() {
        "evidence".into()
    } else {
        cleaned
    }
}

/// Rename the temporary `temp` in `dir` to the first free name of `stem`
/// (+ `ext`); the temporary is removed if none is free.
fn publish(dir: &Dir, temp: &str, stem: &str, ext: &str) -> Result<PathBuf, FsError> {
    for n in 1..=NAME_ATTEMPTS {
        let name = if n == 1 {
            format!("{stem}{ext}")
        } else {
            format!("{stem}-{n}{ext}")
        };
        match dir.rename(OsStr::new(temp), dir, OsStr::new(&name), Existing::Refuse) {
            Ok(()) => return Ok(dir.path().join(name)),
            Err(FsError::Io { error, .. }) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            }
            Err(e) => return Err(e),
        }
    }
    Err(FsError::Io {
        path: dir.path().join(stem),
        op: "find a free name for",
        error: std::io::Error::from(std::io::ErrorKind::AlreadyExists),
    })
}

/// Write `entries` as a new directory named after `stem` in `dir`; returns
/// its path.
pub fn write_dir(dir: &Dir, stem: &str, entries: &[Entry]) -> Result<PathBuf, FsError> {
    let temp = safe_fs::random_name(".beam-tmp-");
    let result = (|| {
        let staging = dir.create_dir_new(OsStr::new(&temp), 0o700)?;
        for entry in entries {
            let mut file = staging.create_new(OsStr::new(&entry.name), 0o600)?;
            file.write_all(&entry.bytes)
                .and_then(|()| file.sync_all())
                .map_err(|e| FsError::Io {
                    path: staging.path().join(&entry.name),
                    op: "write",
                    error: e,
                })?;
        }
        publish(dir, &temp, stem, "")
    })();
    if result.is_err() {
        let _ = dir.remove_tree(OsStr::new(&temp));
    }
    result
}

/// Write `entries` as a new zip file (stored, uncompressed) named after
/// `stem` in `dir`; returns its path.
pub fn write_zip(dir: &Dir, stem: &str, entries: &[Entry]) -> Result<PathBuf, FsError> {
    let temp = safe_fs::random_name(".beam-tmp-");
    let result = (|| {
        let mut file = dir.create_new(OsStr::new(&temp), 0o600)?;
        file.write_all(&zip_bytes(entries))
            .and_then(|()| file.sync_all())
            .map_err(|e| FsError::Io {
                path: dir.path().join(&temp),
                op: "write",
                error: e,
            })?;
        publish(dir, &temp, stem, ".zip")
    })();
    if result.is_err() {
        let _ = dir.remove_file(OsStr::new(&temp));
    }
    result
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

/// A zip archive with every entry stored: small evidence bundles gain little
/// from compression, and this keeps the format a page of code.
fn zip_bytes(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for entry in entries {
        let offset = out.len() as u32;
        let crc = crc32(&entry.bytes);
        let size = entry.bytes.len() as u32;
        let name = entry.name.as_bytes();
        // Local file header.
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        out.extend_from_slice(&20u16.to_le_bytes()); // version needed
        out.extend_from_slice(&0x0800u16.to_le_bytes()); // UTF-8 names
        out.extend_from_slice(&0u16.to_le_bytes()); // stored
        out.extend_from_slice(&0u32.to_le_bytes()); // time, date
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(name);
        out.extend_from_slice(&entry.bytes);
        // Central directory record.
        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&20u16.to_le_bytes()); // made by
        central.extend_from_slice(&20u16.to_le_bytes());
        central.extend_from_slice(&0x0800u16.to_le_bytes());
        central.extend_from_slice(&0u16.to_le_bytes());
        central.extend_from_slice(&0u32.to_le_bytes());
        central.extend_from_slice(&crc.to_le_bytes());
        central.extend_from_slice(&size.to_le_bytes());
        central.extend_from_slice(&size.to_le_bytes());
        central.extend_from_slice(&(name.len() as u16).to_le_bytes());
        central.extend_from_slice(&[0u8; 12]); // extra, comment, disk, attrs
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name);
    }
    let central_offset = out.len() as u32;
    let count = entries.len() as u16;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0u8; 4]); // disk numbers
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&central_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn zip_and_dir_bundles_are_written_whole_private_and_never_over_another() {
        use std::os::unix::fs::PermissionsExt;
        let base = std::env::temp_dir().join(format!("beam-bundle-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let dir = Dir::open(&base).unwrap();
        let entries = vec![Entry {
            name: "report.md".into(),
            bytes: b"# hi".to_vec(),
        }];
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let b = write_dir(&dir, "b", &entries).unwrap();
        assert_eq!(b, base.join("b"));
        assert_eq!(std::fs::read(base.join("b/report.md")).unwrap(), b"# hi");
        assert_eq!((mode(&b), mode(&b.join("report.md"))), (0o700, 0o600));
        let z = write_zip(&dir, "b", &entries).unwrap();
        assert_eq!(z, base.join("b.zip"));
        assert_eq!(mode(&z), 0o600);
        let zip = std::fs::read(&z).unwrap();
        assert_eq!(&zip[..4], b"PK\x03\x04");
        // Taken names are never overwritten: the next bundle gets `-2`.
        assert_eq!(
            write_zip(&dir, "b", &entries).unwrap(),
            base.join("b-2.zip")
        );
        assert_eq!(write_dir(&dir, "b", &entries).unwrap(), base.join("b-2"));
        assert_eq!(std::fs::read(&z).unwrap(), zip);
        let names: Vec<String> = std::fs::read_dir(&base)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.contains(".beam-tmp-")), "{names:?}");
        let _ = std::fs::remove_dir_all(&base);
    }
}
