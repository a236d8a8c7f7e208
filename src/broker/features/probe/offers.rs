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

use super::text::step_range;
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

/// The message side is the engine's one reading of "Try this" messages
/// (`lean_sync`'s diagnostic items read it too).
pub use crate::broker::engine::try_this::{says_try_this, texts as from_message};

/// The "Try this" suggestions of a `textDocument/codeAction` answer about a
/// step's shadow that replace text of the step: its text runs from `start`
/// to `end` (shadow positions, with any text the broker put on the step's
/// line taken out by `unshift`). Each edit's range is made relative to the
/// step. An action offered twice is kept once.
pub fn from_code_actions(
    answer: &Value,
    start: (u32, u32),
    end: (u32, u32),
    unshift: impl Fn(lsp_types::Range) -> lsp_types::Range,
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
        let Ok(range) = serde_json::from_value::<lsp_types::Range>(range.clone()) else {
            continue;
        };
        let range = unshift(range);
        let (from, to) = (
            (range.start.line, range.start.character),
            (range.end.line, range.end.character),
        );
        if from < start || to > end || from > to {
            continue;
        }
        let offer = Offer {
            range: step_range(range, start),
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
        let offers = from_code_actions(&answer, (19, 2), (19, 8), std::convert::identity);
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
        let offers = from_code_actions(&answer, (3, 9), (3, 18), std::convert::identity);
        assert_eq!(offers[0].range, Range::new((0, 3), (0, 9)));
        assert_eq!(
            offers[0].apply_to("by exact?").as_deref(),
            Some("by exact h")
        );
        assert_eq!(
            from_code_actions(&json!(null), (0, 0), (9, 0), std::convert::identity),
            []
        );
        // A range taken out of the step by the inserted budget text.
        let unshift = |mut r: lsp_types::Range| {
            r.start.character = 2;
            r.end.character = 8;
            r
        };
        let answer = json!([action("Try this: exact h", ((0, 40), (0, 46)), "exact h")]);
        let offers = from_code_actions(&answer, (0, 2), (0, 8), unshift);
        assert_eq!(offers[0].range, Range::new((0, 0), (0, 6)));
    }
}
