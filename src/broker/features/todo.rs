//! `lean_todo`: the unfinished work in a range of a pinned version, each item
//! with a place and (optionally) a text to try with `lean_run_at`.

use serde_json::{Value, json};

use super::goals::starts_tactic;
use super::inspect::{add_paths, head};
use crate::broker::ask::Todo;
use crate::broker::engine::diagnostics;
use crate::broker::engine::runtimes::Runtimes;
use crate::broker::engine::snapshot::{self, Bound};
use crate::broker::error::{Error, Result};
use crate::broker::progress::ProgressSink;
use crate::lean_source::lexer::{self, TokenKind};
use crate::lsp::protocol::{
    CodeActionQuery, CodeActionQueryContext, CodeActionQueryParams, Diagnostic, PlainGoal,
    WaitForDiagnostics, WaitForDiagnosticsParams,
};
use crate::results::{Probe, Range, TodoItem, TodoItemKind, TodoResult};

/// The tactic suggested where a goal is left open: Lean's own library search.
const SEARCH_TACTIC: &str = "exact?";
/// The same as a term, for a hole outside tactics.
const SEARCH_TERM: &str = "by exact?";

/// One `textDocument/codeAction` query: a range and the diagnostics sent with it.
type Query = ((u32, u32), (u32, u32), Vec<Diagnostic>);

/// An item and where it starts, for document order.
struct Item {
    start: (u32, u32),
    item: TodoItem,
}

/// An item of `kind` at `range`, to be tried at `run_at`; the rest is added
/// by kind.
fn todo_item(kind: TodoItemKind, range: Range, run_at: (u32, u32)) -> TodoItem {
    TodoItem {
        kind,
        range,
        // Named with the document's path and version once all are found.
        probe: Probe {
            path: String::new(),
            version: 0,
            line: run_at.0,
            character: run_at.1,
        },
        message: None,
        severity: None,
        category: None,
        code: None,
        full_range: None,
        code_action: None,
        run_at_text: None,
        proof_state: None,
    }
}

/// A range as LSP parameters carry it.
fn range_json(start: (u32, u32), end: (u32, u32)) -> Value {
    json!(Range::new(start, end))
}

fn lsp_range(start: (u32, u32), end: (u32, u32)) -> lsp_types::Range {
    lsp_types::Range::new(
        lsp_types::Position::new(start.0, start.1),
        lsp_types::Position::new(end.0, end.1),
    )
}

fn lsp_pos(value: &Value, which: &str) -> (u32, u32) {
    let at = |k: &str| {
        value
            .pointer(&format!("/{which}/{k}"))
            .and_then(Value::as_u64)
            .unwrap_or(0) as u32
    };
    (at("line"), at("character"))
}

fn in_range(pos: (u32, u32), start: (u32, u32), end: (u32, u32)) -> bool {
    pos >= start && pos <= end
}

/// The goals Lean shows at a position (rendered), for items that leave one open.
async fn proof_state(bound: &Bound<'_>, at: (u32, u32)) -> Option<Vec<String>> {
    let answer = bound
        .request_typed::<PlainGoal>(bound.lean_position(at.0 as u64, at.1 as u64))
        .await
        .ok()??;
    Some(answer.goals)
}

impl Runtimes {
    /// The unfinished work in a range of a pinned version (`lean_todo`).
    pub async fn todo(&self, sink: &dyn ProgressSink, args: &Todo<'_>) -> Result<TodoResult> {
        let pinned = &args.pinned;
        let bound = self
            .bind(sink, pinned.workspace, pinned.path, pinned.version)
            .await?;
        let start_off = bound.check_position(args.start.0, args.start.1)?;
        let end_off = match args.end {
            None => bound.state.text.len(),
            Some((line, character)) => match bound.line_text(line) {
                // An end past the last line is the end of the file; past
                // the end of its line, the end of the line.
                None => bound.state.text.len(),
                Some(text) => {
                    let width = text.encode_utf16().count() as u64;
                    bound.check_position(line, character.min(width))?
                }
            },
        };
        if start_off > end_off {
            return Err(Error::Argument {
                what: "the range".to_owned(),
                rule: "ends before it starts: give start_line/start_character before end_line/end_character",
            });
        }
        // Diagnostics must be complete for this version before they are read.
        let wait = WaitForDiagnosticsParams {
            uri: bound.doc.uri.clone(),
            version: i32::try_from(pinned.version).unwrap_or(i32::MAX),
        };
        let (waited, disk_changed) = tokio::join!(
            bound.request_typed::<WaitForDiagnostics>(wait),
            bound.disk_changed()
        );
        waited?;
        bound.server.settle().await;
        let snapshot = bound.doc.snapshot();
        if snapshot.version != pinned.version {
            return Err(snapshot::version_mismatch(
                &bound.doc,
                pinned.version,
                snapshot.version,
            ));
        }

        let wanted = |kind: TodoItemKind| args.kinds.is_empty() || args.kinds.contains(&kind);
        let suggest = args.suggest;
        let text = &bound.state.text;
        let index = &bound.state.index;
        let range_start = index.position(text, start_off);
        let range_end = index.position(text, end_off);
        let mut items: Vec<Item> = Vec::new();

        for token in lexer::scan(&text[start_off..end_off]) {
            let (s, e) = (start_off + token.start, start_off + token.end);
            let start = index.position(text, s);
            let end = index.position(text, e);
            let kind = match token.kind {
                TokenKind::Sorry => TodoItemKind::Sorry,
                TokenKind::Hole => TodoItemKind::Hole,
            };
            if !wanted(kind) {
                continue;
            }
            // Each suggestion is a probe lean_run_at takes there: `exact sorry`
            // in a tactic block, a tactic in place of the whole `exact sorry`; a
            // tactic `sorry`, a tactic in its place; a hole `?_` in a tactic
            // block, a tactic on the goals it leaves; any other `sorry` or hole,
            // a term in its place.
            let line_start = text[..s].rfind('\n').map_or(0, |i| i + 1);
            let before = &text[line_start..s];
            let exact = before.trim_end().ends_with("exact");
            let (run_at, goals, tactic) = if exact {
                let at = index.position(text, line_start + before.trim_end().len() - "exact".len());
                (at, proof_state(&bound, at).await, true)
            } else {
                let goals = proof_state(&bound, start).await;
                let tactic =
                    goals.is_some() && (kind == TodoItemKind::Hole || starts_tactic(before));
                (start, goals, tactic)
            };
            // What a probe at `run_at` replaces: the whole `exact sorry`,
            // else the token.
            let mut item = todo_item(kind, Range::new(run_at, end), run_at);
            if suggest {
                let probe = if tactic { SEARCH_TACTIC } else { SEARCH_TERM };
                item.run_at_text = Some(probe.to_owned());
            }
            item.proof_state = goals;
            items.push(Item { start, item });
        }

        let mut range_diagnostics = Vec::new();
        for diagnostic in snapshot.diagnostics.items() {
            let (start, end) = (diagnostic.start(), diagnostic.end());
            if !in_range(start, range_start, range_end) && !in_range(end, range_start, range_end) {
                continue;
            }
            range_diagnostics.push(diagnostic.clone());
            if !diagnostic.is_error() {
                continue;
            }
            let message = &diagnostic.message;
            let kind = if diagnostics::unsolved_goals(diagnostic).is_some() {
                TodoItemKind::IncompleteProof
            } else if message.starts_with("don't know how to synthesize placeholder") {
                TodoItemKind::Hole
            } else {
                TodoItemKind::Diagnostic
            };
            if !wanted(kind) {
                continue;
            }
            let run_at = if kind == TodoItemKind::IncompleteProof {
                end
            } else {
                start
            };
            let mut item = todo_item(kind, Range::new(start, end), run_at);
            let whole = diagnostics::item(diagnostic);
            item.message = Some(whole.message);
            item.severity = Some(whole.severity);
            item.category = Some(whole.category);
            item.code = whole.code;
            item.full_range = whole.full_range;
            if kind == TodoItemKind::IncompleteProof {
                if suggest {
                    item.run_at_text = Some(SEARCH_TACTIC.to_owned());
                }
                item.proof_state = proof_state(&bound, start).await;
            }
            items.push(Item { start, item });
        }

        if wanted(TodoItemKind::CodeAction) {
            // Lean answers `textDocument/codeAction` from the one command snapshot
            // that holds the end of the requested range, so the actions of earlier
            // commands are asked where an editor would: at each diagnostic. The
            // whole range comes last; an action found twice is kept once.
            let mut queries: Vec<Query> = range_diagnostics
                .iter()
                .map(|d| (d.start(), d.end(), vec![d.clone()]))
                .collect();
            queries.push((range_start, range_end, range_diagnostics.clone()));
            let mut seen = std::collections::HashSet::new();
            for (query_start, query_end, context) in queries {
                let params = CodeActionQueryParams {
                    text_document: bound.target().document(),
                    range: lsp_range(query_start, query_end),
                    context: CodeActionQueryContext {
                        diagnostics: context,
                        trigger_kind: 1,
                    },
                };
                let actions = bound.request_verbatim::<CodeActionQuery>(params).await?;
                for action in actions.as_array().into_iter().flatten() {
                    let diag_range = action.pointer("/diagnostics/0/range").cloned();
                    let (start, end) = match &diag_range {
                        Some(r) => (lsp_pos(r, "start"), lsp_pos(r, "end")),
                        None => (query_start, query_end),
                    };
                    // The same action answered to two queries differs only in the
                    // query it carries for resolution.
                    let key = match action.get("edit") {
                        Some(edit) => json!([action.get("title"), action.get("kind"), edit]),
                        None => json!([
                            action.get("title"),
                            action.get("kind"),
                            range_json(start, end)
                        ]),
                    };
                    if !seen.insert(key.to_string()) {
                        continue;
                    }
                    let mut code_action = action.clone();
                    add_paths(&bound.rt.root, &mut code_action);
                    let mut item =
                        todo_item(TodoItemKind::CodeAction, Range::new(start, end), start);
                    // LSP requires a title; an action without one is shown without a message.
                    item.message = action
                        .get("title")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    item.code_action = Some(code_action);
                    items.push(Item { start, item });
                }
            }
        }

        items.sort_by(|a, b| (a.start, a.item.kind.as_str()).cmp(&(b.start, b.item.kind.as_str())));
        items.dedup_by(|a, b| a.item == b.item);
        let head = head(&bound, None, disk_changed);
        let items = items
            .into_iter()
            .map(|i| {
                let mut item = i.item;
                item.probe.path = head.path.clone();
                item.probe.version = head.version;
                item
            })
            .collect();
        Ok(TodoResult {
            declaration: None,
            head,
            range: Range::new(range_start, range_end),
            items,
        })
    }
}
