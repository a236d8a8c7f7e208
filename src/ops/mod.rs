//! The hand-written implementation of the generated `Operations` trait: one
//! method per tool, grouped by family in the submodules.

mod process;

use std::sync::Arc;

use crate::stats::Stats;
use crate::surface::*;

/// The server's operations: process utilities plus the Lean broker.
pub struct Beam {
    stats: Arc<Stats>,
}

impl Beam {
    pub fn new(stats: Arc<Stats>) -> Self {
        Self { stats }
    }

    /// Tear down every workspace runtime (transport shutdown).
    pub async fn shutdown(&self) {}
}

/// The tool error of a Lean tool whose implementation has not landed yet.
fn unavailable(tool: &str, capability: &str) -> ToolOutcome {
    Err(ToolError::new(
        ErrorCode::Unavailable,
        format!("`{tool}` is not available in this build: {capability} has not been implemented yet"),
    )
    .with_data(serde_json::json!({ "tool": tool, "capability": capability })))
}

impl Operations for Beam {
    async fn beam_version(&self, _ctx: &CallContext, _args: BeamVersionArgs) -> ToolOutcome {
        Ok(process::version())
    }

    async fn beam_stats(&self, _ctx: &CallContext, _args: BeamStatsArgs) -> ToolOutcome {
        Ok(process::stats(&self.stats))
    }

    async fn beam_feedback_report(&self, _ctx: &CallContext, _args: BeamFeedbackReportArgs) -> ToolOutcome {
        unavailable("beam_feedback_report", "feedback reports")
    }

    async fn lean_drop_workspace(&self, _ctx: &CallContext, _args: LeanDropWorkspaceArgs) -> ToolOutcome {
        unavailable("lean_drop_workspace", "the Lean broker")
    }

    async fn lean_run_at(&self, _ctx: &CallContext, _args: LeanRunAtArgs) -> ToolOutcome {
        unavailable("lean_run_at", "speculative execution")
    }

    async fn lean_run_at_handle(&self, _ctx: &CallContext, _args: LeanRunAtHandleArgs) -> ToolOutcome {
        unavailable("lean_run_at_handle", "speculative execution")
    }

    async fn lean_hover(&self, _ctx: &CallContext, _args: LeanHoverArgs) -> ToolOutcome {
        unavailable("lean_hover", "inspection")
    }

    async fn lean_signature_help(&self, _ctx: &CallContext, _args: LeanSignatureHelpArgs) -> ToolOutcome {
        unavailable("lean_signature_help", "inspection")
    }

    async fn lean_definition(&self, _ctx: &CallContext, _args: LeanDefinitionArgs) -> ToolOutcome {
        unavailable("lean_definition", "inspection")
    }

    async fn lean_references(&self, _ctx: &CallContext, _args: LeanReferencesArgs) -> ToolOutcome {
        unavailable("lean_references", "inspection")
    }

    async fn lean_document_symbols(&self, _ctx: &CallContext, _args: LeanDocumentSymbolsArgs) -> ToolOutcome {
        unavailable("lean_document_symbols", "inspection")
    }

    async fn lean_workspace_symbols(&self, _ctx: &CallContext, _args: LeanWorkspaceSymbolsArgs) -> ToolOutcome {
        unavailable("lean_workspace_symbols", "inspection")
    }

    async fn lean_goals(&self, _ctx: &CallContext, _args: LeanGoalsArgs) -> ToolOutcome {
        unavailable("lean_goals", "inspection")
    }

    async fn lean_todo(&self, _ctx: &CallContext, _args: LeanTodoArgs) -> ToolOutcome {
        unavailable("lean_todo", "inspection")
    }

    async fn lean_code_action_resolve(&self, _ctx: &CallContext, _args: LeanCodeActionResolveArgs) -> ToolOutcome {
        unavailable("lean_code_action_resolve", "inspection")
    }

    async fn lean_run_with(&self, _ctx: &CallContext, _args: LeanRunWithArgs) -> ToolOutcome {
        unavailable("lean_run_with", "proof handles")
    }

    async fn lean_run_with_linear(&self, _ctx: &CallContext, _args: LeanRunWithLinearArgs) -> ToolOutcome {
        unavailable("lean_run_with_linear", "proof handles")
    }

    async fn lean_release(&self, _ctx: &CallContext, _args: LeanReleaseArgs) -> ToolOutcome {
        unavailable("lean_release", "proof handles")
    }

    async fn lean_update(&self, _ctx: &CallContext, _args: LeanUpdateArgs) -> ToolOutcome {
        unavailable("lean_update", "the Lean broker")
    }

    async fn lean_sync(&self, _ctx: &CallContext, _args: LeanSyncArgs) -> ToolOutcome {
        unavailable("lean_sync", "the Lean broker")
    }

    async fn lean_refresh(&self, _ctx: &CallContext, _args: LeanRefreshArgs) -> ToolOutcome {
        unavailable("lean_refresh", "the Lean broker")
    }

    async fn lean_save(&self, _ctx: &CallContext, _args: LeanSaveArgs) -> ToolOutcome {
        unavailable("lean_save", "checkpoints")
    }

    async fn lean_close_save(&self, _ctx: &CallContext, _args: LeanCloseSaveArgs) -> ToolOutcome {
        unavailable("lean_close_save", "checkpoints")
    }

    async fn lean_close(&self, _ctx: &CallContext, _args: LeanCloseArgs) -> ToolOutcome {
        unavailable("lean_close", "the Lean broker")
    }
}
