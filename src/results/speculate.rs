//! Results of the speculative tools: the run result of `lean_run_at`,
//! `lean_run_at_handle`, `lean_run_with`, `lean_run_with_linear`, and
//! `lean_release`.

use schemars::JsonSchema;
use serde::Serialize;

use super::{DeclarationAt, Goal, GoalSource, Outcome, Range, Severity, WorkspaceEcho};

/// What a step's text is, wherever one runs (a probe's plan, a handle's
/// chain, a batch's candidates): tactics in a tactic block, one command
/// between commands, or a term in place of the term at a position (a
/// `sorry`, a hole). Its variants carry no doc comments: the output schema
/// stays a plain string enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    Tactic,
    Command,
    Term,
}

/// One message Lean gave about a step (or, marked `before_step`, about the
/// text before it). `range` is in the user's file and only there: present
/// for a message on the user's own text; a message on the step's text has
/// `step_range` instead, counted from the step's first character (the
/// user's file does not hold the step). `unplaced` marks a message on
/// neither (on text the server put around the step).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RunMessage {
    pub severity: Severity,
    pub category: super::DiagnosticCategory,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<Range>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_range: Option<Range>,
    /// Present (true) for a message with no place in the user's file nor in
    /// the step.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unplaced: bool,
    /// Present (true) for a message about the text before the step.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub before_step: bool,
    /// A `suggestion`'s edits ("Try this"), each replacing the message's
    /// own place: `range` in the file, or `step_range` in the step's text.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<super::TextEdit>,
}

/// When the goals of a proof state were taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProofStateAt {
    /// After a step that succeeded.
    AfterStep,
    /// Before a step that failed: what to work from.
    BeforeFailedStep,
}

/// The goals after a tactic step, or, for a term step, the type still
/// expected (none once the term elaborates).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ProofState {
    pub goals: Vec<Goal>,
    pub source: GoalSource,
    pub at: ProofStateAt,
}

/// What a speculative step did.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RunResult {
    pub workspace: WorkspaceEcho,
    /// The declaration named instead of a position, and where it resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declaration: Option<DeclarationAt>,
    /// The addressed line (`lean_run_at*`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_text: Option<String>,
    /// The verdict, the same for the same text at the same place from every
    /// probe tool: `closed`, `progressed`, `failed`, `sorry`, `heartbeats`,
    /// `timeout` or `crashed` (as `lean_run_batch` says it).
    pub outcome: Outcome,
    /// No error (a step that used `sorry` succeeds, and is no proof).
    pub success: bool,
    /// Present (true) when the step made its declaration use `sorry`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sorry: bool,
    pub messages: Vec<RunMessage>,
    /// Trace messages (`[Meta.synthInstance] …`), apart from the others.
    pub traces: Vec<RunMessage>,
    /// Left out after a command step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proof_state: Option<ProofState>,
    /// A handle to continue from (`lean_run_at_handle`, `lean_run_with*`
    /// after a step that succeeded), else left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_handle: Option<String>,
    /// Present when a budget (`max_heartbeats`, `timeout_ms`) ran out: the
    /// step did not finish, which is neither a Lean error nor a success.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exhausted: Option<Exhausted>,
    /// Present (true) when the file changed on disk since the version probed
    /// was read from it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disk_changed: bool,
    /// Present when the memory budget (`LEAN_BEAM_MAX_LEAN_MEMORY`) made
    /// the probe wait for, reuse or reclaim a Lean worker: what it did, with
    /// the figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
}

/// A budget that ran out: a probe's step or a `lean_run_code` snippet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Exhausted {
    /// Lean's `maxHeartbeats` (its "maximum number of heartbeats" error).
    Heartbeats,
    /// `timeout_ms`: the step or snippet was abandoned and Lean told to stop.
    Timeout,
}

/// `lean_release`: the handle is released.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ReleaseResult {
    pub workspace: WorkspaceEcho,
    pub path: String,
    pub released: bool,
}
