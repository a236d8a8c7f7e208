//! `beam_feedback_report`: a structured report returned to the caller (never
//! uploaded), optionally with a local evidence bundle.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::bundle::{self, Entry};
use super::redact::Redactor;
use crate::broker::Broker;
use crate::broker::workspace::Root;
use crate::identity;
use crate::surface::{BeamFeedbackReportArgs, Bundle, ErrorCode, ToolError, ToolOutcome};

/// Evidence files are read up to this size.
const EVIDENCE_CAP: u64 = 256 * 1024;

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Project context of a workspace, from files and the cached runtime only: a
/// report never starts Lean.
fn collect(broker: &Broker, root: &Root, warnings: &mut Vec<String>) -> Value {
    let toolchain = std::fs::read_to_string(root.path().join("lean-toolchain"))
        .map(|t| t.trim().to_string())
        .ok();
    if toolchain.is_none() {
        warnings.push("the workspace has no readable lean-toolchain file".into());
    }
    let lakefiles: Vec<&str> = ["lakefile.lean", "lakefile.toml"]
        .into_iter()
        .filter(|f| root.path().join(f).is_file())
        .collect();
    let runtime = broker.cached(root);
    if runtime.is_none() {
        warnings.push("no runtime is cached for this workspace, so there are no live stats or open files (a report never starts Lean)".into());
    }
    json!({
        "root": root.display(),
        "toolchain": toolchain,
        "lakefiles": lakefiles,
        "serverCommand": broker.launcher().describe(root),
        "runtime": runtime.as_ref().map(|rt| rt.stats()),
        "openFiles": runtime.as_ref().map(|rt| rt.open_documents()),
    })
}

fn read_evidence(root: &Root, path: &str, warnings: &mut Vec<String>) -> Option<(String, bool)> {
    let p = Path::new(path);
    let full: PathBuf = if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.path().join(p)
    };
    let file = match std::fs::File::open(&full) {
        Ok(f) => f,
        Err(e) => {
            warnings.push(format!("evidence {path}: cannot read it ({e})"));
            return None;
        }
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::new();
    use std::io::Read;
    if let Err(e) = file.take(EVIDENCE_CAP).read_to_end(&mut bytes) {
        warnings.push(format!("evidence {path}: read failed ({e})"));
        return None;
    }
    let truncated = len > EVIDENCE_CAP;
    if truncated {
        warnings.push(format!(
            "evidence {path}: truncated to {EVIDENCE_CAP} of {len} bytes"
        ));
    }
    Some((String::from_utf8_lossy(&bytes).into_owned(), truncated))
}

fn section(md: &mut String, title: &str, body: &str) {
    md.push_str(&format!("\n## {title}\n\n{}\n", body.trim_end()));
}

fn render(
    args: &BeamFeedbackReportArgs,
    metadata: &Value,
    evidence: &[Value],
    collected: Option<&Value>,
) -> String {
    let mut md = format!("# {}\n\n", args.title.trim());
    md.push_str("| field | value |\n|---|---|\n");
    for key in ["kind", "severity", "client_request_id", "server", "created"] {
        if let Some(v) = metadata.get(key).filter(|v| !v.is_null()) {
            let shown = v
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
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
        let name = item["name"].as_str().unwrap_or("evidence");
        let content = item["content"].as_str().unwrap_or("");
        section(
            &mut md,
            &format!("Evidence: {name}"),
            &format!("```\n{content}\n```"),
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

pub fn report(broker: &Broker, args: &BeamFeedbackReportArgs) -> ToolOutcome {
    let root = broker.resolve_root(&args.workspace)?;
    let mut warnings = Vec::new();
    let collected = (!args.confidential).then(|| collect(broker, &root, &mut warnings));
    let evidence: Vec<Value> = args
        .evidence
        .iter()
        .map(|item| {
            let mut v = json!({ "name": item.name });
            let mut content = item.content.clone().unwrap_or_default();
            if let Some(path) = &item.path {
                v["path"] = Value::String(path.clone());
                if let Some((text, truncated)) = read_evidence(&root, path, &mut warnings) {
                    if !content.is_empty() {
                        content.push('\n');
                    }
                    content.push_str(&text);
                    v["truncated"] = Value::Bool(truncated);
                }
            }
            v["content"] = Value::String(content);
            v
        })
        .collect();
    let metadata = json!({
        "title": args.title,
        "kind": args.kind.map(|k| k.as_str()),
        "severity": args.severity.map(|s| s.as_str()),
        "tags": args.tags,
        "client_request_id": args.client_request_id,
        "server": format!("{} {}", identity::NAME, identity::VERSION),
        "created": unix_now(),
        "confidential": args.confidential,
        "redacted": args.redact,
        "uploaded": false,
    });
    let mut markdown = render(args, &metadata, &evidence, collected.as_ref());
    let mut result = Map::new();
    result.insert("metadata".into(), metadata);
    result.insert("evidence".into(), Value::Array(evidence));
    if args.include_collected {
        if let Some(c) = &collected {
            result.insert("collected".into(), c.clone());
        }
    }
    result.insert("collection_warnings".into(), json!(warnings));
    let mut result = Value::Object(result);
    if args.redact {
        let redactor = Redactor::from_env();
        markdown = redactor.text(&markdown);
        redactor.value(&mut result);
    }
    result["markdown"] = Value::String(markdown.clone());

    if args.bundle != Bundle::None {
        let base = match &args.bundle_dir {
            Some(dir) if Path::new(dir).is_absolute() => PathBuf::from(dir),
            Some(dir) => {
                return Err(ToolError::new(
                    ErrorCode::InvalidInput,
                    format!("bundle_dir {dir:?} must be an absolute path"),
                )
                .with_data(json!({ "field": "bundle_dir", "value": dir })));
            }
            // A confidential bundle stays out of the project (and its path out
            // of the result's workspace context).
            None if args.confidential => std::env::temp_dir().join("beam-feedback"),
            None => root.path().join(".lake/beam-feedback"),
        };
        std::fs::create_dir_all(&base).map_err(|e| {
            ToolError::new(
                ErrorCode::InvalidInput,
                format!("cannot create bundle folder {}: {e}", base.display()),
            )
        })?;
        let mut entries = vec![
            Entry {
                name: "report.md".into(),
                bytes: markdown.into_bytes(),
            },
            Entry {
                name: "report.json".into(),
                bytes: serde_json::to_vec_pretty(&result).unwrap_or_default(),
            },
        ];
        for (i, item) in result["evidence"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let name = bundle::safe_name(item["name"].as_str().unwrap_or("evidence"));
            entries.push(Entry {
                name: format!("evidence-{}-{name}.txt", i + 1),
                bytes: item["content"].as_str().unwrap_or("").as_bytes().to_vec(),
            });
        }
        let title = result["metadata"]["title"].as_str().unwrap_or("report");
        let stem = format!("beam-feedback-{}-{}", unix_now(), slug(title));
        let zip = args.bundle == Bundle::Zip;
        let mut target = base.join(if zip {
            format!("{stem}.zip")
        } else {
            stem.clone()
        });
        let mut n = 2;
        while target.exists() {
            target = base.join(if zip {
                format!("{stem}-{n}.zip")
            } else {
                format!("{stem}-{n}")
            });
            n += 1;
        }
        let written = if zip {
            bundle::write_zip(&target, &entries)
        } else {
            bundle::write_dir(&target, &entries)
        };
        written.map_err(|e| {
            ToolError::new(
                ErrorCode::InternalError,
                format!("cannot write the bundle {}: {e}", target.display()),
            )
        })?;
        let key = if zip { "zip_path" } else { "bundle_dir" };
        result[key] = Value::String(target.to_string_lossy().into_owned());
    }
    if !args.confidential {
        result["workspace"] = root.descriptor();
    }
    Ok(result)
}
