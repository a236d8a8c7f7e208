//! Completions at a position of a pinned version (`lean_completions`): Lean's
//! `textDocument/completion` items, capped, each with its kind named, its
//! type (`detail`, which Lean fills in only on `completionItem/resolve`) and
//! the exact edit that inserts it.

use serde_json::Value;

use lsp_types::CompletionParams;

use super::inspect::head;
use crate::broker::ask::At;
use crate::broker::engine::concurrent::join_all;
use crate::broker::engine::runtimes::Runtimes;
use crate::broker::engine::snapshot::Bound;
use crate::broker::error::Result;
use crate::broker::progress::ProgressSink;
use crate::lsp::protocol::ResolveCompletionItem;
use crate::results::{CompletionItem, CompletionsResult, Range, TextEdit};

impl Runtimes {
    /// What Lean offers at a position of a pinned version, the first
    /// `limit` items, each with the edit that inserts it
    /// (`lean_completions`).
    pub async fn completions(
        &self,
        sink: &dyn ProgressSink,
        at: &At<'_>,
        limit: usize,
    ) -> Result<CompletionsResult> {
        let bound = self.bind(sink, at.workspace, at.path, at.version).await?;
        let (found, disk_changed) = tokio::join!(
            complete(&bound, at.line, at.character, limit),
            bound.disk_changed()
        );
        let found = found?;
        Ok(CompletionsResult {
            head: head(&bound, Some(at.line), disk_changed),
            items: found.items.into_iter().map(CompletionItem::from).collect(),
            offered: found.offered as u64,
            is_incomplete: found.incomplete,
        })
    }
}

impl From<Completion> for CompletionItem {
    fn from(completion: Completion) -> Self {
        CompletionItem {
            label: completion.label,
            kind: completion.kind.map(str::to_string),
            detail: completion.detail,
            edit: completion.edit.into(),
        }
    }
}

impl From<Edit> for TextEdit {
    fn from(edit: Edit) -> Self {
        TextEdit {
            range: Range::new(edit.start, edit.end),
            new_text: edit.new_text,
        }
    }
}

/// LSP `CompletionItemKind` numbers by name, in the protocol's order (1 = text).
const COMPLETION_KINDS: [&str; 25] = [
    "text",
    "method",
    "function",
    "constructor",
    "field",
    "variable",
    "class",
    "interface",
    "module",
    "property",
    "unit",
    "value",
    "enum",
    "keyword",
    "snippet",
    "color",
    "file",
    "reference",
    "folder",
    "enum_member",
    "constant",
    "struct",
    "event",
    "operator",
    "type_parameter",
];

/// Resolve requests in flight at once.
const RESOLVES_AT_ONCE: usize = 64;

/// One completion, ready to apply.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub label: String,
    /// The LSP kind by name; `None` when Lean gave none (or one outside LSP's).
    pub kind: Option<&'static str>,
    /// The type (or signature) Lean shows for it, resolved where Lean defers it.
    pub detail: Option<String>,
    pub edit: Edit,
}

/// A text edit: replace `start..end` (0-based line, UTF-16 character) by `new_text`.
#[derive(Debug, Clone, PartialEq)]
pub struct Edit {
    pub start: (u32, u32),
    pub end: (u32, u32),
    pub new_text: String,
}

/// What Lean offered at a position, capped.
#[derive(Debug, Clone, PartialEq)]
pub struct Completions {
    pub items: Vec<Completion>,
    /// How many items Lean offered before the cap.
    pub offered: usize,
    /// Lean says typing more may bring items this list lacks.
    pub incomplete: bool,
}

/// Ask Lean for completions at a checked position of `bound` and return the
/// first `limit` of them, each resolved if Lean left its type for later.
async fn complete(
    bound: &Bound<'_>,
    line: u64,
    character: u64,
    limit: usize,
) -> Result<Completions> {
    let offset = bound.check_position(line, character)?;
    let answer = bound
        .request_verbatim::<lsp_types::request::Completion>(CompletionParams {
            text_document_position: bound.position(line, character)?,
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
            context: None,
        })
        .await?;
    let (items, incomplete) = match answer {
        Value::Array(items) => (items, false),
        Value::Object(mut list) => (
            match list.remove("items") {
                Some(Value::Array(items)) => items,
                _ => Vec::new(),
            },
            list.get("isIncomplete").and_then(Value::as_bool) == Some(true),
        ),
        _ => (Vec::new(), false),
    };
    let offered = items.len();
    let target = bound.target();
    let text = &bound.state.text;
    let prefix_start = bound.state.index.position(text, word_start(text, offset));
    let at = bound.state.index.position(text, offset);
    let items: Vec<Value> = items.into_iter().take(limit).collect();
    let mut out = Vec::with_capacity(items.len());
    for chunk in items.chunks(RESOLVES_AT_ONCE) {
        let resolving = chunk.iter().map(|item| {
            let target = &target;
            async move {
                let deferred = item.get("detail").is_none() && item.get("data").is_some();
                if deferred {
                    target
                        .request_verbatim::<ResolveCompletionItem>(item.clone())
                        .await
                } else {
                    Ok(item.clone())
                }
            }
        });
        for item in join_all(resolving.collect()).await {
            out.push(completion(&item?, prefix_start, at));
        }
    }
    Ok(Completions {
        items: out,
        offered,
        incomplete,
    })
}

/// One item as agents see it. Its edit is Lean's own when it gave one, else
/// the identifier component before the cursor replaced by the item's text.
fn completion(item: &Value, prefix_start: (u32, u32), at: (u32, u32)) -> Completion {
    let label = item["label"].as_str().unwrap_or_default().to_string();
    let kind = item["kind"]
        .as_u64()
        .and_then(|k| COMPLETION_KINDS.get((k as usize).wrapping_sub(1)))
        .copied();
    let detail = item["detail"].as_str().map(str::to_string);
    let new_text = item["insertText"].as_str().unwrap_or(&label).to_string();
    let edit = lean_edit(&item["textEdit"]).unwrap_or(Edit {
        start: prefix_start,
        end: at,
        new_text,
    });
    Completion {
        label,
        kind,
        detail,
        edit,
    }
}

/// Lean's `textEdit`: a `TextEdit` (`range`) or an `InsertReplaceEdit`
/// (`replace` is the range a client replaces by default).
fn lean_edit(edit: &Value) -> Option<Edit> {
    let range = edit.get("range").or_else(|| edit.get("replace"))?;
    let position = |key: &str| -> Option<(u32, u32)> {
        let p = range.get(key)?;
        Some((
            u32::try_from(p["line"].as_u64()?).ok()?,
            u32::try_from(p["character"].as_u64()?).ok()?,
        ))
    };
    Some(Edit {
        start: position("start")?,
        end: position("end")?,
        new_text: edit["newText"].as_str()?.to_string(),
    })
}

/// The byte offset where the identifier component ending at `offset` starts
/// (`N.add_z|` → the `a` of `add_z`): the text a completion replaces.
fn word_start(text: &str, offset: usize) -> usize {
    let before = &text[..offset];
    before
        .char_indices()
        .rev()
        .take_while(|&(_, c)| c.is_alphanumeric() || matches!(c, '_' | '\'' | '!' | '?'))
        .last()
        .map_or(offset, |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lean_source::text::LineIndex;
    use serde_json::json;

    #[test]
    fn the_word_before_the_cursor_is_replaced() {
        let text = "def u : N := N.add_z\n  α₁x";
        assert_eq!(&text[word_start(text, 20)..20], "add_z");
        assert_eq!(word_start(text, 15), 15, "right after a dot");
        let end = text.len();
        assert_eq!(&text[word_start(text, end)..end], "α₁x");
        let index = LineIndex::new(text);
        let item = json!({"label": "add_zero", "kind": 23, "detail": "∀ (n : N), Eq n n"});
        let at = index.position(text, 20);
        let got = completion(&item, index.position(text, word_start(text, 20)), at);
        assert_eq!(got.kind, Some("event"), "Lean marks theorems as LSP events");
        assert_eq!(
            got.edit,
            Edit {
                start: (0, 15),
                end: (0, 20),
                new_text: "add_zero".into()
            }
        );
    }

    #[test]
    fn leans_own_edit_and_insert_text_win() {
        let item = json!({"label": "x", "kind": 99, "insertText": "x'",
            "textEdit": {"newText": "y", "replace": {"start": {"line": 1, "character": 2}, "end": {"line": 1, "character": 4}},
                "insert": {"start": {"line": 1, "character": 2}, "end": {"line": 1, "character": 3}}}});
        let got = completion(&item, (0, 0), (0, 0));
        assert_eq!(got.kind, None);
        assert_eq!(got.edit.new_text, "y");
        assert_eq!((got.edit.start, got.edit.end), ((1, 2), (1, 4)));
        let item = json!({"label": "x", "insertText": "x'"});
        assert_eq!(completion(&item, (0, 0), (0, 1)).edit.new_text, "x'");
    }
}
