//! What Lean offers in place of a step's text: the "Try this" suggestions
//! of `exact?`, `apply?`, `simp?`, `rw?`… Lean 4.35 says each one twice, as
//! found on the test server: an information message at the tactic
//! (`Try this:\n  [apply] exact N.zero_add n`, with a remark such as
//! `apply?`'s `-- Remaining subgoals:` lines after it), and a quickfix code
//! action of its `tryThisProvider` (title `Try this: exact N.zero_add n`)
//! whose edit replaces the tactic by the suggestion alone. The code actions
//! are read first, since their edit is the text exactly; the messages are
//! read where Lean offers no action for the step. Pure functions over
//! Lean's answers, table-tested.

use serde_json::Value;

use super::text::{lsp_position, step_range};
use crate::results::Range;

/// One suggestion for a step: replace `range` of the step's text (0-based,
/// line 0 is the step's first line, as a message's `step_range`) by
/// `new_text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    pub range: Range,
    pub new_text: String,
}

impl Offer {
    /// The step's `text` with the offer applied; `None` when its range does
    /// not lie in the text.
    pub fn apply_to(&self, text: &str) -> Option<String> {
        let index = crate::lean_source::text::LineIndex::new(text);
        let at = |p: crate::results::Position| {
            index
                .offset(text, u64::from(p.line), u64::from(p.character))
                .ok()
        };
        let (start, end) = (at(self.range.start)?, at(self.range.end)?);
        (start <= end).then(|| format!("{}{}{}", &text[..start], self.new_text, &text[end..]))
    }
}

/// Whether a message is a "Try this" (one suggestion) or "Try these"
/// (several) of Lean's `TryThis` (the wording is Lean's only mark of it:
/// such messages carry neither a code nor a tag).
pub fn says_try_this(text: &str) -> bool {
    text.starts_with("Try this") || text.starts_with("Try these")
}

/// The suggestions a "Try this" message holds, as the text each would put
/// in place of the tactic. Lean 4.35 writes `Try this:` and, indented by
/// two, `[apply] ` and the suggestion (its later lines indented alike);
/// several suggestions are items of a `Try these:` list, each with its own
/// `[apply]`; a remark after a suggestion is Lean comment lines (`-- …`),
/// which are not part of it. Older Lean wrote `Try this: text` on one line.
pub fn from_message(message: &str) -> Vec<String> {
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
            // A remark after the suggestion: its trailing comment lines.
            while lines
                .last()
                .is_some_and(|l| l.trim().is_empty() || l.trim_start().starts_with("--"))
                && lines.len() > 1
            {
                lines.pop();
            }
            let text = lines.join("\n");
            let text = text.trim_end();
            (!text.is_empty()).then(|| text.to_owned())
        })
        .collect()
}

/// The "Try this" suggestions of a `textDocument/codeAction` answer about a
/// step's shadow that replace text of the step: its text runs from `start`
/// to `end` (shadow positions, with any text the broker put on the step's
/// line taken out by `unshift`). Each edit's range is made relative to the
/// step. An action offered twice is kept once.
pub fn from_code_actions(
    answer: &Value,
    start: (u32, u32),
    end: (u32, u32),
    unshift: impl Fn(&Value) -> Value,
) -> Vec<Offer> {
    let mut offers: Vec<Offer> = Vec::new();
    for action in answer.as_array().into_iter().flatten() {
        let title = action.get("title").and_then(Value::as_str).unwrap_or("");
        if !says_try_this(title) {
            continue;
        }
        let Some(edit) = action.get("edit") else {
            continue;
        };
        // `documentChanges` (what Lean sends) or `changes`: one edit of the
        // shadow, on the step.
        let mut edits: Vec<&Value> = edit
            .get("documentChanges")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .flat_map(|change| change.get("edits").and_then(Value::as_array))
            .flatten()
            .collect();
        edits.extend(
            edit.get("changes")
                .and_then(Value::as_object)
                .into_iter()
                .flat_map(|changes| changes.values())
                .flat_map(Value::as_array)
                .flatten(),
        );
        let [edit] = edits.as_slice() else {
            continue;
        };
        let (Some(new_text), Some(range)) = (
            edit.get("newText").and_then(Value::as_str),
            edit.get("range"),
        ) else {
            continue;
        };
        let range = unshift(&serde_json::json!({ "range": range }))["range"].clone();
        let (from, to) = (lsp_position(&range, "start"), lsp_position(&range, "end"));
        if from < start || to > end || from > to {
            continue;
        }
        let offer = Offer {
            range: step_range(&range, start),
            new_text: new_text.to_owned(),
        };
        if !offers.contains(&offer) {
            offers.push(offer);
        }
    }
    offers
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_are_read_as_lean_4_35_writes_them() {
        let cases: &[(&str, &[&str])] = &[
            // exact? (measured on the test server).
            (
                "Try this:\n  [apply] exact N.zero_add n",
                &["exact N.zero_add n"],
            ),
            // apply?: the remaining subgoals are a remark, not the text.
            (
                "Try this:\n  [apply] refine baz n ?_ ?_\n  -- Remaining subgoals:\n  -- ⊢ T n\n  -- ⊢ S n",
                &["refine baz n ?_ ?_"],
            ),
            // Several suggestions in one list.
            (
                "Try these:\n  • [apply] simp only [a]\n  • [apply] simp_all",
                &["simp only [a]", "simp_all"],
            ),
            // A suggestion of two lines keeps its own layout.
            (
                "Try this:\n  [apply] constructor\n  · exact h",
                &["constructor\n· exact h"],
            ),
            // Older Lean: on one line.
            ("Try this: exact foo", &["exact foo"]),
            // Not a suggestion.
            ("unknown tactic", &[]),
            ("Try this to display the actual theorem instances", &[]),
            ("Try this:\n", &[]),
        ];
        for (message, expected) in cases {
            assert_eq!(from_message(message), *expected, "{message:?}");
        }
        assert!(says_try_this("Try these:\n  • [apply] a"));
        assert!(!says_try_this("unsolved goals"));
    }

    fn action(title: &str, range: ((u32, u32), (u32, u32)), text: &str) -> Value {
        json!({
            "title": title,
            "kind": "quickfix",
            "edit": {"documentChanges": [{
                "textDocument": {"uri": "file:///s.lean", "version": 1},
                "edits": [{"newText": text, "range": {
                    "start": {"line": range.0.0, "character": range.0.1},
                    "end": {"line": range.1.0, "character": range.1.1},
                }}],
            }]},
        })
    }

    #[test]
    fn code_actions_on_the_step_are_its_offers_relative_to_it() {
        // The step `exact?` at (19, 2)..(19, 8), as apply? and a linter's
        // quickfix outside it answer (measured on the test server).
        let answer = json!([
            action(
                "Try this: refine foo n ?_",
                ((19, 2), (19, 8)),
                "refine foo n ?_"
            ),
            action(
                "Try this: refine foo n ?_",
                ((19, 2), (19, 8)),
                "refine foo n ?_"
            ),
            action("Try this: _a", ((18, 12), (18, 13)), "_a"),
            action("Remove unused import", ((19, 2), (19, 8)), ""),
        ]);
        let offers = from_code_actions(&answer, (19, 2), (19, 8), Value::clone);
        assert_eq!(
            offers,
            [Offer {
                range: Range::new((0, 0), (0, 6)),
                new_text: "refine foo n ?_".into(),
            }]
        );
        assert_eq!(
            offers[0].apply_to("exact?").as_deref(),
            Some("refine foo n ?_")
        );
        // In a term: `by exact?`, the suggestion replaces the tactic only.
        let answer = json!([action("Try this: exact h", ((3, 12), (3, 18)), "exact h")]);
        let offers = from_code_actions(&answer, (3, 9), (3, 18), Value::clone);
        assert_eq!(offers[0].range, Range::new((0, 3), (0, 9)));
        assert_eq!(
            offers[0].apply_to("by exact?").as_deref(),
            Some("by exact h")
        );
        assert_eq!(
            from_code_actions(&json!(null), (0, 0), (9, 0), Value::clone),
            []
        );
        // A range taken out of the step by the inserted budget text.
        let unshift = |v: &Value| {
            let mut v = v.clone();
            v["range"]["start"]["character"] = json!(2);
            v["range"]["end"]["character"] = json!(8);
            v
        };
        let answer = json!([action("Try this: exact h", ((0, 40), (0, 46)), "exact h")]);
        let offers = from_code_actions(&answer, (0, 2), (0, 8), unshift);
        assert_eq!(offers[0].range, Range::new((0, 0), (0, 6)));
    }
}
