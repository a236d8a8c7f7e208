//! One live Lean server of a runtime: its client, its generation (the
//! runtime's count of the servers it started), what it was sent about each
//! document, the admission of documents into it within
//! `LEAN_BEAM_MAX_DOCUMENTS`, and the routing of its notifications.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::mpsc;

use super::docs::{Docs, route_events};
use super::document::{Doc, DocState, KnownWorker, Notice};
use super::launch::Launcher;
use crate::broker::error::{Error, Limit, MemoryKill, Result};
use crate::fifo_timer::FifoTimer;
use crate::lean_source::text::minimal_change;
use crate::lsp::{LspClient, LspError, ServerCommand, ServerEvent};
use crate::util::lock;
use crate::{log_debug, log_warn};
use lsp_types::notification::{DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument};
use lsp_types::request::Request;
use lsp_types::{
    DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams, Position,
    Range, TextDocumentContentChangeEvent, TextDocumentIdentifier, TextDocumentItem, Uri,
    VersionedTextDocumentIdentifier,
};

/// How long the worker of a document closed to make room may take to stop
/// before it is killed.
pub const WORKER_EXIT_WAIT: Duration = Duration::from_secs(5);

/// A live Lean server.
#[derive(Clone)]
pub struct LeanServer {
    pub client: Arc<LspClient>,
    pub generation: u64,
    events: mpsc::UnboundedSender<ServerEvent>,
    docs: Arc<Docs>,
    admission: Arc<Admission>,
    /// Set when this server was killed for its memory.
    memory_kill: Arc<Mutex<Option<MemoryKill>>>,
    /// The time limit of one request: one clock for every request of
    /// this server (see [`FifoTimer`]).
    request_limit: Arc<FifoTimer>,
}

/// The documents a runtime may have open in Lean at once (each one a Lean
/// worker process), and the turn that makes each opening count them and make
/// room in one step.
pub struct Admission {
    limit: usize,
    turn: tokio::sync::Mutex<()>,
}

impl Admission {
    pub fn new(limit: usize) -> Self {
        Admission {
            limit: limit.max(1),
            turn: tokio::sync::Mutex::new(()),
        }
    }
}

/// A document's turn to be opened, within the bound: held until the document
/// counts as open (see [`LeanServer::admit`]).
pub struct Admitted<'a> {
    _turn: tokio::sync::MutexGuard<'a, ()>,
}

impl LeanServer {
    /// Start a Lean server with `command` (`startup`: the time limit up to
    /// its `initialize` answer) as generation `generation`, routing its
    /// notifications to `docs`.
    pub async fn start(
        launcher: &Launcher,
        command: &ServerCommand,
        startup: Duration,
        generation: u64,
        docs: &Arc<Docs>,
        admission: &Arc<Admission>,
        request_limit: Duration,
    ) -> std::result::Result<LeanServer, LspError> {
        let (events, rx) = mpsc::unbounded_channel();
        let client = launcher.start(command, events.clone(), startup).await?;
        tokio::spawn(route_events(Arc::clone(docs), rx, generation));
        Ok(LeanServer {
            client,
            generation,
            events,
            docs: Arc::clone(docs),
            admission: Arc::clone(admission),
            memory_kill: Arc::default(),
            request_limit: Arc::new(FifoTimer::new(request_limit)),
        })
    }

    /// Send request `R` with the request time limit.
    pub async fn request_typed<R: Request>(&self, params: R::Params) -> Result<R::Result> {
        self.limited(R::METHOD, self.client.request_typed::<R>(params))
            .await
    }

    /// Send request `R`; the answer as Lean wrote it (see
    /// [`crate::lsp::LspClient::request_verbatim`]).
    pub async fn request_verbatim<R: Request>(&self, params: R::Params) -> Result<Value> {
        self.limited(R::METHOD, self.client.request_verbatim::<R>(params))
            .await
    }

    async fn limited<T>(
        &self,
        method: &'static str,
        request: impl Future<Output = std::result::Result<T, LspError>>,
    ) -> Result<T> {
        let limit = self.request_limit.start();
        tokio::select! {
            // An answer that is there wins over the limit, as with `timeout`.
            biased;
            result = request => result.map_err(|e| memory_error(self, None, Error::lsp(method, e))),
            () = limit.expired() => Err(Error::Timeout {
                method,
                limit: self.request_limit.delay(),
            }),
        }
    }

    /// Wait until every notification Lean sent before this point has been
    /// applied to the documents (see [`Docs::settle`]).
    pub async fn settle(&self) {
        self.docs.settle(&self.events).await;
    }

    /// The server was killed for its memory.
    pub fn memory_killed(&self, kill: MemoryKill) {
        *lock(&self.memory_kill) = Some(kill);
    }

    /// `textDocument/didOpen` of `doc` with `text` as `version`.
    pub fn did_open(
        &self,
        doc: &Doc,
        version: u64,
        text: &str,
    ) -> std::result::Result<(), LspError> {
        let params = DidOpenTextDocumentParams {
            text_document: TextDocumentItem {
                uri: lsp_uri(doc)?,
                language_id: "lean4".into(),
                version: lsp_version(version),
                text: text.into(),
            },
        };
        self.client.notify_typed::<DidOpenTextDocument>(params)
    }

    /// `textDocument/didChange` of `doc` from the text of `old` to `text`, as
    /// `version`: the one edit between their common prefix and suffix, so
    /// that Lean keeps what it elaborated before the first change.
    pub fn did_change(
        &self,
        doc: &Doc,
        version: u64,
        old: &DocState,
        text: &str,
    ) -> std::result::Result<(), LspError> {
        let (start, end, insert) = minimal_change(&old.text, text).expect("texts differ");
        let (sl, sc) = old.index.position(&old.text, start);
        let (el, ec) = old.index.position(&old.text, end);
        let params = DidChangeTextDocumentParams {
            text_document: VersionedTextDocumentIdentifier {
                uri: lsp_uri(doc)?,
                version: lsp_version(version),
            },
            content_changes: vec![TextDocumentContentChangeEvent {
                range: Some(Range::new(Position::new(sl, sc), Position::new(el, ec))),
                range_length: None,
                text: insert,
            }],
        };
        self.client.notify_typed::<DidChangeTextDocument>(params)
    }

    /// `textDocument/didClose` of `doc`.
    pub fn did_close(&self, doc: &Doc) -> std::result::Result<(), LspError> {
        let params = DidCloseTextDocumentParams {
            text_document: TextDocumentIdentifier { uri: lsp_uri(doc)? },
        };
        self.client.notify_typed::<DidCloseTextDocument>(params)
    }

    /// Room for `doc` to be opened in this Lean server, within
    /// `LEAN_BEAM_MAX_DOCUMENTS`. Called with the document's edit held, right
    /// before it is opened; `opening`: whether the caller just closed its last
    /// opening in this server (and whether that opening's worker was seen). The turn returned is held until the document counts
    /// as open ([`DocEdit::open`]), so that no other opening counts without
    /// it.
    ///
    /// Past the bound, the least recently used idle document is closed: idle
    /// means no call is in flight on it (no call holds it, see
    /// [`super::document::DocUse`], and its edit lock is free). Each closed
    /// document's worker is waited for (and killed after
    /// [`WORKER_EXIT_WAIT`]), as is the previous worker of a reopen when the
    /// server is at the bound, so the number of workers never goes past it.
    /// When no document is idle, a `resourceLimit` error says so.
    pub async fn admit(&self, doc: &Doc, opening: OpenKind) -> Result<Admitted<'_>> {
        let admission = &self.admission;
        let turn = admission.turn.lock().await;
        loop {
            let open: Vec<Arc<Doc>> = self
                .docs
                .all()
                .into_iter()
                .filter(|d| !std::ptr::eq(d.as_ref(), doc))
                .filter(|d| d.lifecycle().generation() == Some(self.generation))
                .collect();
            if open.len() < admission.limit {
                // The worker of the opening just closed still counts until it
                // is gone, even below the bound: the turn ends once this
                // document counts as open, and a document admitted next
                // (say a probe slot) must not run beside the exiting one.
                if let OpenKind::Reopen { worker } = opening {
                    self.wait_worker_gone(&doc.uri, worker).await;
                }
                return Ok(Admitted { _turn: turn });
            }
            let mut idle: Vec<&Arc<Doc>> = open.iter().filter(|d| d.is_idle()).collect();
            idle.sort_by_key(|d| d.last_used());
            let Some(victim) = idle.into_iter().find_map(|d| d.try_lock_edit()) else {
                return Err(Error::ResourceLimit(Limit::Documents {
                    path: doc.path.shown.clone(),
                    limit: admission.limit,
                    open: open.len(),
                }));
            };
            let worker = victim.known_worker();
            victim.clear_rpc_session();
            if victim.close(Some(self.generation)) == Some(Notice::Close) {
                let _ = self.did_close(&victim);
            }
            log_debug!(
                "closed {} (least recently used) to open {} within LEAN_BEAM_MAX_DOCUMENTS={}",
                victim.path.shown,
                doc.path.shown,
                admission.limit
            );
            self.wait_worker_gone(&victim.uri, worker).await;
        }
    }

    /// Wait (off the async runtime) until the worker of `uri` is gone: not
    /// only stopped, but no longer holding its memory (a worker that exits
    /// still shows in `/proc` while it lets go of hundreds of MiB). Lean has
    /// let go of it (the document was closed), so one that takes longer than
    /// [`WORKER_EXIT_WAIT`] is killed.
    ///
    /// Lean starts a worker some time after it reads the `didOpen`, which a
    /// call without a barrier (`lean_update`) does not wait for: a worker
    /// neither seen nor heard from since the document was opened
    /// ([`KnownWorker::Unknown`]) is first waited for to appear (for
    /// [`WORKER_EXIT_WAIT`] at most), since one not there yet is no worker
    /// gone. One that reported has started: not in the tree, it is gone (a
    /// probe slot's worker, which Lean may end before the close, cost the
    /// whole wait: `lean_close` after a batch of 2+ texts took 5-10 s). A
    /// fork of the server not yet turned into the program it runs counts as a
    /// worker being started.
    pub async fn wait_worker_gone(&self, uri: &str, worker: KnownWorker) {
        let client = Arc::clone(&self.client);
        let uri = uri.to_string();
        let mut appeared = worker != KnownWorker::Unknown;
        let worker = match worker {
            KnownWorker::Seen(seen) => Some(seen),
            KnownWorker::Reported | KnownWorker::Unknown => None,
        };
        let _ = tokio::task::spawn_blocking(move || {
            let deadline = Instant::now() + WORKER_EXIT_WAIT;
            // The worker seen: its exit ends the wait at once (a pidfd), where
            // the scans below come every 5 ms; they then confirm that nothing
            // else of the document's is left.
            if let Some(worker) = worker {
                worker.wait_exit(WORKER_EXIT_WAIT);
            }
            let mut killed = false;
            loop {
                let present = client.tree_has(&uri) || worker_starting(&client.tree_usage());
                if !present && (appeared || Instant::now() >= deadline) {
                    return;
                }
                appeared |= present;
                if present && Instant::now() >= deadline && !killed {
                    if let Some(worker) = client.find_in_tree(&uri) {
                        client.kill_in_tree(worker);
                    }
                    killed = true;
                }
                if Instant::now() >= deadline + WORKER_EXIT_WAIT {
                    log_warn!("the Lean worker of {uri} is still there after it was killed");
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
        .await;
    }
}

/// How a document comes to be opened in a Lean server (see
/// [`LeanServer::admit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenKind {
    /// Not open in this server before.
    New,
    /// The caller just closed its last opening in this server, with what is
    /// known of its worker: the room counts as free once it is gone.
    Reopen { worker: KnownWorker },
}

/// Whether a Lean server of the tree has a child that is not yet the
/// program it will run: a fork still showing the server's own command line,
/// before its `exec` (a worker being started, whose document cannot be told).
fn worker_starting(tree: &[crate::process::tree::Usage]) -> bool {
    tree.iter().any(|child| {
        child.server
            && tree
                .iter()
                .any(|parent| parent.server && parent.seen.pid == child.ppid)
    })
}

/// Stop a Lean server and its workers (killed after a grace), and wait until
/// none of them holds memory any more.
pub async fn stop(client: &Arc<LspClient>) {
    client.shutdown(Duration::from_secs(2)).await;
    let client = Arc::clone(client);
    let _ = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + WORKER_EXIT_WAIT;
        while !client.process_tree().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    })
    .await;
}

/// The error of a call whose Lean process was killed for its memory, in place
/// of the loss it saw: the server's (any call on it) or `doc`'s worker.
/// Other errors pass unchanged.
pub fn memory_error(server: &LeanServer, doc: Option<&Doc>, error: Error) -> Error {
    if !error.lost_worker() {
        return error;
    }
    let shown = |doc: &Doc| {
        let shown = doc.path.shown.as_str();
        // A probe slot is named after the document it probes.
        shown
            .split_once('#')
            .map_or(shown, |(file, _)| file)
            .to_string()
    };
    let server_kill = *lock(&server.memory_kill);
    if let Some(kill) = server_kill {
        return Error::ResourceLimit(Limit::Memory {
            kill,
            path: doc.map(shown),
        });
    }
    match doc.and_then(|d| d.lifecycle().memory_kill().map(|kill| (d, kill))) {
        Some((doc, kill)) => Error::ResourceLimit(Limit::Memory {
            kill,
            path: Some(shown(doc)),
        }),
        None => error,
    }
}

/// The document's URI as `lsp_types` holds it: the same string (it is
/// parsed, never rewritten), so Lean sees the URI the broker routes by.
fn lsp_uri(doc: &Doc) -> std::result::Result<Uri, LspError> {
    doc.uri
        .parse()
        .map_err(|e| LspError::Protocol(format!("{} is not a URI: {e:?}", doc.uri)))
}

/// A document version as LSP numbers them (`integer`); the broker's never
/// come near the bound.
fn lsp_version(version: u64) -> i32 {
    i32::try_from(version).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lean matches documents by the URI string: what `lsp_types` sends must
    /// be exactly the string the broker made (percent-encoding included).
    #[test]
    fn uris_reach_lean_unchanged() {
        for uri in [
            "file:///work/Fix/Basic.lean",
            "file:///tmp/a%20b/Caf%C3%A9.lean",
            "file:///w/%E2%88%80x/.beam-shadow-1.Basic.lean",
        ] {
            let parsed: Uri = uri.parse().unwrap();
            assert_eq!(serde_json::to_value(&parsed).unwrap(), Value::from(uri));
        }
    }
}
