//! The result of `lean_suggest`: the suggestions Lean's suggestion tactics
//! made at one place, each checked by running it, ranked, with the edit
//! that puts it into the file; and how each tactic fared.

use schemars::JsonSchema;
use serde::Serialize;

use super::{
    DeclarationAt, Goal, Outcome, Placeholder, RunMessage, StepKind, TextEdit, WorkspaceEcho,
};

/// How a suggestion tactic's own run at the place ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TacticStatus {
    /// It offered suggestions ("Try this"), checked in `suggestions`.
    Suggested,
    /// It closed the goals itself: its own text is a suggestion.
    Closed,
    /// It left goals itself, offering nothing: its own text is a suggestion.
    Progressed,
    /// It ran and offered nothing (Lean's error in `message`).
    Failed,
    /// The toolchain does not have it: Lean knows no such tactic, or its
    /// elaborator or a constant it is built on is missing (`message`).
    Unavailable,
    /// It used `sorry` and offered nothing.
    Sorry,
    Timeout,
    Heartbeats,
    Crashed,
}

/// One suggestion tactic and how it fared.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TacticTried {
    pub tactic: String,
    pub status: TacticStatus,
    /// Lean's first error (failed, unavailable), or a crash's cause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One suggestion, checked by running it at the place.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Suggestion {
    /// What goes at the place (in a term: `by` and the tactic).
    pub text: String,
    /// The tactics that offered it (a tactic that closed or left goals by
    /// itself offers its own text).
    pub from: Vec<String>,
    /// Its own run, as a `lean_run_batch` candidate's.
    pub outcome: Outcome,
    /// Puts it into the file at `version`: replace `range` by `newText`.
    pub edit: TextEdit,
    /// The `sorry` or hole the edit replaces; absent when it inserts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaces: Option<Placeholder>,
    /// The goals it leaves (progressed), or before its failing step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goals: Option<Vec<Goal>>,
    /// As in `lean_run_at`; none left out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<RunMessage>,
    /// A proof handle continuing after it (progressed, or any from a
    /// handle).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    /// Why a crashed check has no messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `lean_suggest`: the suggestions, closing ones first, then shorter.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SuggestResult {
    pub workspace: WorkspaceEcho,
    pub path: String,
    /// The user document version the tactics ran against.
    pub version: u64,
    /// The declaration named instead of a position, and where it resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declaration: Option<DeclarationAt>,
    /// The addressed line (from a position).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_text: Option<String>,
    /// `tactic`, or `term` (each tactic ran as `by` and it).
    pub mode: StepKind,
    /// The goals the tactics start from.
    pub start_goals: Vec<Goal>,
    /// Ranked: closed, progressed, then the rest; shorter first.
    pub suggestions: Vec<Suggestion>,
    /// Checked suggestions left out by `limit`.
    #[serde(skip_serializing_if = "is_zero")]
    pub more: usize,
    /// Suggestions not checked (beyond the checks one call runs), left out.
    #[serde(skip_serializing_if = "is_zero")]
    pub unchecked: usize,
    /// Each tactic, in the order given.
    pub tactics: Vec<TacticTried>,
    /// Present (true) when the file changed on disk since the version was
    /// read from it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disk_changed: bool,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
