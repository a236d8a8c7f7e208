//! Speculative execution: `lean_run_at`, `lean_run_at_handle`, `lean_run_with`,
//! `lean_run_with_linear` and `lean_release`, on shadow documents.

use serde_json::{Value, json};

use crate::broker::Broker;
use crate::broker::diagnostics::{self, ERROR, INFORMATION};
use crate::broker::document::Snapshot;
use crate::broker::goals::{self, query_position};
use crate::broker::handles::{HandleState, HandleStore, Shadow};
use crate::broker::outline;
use crate::broker::runtime::{Runtime, Session};
use crate::broker::shadow::{self, Pool, SlotGuard};
use crate::broker::snapshot::{self, Target};
use crate::broker::text::LineIndex;
use crate::surface::{CallContext, ErrorCode, GoalsMode, ToolError, ToolOutcome, Workspace};

/// Where a step starts in its shadow, and what the shadow is.
struct Step {
    shadow: String,
    /// Byte offset in `shadow` where the step's text begins.
    start: usize,
    indent: usize,
    proof: bool,
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
/// attribute and doc-comment lines, which belong to the command after them.
fn command_count(text: &str) -> usize {
    text.lines()
        .filter(|line| line.chars().next().is_some_and(|c| !c.is_whitespace()))
        .filter(|line| {
            !["--", "@[", "/--", "/-!", "/-"]
                .iter()
                .any(|p| line.starts_with(p))
        })
        .count()
}

/// A range relative to the step's first character (line 0 is the step's first
/// line), so that messages of continuation steps are easy to place.
fn step_range(range: &Value, start: (u32, u32)) -> Value {
    let rel = |p: &Value| {
        let line = p["line"].as_u64().unwrap_or(0) as u32;
        let character = p["character"].as_u64().unwrap_or(0) as u32;
        let (l, c) = if line == start.0 {
            (0, character.saturating_sub(start.1))
        } else {
            (line.saturating_sub(start.0), character)
        };
        json!({ "line": l, "character": c })
    };
    json!({ "start": rel(&range["start"]), "end": rel(&range["end"]) })
}

/// The text a step is elaborated in: its shadow, or the shadow rewritten
/// onto a prefix base (same lines and columns from the base's end on).
struct Exec {
    text: String,
    start: usize,
    base: Option<u64>,
}

/// Where the prefix a base can stand for ends: the start of the step's own
/// command (command mode) or of the declaration it is in (proof mode).
fn base_cut(step: &Step) -> Option<usize> {
    let before = &step.shadow[..step.start];
    if step.proof {
        outline::enclosing_command_start(&step.shadow, step.start)
    } else {
        Some(before.rfind('\n').map_or(0, |i| i + 1))
    }
}

fn exec_text(rt: &Runtime, step: &Step) -> Exec {
    let rewritten = base_cut(step).and_then(|cut| rt.rebase(&step.shadow, cut));
    match rewritten {
        Some(r) => Exec {
            start: (step.start as isize + r.shift) as usize,
            text: r.text,
            base: Some(r.key),
        },
        None => Exec {
            text: step.shadow.clone(),
            start: step.start,
            base: None,
        },
    }
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

/// Elaborate `exec` in `slot` and record whether its header imported.
async fn elaborate_in(
    rt: &Runtime,
    session: &Session,
    ctx: &CallContext,
    slot: SlotGuard,
    exec: Exec,
) -> Result<Elaborated, ToolError> {
    let (version, snap) = shadow::elaborate(rt, session, ctx, &slot, exec.text.clone()).await?;
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

/// Elaborate a step in a slot of `pool`; on a base that did not import (an
/// error on its import line), again on the whole shadow.
async fn elaborate_step(
    rt: &Runtime,
    session: &Session,
    ctx: &CallContext,
    pool: &Pool,
    step: &Step,
) -> Result<Elaborated, ToolError> {
    let exec = exec_text(rt, step);
    let slot = pool.acquire(rt, &exec.text).await;
    let done = elaborate_in(rt, session, ctx, slot, exec).await?;
    let Some(key) = done.exec.base else {
        return Ok(done);
    };
    if !done.blocked {
        rt.base_imported();
        return Ok(done);
    }
    rt.base_failed(key);
    let whole = Exec {
        text: step.shadow.clone(),
        start: step.start,
        base: None,
    };
    elaborate_in(rt, session, ctx, done.slot, whole).await
}

/// Run one step in a shadow slot and build the run result. `baseline` holds
/// the user document's own diagnostics: a warning before the step that is not
/// among them was caused by the step (e.g. "declaration uses `sorry`" on the
/// declaration's name) and is reported too. Errors before the step are not:
/// cutting the declaration after the step causes some by itself (unsolved
/// goals, missing alternatives), and the goals already say what is left.
async fn run_step(
    rt: &Runtime,
    session: &Session,
    ctx: &CallContext,
    pool: &Pool,
    step: &Step,
    baseline: &[Value],
) -> Result<Value, ToolError> {
    let Elaborated {
        slot,
        exec,
        version,
        snap,
        // Lean could not take the file's imports: the step never ran, and
        // the errors that say why are the answer.
        blocked,
    } = elaborate_step(rt, session, ctx, pool, step).await?;
    let index = LineIndex::new(&exec.text);
    let (start_line, start_char) = index.position(&exec.text, exec.start);
    let known = |d: &Value| {
        baseline.iter().any(|b| {
            b.get("range") == d.get("range") && diagnostics::message(b) == diagnostics::message(d)
        })
    };
    let mut messages = Vec::new();
    let mut traces = Vec::new();
    let mut success = !blocked;
    for d in snap.diagnostics.items() {
        let severity = diagnostics::severity(d);
        let text = diagnostics::message(d);
        let range = d.get("range").cloned().unwrap_or(Value::Null);
        let in_step = shadow::starts_at_or_after(d, start_line, start_char);
        let mut entry = json!({
            "severity": diagnostics::severity_name(severity),
            "text": text,
            "range": range,
        });
        if in_step {
            entry["step_range"] = step_range(&range, (start_line, start_char));
            if severity == ERROR {
                success = false;
            }
        } else if blocked && severity == ERROR {
            entry["before_step"] = Value::Bool(true);
        } else if severity == ERROR || known(d) {
            continue;
        } else {
            entry["before_step"] = Value::Bool(true);
        }
        if severity == INFORMATION && text.starts_with('[') {
            traces.push(entry);
        } else {
            messages.push(entry);
        }
    }
    let proof_state = if step.proof {
        // After a failed step Lean's error recovery leaves goals that look
        // finished; the goals before the step are what to work from.
        let at = if success {
            exec.text.trim_end().len()
        } else {
            exec.start
        };
        let (line, character) = index.position(&exec.text, at);
        let target = Target {
            rt,
            session,
            doc: slot.doc(),
            version,
        };
        let (goals, source) = goals::goals(&target, line as u64, character as u64).await?;
        let when = if success {
            "after_step"
        } else {
            "before_failed_step"
        };
        json!({ "goals": goals, "source": source.as_str(), "at": when })
    } else {
        Value::Null
    };
    Ok(json!({
        "workspace": rt.root.descriptor(),
        "success": success,
        "messages": messages,
        "traces": traces,
        "proof_state": proof_state,
        "next_handle": Value::Null,
    }))
}

/// The first step of a chain, at a position of a pinned version.
pub struct RunAt<'a> {
    pub workspace: &'a Workspace,
    pub path: &'a str,
    pub version: u64,
    pub line: u64,
    pub character: u64,
    pub text: &'a str,
}

pub async fn run_at(broker: &Broker, ctx: &CallContext, at: &RunAt<'_>, mint: bool) -> ToolOutcome {
    let bound = snapshot::bind(broker, at.workspace, at.path, at.version).await?;
    let offset = bound.check_position(at.line, at.character)?;
    let text = &bound.state.text;
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line_text = &text[line_start..text[offset..].find('\n').map_or(text.len(), |i| offset + i)];
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
    let proof = if goal.is_null() {
        false
    } else {
        !between_commands
    };
    // The shadow's prefix: the snapshot's first `cut` bytes, then `suffix`.
    let ((cut, suffix), indent) = if proof {
        let line_text = line_text.trim_end_matches('\r');
        let column = if line_text.is_empty() {
            // An empty line inside a proof: the step belongs to the tactic
            // block above, at that block's column, not at column 0.
            continuation_column(&text[..line_start])
        } else {
            query_position(line_text, at.character as usize, GoalsMode::Before)
        };
        if before.trim().is_empty() {
            // In the indentation of a tactic line: before that tactic, at its
            // column.
            ((line_start, " ".repeat(column)), column)
        } else if before.trim_end().ends_with("by") || before.trim_end().ends_with("=>") {
            (
                (text[..offset].trim_end().len(), " ".to_string()),
                before.trim_end().chars().count() + 1,
            )
        } else {
            // Inside or after a tactic on the same line (Lean shows the goals
            // after it): the step goes on a new line of the same block, after
            // the line's tactic text, never into the middle of it.
            let content = line_text
                .find("--")
                .map_or(line_text, |i| &line_text[..i])
                .trim_end();
            let head = line_start + content.len();
            if content.ends_with("by") || content.ends_with("=>") {
                ((head, " ".to_string()), content.chars().count() + 1)
            } else {
                let column = block_column(content);
                ((head, format!("\n{}", " ".repeat(column))), column)
            }
        }
    } else {
        if !before.trim().is_empty() {
            return Err(ToolError::new(
                ErrorCode::InvalidParams,
                format!(
                    "({}, {}) is neither inside a tactic block nor between commands: give a position in a proof (for tactics) or at the start of a line between commands (for one command)",
                    at.line, at.character
                ),
            ));
        }
        let n = command_count(at.text);
        if n != 1 {
            return Err(ToolError::new(
                ErrorCode::InvalidParams,
                format!(
                    "between commands lean_run_at runs exactly one command; the text holds {n}"
                ),
            )
            .with_data(json!({ "commands": n })));
        }
        ((offset, String::new()), 0)
    };
    let start = cut + suffix.len();
    // Handles share the snapshot's text instead of copying the prefix.
    let shadow = Shadow::new(
        std::sync::Arc::clone(text),
        cut,
        format!("{suffix}{}\n", indent_lines(at.text, indent)),
    );
    let step = Step {
        shadow: shadow.text(),
        start,
        indent,
        proof,
    };
    let pool = bound.rt.shadow_pool(&bound.doc.path);
    let baseline = bound.doc.snapshot().diagnostics;
    let mut result = run_step(
        &bound.rt,
        &bound.session,
        ctx,
        &pool,
        &step,
        baseline.items(),
    )
    .await?;
    if mint && result["success"] == true {
        let handle = bound.rt.handles.mint(HandleState {
            file: bound.doc.path.file.clone(),
            shown: bound.doc.path.shown.clone(),
            version: at.version,
            generation: bound.session.generation,
            shadow,
            indent: step.indent,
            proof: step.proof,
        })?;
        result["next_handle"] = Value::String(handle);
    }
    Ok(result)
}

/// Continue from a handle; `linear` consumes it whatever the outcome.
pub async fn run_with(
    broker: &Broker,
    ctx: &CallContext,
    ws: &Workspace,
    path: &str,
    handle: &str,
    text: &str,
    linear: bool,
) -> ToolOutcome {
    let (root, doc_path) = broker.resolve_document(ws, path)?;
    broker.check_handle_origin(handle)?;
    let rt = broker
        .cached(&root)
        .ok_or_else(|| unknown_runtime(handle))?;
    rt.record_request();
    let state = rt.handles.take(handle, linear)?;
    let doc = rt
        .existing_doc(&doc_path)
        .ok_or_else(|| unknown_runtime(handle))?;
    let session = rt.session().await?;
    HandleStore::check_current(
        handle,
        &state,
        &doc_path.file,
        doc.state().version,
        session.generation,
    )?;
    let start = state.shadow.len();
    let shadow = state.shadow.then(&format!(
        "{}{}\n",
        " ".repeat(state.indent),
        indent_lines(text, state.indent)
    ));
    let step = Step {
        shadow: shadow.text(),
        start: start + state.indent,
        indent: state.indent,
        proof: state.proof,
    };
    let pool = rt.shadow_pool(&doc_path);
    let baseline = doc.snapshot().diagnostics;
    let mut result = run_step(&rt, &session, ctx, &pool, &step, baseline.items()).await?;
    if result["success"] == true {
        let next = rt.handles.mint(HandleState { shadow, ..state })?;
        result["next_handle"] = Value::String(next);
    }
    Ok(result)
}

fn unknown_runtime(handle: &str) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidParams,
        format!("handle {handle:?}: this workspace has no live runtime or document for it (dropped, or never used in this server)"),
    )
    .with_data(json!({ "handle": handle, "reason": "noRuntime" }))
}

pub async fn release(broker: &Broker, ws: &Workspace, path: &str, handle: &str) -> ToolOutcome {
    let (root, doc_path) = broker.resolve_document(ws, path)?;
    broker.check_handle_origin(handle)?;
    let rt = broker
        .cached(&root)
        .ok_or_else(|| unknown_runtime(handle))?;
    let state = rt.handles.take(handle, false)?;
    if state.file != doc_path.file {
        return Err(ToolError::new(
            ErrorCode::InvalidParams,
            format!(
                "handle {handle:?} belongs to {}, not to {path}",
                state.shown
            ),
        ));
    }
    rt.handles.take(handle, true)?;
    Ok(json!({ "workspace": root.descriptor(), "path": doc_path.shown, "released": true }))
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
    }
}
