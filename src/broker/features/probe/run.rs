//! The one-step probe intents: `lean_run_at` (and with a handle),
//! `lean_run_with` (and linear), `lean_release`.

use super::{At, Continue, Ran};
use crate::broker::ask::After;
use crate::broker::ask::{Budget, Taking};
use crate::broker::engine::runtimes::Runtimes;
use crate::broker::error::Result;
use crate::broker::progress::ProgressSink;
use crate::results::{ReleaseResult, RunResult};

impl Runtimes {
    /// Run `text` at a position of a pinned version; with
    /// [`Continue::WithHandles`] a step that succeeds gets a handle.
    pub async fn run_at(
        &self,
        sink: &dyn ProgressSink,
        at: &At<'_>,
        text: &str,
        budget: Budget,
        handles: Continue,
    ) -> Result<RunResult> {
        let start = self.probe_at(sink, at, handles).await?;
        let (ran, disk_changed) = tokio::join!(start.run(sink, text, budget), start.disk_changed());
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

    /// Run `text` after a handle's chain; [`Taking::Consume`] consumes the
    /// handle whatever the outcome. A step that succeeds gets a handle.
    pub async fn run_with(
        &self,
        sink: &dyn ProgressSink,
        after: &After<'_>,
        text: &str,
        budget: Budget,
        taking: Taking,
    ) -> Result<RunResult> {
        let from = self
            .probe_from_handle(after.workspace, after.path, after.handle, taking)
            .await?;
        let (ran, disk_changed) = tokio::join!(from.run(sink, text, budget), from.disk_changed());
        let mut result = ran?.result;
        result.disk_changed = disk_changed;
        if result.success {
            result.next_handle = Some(from.mint(text)?);
        }
        Ok(result)
    }

    /// Release a handle, which must continue the document it names.
    pub fn release(&self, after: &After<'_>) -> Result<ReleaseResult> {
        let origin = self.release_handle(after.workspace, after.path, after.handle)?;
        Ok(ReleaseResult {
            workspace: origin.workspace,
            path: origin.path,
            released: true,
        })
    }
}
