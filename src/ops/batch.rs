//! `lean_run_batch`: many candidate texts at one place in one call, in
//! parallel over the document's shadow slots (the same slots, prefix bases
//! and handles as `lean_run_at` and `lean_run_with`), one verdict each.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use serde_json::json;

use super::args::{Address, pinned};
use crate::broker::{self, Broker, Budget, Continue, FromHandle, Ran, Start, Taking};
use crate::results::{
    BatchMode, BatchResult, Candidate, Goal, GoalDiff, GoalForm, HypsDiff, Outcome,
};
use crate::surface::{CallContext, ErrorCode, LeanRunBatchArgs, ToolError};

/// At most this many candidates in one call.
pub const MAX_CANDIDATES: usize = 32;

/// Where the candidates go: a position (or declaration) of a pinned
/// version, or a handle.
enum From<'a> {
    Position(Address<'a>),
    Handle { path: &'a str, handle: &'a str },
}

impl<'a> From<'a> {
    /// The place the arguments name: a position or a handle, never both.
    fn of(args: &'a LeanRunBatchArgs) -> Result<Self, ToolError> {
        let positional = args.line.is_some()
            || args.character.is_some()
            || args.declaration.is_some()
            || args.at.is_some();
        match (&args.handle, args.version) {
            (Some(handle), None) if !positional => Ok(From::Handle {
                path: &args.path,
                handle,
            }),
            (None, Some(version)) => Ok(From::Position(Address {
                pinned: pinned(&args.workspace, &args.path, version),
                line: args.line,
                character: args.character,
                declaration: args.declaration.as_deref(),
                at: args.at,
            })),
            _ => Err(invalid(
                "give either version with line and character (a position) or declaration, or handle, not both"
                    .to_owned(),
            )),
        }
    }
}

/// A set of futures polled together, giving each result as it comes (no
/// `futures` crate: a handful of boxed futures polled in turn).
struct Running<'a, T> {
    futures: Vec<Option<Pin<Box<dyn Future<Output = T> + Send + 'a>>>>,
}

impl<'a, T> Running<'a, T> {
    async fn next(&mut self) -> Option<(usize, T)> {
        std::future::poll_fn(|cx| {
            let mut pending = false;
            for (i, slot) in self.futures.iter_mut().enumerate() {
                let Some(future) = slot else { continue };
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => {
                        *slot = None;
                        return Poll::Ready(Some((i, value)));
                    }
                    Poll::Pending => pending = true,
                }
            }
            if pending {
                Poll::Pending
            } else {
                Poll::Ready(None)
            }
        })
        .await
    }
}

fn invalid(message: String) -> ToolError {
    ToolError::new(ErrorCode::InvalidParams, message)
}

/// FNV-1a, 128 bits, over the pretty-printed goals: stable across calls and
/// processes (no random seed), unlike std's hasher.
fn fingerprint(goals: &[Goal]) -> String {
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

/// The candidate's verdict: the one every probe tool gives a step.
fn verdict(ran: &Ran) -> Outcome {
    broker::verdict(&ran.result, ran.crashed)
}

/// A candidate that did not run to its end.
fn without_run(outcome: Outcome, error: Option<String>) -> Candidate {
    Candidate {
        outcome,
        messages: Vec::new(),
        goals: None,
        goals_at_start: false,
        error,
        fingerprint: None,
        same_as: None,
        diff: None,
        handle: None,
    }
}

/// The place the candidates start from, either kind.
enum Place<'c> {
    At(Start<'c>),
    With(FromHandle),
}

impl Place<'_> {
    async fn run(&self, ctx: &CallContext, text: &str, budget: Budget) -> broker::Result<Ran> {
        match self {
            Place::At(start) => start.run(ctx, text, budget).await,
            Place::With(from) => from.run(ctx, text, budget).await,
        }
    }

    /// Whether `text` can run here within `budget`.
    fn check(&self, text: &str, budget: Budget) -> broker::Result<()> {
        match self {
            Place::At(start) => start.check(text, budget),
            Place::With(from) => from.check(text, budget),
        }
    }

    fn mode(&self) -> BatchMode {
        match self {
            Place::At(start) => start.mode(),
            Place::With(from) if from.is_proof() => BatchMode::Tactic,
            Place::With(_) => BatchMode::Command,
        }
    }
}

/// The goals of a step's proof state (none for a command).
fn goals_of(ran: &Ran) -> Vec<Goal> {
    ran.result
        .proof_state
        .as_ref()
        .map(|p| p.goals.clone())
        .unwrap_or_default()
}

pub async fn run_batch(
    broker: &Broker,
    ctx: &CallContext,
    batch: &LeanRunBatchArgs,
) -> Result<BatchResult, ToolError> {
    let total = batch.texts.len();
    let budget = Budget::new(batch.max_heartbeats, batch.timeout_ms);
    if total == 0 || total > MAX_CANDIDATES {
        return Err(invalid(format!(
            "texts holds {total} candidates; give 1 to {MAX_CANDIDATES}"
        )));
    }
    let mut declaration = None;
    let place = match From::of(batch)? {
        From::Position(address) => {
            let (at, named) = address.resolve(broker, ctx).await?;
            declaration = named;
            Place::At(broker.probe_at(ctx, &at, Continue::NoHandles).await?)
        }
        From::Handle { path, handle } => Place::With(
            broker
                .probe_from_handle(&batch.workspace.root, path, handle, Taking::Keep)
                .await?,
        ),
    };
    for (i, text) in batch.texts.iter().enumerate() {
        place
            .check(text, budget)
            .map_err(|e| invalid(format!("texts[{i}]: {}", ToolError::from(e).message)))?;
    }
    let mode = place.mode();
    let tactic = mode == BatchMode::Tactic;
    // Candidates report progress as one count, not each its own file
    // progress; they stop with the call.
    let quiet = CallContext::new(ctx.request_id.clone(), ctx.era, ctx.tool, None, None, None)
        .with_cancellation(ctx.cancel.clone());
    let quiet = &quiet;
    let place = &place;
    let mut running: Running<'_, broker::Result<Ran>> = Running {
        futures: Vec::with_capacity(total + 1),
    };
    for text in &batch.texts {
        running.futures.push(Some(Box::pin(async move {
            place.run(quiet, text, budget).await
        })));
    }
    // From a handle the starting goals come from the handle's own state,
    // read as a no-op step beside the candidates.
    let start_probe = matches!(place, Place::With(_)) && tactic;
    if start_probe {
        running.futures.push(Some(Box::pin(async move {
            place.run(quiet, "skip", Budget::default()).await
        })));
    }
    let mut done: Vec<Option<broker::Result<Ran>>> = (0..total).map(|_| None).collect();
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
                Ok(ran) => goals_of(&ran),
                Err(e) if e.lost_worker() => Vec::new(),
                Err(e) => return Err(e.into()),
            });
            continue;
        }
        let ran = match ran {
            Err(e) if !e.lost_worker() => return Err(e.into()),
            ran => ran,
        };
        let closed = ran
            .as_ref()
            .is_ok_and(|ran| verdict(ran) == Outcome::Closed);
        done[i] = Some(ran);
        finished += 1;
        ctx.progress(
            &format!("{finished} of {total} candidates done"),
            Some(json!({ "done": finished, "total": total })),
        )
        .await;
        if closed && batch.stop_on_first_close && winner.is_none_or(|w| i < w) {
            // Candidates after the lowest-index close are not wanted: they
            // stop now (their slots go to the ones before it).
            winner = Some(i);
            for future in &mut running.futures[i + 1..total] {
                *future = None;
            }
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
            running.futures.pop().flatten()
        } else {
            None
        };
        drop(running);
        if let Some(future) = start_future {
            if let Ok(ran) = future.await {
                start_goals = Some(goals_of(&ran));
            }
        }
    }
    let mut start_goals = start_goals.unwrap_or_default();
    let start_fingerprint = tactic.then(|| fingerprint(&start_goals));

    let mut candidates: Vec<Candidate> = Vec::with_capacity(total);
    let mut fingerprints: Vec<Option<String>> = Vec::with_capacity(total);
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
                candidates.push(without_run(Outcome::Skipped, None));
                fingerprints.push(None);
                continue;
            }
            Some(Err(e)) => {
                let message = ToolError::from(e).message;
                candidates.push(without_run(Outcome::Crashed, Some(message)));
                fingerprints.push(None);
                continue;
            }
            Some(Ok(ran)) => ran,
        };
        let outcome = verdict(&ran);
        let reached = matches!(outcome, Outcome::Closed | Outcome::Progressed);
        let progressed = outcome == Outcome::Progressed;
        let goals = goals_of(&ran);
        let fingerprint = (reached && tactic).then(|| fingerprint(&goals));
        let same_as = fingerprint.as_ref().and_then(|f| {
            fingerprints
                .iter()
                .position(|other| other.as_ref() == Some(f))
        });
        let handle = match (&place, reached && batch.handles, &ran.step) {
            (Place::At(start), true, Some(step)) if mode == BatchMode::Command || progressed => {
                Some(start.mint(step)?)
            }
            (Place::With(from), true, _) => Some(from.mint(&batch.texts[index])?),
            _ => None,
        };
        // Closed: no goals to show. Failed at its first step: the goals
        // are the start goals, said once for the batch.
        let shown = ran.result.proof_state.is_some() && outcome != Outcome::Closed;
        let at_start = outcome == Outcome::Failed && tactic && goals == start_goals;
        fingerprints.push(fingerprint.clone());
        candidates.push(Candidate {
            outcome,
            messages: ran.result.messages,
            diff: (progressed && tactic && batch.diff).then(|| diff(&start_goals, &goals)),
            goals: (shown && !at_start).then_some(goals),
            goals_at_start: at_start,
            fingerprint: fingerprint.filter(|_| progressed),
            same_as: same_as.filter(|_| progressed),
            handle,
            error: None,
        });
    }
    let form = GoalForm::of(batch.structured_goals);
    form.apply(start_goals.iter_mut());
    form.apply(
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
    Ok(BatchResult {
        declaration,
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
