//! `lean_term_goal`: the type expected at a position inside a term, and its
//! local context (`$/lean/plainTermGoal`), so that a term-mode hole (`:=
//! sorry`) can be worked on as a tactic one is with `lean_goals`.

use super::goals;
use super::inspect::head;
use crate::broker::ask::At;
use crate::broker::engine::runtimes::Runtimes;
use crate::broker::error::Result;
use crate::broker::progress::ProgressSink;
use crate::results::{Range, TermGoalResult};

impl Runtimes {
    /// The type expected at a position inside a term, and its context.
    pub async fn term_goal(&self, sink: &dyn ProgressSink, at: &At<'_>) -> Result<TermGoalResult> {
        let bound = self.bind(sink, at.workspace, at.path, at.version).await?;
        bound.check_position(at.line, at.character)?;
        let (answer, disk_changed) = tokio::join!(
            goals::term_goal(&bound, at.line, at.character),
            bound.disk_changed()
        );
        let answer = answer?;
        let range = answer.as_ref().map(|a| {
            Range::new(
                (a.range.start.line, a.range.start.character),
                (a.range.end.line, a.range.end.character),
            )
        });
        Ok(TermGoalResult {
            declaration: None,
            head: head(&bound, Some(at.line), disk_changed),
            goal: answer.map(|a| a.goal),
            range,
        })
    }
}
