//! `beam_feedback_report`: a structured report returned to the caller (never
//! uploaded), optionally with a local evidence bundle.
//!
//! A report reads only what it may: evidence files that resolve (after links)
//! inside the workspace root and are regular files, within a per-item and a
//! per-report byte budget (`evidence`); and it writes only under the root's
//! private `.lake/beam-feedback/` (`bundle`). Every read and write runs off
//! the runtime.
//!
//! It stands beside `ops`, which calls it: it reads the tool's arguments and
//! the broker's façade, and answers typed errors ([`Error`]) that `ops`
//! turns into the tool error, as it does the broker's.

mod bundle;
mod evidence;
mod redact;
mod render;

use std::path::{Component, Path, PathBuf};

use bundle::Entry;
use evidence::gather_evidence;
use redact::Redactor;
use render::{render, slug};

use crate::broker::{self, Broker, Root};
use crate::identity;
use crate::results::{
    FeedbackCollected, FeedbackEvidence, FeedbackMetadata, FeedbackResult, Truncated,
};
use crate::safe_fs::{self, Dir, FsError};
use crate::surface::{BeamFeedbackReportArgs, Bundle};

/// Why a report could not be made: facts, worded for agents by `ops`.
#[derive(Debug)]
pub enum Error {
    /// The workspace root did not resolve.
    Broker(broker::Error),
    /// `bundle_dir` names no folder under `base` (the feedback folder).
    BundleDir {
        given: String,
        base: PathBuf,
        problem: BundleDirProblem,
    },
    /// The bundle could not be written.
    Bundle(FsError),
    /// The report did not survive its walk as JSON for redaction.
    Redact(serde_json::Error),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BundleDirProblem {
    /// An absolute path outside the feedback folder.
    Outside,
    /// A `.`, `..` or root component.
    NotPlainNames,
}

impl From<broker::Error> for Error {
    fn from(error: broker::Error) -> Self {
        Error::Broker(error)
    }
}

/// Where bundles go, relative to the root.
const BUNDLE_BASE: &str = ".lake/beam-feedback";

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The bundle folder below `<root>/.lake/beam-feedback`, from `bundle_dir`
/// (relative to that folder, or absolute inside it; plain names only).
fn bundle_subdir(root: &Root, given: Option<&str>) -> Result<PathBuf, Error> {
    let Some(given) = given else {
        return Ok(PathBuf::new());
    };
    let base = root.path().join(BUNDLE_BASE);
    let refuse = |problem| Error::BundleDir {
        given: given.to_owned(),
        base: base.clone(),
        problem,
    };
    let rel = if Path::new(given).is_absolute() {
        Path::new(given)
            .strip_prefix(&base)
            .map_err(|_| refuse(BundleDirProblem::Outside))?
    } else {
        Path::new(given)
    };
    if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(refuse(BundleDirProblem::NotPlainNames));
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

/// The report `args` ask for, its bundle written if they ask for one.
pub async fn report(
    broker: &Broker,
    args: &BeamFeedbackReportArgs,
) -> Result<FeedbackResult, Error> {
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
    // Rendering and redacting a MiB of evidence is CPU work: a blocking
    // thread's, not the runtime's that answers every other request.
    let owned = args.clone();
    let result = tokio::task::spawn_blocking(move || {
        compose(&owned, metadata, evidence, collected, warnings, truncated)
    })
    .await
    .expect("composing a report does not panic");
    let mut result = result?;
    if args.bundle != Bundle::None {
        // Its files are rendered with it, off the runtime (a pretty report.json
        // of a MiB of evidence is CPU work).
        let report = result.clone();
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
            let entries = bundle_entries(&report);
            let folder = bundle_folder(&root_path, &bundle_rel)?;
            if zip {
                bundle::write_zip(&folder, &stem, &entries)
            } else {
                bundle::write_dir(&folder, &stem, &entries)
            }
        })
        .await;
        let target = written.map_err(Error::Bundle)?;
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

/// A bundle's files: the report as Markdown and as JSON, and each evidence
/// item's text.
fn bundle_entries(result: &FeedbackResult) -> Vec<Entry> {
    let mut entries = vec![
        Entry {
            name: "report.md".into(),
            bytes: result.markdown.clone().into_bytes(),
        },
        Entry {
            name: "report.json".into(),
            bytes: serde_json::to_vec_pretty(result).unwrap_or_default(),
        },
    ];
    for (i, item) in result.evidence.iter().enumerate() {
        let name = bundle::safe_name(&item.name);
        entries.push(Entry {
            name: format!("evidence-{}-{name}.txt", i + 1),
            bytes: item.content.as_bytes().to_vec(),
        });
    }
    entries
}

/// The report from its parts: its Markdown rendered, every string redacted
/// if `args` ask.
fn compose(
    args: &BeamFeedbackReportArgs,
    metadata: FeedbackMetadata,
    evidence: Vec<FeedbackEvidence>,
    collected: Option<FeedbackCollected>,
    warnings: Vec<String>,
    truncated: Option<Truncated>,
) -> Result<FeedbackResult, Error> {
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
    Ok(result)
}

/// The report with every string redacted, keys left as they are (see
/// [`Redactor::value`]): the typed report is walked as the JSON it is.
fn redacted(redactor: &Redactor, report: FeedbackResult) -> Result<FeedbackResult, Error> {
    let mut value = serde_json::to_value(report).map_err(Error::Redact)?;
    redactor.value(&mut value);
    serde_json::from_value(value).map_err(Error::Redact)
}
