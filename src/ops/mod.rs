//! The hand-written implementation of the generated `Operations` trait: one
//! method per tool, each turning its arguments into a broker intent (the
//! methods of [`Broker`]) and the broker's typed error into the tool error
//! (`errors.rs`). What is not the broker's lives here too: the process tools
//! (`beam_version`, `beam_stats`), and `beam_feedback_report` hands its
//! arguments to [`crate::feedback`].

mod args;
mod batch;
mod errors;
mod process;
mod suggest;

use std::sync::Arc;

use crate::broker::{After, Broker, Budget, Continue, EditMode, SyncOptions, Taking};
use crate::identity::ReplicaId;
use crate::results::*;
use crate::stats::Stats;
use crate::surface::*;
use args::{Addressed, at, pinned};

/// What each operation answers: its tool's typed result, or a tool error.
type Answer<T> = Result<T, ToolError>;

/// A run result with its goals in the form asked for (`structured_goals`).
fn run_goals(mut ran: RunResult, structured: Option<bool>) -> RunResult {
    let goals = ran.proof_state.iter_mut().flat_map(|p| p.goals.iter_mut());
    GoalForm::of(structured).apply(goals);
    ran
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

    /// Tear down every workspace runtime (transport shutdown), then what the
    /// process keeps for `lean_verify` (one `Beam` per process).
    pub async fn shutdown(&self) {
        self.broker.shutdown().await;
        Broker::remove_verify_cache().await;
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
        Ok(crate::feedback::report(&self.broker, &args).await?)
    }

    async fn lean_drop_workspace(
        &self,
        _ctx: &CallContext,
        args: LeanDropWorkspaceArgs,
    ) -> Answer<DropResult> {
        Ok(self.broker.drop_workspace(&args.workspace.root).await?)
    }

    async fn lean_run_at(&self, ctx: &CallContext, args: LeanRunAtArgs) -> Answer<RunResult> {
        let budget = Budget::new(args.max_heartbeats, args.timeout_ms);
        let (place, declaration) = args.address().resolve(&self.broker, ctx).await?;
        let ran = self
            .broker
            .run_at(ctx, &place, &args.text, budget, Continue::NoHandles)
            .await?;
        Ok(RunResult {
            declaration,
            ..run_goals(ran, args.structured_goals)
        })
    }

    async fn lean_run_at_handle(
        &self,
        ctx: &CallContext,
        args: LeanRunAtHandleArgs,
    ) -> Answer<RunResult> {
        let budget = Budget::new(args.max_heartbeats, args.timeout_ms);
        let (place, declaration) = args.address().resolve(&self.broker, ctx).await?;
        let ran = self
            .broker
            .run_at(ctx, &place, &args.text, budget, Continue::WithHandles)
            .await?;
        Ok(RunResult {
            declaration,
            ..run_goals(ran, args.structured_goals)
        })
    }

    async fn lean_run_batch(
        &self,
        ctx: &CallContext,
        args: LeanRunBatchArgs,
    ) -> Answer<BatchResult> {
        batch::run_batch(&self.broker, ctx, &args).await
    }

    async fn lean_suggest(
        &self,
        ctx: &CallContext,
        args: LeanSuggestArgs,
    ) -> Answer<SuggestResult> {
        suggest::suggest(&self.broker, ctx, &args).await
    }

    async fn lean_hover(&self, ctx: &CallContext, args: LeanHoverArgs) -> Answer<HoverResult> {
        Ok(self.broker.hover(ctx, &at(&args)).await?)
    }

    async fn lean_signature_help(
        &self,
        ctx: &CallContext,
        args: LeanSignatureHelpArgs,
    ) -> Answer<SignatureHelpResult> {
        Ok(self.broker.signature_help(ctx, &at(&args)).await?)
    }

    async fn lean_completions(
        &self,
        ctx: &CallContext,
        args: LeanCompletionsArgs,
    ) -> Answer<CompletionsResult> {
        // The schema's minimum is 1.
        let limit = usize::try_from(args.limit).unwrap_or(1);
        Ok(self.broker.completions(ctx, &at(&args), limit).await?)
    }

    async fn lean_definition(
        &self,
        ctx: &CallContext,
        args: LeanDefinitionArgs,
    ) -> Answer<LocationsResult> {
        Ok(self.broker.definition(ctx, &at(&args)).await?)
    }

    async fn lean_references(
        &self,
        ctx: &CallContext,
        args: LeanReferencesArgs,
    ) -> Answer<LocationsResult> {
        let which = args::references(args.include_declaration);
        Ok(self.broker.references(ctx, &at(&args), which).await?)
    }

    async fn lean_document_symbols(
        &self,
        ctx: &CallContext,
        args: LeanDocumentSymbolsArgs,
    ) -> Answer<DocumentSymbolsResult> {
        let signatures = args::signatures(args.signatures);
        Ok(self
            .broker
            .document_symbols(
                ctx,
                &pinned(&args.workspace, &args.path, args.version),
                signatures,
            )
            .await?)
    }

    async fn lean_workspace_symbols(
        &self,
        _ctx: &CallContext,
        args: LeanWorkspaceSymbolsArgs,
    ) -> Answer<WorkspaceSymbolsResult> {
        Ok(self
            .broker
            .workspace_symbols(&args.workspace.root, &args.query)
            .await?)
    }

    async fn lean_search(&self, ctx: &CallContext, args: LeanSearchArgs) -> Answer<SearchResult> {
        // The schema's minimum is 1; the broker checks the maximum.
        let limit = u64::try_from(args.limit).unwrap_or(1);
        Ok(self
            .broker
            .search(ctx, &args.workspace.root, &args.query, limit)
            .await?)
    }

    async fn lean_goals(&self, ctx: &CallContext, args: LeanGoalsArgs) -> Answer<GoalsResult> {
        let (place, declaration) = args.address().resolve(&self.broker, ctx).await?;
        let mut goals = self.broker.goals(ctx, &place, args.mode.into()).await?;
        GoalForm::of(args.structured_goals).apply(goals.goals.iter_mut());
        Ok(GoalsResult {
            declaration,
            ..goals
        })
    }

    async fn lean_term_goal(
        &self,
        ctx: &CallContext,
        args: LeanTermGoalArgs,
    ) -> Answer<TermGoalResult> {
        let (place, declaration) = args.address().resolve(&self.broker, ctx).await?;
        let mut goal = self.broker.term_goal(ctx, &place).await?;
        GoalForm::of(args.structured_goals).apply(goal.goal.iter_mut());
        Ok(TermGoalResult {
            declaration,
            ..goal
        })
    }

    async fn lean_todo(&self, ctx: &CallContext, args: LeanTodoArgs) -> Answer<TodoResult> {
        let Some(name) = args.declaration.as_deref() else {
            return Ok(self.broker.todo(ctx, &args::todo(&args, None)).await?);
        };
        if args.start_line.is_some()
            || args.start_character.is_some()
            || args.end_line.is_some()
            || args.end_character.is_some()
        {
            return Err(ToolError::new(
                ErrorCode::InvalidParams,
                "give either a range (start_line…end_character) or declaration, not both",
            ));
        }
        let doc = pinned(&args.workspace, &args.path, args.version);
        let found = self.broker.declaration(ctx, &doc, name, None).await?;
        let todo = self
            .broker
            .todo(ctx, &args::todo(&args, Some((found.start, found.end))))
            .await?;
        Ok(TodoResult {
            declaration: Some(found.at),
            ..todo
        })
    }

    async fn lean_code_action_resolve(
        &self,
        ctx: &CallContext,
        args: LeanCodeActionResolveArgs,
    ) -> Answer<CodeActionResult> {
        let doc = pinned(&args.workspace, &args.path, args.version);
        Ok(self
            .broker
            .code_action_resolve(ctx, &doc, &args.code_action)
            .await?)
    }

    async fn lean_run_with(&self, ctx: &CallContext, args: LeanRunWithArgs) -> Answer<RunResult> {
        let after = args::after(&args.workspace, &args.path, &args.handle);
        let budget = Budget::new(args.max_heartbeats, args.timeout_ms);
        let ran = self
            .broker
            .run_with(ctx, &after, &args.text, budget, Taking::Keep)
            .await?;
        Ok(run_goals(ran, args.structured_goals))
    }

    async fn lean_run_with_linear(
        &self,
        ctx: &CallContext,
        args: LeanRunWithLinearArgs,
    ) -> Answer<RunResult> {
        let after = args::after(&args.workspace, &args.path, &args.handle);
        let budget = Budget::new(args.max_heartbeats, args.timeout_ms);
        let ran = self
            .broker
            .run_with(ctx, &after, &args.text, budget, Taking::Consume)
            .await?;
        Ok(run_goals(ran, args.structured_goals))
    }

    async fn lean_release(
        &self,
        _ctx: &CallContext,
        args: LeanReleaseArgs,
    ) -> Answer<ReleaseResult> {
        let after: After = args::after(&args.workspace, &args.path, &args.handle);
        Ok(self.broker.release(&after)?)
    }

    async fn lean_run_code(
        &self,
        ctx: &CallContext,
        args: LeanRunCodeArgs,
    ) -> Answer<RunCodeResult> {
        Ok(self.broker.run_code(ctx, &args::run_code(&args)).await?)
    }

    async fn lean_verify(&self, ctx: &CallContext, args: LeanVerifyArgs) -> Answer<VerifyResult> {
        let declarations = args::declarations(&args.declarations);
        let verify = args::verify(&args, &declarations);
        Ok(self.broker.verify(ctx, &verify).await?)
    }

    async fn lean_handle_edit(
        &self,
        _ctx: &CallContext,
        args: LeanHandleEditArgs,
    ) -> Answer<HandleEditResult> {
        Ok(self
            .broker
            .handle_edit(&args.workspace.root, &args.path, &args.handle)
            .await?)
    }

    async fn lean_update(&self, _ctx: &CallContext, args: LeanUpdateArgs) -> Answer<UpdateResult> {
        Ok(self.broker.update(&args.workspace.root, &args.path).await?)
    }

    async fn lean_sync(&self, ctx: &CallContext, args: LeanSyncArgs) -> Answer<SyncResult> {
        let options = SyncOptions {
            scope: args.diagnostic_scope.into(),
            items: args.diagnostics_in_result,
            mode: EditMode::IfChanged,
        };
        Ok(self
            .broker
            .sync(ctx, &args.workspace.root, &args.path, options)
            .await?)
    }

    async fn lean_refresh(&self, ctx: &CallContext, args: LeanRefreshArgs) -> Answer<SyncResult> {
        let options = SyncOptions {
            scope: args.diagnostic_scope.into(),
            items: args.diagnostics_in_result,
            mode: EditMode::Reelaborate,
        };
        Ok(self
            .broker
            .sync(ctx, &args.workspace.root, &args.path, options)
            .await?)
    }

    async fn lean_save(&self, ctx: &CallContext, args: LeanSaveArgs) -> Answer<SaveResult> {
        let scope = args.diagnostic_scope.into();
        Ok(self
            .broker
            .save(ctx, &args.workspace.root, &args.path, scope)
            .await?)
    }

    /// Save, then close; a save that wrote nothing leaves the document open.
    async fn lean_close_save(
        &self,
        ctx: &CallContext,
        args: LeanCloseSaveArgs,
    ) -> Answer<CloseSaveResult> {
        let (root, path) = (&args.workspace.root, &args.path);
        let scope = args.diagnostic_scope.into();
        let saved = self.broker.save(ctx, root, path, scope).await?;
        if saved.written {
            self.broker.close(root, path).await?;
        }
        Ok(CloseSaveResult {
            closed: saved.written,
            saved,
        })
    }

    async fn lean_close(&self, _ctx: &CallContext, args: LeanCloseArgs) -> Answer<CloseResult> {
        Ok(self.broker.close(&args.workspace.root, &args.path).await?)
    }
}
