//! `lean_term_goal`: the type expected at a position inside a term, and its
//! local context (`$/lean/plainTermGoal`), so that a term-mode hole (`:=
//! sorry`) can be worked on as a tactic one is with `lean_goals`.

use serde::Serialize;
use serde_json::Value;

use super::inspect::At;
use super::typed;
use crate::broker::Broker;
use crate::broker::goals;
use crate::broker::snapshot::{self, DocAnswer};
use crate::surface::{CallContext, ToolOutcome};

#[derive(Debug, Serialize)]
struct TermGoalAnswer {
    #[serde(flatten)]
    doc: DocAnswer,
    /// The expected type as a goal (hypotheses, target, `pretty`), or null
    /// where Lean has no term.
    goal: Option<Value>,
    /// The term Lean found at the position.
    range: Option<Value>,
}

pub async fn term_goal(broker: &Broker, ctx: &CallContext, at: &At<'_>) -> ToolOutcome {
    let bound = snapshot::bind(broker, ctx, at.workspace, at.path, at.version).await?;
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
        .map(goals::plain_goal_json);
    typed(&TermGoalAnswer {
        doc: bound.answer(Some(at.line), disk_changed),
        goal,
        range: answer.get("range").filter(|r| !r.is_null()).cloned(),
    })
}
