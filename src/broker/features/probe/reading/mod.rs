//! One reading of a step: what Lean's diagnostics on a shadow say about the
//! step in it — success, its messages (placed in the user's file or in the
//! step, never on a shadow line), a budget run out, the goals Lean reports
//! unsolved, a `sorry` used — and the verdict that follows. Pure functions
//! over literal diagnostics and the step's [`Frame`]; every probe tool
//! (`lean_run_at`, `lean_run_with`, `lean_run_with_linear`, each
//! `lean_run_batch` candidate) reads its step here and nowhere else.

use lsp_types::DiagnosticSeverity;

use crate::broker::engine::diagnostics;
use crate::broker::engine::shadow::Placement;
use crate::broker::engine::try_this;
use crate::broker::features::goals;
use crate::lean_source::lexer::{self, LexemeKind, TokenKind};
use crate::lsp::protocol::Diagnostic;
use crate::results::{
    Candidate, DiagnosticCategory, Exhausted, Goal, GoalDiff, GoalSource, HypsDiff, Outcome,
    ProofState, ProofStateAt, Range, RunMessage, RunResult, Severity, StepKind, TextEdit,
    WorkspaceEcho,
};

/// Lean's message when `maxHeartbeats` runs out: "(deterministic) timeout at
/// `whnf`, maximum number of heartbeats (N) has been reached".
pub(super) const OUT_OF_HEARTBEATS: &str = "maximum number of heartbeats";

/// Where a step sits in the text Lean elaborated (shadow coordinates, with
/// any text the broker inserted taken out), and what surrounds it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Frame<'a> {
    /// The step's first character (what `step_range` counts from).
    pub(super) start: (u32, u32),
    /// Where the step's own messages begin (a term step: at the parenthesis
    /// put around it).
    pub(super) begin: (u32, u32),
    /// Where the declaration (or command) the step is in begins.
    pub(super) declaration: (u32, u32),
    /// Where the `skip` after a tactic step begins (its goals are what the
    /// step leaves): messages from there on are not the step's.
    pub(super) sentinel: Option<(u32, u32)>,
    pub(super) placement: Placement,
    /// The user's document's own diagnostics, in its coordinates.
    pub(super) baseline: &'a [Diagnostic],
    /// Lean could not take the shadow's header: the step never ran.
    pub(super) blocked: bool,
    /// The step's text holds `sorry` (or `admit`).
    pub(super) sorry_in_step: bool,
    /// The declaration's text outside the step holds `sorry` (or `admit`).
    pub(super) sorry_outside: bool,
    /// The shadow holds the step's whole declaration, the user's text around
    /// it (a term step): a new error anywhere in it is the step's. A tactic
    /// step or a command ends the shadow, so errors before it can come from
    /// what was cut after it (an alternative not provided, a command without
    /// its body) and are not the step's.
    pub(super) whole_declaration: bool,
}

/// What Lean's diagnostics say about one step.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Reading {
    pub(super) success: bool,
    pub(super) messages: Vec<RunMessage>,
    pub(super) traces: Vec<RunMessage>,
    pub(super) exhausted: Option<Exhausted>,
    /// The goals Lean reports unsolved at the end of the step's declaration
    /// (its "unsolved goals" error, parsed).
    pub(super) unsolved: Vec<Goal>,
    /// The step made its declaration use `sorry`: not a proof.
    pub(super) sorry: bool,
    /// Lean reported an error on the sentinel's line (it could not take
    /// `skip` there): its goals say nothing.
    pub(super) sentinel_failed: bool,
}

/// Whether `text` holds a `sorry` token or the `admit` tactic, in code.
pub(super) fn holds_sorry(text: &str) -> bool {
    lexer::scan(text).iter().any(|t| t.kind == TokenKind::Sorry)
        || lexer::lex(text)
            .iter()
            .any(|l| l.kind == LexemeKind::Word && &text[l.start..l.end] == "admit")
}

/// A range of the shadow in the user's file, when it starts in the user's
/// own text (before the step, or after a term step where the user's
/// declaration resumes); `None` for a range on the step's text or on text
/// the broker put there, which the user's file does not hold.
pub(super) fn user_range(range: lsp_types::Range, placement: &Placement) -> Option<Range> {
    let start = (range.start.line, range.start.character);
    let end = (range.end.line, range.end.character);
    let resumed = |p: (u32, u32)| placement.resume.is_some_and(|(shadow, _)| p >= shadow);
    let users = |p: (u32, u32)| p < placement.anchor || resumed(p);
    if !users(start) {
        return None;
    }
    // An end on the step's text stops where the step stands in the file.
    let end = if users(end) {
        placement.to_user(end)
    } else {
        placement.origin
    };
    Some(Range::new(placement.to_user(start), end))
}

/// Read Lean's diagnostics `items` on a shadow about the step in `frame`.
///
/// A message in the step is the step's (an error fails it). Before the step,
/// a warning that is not among the user's own diagnostics was caused by the
/// step (e.g. "declaration uses `sorry`" on the declaration's name) and is
/// reported too; errors there are not: cutting the declaration after the
/// step causes some by itself (unsolved goals, missing alternatives), and
/// the goals already say what is left — Lean's "unsolved goals" there is
/// read as what the step leaves, also when it ends inside a nested block.
/// After a term step comes the rest of the user's declaration: what the
/// user's own version reports there is not the step's doing. A header that
/// did not import or a heartbeat budget run out anywhere in the declaration
/// fails the step, and their errors say why.
///
/// `sorry`: the declaration uses `sorry` (Lean's warning, wherever Lean puts
/// it) and either the step's text holds one, or nothing else in the
/// declaration does (a macro such as `admit`, a `first` alternative).
pub(super) fn read(items: &[Diagnostic], frame: &Frame<'_>) -> Reading {
    let mut reading = Reading {
        success: !frame.blocked,
        messages: Vec::new(),
        traces: Vec::new(),
        exhausted: None,
        unsolved: Vec::new(),
        sorry: false,
        sentinel_failed: false,
    };
    let mut uses_sorry = false;
    for d in items {
        let severity = d.severity;
        let text = d.message.as_str();
        let at = d.start();
        if frame.sentinel.is_some_and(|s| at >= s) {
            reading.sentinel_failed |= d.is_error();
            continue;
        }
        let in_users_file = user_range(d.range, &frame.placement);
        // The user's own version reports the same there.
        let known = in_users_file.is_some_and(|r| {
            frame
                .baseline
                .iter()
                .any(|b| diagnostics::range(b.range) == r && b.message == text)
        });
        let category = diagnostics::category(d);
        if category == DiagnosticCategory::Sorry && at >= frame.declaration {
            uses_sorry = true;
        }
        let after_term = known
            && frame
                .placement
                .resume
                .is_some_and(|(resume, _)| at >= resume);
        let in_step = at >= frame.begin && !after_term;
        let out_of_heartbeats = d.is_error() && !known && text.contains(OUT_OF_HEARTBEATS);
        if out_of_heartbeats {
            reading.exhausted = Some(Exhausted::Heartbeats);
            reading.success = false;
        }
        let mut entry = RunMessage {
            severity: diagnostics::severity_name(severity),
            category,
            text: text.to_owned(),
            range: None,
            step_range: None,
            unplaced: false,
            before_step: false,
            suggestions: Vec::new(),
        };
        if in_step {
            entry.step_range = Some(super::text::step_range(d.range, frame.start));
            if d.is_error() {
                reading.success = false;
            }
        } else if (frame.blocked || out_of_heartbeats) && d.is_error() {
            entry.before_step = true;
            entry.range = in_users_file;
        } else if known {
            // The user's own version says the same there.
            continue;
        } else if d.is_error() {
            // New before the step. Lean's unsolved-goals report at the
            // block's start is what the step leaves.
            if let Some(goals) = diagnostics::unsolved_goals(d) {
                reading.unsolved.extend(goals::unsolved(goals));
                continue;
            }
            if !frame.whole_declaration {
                continue;
            }
            // A term step's enclosing `exact` reports its type mismatch at
            // `exact`, before the parenthesis: skipped, it read as closed.
            reading.success = false;
            entry.before_step = true;
            entry.range = in_users_file;
        } else {
            entry.before_step = true;
            entry.range = in_users_file;
        }
        entry.unplaced = entry.range.is_none() && entry.step_range.is_none();
        if let Some(at) = entry.range.or(entry.step_range) {
            entry.suggestions = suggestions_at(d, at);
        }
        if severity == DiagnosticSeverity::INFORMATION && text.starts_with('[') {
            reading.traces.push(entry);
        } else {
            reading.messages.push(entry);
        }
    }
    reading.sorry = reading.success && uses_sorry && (frame.sorry_in_step || !frame.sorry_outside);
    reading
}

/// A "Try this" message's edits, each replacing `at`, the message's own
/// place as the probe reports it (in the user's file or in the step).
fn suggestions_at(d: &Diagnostic, at: Range) -> Vec<TextEdit> {
    try_this::suggestions(d)
        .into_iter()
        .map(|edit| TextEdit { range: at, ..edit })
        .collect()
}

/// Which goals a step's proof state shows, for the caller to ask Lean:
/// after a tactic step that succeeded, the goals it leaves; after one that
/// failed, the goals before it (Lean's error recovery leaves goals that look
/// finished). Only one of the two is asked; nothing for a term or a
/// command, nor where the header did not import (nothing ran).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ask {
    AfterStep,
    BeforeStep,
}

pub(super) fn goals_to_ask(kind: StepKind, blocked: bool, reading: &Reading) -> Option<Ask> {
    match kind {
        StepKind::Tactic if !blocked => Some(if reading.success {
            Ask::AfterStep
        } else {
            Ask::BeforeStep
        }),
        _ => None,
    }
}

/// What is known of a step besides Lean's diagnostics on it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Facts<'a> {
    pub(super) kind: StepKind,
    /// Lean could not take the shadow's header: the step never ran.
    pub(super) blocked: bool,
    /// Lean's worker died under the step.
    pub(super) crashed: bool,
    /// The goals were read before the sentinel after a tactic step (its own
    /// block), not where its text ends.
    pub(super) from_sentinel: bool,
    /// A term step: the type expected where it goes.
    pub(super) expected: Option<&'a Goal>,
}

/// The goals a tactic step leaves, from the goals Lean answered where
/// [`goals_to_ask`] said: before the sentinel after it (`from_sentinel`:
/// the step's own block, see [`Frame::sentinel`]) or, without one, where
/// the step ends — and when there are none there but Lean reports goals
/// unsolved at the end of the declaration (the step ended inside a nested
/// block, `case x => …`), those: the one nested-block rule of every probe
/// tool. After a failed step: the goals before it.
fn goals_left(
    reading: &Reading,
    asked: (Vec<Goal>, GoalSource),
    from_sentinel: bool,
) -> ProofState {
    if !reading.success {
        let (goals, source) = asked;
        return ProofState {
            goals,
            source,
            at: ProofStateAt::BeforeFailedStep,
        };
    }
    let (goals, source) = match asked {
        (goals, _) if !from_sentinel && goals.is_empty() && !reading.unsolved.is_empty() => {
            (reading.unsolved.clone(), GoalSource::UnsolvedGoals)
        }
        asked => asked,
    };
    ProofState {
        goals,
        source,
        at: ProofStateAt::AfterStep,
    }
}

/// A step's run result: its reading, the goals Lean answered where
/// [`goals_to_ask`] said (`asked`), and the verdict that follows.
pub(super) fn conclude(
    reading: Reading,
    facts: &Facts<'_>,
    asked: Option<(Vec<Goal>, GoalSource)>,
    workspace: WorkspaceEcho,
) -> RunResult {
    let proof_state = match facts.kind {
        // Nothing after the header was elaborated: no goals to read.
        _ if facts.blocked => None,
        StepKind::Tactic => Some(goals_left(
            &reading,
            asked.unwrap_or((Vec::new(), GoalSource::PlainGoal)),
            facts.from_sentinel,
        )),
        // A term that elaborates leaves nothing to prove; one that does not
        // still has the type expected where it goes.
        StepKind::Term => Some(ProofState {
            goals: match facts.expected {
                Some(expected) if !reading.success => vec![expected.clone()],
                _ => Vec::new(),
            },
            source: GoalSource::PlainTermGoal,
            at: if reading.success {
                ProofStateAt::AfterStep
            } else {
                ProofStateAt::BeforeFailedStep
            },
        }),
        StepKind::Command => None,
    };
    let mut result = RunResult {
        declaration: None,
        workspace,
        line_text: None,
        outcome: Outcome::Closed,
        success: reading.success,
        sorry: reading.sorry,
        messages: reading.messages,
        traces: reading.traces,
        proof_state,
        next_handle: None,
        exhausted: reading.exhausted,
        disk_changed: false,
        memory: None,
    };
    result.outcome = verdict(&result, facts.crashed);
    result
}

/// Why a step has no reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unread {
    /// Its time budget ran out before Lean answered.
    Timeout,
    /// Lean's worker died under it.
    Crashed,
}

/// What a step whose worker died says.
const CRASHED: &str = "Lean's worker died under this text (it crashed or was killed): nothing \
else is known of it; the next probe runs on a new worker, and the file itself is unaffected";

/// The run result of a step Lean gave no reading of: a verdict like any
/// other, the same from every probe tool, not a tool error.
pub(super) fn unread(why: Unread, workspace: WorkspaceEcho) -> RunResult {
    let (outcome, exhausted, messages) = match why {
        Unread::Timeout => (Outcome::Timeout, Some(Exhausted::Timeout), Vec::new()),
        Unread::Crashed => (
            Outcome::Crashed,
            None,
            vec![RunMessage {
                severity: Severity::Error,
                category: DiagnosticCategory::Error,
                text: CRASHED.to_owned(),
                range: None,
                step_range: None,
                unplaced: true,
                before_step: false,
                suggestions: Vec::new(),
            }],
        ),
    };
    RunResult {
        declaration: None,
        workspace,
        line_text: None,
        outcome,
        success: false,
        sorry: false,
        messages,
        traces: Vec::new(),
        proof_state: None,
        next_handle: None,
        exhausted,
        disk_changed: false,
        memory: None,
    }
}

/// The verdict on a step that ran (one for every tool): crashed, a budget
/// run out, failed, `sorry`, goals left, or closed.
pub fn verdict(result: &RunResult, crashed: bool) -> Outcome {
    if crashed {
        return Outcome::Crashed;
    }
    match result.exhausted {
        Some(Exhausted::Heartbeats) => return Outcome::Heartbeats,
        Some(Exhausted::Timeout) => return Outcome::Timeout,
        None => {}
    }
    if !result.success {
        return Outcome::Failed;
    }
    if result.sorry {
        return Outcome::Sorry;
    }
    let goals_left = result
        .proof_state
        .as_ref()
        .is_some_and(|p| !p.goals.is_empty());
    if goals_left {
        Outcome::Progressed
    } else {
        Outcome::Closed
    }
}

/// The goals of a step's proof state (none for a command).
pub(super) fn goals_of(result: &RunResult) -> Vec<Goal> {
    result
        .proof_state
        .as_ref()
        .map(|p| p.goals.clone())
        .unwrap_or_default()
}

/// FNV-1a, 128 bits, over the pretty-printed goals: stable across calls and
/// processes (no random seed), unlike std's hasher.
pub(super) fn fingerprint(goals: &[Goal]) -> String {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013b;
    let mut hash = OFFSET;
    for goal in goals {
        // A separator that no goal text holds keeps goal boundaries apart.
        for byte in goal.pretty.bytes().chain([0u8]) {
            hash ^= u128::from(byte);
            hash = hash.wrapping_mul(PRIME);
        }
    }
    format!("{hash:032x}")
}

/// A goal's hypotheses, one line each as Lean prints them.
fn hyp_lines(goal: &Goal) -> Vec<String> {
    goal.hyps()
        .iter()
        .map(|h| {
            let mut line = format!("{} : {}", h.names.join(" "), h.ty);
            if let Some(value) = &h.value {
                line.push_str(" := ");
                line.push_str(value);
            }
            line
        })
        .collect()
}

/// How the goals `after` a step differ from the goals at `start`.
fn diff(start: &[Goal], after: &[Goal]) -> GoalDiff {
    let closed: Vec<usize> = (0..start.len())
        .filter(|&i| !after.iter().any(|g| g.pretty == start[i].pretty))
        .collect();
    let added: Vec<usize> = (0..after.len())
        .filter(|&i| !start.iter().any(|g| g.pretty == after[i].pretty))
        .collect();
    let hyps = added
        .iter()
        .filter_map(|&goal| {
            let name = after[goal].user_name();
            let from = start
                .iter()
                .position(|g| name.is_some() && g.user_name() == name)
                .or_else(|| closed.first().copied())?;
            let (now, then) = (hyp_lines(&after[goal]), hyp_lines(&start[from]));
            let added: Vec<String> = now.iter().filter(|h| !then.contains(h)).cloned().collect();
            let removed: Vec<String> = then.iter().filter(|h| !now.contains(h)).cloned().collect();
            (!added.is_empty() || !removed.is_empty()).then_some(HypsDiff {
                goal,
                from,
                added,
                removed,
            })
        })
        .collect();
    GoalDiff {
        closed,
        added,
        hyps,
    }
}

/// A batch candidate that did not run to its end (skipped, or crashed with
/// an error for the caller to put in words).
pub(super) fn unrun(outcome: Outcome) -> Candidate {
    Candidate {
        outcome,
        messages: Vec::new(),
        goals: None,
        goals_at_start: false,
        error: None,
        fingerprint: None,
        same_as: None,
        diff: None,
        handle: None,
    }
}

/// What a batch's candidates are read against.
#[derive(Debug, Clone, Copy)]
pub(super) struct Against<'a> {
    pub(super) kind: StepKind,
    /// The goals the candidates start from.
    pub(super) start_goals: &'a [Goal],
    /// The fingerprints of the candidates before this one (none where a
    /// candidate reached no state).
    pub(super) earlier: &'a [Option<String>],
    /// Whether a candidate that progresses says how its goals differ from
    /// the start goals.
    pub(super) diff: bool,
}

/// One batch candidate read from its run result: its verdict, the goals it
/// shows (none when closed; none and `goals_at_start` when it failed where
/// the batch starts), the fingerprint and `same_as` of a tactic candidate
/// that progressed, and its diff. Also the fingerprint of any state it
/// reached, for the candidates after it. No handle: minting is the batch's.
pub(super) fn candidate(
    result: RunResult,
    crashed: bool,
    against: &Against<'_>,
) -> (Candidate, Option<String>) {
    let outcome = verdict(&result, crashed);
    let reached = matches!(outcome, Outcome::Closed | Outcome::Progressed);
    let progressed = outcome == Outcome::Progressed;
    let tactic = against.kind == StepKind::Tactic;
    let goals = goals_of(&result);
    let fingerprint = (reached && tactic).then(|| fingerprint(&goals));
    let same_as = fingerprint.as_ref().and_then(|f| {
        against
            .earlier
            .iter()
            .position(|other| other.as_ref() == Some(f))
    });
    // Closed: no goals to show. Failed at its first step: the goals are the
    // start goals, said once for the batch.
    let shown = result.proof_state.is_some() && outcome != Outcome::Closed;
    let at_start = outcome == Outcome::Failed && tactic && goals == against.start_goals;
    let diff = (progressed && tactic && against.diff).then(|| diff(against.start_goals, &goals));
    let candidate = Candidate {
        outcome,
        messages: result.messages,
        diff,
        goals: (shown && !at_start).then_some(goals),
        goals_at_start: at_start,
        fingerprint: fingerprint.clone().filter(|_| progressed),
        same_as: same_as.filter(|_| progressed),
        handle: None,
        error: None,
    };
    (candidate, fingerprint)
}

#[cfg(test)]
mod tests;
