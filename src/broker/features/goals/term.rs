//! The type expected at a position inside a term, and its local context
//! (`$/lean/plainTermGoal`), as a goal: for `lean_term_goal` and for a
//! probe's term step.

use super::plain_goal;
use crate::broker::engine::snapshot::Bound;
use crate::broker::error::Result;
use crate::lsp::protocol::PlainTermGoal;
use crate::results::Goal;

/// The goal Lean has for the term at a position, and the term's range.
pub struct TermGoal {
    pub goal: Goal,
    pub range: lsp_types::Range,
}

/// The term goal at (line, character) of the bound version; none where
/// Lean has no term there.
pub async fn term_goal(bound: &Bound<'_>, line: u64, character: u64) -> Result<Option<TermGoal>> {
    let answer = bound
        .request_typed::<PlainTermGoal>(bound.lean_position(line, character))
        .await?;
    Ok(answer.map(|a| TermGoal {
        goal: plain_goal(&a.goal),
        range: a.range,
    }))
}
