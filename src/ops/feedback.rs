//! `beam_feedback_report`: a structured report returned to the caller (never
//! uploaded), optionally with a local evidence bundle.
//!
//! A report reads only what it may: evidence files that resolve (after links)
//! inside the workspace root and are regular files, within a per-item and a
//! per-report byte budget; and it writes only under the root's private
//! `.lake/beam-feedback/`. Every read and write runs off the runtime.

use std::path::{Component, Path, PathBuf};

use serde_json::json;

use super::Answer;
use super::bundle::{self, Entry};
use super::redact::Redactor;
use crate::broker::{Broker, Root};
use crate::identity;
use crate::results::{
    FeedbackCollected, FeedbackEvidence, FeedbackMetadata, FeedbackResult, Truncated,
};
use crate::safe_fs::{self, Dir, FsError, Links, Oversize};
use crate::surface::{BeamFeedbackReportArgs, Bundle, ErrorCode, EvidenceItem, ToolError};

/// Evidence items per report; more are left out (with a warning).
const MAX_EVIDENCE_ITEMS: usize = 32;
/// Bytes read from one evidence file.
const EVIDENCE_CAP: u64 = 256 * 1024;
/// Bytes read from evidence files in one report.
const EVIDENCE_BUDGET: u64 = 1024 * 1024;

/// Where bundles go, relative to the root.
const BUNDLE_BASE: &str = ".lake/beam-feedback";

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

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
async fn gather_evidence(
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

/// The bundle folder below `<root>/.lake/beam-feedback`, from `bundle_dir`
/// (relative to that folder, or absolute inside it; plain names only).
fn bundle_subdir(root: &Root, given: Option<&str>) -> Result<PathBuf, ToolError> {
    let Some(given) = given else {
        return Ok(PathBuf::new());
    };
    let base = root.path().join(BUNDLE_BASE);
    let refuse = |why: &str| {
        ToolError::new(
            ErrorCode::InvalidInput,
            format!(
                "bundle_dir {given:?} {why}; bundles are written only under {}",
                base.display()
            ),
        )
        .with_data(json!({ "field": "bundle_dir", "value": given, "base": base.to_string_lossy() }))
    };
    let rel = if Path::new(given).is_absolute() {
        Path::new(given)
            .strip_prefix(&base)
            .map_err(|_| refuse("is not inside the workspace's feedback folder"))?
    } else {
        Path::new(given)
    };
    if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(refuse(
            "must name a folder by plain names (no `.`, `..` or root)",
        ));
    }
    Ok(rel.to_path_buf())
}

/// The private bundle folder: `<root>/.lake/beam-feedback/<rel>`, reached
/// without following a link, created 0700 (the feedback folder made 0700 if
/// it was not). Blocking.
fn bundle_folder(root: &Path, rel: &Path) -> Result<Dir, FsError> {
    let lake = Dir::open(root)?.walk(Path::new(".lake"), Some(0o755))?;
    let base = lake.subdir(std::ffi::OsStr::new("beam-feedback"), Some(0o700))?;
    base.set_mode(0o700)?;
    base.walk(rel, Some(0o700))
}

fn section(md: &mut String, title: &str, body: &str) {
    md.push_str(&format!("\n## {title}\n\n{}\n", body.trim_end()));
}

fn render(
    args: &BeamFeedbackReportArgs,
    metadata: &FeedbackMetadata,
    evidence: &[FeedbackEvidence],
    collected: Option<&FeedbackCollected>,
) -> String {
    let mut md = format!("# {}\n\n", args.title.trim());
    md.push_str("| field | value |\n|---|---|\n");
    let created = metadata.created.to_string();
    let fields = [
        ("kind", metadata.kind.as_deref()),
        ("severity", metadata.severity.as_deref()),
        ("client_request_id", metadata.client_request_id.as_deref()),
        ("server", Some(metadata.server.as_str())),
        ("created", Some(created.as_str())),
    ];
    for (key, value) in fields {
        if let Some(shown) = value {
            md.push_str(&format!("| {key} | {} |\n", shown.replace('|', "\\|")));
        }
    }
    if !args.tags.is_empty() {
        md.push_str(&format!("| tags | {} |\n", args.tags.join(", ")));
    }
    section(&mut md, "Summary", &args.summary);
    section(&mut md, "Reproduction", &args.reproduction);
    section(&mut md, "Expected", &args.expected);
    section(&mut md, "Actual", &args.actual);
    if let Some(impact) = &args.impact {
        section(&mut md, "Impact", impact);
    }
    if let Some(workaround) = &args.workaround {
        section(&mut md, "Workaround", workaround);
    }
    for (label, payload) in [("Request", &args.request), ("Response", &args.response)] {
        if let Some(p) = payload {
            let pretty = serde_json::to_string_pretty(p).unwrap_or_default();
            section(&mut md, label, &format!("```json\n{pretty}\n```"));
        }
    }
    for item in evidence {
        section(
            &mut md,
            &format!("Evidence: {}", item.name),
            &format!("```\n{}\n```", item.content),
        );
    }
    if let Some(c) = collected {
        let pretty = serde_json::to_string_pretty(c).unwrap_or_default();
        section(&mut md, "Environment", &format!("```json\n{pretty}\n```"));
    }
    md
}

fn slug(title: &str) -> String {
    let s: String = title
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let s: String = s
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    s.chars()
        .take(40)
        .collect::<String>()
        .trim_end_matches('-')
        .to_string()
}

pub async fn report(broker: &Broker, args: &BeamFeedbackReportArgs) -> Answer<FeedbackResult> {
    let root = broker.resolve_root(&args.workspace.root)?;
    let bundle_rel = bundle_subdir(&root, args.bundle_dir.as_deref())?;
    let mut warnings = Vec::new();
    let collected = if args.confidential {
        None
    } else {
        Some(broker.collect_for_report(&root, &mut warnings).await)
    };
    let (evidence, truncated) = gather_evidence(&root, &args.evidence, &mut warnings).await;
    let metadata = FeedbackMetadata {
        title: args.title.clone(),
        kind: args.kind.map(|k| k.as_str().to_owned()),
        severity: args.severity.map(|s| s.as_str().to_owned()),
        tags: args.tags.clone(),
        client_request_id: args.client_request_id.clone(),
        server: format!("{} {}", identity::NAME, identity::VERSION),
        created: unix_now(),
        confidential: args.confidential,
        redacted: args.redact,
        uploaded: false,
    };
    let mut markdown = render(args, &metadata, &evidence, collected.as_ref());
    let mut result = FeedbackResult {
        metadata,
        evidence,
        collected: collected.filter(|_| args.include_collected),
        collection_warnings: warnings,
        markdown: String::new(),
        bundle_dir: None,
        zip_path: None,
        workspace: None,
        truncated,
    };
    if args.redact {
        let redactor = Redactor::from_env();
        markdown = redactor.text(&markdown);
        result = redacted(&redactor, result)?;
    }
    result.markdown = markdown;

    if args.bundle != Bundle::None {
        let mut entries = vec![
            Entry {
                name: "report.md".into(),
                bytes: result.markdown.clone().into_bytes(),
            },
            Entry {
                name: "report.json".into(),
                bytes: serde_json::to_vec_pretty(&result).unwrap_or_default(),
            },
        ];
        for (i, item) in result.evidence.iter().enumerate() {
            let name = bundle::safe_name(&item.name);
            entries.push(Entry {
                name: format!("evidence-{}-{name}.txt", i + 1),
                bytes: item.content.as_bytes().to_vec(),
            });
        }
        let stem = format!(
            "beam-feedback-{}-{}",
            unix_now(),
            slug(&result.metadata.title)
        );
        let zip = args.bundle == Bundle::Zip;
        // Confidential reports too: the folder is private to the user, never
        // a shared temp directory.
        let root_path = root.path().to_path_buf();
        let written = safe_fs::off_runtime(root.path(), "write a bundle under", move || {
            let folder = bundle_folder(&root_path, &bundle_rel)?;
            if zip {
                bundle::write_zip(&folder, &stem, &entries)
            } else {
                bundle::write_dir(&folder, &stem, &entries)
            }
        })
        .await;
        let target = written.map_err(|e| match e {
            FsError::WrongType { .. } | FsError::Outside { .. } => super::errors::fs_error(&e),
            _ => ToolError::new(
                ErrorCode::InternalError,
                format!("cannot write the bundle: {e}"),
            )
            .with_data(json!({ "path": e.path().to_string_lossy(), "reason": e.reason() })),
        })?;
        let target = Some(target.to_string_lossy().into_owned());
        if zip {
            result.zip_path = target;
        } else {
            result.bundle_dir = target;
        }
    }
    if !args.confidential {
        result.workspace = Some(root.descriptor());
    }
    Ok(result)
}

/// The report with every string redacted, keys left as they are (see
/// [`Redactor::value`]): the typed report is walked as the JSON it is.
fn redacted(redactor: &Redactor, report: FeedbackResult) -> Answer<FeedbackResult> {
    let internal = |e: serde_json::Error| {
        ToolError::new(
            ErrorCode::InternalError,
            format!("could not redact the report: {e}"),
        )
    };
    let mut value = serde_json::to_value(report).map_err(internal)?;
    redactor.value(&mut value);
    serde_json::from_value(value).map_err(internal)
}
