//! The text edit that writes a proof handle's chain into the user's file
//! (`lean_handle_edit`). The server never applies it.
//!
//! A handle's shadow is the user's text up to the probed position, then what
//! the chain put there: every step, laid out at the columns Lean elaborated
//! them at. So the edit starts where the shadow stops being the user's text
//! (at the latest at the probe's anchor) and inserts the rest of the shadow.
//! A `sorry` or synthetic hole that stands there in the user's text (after
//! white space) is what the chain proves, so the edit replaces it; otherwise
//! the user's following text is kept after the chain, at its column.

use super::completions::Edit;
use super::probe::{Lean, Taken};
use crate::broker::ask::Taking;
use crate::broker::engine::handles::HandleState;
use crate::broker::engine::runtimes::Runtimes;
use crate::broker::engine::sync;
use crate::broker::error::Result;
use crate::lean_source::lexer::{LexemeKind, lex};
use crate::lean_source::text::LineIndex;
use crate::results::{DocHead, HandleEditResult, Placeholder};

impl Runtimes {
    /// The edit that writes `handle`'s chain into the version of `path` it
    /// was cut from. Never starts Lean, never writes.
    pub async fn handle_edit(
        &self,
        workspace: &str,
        path: &str,
        handle: &str,
    ) -> Result<HandleEditResult> {
        // The edit is about the text the handle was cut from: that version
        // must still be the document's, in the session that ran the chain.
        let Taken {
            rt,
            doc,
            state,
            doc_state,
            ..
        } = self
            .take_handle(workspace, path, handle, Taking::Keep, Lean::IfRunning)
            .await?;
        let text = &doc_state.text;
        let edit = chain_edit(text, &state);
        let disk_changed = sync::disk_changed(&doc, &doc_state).await;
        Ok(HandleEditResult {
            head: DocHead {
                workspace: rt.root.descriptor(),
                path: doc.path.shown.clone(),
                version: doc_state.version,
                line_text: None,
                disk_changed,
            },
            edit: Edit {
                start: doc_state.index.position(text, edit.start),
                end: doc_state.index.position(text, edit.end),
                new_text: edit.new_text,
            }
            .into(),
            replaces: edit.replaced.map(|kind| match kind {
                Replaced::Sorry => Placeholder::Sorry,
                Replaced::Hole => Placeholder::Hole,
            }),
        })
    }
}

/// What the chain's text takes the place of in the user's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replaced {
    Sorry,
    Hole,
}

/// Replace the bytes `start..end` of the user's text by `new_text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainEdit {
    pub start: usize,
    pub end: usize,
    pub new_text: String,
    pub replaced: Option<Replaced>,
}

/// The edit that makes `user` (the text of the version the handle was cut
/// from) contain the chain of `state`.
pub fn chain_edit(user: &str, state: &HandleState) -> ChainEdit {
    let shadow = state.shadow.text();
    let anchor = state.placement.anchor;
    let anchor = LineIndex::new(&shadow)
        .offset(&shadow, u64::from(anchor.0), u64::from(anchor.1))
        .unwrap_or(shadow.len());
    let mut start = user
        .bytes()
        .zip(shadow.bytes())
        .take_while(|(a, b)| a == b)
        .count()
        .min(anchor);
    while !user.is_char_boundary(start) || !shadow.is_char_boundary(start) {
        start -= 1;
    }
    let chain = &shadow[start..];
    let rest = &user[start..];
    let blank = rest.len() - rest.trim_start().len();
    let placeholder = placeholder(rest).filter(|&(at, _, _)| at == blank);
    if let Some((_, kind, end)) = placeholder {
        return ChainEdit {
            start,
            end: start + end,
            new_text: chain.trim_end_matches('\n').to_string(),
            replaced: Some(kind),
        };
    }
    // Nothing to replace: the user's text goes on after the chain, on a line
    // of its own at the column it had.
    let line_rest = rest.split('\n').next().unwrap_or_default();
    let new_text = if line_rest.trim().is_empty() {
        chain.trim_end_matches('\n').to_string()
    } else {
        let line_start = user[..start].rfind('\n').map_or(0, |i| i + 1);
        let column = user[line_start..start].chars().count();
        let mut text = chain.to_string();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&" ".repeat(column));
        text
    };
    ChainEdit {
        start,
        end: start,
        new_text,
        replaced: None,
    }
}

/// The placeholder `text` starts with: a `sorry`, a synthetic hole, or the
/// tactic `exact` applied to one (`exact sorry`, what a `sorry` tactic is
/// written as without it); where it starts, what it is, and where it ends.
fn placeholder(text: &str) -> Option<(usize, Replaced, usize)> {
    let lexemes = lex(text);
    let kind = |i: usize| -> Option<Replaced> {
        let lexeme = lexemes.get(i)?;
        match lexeme.kind {
            LexemeKind::Hole => Some(Replaced::Hole),
            LexemeKind::Word if &text[lexeme.start..lexeme.end] == "sorry" => Some(Replaced::Sorry),
            _ => None,
        }
    };
    let first = lexemes.first()?;
    if let Some(found) = kind(0) {
        return Some((first.start, found, first.end));
    }
    let exact = first.kind == LexemeKind::Word && &text[first.start..first.end] == "exact";
    let found = kind(1).filter(|_| exact)?;
    Some((first.start, found, lexemes[1].end))
}

/// `user` with `edit` applied.
#[cfg(test)]
fn apply(user: &str, edit: &ChainEdit) -> String {
    format!(
        "{}{}{}",
        &user[..edit.start],
        edit.new_text,
        &user[edit.end..]
    )
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;

    use super::*;
    use crate::broker::engine::handles::Shadow;
    use crate::broker::engine::shadow::Placement;

    /// A handle state whose shadow is `shadow`, anchored at `anchor`.
    fn state(user: &str, shadow: &str, anchor: (u32, u32)) -> HandleState {
        HandleState {
            file: PathBuf::from("/w/A.lean"),
            shown: "A.lean".into(),
            version: 1,
            generation: 1,
            shadow: Shadow::sharing(Arc::from(user), shadow),
            indent: 2,
            kind: crate::results::StepKind::Tactic,
            placement: Placement::at(anchor),
        }
    }

    #[test]
    fn a_sorry_at_the_probe_is_replaced_by_every_step() {
        let user = "theorem t : P := by\n  sorry\n\ndef x := 1\n";
        let shadow = "theorem t : P := by\n  intro h\n  exact h\n";
        let edit = chain_edit(user, &state(user, shadow, (1, 2)));
        assert_eq!(edit.replaced, Some(Replaced::Sorry));
        assert_eq!(
            apply(user, &edit),
            "theorem t : P := by\n  intro h\n  exact h\n\ndef x := 1\n"
        );
    }

    #[test]
    fn a_sorry_on_the_next_line_after_by_is_replaced() {
        // Probed at the end of the `by` line: the chain follows `by `.
        let user = "theorem t : P := by\n  sorry\n";
        let shadow = "theorem t : P := by intro h\n                    exact h\n";
        let edit = chain_edit(user, &state(user, shadow, (0, 20)));
        assert_eq!(edit.replaced, Some(Replaced::Sorry));
        assert_eq!(
            apply(user, &edit),
            "theorem t : P := by intro h\n                    exact h\n"
        );
    }

    #[test]
    fn a_hole_is_replaced_and_other_text_kept_after_the_chain() {
        let user = "  refine ?_\n";
        let shadow = "  refine exact h\n";
        let edit = chain_edit(user, &state(user, shadow, (0, 9)));
        assert_eq!(edit.replaced, Some(Replaced::Hole));
        assert_eq!(apply(user, &edit), "  refine exact h\n");

        // Before another tactic: that tactic follows at its column.
        let user = "theorem t : P := by\n  simp\n";
        let shadow = "theorem t : P := by\n  intro h\n";
        let edit = chain_edit(user, &state(user, shadow, (1, 2)));
        assert_eq!(edit.replaced, None);
        assert_eq!(
            apply(user, &edit),
            "theorem t : P := by\n  intro h\n  simp\n"
        );
    }

    #[test]
    fn a_step_after_a_tactic_goes_on_the_next_line_without_a_blank_one() {
        let user = "  simp [x]\n  done\n";
        let shadow = "  simp [x]\n  exact foo\n";
        let mut st = state(user, shadow, (0, 10));
        st.placement = Placement {
            anchor: (0, 10),
            text: (1, 2),
            origin: (0, 10),
            resume: None,
        };
        let edit = chain_edit(user, &st);
        assert_eq!(apply(user, &edit), "  simp [x]\n  exact foo\n  done\n");
    }

    #[test]
    fn exact_sorry_is_a_placeholder_too() {
        let user = "theorem t : P := by\n  exact sorry -- later\n";
        let shadow = "theorem t : P := by\n  exact h\n";
        let edit = chain_edit(user, &state(user, shadow, (1, 2)));
        assert_eq!(edit.replaced, Some(Replaced::Sorry));
        assert_eq!(
            apply(user, &edit),
            "theorem t : P := by\n  exact h -- later\n"
        );
        assert_eq!(placeholder("exact foo"), None);
        assert_eq!(placeholder("exact ?h"), Some((0, Replaced::Hole, 8)));
    }

    #[test]
    fn the_edit_stops_at_the_anchor_even_where_the_step_repeats_the_file() {
        // The step starts like the user's text there; the edit still starts
        // at the probe, so the sorry is what it replaces.
        let user = "  sorry\n";
        let shadow = "  sorry_free\n";
        let edit = chain_edit(user, &state(user, shadow, (0, 2)));
        assert_eq!(edit.start, 2);
        assert_eq!(edit.replaced, Some(Replaced::Sorry));
        assert_eq!(apply(user, &edit), "  sorry_free\n");
    }
}
