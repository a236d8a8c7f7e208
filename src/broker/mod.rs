//! The Lean broker: one runtime per canonical workspace root, created lazily by
//! the first request that needs it and kept until it is dropped or the server
//! shuts down.
//!
//! Three parts the compiler fences: `engine` (runtimes, documents, edits,
//! waits, shadows, bases, handles, checkpoints, imports), `features` (what
//! each tool asks of the engine and how its answer is read) and, beside the
//! broker, the leaf `crate::lean_source` (pure reading of Lean text). Both
//! modules are private: the rest of the crate sees only `Broker`, whose
//! methods below are one line each into a feature (the way rust-analyzer's
//! `Analysis` is written), and the request, result-side and error vocabulary
//! re-exported here.

mod ask;
mod engine;
mod error;
mod features;
#[cfg(test)]
mod in_process;
mod progress;

use std::collections::BTreeMap;

use engine::runtimes::Runtimes;
use engine::workspace;
use serde_json::{Map, Value};

pub use crate::lean_source::text::PositionError;
use crate::results::{self, RuntimeStats};
pub use ask::*;
pub use engine::launch::env;
pub use engine::launch::{Launcher, Limits, Timeouts};
pub use engine::workspace::Root;
pub use error::{
    Error, HandleProblem, Limit, MemoryKill, NotModule, ProbeProblem, Result, SaveError,
    SourceProblem, Unresolved,
};
pub use features::documents::Located;
pub use features::probe::BatchRun;
pub use features::suggest::{Crashed, SuggestRun};
pub use progress::{LogLevel, ProgressSink, SinkFuture};

pub struct Broker {
    runtimes: Runtimes,
}

impl Broker {
    // Process-wide.

    pub fn new(launcher: Launcher, timeouts: Timeouts, limits: Limits) -> Self {
        Broker {
            runtimes: Runtimes::new(launcher, timeouts, limits),
        }
    }

    pub fn from_env() -> Self {
        Self::new(
            Launcher::from_env(),
            Timeouts::from_env(),
            Limits::from_env(),
        )
    }

    /// The server's own check of a workspace descriptor before a call runs
    /// (absolute, an existing Lean/Lake project).
    pub fn check_descriptor(workspace: &str) -> Result<()> {
        workspace::resolve(workspace).map(drop)
    }

    /// The canonical root of a descriptor, checked as a call checks it (for
    /// `doctor`, which then says what the first call on it will start).
    pub fn canonical_root(workspace: &str) -> Result<Root> {
        workspace::resolve(workspace)
    }

    /// [`Broker::check_descriptor`] for a drop, which also accepts a root
    /// that has since disappeared.
    pub fn check_descriptor_to_drop(workspace: &str) -> Result<()> {
        workspace::resolve_for_eviction(workspace).map(drop)
    }

    /// The canonical root of a descriptor (remembered, re-checked by `stat`).
    pub fn resolve_root(&self, workspace: &str) -> Result<Root> {
        self.runtimes.resolve_root(workspace)
    }

    /// Stop every runtime (transport shutdown).
    pub async fn shutdown(&self) {
        self.runtimes.shutdown().await
    }

    /// Remove this process's private `lean_verify` build cache, at a graceful
    /// exit once nothing runs (process-wide: call it once, after the last
    /// broker's shutdown).
    pub async fn remove_verify_cache() {
        features::certify::remove_own_cache().await
    }

    pub fn stats(&self) -> BTreeMap<String, RuntimeStats> {
        self.runtimes.stats()
    }

    /// Every bound, the variable that sets it, and what is used of it now.
    pub async fn limits(&self) -> results::Limits {
        self.runtimes.limits().await
    }

    // Documents.

    pub async fn update(&self, workspace: &str, path: &str) -> Result<results::UpdateResult> {
        self.runtimes.update(workspace, path).await
    }

    pub async fn sync(
        &self,
        sink: &dyn ProgressSink,
        workspace: &str,
        path: &str,
        options: SyncOptions,
    ) -> Result<results::SyncResult> {
        self.runtimes.sync(sink, workspace, path, options).await
    }

    pub async fn save(
        &self,
        sink: &dyn ProgressSink,
        workspace: &str,
        path: &str,
        scope: DiagnosticScope,
    ) -> Result<results::SaveResult> {
        self.runtimes.save(sink, workspace, path, scope).await
    }

    pub async fn close(&self, workspace: &str, path: &str) -> Result<results::CloseResult> {
        self.runtimes.close(workspace, path).await
    }

    pub async fn drop_workspace(&self, workspace: &str) -> Result<results::DropResult> {
        self.runtimes.drop_workspace(workspace).await
    }

    // Declarations.

    /// `lean_search`: declarations by name or statement pattern.
    pub async fn search(
        &self,
        sink: &dyn ProgressSink,
        workspace: &str,
        query: &str,
        limit: u64,
    ) -> Result<results::SearchResult> {
        self.runtimes.search(sink, workspace, query, limit).await
    }

    // Inspection at a pinned version.

    pub async fn hover(
        &self,
        sink: &dyn ProgressSink,
        at: &At<'_>,
    ) -> Result<results::HoverResult> {
        self.runtimes.hover(sink, at).await
    }

    pub async fn signature_help(
        &self,
        sink: &dyn ProgressSink,
        at: &At<'_>,
    ) -> Result<results::SignatureHelpResult> {
        self.runtimes.signature_help(sink, at).await
    }

    pub async fn definition(
        &self,
        sink: &dyn ProgressSink,
        at: &At<'_>,
    ) -> Result<results::LocationsResult> {
        self.runtimes.definition(sink, at).await
    }

    pub async fn references(
        &self,
        sink: &dyn ProgressSink,
        at: &At<'_>,
        which: References,
    ) -> Result<results::LocationsResult> {
        self.runtimes.references(sink, at, which).await
    }

    pub async fn document_symbols(
        &self,
        sink: &dyn ProgressSink,
        pinned: &Pinned<'_>,
        signatures: Signatures,
    ) -> Result<results::DocumentSymbolsResult> {
        self.runtimes
            .document_symbols(sink, pinned, signatures)
            .await
    }

    pub async fn workspace_symbols(
        &self,
        workspace: &str,
        query: &str,
    ) -> Result<results::WorkspaceSymbolsResult> {
        self.runtimes.workspace_symbols(workspace, query).await
    }

    pub async fn goals(
        &self,
        sink: &dyn ProgressSink,
        at: &At<'_>,
        mode: GoalsMode,
    ) -> Result<results::GoalsResult> {
        self.runtimes.goals(sink, at, mode).await
    }

    pub async fn term_goal(
        &self,
        sink: &dyn ProgressSink,
        at: &At<'_>,
    ) -> Result<results::TermGoalResult> {
        self.runtimes.term_goal(sink, at).await
    }

    pub async fn completions(
        &self,
        sink: &dyn ProgressSink,
        at: &At<'_>,
        limit: usize,
    ) -> Result<results::CompletionsResult> {
        self.runtimes.completions(sink, at, limit).await
    }

    pub async fn code_action_resolve(
        &self,
        sink: &dyn ProgressSink,
        pinned: &Pinned<'_>,
        code_action: &Map<String, Value>,
    ) -> Result<results::CodeActionResult> {
        self.runtimes
            .code_action_resolve(sink, pinned, code_action)
            .await
    }

    pub async fn declaration(
        &self,
        sink: &dyn ProgressSink,
        pinned: &Pinned<'_>,
        name: &str,
        spot: Option<Spot>,
    ) -> Result<Located> {
        self.runtimes.declaration(sink, pinned, name, spot).await
    }

    pub async fn todo(
        &self,
        sink: &dyn ProgressSink,
        args: &Todo<'_>,
    ) -> Result<results::TodoResult> {
        self.runtimes.todo(sink, args).await
    }

    // Probes and handles.

    pub async fn run_batch(&self, sink: &dyn ProgressSink, batch: &Batch<'_>) -> Result<BatchRun> {
        self.runtimes.run_batch(sink, batch).await
    }

    pub async fn suggest(&self, sink: &dyn ProgressSink, ask: &Suggest<'_>) -> Result<SuggestRun> {
        self.runtimes.suggest(sink, ask).await
    }

    pub async fn run_at(
        &self,
        sink: &dyn ProgressSink,
        at: &At<'_>,
        text: &str,
        budget: Budget,
        handles: Continue,
    ) -> Result<results::RunResult> {
        self.runtimes.run_at(sink, at, text, budget, handles).await
    }

    pub async fn run_with(
        &self,
        sink: &dyn ProgressSink,
        after: &After<'_>,
        text: &str,
        budget: Budget,
        taking: Taking,
    ) -> Result<results::RunResult> {
        self.runtimes
            .run_with(sink, after, text, budget, taking)
            .await
    }

    pub fn release(&self, after: &After<'_>) -> Result<results::ReleaseResult> {
        self.runtimes.release(after)
    }

    pub async fn handle_edit(
        &self,
        workspace: &str,
        path: &str,
        handle: &str,
    ) -> Result<results::HandleEditResult> {
        self.runtimes.handle_edit(workspace, path, handle).await
    }

    // Whole files.

    pub async fn run_code(
        &self,
        sink: &dyn ProgressSink,
        args: &RunCode<'_>,
    ) -> Result<results::RunCodeResult> {
        self.runtimes.run_code(sink, args).await
    }

    pub async fn verify(
        &self,
        sink: &dyn ProgressSink,
        args: &Verify<'_>,
    ) -> Result<results::VerifyResult> {
        self.runtimes.verify(sink, args).await
    }

    pub async fn collect_for_report(
        &self,
        root: &Root,
        warnings: &mut Vec<String>,
    ) -> results::FeedbackCollected {
        self.runtimes.collect_for_report(root, warnings).await
    }
}

#[cfg(test)]
mod tests {
    use super::env;
    use crate::results::{LimitUse, Limits};

    /// `beam_stats.limits` names each bound by the variable that sets it.
    #[test]
    fn limits_are_keyed_by_their_variables() {
        let any = LimitUse {
            limit: None,
            used: None,
            busy: None,
            per: "x",
        };
        let limits = Limits {
            max_runtimes: any.clone(),
            max_documents: any.clone(),
            shadow_slots: any.clone(),
            max_handles: any.clone(),
            max_handle_bytes: any.clone(),
            max_lean_rss_mib: any.clone(),
            max_lean_memory: crate::results::LeanMemoryUse {
                limit_mib: 1,
                source: String::new(),
                used_mib: 0,
                server_mib: 0,
                documents_mib: 0,
                shadows_mib: 0,
                snippets_mib: 0,
                processes: 0,
                worker_estimate_mib: 0,
                waited: 0,
                reclaimed: 0,
                over_budget: 0,
                refused: 0,
                headers_taken: 0,
                per: "x",
            },
            max_file_bytes: any.clone(),
            runtime_idle_secs: any,
        };
        let keys: Vec<String> = serde_json::to_value(limits)
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(
            keys,
            [
                env::MAX_RUNTIMES,
                env::MAX_DOCUMENTS,
                env::SHADOW_SLOTS,
                env::MAX_HANDLES,
                env::MAX_HANDLE_BYTES,
                env::MAX_LEAN_RSS_MIB,
                env::MAX_LEAN_MEMORY,
                env::MAX_FILE_BYTES,
                env::RUNTIME_IDLE_SECS,
            ]
        );
    }
}
