//! `lean_suggest`: the suggestion tactics (`exact?`, `apply?`, `decide`…)
//! run at one place, in parallel over the document's shadow slots as a
//! `lean_run_batch` runs its candidates (the same place, budgets, verdicts
//! and handles: `probe::Place`), then every suggestion they make ("Try
//! this", read from Lean's code actions or messages: `probe::Offer`)
//! checked by running it there too, ranked, each with the edit that puts it
//! into the file. What the runs say is read in `found`.

mod found;

use found::{Check, Findings};

use crate::broker::ask::{Continue, Place as Asked, Suggest};
use crate::broker::engine::runtimes::Runtimes;
use crate::broker::error::{Error, HandleProblem, ProbeProblem, Result};
use crate::broker::features::probe::{Offer, Place, RunAll};
use crate::broker::progress::ProgressSink;
use crate::results::{Candidate, StepKind, SuggestResult, Suggestion, TacticTried};

/// At most this many suggestions are checked in one call (as many as one
/// `lean_run_batch` runs); the rest are counted as `unchecked`.
pub const MAX_CHECKED: usize = 32;

/// What a crashed run was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crashed {
    /// The tactic of `tactics` (its index).
    Tactic(usize),
    /// The suggestion of the result's `suggestions` (its index).
    Suggestion(usize),
}

/// A suggestion call's answer: the result, and the error of each run that
/// crashed, for the caller to put in words.
pub struct SuggestRun {
    pub result: SuggestResult,
    pub crashed: Vec<(Crashed, Error)>,
}

/// The text a tactic runs as at a place of `mode`.
fn run_text(mode: StepKind, tactic: &str) -> String {
    match mode {
        StepKind::Term => format!("by {tactic}"),
        StepKind::Tactic | StepKind::Command => tactic.to_owned(),
    }
}

/// The offers of each run (none for one that did not run).
fn offers_of(runs: &crate::broker::features::probe::Runs) -> Vec<Vec<Offer>> {
    runs.done
        .iter()
        .map(|ran| match ran {
            Some(Ok(ran)) => ran.offers.clone(),
            _ => Vec::new(),
        })
        .collect()
}

impl Runtimes {
    pub(crate) async fn suggest(
        &self,
        sink: &dyn ProgressSink,
        ask: &Suggest<'_>,
    ) -> Result<SuggestRun> {
        let place = Place::take(self, sink, &ask.place).await?;
        let mode = place.kind();
        if mode == StepKind::Command {
            return Err(match &ask.place {
                Asked::At(at) => Error::Probe {
                    line: at.line,
                    character: at.character,
                    problem: ProbeProblem::NoGoal,
                },
                Asked::After(after) => {
                    Error::handle(after.handle, HandleProblem::ContinuesCommands)
                }
            });
        }
        let texts: Vec<String> = ask.tactics.iter().map(|t| run_text(mode, t)).collect();
        place.check_all(&texts, ask.budget)?;
        let how = RunAll {
            budget: ask.budget,
            stop_on_first_close: false,
            start_goals: true,
            unit: "tactics",
        };
        let mut runs = place.run_all(sink, &texts, how).await?;
        let offers = offers_of(&runs);
        // A tactic that offers nothing may be its own suggestion: its run
        // is its check, with its handle.
        let handles = |i: usize| {
            if offers[i].is_empty() {
                Continue::WithHandles
            } else {
                Continue::NoHandles
            }
        };
        let (tried, tactic_crashes) = place.candidates(&texts, &mut runs, handles, false)?;
        let mut start_goals = runs.start_goals;
        let Findings { statuses, found } = found::findings(ask.tactics, &texts, &offers, &tried);

        // Each suggestion not yet checked runs once, if it can run here.
        let mut unchecked = 0;
        let mut to_run: Vec<String> = Vec::new();
        let mut checks: Vec<Option<usize>> = Vec::with_capacity(found.len());
        for f in &found {
            let runnable = place.check(&f.text, ask.budget).is_ok();
            checks.push(match f.check {
                Check::Own(_) => None,
                Check::ToRun if runnable && to_run.len() < MAX_CHECKED => {
                    to_run.push(f.text.clone());
                    Some(to_run.len() - 1)
                }
                Check::ToRun => {
                    unchecked += 1;
                    None
                }
            });
        }
        let mut checked_runs = if to_run.is_empty() {
            None
        } else {
            let how = RunAll {
                start_goals: false,
                unit: "suggestions",
                ..how
            };
            Some(place.run_all(sink, &to_run, how).await?)
        };
        let (checked, check_crashes) = match &mut checked_runs {
            Some(runs) => place.candidates(&to_run, runs, |_| Continue::WithHandles, false)?,
            None => (Vec::new(), Vec::new()),
        };

        // Every suggestion with its verdict (a tactic's own run, or its
        // check: `Some(j)` of `to_run`), ranked.
        let verdicts: Vec<(usize, &Candidate, Option<usize>)> = found
            .iter()
            .enumerate()
            .filter_map(|(k, f)| match (f.check, checks[k]) {
                (Check::Own(i), _) => Some((k, &tried[i], None)),
                (Check::ToRun, Some(j)) => Some((k, &checked[j], Some(j))),
                (Check::ToRun, None) => None,
            })
            .collect();
        let order = found::ranked(
            &verdicts
                .iter()
                .map(|(k, c, _)| (c.outcome, found[*k].text.as_str()))
                .collect::<Vec<_>>(),
        );
        let more = order.len().saturating_sub(ask.limit);
        let mut reported_at: Vec<Option<usize>> = vec![None; to_run.len()];
        let mut suggestions: Vec<Suggestion> = Vec::with_capacity(order.len().min(ask.limit));
        for &v in order.iter().take(ask.limit) {
            let (k, candidate, check) = verdicts[v];
            let f = &found[k];
            let (edit, replaces) = place.edit(&f.text)?;
            if let Some(j) = check {
                reported_at[j] = Some(suggestions.len());
            }
            let candidate = candidate.clone();
            suggestions.push(Suggestion {
                text: f.text.clone(),
                from: f.from.iter().map(|&i| ask.tactics[i].clone()).collect(),
                outcome: candidate.outcome,
                edit,
                replaces,
                goals: candidate.goals,
                messages: candidate.messages,
                handle: candidate.handle,
                error: None,
            });
        }
        // A tactic's own run that crashed is no suggestion (only one that
        // closed or left goals is).
        let mut crashed: Vec<(Crashed, Error)> = tactic_crashes
            .into_iter()
            .map(|(i, e)| (Crashed::Tactic(i), e))
            .collect();
        crashed.extend(
            check_crashes
                .into_iter()
                .filter_map(|(j, e)| Some((Crashed::Suggestion(reported_at[j]?), e))),
        );
        ask.form.apply(start_goals.iter_mut());
        ask.form.apply(
            suggestions
                .iter_mut()
                .flat_map(|s| s.goals.iter_mut().flatten()),
        );
        let tactics = ask
            .tactics
            .iter()
            .zip(statuses)
            .map(|(tactic, (status, message))| TacticTried {
                tactic: tactic.clone(),
                status,
                message,
            })
            .collect();
        let (origin, line_text, disk_changed) = place.origin().await;
        Ok(SuggestRun {
            result: SuggestResult {
                workspace: origin.workspace,
                path: origin.path,
                version: origin.version,
                // The caller's to echo (a declaration it resolved).
                declaration: None,
                line_text,
                mode,
                start_goals,
                suggestions,
                more,
                unchecked,
                tactics,
                disk_changed,
            },
            crashed,
        })
    }
}
