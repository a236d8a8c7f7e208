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
    for (i, item) in evidence.iter().enumerate() {
        section(
            &mut md,
            &format!("Evidence: {}", item.name),
            &evidence_excerpt(i, &item.content),
        );
    }
    if let Some(c) = collected {
        let pretty = serde_json::to_string_pretty(c).unwrap_or_default();
        section(&mut md, "Environment", &format!("```json\n{pretty}\n```"));
    }
    md
}

/// Bytes of one evidence item quoted in the Markdown. The whole text is in
/// the result's `evidence[i].content` (and the bundle's evidence file):
/// quoting it again would double a report of a MiB of evidence, which an
/// agent's client reads twice more (text and structured forms).
const EXCERPT_BYTES: usize = 8 * 1024;

/// An evidence item's text as a fenced block, cut at [`EXCERPT_BYTES`] (on a
/// character boundary) with a line that says where the rest is.
fn evidence_excerpt(index: usize, content: &str) -> String {
    if content.len() <= EXCERPT_BYTES {
        return format!("```\n{content}\n```");
    }
    let mut cut = EXCERPT_BYTES;
    while !content.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "```\n{}\n```\n\n(the first {cut} of {} bytes; the whole text is evidence[{index}].content of the report, and its evidence-{}-….txt in a bundle)",
        &content[..cut],
        content.len(),
        index + 1
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_excerpts_are_cut_on_a_character_boundary_and_say_where_the_rest_is() {
        assert_eq!(evidence_excerpt(0, "short"), "```\nshort\n```");
        let long = format!("{}é{}", "a".repeat(EXCERPT_BYTES - 1), "b".repeat(100));
        let shown = evidence_excerpt(2, &long);
        assert!(shown.starts_with(&format!("```\n{}\n```", "a".repeat(EXCERPT_BYTES - 1))));
        assert!(shown.contains(&format!(
            "the first {} of {} bytes",
            EXCERPT_BYTES - 1,
            long.len()
        )));
        assert!(shown.contains("evidence[2].content") && shown.contains("evidence-3-"));
    }
}
