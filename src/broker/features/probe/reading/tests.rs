//! The reading of a step, table-tested with literal diagnostics and goals.

use super::*;
use serde_json::{Value, json};

const ERROR: u64 = 1;
const WARNING: u64 = 2;

fn typed(json: Value) -> Diagnostic {
    Diagnostic::from_value(&json).unwrap()
}

fn diag(severity: u64, (l0, c0): (u32, u32), (l1, c1): (u32, u32), message: &str) -> Diagnostic {
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

fn facts(kind: StepKind, from_sentinel: bool) -> Facts<'static> {
    Facts {
        kind,
        blocked: false,
        crashed: false,
        from_sentinel,
        expected: None,
    }
}

fn plain(goals: &[&str]) -> (Vec<Goal>, GoalSource) {
    (
        goals.iter().map(|g| goals::plain_goal(g)).collect(),
        GoalSource::PlainGoal,
    )
}

fn echo() -> WorkspaceEcho {
    WorkspaceEcho {
        root: String::new(),
    }
}

#[test]
fn unsolved_goals_before_the_step_are_what_it_leaves_not_an_error() {
    let items = [diag(ERROR, (5, 40), (5, 42), UNSOLVED)];
    let r = read(&items, &frame(&[]));
    assert!(r.success && r.messages.is_empty());
    assert_eq!(r.unsolved.len(), 1);
    assert_eq!(r.unsolved[0].user_name(), Some("right"));
    assert_eq!(
        goals_to_ask(StepKind::Tactic, false, &r),
        Some(Ask::AfterStep)
    );
    let unsolved = r.unsolved.clone();
    // (goals answered where the step ends, read before a sentinel) ->
    // (goals shown, their source, the verdict).
    let table = [
        // At the end of a nested block Lean shows no goals: the
        // unsolved ones are what is left, and the step progressed.
        (
            plain(&[]),
            false,
            unsolved.clone(),
            GoalSource::UnsolvedGoals,
            Outcome::Progressed,
        ),
        // Goals where the step ends come first.
        (
            plain(&["⊢ p"]),
            false,
            plain(&["⊢ p"]).0,
            GoalSource::PlainGoal,
            Outcome::Progressed,
        ),
        // Before the sentinel Lean shows the step's own block: no goals
        // there is closed, whatever blocks around the step still hold.
        (
            plain(&[]),
            true,
            Vec::new(),
            GoalSource::PlainGoal,
            Outcome::Closed,
        ),
    ];
    for (asked, from_sentinel, goals, source, outcome) in table {
        let result = conclude(
            r.clone(),
            &facts(StepKind::Tactic, from_sentinel),
            Some(asked),
            echo(),
        );
        let state = result.proof_state.expect("a tactic step's proof state");
        assert_eq!((state.goals, state.source), (goals, source));
        assert_eq!(state.at, ProofStateAt::AfterStep);
        assert_eq!(result.outcome, outcome);
    }
}

#[test]
fn a_failed_step_shows_the_goals_before_it() {
    let items = [diag(ERROR, (6, 2), (6, 7), "unknown identifier")];
    let r = read(&items, &frame(&[]));
    assert_eq!(
        goals_to_ask(StepKind::Tactic, false, &r),
        Some(Ask::BeforeStep)
    );
    let result = conclude(
        r,
        &facts(StepKind::Tactic, true),
        Some(plain(&["⊢ p"])),
        echo(),
    );
    let state = result.proof_state.expect("a tactic step's proof state");
    assert_eq!(state.goals, plain(&["⊢ p"]).0);
    assert_eq!(state.at, ProofStateAt::BeforeFailedStep);
    assert_eq!(result.outcome, Outcome::Failed);
}

#[test]
fn terms_commands_and_blocked_headers_ask_no_goals() {
    let ok = read(&[], &frame(&[]));
    let failed = read(&[diag(ERROR, (6, 2), (6, 7), "oops")], &frame(&[]));
    let expected = goals::plain_goal("⊢ Eq b a");
    for kind in [StepKind::Term, StepKind::Command] {
        assert_eq!(goals_to_ask(kind, false, &ok), None);
    }
    assert_eq!(goals_to_ask(StepKind::Tactic, true, &ok), None);
    // A term that fails still has the type expected where it goes.
    let term = Facts {
        expected: Some(&expected),
        ..facts(StepKind::Term, false)
    };
    let state = |r: &Reading, f: &Facts<'_>| conclude(r.clone(), f, None, echo()).proof_state;
    let failed_term = state(&failed, &term).expect("a term's proof state");
    assert_eq!(failed_term.goals, std::slice::from_ref(&expected));
    assert_eq!(failed_term.source, GoalSource::PlainTermGoal);
    assert!(
        state(&ok, &term)
            .expect("a term's proof state")
            .goals
            .is_empty()
    );
    assert_eq!(
        conclude(ok.clone(), &term, None, echo()).outcome,
        Outcome::Closed
    );
    assert_eq!(state(&ok, &facts(StepKind::Command, false)), None);
    let blocked = Facts {
        blocked: true,
        ..facts(StepKind::Tactic, false)
    };
    assert_eq!(state(&ok, &blocked), None);
    // A crash is the verdict, whatever the reading.
    let crashed = Facts {
        crashed: true,
        ..facts(StepKind::Command, false)
    };
    assert_eq!(
        conclude(ok, &crashed, None, echo()).outcome,
        Outcome::Crashed
    );
}

#[test]
fn steps_lean_gave_no_reading_of_say_why() {
    let timeout = unread(Unread::Timeout, echo());
    assert_eq!(timeout.outcome, Outcome::Timeout);
    assert_eq!(timeout.exhausted, Some(Exhausted::Timeout));
    assert_eq!(verdict(&timeout, false), Outcome::Timeout);
    let crashed = unread(Unread::Crashed, echo());
    assert_eq!(verdict(&crashed, true), Outcome::Crashed);
    assert!(crashed.messages[0].unplaced && crashed.messages[0].text == CRASHED);
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

fn goal(name: Option<&str>, hyps: &[(&str, &str)], target: &str) -> Goal {
    let mut g = Goal {
        pretty: String::new(),
        parts: Some(crate::results::GoalParts {
            goal_prefix: "⊢ ".to_owned(),
            target: target.to_owned(),
            hyps: hyps
                .iter()
                .map(|(n, t)| crate::results::Hypothesis {
                    names: vec![(*n).to_owned()],
                    ty: (*t).to_owned(),
                    value: None,
                })
                .collect(),
            user_name: name.map(str::to_owned),
        }),
    };
    // What fingerprints compare: the hypotheses and target as printed.
    g.pretty = hyp_lines(&g)
        .into_iter()
        .chain([format!("⊢ {target}")])
        .collect::<Vec<_>>()
        .join("\n");
    g
}

#[test]
fn fingerprints_are_equal_exactly_when_the_goals_print_alike() {
    let a = goal(None, &[("n", "N")], "Eq n n");
    let b = goal(None, &[("n", "N")], "Eq n n");
    let c = goal(None, &[("m", "N")], "Eq n n");
    let one = |g: &Goal| fingerprint(std::slice::from_ref(g));
    assert_eq!(one(&a), one(&b));
    assert_ne!(one(&a), one(&c));
    // Goal boundaries count: two goals are not one goal holding both.
    assert_ne!(fingerprint(&[a.clone(), b]), fingerprint(&[a]));
    assert_eq!(fingerprint(&[]).len(), 32);
    // Fixed: the same text gives the same fingerprint in every process.
    assert_eq!(
        fingerprint(&[]),
        format!("{:032x}", 0x6c62272e07bb014262b821756295c58du128)
    );
}

#[test]
fn diffs_name_closed_and_added_goals_and_their_hypotheses() {
    let start = [goal(None, &[("n", "N")], "P n")];
    let after = [
        goal(Some("zero"), &[], "P N.zero"),
        goal(Some("succ"), &[("m", "N"), ("ih", "P m")], "P m.succ"),
    ];
    let d = diff(&start, &after);
    assert_eq!(d.closed, [0]);
    assert_eq!(d.added, [0, 1]);
    assert_eq!(d.hyps.len(), 2);
    assert_eq!(d.hyps[0].removed, ["n : N"]);
    assert_eq!(d.hyps[1].added, ["m : N", "ih : P m"]);
    let same = diff(&start, &start);
    assert!(same.closed.is_empty() && same.added.is_empty() && same.hyps.is_empty());
}

#[test]
fn candidates_read_against_the_start() {
    let start = [goal(None, &[("n", "N")], "P n")];
    let none: [Option<String>; 0] = [];
    fn against<'a>(start: &'a [Goal], earlier: &'a [Option<String>]) -> Against<'a> {
        Against {
            kind: StepKind::Tactic,
            start_goals: start,
            earlier,
            diff: true,
        }
    }
    let ran = |success: bool, goals: Vec<Goal>| RunResult {
        proof_state: Some(ProofState {
            goals,
            source: GoalSource::PlainGoal,
            at: ProofStateAt::AfterStep,
        }),
        ..result(success, 0, false)
    };
    let after = vec![goal(Some("succ"), &[("m", "N")], "P m.succ")];
    // Progressed: goals shown, fingerprinted, diffed.
    let (c, f) = candidate(ran(true, after.clone()), false, &against(&start, &none));
    assert_eq!(c.outcome, Outcome::Progressed);
    assert_eq!(c.goals.as_deref(), Some(&after[..]));
    assert_eq!(c.fingerprint, Some(fingerprint(&after)));
    assert_eq!(f, c.fingerprint);
    assert_eq!(c.diff.as_ref().map(|d| d.closed.clone()), Some(vec![0]));
    assert!(!c.goals_at_start && c.same_as.is_none());
    // The same state as an earlier candidate says which.
    let earlier = [None, Some(fingerprint(&after))];
    let (c, _) = candidate(ran(true, after.clone()), false, &against(&start, &earlier));
    assert_eq!(c.same_as, Some(1));
    // Closed: no goals, no fingerprint shown, yet one for the others.
    let (c, f) = candidate(ran(true, Vec::new()), false, &against(&start, &none));
    assert_eq!(
        (c.outcome, c.goals, c.fingerprint),
        (Outcome::Closed, None, None)
    );
    assert_eq!(f, Some(fingerprint(&[])));
    // Failed where the batch starts: the start goals, said once.
    let (c, f) = candidate(ran(false, start.to_vec()), false, &against(&start, &none));
    assert_eq!(
        (c.outcome, c.goals_at_start, c.goals),
        (Outcome::Failed, true, None)
    );
    assert_eq!(f, None);
    // Commands have neither fingerprints nor diffs.
    let command = Against {
        kind: StepKind::Command,
        ..against(&start, &none)
    };
    let (c, f) = candidate(result(true, 0, false), false, &command);
    assert_eq!(
        (c.outcome, c.fingerprint, c.diff, f),
        (Outcome::Closed, None, None, None)
    );
    assert_eq!(unrun(Outcome::Skipped).outcome, Outcome::Skipped);
}

#[test]
fn a_try_this_in_the_step_carries_its_edit_at_the_messages_place() {
    const INFORMATION: u64 = 3;
    let items = [diag(
        INFORMATION,
        (6, 2),
        (6, 8),
        "Try this:\n  [apply] exact N.add_zero a",
    )];
    let r = read(&items, &frame(&[]));
    assert!(r.success);
    let m = &r.messages[0];
    assert_eq!(m.category, DiagnosticCategory::Suggestion);
    let at = Range::new((0, 0), (0, 6));
    assert_eq!(m.step_range, Some(at));
    assert_eq!(
        m.suggestions,
        [TextEdit {
            range: at,
            new_text: "exact N.add_zero a".into()
        }]
    );
    // Anything else carries none.
    let r = read(&[diag(ERROR, (6, 2), (6, 7), "oops")], &frame(&[]));
    assert!(r.messages[0].suggestions.is_empty());
}
