//! `lean_run_batch`: the arguments as the broker's `ask::Batch`, and each
//! crashed candidate's error put in words. The batch itself (candidates run
//! together, verdicts, fingerprints, diffs) is the broker's
//! (`broker/features/probe/batch.rs`).

use super::args::{Address, pinned};
use crate::broker::{After, Batch, Broker, Budget, Continue, Place};
use crate::results::{BatchResult, DeclarationAt, GoalForm};
use crate::surface::{CallContext, DeclSpot, ErrorCode, LeanRunBatchArgs, ToolError, Workspace};

/// At most this many candidates in one call.
pub const MAX_CANDIDATES: usize = 32;

/// What a call names its place with: a position or a declaration of a
/// pinned version, or a handle (`lean_run_batch`, `lean_suggest`).
pub(super) struct Named<'a> {
    pub workspace: &'a Workspace,
    pub path: &'a str,
    pub version: Option<u64>,
    pub line: Option<u64>,
    pub character: Option<u64>,
    pub declaration: Option<&'a str>,
    pub at: Option<DeclSpot>,
    pub handle: Option<&'a str>,
}

/// The [`Named`] of a tool's arguments: every tool that names its place this
/// way declares the same eight fields (operations.toml).
macro_rules! named {
    ($args:expr) => {
        Named {
            workspace: &$args.workspace,
            path: &$args.path,
            version: $args.version,
            line: $args.line,
            character: $args.character,
            declaration: $args.declaration.as_deref(),
            at: $args.at,
            handle: $args.handle.as_deref(),
        }
    };
}
pub(super) use named;

/// The place the arguments name: a position or a declaration of a pinned
/// version (the declaration resolved, to echo), or a handle, never both.
pub(super) async fn place<'a>(
    broker: &Broker,
    ctx: &CallContext,
    named: Named<'a>,
) -> Result<(Place<'a>, Option<DeclarationAt>), ToolError> {
    let positional = named.line.is_some()
        || named.character.is_some()
        || named.declaration.is_some()
        || named.at.is_some();
    match (named.handle, named.version) {
        (Some(handle), None) if !positional => Ok((
            Place::After(After {
                workspace: &named.workspace.root,
                path: named.path,
                handle,
            }),
            None,
        )),
        (None, Some(version)) => {
            let address = Address {
                pinned: pinned(named.workspace, named.path, version),
                line: named.line,
                character: named.character,
                declaration: named.declaration,
                at: named.at,
            };
            let (at, declaration) = address.resolve(broker, ctx).await?;
            Ok((Place::At(at), declaration))
        }
        _ => Err(invalid(
            "give either version with line and character (a position) or declaration, or handle, not both",
        )),
    }
}

pub(super) fn invalid(message: &str) -> ToolError {
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
    let (place, declaration) = place(broker, ctx, named!(args)).await?;
    let batch = Batch {
        place,
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
    run.result.declaration = declaration;
    Ok(run.result)
}
