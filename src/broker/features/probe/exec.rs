//! Elaborating one step in a shadow: the text sent (budgets, prefix bases),
//! the wait, and what Lean said turned into a run result.

use super::offers::{self, Offer};
use super::reading::*;
use super::*;
use crate::broker::ask::Budget;
use crate::broker::engine::document::Doc;
use crate::log_debug;
use crate::lsp::protocol::Diagnostic;
use crate::lsp::protocol::{CodeActionQuery, CodeActionQueryContext, CodeActionQueryParams};
use crate::results::{RunMessage, Severity};

/// The text a step is elaborated in: its shadow, or the shadow rewritten
/// onto a prefix base (same lines and columns from the base's end on).
pub(super) struct Exec {
    pub(super) text: String,
    pub(super) start: usize,
    pub(super) base: Option<u64>,
    /// The heartbeat budget's `set_option … in ` put before the command.
    pub(super) budget: Option<Inserted>,
    /// A tactic step: the byte offset in `text` of the `skip` put on the
    /// line after it, at the step's column (see [`with_sentinel`]).
    pub(super) sentinel: Option<usize>,
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
    fn remove_from(&self, diagnostic: &Diagnostic) -> Diagnostic {
        let mut d = diagnostic.clone();
        for range in std::iter::once(&mut d.range).chain(d.full_range.as_mut()) {
            for p in [&mut range.start, &mut range.end] {
                (p.line, p.character) = self.remove((p.line, p.character));
            }
        }
        d
    }
}

/// A step that ran: the result, whether Lean's worker died under it, what
/// Lean offered in its place, and the step itself (for handles).
pub struct Ran {
    pub result: RunResult,
    pub crashed: bool,
    /// The "Try this" suggestions Lean made for the step's text.
    pub offers: Vec<Offer>,
    /// What ran, for a handle that continues after it ([`Start::mint`]).
    pub step: Option<Step>,
}

/// Where the prefix a base can stand for ends: the start of the step's own
/// command (command mode) or of the declaration it is in (proof and term
/// mode).
pub(super) fn base_cut(step: &Step) -> Option<usize> {
    let before = &step.shadow[..step.start];
    match step.kind {
        StepKind::Tactic | StepKind::Term => {
            outline::enclosing_command_start(&step.shadow, step.start)
        }
        StepKind::Command => Some(before.rfind('\n').map_or(0, |i| i + 1)),
    }
}

pub(super) fn exec_text(
    rt: &Runtime,
    pool: &Pool,
    step: &Step,
    max_heartbeats: Option<u64>,
    sentinel: bool,
) -> Exec {
    let cut = base_cut(step);
    let rewritten = cut.and_then(|cut| rt.rebase(pool.path(), &step.shadow, cut));
    let exec = match rewritten {
        Some(r) => Exec {
            start: (step.start as isize + r.shift) as usize,
            text: r.text,
            base: Some(r.key),
            budget: None,
            sentinel: None,
        },
        None => whole(step),
    };
    with_sentinel(
        with_heartbeats(exec, step, cut, max_heartbeats),
        step,
        sentinel,
    )
}

/// `exec` with a `skip` after a tactic step, on a new line at the step's
/// column: the goals before it are what the step leaves in its own block,
/// also when the step ends inside a nested block it opened (`case x => …`,
/// a bullet), and never goals of a block around the step (a sibling
/// bullet's), which Lean's "unsolved goals" at the declaration would add.
/// `skip` does nothing, also with no goals left; what Lean says on its
/// line is not the step's. Not where the document's file has no `skip`
/// (`sentinel` false: a prelude file without it; see [`interpret`]).
pub(super) fn with_sentinel(mut exec: Exec, step: &Step, sentinel: bool) -> Exec {
    if step.kind != StepKind::Tactic || !sentinel {
        return exec;
    }
    if !exec.text.ends_with('\n') {
        exec.text.push('\n');
    }
    exec.text.push_str(&" ".repeat(step.indent));
    exec.sentinel = Some(exec.text.len());
    exec.text.push_str("skip\n");
    exec
}

/// The whole shadow, on no base.
pub(super) fn whole(step: &Step) -> Exec {
    Exec {
        text: step.shadow.clone(),
        start: step.start,
        base: None,
        budget: None,
        sentinel: None,
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

/// Whether Lean could not take the shadow's header (see
/// [`snippet_docs::header_failed`](crate::broker::engine::snippet_docs::header_failed)).
pub(super) use crate::broker::engine::snippet_docs::header_failed;

/// Whether Lean's worker died under the step: a fatal report that no error
/// within the header explains. A header Lean or Lake rejects (Lake's
/// `setup-file` failing to build an import, a module that does not load)
/// also ends the file's progress as fatal, and its errors are the answer.
fn crashed(snap: &Snapshot, text: &str) -> bool {
    snap.progress.fatal
        && crate::broker::engine::snippet_docs::header_errors(snap, text)
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
    server: &LeanServer,
    asker: Asker<'_>,
    mut slot: SlotGuard,
    exec: Exec,
) -> Result<Elaborated> {
    let (version, snap) = shadow::elaborate(
        server,
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
    server: &LeanServer,
    asker: Asker<'_>,
    slot: SlotGuard,
    exec: Exec,
    step: &Step,
    max_heartbeats: Option<u64>,
) -> Result<Elaborated> {
    let sentinel = exec.sentinel.is_some();
    let done = elaborate_in(rt, server, asker, slot, exec).await?;
    let Some(key) = done.exec.base else {
        return Ok(done);
    };
    if !done.blocked {
        rt.base_imported();
        return Ok(done);
    }
    rt.base_failed(key);
    let whole = with_sentinel(
        with_heartbeats(whole(step), step, base_cut(step), max_heartbeats),
        step,
        sentinel,
    );
    elaborate_in(rt, server, asker, done.slot, whole).await
}

/// Run `step` in a shadow slot of `doc` (the document it probes), its
/// messages told apart from the document's own `baseline` diagnostics.
pub(super) async fn run_on_document(
    rt: &Runtime,
    server: &LeanServer,
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
    let mut ran = run_step(rt, server, asker, &pool, &step, baseline.items(), budget).await?;
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
    server: &LeanServer,
    asker: Asker<'_>,
    pool: &Pool,
    step: &Step,
    baseline: &[Diagnostic],
    budget: Budget,
) -> Result<Ran> {
    check_budget(
        "the text",
        &step.shadow[step.start..step.end],
        budget.max_heartbeats,
    )?;
    let exec = exec_text(rt, pool, step, budget.max_heartbeats, pool.takes_sentinel());
    let slot = rt.slot(server, pool, &exec.text).await?;
    let memory = slot.note.clone();
    let run = interpret(rt, server, asker, pool, slot, exec, step, baseline, budget);
    let ran = match budget.timeout {
        None => run.await,
        Some(limit) => match tokio::time::timeout(limit, run).await {
            Ok(ran) => ran,
            Err(_) => Ok(Ran {
                result: unread(Unread::Timeout, rt.root.descriptor()),
                crashed: false,
                offers: Vec::new(),
                step: None,
            }),
        },
    };
    let ran = match ran {
        // The worker died under the step: a verdict like any other (see
        // [`unread`]), not a tool error naming the shadow document. The slot
        // was closed and opens on a new worker at its next use.
        Err(error) if error.lost_worker() => Ok(Ran {
            result: unread(Unread::Crashed, rt.root.descriptor()),
            crashed: true,
            offers: Vec::new(),
            step: None,
        }),
        other => other,
    };
    ran.map(|mut ran| {
        ran.result.memory = memory;
        ran
    })
}

/// Lean's diagnostics on an elaborated step, with the text the broker put
/// before the step's command taken out, and their reading.
struct Read {
    index: LineIndex,
    items: Vec<Diagnostic>,
    reading: Reading,
}

fn read_elaborated(done: &Elaborated, step: &Step, baseline: &[Diagnostic]) -> Read {
    let exec = &done.exec;
    let index = LineIndex::new(&exec.text);
    let unbudgeted = |p: (u32, u32)| exec.budget.map_or(p, |b| b.remove(p));
    let start = unbudgeted(index.position(&exec.text, exec.start));
    let items: Vec<Diagnostic> = match exec.budget {
        Some(inserted) => done
            .snap
            .diagnostics
            .items()
            .iter()
            .map(|d| inserted.remove_from(d))
            .collect(),
        None => done.snap.diagnostics.items().to_vec(),
    };
    let sentinel = exec
        .sentinel
        .map(|at| unbudgeted(index.position(&exec.text, at)));
    let frame = frame(step, start, sentinel, baseline, done.blocked);
    let reading = read(&items, &frame);
    Read {
        index,
        items,
        reading,
    }
}

/// Lean's message for a tactic it has no parser for.
const UNKNOWN_TACTIC: &str = "unknown tactic";

/// Elaborate a step in `slot` and read what Lean made of it ([`read`]).
/// Where Lean cannot take the sentinel after a tactic step, the step runs
/// again without it (and the document's later steps go without one when
/// its file has no `skip` at all).
#[allow(clippy::too_many_arguments)]
pub(super) async fn interpret(
    rt: &Runtime,
    server: &LeanServer,
    asker: Asker<'_>,
    pool: &Pool,
    slot: SlotGuard,
    exec: Exec,
    step: &Step,
    baseline: &[Diagnostic],
    budget: Budget,
) -> Result<Ran> {
    let mut done =
        elaborate_step(rt, server, asker, slot, exec, step, budget.max_heartbeats).await?;
    let mut read = read_elaborated(&done, step, baseline);
    if read.reading.sentinel_failed {
        if let Some(at) = done.exec.sentinel {
            let position = read.index.position(&done.exec.text, at);
            let unknown = read
                .items
                .iter()
                .any(|d| d.is_error() && d.message == UNKNOWN_TACTIC && d.start() >= position);
            if unknown {
                pool.refuse_sentinel();
            }
            let Elaborated { slot, mut exec, .. } = done;
            let line_start = exec.text[..at].rfind('\n').map_or(0, |i| i + 1);
            exec.text.truncate(line_start);
            exec.sentinel = None;
            done = elaborate_in(rt, server, asker, slot, exec).await?;
            read = read_elaborated(&done, step, baseline);
        }
    }
    let Elaborated {
        mut slot,
        exec,
        version,
        snap,
        blocked,
    } = done;
    let crashed = crashed(&snap, &exec.text);
    if crashed {
        slot.close_after_crash(server);
    }
    let Read { index, reading, .. } = read;
    let offers = if crashed || blocked {
        Vec::new()
    } else {
        step_offers(
            server,
            &slot,
            version,
            &exec,
            step,
            &index,
            &reading.messages,
        )
        .await
    };
    let from_sentinel = exec.sentinel.is_some() && !reading.sentinel_failed;
    let asked = match goals_to_ask(step.kind, blocked, &reading) {
        None => None,
        Some(ask) => {
            let byte = match (ask, exec.sentinel) {
                (Ask::BeforeStep, _) => exec.start,
                // Before the sentinel; where it did not parse (a file
                // without `skip`), at the end of the step's text.
                (Ask::AfterStep, Some(at)) if !reading.sentinel_failed => at,
                (Ask::AfterStep, other) => exec.text[..other.unwrap_or(exec.text.len())]
                    .trim_end()
                    .len(),
            };
            let target = Target {
                server,
                doc: slot.doc(),
                version,
                sink: None,
            };
            let (line, character) = index.position(&exec.text, byte);
            Some(goals::goals(&target, line as u64, character as u64).await?)
        }
    };
    let facts = Facts {
        kind: step.kind,
        blocked,
        crashed,
        from_sentinel,
        expected: step.expected.as_ref(),
    };
    Ok(Ran {
        result: conclude(reading, &facts, asked, rt.root.descriptor()),
        crashed,
        offers,
        step: None,
    })
}

/// What Lean offers in place of the step's text, when one of its messages
/// on the step is a "Try this": the code actions Lean has for the step's
/// range of the shadow (while the slot still holds it), else the messages
/// themselves (see `offers`). A code-action request that fails leaves the
/// messages to read: the step's verdict does not depend on it.
async fn step_offers(
    server: &LeanServer,
    slot: &SlotGuard,
    version: u64,
    exec: &Exec,
    step: &Step,
    index: &LineIndex,
    messages: &[RunMessage],
) -> Vec<Offer> {
    let said: Vec<&RunMessage> = messages
        .iter()
        .filter(|m| {
            m.severity == Severity::Information
                && m.step_range.is_some()
                && offers::says_try_this(&m.text)
        })
        .collect();
    if said.is_empty() {
        return Vec::new();
    }
    let unbudgeted = |p: (u32, u32)| exec.budget.map_or(p, |b| b.remove(p));
    let start = index.position(&exec.text, exec.start);
    let end = index.position(&exec.text, step.end + exec.start - step.start);
    let target = Target {
        server,
        doc: slot.doc(),
        version,
        sink: None,
    };
    let params = CodeActionQueryParams {
        text_document: target.document(),
        range: lsp_types::Range::new(
            lsp_types::Position::new(start.0, start.1),
            lsp_types::Position::new(end.0, end.1),
        ),
        context: CodeActionQueryContext {
            diagnostics: Vec::new(),
            trigger_kind: 1,
        },
    };
    let offered = match target.request_verbatim::<CodeActionQuery>(params).await {
        Ok(answer) => offers::from_code_actions(
            &answer,
            unbudgeted(start),
            unbudgeted(end),
            |range: lsp_types::Range| {
                let Some(b) = exec.budget.as_ref() else {
                    return range;
                };
                let moved = |p: lsp_types::Position| {
                    let (line, character) = b.remove((p.line, p.character));
                    lsp_types::Position::new(line, character)
                };
                lsp_types::Range::new(moved(range.start), moved(range.end))
            },
        ),
        Err(_) => Vec::new(),
    };
    if !offered.is_empty() {
        log_debug!("{} suggestions from Lean's code actions", offered.len());
        return offered;
    }
    log_debug!("no code action for a \"Try this\": its message read");
    said.iter()
        .flat_map(|m| {
            let range = m.step_range.expect("a message on the step");
            offers::from_message(&m.text)
                .into_iter()
                .map(move |new_text| Offer { range, new_text })
        })
        .collect()
}

/// Where `step` (its text starting at `start`) sits, for [`read`].
fn frame<'a>(
    step: &Step,
    start: (u32, u32),
    sentinel: Option<(u32, u32)>,
    baseline: &'a [Diagnostic],
    blocked: bool,
) -> Frame<'a> {
    let shadow = &step.shadow;
    let index = LineIndex::new(shadow);
    let cut = base_cut(step).unwrap_or(0).min(step.start);
    let outside = format!("{}\n{}", &shadow[cut..step.start], &shadow[step.end..]);
    Frame {
        start,
        // A term step begins at the parenthesis put around it.
        begin: match step.kind {
            StepKind::Term => step.placement.anchor,
            StepKind::Tactic | StepKind::Command => start,
        },
        declaration: index.position(shadow, cut),
        sentinel,
        placement: step.placement,
        baseline,
        blocked,
        sorry_in_step: holds_sorry(&shadow[step.start..step.end]),
        sorry_outside: holds_sorry(&outside),
        whole_declaration: step.kind == StepKind::Term,
    }
}
