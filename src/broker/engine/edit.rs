//! The one way a document's text reaches Lean: open, reopen, edit in place,
//! close. Each takes the document's edit lock ([`DocEdit`]) and moves its
//! [`Lifecycle`](super::document::Lifecycle) by one event, sending the
//! notification the event returns.

use std::sync::Arc;

use super::document::{Content, DiskStamp, DocEdit, DocState, Notice};
use super::server::{Admitted, LeanServer, OpenKind};
use crate::broker::ask::EditMode;
use crate::broker::error::{Error, Result};

/// What `apply` did.
#[derive(Debug, Clone, Copy)]
pub struct Applied {
    pub version: u64,
    pub changed: bool,
    /// Lean was sent an edit or a (re)open.
    pub sent: bool,
}

/// Bring Lean's copy of the document up to date with `text`, read from disk
/// as `disk` says (`None` for the broker's own documents): nothing when
/// Lean has it, an edit in place while it is open there, else a (re)open.
pub async fn apply(
    server: &LeanServer,
    edit: &DocEdit<'_>,
    text: Arc<str>,
    disk: Option<DiskStamp>,
    mode: EditMode,
) -> Result<Applied> {
    let old = edit.state();
    let open = old.lifecycle.is_open_in(server.generation);
    let differs = old.version == 0 || *old.text != *text;
    if open && !differs && mode == EditMode::IfChanged {
        // The same text: the version stands for what the disk holds now.
        edit.set_disk(disk);
        return Ok(Applied {
            version: old.version,
            changed: false,
            sent: false,
        });
    }
    let version = if differs || mode == EditMode::Reelaborate {
        old.version.max(old.floor) + 1
    } else {
        old.version
    };
    let content = Content {
        version,
        text: Arc::clone(&text),
        disk,
    };
    let notice = if open && mode == EditMode::IfChanged {
        edit.change(content)
    } else {
        edit.clear_rpc_session();
        let admitted = make_room(server, edit).await?;
        let notice = edit.open(server.generation, Some(content));
        drop(admitted);
        notice
    };
    let sent = if notice == Notice::Change {
        server.did_change(edit, version, &old, &text)
    } else {
        server.did_open(edit, version, &text)
    };
    if let Err(error) = sent {
        edit.mark_for_reopen();
        return Err(Error::lsp("textDocument/didChange", error));
    }
    Ok(Applied {
        version,
        changed: differs,
        sent: true,
    })
}

/// Open the document's current text again if Lean lost it (restart, crash,
/// close): its version and text stay those of `version`, which must still be
/// current. Returns the state it is open with.
pub async fn reopen(server: &LeanServer, edit: &DocEdit<'_>, version: u64) -> Result<DocState> {
    let state = edit.state();
    if state.version != version {
        return Err(Error::VersionMismatch {
            path: edit.path.shown.clone(),
            expected: version,
            current: state.version,
        });
    }
    if state.lifecycle.is_open_in(server.generation) {
        return Ok(state);
    }
    let admitted = make_room(server, edit).await?;
    edit.open(server.generation, None);
    drop(admitted);
    edit.clear_rpc_session();
    if let Err(error) = server.did_open(edit, version, &state.text) {
        edit.mark_for_reopen();
        return Err(Error::lsp("textDocument/didOpen", error));
    }
    Ok(edit.state())
}

/// Close the document in Lean if it is open there; `server`: the one running
/// now, if any (a dead server has closed it anyway). Whether it was open.
///
/// The room counts as free only once the worker is gone: a document opened
/// right after must not run next to the closing worker (over
/// `LEAN_BEAM_MAX_DOCUMENTS`), as at an eviction.
pub async fn close(edit: &DocEdit<'_>, server: Option<&LeanServer>) -> bool {
    let lifecycle = edit.lifecycle();
    if lifecycle.generation().is_none() {
        return false;
    }
    let worker = edit.known_worker();
    // Closed, the document has no RPC session: its keep-alive task ends
    // rather than sending keep-alives for a document Lean no longer has.
    edit.clear_rpc_session();
    if edit.close(server.map(|s| s.generation)) == Some(Notice::Close) {
        if let Some(server) = server {
            if server.did_close(edit).is_ok() {
                server.wait_worker_gone(&edit.uri, worker).await;
            }
        }
    }
    true
}

/// Before the document is (re)opened in `server`: close its current opening
/// there, if any, and make room for it within the bound on open documents
/// (see [`LeanServer::admit`]).
async fn make_room<'s>(server: &'s LeanServer, edit: &DocEdit<'_>) -> Result<Admitted<'s>> {
    let lifecycle = edit.lifecycle();
    let opening = if lifecycle.generation() == Some(server.generation) {
        OpenKind::Reopen {
            worker: edit.known_worker(),
        }
    } else {
        OpenKind::New
    };
    if edit.close(Some(server.generation)) == Some(Notice::Close) {
        if let Err(error) = server.did_close(edit) {
            edit.mark_for_reopen();
            return Err(Error::lsp("textDocument/didClose", error));
        }
    }
    server.admit(edit, opening).await
}
