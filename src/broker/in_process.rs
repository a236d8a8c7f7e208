//! Broker tests through the façade on the in-process scripted Lean
//! ([`crate::lsp::testing`]): no toolchain, no process. The scripted Lean
//! reads a text by a few rules (below), so each test says in its file what
//! Lean reports; the faults (a worker crash, stale imports, a dead server)
//! come from the script.
//!
//! The rules of [`rules`]: a line with `oops` is an error ("unknown
//! identifier"), a line with `sorry` a warning; a `by` block with neither
//! `trivial` nor `sorry` nor `oops` leaves "unsolved goals" at its `by`
//! line. Goals: on an indented line, `⊢ True` until a `trivial` above or on
//! it closes the proof.

use std::sync::Arc;

use tokio::sync::Semaphore;

use super::{
    After, At, Batch, Broker, Budget, Continue, Error, HandleProblem, Limits, Pinned, Place, Taking,
};
use crate::broker::progress::LakeLines;
use crate::lsp::testing::{Elaboration, Report, Script, ScriptedLean, diagnostic};
use crate::results::Outcome;

mod fixture;
mod memory_budget;

use fixture::*;

/// The diagnostics of a sync are Lean's whole last set for the version on
/// disk, not one of the partial sets it publishes on the way.
#[tokio::test]
async fn sync_reports_the_last_set_of_the_version_on_disk() {
    let lean = ScriptedLean::new(rules());
    let ws = Workspace::new();
    ws.write(
        "A.lean",
        "def a := oops\ndef b := oops\ntheorem c : True := sorry\n",
    );
    let broker = broker(&lean);
    let synced = broker
        .sync(&Quiet, &ws.descriptor(), "A.lean", sync_options())
        .await
        .unwrap();
    assert_eq!(synced.version, 1);
    let counts = &synced.diagnostics.counts;
    assert_eq!((counts.error, counts.warning, counts.total), (2, 1, 3));
    assert!(!synced.readiness.save_ready);
    assert_eq!(lean.count("textDocument/didOpen", "A.lean"), 1);
}

/// The sync waits on Lean's barrier: while Lean still elaborates the version
/// (held at the script's gate) the call has not answered; once Lean
/// publishes, the answer has what it published.
#[tokio::test]
async fn sync_waits_for_the_elaboration_of_its_version() {
    let gate = Arc::new(Semaphore::new(0));
    let held = Arc::clone(&gate);
    let lean = ScriptedLean::new(Script::new(move |e: &Elaboration| {
        Report::Gated(Arc::clone(&held), read(&e.text))
    }));
    let ws = Workspace::new();
    ws.write("A.lean", "def a := oops\n");
    let broker = Arc::new(broker(&lean));
    let mut call = {
        let (broker, ws) = (Arc::clone(&broker), ws.descriptor());
        tokio::spawn(async move {
            broker
                .sync(&Quiet, &ws, "A.lean", sync_options())
                .await
                .map(|r| r.diagnostics.counts.error)
        })
    };
    tokio::select! {
        answer = &mut call => panic!("the sync answered before Lean elaborated: {answer:?}"),
        _ = lean.wait_for(|r| r.method == "textDocument/waitForDiagnostics") => {}
    }
    assert!(
        !call.is_finished(),
        "the sync answered before Lean elaborated"
    );
    gate.add_permits(1);
    assert_eq!(call.await.unwrap().unwrap(), 1);
}

/// A second sync of an unchanged file sends Lean no change and answers the
/// same version with the same report. (Skipping the barrier as well needs a
/// worker process seen running, which an in-process Lean has not: the real
/// suites cover that.)
#[tokio::test]
async fn an_unchanged_file_is_answered_from_its_report() {
    let lean = ScriptedLean::new(rules());
    let ws = Workspace::new();
    ws.write("A.lean", "def a := oops\n");
    let broker = broker(&lean);
    let first = broker
        .sync(&Quiet, &ws.descriptor(), "A.lean", sync_options())
        .await
        .unwrap();
    let second = broker
        .sync(&Quiet, &ws.descriptor(), "A.lean", sync_options())
        .await
        .unwrap();
    assert_eq!(first.version, second.version);
    assert_eq!(first.diagnostics, second.diagnostics);
    assert_eq!(lean.count("textDocument/didChange", "A.lean"), 0);
    assert_eq!(lean.count("textDocument/didOpen", "A.lean"), 1);
}

/// An edit on disk reaches Lean as one change of the open document (not a
/// reopen), under the next version, and the answer is that version's.
#[tokio::test]
async fn an_edit_is_sent_as_a_change_and_read_at_its_version() {
    let lean = ScriptedLean::new(rules());
    let ws = Workspace::new();
    ws.write("A.lean", "def a := 1\ndef b := 2\n");
    let broker = broker(&lean);
    let clean = broker
        .sync(&Quiet, &ws.descriptor(), "A.lean", sync_options())
        .await
        .unwrap();
    assert_eq!(clean.diagnostics.counts.total, 0);
    ws.write("A.lean", "def a := 1\ndef b := oops\n");
    let edited = broker
        .sync(&Quiet, &ws.descriptor(), "A.lean", sync_options())
        .await
        .unwrap();
    assert_eq!(edited.version, clean.version + 1);
    let items = edited.diagnostics.items.unwrap();
    assert_eq!(items.len(), 1);
    // The scripted Lean applied the change to its copy: the error is where
    // the disk text has it.
    assert_eq!(items[0].range.start.line, 1);
    assert_eq!(items[0].range.start.character, 9);
    assert_eq!(lean.count("textDocument/didOpen", "A.lean"), 1);
    assert_eq!(lean.count("textDocument/didChange", "A.lean"), 1);
}

/// A worker that crashes while a sync waits (Lean reports the file fatal
/// and holds its requests) is given up after the grace, the document is
/// reopened on a new worker, and the sync answers from that one.
#[tokio::test]
async fn a_crashed_worker_is_reopened_and_the_sync_retried() {
    let lean = ScriptedLean::new(Script::new(|e: &Elaboration| {
        if e.opened == 1 {
            Report::WorkerCrash
        } else {
            Report::Diagnostics(read(&e.text))
        }
    }));
    let ws = Workspace::new();
    ws.write("A.lean", "def a := oops\n");
    let broker = broker(&lean);
    let synced = broker
        .sync(&Quiet, &ws.descriptor(), "A.lean", sync_options())
        .await
        .unwrap();
    assert_eq!(synced.diagnostics.counts.error, 1);
    assert_eq!(lean.count("textDocument/didOpen", "A.lean"), 2);
    assert_eq!(lean.count("textDocument/didClose", "A.lean"), 1);
}

/// A worker that crashes again on the retry fails the sync as stopped: one
/// retry, never a loop.
#[tokio::test]
async fn a_worker_that_keeps_crashing_fails_the_sync_once_retried() {
    let lean = ScriptedLean::new(Script::new(|_: &Elaboration| Report::WorkerCrash));
    let ws = Workspace::new();
    ws.write("A.lean", "def a := 1\n");
    let broker = broker(&lean);
    let error = broker
        .sync(&Quiet, &ws.descriptor(), "A.lean", sync_options())
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::WorkerStopped { .. }),
        "got {error:?}"
    );
    assert_eq!(lean.count("textDocument/didOpen", "A.lean"), 2);
}

/// Lean saying the imports are out of date (a dependency rebuilt under the
/// open file) makes the sync reopen the file once, and the answer is the
/// reopened file's.
#[tokio::test]
async fn rebuilt_imports_reopen_the_file_once() {
    let lean = ScriptedLean::new(Script::new(|e: &Elaboration| {
        let text = if e.opened == 1 {
            format!("-- IMPORTS_STALE\n{}", e.text)
        } else {
            e.text.clone()
        };
        Report::Diagnostics(read(&text))
    }));
    let ws = Workspace::new();
    ws.write("A.lean", "def a := 1\n");
    let broker = broker(&lean);
    let synced = broker
        .sync(&Quiet, &ws.descriptor(), "A.lean", sync_options())
        .await
        .unwrap();
    assert_eq!(synced.diagnostics.counts.total, 0);
    assert_eq!(lean.count("textDocument/didOpen", "A.lean"), 2);
}

/// Imports still out of date after the reopen are reported, not retried
/// forever.
#[tokio::test]
async fn imports_stale_after_the_reopen_are_reported() {
    let lean = ScriptedLean::new(rules());
    let ws = Workspace::new();
    ws.write("A.lean", "-- IMPORTS_STALE\ndef a := 1\n");
    let broker = broker(&lean);
    let synced = broker
        .sync(&Quiet, &ws.descriptor(), "A.lean", sync_options())
        .await
        .unwrap();
    assert_eq!(synced.diagnostics.counts.error, 1);
    assert_eq!(lean.count("textDocument/didOpen", "A.lean"), 2);
}

/// A Lean server that died is started again by the next call, which
/// reopens the document in it.
#[tokio::test]
async fn a_dead_server_is_restarted_by_the_next_call() {
    let lean = ScriptedLean::new(Script::new(|e: &Elaboration| {
        if e.opened == 1 {
            Report::ServerCrash
        } else {
            Report::Diagnostics(read(&e.text))
        }
    }));
    let ws = Workspace::new();
    ws.write("A.lean", "def a := oops\n");
    let broker = broker(&lean);
    let first = broker
        .sync(&Quiet, &ws.descriptor(), "A.lean", sync_options())
        .await;
    // The call that saw the server die fails, or answers from a restart.
    if let Ok(result) = &first {
        assert_eq!(result.diagnostics.counts.error, 1);
    }
    let second = broker
        .sync(&Quiet, &ws.descriptor(), "A.lean", sync_options())
        .await
        .unwrap();
    assert_eq!(second.diagnostics.counts.error, 1);
    assert_eq!(lean.servers(), 2);
    let reopened = lean.received();
    assert!(
        reopened
            .iter()
            .any(|r| r.server == 2 && r.method == "textDocument/didOpen"),
        "the document was not reopened in the new server: {reopened:?}"
    );
}

/// A fatal report (a header that failed) answers the barrier at once: the
/// sync reports it without waiting for a worker that never comes.
#[tokio::test]
async fn a_fatal_report_is_answered_without_a_retry() {
    let lean = ScriptedLean::new(Script::new(|_: &Elaboration| {
        Report::Fatal(vec![diagnostic(0, 0, 6, 1, "unknown module prefix 'Nope'")])
    }));
    let ws = Workspace::new();
    ws.write("A.lean", "import Nope\n");
    let broker = broker(&lean);
    let synced = broker
        .sync(&Quiet, &ws.descriptor(), "A.lean", sync_options())
        .await
        .unwrap();
    assert_eq!(synced.diagnostics.counts.error, 1);
    assert_eq!(
        synced.readiness.reason,
        crate::results::ReadinessReason::FatalError
    );
    assert_eq!(lean.count("textDocument/didOpen", "A.lean"), 1);
}

/// `close` closes the document in Lean; the next sync opens it again.
#[tokio::test]
async fn close_closes_in_lean_and_the_next_sync_reopens() {
    let lean = ScriptedLean::new(rules());
    let ws = Workspace::new();
    ws.write("A.lean", "def a := 1\n");
    let broker = broker(&lean);
    broker
        .sync(&Quiet, &ws.descriptor(), "A.lean", sync_options())
        .await
        .unwrap();
    broker.close(&ws.descriptor(), "A.lean").await.unwrap();
    assert_eq!(lean.count("textDocument/didClose", "A.lean"), 1);
    broker
        .sync(&Quiet, &ws.descriptor(), "A.lean", sync_options())
        .await
        .unwrap();
    assert_eq!(lean.count("textDocument/didOpen", "A.lean"), 2);
}

/// Goals at a position come from Lean's RPC, read into their parts.
#[tokio::test]
async fn goals_come_from_rpc_with_their_parts() {
    let lean = ScriptedLean::new(rules());
    let ws = Workspace::new();
    ws.write("A.lean", PROOF);
    let broker = broker(&lean);
    let synced = broker
        .sync(&Quiet, &ws.descriptor(), "A.lean", sync_options())
        .await
        .unwrap();
    let at = At {
        workspace: &ws.descriptor(),
        path: "A.lean",
        version: synced.version,
        line: 1,
        character: 2,
    };
    let goals = broker
        .goals(&Quiet, &at, super::GoalsMode::Before)
        .await
        .unwrap();
    assert_eq!(goals.source, crate::results::GoalSource::Rpc);
    assert_eq!(goals.goals.len(), 1);
    assert_eq!(goals.goals[0].parts.as_ref().unwrap().target, "True");
    assert_eq!(lean.count("$/lean/rpc/connect", "A.lean"), 1);
}

/// A version the document has moved on from is refused, naming both.
#[tokio::test]
async fn a_pinned_version_that_moved_on_is_refused() {
    let lean = ScriptedLean::new(rules());
    let ws = Workspace::new();
    ws.write("A.lean", PROOF);
    let broker = broker(&lean);
    let synced = broker
        .sync(&Quiet, &ws.descriptor(), "A.lean", sync_options())
        .await
        .unwrap();
    ws.write("A.lean", "theorem t : True := by\n  trivial\n");
    broker
        .sync(&Quiet, &ws.descriptor(), "A.lean", sync_options())
        .await
        .unwrap();
    let pinned = Pinned {
        workspace: &ws.descriptor(),
        path: "A.lean",
        version: synced.version,
    };
    let error = broker
        .document_symbols(&Quiet, &pinned, super::Signatures::Omitted)
        .await;
    assert!(error.is_err(), "a stale version was answered");
}

/// A step that closes the goal succeeds with no goals left; one that leaves
/// it open is no success and says the goals it left.
#[tokio::test]
async fn a_step_is_read_as_closing_or_leaving_goals() {
    let lean = ScriptedLean::new(rules());
    let ws = Workspace::new();
    ws.write("A.lean", PROOF);
    let broker = broker(&lean);
    let d = ws.descriptor();
    let v = synced(&broker, &d, "A.lean").await;
    let closed = run(&broker, &at(&d, v, 1, 2), "trivial").await.unwrap();
    assert!(closed.success, "{closed:?}");
    let state = closed.proof_state.as_ref().expect("goals after the step");
    assert!(state.goals.is_empty(), "{closed:?}");
    let failed = run(&broker, &at(&d, v, 1, 2), "exact oops").await.unwrap();
    assert!(!failed.success, "{failed:?}");
    assert!(
        failed.messages.iter().any(|m| m.text.contains("oops")),
        "{failed:?}"
    );
}

/// A batch gives each candidate its verdict; stopping on the first close,
/// the candidates after the lowest-index close are skipped whatever order
/// they finished in, and the place's goals are the start goals.
#[tokio::test]
async fn a_batch_gives_verdicts_and_skips_after_the_first_close() {
    let lean = ScriptedLean::new(rules());
    let ws = Workspace::new();
    ws.write("A.lean", PROOF);
    let broker = broker(&lean);
    let d = ws.descriptor();
    let v = synced(&broker, &d, "A.lean").await;
    let texts = ["exact oops", "trivial", "skip"].map(str::to_owned);
    let batch = Batch {
        place: Place::At(at(&d, v, 1, 2)),
        texts: &texts,
        budget: Budget::default(),
        stop_on_first_close: true,
        handles: Continue::NoHandles,
        diff: true,
        form: crate::results::GoalForm::Pretty,
    };
    let run = broker.run_batch(&Quiet, &batch).await.unwrap();
    let result = run.result;
    assert!(run.crashed.is_empty());
    let outcomes: Vec<Outcome> = result.candidates.iter().map(|c| c.outcome).collect();
    assert_eq!(
        outcomes,
        [Outcome::Failed, Outcome::Closed, Outcome::Skipped],
        "{result:?}"
    );
    assert_eq!(result.first_closed, Some(1));
    assert_eq!(result.mode, crate::results::StepKind::Tactic);
    let start: Vec<&str> = result
        .start_goals
        .iter()
        .map(|g| g.pretty.as_str())
        .collect();
    assert_eq!(start, ["⊢ True"], "{result:?}");
    assert!(result.start_fingerprint.is_some());
    assert!(
        result.candidates[0]
            .messages
            .iter()
            .any(|m| m.text.contains("oops")),
        "{result:?}"
    );
}

/// Probes at one place reuse one shadow slot: the second step is a change
/// of the slot's document, not another document opened in Lean.
#[tokio::test]
async fn probes_reuse_their_shadow_slot() {
    let lean = ScriptedLean::new(rules());
    let ws = Workspace::new();
    ws.write("A.lean", PROOF);
    let broker = broker(&lean);
    let d = ws.descriptor();
    let v = synced(&broker, &d, "A.lean").await;
    for text in ["trivial", "exact oops", "trivial"] {
        run(&broker, &at(&d, v, 1, 2), text).await.unwrap();
    }
    let shadow_opens = shadow_count(&lean, "textDocument/didOpen", SHADOW);
    assert_eq!(shadow_opens, 1, "{:?}", lean.received());
    let shadow_changes = shadow_count(&lean, "textDocument/didChange", SHADOW);
    assert_eq!(shadow_changes, 2);
}

/// What Lake reported while a probe's shadow worker set its imports up
/// reaches the caller even when Lean's answer is read in the same go (a
/// loaded machine): the `lakeSetup` notice of a clean-clone run was lost
/// when the wait took the answer first, every other try.
#[tokio::test]
async fn a_probe_tells_of_lake_setup_read_together_with_the_answer() {
    let lean = ScriptedLean::new(
        Script::new(|e: &Elaboration| {
            if e.uri.contains(SHADOW) {
                Report::LakeSetup(vec!["✔ [1/1] Built A.Dep (0.3s)".into()], read(&e.text))
            } else {
                Report::Diagnostics(read(&e.text))
            }
        })
        .goals(goals_at),
    );
    let ws = Workspace::new();
    ws.write("A.lean", PROOF);
    let broker = broker(&lean);
    let d = ws.descriptor();
    let v = synced(&broker, &d, "A.lean").await;
    let sink = LakeLines::default();
    for (n, text) in ["trivial", "exact oops"]
        .iter()
        .cycle()
        .take(24)
        .enumerate()
    {
        broker
            .run_at(
                &sink,
                &at(&d, v, 1, 2),
                text,
                Budget::default(),
                Continue::NoHandles,
            )
            .await
            .unwrap();
        assert_eq!(
            sink.lines().len(),
            n + 1,
            "probe {n} told of Lake's line once"
        );
    }
    assert!(
        sink.lines().iter().any(|l| l.contains("Built A.Dep")),
        "{:?}",
        sink.lines()
    );
}

/// A step abandoned while Lean elaborates it (the call dropped) gives its
/// slot back closed in Lean, which ends the work; the next probe opens the
/// slot afresh.
#[tokio::test]
async fn an_abandoned_step_closes_its_slot_in_lean() {
    let gate = Arc::new(Semaphore::new(0));
    let lean = gated(&gate);
    let ws = Workspace::new();
    ws.write("A.lean", PROOF);
    let broker = broker(&lean);
    let d = ws.descriptor();
    let v = synced(&broker, &d, "A.lean").await;
    {
        let place = at(&d, v, 1, 2);
        let step = run(&broker, &place, "slow");
        tokio::pin!(step);
        tokio::select! {
            _ = &mut step => panic!("the gated step answered"),
            _ = a_probe_waits(&lean) => {}
        }
    }
    lean.wait_for(|r| about_shadow(r, "textDocument/didClose", SHADOW))
        .await;
    let next = run(&broker, &at(&d, v, 1, 2), "trivial").await.unwrap();
    assert!(next.success, "{next:?}");
    gate.add_permits(1);
}

/// A handle continues the version it was cut from: once the file moved on,
/// using it says so instead of running on a text that is gone.
#[tokio::test]
async fn a_handle_of_a_version_moved_on_is_stale() {
    let lean = ScriptedLean::new(rules());
    let ws = Workspace::new();
    ws.write("A.lean", "theorem t : True := by\n  skip\n  sorry\n");
    let broker = broker(&lean);
    let d = ws.descriptor();
    let v = synced(&broker, &d, "A.lean").await;
    let step = broker
        .run_at(
            &Quiet,
            &at(&d, v, 1, 2),
            "skip",
            Budget::default(),
            Continue::WithHandles,
        )
        .await
        .unwrap();
    let handle = step.next_handle.expect("a handle after a step that ran");
    let after = After {
        workspace: &d,
        path: "A.lean",
        handle: &handle,
    };
    let fresh = broker
        .run_with(&Quiet, &after, "trivial", Budget::default(), Taking::Keep)
        .await
        .unwrap();
    assert!(fresh.success, "{fresh:?}");
    ws.write(
        "A.lean",
        "theorem t : True := by\n  skip\n  skip\n  sorry\n",
    );
    broker
        .sync(&Quiet, &d, "A.lean", sync_options())
        .await
        .unwrap();
    let error = broker
        .run_with(&Quiet, &after, "trivial", Budget::default(), Taking::Keep)
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            Error::Handle {
                problem: HandleProblem::VersionMoved { .. },
                ..
            }
        ),
        "got {error:?}"
    );
}
