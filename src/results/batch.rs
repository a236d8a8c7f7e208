//! The result of `lean_run_batch`: one verdict per candidate, in the order
//! of the candidate texts.

use schemars::JsonSchema;
use serde::Serialize;

use super::{DeclarationAt, Goal, RunMessage, StepKind, WorkspaceEcho};

/// What became of one candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// No goals remain (a command or a term: no error).
    Closed,
    /// Goals remain, no error.
    Progressed,
    /// No error, but the step used `sorry` (directly, through `first` or
    /// another combinator, or a macro such as `admit`): not a proof.
    Sorry,
    /// An error: its messages, and the goals before the failing step.
    Failed,
    /// `timeout_ms` ran out.
    Timeout,
    /// `max_heartbeats` ran out.
    Heartbeats,
    /// Not run, or stopped, because an earlier candidate closed the goals
    /// (`stop_on_first_close`).
    Skipped,
    /// Lean's worker died under it.
    Crashed,
}

/// How a candidate's goals differ from the goals it started from: indices
/// into `start_goals` and into the candidate's `goals`, goals
/// compared as Lean prints them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct GoalDiff {
    /// Starting goals no longer there.
    pub closed: Vec<usize>,
    /// Goals that were not there at the start.
    pub added: Vec<usize>,
    /// For each added goal, the hypotheses gained and lost against the
    /// starting goal it came from (the one of its case name, else the first
    /// closed one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hyps: Vec<HypsDiff>,
}

/// Hypothesis lines (`h : T`) gained and lost by one goal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct HypsDiff {
    /// The goal, in the candidate's `goals`.
    pub goal: usize,
    /// The starting goal it is compared with, in `start_goals`.
    pub from: usize,
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

/// One candidate's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Candidate {
    pub outcome: Outcome,
    /// As in `lean_run_at`; none left out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<RunMessage>,
    /// The goals after it (progressed), or before its failing step (failed;
    /// left out when they are `start_goals`: then `goals_at_start`). A term
    /// that does not elaborate: the type still expected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goals: Option<Vec<Goal>>,
    /// Present (true) for a failed candidate whose goals before its failing
    /// step are `start_goals`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub goals_at_start: bool,
    /// The goals it left (progressed), equal exactly when the pretty-printed
    /// goals are equal; stable across calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// The first earlier candidate, by index, with the same fingerprint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_as: Option<usize>,
    /// Against `start_goals` (progressed, with `diff`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<GoalDiff>,
    /// A proof handle continuing after it (`handles`): a step that
    /// progressed, a command, or any step from a handle (for
    /// `lean_handle_edit`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    /// Why a crashed candidate has no messages: the error Lean's worker gave.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `lean_run_batch`: a verdict per candidate, in the order of `texts`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct BatchResult {
    pub workspace: WorkspaceEcho,
    pub path: String,
    /// The user document version the candidates ran against.
    pub version: u64,
    /// The declaration named instead of a position, and where it resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declaration: Option<DeclarationAt>,
    /// The addressed line (from a position).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_text: Option<String>,
    /// What the candidates are.
    pub mode: StepKind,
    /// The goals the candidates start from.
    pub start_goals: Vec<Goal>,
    /// Their fingerprint (tactic mode), as a candidate's `fingerprint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_fingerprint: Option<String>,
    /// One per text, in the order of `texts`.
    pub candidates: Vec<Candidate>,
    /// The first candidate, by index, that closed the goals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_closed: Option<usize>,
    /// Present (true) when the file changed on disk since the version was
    /// read from it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disk_changed: bool,
    /// Present when the memory budget (`LEAN_BEAM_MAX_LEAN_MEMORY`) made
    /// candidates wait for, reuse or reclaim a Lean worker: what it did, with
    /// the figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
}
