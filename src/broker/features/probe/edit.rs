//! The edit that puts a text run at a place into the user's file, exactly
//! as it was elaborated there: after tactics or commands, the edit
//! `lean_handle_edit` gives for a handle minted after it; in place of a
//! term, the term's range replaced by the text in the parentheses the step
//! put around it. The server never applies it.

use super::{FromHandle, Plan, Start, Step};
use crate::broker::engine::handles::{HandleState, Shadow};
use crate::broker::error::Result;
use crate::broker::features::completions::Edit;
use crate::broker::features::handle_edit::text_edit;
use crate::lean_source::text::LineIndex;
use crate::results::{Placeholder, TextEdit};

impl Start<'_> {
    /// The edit that puts `step` (of this place) into the user's file.
    pub fn edit(&self, step: &Step) -> (TextEdit, Option<Placeholder>) {
        let bound = &self.bound;
        let (text, index) = (&bound.state.text, &bound.state.index);
        if let Plan::Term(term) = &self.plan {
            let checked = format!("({})", &step.shadow[step.start..step.end]);
            return term_edit(text, index, (term.start, term.end), checked);
        }
        let state = HandleState {
            file: bound.doc.path.file.clone(),
            shown: bound.doc.path.shown.clone(),
            version: bound.state.version,
            generation: bound.server.generation,
            shadow: Shadow::sharing(std::sync::Arc::clone(text), &step.shadow),
            indent: step.indent,
            kind: step.kind,
            placement: step.placement,
        };
        text_edit(text, index, &state)
    }
}

impl FromHandle {
    /// The edit that puts the handle's chain and `text` after it into the
    /// user's file.
    pub fn edit(&self, text: &str) -> Result<(TextEdit, Option<Placeholder>)> {
        let state = HandleState {
            shadow: self.shadow_with(text)?,
            ..self.state.clone()
        };
        Ok(text_edit(
            &self.doc_state.text,
            &self.doc_state.index,
            &state,
        ))
    }
}

/// Replace the user's term at bytes `start..end` of `user` by `checked`,
/// and say whether that term was a `sorry` or a hole.
fn term_edit(
    user: &str,
    index: &LineIndex,
    (start, end): (usize, usize),
    checked: String,
) -> (TextEdit, Option<Placeholder>) {
    let replaced = match user[start..end].trim() {
        "sorry" => Some(Placeholder::Sorry),
        term if term == "_" || term.starts_with('?') => Some(Placeholder::Hole),
        _ => None,
    };
    let edit = Edit {
        start: index.position(user, start),
        end: index.position(user, end),
        new_text: checked,
    };
    (edit.into(), replaced)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_term_is_replaced_by_the_text_in_its_parentheses() {
        let user = "theorem t : P :=\n  sorry\n";
        let index = LineIndex::new(user);
        let start = user.find("sorry").unwrap();
        let (edit, replaced) = term_edit(user, &index, (start, start + 5), "(by exact h)".into());
        assert_eq!(replaced, Some(Placeholder::Sorry));
        assert_eq!(edit.range, crate::results::Range::new((1, 2), (1, 7)));
        assert_eq!(edit.new_text, "(by exact h)");
        let user = "def x := f ?a";
        let (_, replaced) = term_edit(user, &LineIndex::new(user), (11, 13), "(by exact h)".into());
        assert_eq!(replaced, Some(Placeholder::Hole));
        let (_, replaced) = term_edit(user, &LineIndex::new(user), (9, 10), "(g)".into());
        assert_eq!(replaced, None);
    }
}
