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
use crate::broker::features::goals;
use crate::lean_source::lexer::{self, LexemeKind, TokenKind};
use crate::lsp::protocol::Diagnostic;
use crate::results::{
    DiagnosticCategory, Exhausted, Goal, GoalSource, Outcome, ProofState, ProofStateAt, Range,
    RunMessage, RunResult,
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
                reading
                    .unsolved
                    .extend(goals.split("\n\n").map(goals::plain_goal));
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
        if severity == DiagnosticSeverity::INFORMATION && text.starts_with('[') {
            reading.traces.push(entry);
        } else {
            reading.messages.push(entry);
        }
    }
    reading.sorry = reading.success && uses_sorry && (frame.sorry_in_step || !frame.sorry_outside);
    reading
}

/// The goals a tactic step leaves: Lean's goals before the sentinel after
/// it (`from_sentinel`: the step's own block, see [`Frame::sentinel`]) or,
/// without one, where the step ends — and when there are none there but
/// Lean reports goals unsolved at the end of the declaration (the step
/// ended inside a nested block, `case x => …`), those. After a failed step:
/// the goals before it (`before`).
pub(super) fn goals_left(
    reading: &Reading,
    at_end: (Vec<Goal>, GoalSource),
    from_sentinel: bool,
    before: impl FnOnce() -> (Vec<Goal>, GoalSource),
) -> ProofState {
    if !reading.success {
        let (goals, source) = before();
        return ProofState {
            goals,
            source,
            at: ProofStateAt::BeforeFailedStep,
        };
    }
    let (goals, source) = match at_end {
        (goals, _) if !from_sentinel && goals.is_empty() && !reading.unsolved.is_empty() => {
            (reading.unsolved.clone(), GoalSource::UnsolvedGoals)
        }
        at_end => at_end,
    };
    ProofState {
        goals,
        source,
        at: ProofStateAt::AfterStep,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const ERROR: u64 = 1;
    const WARNING: u64 = 2;

    fn typed(json: Value) -> Diagnostic {
        Diagnostic::from_value(&json).unwrap()
    }

    fn diag(
        severity: u64,
        (l0, c0): (u32, u32),
        (l1, c1): (u32, u32),
        message: &str,
    ) -> Diagnostic {
        let mut d = json!({
            "severity": severity,
            "message": message,
            "range": {
                "start": {"line": l0, "character": c0},
                "end": {"line": l1, "character": c1},
            },
        });
        // As Lean tags its "unsolved goals" reports.
        if message == UNSOLVED {
            d["leanTags"] = json!([1]);
        }
        typed(d)
    }

    /// A tactic step at (6, 2) of a theorem starting at (5, 0), as in
    /// `theorem t … := by\n  <step>`.
    fn frame(baseline: &[Diagnostic]) -> Frame<'_> {
        Frame {
            start: (6, 2),
            begin: (6, 2),
            declaration: (5, 0),
            sentinel: None,
            placement: Placement::at((6, 2)),
            baseline,
            blocked: false,
            sorry_in_step: false,
            sorry_outside: false,
            whole_declaration: false,
        }
    }

    const UNSOLVED: &str = "unsolved goals\ncase right\np q : Prop\n⊢ q";
    const SORRY: &str = "declaration uses `sorry`";

    #[test]
    fn an_error_in_the_step_fails_it_and_is_placed_in_the_step_only() {
        let items = [diag(ERROR, (7, 4), (7, 9), "type mismatch")];
        let r = read(&items, &frame(&[]));
        assert!(!r.success);
        assert_eq!(r.messages.len(), 1);
        let m = &r.messages[0];
        // The step's second line: no range in the user's file, which does
        // not hold the step's text; the step's own coordinates instead.
        assert_eq!(m.range, None);
        assert_eq!(m.step_range, Some(Range::new((1, 4), (1, 9))));
        assert!(!m.unplaced && !m.before_step);
    }

    #[test]
    fn unsolved_goals_before_the_step_are_what_it_leaves_not_an_error() {
        let items = [diag(ERROR, (5, 40), (5, 42), UNSOLVED)];
        let r = read(&items, &frame(&[]));
        assert!(r.success && r.messages.is_empty());
        assert_eq!(r.unsolved.len(), 1);
        assert_eq!(r.unsolved[0].user_name(), Some("right"));
        // At the end of a nested block Lean shows no goals: the unsolved
        // ones are what is left, and the step progressed.
        let state = goals_left(&r, (Vec::new(), GoalSource::PlainGoal), false, || {
            unreachable!("the step succeeded")
        });
        assert_eq!(state.goals, r.unsolved);
        assert_eq!(state.source, GoalSource::UnsolvedGoals);
        assert_eq!(state.at, ProofStateAt::AfterStep);
        // Goals where the step ends come first.
        let here = vec![goals::plain_goal("⊢ p")];
        let state = goals_left(&r, (here.clone(), GoalSource::PlainGoal), false, || {
            unreachable!("the step succeeded")
        });
        assert_eq!(state.goals, here);
        // Before the sentinel Lean shows the step's own block: no goals
        // there is closed, whatever blocks around the step still hold.
        let state = goals_left(&r, (Vec::new(), GoalSource::PlainGoal), true, || {
            unreachable!("the step succeeded")
        });
        assert!(state.goals.is_empty());
    }

    #[test]
    fn a_failed_step_shows_the_goals_before_it() {
        let items = [diag(ERROR, (6, 2), (6, 7), "unknown identifier")];
        let r = read(&items, &frame(&[]));
        let before = vec![goals::plain_goal("⊢ p")];
        let state = goals_left(&r, (Vec::new(), GoalSource::PlainGoal), true, || {
            (before.clone(), GoalSource::PlainGoal)
        });
        assert_eq!(state.goals, before);
        assert_eq!(state.at, ProofStateAt::BeforeFailedStep);
    }

    #[test]
    fn sorry_is_told_by_lean_and_by_the_text() {
        // The user's file already had `sorry` there: the warning is known,
        // yet the step is the one that uses it now.
        let warning = diag(WARNING, (5, 8), (5, 9), SORRY);
        let baseline = [warning.clone()];
        let mut f = frame(&baseline);
        let r = read(std::slice::from_ref(&warning), &f);
        assert!(r.success && r.sorry, "nothing else in the declaration");
        // Another `sorry` before the step: only the step's text can say.
        f.sorry_outside = true;
        assert!(!read(std::slice::from_ref(&warning), &f).sorry);
        f.sorry_in_step = true;
        assert!(read(std::slice::from_ref(&warning), &f).sorry);
        // No warning, no sorry (a `first` alternative that did not run).
        assert!(!read(&[], &f).sorry);
        // A warning of an earlier declaration is not this one's.
        let earlier = diag(WARNING, (1, 8), (1, 9), SORRY);
        assert!(!read(&[earlier], &frame(&[])).sorry);
        // A failed step is failed, whatever it used.
        let error = diag(ERROR, (6, 2), (6, 7), "oops");
        assert!(!read(&[warning, error], &frame(&[])).sorry);
    }

    #[test]
    fn what_lean_says_on_the_sentinel_is_not_the_steps() {
        let mut f = frame(&[]);
        f.sentinel = Some((8, 2));
        let items = [
            diag(ERROR, (8, 2), (8, 6), "unknown tactic"),
            diag(WARNING, (8, 2), (8, 6), "this tactic is never executed"),
        ];
        let r = read(&items, &f);
        assert!(r.success && r.messages.is_empty(), "{r:?}");
        assert!(r.sentinel_failed);
        let r = read(&items[1..], &f);
        assert!(!r.sentinel_failed);
    }

    #[test]
    fn new_warnings_before_the_step_are_placed_in_the_users_file() {
        let items = [diag(WARNING, (5, 8), (5, 9), "unused variable `h`")];
        let r = read(&items, &frame(&[]));
        let m = &r.messages[0];
        assert!(m.before_step);
        assert_eq!(m.range, Some(Range::new((5, 8), (5, 9))));
        // Known to the user's own version: not the step's.
        let r = read(&items, &frame(&items));
        assert!(r.messages.is_empty());
    }

    #[test]
    fn heartbeats_before_the_step_fail_it_and_say_so() {
        let items = [diag(
            ERROR,
            (5, 24),
            (5, 30),
            "(deterministic) timeout at `whnf`, maximum number of heartbeats (20) has been reached",
        )];
        let r = read(&items, &frame(&[]));
        assert!(!r.success);
        assert_eq!(r.exhausted, Some(Exhausted::Heartbeats));
        assert!(r.messages[0].before_step);
        assert_eq!(r.messages[0].range, Some(Range::new((5, 24), (5, 30))));
    }

    #[test]
    fn a_message_on_text_the_broker_added_says_it_has_no_place() {
        // After `… := by` the step goes one column after the anchor; a
        // message between them is neither the user's nor the step's.
        let mut f = frame(&[]);
        f.placement = Placement {
            anchor: (5, 40),
            text: (5, 41),
            origin: (5, 41),
            resume: None,
        };
        f.start = (5, 41);
        f.begin = (5, 41);
        let items = [diag(WARNING, (5, 40), (5, 41), "odd")];
        let r = read(&items, &f);
        assert!(r.messages[0].unplaced, "{:?}", r.messages);
        assert_eq!(r.messages[0].range, None);
    }

    #[test]
    fn a_new_error_before_a_term_step_fails_it() {
        // `exact (h)` with `h : Eq a b` for `⊢ Eq b a`: Lean reports the type
        // mismatch at `exact` (10, 2), before the parenthesis at (10, 8).
        let mut f = frame(&[]);
        f.placement = Placement {
            anchor: (10, 8),
            text: (10, 9),
            origin: (10, 8),
            resume: Some(((10, 11), (10, 13))),
        };
        f.start = (10, 9);
        f.begin = (10, 8);
        f.declaration = (9, 0);
        f.whole_declaration = true;
        let mismatch = diag(
            ERROR,
            (10, 2),
            (10, 11),
            "Type mismatch\n  h\nhas type\n  Eq a b\nbut is expected to have type\n  Eq b a",
        );
        let r = read(std::slice::from_ref(&mismatch), &f);
        assert!(!r.success, "{r:?}");
        assert_eq!(r.messages.len(), 1, "{r:?}");
        assert!(r.messages[0].before_step && r.messages[0].text.starts_with("Type mismatch"));
        // The same error in the user's own version (its end after the
        // parenthesis maps to (10, 13) there) is the user's, not the step's.
        let user = [typed(json!({
            "severity": ERROR, "message": mismatch.message,
            "range": {"start": {"line": 10, "character": 2}, "end": {"line": 10, "character": 13}},
        }))];
        let r = read(
            &[mismatch],
            &Frame {
                baseline: &user,
                ..f
            },
        );
        assert!(r.success && r.messages.is_empty(), "{r:?}");
    }

    #[test]
    fn a_term_steps_rest_of_declaration_is_the_users() {
        // `(<term>)` at (6, 8)-(6, 14); the user's text resumes at (6, 15),
        // which is (6, 13) in the user's file.
        let mut f = frame(&[]);
        f.placement = Placement {
            anchor: (6, 8),
            text: (6, 9),
            origin: (6, 8),
            resume: Some(((6, 15), (6, 13))),
        };
        f.start = (6, 9);
        f.begin = (6, 8);
        let later = diag(ERROR, (7, 2), (7, 5), "unknown identifier `x`");
        let user = [typed(json!({
            "severity": ERROR, "message": "unknown identifier `x`",
            "range": {"start": {"line": 7, "character": 2}, "end": {"line": 7, "character": 5}},
        }))];
        let r = read(std::slice::from_ref(&later), &frame(&user));
        assert!(!r.success, "as a tactic step it would be the step's");
        let r = read(
            &[later],
            &Frame {
                baseline: &user,
                ..f
            },
        );
        assert!(r.success && r.messages.is_empty(), "{r:?}");
    }

    fn result(success: bool, goals: usize, sorry: bool) -> RunResult {
        RunResult {
            declaration: None,
            workspace: crate::results::WorkspaceEcho {
                root: String::new(),
            },
            line_text: None,
            outcome: Outcome::Closed,
            success,
            sorry,
            messages: Vec::new(),
            traces: Vec::new(),
            proof_state: Some(ProofState {
                goals: (0..goals).map(|_| goals::plain_goal("⊢ p")).collect(),
                source: GoalSource::PlainGoal,
                at: ProofStateAt::AfterStep,
            }),
            next_handle: None,
            exhausted: None,
            disk_changed: false,
            memory: None,
        }
    }

    #[test]
    fn verdicts() {
        assert_eq!(verdict(&result(true, 0, false), false), Outcome::Closed);
        assert_eq!(verdict(&result(true, 1, false), false), Outcome::Progressed);
        assert_eq!(verdict(&result(false, 1, false), false), Outcome::Failed);
        assert_eq!(verdict(&result(true, 0, true), false), Outcome::Sorry);
        assert_eq!(verdict(&result(true, 0, false), true), Outcome::Crashed);
        let mut out = result(false, 0, false);
        out.exhausted = Some(Exhausted::Heartbeats);
        assert_eq!(verdict(&out, false), Outcome::Heartbeats);
    }
}
