//! Speculative execution tools: `lean_run_at`, `lean_run_at_handle`,
//! `lean_run_with`, `lean_run_with_linear` and `lean_release`. The probe
//! itself (shadow slots, prefix bases, handles) is the broker's
//! (`broker::probe`).

use super::Answer;
use crate::broker::{Broker, Budget, Continue, Ran, RunAt, Taking};
use crate::results::{ReleaseResult, RunResult};
use crate::surface::{CallContext, Workspace};

/// Run `text` at a position of a pinned version; with
/// [`Continue::WithHandles`] a step that succeeds gets a handle.
pub async fn run_at(
    broker: &Broker,
    ctx: &CallContext,
    at: &RunAt<'_>,
    text: &str,
    budget: Budget,
    handles: Continue,
) -> Answer<RunResult> {
    let start = broker.probe_at(ctx, at, handles).await?;
    let (ran, disk_changed) = tokio::join!(start.run(ctx, text, budget), start.disk_changed());
    let Ran {
        mut result, step, ..
    } = ran?;
    result.line_text = Some(start.line_text().to_owned());
    result.disk_changed = disk_changed;
    if let (Continue::WithHandles, true, Some(step)) = (handles, result.success, &step) {
        result.next_handle = Some(start.mint(step)?);
    }
    Ok(result)
}

/// Where a continuation runs: after a handle's chain, in a document.
pub struct After<'a> {
    pub workspace: &'a Workspace,
    pub path: &'a str,
    pub handle: &'a str,
}

/// Continue from a handle; [`Taking::Consume`] consumes it whatever the
/// outcome.
pub async fn run_with(
    broker: &Broker,
    ctx: &CallContext,
    after: &After<'_>,
    text: &str,
    budget: Budget,
    taking: Taking,
) -> Answer<RunResult> {
    let from = broker
        .probe_from_handle(&after.workspace.root, after.path, after.handle, taking)
        .await?;
    let (ran, disk_changed) = tokio::join!(from.run(ctx, text, budget), from.disk_changed());
    let mut result = ran?.result;
    result.disk_changed = disk_changed;
    if result.success {
        result.next_handle = Some(from.mint(text)?);
    }
    Ok(result)
}

pub fn release(broker: &Broker, after: &After<'_>) -> Answer<ReleaseResult> {
    let origin = broker.release_handle(&after.workspace.root, after.path, after.handle)?;
    Ok(ReleaseResult {
        workspace: origin.workspace,
        path: origin.path,
        released: true,
    })
}
