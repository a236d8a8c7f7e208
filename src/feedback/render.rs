//! The report as Markdown: a metadata table, then one section per field,
//! evidence item and the collected environment.

use crate::results::{FeedbackCollected, FeedbackEvidence, FeedbackMetadata};
use crate::surface::BeamFeedbackReportArgs;

fn section(md: &mut String, title: &str, body: &str) {
    md.push_str(&format!("\n## {title}\n\n{}\n", body.trim_end()));
}

pub(super) fn render(
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

pub(super) fn slug(title: &str) -> String {
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
