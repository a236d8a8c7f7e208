//! `lean_run_batch`: the arguments as the broker's `ask::Batch`, and each
//! crashed candidate's error put in words. The batch itself (candidates run
//! together, verdicts, fingerprints, diffs) is the broker's
//! (`broker/features/probe/batch.rs`).

use crate::broker::{After, At, Batch, Broker, Budget, Continue, Place};
use crate::results::{BatchResult, GoalForm};
use crate::surface::{CallContext, ErrorCode, LeanRunBatchArgs, ToolError};

/// At most this many candidates in one call.
pub const MAX_CANDIDATES: usize = 32;

/// The place the arguments name: a position or a handle, never both.
fn place(args: &LeanRunBatchArgs) -> Result<Place<'_>, ToolError> {
    let workspace = &args.workspace.root;
    let path = &args.path;
    match (&args.handle, args.version, args.line, args.character) {
        (Some(handle), None, None, None) => Ok(Place::After(After {
            workspace,
            path,
            handle,
        })),
        (None, Some(version), Some(line), Some(character)) => Ok(Place::At(At {
            workspace,
            path,
            version,
            line,
            character,
        })),
        _ => Err(invalid(
            "give either version, line and character (a position) or handle, not both",
        )),
    }
}

fn invalid(message: &str) -> ToolError {
    ToolError::new(ErrorCode::InvalidParams, message.to_owned())
}

pub async fn run_batch(
    broker: &Broker,
    ctx: &CallContext,
    args: &LeanRunBatchArgs,
) -> Result<BatchResult, ToolError> {
    let total = args.texts.len();
    if total == 0 || total > MAX_CANDIDATES {
        return Err(invalid(&format!(
            "texts holds {total} candidates; give 1 to {MAX_CANDIDATES}"
        )));
    }
    let batch = Batch {
        place: place(args)?,
        texts: &args.texts,
        budget: Budget::new(args.max_heartbeats, args.timeout_ms),
        stop_on_first_close: args.stop_on_first_close,
        handles: if args.handles {
            Continue::WithHandles
        } else {
            Continue::NoHandles
        },
        diff: args.diff,
        form: GoalForm::of(args.structured_goals),
    };
    let mut run = broker.run_batch(ctx, &batch).await?;
    for (index, error) in run.crashed {
        run.result.candidates[index].error = Some(ToolError::from(error).message);
    }
    Ok(run.result)
}
