//! `lean_term_goal`: the type expected at a position inside a term, and its
//! local context (`$/lean/plainTermGoal`), so that a term-mode hole (`:=
//! sorry`) can be worked on as a tactic one is with `lean_goals`.

use serde_json::Value;

use super::Broker;
use super::error::Result;
use super::goals;
use super::inspect::head;
use super::probe::At;
use super::progress::ProgressSink;
use crate::results::{Range, TermGoalResult};

impl Broker {
    /// The type expected at a position inside a term, and its context.
    pub async fn term_goal(&self, sink: &dyn ProgressSink, at: &At<'_>) -> Result<TermGoalResult> {
        term_goal(self, sink, at).await
    }
}

async fn term_goal(
    broker: &Broker,
    sink: &dyn ProgressSink,
    at: &At<'_>,
) -> Result<TermGoalResult> {
    let bound = broker.bind(sink, at.workspace, at.path, at.version).await?;
    bound.check_position(at.line, at.character)?;
    let (answer, disk_changed) = tokio::join!(
        bound.request(
            "$/lean/plainTermGoal",
            bound.position_params(at.line, at.character),
        ),
        bound.disk_changed()
    );
    let answer = answer?;
    let goal = answer
        .get("goal")
        .and_then(Value::as_str)
        .map(goals::plain_goal);
    // Lean's LSP range; a malformed one is left out rather than guessed.
    let range = answer
        .get("range")
        .and_then(|r| serde_json::from_value::<Range>(r.clone()).ok());
    Ok(TermGoalResult {
        head: head(&bound, Some(at.line), disk_changed),
        goal,
        range,
    })
}
