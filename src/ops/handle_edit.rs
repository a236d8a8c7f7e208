//! `lean_handle_edit`: the text edit that writes a handle's chain into the
//! version of the file it was cut from (computed in `broker::handle_edit`).
//! Nothing is written: the client applies the edit, then syncs.

use super::Answer;
use super::completions::text_edit;
use crate::broker::{Broker, Replaced};
use crate::results::{DocHead, HandleEditResult, Placeholder};
use crate::surface::Workspace;

pub async fn handle_edit(
    broker: &Broker,
    ws: &Workspace,
    path: &str,
    handle: &str,
) -> Answer<HandleEditResult> {
    let found = broker.handle_edit(&ws.root, path, handle).await?;
    Ok(HandleEditResult {
        head: DocHead {
            workspace: found.origin.workspace,
            path: found.origin.path,
            version: found.origin.version,
            line_text: None,
            disk_changed: found.disk_changed,
        },
        edit: text_edit(found.edit),
        replaces: found.replaced.map(|kind| match kind {
            Replaced::Sorry => Placeholder::Sorry,
            Replaced::Hole => Placeholder::Hole,
        }),
    })
}
