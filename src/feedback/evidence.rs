//! The evidence of a report: files read only when they resolve (after
//! links) inside the workspace root and are regular files, within a per-item
//! and a per-report byte budget, off the runtime.

use std::path::Path;

use crate::broker::Root;
use crate::results::{FeedbackEvidence, Truncated};
use crate::safe_fs::{self, FsError, Links, Oversize};
use crate::surface::EvidenceItem;

/// Evidence items per report; more are left out (with a warning).
const MAX_EVIDENCE_ITEMS: usize = 32;
/// Bytes read from one evidence file.
const EVIDENCE_CAP: u64 = 256 * 1024;
/// Bytes read from evidence files in one report.
const EVIDENCE_BUDGET: u64 = 1024 * 1024;

/// Read an evidence file: it must resolve, after links, inside the root and
/// be a regular file; at most `cap` bytes are read. Blocking.
fn read_evidence_blocking(root: &Path, path: &str, cap: u64) -> Result<safe_fs::Contents, String> {
    let given = Path::new(path);
    let full = if given.is_absolute() {
        given.to_path_buf()
    } else {
        root.join(given)
    };
    let canonical = full
        .canonicalize()
        .map_err(|e| format!("cannot resolve it ({e})"))?;
    if !canonical.starts_with(root) {
        return Err(format!(
            "it resolves to {}, outside the workspace root; only files inside the root are read",
            canonical.display()
        ));
    }
    safe_fs::read_regular_blocking(&canonical, Links::Refuse, cap, Oversize::Truncate)
        .map_err(|e| e.to_string())
}

/// The evidence items of a report, files read within the caps. A file that
/// may not be read leaves its item without file content and a reason in the
/// item and in `warnings`.
pub(super) async fn gather_evidence(
    root: &Root,
    items: &[EvidenceItem],
    warnings: &mut Vec<String>,
) -> (Vec<FeedbackEvidence>, Option<Truncated>) {
    let mut cut = Truncated {
        fields: 0,
        items: items.len().saturating_sub(MAX_EVIDENCE_ITEMS),
        bytes: 0,
        limit: EVIDENCE_BUDGET as usize,
    };
    if items.len() > MAX_EVIDENCE_ITEMS {
        warnings.push(format!(
            "{} evidence items left out: at most {MAX_EVIDENCE_ITEMS} per report",
            items.len() - MAX_EVIDENCE_ITEMS
        ));
    }
    let mut budget = EVIDENCE_BUDGET;
    let mut out = Vec::new();
    for item in items.iter().take(MAX_EVIDENCE_ITEMS) {
        let mut v = FeedbackEvidence {
            name: item.name.clone(),
            path: item.path.clone(),
            truncated: None,
            truncation: None,
            refused: None,
            content: String::new(),
        };
        let mut content = item.content.clone().unwrap_or_default();
        cut.bytes += content.len();
        if let Some(path) = &item.path {
            let cap = EVIDENCE_CAP.min(budget);
            let read = if cap == 0 {
                Err(format!(
                    "the report's evidence budget of {EVIDENCE_BUDGET} bytes is spent"
                ))
            } else {
                let (base, owned) = (root.path().to_path_buf(), path.clone());
                safe_fs::off_runtime(root.path(), "read evidence under", move || {
                    Ok(read_evidence_blocking(&base, &owned, cap))
                })
                .await
                .unwrap_or_else(|e: FsError| Err(e.to_string()))
            };
            match read {
                Ok(file) => {
                    budget -= file.bytes.len() as u64;
                    cut.bytes += usize::try_from(file.size.max(file.bytes.len() as u64))
                        .unwrap_or(usize::MAX);
                    cut.fields += usize::from(file.truncated);
                    if !content.is_empty() {
                        content.push('\n');
                    }
                    content.push_str(&String::from_utf8_lossy(&file.bytes));
                    v.truncated = Some(file.truncated);
                    if file.truncated {
                        let why = if cap < EVIDENCE_CAP {
                            format!("the report's evidence budget of {EVIDENCE_BUDGET} bytes")
                        } else {
                            format!("the per-item cap of {EVIDENCE_CAP} bytes")
                        };
                        let note = format!(
                            "truncated to the first {} of {} bytes by {why}",
                            file.bytes.len(),
                            file.size
                        );
                        warnings.push(format!("evidence {path}: {note}"));
                        v.truncation = Some(note);
                    }
                }
                Err(why) => {
                    cut.fields += usize::from(cap == 0);
                    warnings.push(format!("evidence {path}: not read: {why}"));
                    v.refused = Some(why);
                }
            }
        }
        v.content = content;
        out.push(v);
    }
    (out, (cut.fields + cut.items > 0).then_some(cut))
}
