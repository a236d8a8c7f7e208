//! Speculative execution: a step of tactics, one command or a term run at a
//! position of a pinned version, or after a proof handle's chain, in the
//! document's shadow slots (never in the file). A place is taken with
//! `probe_at` (a [`Start`]) or `probe_from_handle` (a [`FromHandle`]); the
//! run tools (`run.rs`) and the batch (`batch.rs`) run their texts there.
//! None of it leaves the broker: slots, sessions and the handle store stay
//! in here.

use crate::broker::ask::{At, Continue};
use crate::lsp::protocol::PlainGoal;

use super::goals::{self, query_position};
use crate::broker::ask::{Budget, GoalsMode, Taking};
use crate::broker::engine::document::{DocState, DocUse, Snapshot};
use crate::broker::engine::handles::{HandleState, HandleStore, Shadow};
use crate::broker::engine::runtime::{Runtime, RuntimeUse};
use crate::broker::engine::runtimes::Runtimes;
use crate::broker::engine::server::LeanServer;
use crate::broker::engine::shadow::{self, Placement, Pool, SlotGuard, advance};
use crate::broker::engine::snapshot::{self, Target};
use crate::broker::engine::sync;
use crate::broker::engine::workspace::DocPath;
use crate::broker::engine::workspace::Resolved;
use crate::broker::error::{Error, HandleProblem, ProbeProblem, Result};
use crate::broker::progress::ProgressSink;
use crate::lean_source::lexer::{self, TokenKind};
use crate::lean_source::outline;
use crate::lean_source::text::LineIndex;
use crate::results::{Goal, Range, RunResult, StepKind, WorkspaceEcho};

mod batch;
mod edit;
mod exec;
mod offers;
mod reading;
mod run;
mod text;

pub use super::heartbeats::check_budget;
pub use batch::BatchRun;
pub(crate) use batch::{Place, RunAll, Runs};
pub use exec::Ran;
use exec::*;
pub use offers::Offer;
use text::*;

/// Where a step starts in its shadow, and what the shadow is.
pub struct Step {
    shadow: String,
    /// Byte offset in `shadow` where the step's text begins.
    start: usize,
    /// Byte offset in `shadow` where the step's text ends (the rest of the
    /// user's declaration follows a term step).
    end: usize,
    indent: usize,
    kind: StepKind,
    placement: Placement,
    /// A term step: the type expected where it goes (a structured goal).
    expected: Option<Goal>,
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
    at: &At<'_>,
    offset: usize,
) -> Result<Option<TermAt>> {
    let Some(answer) = goals::term_goal(bound, at.line, at.character).await? else {
        return Ok(None);
    };
    let (text, index) = (&bound.state.text, &bound.state.index);
    let byte = |p: lsp_types::Position| {
        index
            .offset(text, u64::from(p.line), u64::from(p.character))
            .ok()
    };
    let (Some(start), Some(end)) = (byte(answer.range.start), byte(answer.range.end)) else {
        return Ok(None);
    };
    Ok(
        (start <= offset && offset <= end && start < end).then_some(TermAt {
            start,
            end,
            expected: answer.goal,
        }),
    )
}

fn probe_problem(at: &At<'_>, problem: ProbeProblem) -> Error {
    Error::Probe {
        line: at.line,
        character: at.character,
        problem,
    }
}

/// Where candidates go at a position of a pinned version: the kind of step the
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
pub struct Start<'c> {
    bound: snapshot::Bound<'c>,
    line_text: String,
    plan: Plan,
    /// The goals Lean shows at the position (proof mode), as `plainGoal`
    /// renders them.
    goals: Vec<Goal>,
    /// The position, (line, character), for what errors name.
    at: (u64, u64),
}

impl Runtimes {
    /// Bind the version and work out what the position is (tactic block,
    /// between commands, a term), ready to run candidate texts there.
    pub async fn probe_at<'c>(
        &self,
        sink: &'c dyn ProgressSink,
        at: &At<'_>,
        handles: Continue,
    ) -> Result<Start<'c>> {
        let bound = self.bind(sink, at.workspace, at.path, at.version).await?;
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
                    .request_typed::<PlainGoal>(bound.lean_position(at.line, at.character))
                    .await?;
                bound
                    .doc
                    .remember_probe_goal(at.version, at.line, at.character, &goal);
                goal
            }
        };
        // At the start of a blank line where Lean shows "no goals" (after a
        // finished proof) the position is between commands.
        let no_goals = goal.as_ref().is_some_and(|g| g.goals.is_empty());
        let between_commands = before.is_empty() && line_text.trim().is_empty() && no_goals;
        let in_block = goal.is_some() && !between_commands;
        // A `sorry` in a tactic's term (`exact f sorry`) is a hole for a term.
        let term_sorry = in_block
            && !goals::starts_tactic(before)
            && sorry_at(text, line_start, line_end, offset);
        let kind = if in_block && !term_sorry {
            StepKind::Tactic
        } else if !in_block && before.trim().is_empty() {
            StepKind::Command
        } else {
            StepKind::Term
        };
        let term = match kind {
            StepKind::Term => term_at(&bound, at, offset).await?,
            StepKind::Tactic | StepKind::Command => None,
        };
        let kind = match (kind, &term) {
            (StepKind::Term, None) if in_block => StepKind::Tactic,
            (StepKind::Term, None) => return Err(probe_problem(at, ProbeProblem::NotAPlace)),
            (kind, _) => kind,
        };
        if handles == Continue::WithHandles && kind == StepKind::Term {
            return Err(probe_problem(at, ProbeProblem::TermTakesNoHandle));
        }
        let position = |byte: usize| index.position(text, byte);
        let plan = match (kind, term) {
            (StepKind::Tactic, _) => {
                let line_text = line_text.trim_end_matches('\r');
                let column = if line_text.is_empty() {
                    // An empty line inside a proof: the step belongs to the tactic
                    // block above, at that block's column, not at column 0.
                    continuation_column(&text[..line_start])
                } else {
                    query_position(line_text, at.character as usize, GoalsMode::Before)
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
            (StepKind::Command, _) => Plan::Command {
                offset,
                placement: Placement::at((at.line as u32, at.character as u32)),
            },
            (StepKind::Term, term) => Plan::Term(term.expect("a term step has its term")),
        };
        let goals = match (&plan, goal) {
            (Plan::Proof { .. }, Some(goal)) => {
                goal.goals.iter().map(|t| goals::plain_goal(t)).collect()
            }
            _ => Vec::new(),
        };
        let line_text = line_text.trim_end_matches('\r').to_owned();
        Ok(Start {
            bound,
            line_text,
            plan,
            goals,
            at: (at.line, at.character),
        })
    }

    /// Take `handle` (consuming it with [`Taking::Consume`]) and check that
    /// it still continues the document's current version in the running
    /// Lean session, ready to run continuation texts after its chain.
    pub async fn probe_from_handle(
        &self,
        workspace: &str,
        path: &str,
        handle: &str,
        taking: Taking,
    ) -> Result<FromHandle> {
        let taken = self
            .take_handle(workspace, path, handle, taking, Lean::Start)
            .await?;
        let server = taken
            .server
            .ok_or_else(|| Error::Unexpected("no Lean server after starting one".into()))?;
        Ok(FromHandle {
            rt: taken.rt,
            doc: taken.doc,
            server,
            state: taken.state,
            doc_state: taken.doc_state,
        })
    }
}

impl Start<'_> {
    /// The step that puts `candidate` at the position.
    fn step(&self, candidate: &str) -> Result<Step> {
        let text = &self.bound.state.text;
        let index = &self.bound.state.index;
        let position = |byte: usize| index.position(text, byte);
        Ok(match &self.plan {
            Plan::Proof {
                prefix,
                indent,
                placement,
            } => {
                let shadow = format!("{prefix}{}\n", indent_lines(candidate, *indent)?);
                Step {
                    start: prefix.len(),
                    end: shadow.len(),
                    shadow,
                    indent: *indent,
                    kind: StepKind::Tactic,
                    placement: *placement,
                    expected: None,
                }
            }
            Plan::Command { offset, placement } => {
                let n = command_count(candidate);
                if n != 1 {
                    return Err(Error::Probe {
                        line: self.at.0,
                        character: self.at.1,
                        problem: ProbeProblem::NotOneCommand { commands: n },
                    });
                }
                let prefix = &text[..*offset];
                let shadow = format!("{prefix}{}\n", indent_lines(candidate, 0)?);
                Step {
                    start: prefix.len(),
                    end: shadow.len(),
                    shadow,
                    indent: 0,
                    kind: StepKind::Command,
                    placement: *placement,
                    expected: None,
                }
            }
            Plan::Term(term) => {
                // The text takes the term's place, in parentheses (it may be an
                // argument), with the rest of the declaration after it.
                let rest = &text[term.end..outline::command_end(text, term.end)];
                let anchor = position(term.start);
                // Later lines keep their place relative to the first, which
                // goes after the parenthesis (a `by` block in the term keeps
                // its column).
                let column = text[..term.start]
                    .rfind('\n')
                    .map_or(&text[..term.start], |i| &text[i + 1..term.start])
                    .chars()
                    .count();
                let step_text = indent_lines(candidate, column + 1)?;
                let step_text = step_text.as_str();
                let text_at = (anchor.0, anchor.1 + 1);
                let mut shadow = format!("{}({step_text}){rest}", &text[..term.start]);
                if !shadow.ends_with('\n') {
                    shadow.push('\n');
                }
                Step {
                    start: term.start + 1,
                    end: term.start + 1 + step_text.len(),
                    shadow,
                    indent: 0,
                    kind: StepKind::Term,
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

    /// Whether `candidate` can go here within `budget` (its lines laid out,
    /// one command between commands, no `maxHeartbeats` under a budget).
    pub fn check(&self, candidate: &str, budget: Budget) -> Result<()> {
        self.step(candidate)?;
        check_budget("the text", candidate, budget.max_heartbeats)
    }

    /// What candidates here are.
    pub fn kind(&self) -> StepKind {
        match self.plan {
            Plan::Proof { .. } => StepKind::Tactic,
            Plan::Command { .. } => StepKind::Command,
            Plan::Term(_) => StepKind::Term,
        }
    }

    /// Run one candidate here.
    pub async fn run(
        &self,
        sink: &dyn ProgressSink,
        candidate: &str,
        budget: Budget,
    ) -> Result<Ran> {
        let step = self.step(candidate)?;
        let bound = &self.bound;
        run_on_document(&bound.rt, &bound.server, &bound.doc, sink, step, budget).await
    }

    /// A handle continuing after `step` (a tactic or command step).
    pub fn mint(&self, step: &Step) -> Result<String> {
        let bound = &self.bound;
        bound.rt.handles.mint(HandleState {
            file: bound.doc.path.file.clone(),
            shown: bound.doc.path.shown.clone(),
            version: bound.state.version,
            generation: bound.server.generation,
            // Handles share the snapshot's text instead of copying the prefix.
            shadow: Shadow::sharing(std::sync::Arc::clone(&bound.state.text), &step.shadow),
            indent: step.indent,
            kind: step.kind,
            placement: step.placement,
        })
    }

    /// The goals Lean shows at the position (tactic mode), as `plainGoal`
    /// renders them; none between commands or on a term.
    pub fn goals(&self) -> &[Goal] {
        &self.goals
    }

    /// The text of the addressed line, without its line break.
    pub fn line_text(&self) -> &str {
        &self.line_text
    }

    /// The document and version the candidates run against.
    pub fn origin(&self) -> Origin {
        let bound = &self.bound;
        Origin {
            workspace: bound.rt.root.descriptor(),
            path: bound.doc.path.shown.clone(),
            version: bound.state.version,
        }
    }

    /// Whether the file changed on disk since the pinned version was read.
    pub async fn disk_changed(&self) -> bool {
        self.bound.disk_changed().await
    }
}

/// The document a probe runs against, as results name it.
#[derive(Debug, Clone)]
pub struct Origin {
    pub workspace: WorkspaceEcho,
    /// The document's path as results show it.
    pub path: String,
    pub version: u64,
}

/// A proof handle, taken and checked, ready to take continuation texts.
pub struct FromHandle {
    rt: RuntimeUse,
    doc: DocUse,
    server: LeanServer,
    state: HandleState,
    doc_state: DocState,
}

/// Which Lean server a handle is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lean {
    /// The workspace's, started if it is not running (to run the chain on).
    Start,
    /// The running one only: without it the handle is stale.
    IfRunning,
}

/// A handle taken and checked: it continues its document's current
/// version in the Lean session that runs now.
pub(crate) struct Taken {
    pub(crate) rt: RuntimeUse,
    pub(crate) doc: DocUse,
    pub(crate) state: HandleState,
    pub(crate) doc_state: DocState,
    /// The running Lean server (always there with [`Lean::Start`]).
    pub(crate) server: Option<LeanServer>,
}

impl FromHandle {
    /// The shadow after the handle's steps and `text`.
    fn shadow_with(&self, text: &str) -> Result<Shadow> {
        let indent = self.state.indent;
        Ok(self.state.shadow.then(&format!(
            "{}{}\n",
            " ".repeat(indent),
            indent_lines(text, indent)?
        )))
    }

    /// Whether `text` can continue the handle within `budget` (its lines
    /// laid out, no `maxHeartbeats` under a budget).
    pub fn check(&self, text: &str, budget: Budget) -> Result<()> {
        indent_lines(text, self.state.indent)?;
        check_budget("the text", text, budget.max_heartbeats)
    }

    /// What the handle's steps are (tactics or commands).
    pub fn kind(&self) -> StepKind {
        self.state.kind
    }

    /// Run one continuation text.
    pub async fn run(&self, sink: &dyn ProgressSink, text: &str, budget: Budget) -> Result<Ran> {
        let state = &self.state;
        let shadow = self.shadow_with(text)?;
        let shadow = shadow.text();
        let step = Step {
            start: state.shadow.len() + state.indent,
            end: shadow.len(),
            shadow,
            indent: state.indent,
            kind: state.kind,
            placement: state.placement,
            expected: None,
        };
        run_on_document(&self.rt, &self.server, &self.doc, sink, step, budget).await
    }

    /// A handle continuing after `text`.
    pub fn mint(&self, text: &str) -> Result<String> {
        self.rt.handles.mint(HandleState {
            shadow: self.shadow_with(text)?,
            ..self.state.clone()
        })
    }

    /// The document and version the handle continues.
    pub fn origin(&self) -> Origin {
        Origin {
            workspace: self.rt.root.descriptor(),
            path: self.doc.path.shown.clone(),
            version: self.state.version,
        }
    }

    /// Whether the file changed on disk since the handle's version was read.
    pub async fn disk_changed(&self) -> bool {
        sync::disk_changed(&self.doc, &self.doc_state).await
    }
}

impl Runtimes {
    /// Take `handle` (consuming it with [`Taking::Consume`]) for the
    /// document at `path` and check that it continues the document's
    /// current version in the Lean session that runs now.
    pub(crate) async fn take_handle(
        &self,
        workspace: &str,
        path: &str,
        handle: &str,
        taking: Taking,
        lean: Lean,
    ) -> Result<Taken> {
        let (rt, doc_path) = self.handle_runtime(workspace, path, handle)?;
        rt.record_request();
        // A file this server never read: that is what to fix first,
        // whatever the handle continues.
        let doc = rt
            .existing_doc(&doc_path)
            .filter(|doc| doc.state().version != 0)
            .ok_or_else(|| snapshot::never_synced(&doc_path.shown))?;
        let state = rt.handles.take(handle, taking)?;
        let server = match lean {
            Lean::Start => Some(rt.server().await?),
            Lean::IfRunning => rt.server_if_running().await,
        };
        // Generations start at 1: 0 (no server) is never the chain's.
        let generation = server.as_ref().map_or(0, |server| server.generation);
        let doc_state = doc.state();
        HandleStore::check_current(
            handle,
            &state,
            &doc_path.file,
            doc_state.version,
            generation,
        )?;
        Ok(Taken {
            rt,
            doc,
            state,
            doc_state,
            server,
        })
    }

    /// The runtime and document a handle argument names: the path resolved
    /// in the workspace, the handle made in this process, its runtime still
    /// cached (a handle never starts Lean).
    pub(crate) fn handle_runtime(
        &self,
        workspace: &str,
        path: &str,
        handle: &str,
    ) -> Result<(RuntimeUse, DocPath)> {
        let Resolved {
            root,
            doc: doc_path,
            ..
        } = self.resolve_document(workspace, path)?;
        self.check_handle_origin(handle)?;
        let rt = self
            .cached(&root)
            .ok_or_else(|| Error::handle(handle, HandleProblem::NoRuntime))?;
        Ok((rt, doc_path))
    }

    /// Release `handle`, which must continue the document at `path`.
    fn release_handle(&self, workspace: &str, path: &str, handle: &str) -> Result<Origin> {
        let (rt, doc_path) = self.handle_runtime(workspace, path, handle)?;
        let state = rt.handles.take(handle, Taking::Keep)?;
        if state.file != doc_path.file {
            return Err(Error::handle(
                handle,
                HandleProblem::ReleasedOnOtherFile {
                    shown: state.shown,
                    path: path.to_owned(),
                },
            ));
        }
        rt.handles.take(handle, Taking::Consume)?;
        Ok(Origin {
            workspace: rt.root.descriptor(),
            path: doc_path.shown,
            version: state.version,
        })
    }
}
