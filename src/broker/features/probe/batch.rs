//! `lean_run_batch`: many candidate texts at one place in one call, in
//! parallel over the document's shadow slots (the same slots, prefix bases
//! and handles as `lean_run_at` and `lean_run_with`), one verdict each, with
//! fingerprints of the goals they reach and diffs against the start goals.

use serde_json::{Value, json};

use super::reading::{self, Against, fingerprint, goals_of, unrun, verdict};
use super::{FromHandle, Ran, Start};
use crate::broker::ask::{Batch, Budget, Continue, Place as Asked, Taking};
use crate::broker::engine::concurrent::AsCompleted;
use crate::broker::engine::runtimes::Runtimes;
use crate::broker::error::{Error, Result};
use crate::broker::progress::{LogLevel, ProgressSink, SinkFuture};
use crate::results::{BatchResult, Candidate, Outcome, StepKind};

/// A batch's answer: the result, and the error of each candidate that
/// crashed (its index in `texts`), for the caller to put in words
/// (`Candidate::error`).
pub struct BatchRun {
    pub result: BatchResult,
    pub crashed: Vec<(usize, Error)>,
}

/// The place the candidates start from, either kind.
enum Place<'c> {
    At(Start<'c>),
    With(FromHandle),
}

impl Place<'_> {
    async fn run(&self, sink: &dyn ProgressSink, text: &str, budget: Budget) -> Result<Ran> {
        match self {
            Place::At(start) => start.run(sink, text, budget).await,
            Place::With(from) => from.run(sink, text, budget).await,
        }
    }

    /// Whether `text` can run here within `budget`.
    fn check(&self, text: &str, budget: Budget) -> Result<()> {
        match self {
            Place::At(start) => start.check(text, budget),
            Place::With(from) => from.check(text, budget),
        }
    }

    fn kind(&self) -> StepKind {
        match self {
            Place::At(start) => start.kind(),
            Place::With(from) => from.kind(),
        }
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
        let total = batch.texts.len();
        let budget = batch.budget;
        let place = match &batch.place {
            Asked::At(at) => Place::At(self.probe_at(sink, at, Continue::NoHandles).await?),
            Asked::After(after) => Place::With(
                self.probe_from_handle(after.workspace, after.path, after.handle, Taking::Keep)
                    .await?,
            ),
        };
        for (index, text) in batch.texts.iter().enumerate() {
            place
                .check(text, budget)
                .map_err(|error| Error::Candidate {
                    index,
                    error: Box::new(error),
                })?;
        }
        let kind = place.kind();
        let tactic = kind == StepKind::Tactic;
        let quiet = Quiet(sink);
        let quiet = &quiet;
        let place = &place;
        let mut running: AsCompleted<'_, Result<Ran>> = AsCompleted::new();
        for text in batch.texts {
            running.push(async move { place.run(quiet, text, budget).await });
        }
        // From a handle the starting goals come from the handle's own state,
        // read as a no-op step beside the candidates.
        let start_probe = matches!(place, Place::With(_)) && tactic;
        if start_probe {
            running.push(async move { place.run(quiet, "skip", Budget::default()).await });
        }
        let mut done: Vec<Option<Result<Ran>>> = (0..total).map(|_| None).collect();
        let mut start_goals = match place {
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
            sink.progress(
                &format!("{finished} of {total} candidates done"),
                Some(json!({ "done": finished, "total": total })),
            )
            .await;
            if closed && batch.stop_on_first_close && winner.is_none_or(|w| i < w) {
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
        let mut start_goals = start_goals.unwrap_or_default();
        let start_fingerprint = tactic.then(|| fingerprint(&start_goals));

        let mut candidates: Vec<Candidate> = Vec::with_capacity(total);
        let mut fingerprints: Vec<Option<String>> = Vec::with_capacity(total);
        let mut crashed = Vec::new();
        // What the memory budget made candidates do, of those that ran.
        let (mut notes, mut candidates_run) = (Vec::new(), 0);
        for (index, ran) in done.into_iter().enumerate() {
            // After the winner every candidate is skipped, also one that
            // happened to finish: the answer does not depend on timing.
            let ran = if winner.is_some_and(|w| index > w) {
                None
            } else {
                ran
            };
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
            candidates_run += 1;
            notes.extend(ran.result.memory.clone());
            let against = Against {
                kind,
                start_goals: &start_goals,
                earlier: &fingerprints,
                diff: batch.diff,
            };
            let (mut candidate, fingerprint) =
                reading::candidate(ran.result, ran.crashed, &against);
            let outcome = candidate.outcome;
            let reached = matches!(outcome, Outcome::Closed | Outcome::Progressed);
            let progressed = outcome == Outcome::Progressed;
            let minting = reached && batch.handles == Continue::WithHandles;
            let handle = match (place, minting, &ran.step) {
                (Place::At(start), true, Some(step)) if kind == StepKind::Command || progressed => {
                    Some(start.mint(step)?)
                }
                (Place::With(from), true, _) => Some(from.mint(&batch.texts[index])?),
                _ => None,
            };
            candidate.handle = handle;
            fingerprints.push(fingerprint);
            candidates.push(candidate);
        }
        batch.form.apply(start_goals.iter_mut());
        batch.form.apply(
            candidates
                .iter_mut()
                .flat_map(|c| c.goals.iter_mut().flatten()),
        );
        let first_closed = candidates.iter().position(|c| c.outcome == Outcome::Closed);
        let (origin, line_text, disk_changed) = match place {
            Place::At(start) => (
                start.origin(),
                Some(start.line_text().to_owned()),
                start.disk_changed().await,
            ),
            Place::With(from) => (from.origin(), None, from.disk_changed().await),
        };
        Ok(BatchRun {
            result: BatchResult {
                // The caller's to echo (a declaration it resolved).
                declaration: None,
                workspace: origin.workspace,
                path: origin.path,
                version: origin.version,
                line_text,
                mode: kind,
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
