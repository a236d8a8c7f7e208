//! `lean_run_batch`: many candidate texts at one place in one call, in
//! parallel over the document's shadow slots (the same slots, prefix bases
//! and handles as `lean_run_at` and `lean_run_with`), one verdict each, with
//! fingerprints of the goals they reach and diffs against the start goals.

use serde_json::{Value, json};

use super::reading::{self, Against, fingerprint, goals_of, unrun, verdict};
use super::{FromHandle, Origin, Ran, Start};
use crate::broker::ask::{Batch, Budget, Continue, Place as Asked, Taking};
use crate::broker::engine::concurrent::AsCompleted;
use crate::broker::engine::runtimes::Runtimes;
use crate::broker::error::{Error, Result};
use crate::broker::progress::{LogLevel, ProgressSink, SinkFuture};
use crate::results::{BatchResult, Candidate, Goal, Outcome, Placeholder, StepKind, TextEdit};

/// A batch's answer: the result, and the error of each candidate that
/// crashed (its index in `texts`), for the caller to put in words
/// (`Candidate::error`).
pub struct BatchRun {
    pub result: BatchResult,
    pub crashed: Vec<(usize, Error)>,
}

/// The place the candidates start from, either kind.
pub(crate) enum Place<'c> {
    At(Start<'c>),
    With(FromHandle),
}

/// Texts run together at a place ([`Place::run_all`]): each one's run
/// (`None`: not run, or stopped), and the goals they start from.
pub(crate) struct Runs {
    pub(crate) done: Vec<Option<Result<Ran>>>,
    pub(crate) start_goals: Vec<Goal>,
}

/// Each text's verdict, and the error of each that crashed (its index).
pub(crate) type Verdicts = (Vec<Candidate>, Vec<(usize, Error)>);

/// How [`Place::run_all`] runs its texts.
#[derive(Clone, Copy)]
pub(crate) struct RunAll<'a> {
    pub(crate) budget: Budget,
    /// Stop the texts after the lowest-index one that closes the goals.
    pub(crate) stop_on_first_close: bool,
    /// From a handle, read the goals the texts start from (a no-op step
    /// beside them).
    pub(crate) start_goals: bool,
    /// What progress calls the texts ("candidates": "3 of 8 candidates
    /// done").
    pub(crate) unit: &'a str,
}

impl<'c> Place<'c> {
    /// Take the place a call names: a position of a pinned version (probed
    /// without handles: a term position still takes texts), or a handle
    /// (kept).
    pub(crate) async fn take(
        runtimes: &Runtimes,
        sink: &'c dyn ProgressSink,
        asked: &Asked<'_>,
    ) -> Result<Place<'c>> {
        Ok(match asked {
            Asked::At(at) => Place::At(runtimes.probe_at(sink, at, Continue::NoHandles).await?),
            Asked::After(after) => Place::With(
                runtimes
                    .probe_from_handle(after.workspace, after.path, after.handle, Taking::Keep)
                    .await?,
            ),
        })
    }
}

impl Place<'_> {
    async fn run(&self, sink: &dyn ProgressSink, text: &str, budget: Budget) -> Result<Ran> {
        match self {
            Place::At(start) => start.run(sink, text, budget).await,
            Place::With(from) => from.run(sink, text, budget).await,
        }
    }

    /// Whether `text` can run here within `budget`.
    pub(crate) fn check(&self, text: &str, budget: Budget) -> Result<()> {
        match self {
            Place::At(start) => start.check(text, budget),
            Place::With(from) => from.check(text, budget),
        }
    }

    /// Whether each of `texts` can run here within `budget`: the first that
    /// cannot is the error, with its index.
    pub(crate) fn check_all(&self, texts: &[String], budget: Budget) -> Result<()> {
        for (index, text) in texts.iter().enumerate() {
            self.check(text, budget).map_err(|error| Error::Candidate {
                index,
                error: Box::new(error),
            })?;
        }
        Ok(())
    }

    pub(crate) fn kind(&self) -> StepKind {
        match self {
            Place::At(start) => start.kind(),
            Place::With(from) => from.kind(),
        }
    }

    /// The document and version the texts run against, the addressed line
    /// (from a position), and whether the file changed on disk since.
    pub(crate) async fn origin(&self) -> (Origin, Option<String>, bool) {
        match self {
            Place::At(start) => (
                start.origin(),
                Some(start.line_text().to_owned()),
                start.disk_changed().await,
            ),
            Place::With(from) => (from.origin(), None, from.disk_changed().await),
        }
    }

    /// The edit that puts `text`, run here, into the user's file: as
    /// `lean_handle_edit` writes the chain of a handle minted after it.
    pub(crate) fn edit(&self, text: &str) -> Result<(TextEdit, Option<Placeholder>)> {
        match self {
            Place::At(start) => Ok(start.edit(&start.step(text)?)),
            Place::With(from) => from.edit(text),
        }
    }

    /// Run `texts` here together, each within `how.budget`, progress
    /// counted in `how.unit`.
    pub(crate) async fn run_all(
        &self,
        sink: &dyn ProgressSink,
        texts: &[String],
        how: RunAll<'_>,
    ) -> Result<Runs> {
        let total = texts.len();
        let budget = how.budget;
        let tactic = self.kind() == StepKind::Tactic;
        let quiet = Quiet(sink);
        let quiet = &quiet;
        let mut running: AsCompleted<'_, Result<Ran>> = AsCompleted::new();
        for text in texts {
            running.push(async move { self.run(quiet, text, budget).await });
        }
        // From a handle the starting goals come from the handle's own state,
        // read as a no-op step beside the candidates.
        let start_probe = matches!(self, Place::With(_)) && tactic && how.start_goals;
        if start_probe {
            running.push(async move { self.run(quiet, "skip", Budget::default()).await });
        }
        let mut done: Vec<Option<Result<Ran>>> = (0..total).map(|_| None).collect();
        let mut start_goals = match self {
            Place::At(start) => Some(start.goals().to_vec()),
            Place::With(_) => None,
        };
        let mut finished = 0;
        let mut stop = false;
        let mut winner: Option<usize> = None;
        while let Some((i, ran)) = running.next().await {
            if i == total {
                start_goals = Some(match ran {
                    Ok(ran) => goals_of(&ran.result),
                    Err(e) if e.lost_worker() => Vec::new(),
                    Err(e) => return Err(e),
                });
                continue;
            }
            let ran = match ran {
                Err(e) if !e.lost_worker() => return Err(e),
                ran => ran,
            };
            let closed = ran
                .as_ref()
                .is_ok_and(|ran| verdict(&ran.result, ran.crashed) == Outcome::Closed);
            done[i] = Some(ran);
            finished += 1;
            let unit = how.unit;
            sink.progress(
                &format!("{finished} of {total} {unit} done"),
                Some(json!({ "done": finished, "total": total })),
            )
            .await;
            if closed && how.stop_on_first_close && winner.is_none_or(|w| i < w) {
                // Candidates after the lowest-index close are not wanted:
                // they stop now (their slots go to the ones before it).
                winner = Some(i);
                running.cancel(i + 1..total);
            }
            // The winner is the lowest-index closing candidate once every
            // candidate before it has run, whatever order they finished in.
            if winner.is_some_and(|w| done[..w].iter().all(Option::is_some)) {
                stop = true;
                break;
            }
        }
        if stop {
            // The rest are skipped: their slots are given back (and Lean told
            // to stop) as they drop; the starting goals are still wanted.
            let start_future = if start_probe {
                running.take(total)
            } else {
                None
            };
            drop(running);
            if let Some(future) = start_future {
                if let Ok(ran) = future.await {
                    start_goals = Some(goals_of(&ran.result));
                }
            }
        }
        if let Some(w) = winner {
            // After the winner every candidate is skipped, also one that
            // happened to finish: the answer does not depend on timing.
            for ran in &mut done[w + 1..] {
                *ran = None;
            }
        }
        Ok(Runs {
            done,
            start_goals: start_goals.unwrap_or_default(),
        })
    }

    /// The verdict on each of `texts` from its run (`runs.done`, taken), as
    /// `lean_run_batch` gives it (`handles(i)`: whether text `i` gets a
    /// handle), and the error of each that crashed.
    pub(crate) fn candidates(
        &self,
        texts: &[String],
        runs: &mut Runs,
        handles: impl Fn(usize) -> Continue,
        with_diff: bool,
    ) -> Result<Verdicts> {
        let kind = self.kind();
        let start_goals = &runs.start_goals;
        let mut candidates: Vec<Candidate> = Vec::with_capacity(texts.len());
        let mut fingerprints: Vec<Option<String>> = Vec::with_capacity(texts.len());
        let mut crashed = Vec::new();
        for (index, ran) in runs.done.iter_mut().map(Option::take).enumerate() {
            let ran = match ran {
                None => {
                    candidates.push(unrun(Outcome::Skipped));
                    fingerprints.push(None);
                    continue;
                }
                Some(Err(e)) => {
                    crashed.push((index, e));
                    candidates.push(unrun(Outcome::Crashed));
                    fingerprints.push(None);
                    continue;
                }
                Some(Ok(ran)) => ran,
            };
            let against = Against {
                kind,
                start_goals,
                earlier: &fingerprints,
                diff: with_diff,
            };
            let (mut candidate, fingerprint) =
                reading::candidate(ran.result, ran.crashed, &against);
            let outcome = candidate.outcome;
            let reached = matches!(outcome, Outcome::Closed | Outcome::Progressed);
            let progressed = outcome == Outcome::Progressed;
            let minting = reached && handles(index) == Continue::WithHandles;
            candidate.handle = match (self, minting, &ran.step) {
                (Place::At(start), true, Some(step)) if kind == StepKind::Command || progressed => {
                    Some(start.mint(step)?)
                }
                (Place::With(from), true, _) => Some(from.mint(&texts[index])?),
                _ => None,
            };
            fingerprints.push(fingerprint);
            candidates.push(candidate);
        }
        Ok((candidates, crashed))
    }
}

/// What the candidates report to: nothing of their own (the batch reports
/// one count, not each candidate's file progress).
struct Quiet<'a>(&'a dyn ProgressSink);

impl ProgressSink for Quiet<'_> {
    fn has_progress_token(&self) -> bool {
        false
    }

    fn admits(&self, _: LogLevel) -> bool {
        false
    }

    fn follows_lake_setup(&self) -> bool {
        self.0.follows_lake_setup()
    }

    fn progress<'a>(&'a self, _: &'a str, _: Option<Value>) -> SinkFuture<'a, bool> {
        Box::pin(std::future::ready(false))
    }

    fn log<'a>(&'a self, _: LogLevel, _: &'a str, _: Value) -> SinkFuture<'a, ()> {
        Box::pin(std::future::ready(()))
    }

    fn lake_setup<'a>(&'a self, _: &'a str, _: &'a str) -> SinkFuture<'a, ()> {
        Box::pin(std::future::ready(()))
    }
}

impl Runtimes {
    pub(crate) async fn run_batch(
        &self,
        sink: &dyn ProgressSink,
        batch: &Batch<'_>,
    ) -> Result<BatchRun> {
        let place = Place::take(self, sink, &batch.place).await?;
        place.check_all(batch.texts, batch.budget)?;
        let mode = place.kind();
        let how = RunAll {
            budget: batch.budget,
            stop_on_first_close: batch.stop_on_first_close,
            start_goals: true,
            unit: "candidates",
        };
        let mut runs = place.run_all(sink, batch.texts, how).await?;
        // What the memory budget made candidates do, of those that ran.
        let ran: Vec<&Ran> = runs.done.iter().flatten().flatten().collect();
        let notes: Vec<String> = ran.iter().flat_map(|r| r.result.memory.clone()).collect();
        let candidates_run = ran.len();
        let (mut candidates, crashed) =
            place.candidates(batch.texts, &mut runs, |_| batch.handles, batch.diff)?;
        let mut start_goals = runs.start_goals;
        let start_fingerprint = (mode == StepKind::Tactic).then(|| fingerprint(&start_goals));
        batch.form.apply(start_goals.iter_mut());
        batch.form.apply(
            candidates
                .iter_mut()
                .flat_map(|c| c.goals.iter_mut().flatten()),
        );
        let first_closed = candidates.iter().position(|c| c.outcome == Outcome::Closed);
        let (origin, line_text, disk_changed) = place.origin().await;
        Ok(BatchRun {
            result: BatchResult {
                // The caller's to echo (a declaration it resolved).
                declaration: None,
                workspace: origin.workspace,
                path: origin.path,
                version: origin.version,
                line_text,
                mode,
                start_goals,
                start_fingerprint,
                candidates,
                first_closed,
                disk_changed,
                memory: (!notes.is_empty()).then(|| {
                    format!(
                        "{} of {} candidates: {}",
                        notes.len(),
                        candidates_run,
                        notes[0]
                    )
                }),
            },
            crashed,
        })
    }
}
