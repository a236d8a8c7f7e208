//! What the suggestion tactics' own runs say: each tactic's status (it
//! offered suggestions, closed or left goals by itself, failed, or the
//! toolchain does not have it), the suggestions to check (each once, with
//! every tactic that offered it), and their ranking once checked. Pure
//! functions, table-tested.

use crate::broker::features::probe::Offer;
use crate::results::{Candidate, Outcome, RunMessage, Severity, TacticStatus};

/// The longest `message` a tactic's status carries.
const MESSAGE_CHARS: usize = 300;

/// A suggestion to report: its text, the tactics (indices) that offered it,
/// and where its check comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub text: String,
    pub from: Vec<usize>,
    pub check: Check,
}

/// Where a suggestion's verdict comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The tactic's own run (index): it is its own text.
    Own(usize),
    /// A run of its own, still to come.
    ToRun,
}

/// What the tactics' runs found.
#[derive(Debug, Clone, PartialEq)]
pub struct Findings {
    /// Per tactic: its status and Lean's message about it.
    pub statuses: Vec<(TacticStatus, Option<String>)>,
    /// In the order found: tactic order, then Lean's.
    pub found: Vec<Found>,
}

/// The tactic's name in the text it ran as (`by simp? [h]`: `simp?`), as a
/// column range of its first line.
pub fn name_columns(run_text: &str, tactic: &str) -> (u32, u32) {
    let start = run_text.find(tactic.trim_start()).unwrap_or(0);
    let name = tactic.split_whitespace().next().unwrap_or("");
    let column = run_text[..start].encode_utf16().count() as u32;
    (column, column + name.encode_utf16().count() as u32)
}

/// Whether Lean's error says the tactic itself is missing from the
/// toolchain: no parser for its name, no elaborator for its syntax, or a
/// constant it is built on (Lean 4.35 on the test toolchain: "unknown
/// tactic" one past the name's start; `rw?`: "Tactic
/// `Lean.Parser.Tactic.tacticTry_` has not been implemented"; `omega`:
/// "Unknown constant `Classical.byContradiction`"), or its name does not
/// parse.
fn says_missing(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower == "unknown tactic"
        || lower.starts_with("unknown constant")
        || lower.starts_with("unknown identifier")
        || lower.starts_with("unexpected token")
        || lower.starts_with("unexpected identifier")
        || lower.contains("has not been implemented")
}

/// An error of a tactic's run that says the toolchain lacks the tactic: one
/// of [`says_missing`] on its name (`name`: columns of the step's first
/// line, the end included, since Lean puts "unknown tactic" one past the
/// start).
pub fn missing(messages: &[RunMessage], name: (u32, u32)) -> Option<&RunMessage> {
    messages.iter().find(|m| {
        m.severity == Severity::Error
            && says_missing(&m.text)
            && m.step_range.is_some_and(|r| {
                r.start.line == 0 && (name.0..=name.1).contains(&r.start.character)
            })
    })
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(MESSAGE_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The first error of a run, cut.
fn first_error(messages: &[RunMessage]) -> Option<String> {
    messages
        .iter()
        .find(|m| m.severity == Severity::Error)
        .map(|m| cut(&m.text))
}

/// Read the tactics' runs: `run_texts[i]` is what tactic `i` (`tactics[i]`)
/// ran as, `offers[i]` what Lean offered in its place, `tried[i]` its
/// verdict. A tactic that offered something is `suggested` and its offers
/// are the suggestions (the offer applied to the text it ran as); one that
/// offered nothing but closed the goals or left goals is its own
/// suggestion; one whose error says it is missing is `unavailable`.
pub fn findings(
    tactics: &[String],
    run_texts: &[String],
    offers: &[Vec<Offer>],
    tried: &[Candidate],
) -> Findings {
    let mut statuses = Vec::with_capacity(tactics.len());
    let mut found: Vec<Found> = Vec::new();
    let mut add = |text: String, tactic: usize, check: Check| {
        match found.iter_mut().find(|f| f.text == text) {
            Some(f) => {
                if !f.from.contains(&tactic) {
                    f.from.push(tactic);
                }
                // A verdict already had is not run again.
                if let Check::Own(_) = check {
                    f.check = check;
                }
            }
            None => found.push(Found {
                text,
                from: vec![tactic],
                check,
            }),
        }
    };
    for (i, candidate) in tried.iter().enumerate() {
        let offered: Vec<String> = offers[i]
            .iter()
            .filter_map(|o| o.apply_to(&run_texts[i]))
            .filter(|t| !t.trim().is_empty())
            .collect();
        if !offered.is_empty() {
            for text in offered {
                add(text, i, Check::ToRun);
            }
            statuses.push((TacticStatus::Suggested, None));
            continue;
        }
        let name = name_columns(&run_texts[i], &tactics[i]);
        let status = match candidate.outcome {
            Outcome::Failed => match missing(&candidate.messages, name) {
                Some(m) => (TacticStatus::Unavailable, Some(cut(&m.text))),
                None => (TacticStatus::Failed, first_error(&candidate.messages)),
            },
            Outcome::Closed => (TacticStatus::Closed, None),
            Outcome::Progressed => (TacticStatus::Progressed, None),
            Outcome::Sorry => (TacticStatus::Sorry, None),
            Outcome::Timeout => (TacticStatus::Timeout, None),
            Outcome::Heartbeats => (TacticStatus::Heartbeats, None),
            Outcome::Crashed | Outcome::Skipped => (TacticStatus::Crashed, None),
        };
        if matches!(status.0, TacticStatus::Closed | TacticStatus::Progressed) {
            add(run_texts[i].clone(), i, Check::Own(i));
        }
        statuses.push(status);
    }
    Findings { statuses, found }
}

/// Where an outcome ranks: closed first, then goals left, then the rest.
fn outcome_rank(outcome: Outcome) -> u8 {
    match outcome {
        Outcome::Closed => 0,
        Outcome::Progressed => 1,
        Outcome::Sorry => 2,
        Outcome::Failed => 3,
        Outcome::Heartbeats | Outcome::Timeout => 4,
        Outcome::Crashed | Outcome::Skipped => 5,
    }
}

/// The order to report checked suggestions in (indices into `checked`,
/// each an outcome and the text): closing first, then goals left, then
/// the rest; within each, shorter first; then in the order found.
pub fn ranked(checked: &[(Outcome, &str)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..checked.len()).collect();
    order.sort_by_key(|&i| {
        let (outcome, text) = checked[i];
        (outcome_rank(outcome), text.chars().count(), i)
    });
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Range;

    fn candidate(outcome: Outcome, errors: &[(&str, (u32, u32))]) -> Candidate {
        Candidate {
            outcome,
            messages: errors
                .iter()
                .map(|(text, at)| RunMessage {
                    severity: Severity::Error,
                    category: crate::results::DiagnosticCategory::Error,
                    text: (*text).to_owned(),
                    range: None,
                    step_range: Some(Range::new(*at, (at.0, at.1 + 1))),
                    unplaced: false,
                    before_step: false,
                    suggestions: Vec::new(),
                })
                .collect(),
            goals: None,
            goals_at_start: false,
            fingerprint: None,
            same_as: None,
            diff: None,
            handle: None,
            error: None,
        }
    }

    fn offer(text: &str, (from, to): (u32, u32)) -> Offer {
        Offer {
            range: Range::new((0, from), (0, to)),
            new_text: text.to_owned(),
        }
    }

    fn strings(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn statuses_and_suggestions_from_the_runs_of_the_test_toolchain() {
        // As Lean 4.35 answered on the test toolchain's fixture.
        let tactics = strings(&[
            "exact?", "apply?", "decide", "omega", "rw?", "aesop?", "simp?",
        ]);
        let offers = vec![
            vec![offer("exact N.zero_add n", (0, 6))],
            vec![
                offer("exact N.zero_add n", (0, 6)),
                offer("refine foo ?_", (0, 6)),
            ],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
        ];
        let tried = vec![
            candidate(Outcome::Closed, &[]),
            candidate(Outcome::Sorry, &[]),
            candidate(Outcome::Closed, &[]),
            candidate(
                Outcome::Failed,
                &[("Unknown constant `Classical.byContradiction`", (0, 0))],
            ),
            candidate(
                Outcome::Failed,
                &[(
                    "Tactic `Lean.Parser.Tactic.tacticTry_` has not been implemented",
                    (0, 0),
                )],
            ),
            candidate(Outcome::Failed, &[("unknown tactic", (0, 1))]),
            candidate(Outcome::Failed, &[("`simp` made no progress", (0, 0))]),
        ];
        let f = findings(&tactics, &tactics, &offers, &tried);
        let statuses: Vec<TacticStatus> = f.statuses.iter().map(|s| s.0).collect();
        assert_eq!(
            statuses,
            [
                TacticStatus::Suggested,
                TacticStatus::Suggested,
                TacticStatus::Closed,
                TacticStatus::Unavailable,
                TacticStatus::Unavailable,
                TacticStatus::Unavailable,
                TacticStatus::Failed,
            ]
        );
        assert_eq!(f.statuses[5].1.as_deref(), Some("unknown tactic"));
        assert_eq!(f.statuses[6].1.as_deref(), Some("`simp` made no progress"));
        assert_eq!(
            f.found,
            [
                Found {
                    text: "exact N.zero_add n".into(),
                    from: vec![0, 1],
                    check: Check::ToRun,
                },
                Found {
                    text: "refine foo ?_".into(),
                    from: vec![1],
                    check: Check::ToRun,
                },
                Found {
                    text: "decide".into(),
                    from: vec![2],
                    check: Check::Own(2),
                },
            ]
        );
    }

    #[test]
    fn an_error_elsewhere_than_the_name_is_a_failure_of_an_available_tactic() {
        let tactics = strings(&["simp? [foo]", "exact bar"]);
        let tried = vec![
            // `foo` unknown: at its argument, not at the name.
            candidate(Outcome::Failed, &[("Unknown identifier `foo`", (0, 7))]),
            candidate(Outcome::Failed, &[("unknown identifier 'bar'", (0, 6))]),
        ];
        let f = findings(&tactics, &tactics, &[vec![], vec![]], &tried);
        assert_eq!(f.statuses[0].0, TacticStatus::Failed);
        assert_eq!(f.statuses[1].0, TacticStatus::Failed);
        assert!(f.found.is_empty());
    }

    #[test]
    fn in_a_term_the_name_follows_by() {
        let tactics = strings(&["omega", "exact?"]);
        let runs = strings(&["by omega", "by exact?"]);
        assert_eq!(name_columns(&runs[0], &tactics[0]), (3, 8));
        let tried = vec![
            candidate(Outcome::Failed, &[("unknown tactic", (0, 4))]),
            candidate(Outcome::Closed, &[]),
        ];
        let offers = vec![vec![], vec![offer("exact h", (3, 9))]];
        let f = findings(&tactics, &runs, &offers, &tried);
        assert_eq!(f.statuses[0].0, TacticStatus::Unavailable);
        assert_eq!(f.found[0].text, "by exact h");
        // A long message is cut.
        let long = "x".repeat(400);
        let tried = vec![candidate(Outcome::Failed, &[(&long, (0, 20))])];
        let f = findings(&tactics[..1], &runs[..1], &offers[..1], &tried);
        assert_eq!(f.statuses[0].1.as_ref().unwrap().chars().count(), 301);
    }

    #[test]
    fn closing_first_then_goals_left_then_shorter_then_found_order() {
        let checked = [
            (Outcome::Failed, "a"),
            (Outcome::Progressed, "refine foo ?_"),
            (Outcome::Closed, "exact N.zero_add n"),
            (Outcome::Closed, "decide"),
            (Outcome::Sorry, "exact t sorry"),
            (Outcome::Closed, "omega1"),
            (Outcome::Timeout, "b"),
        ];
        assert_eq!(ranked(&checked), [3, 5, 2, 1, 4, 0, 6]);
        assert!(ranked(&[]).is_empty());
    }
}
