//! `lean_term_goal`: the type expected at a position inside a term, and its
//! local context (`$/lean/plainTermGoal`), so that a term-mode hole (`:=
//! sorry`) can be worked on as a tactic one is with `lean_goals`.

use serde_json::Value;

use super::Answer;
use super::inspect::{At, head};
use crate::broker::Broker;
use crate::broker::goals;
use crate::broker::snapshot;
use crate::results::{Range, TermGoalResult};
use crate::surface::CallContext;

pub async fn term_goal(broker: &Broker, ctx: &CallContext, at: &At<'_>) -> Answer<TermGoalResult> {
    let bound = snapshot::bind(broker, ctx, &at.workspace.root, at.path, at.version).await?;
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
