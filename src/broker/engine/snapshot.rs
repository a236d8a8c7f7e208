//! Snapshot binding: a snapshot-bound call names the document version it was
//! computed for, and every answer is tied to that version.

use lsp_types::{Position, TextDocumentIdentifier, TextDocumentPositionParams, Uri};
use serde_json::Value;

use super::document::{DiskStamp, Doc, DocState, DocUse, Snapshot};
use super::edit;
use super::forward::Forwarder;
use super::runtime::RuntimeUse;
use super::server::LeanServer;
use super::sync;
use super::wait::Wait;
use super::workspace::Resolved;
use crate::broker::engine::runtimes::Runtimes;
use crate::broker::error::{Error, Result};
use crate::broker::progress::ProgressSink;
use crate::lean_source::text::PositionError;
use crate::lsp::protocol::{DocumentPositionParams, TextDocumentId};
use lsp_types::request::Request;

/// A document pinned at the version a call named, open in a live Lean server.
pub struct Bound<'c> {
    pub rt: RuntimeUse,
    pub doc: DocUse,
    pub state: DocState,
    pub server: LeanServer,
    /// The call: its waits on Lean forward the file's progress.
    pub sink: &'c dyn ProgressSink,
    /// The file on disk as resolving the call's path found it.
    seen: Option<DiskStamp>,
    /// What Lean had reported of the document when the call pinned it.
    reported: Snapshot,
}

impl Bound<'_> {
    /// The header failure Lean reported for the pinned version, if any: an
    /// import that does not load, or Lake's set-up of the imports failing.
    /// Lean then answers "no goals" anywhere in the file. Read from the
    /// report as it was when the call pinned the version (a synced
    /// version's final one), else from the live one: a reopened worker
    /// (Lean's fatal report needs one before it answers anything) clears
    /// the diagnostics before it publishes the header's errors again.
    pub fn header_failure(&self) -> Option<Error> {
        let version = self.state.version;
        let text = &*self.state.text;
        [&self.reported, &self.doc.snapshot()]
            .into_iter()
            .filter(|snap| snap.version == version)
            .find_map(|snap| {
                let error = super::snippet_docs::header_errors(snap, text).next()?;
                Some(Error::HeaderFailed {
                    path: self.doc.path.shown.clone(),
                    version,
                    import: super::snippet_docs::failed_import(text, error),
                    message: error.message.clone(),
                })
            })
    }
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

impl Runtimes {
    /// Resolve the workspace and path of a snapshot-bound call and pin
    /// `version`. The runtime must exist and the document must have been
    /// synced; neither is created here.
    pub(crate) async fn bind<'c>(
        &self,
        sink: &'c dyn ProgressSink,
        workspace: &str,
        path: &str,
        version: u64,
    ) -> Result<Bound<'c>> {
        bind(self, sink, workspace, path, version).await
    }
}

async fn bind<'c>(
    broker: &Runtimes,
    sink: &'c dyn ProgressSink,
    workspace: &str,
    path: &str,
    version: u64,
) -> Result<Bound<'c>> {
    let Resolved {
        root,
        doc: doc_path,
        seen,
    } = broker.resolve_document(workspace, path)?;
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
    let reported = doc.snapshot();
    let server = rt.server().await?;
    let state = ensure_open(&server, &doc, version).await?;
    Ok(Bound {
        rt,
        doc,
        state,
        server,
        sink,
        seen: seen.as_ref().map(DiskStamp::of),
        reported,
    })
}

/// Reopen the pinned snapshot's text if Lean lost it (restart, crash, close):
/// the version and the text stay those of the snapshot.
async fn ensure_open(server: &LeanServer, doc: &Doc, version: u64) -> Result<DocState> {
    let state = doc.state();
    if state.lifecycle.is_open_in(server.generation) {
        return Ok(state);
    }
    let edit = doc.lock_edit().await;
    edit::reopen(server, &edit, version).await
}

/// A document pinned at a version, for requests whose answers must belong to
/// that version (user documents and shadow documents alike).
pub struct Target<'a> {
    pub server: &'a LeanServer,
    pub doc: &'a Doc,
    pub version: u64,
    /// The call whose progress shows the document elaborating while Lean
    /// holds a request until it reaches the position (user documents only).
    pub sink: Option<&'a dyn ProgressSink>,
}

impl Target<'_> {
    /// Send request `R` about the pinned version and return Lean's answer as
    /// Lean wrote it (for answers handed on whole); the answer is refused
    /// if the document moved on meanwhile (Lean answers from whatever it
    /// has).
    pub async fn request_verbatim<R: Request>(&self, params: R::Params) -> Result<Value> {
        let answer = self
            .waiting(self.server.request_verbatim::<R>(params))
            .await?;
        self.still_pinned()?;
        Ok(answer)
    }

    /// The document is still at the pinned version.
    fn still_pinned(&self) -> Result<()> {
        let now = self.doc.state().version;
        if now != self.version {
            return Err(version_mismatch(self.doc, self.version, now));
        }
        Ok(())
    }

    /// Send request `R` about the document and check that it was not edited
    /// meanwhile (as [`Target::request_verbatim`]).
    pub async fn request_typed<R: Request>(&self, params: R::Params) -> Result<R::Result> {
        let answer = self.request_unchecked_typed::<R>(params).await?;
        self.still_pinned()?;
        Ok(answer)
    }

    /// Send request `R` about the document, without the version check. A
    /// worker that stops meanwhile does not leave the call hanging (see
    /// [`Wait`]).
    pub async fn request_unchecked_typed<R: Request>(
        &self,
        params: R::Params,
    ) -> Result<R::Result> {
        self.waiting(self.server.request_typed::<R>(params)).await
    }

    /// Wait for `request`; a worker that stops meanwhile does not leave the
    /// call hanging (see [`Wait`]).
    async fn waiting<T>(&self, request: impl Future<Output = Result<T>>) -> Result<T> {
        let mut progress = self
            .sink
            .map(|sink| Forwarder::for_wait(sink, self.doc, self.version));
        Wait::new(self.server, self.doc, self.version)
            .forwarding(progress.as_mut())
            .answer(request)
            .await
    }

    /// The document as Lean's own requests name it (the URI string).
    pub fn document(&self) -> TextDocumentId {
        TextDocumentId {
            uri: self.doc.uri.clone(),
        }
    }

    /// A position of the document as Lean's own requests take it.
    pub fn lean_position(&self, line: u64, character: u64) -> DocumentPositionParams {
        DocumentPositionParams::new(self.doc.uri.clone(), line as u32, character as u32)
    }

    /// The document as `lsp_types` requests name it: the same URI string,
    /// parsed, never rewritten.
    pub fn identifier(&self) -> Result<TextDocumentIdentifier> {
        let uri = self
            .doc
            .uri
            .parse::<Uri>()
            .map_err(|e| Error::Unexpected(format!("{} is not a URI: {e:?}", self.doc.uri)))?;
        Ok(TextDocumentIdentifier { uri })
    }

    /// A position of the document as `lsp_types` requests take it.
    pub fn position(&self, line: u64, character: u64) -> Result<TextDocumentPositionParams> {
        Ok(TextDocumentPositionParams {
            text_document: self.identifier()?,
            position: Position::new(line as u32, character as u32),
        })
    }
}

impl Bound<'_> {
    pub fn target(&self) -> Target<'_> {
        Target {
            server: &self.server,
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

    /// Whether the file changed on disk since the pinned version was read:
    /// told from the metadata that resolving the call's path read a moment
    /// ago (no second `stat`, no trip to the blocking pool: about 30 us of a
    /// hover's time on two cores), else by a `stat` now.
    pub async fn disk_changed(&self) -> bool {
        if let (Some(seen), Some(read)) = (self.seen, self.state.disk) {
            return seen != read;
        }
        sync::disk_changed(&self.doc, &self.state).await
    }

    /// [`Target::request_verbatim`] about the pinned version.
    pub async fn request_verbatim<R: Request>(&self, params: R::Params) -> Result<Value> {
        self.target().request_verbatim::<R>(params).await
    }

    /// [`Target::request_typed`] about the pinned version.
    pub async fn request_typed<R: Request>(&self, params: R::Params) -> Result<R::Result> {
        self.target().request_typed::<R>(params).await
    }

    /// See [`Target::identifier`].
    pub fn identifier(&self) -> Result<TextDocumentIdentifier> {
        self.target().identifier()
    }

    /// See [`Target::position`].
    pub fn position(&self, line: u64, character: u64) -> Result<TextDocumentPositionParams> {
        self.target().position(line, character)
    }

    /// See [`Target::lean_position`].
    pub fn lean_position(&self, line: u64, character: u64) -> DocumentPositionParams {
        self.target().lean_position(line, character)
    }
}
