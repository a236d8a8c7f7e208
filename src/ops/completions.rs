//! `lean_completions`: what Lean offers at a position, capped, each item with
//! the edit that inserts it (computed in `broker::completions`).

use serde_json::{Value, json};

use super::typed;
use crate::broker::Broker;
use crate::broker::completions::{self, Completion};
use crate::broker::snapshot;
use crate::surface::{CallContext, LeanCompletionsArgs, ToolOutcome};

pub async fn completions(
    broker: &Broker,
    ctx: &CallContext,
    args: &LeanCompletionsArgs,
) -> ToolOutcome {
    let bound = snapshot::bind(broker, ctx, &args.workspace, &args.path, args.version).await?;
    let limit = usize::try_from(args.limit).unwrap_or(1);
    let (found, disk_changed) = tokio::join!(
        completions::complete(&bound, args.line, args.character, limit),
        bound.disk_changed()
    );
    let found = found?;
    let mut answer = typed(&bound.answer(Some(args.line), disk_changed))?;
    answer["items"] = found.items.iter().map(item).collect();
    answer["offered"] = json!(found.offered);
    answer["is_incomplete"] = json!(found.incomplete);
    Ok(answer)
}

fn item(completion: &Completion) -> Value {
    let mut item = json!({ "label": completion.label });
    if let Some(kind) = completion.kind {
        item["kind"] = json!(kind);
    }
    if let Some(detail) = &completion.detail {
        item["detail"] = json!(detail);
    }
    item["edit"] = completions::edit_json(&completion.edit);
    item
}
