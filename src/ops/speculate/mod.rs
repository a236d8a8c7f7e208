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

mod exec;
mod text;

use exec::*;
pub(super) use exec::{Budget, Ran};
use text::*;

/// What a step's text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// Tactics, in a tactic block.
    Proof,
    /// One command, between commands.
    Command,
    /// A term, in place of the term at the position (a `sorry`, a hole).
    Term,
}

/// Where a step starts in its shadow, and what the shadow is.
pub(super) struct Step {
    pub(super) shadow: String,
    /// Byte offset in `shadow` where the step's text begins.
    pub(super) start: usize,
    pub(super) indent: usize,
    pub(super) mode: Mode,
    pub(super) placement: Placement,
    /// A term step: the type expected where it goes (a structured goal).
    pub(super) expected: Option<Goal>,
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
pub(super) struct TermAt {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) expected: Goal,
}

pub(super) async fn term_at(
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

pub(super) fn not_a_probe_place(at: &RunAt<'_>) -> ToolError {
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
pub(super) enum Plan {
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
    pub(super) plan: Plan,
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
        run_on_document(&bound.rt, &bound.session, &bound.doc, ctx, step, budget).await
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
    pub(super) doc_state: crate::broker::document::DocState,
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
    let (rt, doc_path) = handle_runtime(broker, ws, path, handle)?;
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
        run_on_document(&self.rt, &self.session, &self.doc, ctx, step, budget).await
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

/// The runtime and document a handle argument names: the path resolved in
/// the workspace, the handle made in this process, its runtime still cached
/// (a handle never starts Lean).
pub(super) fn handle_runtime(
    broker: &Broker,
    ws: &Workspace,
    path: &str,
    handle: &str,
) -> Result<
    (
        crate::broker::runtime::RuntimeUse,
        crate::broker::workspace::DocPath,
    ),
    ToolError,
> {
    let (root, doc_path) = broker.resolve_document(&ws.root, path)?;
    broker.check_handle_origin(handle)?;
    let rt = broker
        .cached(&root)
        .ok_or_else(|| unknown_runtime(handle))?;
    Ok((rt, doc_path))
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
    let (rt, doc_path) = handle_runtime(broker, ws, path, handle)?;
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
        workspace: rt.root.descriptor(),
        path: doc_path.shown,
        released: true,
    })
}
