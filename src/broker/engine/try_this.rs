//! Lean's "Try this" suggestions, read from its messages: the text each
//! suggestion puts in place and the range it replaces. One reading for every
//! tool that shows them (diagnostic items of `lean_sync`, `lean_suggest`).
//!
//! What Lean 4.35 sends (recorded on the test server, see
//! `tests/fixtures/payloads/diagnostic-categories.json`): an information
//! message `Try this:\n  [apply] exact N.add_zero a` at the tactic, with
//! neither a `code` nor a tag nor `data` — the wording is Lean's only mark
//! of it — and a quickfix code action of its `tryThisProvider` (title
//! `Try this: exact N.add_zero a`) whose edit replaces the tactic. The
//! message's range is where Lean reports it; for most tactics (`exact?`)
//! that is the edit's range too, but `show_term` reports at its keyword
//! while its code action's edit spans the whole tactic, so a message-read
//! edit is only as wide as the message's range (`textDocument/codeAction`
//! gives the exact span).

use crate::lsp::protocol::Diagnostic;
use crate::results::{Range, TextEdit};
use lsp_types::DiagnosticSeverity;

/// Whether a message is a "Try this" (one suggestion) or "Try these"
/// (several) of Lean's `TryThis`.
pub fn says_try_this(text: &str) -> bool {
    text.starts_with("Try this") || text.starts_with("Try these")
}

/// The suggestions a "Try this" message holds, as the text each would put
/// in place. Lean 4.35 writes `Try this:` and, indented by two, `[apply] `
/// and the suggestion (its later lines indented alike); several are items
/// of a `Try these:` list (`• [apply] …`); a remark after a suggestion is
/// Lean comment lines (`-- …`), not part of it. Older Lean wrote
/// `Try this: text` on one line.
pub fn texts(message: &str) -> Vec<String> {
    let Some((head, body)) = message.split_once('\n') else {
        return message
            .strip_prefix("Try this: ")
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| vec![t.to_owned()])
            .unwrap_or_default();
    };
    if !matches!(head.trim_end(), "Try this:" | "Try these:") {
        return Vec::new();
    }
    let mut items: Vec<(usize, Vec<&str>)> = Vec::new();
    for line in body.lines() {
        let trimmed = line.trim_start();
        let item = trimmed.strip_prefix("• ").unwrap_or(trimmed);
        if let Some(first) = item.strip_prefix("[apply] ") {
            // Later lines of the item are indented as far as its `[apply]`.
            let indent = line[..line.len() - item.len()].chars().count();
            items.push((indent, vec![first]));
        } else if let Some((indent, lines)) = items.last_mut() {
            let blank = line.len() - trimmed.len();
            lines.push(&line[blank.min(*indent)..]);
        }
    }
    items
        .into_iter()
        .filter_map(|(_, mut lines)| {
            while lines.len() > 1
                && lines
                    .last()
                    .is_some_and(|l| l.trim().is_empty() || l.trim_start().starts_with("--"))
            {
                lines.pop();
            }
            let text = lines.join("\n");
            let text = text.trim_end();
            (!text.is_empty()).then(|| text.to_owned())
        })
        .collect()
}

/// The edits a diagnostic suggests: for an information "Try this", each
/// suggestion as the text that replaces the message's range (Lean's range,
/// 0-based; see the module's note on `show_term`). Empty for any other
/// diagnostic.
pub fn suggestions(diagnostic: &Diagnostic) -> Vec<TextEdit> {
    if diagnostic.severity != DiagnosticSeverity::INFORMATION || !says_try_this(&diagnostic.message)
    {
        return Vec::new();
    }
    let r = diagnostic.range;
    let range = Range::new(
        (r.start.line, r.start.character),
        (r.end.line, r.end.character),
    );
    texts(&diagnostic.message)
        .into_iter()
        .map(|new_text| TextEdit { range, new_text })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// The diagnostics Lean 4.35 published for the categories fixture.
    pub(crate) fn recorded() -> Vec<Diagnostic> {
        let all: Value = serde_json::from_str(include_str!(
            "../../../tests/fixtures/payloads/diagnostic-categories.json"
        ))
        .unwrap();
        all["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| Diagnostic::from_value(d).unwrap())
            .collect()
    }

    fn with_message(d: &[Diagnostic], start: &str) -> Diagnostic {
        d.iter()
            .find(|d| d.message.starts_with(start))
            .unwrap_or_else(|| panic!("no message {start:?}"))
            .clone()
    }

    #[test]
    fn messages_lean_recorded_read_as_their_edits() {
        let d = recorded();
        let exact = with_message(&d, "Try this:\n  [apply] exact uses_sorry");
        assert_eq!(
            suggestions(&exact),
            [TextEdit {
                range: Range::new((24, 2), (24, 8)),
                new_text: "exact uses_sorry a".into()
            }],
            "exact?: the range of `exact?`, as its code action's"
        );
        let shown = with_message(&d, "Try this:\n  [apply] exact N.add_zero");
        assert_eq!(
            suggestions(&shown),
            [TextEdit {
                range: Range::new((21, 2), (21, 11)),
                new_text: "exact N.add_zero a".into()
            }],
            "show_term: Lean's message range (its keyword)"
        );
        // The unused-variable hint shows `[apply] _unused` too, but it is
        // a linter's warning, not a suggestion.
        let unused = with_message(&d, "Variable name `unused`");
        assert!(suggestions(&unused).is_empty());
        let check = with_message(&d, "Fix.one : N");
        assert!(suggestions(&check).is_empty());
    }

    #[test]
    fn suggestion_texts() {
        for (message, expected) in [
            ("Try this:\n  [apply] exact h", vec!["exact h"]),
            ("Try this: exact h", vec!["exact h"]),
            (
                "Try these:\n  • [apply] exact a\n  • [apply] exact b",
                vec!["exact a", "exact b"],
            ),
            (
                "Try this:\n  [apply] refine ⟨?_, ?_⟩\n  -- Remaining subgoals:\n  -- ⊢ p",
                vec!["refine ⟨?_, ?_⟩"],
            ),
            (
                "Try this:\n  [apply] calc a = b := h\n    _ = c := g",
                vec!["calc a = b := h\n  _ = c := g"],
            ),
            ("Try this:\n", vec![]),
            ("Try this: ", vec![]),
            ("unknown identifier", vec![]),
            ("Hint: try this:\n  [apply] x", vec![]),
        ] {
            assert_eq!(texts(message), expected, "{message:?}");
        }
    }

    #[test]
    fn only_information_offers_suggestions() {
        let at = json!({"start": {"line": 3, "character": 2}, "end": {"line": 3, "character": 8}});
        let warning = Diagnostic::from_value(
            &json!({"severity": 2, "range": at, "message": "Try this:\n  [apply] exact h"}),
        )
        .unwrap();
        assert!(suggestions(&warning).is_empty());
    }
}
