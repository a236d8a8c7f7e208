//! Snapshot binding: a snapshot-bound call names the document version it was
//! computed for, and every answer is tied to that version.

use serde_json::{Value, json};

use super::document::{Doc, DocState, DocUse, Snapshot};
use super::runtime::{Runtime, RuntimeUse, Session, memory_error};
use super::sync::{self, Forwarder, STOPPED_WORKER_GRACE, worker_stopped};
use super::text::PositionError;
use crate::broker::Broker;
use crate::context::CallContext;
use crate::surface::{ErrorCode, ToolError, Workspace};

/// A document pinned at the version a call named, open in a live Lean server.
pub struct Bound<'c> {
    pub rt: RuntimeUse,
    pub doc: DocUse,
    pub state: DocState,
    pub session: Session,
    /// The call: its waits on Lean forward the file's progress.
    pub ctx: &'c CallContext,
}

pub fn version_mismatch(doc: &Doc, expected: u64, current: u64) -> ToolError {
    ToolError::new(
        ErrorCode::ContentModified,
        mismatch_message(&doc.path.shown, expected, current),
    )
    .with_data(json!({
        "reason": "versionMismatch",
        "path": doc.path.shown,
        "expected": expected,
        "current": current,
    }))
}

/// Versions count up from 1 per document, so one above the current was never
/// returned (a typo or another document's version), and one below it is stale.
fn mismatch_message(path: &str, expected: u64, current: u64) -> String {
    if expected > current {
        format!(
            "{path} has no version {expected}: this server never returned that version for it (the latest is {current}). Pass the version lean_update or lean_sync returned for this file"
        )
    } else {
        format!(
            "{path} is at version {current}, not {expected}: the file changed since that version was returned. Call lean_update or lean_sync and retry with the version it returns"
        )
    }
}

pub fn never_synced(path: &str) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidParams,
        format!("{path} has not been synced in this workspace: call lean_sync (or lean_update) on it first and pass the version it returns"),
    )
    .with_data(json!({ "reason": "notSynced", "path": path }))
}

/// A position that names no place of the document; `line_text` is the text
/// of its line when the line exists.
pub fn position_error(error: &PositionError, line_text: Option<&str>) -> ToolError {
    let mut data = match error {
        PositionError::LineOutOfRange { line, line_count } => {
            json!({ "reason": "lineOutOfRange", "line": line, "lineCount": line_count })
        }
        PositionError::CharacterOutOfRange {
            line,
            character,
            line_length,
        } => json!({
            "reason": "characterOutOfRange", "line": line, "character": character, "lineLength": line_length,
        }),
        PositionError::InsideSurrogatePair { line, character } => {
            json!({ "reason": "insideSurrogatePair", "line": line, "character": character })
        }
    };
    if let Some(text) = line_text {
        data["line_text"] = Value::from(text);
    }
    ToolError::new(
        ErrorCode::InvalidParams,
        format!("position outside the document: {error}"),
    )
    .with_data(data)
}

/// Resolve the workspace and path of a snapshot-bound call and pin `version`.
/// The runtime must exist and the document must have been synced; neither is
/// created here.
pub async fn bind<'c>(
    broker: &Broker,
    ctx: &'c CallContext,
    workspace: &Workspace,
    path: &str,
    version: u64,
) -> Result<Bound<'c>, ToolError> {
    let (root, doc_path) = broker.resolve_document(workspace, path)?;
    let rt = broker
        .cached(&root)
        .ok_or_else(|| never_synced(&doc_path.shown))?;
    rt.record_request();
    let doc = rt
        .existing_doc(&doc_path)
        .ok_or_else(|| never_synced(&doc_path.shown))?;
    let current = doc.state();
    if current.version == 0 {
        return Err(never_synced(&doc_path.shown));
    }
    if current.version != version {
        return Err(version_mismatch(&doc, version, current.version));
    }
    let session = rt.session().await?;
    let state = ensure_open(&session, &doc, version).await?;
    Ok(Bound {
        rt,
        doc,
        state,
        session,
        ctx,
    })
}

/// Reopen the pinned snapshot's text if Lean lost it (restart, crash, close):
/// the version and the text stay those of the snapshot.
async fn ensure_open(session: &Session, doc: &Doc, version: u64) -> Result<DocState, ToolError> {
    let state = doc.state();
    if state.open_in == Some(session.generation) && !state.needs_reopen {
        return Ok(state);
    }
    let _edit = doc.edit.lock().await;
    let state = doc.state();
    if state.version != version {
        return Err(version_mismatch(doc, version, state.version));
    }
    if state.open_in == Some(session.generation) && !state.needs_reopen {
        return Ok(state);
    }
    super::sync::make_room(session, doc, &state).await?;
    doc.update_state(|s| {
        s.open_in = Some(session.generation);
        s.needs_reopen = false;
        s.stopped_by_report = false;
        s.unsettle();
        s.worker = None;
    });
    doc.reset_report(version);
    doc.clear_rpc_session();
    session
        .client
        .notify(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": doc.uri, "languageId": "lean4", "version": version, "text": &*state.text } }),
        )
        .map_err(|e| super::errors::from_lsp(e, "textDocument/didOpen"))?;
    Ok(doc.state())
}

/// A document pinned at a version, for requests whose answers must belong to
/// that version (user documents and shadow documents alike).
pub struct Target<'a> {
    pub rt: &'a Runtime,
    pub session: &'a Session,
    pub doc: &'a Doc,
    pub version: u64,
    /// The call whose progress shows the document elaborating while Lean
    /// holds a request until it reaches the position (user documents only).
    pub ctx: Option<&'a CallContext>,
}

impl Target<'_> {
    /// Ask Lean about the pinned version; the answer is refused if the document
    /// moved on meanwhile (Lean answers from whatever it has).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ToolError> {
        let answer = self.request_unchecked(method, params).await?;
        let now = self.doc.state().version;
        if now != self.version {
            return Err(version_mismatch(self.doc, self.version, now));
        }
        Ok(answer)
    }

    /// Ask Lean about the document, without the version check of `request`.
    /// A worker that stops meanwhile does not leave the call hanging: Lean
    /// reports the file fatal and holds its requests until it is reopened, so
    /// after a short grace the call fails (workerCrashed) and the document is
    /// marked for reopening by the next request.
    pub async fn request_unchecked(&self, method: &str, params: Value) -> Result<Value, ToolError> {
        let mut live = self.doc.subscribe();
        let fatal = |snap: &Snapshot| snap.version == self.version && snap.progress.fatal;
        let mut snap = live.borrow_and_update().clone();
        let mut stopped = fatal(&snap).then(tokio::time::Instant::now);
        let sent = self.doc.state().sent;
        let mut progress = self
            .ctx
            .map(|ctx| Forwarder::for_wait(ctx, self.doc, self.version));
        if let Some(forwarder) = progress.as_mut() {
            forwarder.observe(&snap).await;
        }
        let call = self.rt.request(self.session, method, params);
        tokio::pin!(call);
        loop {
            let give_up = stopped.map(|since| since + STOPPED_WORKER_GRACE);
            let progress_due = progress.as_ref().and_then(|f| f.progress_due(&snap));
            tokio::select! {
                answer = &mut call => {
                    if answer.as_ref().is_err_and(|e| matches!(e.code, ErrorCode::WorkerCrashed | ErrorCode::WorkerExited)) {
                        self.doc.on_crash_of(sent);
                    }
                    return answer.map_err(|e| memory_error(self.session, Some(self.doc), e));
                }
                changed = live.changed() => {
                    if changed.is_err() {
                        return (&mut call).await;
                    }
                    snap = live.borrow_and_update().clone();
                    stopped = if fatal(&snap) {
                        stopped.or_else(|| Some(tokio::time::Instant::now()))
                    } else {
                        None
                    };
                    if let Some(forwarder) = progress.as_mut() {
                        forwarder.observe(&snap).await;
                    }
                }
                () = tokio::time::sleep_until(progress_due.unwrap_or_else(tokio::time::Instant::now)), if progress_due.is_some() => {
                    if let Some(forwarder) = progress.as_mut() {
                        forwarder.observe(&snap).await;
                    }
                }
                () = tokio::time::sleep_until(give_up.unwrap_or_else(tokio::time::Instant::now)), if give_up.is_some() => {
                    return Err(memory_error(self.session, Some(self.doc), worker_stopped(self.doc, self.version)));
                }
            }
        }
    }

    pub fn text_document(&self) -> Value {
        json!({ "uri": self.doc.uri })
    }

    pub fn position_params(&self, line: u64, character: u64) -> Value {
        json!({ "textDocument": self.text_document(), "position": { "line": line, "character": character } })
    }
}

impl Bound<'_> {
    pub fn target(&self) -> Target<'_> {
        Target {
            rt: &self.rt,
            session: &self.session,
            doc: &self.doc,
            version: self.state.version,
            ctx: Some(self.ctx),
        }
    }

    /// Check that `(line, character)` names a place in the pinned text.
    pub fn check_position(&self, line: u64, character: u64) -> Result<usize, ToolError> {
        self.state
            .index
            .offset(&self.state.text, line, character)
            .map_err(|e| position_error(&e, self.line_text(line)))
    }

    /// The text of `line` of the pinned version, without its line break.
    pub fn line_text(&self, line: u64) -> Option<&str> {
        self.state.index.line_text(&self.state.text, line)
    }

    /// Whether the file changed on disk since the pinned version was read.
    pub async fn disk_changed(&self) -> bool {
        sync::disk_changed(&self.doc, &self.state).await
    }

    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ToolError> {
        self.target().request(method, params).await
    }

    pub fn text_document(&self) -> Value {
        self.target().text_document()
    }

    pub fn position_params(&self, line: u64, character: u64) -> Value {
        self.target().position_params(line, character)
    }
}

#[cfg(test)]
mod tests {
    use super::mismatch_message;

    #[test]
    fn a_version_above_the_latest_is_called_never_returned() {
        let future = mismatch_message("Fix/Goals.lean", 7, 2);
        assert!(future.contains("never returned"), "{future}");
        assert!(!future.contains("changed since"), "{future}");
        assert!(future.contains("lean_update or lean_sync"), "{future}");
        let stale = mismatch_message("Fix/Goals.lean", 1, 2);
        assert!(
            stale.contains("changed since that version was returned"),
            "{stale}"
        );
    }
}
