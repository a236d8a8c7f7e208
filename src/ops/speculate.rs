//! Speculative execution: `lean_run_at`, `lean_run_at_handle`, `lean_run_with`,
//! `lean_run_with_linear` and `lean_release`, on shadow documents.

use serde_json::{Value, json};

use super::Answer;
use crate::broker::Broker;
use crate::broker::diagnostics::{self, ERROR, INFORMATION};
use crate::broker::document::Snapshot;
use crate::broker::goals::{self, query_position};
use crate::broker::handles::{HandleState, HandleStore, Shadow, Taking};
use crate::broker::lexer::{self, TokenKind};
use crate::broker::outline;
use crate::broker::runtime::Runtime;
use crate::broker::server::LeanServer;
use crate::broker::shadow::{self, Placement, Pool, SlotGuard, advance};
use crate::broker::snapshot::{self, Target};
use crate::broker::sync;
use crate::broker::text::LineIndex;
use crate::results::{
    BatchMode, Exhausted, Goal, GoalSource, ProofState, ProofStateAt, Range, ReleaseResult,
    RunMessage, RunResult,
};
use crate::surface::{CallContext, ErrorCode, ToolError, Workspace};

/// What a step's text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Tactics, in a tactic block.
    Proof,
    /// One command, between commands.
    Command,
    /// A term, in place of the term at the position (a `sorry`, a hole).
    Term,
}

/// Where a step starts in its shadow, and what the shadow is.
pub(super) struct Step {
    shadow: String,
    /// Byte offset in `shadow` where the step's text begins.
    start: usize,
    indent: usize,
    mode: Mode,
    placement: Placement,
    /// A term step: the type expected where it goes (a structured goal).
    expected: Option<Goal>,
}

/// Indent continuation lines of a multi-line step to the step's column.
fn indent_lines(text: &str, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let mut out = String::with_capacity(text.len() + indent * 4);
    for (i, line) in text.trim_end().split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
            let current = line.len() - line.trim_start().len();
            if !line.trim().is_empty() && current < indent {
                out.push_str(&pad);
            }
        }
        out.push_str(line);
    }
    out
}

/// The column (in characters) of the tactic block a tactic line belongs to:
/// where its first tactic starts, after an alternative's `=>`, a bullet, or a
/// declaration header's `by`. A step after the line goes there: deeper, it
/// would continue the line's last term; shallower, it would leave the block.
fn block_column(line: &str) -> usize {
    let indent = line.len() - line.trim_start().len();
    let rest = line.trim_start();
    let first_word = rest.split_whitespace().next().unwrap_or("");
    let declaration = ["theorem", "lemma", "def", "example", "instance", "abbrev"];
    let modifier = ["private", "protected", "noncomputable"];
    let header = indent == 0
        || rest.starts_with("@[")
        || declaration.contains(&first_word)
        || modifier.contains(&first_word);
    let opener = if rest.starts_with('|') || ["case", "next"].contains(&first_word) {
        line.find("=>").map(|i| i + "=>".len())
    } else if rest.starts_with('·') {
        Some(indent + '·'.len_utf8())
    } else if header {
        line.find(":= by").map(|i| i + ":= by".len())
    } else {
        None
    };
    let skip_blank = |i: usize| i + (line[i..].len() - line[i..].trim_start().len());
    let start = opener.map_or(indent, skip_blank);
    line[..start].chars().count()
}

/// The column of a tactic that continues the proof ending in `above`: the
/// block column of its last code line, or one level deeper (two columns) when
/// that line opens a block (`by`, `=>`).
fn continuation_column(above: &str) -> usize {
    let Some(line) = above
        .lines()
        .rev()
        .map(|l| l.find("--").map_or(l, |i| &l[..i]).trim_end())
        .find(|l| !l.trim().is_empty())
    else {
        return 0;
    };
    if line.ends_with("by") || line.ends_with("=>") {
        line.len() - line.trim_start().len() + 2
    } else {
        block_column(line)
    }
}

/// Commands in a command-mode step: code lines at column 0, not counting
/// attribute and doc-comment lines, which belong to the command after them
/// (an attribute followed by its command on the same line counts).
fn command_count(text: &str) -> usize {
    text.lines()
        .filter(|line| line.chars().next().is_some_and(|c| !c.is_whitespace()))
        .map(|line| match line.strip_prefix("@[") {
            Some(rest) => rest.split_once(']').map_or("", |(_, after)| after.trim()),
            None => line,
        })
        .filter(|line| {
            !line.is_empty()
                && !["--", "@[", "/--", "/-!", "/-"]
                    .iter()
                    .any(|p| line.starts_with(p))
        })
        .count()
}

/// A position of an LSP range (`start` or `end`); missing parts count as 0.
fn lsp_position(range: &Value, which: &str) -> (u32, u32) {
    let at = |k: &str| range[which][k].as_u64().unwrap_or(0) as u32;
    (at("line"), at("character"))
}

/// A range relative to the step's first character (line 0 is the step's first
/// line), so that messages of continuation steps are easy to place.
fn step_range(range: &Value, start: (u32, u32)) -> Range {
    let rel = |(line, character): (u32, u32)| {
        if line == start.0 {
            (0, character.saturating_sub(start.1))
        } else {
            (line.saturating_sub(start.0), character)
        }
    };
    Range::new(
        rel(lsp_position(range, "start")),
        rel(lsp_position(range, "end")),
    )
}

/// The text a step is elaborated in: its shadow, or the shadow rewritten
/// onto a prefix base (same lines and columns from the base's end on).
struct Exec {
    text: String,
    start: usize,
    base: Option<u64>,
    /// The heartbeat budget's `set_option … in ` put before the command.
    budget: Option<Inserted>,
}

/// Text the broker put on one line of a shadow: `len` characters at
/// `column` of `line`. Lean's positions after it move back by `len`.
#[derive(Debug, Clone, Copy)]
struct Inserted {
    line: u32,
    column: u32,
    len: u32,
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
const OUT_OF_HEARTBEATS: &str = "maximum number of heartbeats";

/// A step that ran: the result, whether Lean's worker died under it, how
/// long it took once it had a slot, and the step itself (for handles).
pub(super) struct Ran {
    pub(super) result: RunResult,
    pub(super) crashed: bool,
    /// The goals Lean reports unsolved at the end of the step's declaration
    /// (Lean's own text, parsed).
    pub(super) unsolved: Vec<Goal>,
    pub(super) elapsed: std::time::Duration,
    pub(super) step: Option<Step>,
}

/// Where the prefix a base can stand for ends: the start of the step's own
/// command (command mode) or of the declaration it is in (proof and term
/// mode).
fn base_cut(step: &Step) -> Option<usize> {
    let before = &step.shadow[..step.start];
    match step.mode {
        Mode::Proof | Mode::Term => outline::enclosing_command_start(&step.shadow, step.start),
        Mode::Command => Some(before.rfind('\n').map_or(0, |i| i + 1)),
    }
}

fn exec_text(rt: &Runtime, step: &Step, max_heartbeats: Option<u64>) -> Exec {
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
fn whole(step: &Step) -> Exec {
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
fn with_heartbeats(
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
fn header_failed(snap: &Snapshot, text: &str) -> bool {
    let header = shadow::header(text);
    let line = header.matches('\n').count() as u32;
    let character = header.len() - header.rfind('\n').map_or(0, |i| i + 1);
    snap.progress.fatal
        || snap.diagnostics.items().iter().any(|d| {
            diagnostics::severity(d) == ERROR
                && !shadow::starts_at_or_after(d, line, character as u32)
        })
}

/// A step elaborated in a slot (held until its goals are read).
struct Elaborated {
    slot: SlotGuard,
    exec: Exec,
    version: u64,
    snap: Snapshot,
    /// Lean could not take the header (see [`header_failed`]).
    blocked: bool,
}

/// Who a probe is for: the call, and the user's file it probes.
#[derive(Clone, Copy)]
struct Asker<'a> {
    ctx: &'a CallContext,
    shown: &'a str,
}

/// Elaborate `exec` in `slot` and record whether its header imported.
async fn elaborate_in(
    rt: &Runtime,
    session: &LeanServer,
    asker: Asker<'_>,
    mut slot: SlotGuard,
    exec: Exec,
) -> Result<Elaborated, ToolError> {
    let (version, snap) = shadow::elaborate(
        session,
        rt.timeouts.sync,
        asker.ctx,
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
async fn elaborate_step(
    rt: &Runtime,
    session: &LeanServer,
    asker: Asker<'_>,
    slot: SlotGuard,
    exec: Exec,
    step: &Step,
    max_heartbeats: Option<u64>,
) -> Result<Elaborated, ToolError> {
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
fn user_range(range: &Value, placement: &Placement) -> Range {
    Range::new(
        placement.to_user(lsp_position(range, "start")),
        placement.to_user(lsp_position(range, "end")),
    )
}

/// Run one step in a shadow slot and build the run result. `baseline` holds
/// the user document's own diagnostics: a warning before the step that is not
/// among them was caused by the step (e.g. "declaration uses `sorry`" on the
/// declaration's name) and is reported too. Errors before the step are not:
/// cutting the declaration after the step causes some by itself (unsolved
/// goals, missing alternatives), and the goals already say what is left.
/// Ranges are in the user's file (see [`Placement::to_user`]); `step_range`
/// counts from the step's first character.
///
/// `budget.timeout` counts from when a slot is free; a step out of time is
/// abandoned (Lean is told to stop, see [`shadow::elaborate`]).
async fn run_step(
    rt: &Runtime,
    session: &LeanServer,
    asker: Asker<'_>,
    pool: &Pool,
    step: &Step,
    baseline: &[Value],
    budget: Budget,
) -> Result<Ran, ToolError> {
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
async fn interpret(
    rt: &Runtime,
    session: &LeanServer,
    asker: Asker<'_>,
    slot: SlotGuard,
    exec: Exec,
    step: &Step,
    baseline: &[Value],
    budget: Budget,
) -> Result<Ran, ToolError> {
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
            step_range: None,
            before_step: false,
        };
        if in_step {
            entry.step_range = Some(step_range(&range, (start_line, start_char)));
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
        crashed: snap.progress.fatal,
        unsolved,
        elapsed: std::time::Duration::ZERO,
        step: None,
    })
}

/// The first step of a chain, at a position of a pinned version.
pub struct RunAt<'a> {
    pub workspace: &'a Workspace,
    pub path: &'a str,
    pub version: u64,
    pub line: u64,
    pub character: u64,
}

/// The term Lean has at a position (`$/lean/plainTermGoal`): its byte range
/// in `text`, which holds the position, and the type expected there.
struct TermAt {
    start: usize,
    end: usize,
    expected: Goal,
}

async fn term_at(
    bound: &snapshot::Bound<'_>,
    at: &RunAt<'_>,
    offset: usize,
) -> Result<Option<TermAt>, ToolError> {
    let answer = bound
        .request(
            "$/lean/plainTermGoal",
            bound.position_params(at.line, at.character),
        )
        .await?;
    let (text, index) = (&bound.state.text, &bound.state.index);
    let byte = |which: &str| {
        let p = |k: &str| {
            answer
                .pointer(&format!("/range/{which}/{k}"))
                .and_then(Value::as_u64)
        };
        index.offset(text, p("line")?, p("character")?).ok()
    };
    let (Some(start), Some(end), Some(goal)) = (
        byte("start"),
        byte("end"),
        answer.get("goal").and_then(Value::as_str),
    ) else {
        return Ok(None);
    };
    Ok(
        (start <= offset && offset <= end && start < end).then(|| TermAt {
            start,
            end,
            expected: goals::plain_goal(goal),
        }),
    )
}

/// Whether a `sorry` token starts at byte `offset` of `text` (in code).
fn sorry_at(text: &str, line_start: usize, line_end: usize, offset: usize) -> bool {
    lexer::scan(&text[line_start..line_end])
        .iter()
        .any(|t| t.kind == TokenKind::Sorry && line_start + t.start == offset)
}

fn not_a_probe_place(at: &RunAt<'_>) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidParams,
        format!(
            "({}, {}) is neither inside a tactic block, nor on a term, nor between commands: give a position in a proof (for tactics), on a term such as a `sorry` (for a term to put in its place), or at the start of a line between commands (for one command)",
            at.line, at.character
        ),
    )
}

/// Where candidates go at a position of a pinned version: the mode the
/// position calls for, and how a candidate's text becomes its shadow.
enum Plan {
    /// Tactics: the shadow is `prefix` then the text at column `indent`.
    Proof {
        prefix: String,
        indent: usize,
        placement: Placement,
    },
    /// One command: the shadow is the file up to `offset`, then the command.
    Command { offset: usize, placement: Placement },
    /// A term in place of the term Lean has at the position.
    Term(TermAt),
}

/// A position of a pinned version, ready to take candidate texts.
pub(super) struct Start<'c> {
    pub(super) bound: snapshot::Bound<'c>,
    pub(super) line_text: String,
    plan: Plan,
    /// The goals Lean shows at the position (proof mode), as `plainGoal`
    /// renders them.
    pub(super) goals: Vec<Goal>,
}

/// Bind the version and work out what the position is (tactic block,
/// between commands, a term). `mint`: handles will be minted, which a term
/// cannot continue.
pub(super) async fn start_at<'c>(
    broker: &Broker,
    ctx: &'c CallContext,
    at: &RunAt<'_>,
    mint: bool,
) -> Result<Start<'c>, ToolError> {
    let bound = snapshot::bind(broker, ctx, &at.workspace.root, at.path, at.version).await?;
    let offset = bound.check_position(at.line, at.character)?;
    let text = &bound.state.text;
    let index = &bound.state.index;
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    let line_text = &text[line_start..line_end];
    let before = &text[line_start..offset];

    // Inside a tactic block Lean shows goals at the position: proof mode.
    let goal = match bound.doc.probe_goal(at.version, at.line, at.character) {
        Some(goal) => goal,
        None => {
            let goal = bound
                .request(
                    "$/lean/plainGoal",
                    bound.position_params(at.line, at.character),
                )
                .await?;
            bound
                .doc
                .remember_probe_goal(at.version, at.line, at.character, &goal);
            goal
        }
    };
    // At the start of a blank line where Lean shows "no goals" (after a
    // finished proof) the position is between commands.
    let no_goals = goal
        .get("goals")
        .and_then(Value::as_array)
        .is_some_and(|g| g.is_empty());
    let between_commands = before.is_empty() && line_text.trim().is_empty() && no_goals;
    let in_block = !goal.is_null() && !between_commands;
    // A `sorry` in a tactic's term (`exact f sorry`) is a hole for a term.
    let term_sorry =
        in_block && !goals::starts_tactic(before) && sorry_at(text, line_start, line_end, offset);
    let mode = if in_block && !term_sorry {
        Mode::Proof
    } else if !in_block && before.trim().is_empty() {
        Mode::Command
    } else {
        Mode::Term
    };
    let term = match mode {
        Mode::Term => term_at(&bound, at, offset).await?,
        Mode::Proof | Mode::Command => None,
    };
    let mode = match (mode, &term) {
        (Mode::Term, None) if in_block => Mode::Proof,
        (Mode::Term, None) => return Err(not_a_probe_place(at)),
        (mode, _) => mode,
    };
    if mint && mode == Mode::Term {
        return Err(ToolError::new(
            ErrorCode::InvalidParams,
            format!(
                "({}, {}) is on a term: a handle continues tactics or commands, not a term. Try the term with lean_run_at, or write `by` there in the file and continue its tactics",
                at.line, at.character
            ),
        ));
    }
    let position = |byte: usize| index.position(text, byte);
    let plan = match (mode, term) {
        (Mode::Proof, _) => {
            let line_text = line_text.trim_end_matches('\r');
            let column = if line_text.is_empty() {
                // An empty line inside a proof: the step belongs to the tactic
                // block above, at that block's column, not at column 0.
                continuation_column(&text[..line_start])
            } else {
                query_position(
                    line_text,
                    at.character as usize,
                    crate::broker::GoalsMode::Before,
                )
            };
            let after = |head: &str| {
                // `… by` / `… =>`: the step follows on the same line.
                let end = position(head.len());
                (format!("{head} "), (end.0, end.1 + 1))
            };
            let (prefix, indent, placement) = if before.trim().is_empty() {
                // In the indentation of a tactic line: before that tactic, at
                // its column.
                (
                    format!("{}{}", &text[..line_start], " ".repeat(column)),
                    column,
                    Placement::at((at.line as u32, column as u32)),
                )
            } else if before.trim_end().ends_with("by") || before.trim_end().ends_with("=>") {
                let (prefix, from) = after(text[..offset].trim_end());
                (
                    prefix,
                    before.trim_end().chars().count() + 1,
                    Placement::at(from),
                )
            } else {
                // Inside or after a tactic on the same line (Lean shows the
                // goals after it): the step goes on a new line of the same
                // block, after the line's tactic text, never into the middle
                // of it.
                let content = line_text
                    .find("--")
                    .map_or(line_text, |i| &line_text[..i])
                    .trim_end();
                let head = &text[..line_start + content.len()];
                if content.ends_with("by") || content.ends_with("=>") {
                    let (prefix, from) = after(head);
                    (prefix, content.chars().count() + 1, Placement::at(from))
                } else {
                    let column = block_column(content);
                    let end = position(head.len());
                    let placement = Placement {
                        anchor: end,
                        text: (end.0 + 1, column as u32),
                        origin: end,
                        resume: None,
                    };
                    (format!("{head}\n{}", " ".repeat(column)), column, placement)
                }
            };
            Plan::Proof {
                prefix,
                indent,
                placement,
            }
        }
        (Mode::Command, _) => Plan::Command {
            offset,
            placement: Placement::at((at.line as u32, at.character as u32)),
        },
        (Mode::Term, term) => Plan::Term(term.expect("a term step has its term")),
    };
    let goals = match plan {
        Plan::Proof { .. } => goal
            .get("goals")
            .and_then(Value::as_array)
            .map(|g| {
                g.iter()
                    .map(|t| goals::plain_goal(t.as_str().unwrap_or("")))
                    .collect()
            })
            .unwrap_or_default(),
        Plan::Command { .. } | Plan::Term(_) => Vec::new(),
    };
    let line_text = line_text.trim_end_matches('\r').to_owned();
    Ok(Start {
        bound,
        line_text,
        plan,
        goals,
    })
}

impl Start<'_> {
    /// The step that puts `candidate` at the position.
    fn step(&self, candidate: &str) -> Result<Step, ToolError> {
        let text = &self.bound.state.text;
        let index = &self.bound.state.index;
        let position = |byte: usize| index.position(text, byte);
        Ok(match &self.plan {
            Plan::Proof {
                prefix,
                indent,
                placement,
            } => Step {
                start: prefix.len(),
                shadow: format!("{prefix}{}\n", indent_lines(candidate, *indent)),
                indent: *indent,
                mode: Mode::Proof,
                placement: *placement,
                expected: None,
            },
            Plan::Command { offset, placement } => {
                let n = command_count(candidate);
                if n != 1 {
                    return Err(ToolError::new(
                        ErrorCode::InvalidParams,
                        format!(
                            "between commands a probe runs exactly one command; the text holds {n}"
                        ),
                    )
                    .with_data(json!({ "commands": n })));
                }
                let prefix = &text[..*offset];
                Step {
                    start: prefix.len(),
                    shadow: format!("{prefix}{}\n", indent_lines(candidate, 0)),
                    indent: 0,
                    mode: Mode::Command,
                    placement: *placement,
                    expected: None,
                }
            }
            Plan::Term(term) => {
                // The text takes the term's place, in parentheses (it may be an
                // argument), with the rest of the declaration after it.
                let rest = &text[term.end..outline::command_end(text, term.end)];
                let step_text = candidate.trim_end();
                let anchor = position(term.start);
                let text_at = (anchor.0, anchor.1 + 1);
                let mut shadow = format!("{}({step_text}){rest}", &text[..term.start]);
                if !shadow.ends_with('\n') {
                    shadow.push('\n');
                }
                Step {
                    start: term.start + 1,
                    shadow,
                    indent: 0,
                    mode: Mode::Term,
                    placement: Placement {
                        anchor,
                        text: text_at,
                        origin: anchor,
                        resume: Some((
                            advance(text_at, &format!("{step_text})")),
                            position(term.end),
                        )),
                    },
                    expected: Some(term.expected.clone()),
                }
            }
        })
    }

    /// Whether `candidate` can go here (one command between commands).
    pub(super) fn check(&self, candidate: &str) -> Result<(), ToolError> {
        self.step(candidate).map(|_| ())
    }

    /// What candidates here are.
    pub(super) fn mode(&self) -> BatchMode {
        match self.plan {
            Plan::Proof { .. } => BatchMode::Tactic,
            Plan::Command { .. } => BatchMode::Command,
            Plan::Term(_) => BatchMode::Term,
        }
    }

    /// Run one candidate here.
    pub(super) async fn run(
        &self,
        ctx: &CallContext,
        candidate: &str,
        budget: Budget,
    ) -> Result<Ran, ToolError> {
        let step = self.step(candidate)?;
        let bound = &self.bound;
        let pool = bound.rt.shadow_pool(&bound.doc.path);
        let baseline = bound.doc.snapshot().diagnostics;
        let asker = Asker {
            ctx,
            shown: &bound.doc.path.shown,
        };
        let mut ran = run_step(
            &bound.rt,
            &bound.session,
            asker,
            &pool,
            &step,
            baseline.items(),
            budget,
        )
        .await?;
        ran.step = Some(step);
        Ok(ran)
    }

    /// A handle continuing after `step` (a tactic or command step).
    pub(super) fn mint(&self, step: &Step) -> Result<String, ToolError> {
        let bound = &self.bound;
        Ok(bound.rt.handles.mint(HandleState {
            file: bound.doc.path.file.clone(),
            shown: bound.doc.path.shown.clone(),
            version: bound.state.version,
            generation: bound.session.generation,
            // Handles share the snapshot's text instead of copying the prefix.
            shadow: Shadow::sharing(std::sync::Arc::clone(&bound.state.text), &step.shadow),
            indent: step.indent,
            proof: step.mode == Mode::Proof,
            placement: step.placement,
        })?)
    }
}

pub async fn run_at(
    broker: &Broker,
    ctx: &CallContext,
    at: &RunAt<'_>,
    text: &str,
    budget: Budget,
    mint: bool,
) -> Answer<RunResult> {
    let start = start_at(broker, ctx, at, mint).await?;
    let (ran, disk_changed) =
        tokio::join!(start.run(ctx, text, budget), start.bound.disk_changed());
    let Ran {
        mut result, step, ..
    } = ran?;
    result.line_text = Some(start.line_text.clone());
    result.disk_changed = disk_changed;
    if let (true, Some(step)) = (mint && result.success, &step) {
        result.next_handle = Some(start.mint(step)?);
    }
    Ok(result)
}

/// A proof handle, taken and checked, ready to take continuation texts.
pub(super) struct FromHandle {
    pub(super) rt: crate::broker::runtime::RuntimeUse,
    pub(super) doc: crate::broker::document::DocUse,
    pub(super) session: LeanServer,
    pub(super) state: HandleState,
    doc_state: crate::broker::document::DocState,
}

/// Look up `handle` (consuming it when `linear`) and check that it still
/// continues the document's current version in the running Lean session.
pub(super) async fn start_with(
    broker: &Broker,
    ws: &Workspace,
    path: &str,
    handle: &str,
    linear: bool,
) -> Result<FromHandle, ToolError> {
    let (root, doc_path) = broker.resolve_document(&ws.root, path)?;
    broker.check_handle_origin(handle)?;
    let rt = broker
        .cached(&root)
        .ok_or_else(|| unknown_runtime(handle))?;
    rt.record_request();
    // A file this server never read: that is what to fix first, whatever
    // the handle continues.
    let doc = rt
        .existing_doc(&doc_path)
        .filter(|doc| doc.state().version != 0)
        .ok_or_else(|| snapshot::never_synced(&doc_path.shown))?;
    let state = rt.handles.take(
        handle,
        if linear {
            Taking::Consume
        } else {
            Taking::Keep
        },
    )?;
    let session = rt.server().await?;
    let doc_state = doc.state();
    HandleStore::check_current(
        handle,
        &state,
        &doc_path.file,
        doc_state.version,
        session.generation,
    )?;
    Ok(FromHandle {
        rt,
        doc,
        session,
        state,
        doc_state,
    })
}

impl FromHandle {
    /// The shadow after the handle's steps and `text`.
    fn shadow_with(&self, text: &str) -> Shadow {
        let indent = self.state.indent;
        self.state.shadow.then(&format!(
            "{}{}\n",
            " ".repeat(indent),
            indent_lines(text, indent)
        ))
    }

    pub(super) fn is_proof(&self) -> bool {
        self.state.proof
    }

    /// Run one continuation text.
    pub(super) async fn run(
        &self,
        ctx: &CallContext,
        text: &str,
        budget: Budget,
    ) -> Result<Ran, ToolError> {
        let state = &self.state;
        let shadow = self.shadow_with(text);
        let step = Step {
            shadow: shadow.text(),
            start: state.shadow.len() + state.indent,
            indent: state.indent,
            mode: if state.proof {
                Mode::Proof
            } else {
                Mode::Command
            },
            placement: state.placement,
            expected: None,
        };
        let pool = self.rt.shadow_pool(&self.doc.path);
        let baseline = self.doc.snapshot().diagnostics;
        let asker = Asker {
            ctx,
            shown: &self.doc.path.shown,
        };
        let mut ran = run_step(
            &self.rt,
            &self.session,
            asker,
            &pool,
            &step,
            baseline.items(),
            budget,
        )
        .await?;
        ran.step = Some(step);
        Ok(ran)
    }

    /// A handle continuing after `text`.
    pub(super) fn mint(&self, text: &str) -> Result<String, ToolError> {
        Ok(self.rt.handles.mint(HandleState {
            shadow: self.shadow_with(text),
            ..self.state.clone()
        })?)
    }

    pub(super) async fn disk_changed(&self) -> bool {
        sync::disk_changed(&self.doc, &self.doc_state).await
    }
}

/// Continue from a handle; `linear` consumes it whatever the outcome.
#[allow(clippy::too_many_arguments)]
pub async fn run_with(
    broker: &Broker,
    ctx: &CallContext,
    ws: &Workspace,
    path: &str,
    handle: &str,
    text: &str,
    budget: Budget,
    linear: bool,
) -> Answer<RunResult> {
    let from = start_with(broker, ws, path, handle, linear).await?;
    let (ran, disk_changed) = tokio::join!(from.run(ctx, text, budget), from.disk_changed());
    let mut result = ran?.result;
    result.disk_changed = disk_changed;
    if result.success {
        result.next_handle = Some(from.mint(text)?);
    }
    Ok(result)
}

pub(super) fn unknown_runtime(handle: &str) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidParams,
        format!("handle {handle:?}: this workspace has no live runtime or document for it (dropped, or never used in this server)"),
    )
    .with_data(json!({ "handle": handle, "reason": "noRuntime" }))
}

pub async fn release(
    broker: &Broker,
    ws: &Workspace,
    path: &str,
    handle: &str,
) -> Answer<ReleaseResult> {
    let (root, doc_path) = broker.resolve_document(&ws.root, path)?;
    broker.check_handle_origin(handle)?;
    let rt = broker
        .cached(&root)
        .ok_or_else(|| unknown_runtime(handle))?;
    let state = rt.handles.take(handle, Taking::Keep)?;
    if state.file != doc_path.file {
        return Err(ToolError::new(
            ErrorCode::InvalidParams,
            format!(
                "handle {handle:?} belongs to {}, not to {path}",
                state.shown
            ),
        ));
    }
    rt.handles.take(handle, Taking::Consume)?;
    Ok(ReleaseResult {
        workspace: root.descriptor(),
        path: doc_path.shown,
        released: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuation_lines_are_indented() {
        assert_eq!(indent_lines("intro x\nexact x", 4), "intro x\n    exact x");
        assert_eq!(
            indent_lines("constructor\n      · exact a", 4),
            "constructor\n      · exact a"
        );
    }

    #[test]
    fn block_columns() {
        assert_eq!(
            block_column("    show Eq (N.succ (N.add N.zero m)) (N.succ m)"),
            4
        );
        assert_eq!(
            block_column("  | succ m ih => exact congrArg N.succ ih"),
            17
        );
        assert_eq!(block_column("  case zero => exact Eq.refl _"), 15);
        assert_eq!(block_column("    · exact hq"), 6);
        assert_eq!(block_column("theorem t : Eq (f x) y := by decide"), 29);
        assert_eq!(block_column("  exact fun x => x"), 2);
    }

    #[test]
    fn continuation_columns() {
        assert_eq!(continuation_column("theorem t : T := by\n  intro x\n\n"), 2);
        assert_eq!(continuation_column("theorem t : T := by\n"), 2);
        assert_eq!(continuation_column("  | s m ih =>\n"), 4);
        assert_eq!(continuation_column("    · exact a -- done\n"), 6);
        assert_eq!(continuation_column(""), 0);
    }

    #[test]
    fn commands_are_counted() {
        assert_eq!(command_count("theorem t : T := by\n  exact x"), 1);
        assert_eq!(command_count("def a := 1\ndef b := 2"), 2);
        assert_eq!(command_count("@[simp]\ntheorem t : T := x"), 1);
        assert_eq!(command_count("/-- doc -/\ndef a := 1\n-- comment"), 1);
        assert_eq!(command_count("@[simp] theorem t : T := x"), 1);
        assert_eq!(command_count("@[simp]\n@[inline] def a := 1"), 1);
    }
}
