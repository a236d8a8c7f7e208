//! `lean_handle_edit`: the text edit that writes a handle's chain into the
//! version of the file it was cut from (computed in `broker::handle_edit`).
//! Nothing is written: the client applies the edit, then syncs.

use super::Answer;
use super::completions::text_edit;
use super::speculate::handle_runtime;
use crate::broker::Broker;
use crate::broker::completions::Edit;
use crate::broker::handle_edit::{Replaced, chain_edit};
use crate::broker::handles::{HandleStore, Taking};
use crate::broker::{snapshot, sync};
use crate::results::{DocHead, HandleEditResult, Placeholder};
use crate::surface::Workspace;

pub async fn handle_edit(
    broker: &Broker,
    ws: &Workspace,
    path: &str,
    handle: &str,
) -> Answer<HandleEditResult> {
    let (rt, doc_path) = handle_runtime(broker, ws, path, handle)?;
    rt.record_request();
    let doc = rt
        .existing_doc(&doc_path)
        .filter(|doc| doc.state().version != 0)
        .ok_or_else(|| snapshot::never_synced(&doc_path.shown))?;
    let state = rt.handles.take(handle, Taking::Keep)?;
    // Never starts Lean: without the live server that ran the chain the
    // handle is stale, and generations start at 1, so 0 says so.
    let generation = rt
        .server_if_running()
        .await
        .map_or(0, |server| server.generation);
    let doc_state = doc.state();
    // The edit is about the text the handle was cut from: that version must
    // still be the document's, in the session that ran the chain.
    HandleStore::check_current(
        handle,
        &state,
        &doc_path.file,
        doc_state.version,
        generation,
    )?;
    let text = &doc_state.text;
    let edit = chain_edit(text, &state);
    let disk_changed = sync::disk_changed(&doc, &doc_state).await;
    Ok(HandleEditResult {
        head: DocHead {
            workspace: rt.root.descriptor(),
            path: doc.path.shown.clone(),
            version: doc_state.version,
            line_text: None,
            disk_changed,
        },
        edit: text_edit(Edit {
            start: doc_state.index.position(text, edit.start),
            end: doc_state.index.position(text, edit.end),
            new_text: edit.new_text,
        }),
        replaces: edit.replaced.map(|kind| match kind {
            Replaced::Sorry => Placeholder::Sorry,
            Replaced::Hole => Placeholder::Hole,
        }),
    })
}
