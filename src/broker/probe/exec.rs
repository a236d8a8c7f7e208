//! Elaborating one step in a shadow: the text sent (budgets, prefix bases),
//! the wait, and what Lean said turned into a run result.

use super::text::*;
use super::*;
use crate::broker::document::Doc;

/// The text a step is elaborated in: its shadow, or the shadow rewritten
/// onto a prefix base (same lines and columns from the base's end on).
pub(super) struct Exec {
    pub(super) text: String,
    pub(super) start: usize,
    pub(super) base: Option<u64>,
    /// The heartbeat budget's `set_option … in ` put before the command.
    pub(super) budget: Option<Inserted>,
}

/// Text the broker put on one line of a shadow: `len` characters at
/// `column` of `line`. Lean's positions after it move back by `len`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Inserted {
    pub(super) line: u32,
    pub(super) column: u32,
    pub(super) len: u32,
}

impl Inserted {
    /// A position of the shadow as it would be without the inserted text.
    fn remove(&self, (line, character): (u32, u32)) -> (u32, u32) {
        if line != self.line || character < self.column {
            return (line, character);
        }
        (line, self.column.max(character.saturating_sub(self.len)))
    }

    /// A diagnostic with its ranges moved as [`Inserted::remove`] says.
    fn remove_from(&self, diagnostic: &Value) -> Value {
        let mut d = diagnostic.clone();
        for range in ["range", "fullRange"] {
            for end in ["start", "end"] {
                let Some(p) = d.get_mut(range).and_then(|r| r.get_mut(end)) else {
                    continue;
                };
                let at = |k: &str| p[k].as_u64().unwrap_or(0) as u32;
                let (l, c) = self.remove((at("line"), at("character")));
                *p = json!({ "line": l, "character": c });
            }
        }
        d
    }
}

/// Per-probe budgets: Lean's `maxHeartbeats` (in thousands, as `set_option`
/// takes it) for the probe's command, and wall-clock time from when a slot
/// is free to when its answer is read.
#[derive(Debug, Clone, Copy, Default)]
pub struct Budget {
    pub max_heartbeats: Option<u64>,
    pub timeout: Option<std::time::Duration>,
}

impl Budget {
    pub fn new(max_heartbeats: Option<u64>, timeout_ms: Option<u64>) -> Self {
        Budget {
            max_heartbeats,
            timeout: timeout_ms.map(std::time::Duration::from_millis),
        }
    }
}

/// Lean's message when `maxHeartbeats` runs out: "(deterministic) timeout at
/// `whnf`, maximum number of heartbeats (N) has been reached".
pub(super) const OUT_OF_HEARTBEATS: &str = "maximum number of heartbeats";

/// A step that ran: the result, whether Lean's worker died under it, how
/// long it took once it had a slot, and the step itself (for handles).
pub struct Ran {
    pub result: RunResult,
    pub crashed: bool,
    /// The goals Lean reports unsolved at the end of the step's declaration
    /// (Lean's own text, parsed).
    pub unsolved: Vec<Goal>,
    pub elapsed: std::time::Duration,
    /// What ran, for a handle that continues after it ([`Start::mint`]).
    pub step: Option<Step>,
}

/// Where the prefix a base can stand for ends: the start of the step's own
/// command (command mode) or of the declaration it is in (proof and term
/// mode).
pub(super) fn base_cut(step: &Step) -> Option<usize> {
    let before = &step.shadow[..step.start];
    match step.mode {
        Mode::Proof | Mode::Term => outline::enclosing_command_start(&step.shadow, step.start),
        Mode::Command => Some(before.rfind('\n').map_or(0, |i| i + 1)),
    }
}

pub(super) fn exec_text(rt: &Runtime, step: &Step, max_heartbeats: Option<u64>) -> Exec {
    let cut = base_cut(step);
    let rewritten = cut.and_then(|cut| rt.rebase(&step.shadow, cut));
    let exec = match rewritten {
        Some(r) => Exec {
            start: (step.start as isize + r.shift) as usize,
            text: r.text,
            base: Some(r.key),
            budget: None,
        },
        None => whole(step),
    };
    with_heartbeats(exec, step, cut, max_heartbeats)
}

/// The whole shadow, on no base.
pub(super) fn whole(step: &Step) -> Exec {
    Exec {
        text: step.shadow.clone(),
        start: step.start,
        base: None,
        budget: None,
    }
}

/// `exec` with the heartbeat budget put before the step's command: Lean
/// takes `maxHeartbeats` per command (in a tactic block it is not read), so
/// the budget covers the whole declaration the step is in.
pub(super) fn with_heartbeats(
    mut exec: Exec,
    step: &Step,
    cut: Option<usize>,
    max_heartbeats: Option<u64>,
) -> Exec {
    let (Some(n), Some(cut)) = (max_heartbeats, cut) else {
        return exec;
    };
    // The cut in `exec.text`: a base moves all text after it alike.
    let at = cut + exec.start - step.start;
    let insert = format!("set_option maxHeartbeats {n} in ");
    let line_start = exec.text[..at].rfind('\n').map_or(0, |i| i + 1);
    exec.budget = Some(Inserted {
        line: exec.text[..at].matches('\n').count() as u32,
        column: exec.text[line_start..at].encode_utf16().count() as u32,
        len: insert.len() as u32,
    });
    exec.text.insert_str(at, &insert);
    exec.start += insert.len();
    exec
}

/// Whether Lean could not take the shadow's header: it stopped processing
/// the file, or reported an error within the header (a module that does not
/// import). Nothing after the header was elaborated then.
pub(super) fn header_failed(snap: &Snapshot, text: &str) -> bool {
    let header = shadow::header(text);
    let line = header.matches('\n').count() as u32;
    let character = header.len() - header.rfind('\n').map_or(0, |i| i + 1);
    snap.progress.fatal
        || snap.diagnostics.items().iter().any(|d| {
            diagnostics::severity(d) == ERROR
                && !shadow::starts_at_or_after(d, line, character as u32)
        })
}

/// Whether Lean's worker died under the step: a fatal report that no error
/// within the header explains. A header Lean or Lake rejects (Lake's
/// `setup-file` failing to build an import, a module that does not load)
/// also ends the file's progress as fatal, and its errors are the answer.
fn crashed(snap: &Snapshot, text: &str) -> bool {
    snap.progress.fatal
        && crate::broker::snippets::header_errors(snap, text)
            .next()
            .is_none()
}

/// A step elaborated in a slot (held until its goals are read).
pub(super) struct Elaborated {
    pub(super) slot: SlotGuard,
    pub(super) exec: Exec,
    pub(super) version: u64,
    pub(super) snap: Snapshot,
    /// Lean could not take the header (see [`header_failed`]).
    pub(super) blocked: bool,
}

/// Who a probe is for: the call, and the user's file it probes.
#[derive(Clone, Copy)]
pub(super) struct Asker<'a> {
    pub(super) sink: &'a dyn ProgressSink,
    pub(super) shown: &'a str,
}

/// Elaborate `exec` in `slot` and record whether its header imported.
pub(super) async fn elaborate_in(
    rt: &Runtime,
    session: &LeanServer,
    asker: Asker<'_>,
    mut slot: SlotGuard,
    exec: Exec,
) -> Result<Elaborated> {
    let (version, snap) = shadow::elaborate(
        session,
        rt.timeouts.sync,
        asker.sink,
        asker.shown,
        &mut slot,
        exec.text.clone(),
    )
    .await?;
    let blocked = header_failed(&snap, &exec.text);
    slot.confirm_header((!blocked).then(|| shadow::header(&exec.text)));
    Ok(Elaborated {
        slot,
        exec,
        version,
        snap,
        blocked,
    })
}

/// Elaborate a step in `slot`; on a base that did not import (an error on
/// its import line), again on the whole shadow.
pub(super) async fn elaborate_step(
    rt: &Runtime,
    session: &LeanServer,
    asker: Asker<'_>,
    slot: SlotGuard,
    exec: Exec,
    step: &Step,
    max_heartbeats: Option<u64>,
) -> Result<Elaborated> {
    let done = elaborate_in(rt, session, asker, slot, exec).await?;
    let Some(key) = done.exec.base else {
        return Ok(done);
    };
    if !done.blocked {
        rt.base_imported();
        return Ok(done);
    }
    rt.base_failed(key);
    let whole = with_heartbeats(whole(step), step, base_cut(step), max_heartbeats);
    elaborate_in(rt, session, asker, done.slot, whole).await
}

/// A range of the shadow in the user's coordinates (see [`Placement`]).
pub(super) fn user_range(range: &Value, placement: &Placement) -> Range {
    Range::new(
        placement.to_user(lsp_position(range, "start")),
        placement.to_user(lsp_position(range, "end")),
    )
}

/// Run `step` in a shadow slot of `doc` (the document it probes), its
/// messages told apart from the document's own `baseline` diagnostics.
pub(super) async fn run_on_document(
    rt: &Runtime,
    session: &LeanServer,
    doc: &Doc,
    sink: &dyn ProgressSink,
    step: Step,
    budget: Budget,
) -> Result<Ran> {
    let pool = rt.shadow_pool(&doc.path);
    let baseline = doc.snapshot().diagnostics;
    let asker = Asker {
        sink,
        shown: &doc.path.shown,
    };
    let mut ran = run_step(rt, session, asker, &pool, &step, baseline.items(), budget).await?;
    ran.step = Some(step);
    Ok(ran)
}

/// Run one step in a shadow slot and build the run result. `baseline` holds
/// the user document's own diagnostics: a warning before the step that is not
/// among them was caused by the step (e.g. "declaration uses `sorry`" on the
/// declaration's name) and is reported too. Errors before the step are not:
/// cutting the declaration after the step causes some by itself (unsolved
/// goals, missing alternatives), and the goals already say what is left.
/// Ranges are in the user's file (see [`Placement::to_user`]).
///
/// `budget.timeout` counts from when a slot is free; a step out of time is
/// abandoned (Lean is told to stop, see [`shadow::elaborate`]).
pub(super) async fn run_step(
    rt: &Runtime,
    session: &LeanServer,
    asker: Asker<'_>,
    pool: &Pool,
    step: &Step,
    baseline: &[Value],
    budget: Budget,
) -> Result<Ran> {
    let exec = exec_text(rt, step, budget.max_heartbeats);
    let slot = pool.acquire(&exec.text).await;
    let started = std::time::Instant::now();
    let run = interpret(rt, session, asker, slot, exec, step, baseline, budget);
    let ran = match budget.timeout {
        None => run.await,
        Some(limit) => match tokio::time::timeout(limit, run).await {
            Ok(ran) => ran,
            Err(_) => Ok(Ran {
                result: RunResult {
                    workspace: rt.root.descriptor(),
                    line_text: None,
                    success: false,
                    messages: Vec::new(),
                    traces: Vec::new(),
                    proof_state: None,
                    next_handle: None,
                    exhausted: Some(Exhausted::Timeout),
                    disk_changed: false,
                },
                crashed: false,
                unsolved: Vec::new(),
                elapsed: started.elapsed(),
                step: None,
            }),
        },
    };
    ran.map(|ran| Ran {
        elapsed: started.elapsed(),
        ..ran
    })
}

/// Elaborate a step in `slot` and read what Lean made of it.
#[allow(clippy::too_many_arguments)]
pub(super) async fn interpret(
    rt: &Runtime,
    session: &LeanServer,
    asker: Asker<'_>,
    slot: SlotGuard,
    exec: Exec,
    step: &Step,
    baseline: &[Value],
    budget: Budget,
) -> Result<Ran> {
    let Elaborated {
        slot,
        exec,
        version,
        snap,
        // Lean could not take the file's imports: the step never ran, and
        // the errors that say why are the answer.
        blocked,
    } = elaborate_step(rt, session, asker, slot, exec, step, budget.max_heartbeats).await?;
    let index = LineIndex::new(&exec.text);
    let unbudgeted = |p: (u32, u32)| exec.budget.map_or(p, |b| b.remove(p));
    let (start_line, start_char) = unbudgeted(index.position(&exec.text, exec.start));
    let items: Vec<Value> = match exec.budget {
        Some(inserted) => snap
            .diagnostics
            .items()
            .iter()
            .map(|d| inserted.remove_from(d))
            .collect(),
        None => snap.diagnostics.items().to_vec(),
    };
    let mut exhausted = None;
    let mut unsolved = Vec::new();
    // A term step begins at the parenthesis put around it.
    let (begin_line, begin_char) = match step.mode {
        Mode::Term => step.placement.anchor,
        Mode::Proof | Mode::Command => (start_line, start_char),
    };
    let mut messages = Vec::new();
    let mut traces = Vec::new();
    let mut success = !blocked;
    for d in &items {
        let severity = diagnostics::severity(d);
        let text = diagnostics::message(d);
        let range = d.get("range").cloned().unwrap_or(Value::Null);
        let in_users_file = user_range(&range, &step.placement);
        // The user's own version reports the same there.
        let as_lsp = json!(in_users_file);
        let known = baseline
            .iter()
            .any(|b| b.get("range") == Some(&as_lsp) && diagnostics::message(b) == text);
        // After a term step comes the rest of the user's declaration: what
        // the user's own version reports there is not the step's doing.
        let after_term = known
            && step
                .placement
                .resume
                .is_some_and(|(resume, _)| shadow::starts_at_or_after(d, resume.0, resume.1));
        let in_step = shadow::starts_at_or_after(d, begin_line, begin_char) && !after_term;
        // The heartbeat budget covers the whole declaration: Lean may run
        // out of it before the step (in the statement, an earlier tactic).
        let out_of_heartbeats = severity == ERROR && !known && text.contains(OUT_OF_HEARTBEATS);
        if out_of_heartbeats {
            exhausted = Some(Exhausted::Heartbeats);
            success = false;
        }
        let mut entry = RunMessage {
            severity: diagnostics::severity_name(severity),
            text: text.to_owned(),
            range: in_users_file,
            before_step: false,
        };
        if in_step {
            if severity == ERROR {
                success = false;
            }
        } else if (blocked || out_of_heartbeats) && severity == ERROR {
            entry.before_step = true;
        } else if severity == ERROR || known {
            // The declaration cut after the step ends with what is left:
            // Lean's "unsolved goals" there lists it at the block's level,
            // also when the step ends inside a nested block (`case x => …`).
            if severity == ERROR && !known {
                if let Some(goals) = text.strip_prefix("unsolved goals\n") {
                    unsolved.extend(goals.split("\n\n").map(goals::plain_goal));
                }
            }
            continue;
        } else {
            entry.before_step = true;
        }
        if severity == INFORMATION && text.starts_with('[') {
            traces.push(entry);
        } else {
            messages.push(entry);
        }
    }
    let when = if success {
        ProofStateAt::AfterStep
    } else {
        ProofStateAt::BeforeFailedStep
    };
    let proof_state = match step.mode {
        // Nothing after the header was elaborated: no goals to read.
        _ if blocked => None,
        Mode::Proof => {
            // After a failed step Lean's error recovery leaves goals that
            // look finished; the goals before the step are what to work from.
            let at = if success {
                exec.text.trim_end().len()
            } else {
                exec.start
            };
            let (line, character) = index.position(&exec.text, at);
            let target = Target {
                session,
                doc: slot.doc(),
                version,
                sink: None,
            };
            let (goals, source) = goals::goals(&target, line as u64, character as u64).await?;
            Some(ProofState {
                goals,
                source,
                at: when,
            })
        }
        // A term that elaborates leaves nothing to prove; one that does not
        // still has the type expected where it goes.
        Mode::Term => {
            let goals = match (&step.expected, success) {
                (Some(expected), false) => vec![expected.clone()],
                _ => Vec::new(),
            };
            Some(ProofState {
                goals,
                source: GoalSource::PlainTermGoal,
                at: when,
            })
        }
        Mode::Command => None,
    };
    Ok(Ran {
        result: RunResult {
            workspace: rt.root.descriptor(),
            line_text: None,
            success,
            messages,
            traces,
            proof_state,
            next_handle: None,
            exhausted,
            disk_changed: false,
        },
        crashed: crashed(&snap, &exec.text),
        unsolved,
        elapsed: std::time::Duration::ZERO,
        step: None,
    })
}
