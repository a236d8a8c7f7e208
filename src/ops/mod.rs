//! The hand-written implementation of the generated `Operations` trait: one
//! method per tool, grouped by family in the submodules.

mod batch;
mod bundle;
mod completions;
mod documents;
mod errors;
mod feedback;
mod handle_edit;
mod inspect;
mod process;
mod redact;
mod run_code;
mod save;
mod speculate;
mod term_goal;
mod todo;
mod verify;

use std::sync::Arc;

use crate::broker::edit::Mode;
use crate::broker::{Broker, Budget, Continue, RunAt, Taking};
use crate::replica::ReplicaId;
use crate::results::*;
use crate::stats::Stats;
use crate::surface::*;
use inspect::At;

/// What each operation answers: its tool's typed result, or a tool error.
type Answer<T> = Result<T, ToolError>;

impl From<DiagnosticScope> for crate::broker::DiagnosticScope {
    fn from(scope: DiagnosticScope) -> Self {
        match scope {
            DiagnosticScope::Errors => crate::broker::DiagnosticScope::Errors,
            DiagnosticScope::All => crate::broker::DiagnosticScope::All,
        }
    }
}

impl From<GoalsMode> for crate::broker::GoalsMode {
    fn from(mode: GoalsMode) -> Self {
        match mode {
            GoalsMode::Before => crate::broker::GoalsMode::Before,
            GoalsMode::After => crate::broker::GoalsMode::After,
        }
    }
}

/// The server's operations: process utilities plus the Lean broker.
pub struct Beam {
    stats: Arc<Stats>,
    broker: Broker,
    /// Named in `beam_version` and `beam_stats`.
    replica: ReplicaId,
}

impl Beam {
    /// A server named `<hostname>:stdio` until [`Beam::with_replica`] names it.
    pub fn new(stats: Arc<Stats>, broker: Broker) -> Self {
        Self {
            stats,
            broker,
            replica: ReplicaId::default_for(None),
        }
    }

    pub fn with_replica(self, replica: ReplicaId) -> Self {
        Self { replica, ..self }
    }

    /// Tear down every workspace runtime (transport shutdown).
    pub async fn shutdown(&self) {
        self.broker.shutdown().await;
    }
}

impl Operations for Beam {
    async fn beam_version(
        &self,
        _ctx: &CallContext,
        _args: BeamVersionArgs,
    ) -> Answer<VersionResult> {
        Ok(process::version(&self.replica))
    }

    async fn beam_stats(&self, _ctx: &CallContext, _args: BeamStatsArgs) -> Answer<StatsResult> {
        Ok(process::stats(
            &self.stats,
            &self.replica,
            self.broker.stats(),
            self.broker.limits().await,
        ))
    }

    async fn beam_feedback_report(
        &self,
        _ctx: &CallContext,
        args: BeamFeedbackReportArgs,
    ) -> Answer<FeedbackResult> {
        feedback::report(&self.broker, &args).await
    }

    async fn lean_drop_workspace(
        &self,
        _ctx: &CallContext,
        args: LeanDropWorkspaceArgs,
    ) -> Answer<DropResult> {
        documents::drop_workspace(&self.broker, &args.workspace).await
    }

    async fn lean_run_at(&self, ctx: &CallContext, args: LeanRunAtArgs) -> Answer<RunResult> {
        speculate::run_at(
            &self.broker,
            ctx,
            &RunAt {
                workspace: &args.workspace.root,
                path: &args.path,
                version: args.version,
                line: args.line,
                character: args.character,
            },
            &args.text,
            Budget::new(args.max_heartbeats, args.timeout_ms),
            Continue::NoHandles,
        )
        .await
    }

    async fn lean_run_at_handle(
        &self,
        ctx: &CallContext,
        args: LeanRunAtHandleArgs,
    ) -> Answer<RunResult> {
        speculate::run_at(
            &self.broker,
            ctx,
            &RunAt {
                workspace: &args.workspace.root,
                path: &args.path,
                version: args.version,
                line: args.line,
                character: args.character,
            },
            &args.text,
            Budget::new(args.max_heartbeats, args.timeout_ms),
            Continue::WithHandles,
        )
        .await
    }

    async fn lean_run_batch(
        &self,
        ctx: &CallContext,
        args: LeanRunBatchArgs,
    ) -> Answer<BatchResult> {
        let from = match (&args.handle, args.version, args.line, args.character) {
            (Some(handle), None, None, None) => batch::From::Handle {
                path: &args.path,
                handle,
            },
            (None, Some(version), Some(line), Some(character)) => batch::From::Position(RunAt {
                workspace: &args.workspace.root,
                path: &args.path,
                version,
                line,
                character,
            }),
            _ => {
                return Err(ToolError::new(
                    ErrorCode::InvalidParams,
                    "give either version, line and character (a position) or handle, not both",
                ));
            }
        };
        batch::run_batch(
            &self.broker,
            ctx,
            &batch::Batch {
                workspace: &args.workspace,
                from,
                texts: &args.texts,
                stop_on_first_close: args.stop_on_first_close,
                handles: args.handles,
                budget: Budget::new(args.max_heartbeats, args.timeout_ms),
            },
        )
        .await
    }

    async fn lean_hover(&self, ctx: &CallContext, args: LeanHoverArgs) -> Answer<HoverResult> {
        inspect::hover(&self.broker, ctx, &At::from(&args)).await
    }

    async fn lean_signature_help(
        &self,
        ctx: &CallContext,
        args: LeanSignatureHelpArgs,
    ) -> Answer<SignatureHelpResult> {
        inspect::signature_help(&self.broker, ctx, &At::from(&args)).await
    }

    async fn lean_completions(
        &self,
        ctx: &CallContext,
        args: LeanCompletionsArgs,
    ) -> Answer<CompletionsResult> {
        completions::completions(&self.broker, ctx, &args).await
    }

    async fn lean_definition(
        &self,
        ctx: &CallContext,
        args: LeanDefinitionArgs,
    ) -> Answer<LocationsResult> {
        inspect::definition(&self.broker, ctx, &At::from(&args)).await
    }

    async fn lean_references(
        &self,
        ctx: &CallContext,
        args: LeanReferencesArgs,
    ) -> Answer<LocationsResult> {
        inspect::references(
            &self.broker,
            ctx,
            &At::from(&args),
            args.include_declaration,
        )
        .await
    }

    async fn lean_document_symbols(
        &self,
        ctx: &CallContext,
        args: LeanDocumentSymbolsArgs,
    ) -> Answer<DocumentSymbolsResult> {
        inspect::document_symbols(
            &self.broker,
            ctx,
            &args.workspace,
            &args.path,
            args.version,
            args.signatures,
        )
        .await
    }

    async fn lean_workspace_symbols(
        &self,
        _ctx: &CallContext,
        args: LeanWorkspaceSymbolsArgs,
    ) -> Answer<WorkspaceSymbolsResult> {
        inspect::workspace_symbols(&self.broker, &args.workspace, &args.query).await
    }

    async fn lean_goals(&self, ctx: &CallContext, args: LeanGoalsArgs) -> Answer<GoalsResult> {
        inspect::goals(&self.broker, ctx, &At::from(&args), args.mode).await
    }

    async fn lean_term_goal(
        &self,
        ctx: &CallContext,
        args: LeanTermGoalArgs,
    ) -> Answer<TermGoalResult> {
        term_goal::term_goal(&self.broker, ctx, &At::from(&args)).await
    }

    async fn lean_todo(&self, ctx: &CallContext, args: LeanTodoArgs) -> Answer<TodoResult> {
        todo::todo(&self.broker, ctx, &args).await
    }

    async fn lean_code_action_resolve(
        &self,
        ctx: &CallContext,
        args: LeanCodeActionResolveArgs,
    ) -> Answer<CodeActionResult> {
        inspect::code_action_resolve(
            &self.broker,
            ctx,
            &args.workspace,
            &args.path,
            args.version,
            &args.code_action,
        )
        .await
    }

    async fn lean_run_with(&self, ctx: &CallContext, args: LeanRunWithArgs) -> Answer<RunResult> {
        speculate::run_with(
            &self.broker,
            ctx,
            &speculate::After {
                workspace: &args.workspace,
                path: &args.path,
                handle: &args.handle,
            },
            &args.text,
            Budget::new(args.max_heartbeats, args.timeout_ms),
            Taking::Keep,
        )
        .await
    }

    async fn lean_run_with_linear(
        &self,
        ctx: &CallContext,
        args: LeanRunWithLinearArgs,
    ) -> Answer<RunResult> {
        speculate::run_with(
            &self.broker,
            ctx,
            &speculate::After {
                workspace: &args.workspace,
                path: &args.path,
                handle: &args.handle,
            },
            &args.text,
            Budget::new(args.max_heartbeats, args.timeout_ms),
            Taking::Consume,
        )
        .await
    }

    async fn lean_release(
        &self,
        _ctx: &CallContext,
        args: LeanReleaseArgs,
    ) -> Answer<ReleaseResult> {
        speculate::release(
            &self.broker,
            &speculate::After {
                workspace: &args.workspace,
                path: &args.path,
                handle: &args.handle,
            },
        )
    }

    async fn lean_run_code(
        &self,
        ctx: &CallContext,
        args: LeanRunCodeArgs,
    ) -> Answer<RunCodeResult> {
        run_code::run_code(
            &self.broker,
            ctx,
            &run_code::RunCode {
                workspace: &args.workspace,
                code: &args.code,
                max_heartbeats: args.max_heartbeats,
                timeout_ms: args.timeout_ms,
            },
        )
        .await
    }

    async fn lean_verify(&self, ctx: &CallContext, args: LeanVerifyArgs) -> Answer<VerifyResult> {
        verify::verify(
            &self.broker,
            ctx,
            &verify::Verify {
                workspace: &args.workspace,
                path: &args.path,
                version: args.version,
                declarations: &args.declarations,
                allowed_axioms: &args.allowed_axioms,
            },
        )
        .await
    }

    async fn lean_handle_edit(
        &self,
        _ctx: &CallContext,
        args: LeanHandleEditArgs,
    ) -> Answer<HandleEditResult> {
        handle_edit::handle_edit(&self.broker, &args.workspace, &args.path, &args.handle).await
    }

    async fn lean_update(&self, _ctx: &CallContext, args: LeanUpdateArgs) -> Answer<UpdateResult> {
        documents::update(&self.broker, &args.workspace, &args.path).await
    }

    async fn lean_sync(&self, ctx: &CallContext, args: LeanSyncArgs) -> Answer<SyncResult> {
        let items = args.diagnostics_in_result;
        documents::sync(
            &self.broker,
            ctx,
            &args.workspace,
            &args.path,
            args.diagnostic_scope,
            items,
            Mode::IfChanged,
        )
        .await
    }

    async fn lean_refresh(&self, ctx: &CallContext, args: LeanRefreshArgs) -> Answer<SyncResult> {
        let items = args.diagnostics_in_result;
        documents::sync(
            &self.broker,
            ctx,
            &args.workspace,
            &args.path,
            args.diagnostic_scope,
            items,
            Mode::Reelaborate,
        )
        .await
    }

    async fn lean_save(&self, ctx: &CallContext, args: LeanSaveArgs) -> Answer<SaveResult> {
        save::save(
            &self.broker,
            ctx,
            &args.workspace,
            &args.path,
            args.diagnostic_scope,
        )
        .await
    }

    async fn lean_close_save(
        &self,
        ctx: &CallContext,
        args: LeanCloseSaveArgs,
    ) -> Answer<CloseSaveResult> {
        save::close_save(
            &self.broker,
            ctx,
            &args.workspace,
            &args.path,
            args.diagnostic_scope,
        )
        .await
    }

    async fn lean_close(&self, _ctx: &CallContext, args: LeanCloseArgs) -> Answer<CloseResult> {
        documents::close(&self.broker, &args.workspace, &args.path).await
    }
}
