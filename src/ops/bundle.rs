//! Evidence bundles of feedback reports, as a directory or a zip file, written
//! beside their final place and renamed into it, so none is ever seen half
//! written.

use std::io::Write;
use std::path::{Path, PathBuf};

/// One file of a bundle.
pub struct Entry {
    pub name: String,
    pub bytes: Vec<u8>,
}

fn temp_beside(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
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
        .collect();
    let cleaned = cleaned.trim_start_matches('.').to_string();
    if cleaned.is_empty() {
        "evidence".into()
    } else {
        cleaned
    }
}

/// Write `entries` as the directory `target` (which must not exist yet).
pub fn write_dir(target: &Path, entries: &[Entry]) -> std::io::Result<()> {
    let temp = temp_beside(target);
    let _ = std::fs::remove_dir_all(&temp);
    let result = (|| {
        std::fs::create_dir_all(&temp)?;
        for entry in entries {
            std::fs::write(temp.join(&entry.name), &entry.bytes)?;
        }
        std::fs::rename(&temp, target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&temp);
    }
    result
}

/// Write `entries` as the zip file `target` (stored, uncompressed).
pub fn write_zip(target: &Path, entries: &[Entry]) -> std::io::Result<()> {
    let temp = temp_beside(target);
    let result = (|| {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&temp)?);
        file.write_all(&zip_bytes(entries))?;
        file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&temp, target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
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
    fn zip_and_dir_bundles_are_written_whole() {
        let base = std::env::temp_dir().join(format!("beam-bundle-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let entries = vec![Entry {
            name: "report.md".into(),
            bytes: b"# hi".to_vec(),
        }];
        write_dir(&base.join("b"), &entries).unwrap();
        assert_eq!(std::fs::read(base.join("b/report.md")).unwrap(), b"# hi");
        write_zip(&base.join("b.zip"), &entries).unwrap();
        let zip = std::fs::read(base.join("b.zip")).unwrap();
        assert_eq!(&zip[..4], b"PK\x03\x04");
        let names: Vec<String> = std::fs::read_dir(&base)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.contains(".tmp-")), "{names:?}");
        let _ = std::fs::remove_dir_all(&base);
    }
}
