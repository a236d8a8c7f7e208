//! `lean_completions`: what Lean offers at a position, capped, each item with
//! the edit that inserts it (computed in `broker::completions`).

use super::Answer;
use super::inspect::head;
use crate::broker::Broker;
use crate::broker::completions::{self, Completion, Edit};
use crate::broker::snapshot;
use crate::results::{CompletionItem, CompletionsResult, Range, TextEdit};
use crate::surface::{CallContext, LeanCompletionsArgs};

pub async fn completions(
    broker: &Broker,
    ctx: &CallContext,
    args: &LeanCompletionsArgs,
) -> Answer<CompletionsResult> {
    let bound = snapshot::bind(broker, ctx, &args.workspace.root, &args.path, args.version).await?;
    // The schema's minimum is 1.
    let limit = usize::try_from(args.limit).unwrap_or(1);
    let (found, disk_changed) = tokio::join!(
        completions::complete(&bound, args.line, args.character, limit),
        bound.disk_changed()
    );
    let found = found?;
    Ok(CompletionsResult {
        head: head(&bound, Some(args.line), disk_changed),
        items: found.items.into_iter().map(item).collect(),
        offered: found.offered as u64,
        is_incomplete: found.incomplete,
    })
}

fn item(completion: Completion) -> CompletionItem {
    CompletionItem {
        label: completion.label,
        kind: completion.kind.map(str::to_string),
        detail: completion.detail,
        edit: text_edit(completion.edit),
    }
}

pub fn text_edit(edit: Edit) -> TextEdit {
    TextEdit {
        range: Range::new(edit.start, edit.end),
        new_text: edit.new_text,
    }
}
