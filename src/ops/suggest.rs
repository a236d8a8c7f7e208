//! `lean_suggest`: the arguments checked and turned into the broker's
//! `ask::Suggest` (the place named as `lean_run_batch` names it), and each
//! crashed run's error put in words. Running the tactics and checking their
//! suggestions is the broker's (`broker/features/suggest/`).

use super::batch::{Named, invalid, named, place};
use crate::broker::{self, Broker, Budget, Crashed, Suggest};
use crate::results::{GoalForm, SuggestResult};
use crate::surface::{CallContext, ErrorCode, LeanSuggestArgs, ToolError};

/// The tactics tried when the call names none (the catalog says them): the
/// suggestion tactics of Lean and Mathlib, and the deciding ones, in
/// order. A toolchain without one reports it `unavailable`.
pub const DEFAULT_TACTICS: [&str; 8] = [
    "exact?", "apply?", "simp?", "rw?", "aesop?", "omega", "decide", "grind",
];

/// At most this many tactics in one call.
pub const MAX_TACTICS: usize = 16;

/// At most this many suggestions in one answer.
pub const MAX_LIMIT: u64 = 32;

/// The tactics asked for, checked: at most [`MAX_TACTICS`], none empty,
/// none twice; none (the argument left out, or empty) means the default.
pub fn tactics(given: &[String]) -> Result<Vec<String>, ToolError> {
    if given.is_empty() {
        return Ok(DEFAULT_TACTICS.map(str::to_owned).to_vec());
    }
    if given.len() > MAX_TACTICS {
        return Err(invalid(&format!(
            "tactics holds {} entries; give at most {MAX_TACTICS}, or leave it out for the default",
            given.len()
        )));
    }
    let mut tactics: Vec<String> = Vec::with_capacity(given.len());
    for (index, tactic) in given.iter().enumerate() {
        let tactic = tactic.trim();
        if tactic.is_empty() {
            return Err(invalid(&format!(
                "tactics[{index}] is empty: give a tactic such as \"exact?\""
            )));
        }
        if let Some(first) = tactics.iter().position(|t| t == tactic) {
            return Err(invalid(&format!(
                "tactics[{index}] repeats tactics[{first}] ({tactic:?})"
            )));
        }
        tactics.push(tactic.to_owned());
    }
    Ok(tactics)
}

/// A broker error, with a tactic that cannot run here named as `tactics[i]`.
fn tool_error(error: broker::Error) -> ToolError {
    match error {
        broker::Error::Candidate { index, error } => ToolError::new(
            ErrorCode::InvalidParams,
            format!("tactics[{index}]: {}", ToolError::from(*error).message),
        ),
        other => other.into(),
    }
}

pub async fn suggest(
    broker: &Broker,
    ctx: &CallContext,
    args: &LeanSuggestArgs,
) -> Result<SuggestResult, ToolError> {
    let tactics = tactics(&args.tactics)?;
    if args.limit > MAX_LIMIT as i64 {
        return Err(invalid(&format!(
            "limit {} is above {MAX_LIMIT}, the most suggestions one call answers",
            args.limit
        )));
    }
    let (place, declaration) = place(broker, ctx, named!(args)).await?;
    let ask = Suggest {
        place,
        tactics: &tactics,
        budget: Budget::new(args.max_heartbeats, args.timeout_ms),
        limit: usize::try_from(args.limit).unwrap_or(1),
        form: GoalForm::of(args.structured_goals),
    };
    let mut run = broker.suggest(ctx, &ask).await.map_err(tool_error)?;
    for (which, error) in run.crashed {
        let message = Some(ToolError::from(error).message);
        match which {
            Crashed::Tactic(i) => run.result.tactics[i].message = message,
            Crashed::Suggestion(i) => run.result.suggestions[i].error = message,
        }
    }
    run.result.declaration = declaration;
    Ok(run.result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tactics_default_and_are_checked() {
        assert_eq!(tactics(&[]).unwrap(), DEFAULT_TACTICS);
        let given = |xs: &[&str]| xs.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            tactics(&given(&[" decide ", "exact?"])).unwrap(),
            ["decide", "exact?"]
        );
        let refused = |xs: &[&str]| tactics(&given(xs)).unwrap_err().message;
        assert!(refused(&["exact?", "  "]).contains("tactics[1] is empty"));
        assert!(refused(&["decide", "omega", "decide"]).contains("tactics[2] repeats tactics[0]"));
        assert!(refused(&["skip"; 17]).contains("holds 17"));
    }
}
