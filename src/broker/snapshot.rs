//! Snapshot binding: a snapshot-bound call names the document version it was
//! computed for, and every answer is tied to that version.

use serde::Serialize;
use serde_json::{Value, json};

use super::document::{Doc, DocState, DocUse, Snapshot};
use super::error::{Error, Result};
use super::progress::ProgressSink;
use super::runtime::{Runtime, RuntimeUse, Session, memory_error};
use super::sync::{self, Forwarder, STOPPED_WORKER_GRACE, worker_stopped};
use super::text::PositionError;
use crate::broker::Broker;

/// A document pinned at the version a call named, open in a live Lean server.
pub struct Bound<'c> {
    pub rt: RuntimeUse,
    pub doc: DocUse,
    pub state: DocState,
    pub session: Session,
    /// The call: its waits on Lean forward the file's progress.
    pub sink: &'c dyn ProgressSink,
}

/// What every answer about a pinned document version names first.
#[derive(Debug, Serialize)]
pub struct DocAnswer {
    pub workspace: Value,
    pub path: String,
    pub version: u64,
    /// The addressed line, for answers at a position: an off-by-one shows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_text: Option<String>,
    /// The file changed on disk since this version was read from it: sync
    /// before trusting the answer. Left out while it has not.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disk_changed: bool,
}

pub fn version_mismatch(doc: &Doc, expected: u64, current: u64) -> Error {
    Error::VersionMismatch {
        path: doc.path.shown.clone(),
        expected,
        current,
    }
}

pub fn never_synced(path: &str) -> Error {
    Error::NeverSynced {
        path: path.to_owned(),
    }
}

/// A position that names no place of the document; `line_text` is the text
/// of its line when the line exists.
pub fn position_error(error: &PositionError, line_text: Option<&str>) -> Error {
    Error::Position {
        error: error.clone(),
        line_text: line_text.map(str::to_owned),
    }
}

/// Resolve the workspace and path of a snapshot-bound call and pin `version`.
/// The runtime must exist and the document must have been synced; neither is
/// created here.
pub async fn bind<'c>(
    broker: &Broker,
    sink: &'c dyn ProgressSink,
    workspace: &str,
    path: &str,
    version: u64,
) -> Result<Bound<'c>> {
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
        sink,
    })
}

/// Reopen the pinned snapshot's text if Lean lost it (restart, crash, close):
/// the version and the text stay those of the snapshot.
async fn ensure_open(session: &Session, doc: &Doc, version: u64) -> Result<DocState> {
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
        .map_err(|e| Error::lsp("textDocument/didOpen", e))?;
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
    pub sink: Option<&'a dyn ProgressSink>,
}

impl Target<'_> {
    /// Ask Lean about the pinned version; the answer is refused if the document
    /// moved on meanwhile (Lean answers from whatever it has).
    pub async fn request(&self, method: &'static str, params: Value) -> Result<Value> {
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
    pub async fn request_unchecked(&self, method: &'static str, params: Value) -> Result<Value> {
        let mut live = self.doc.subscribe();
        let fatal = |snap: &Snapshot| snap.version == self.version && snap.progress.fatal;
        let mut snap = live.borrow_and_update().clone();
        let mut stopped = fatal(&snap).then(tokio::time::Instant::now);
        let sent = self.doc.state().sent;
        let mut progress = self
            .sink
            .map(|sink| Forwarder::for_wait(sink, self.doc, self.version));
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
                    if answer.as_ref().is_err_and(Error::lost_worker) {
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
            sink: Some(self.sink),
        }
    }

    /// Check that `(line, character)` names a place in the pinned text.
    pub fn check_position(&self, line: u64, character: u64) -> Result<usize> {
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

    /// The head of an answer about the pinned version; `line` names the
    /// addressed line of a position-bound answer.
    pub fn answer(&self, line: Option<u64>, disk_changed: bool) -> DocAnswer {
        DocAnswer {
            workspace: self.rt.root.descriptor(),
            path: self.doc.path.shown.clone(),
            version: self.state.version,
            line_text: line.and_then(|l| self.line_text(l)).map(str::to_owned),
            disk_changed,
        }
    }

    pub async fn request(&self, method: &'static str, params: Value) -> Result<Value> {
        self.target().request(method, params).await
    }

    pub fn text_document(&self) -> Value {
        self.target().text_document()
    }

    pub fn position_params(&self, line: u64, character: u64) -> Value {
        self.target().position_params(line, character)
    }
}
