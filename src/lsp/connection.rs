//! One JSON-RPC connection to a language server, shared by the
//! [`LspClient`] and the tasks that keep it: sending requests and
//! notifications, acting on what the server sends, and finishing once the
//! peer is gone. It runs over the pipes of a [`Process`] or over any byte
//! stream ([`Peer::Stream`]: an in-process server, see `lsp::testing`); the
//! process, when there is one, is only stopped from here.
//!
//! [`LspClient`]: super::LspClient

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use lsp_types::notification::{Cancel, Notification};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use super::error::LspError;
use super::incoming::{Received, classify};
use super::outgoing::{
    Frame, OUTGOING_QUEUE, Outgoing, SendError, Sink, Wire, trace_frame, value_params,
};
use super::pending::{PendingGuard, PendingTable};
use super::process::Process;
use super::server::{ExitInfo, ServerEvent};
use crate::util::lock;
use crate::{log_debug, log_warn};

/// How much of the server's stderr is kept (the tail).
pub const STDERR_TAIL_BYTES: usize = 64 * 1024;

/// Counters of one client, for stats and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClientStats {
    /// Requests sent (including `initialize` and `shutdown`).
    pub requests: u64,
    /// Requests still waiting for their answer.
    pub pending: usize,
    /// `$/cancelRequest`s sent for dropped requests.
    pub cancels_sent: u64,
    /// Server → client requests answered (with `null`).
    pub server_requests_answered: u64,
    /// Notifications received from the server.
    pub notifications: u64,
}

/// What is at the other end of a connection, and how it is stopped.
pub(super) enum Peer {
    /// A server process: stopped by killing its group.
    Process(Arc<Process>),
    /// A byte stream: stopped by closing it; `stopped` tells the reader to
    /// stop reading.
    Stream { stopped: watch::Sender<bool> },
}

/// One server connection, shared by the client and its tasks.
pub(super) struct Connection {
    /// Program name, for messages.
    program: String,
    peer: Peer,
    next_id: AtomicI64,
    outgoing: Sink,
    pending: PendingTable,
    stderr_tail: Mutex<Vec<u8>>,
    events: mpsc::UnboundedSender<ServerEvent>,
    /// `Some` once the peer is gone (the process reaped) and the client finalized.
    exit: watch::Sender<Option<ExitInfo>>,
    /// Set once the peer was stopped (kill, shutdown, drop, a dead
    /// connection, the process reaped).
    killed: AtomicBool,
    shutdown_started: AtomicBool,
    init_result: OnceLock<Value>,
    cancels_sent: AtomicU64,
    server_requests: AtomicU64,
    notifications: AtomicU64,
}

impl Connection {
    pub(super) fn new(
        program: String,
        peer: Peer,
        input: Wire,
        events: mpsc::UnboundedSender<ServerEvent>,
    ) -> Self {
        Connection {
            program,
            peer,
            next_id: AtomicI64::new(1),
            outgoing: Sink::new(input),
            pending: PendingTable::default(),
            stderr_tail: Mutex::new(Vec::new()),
            events,
            exit: watch::Sender::new(None),
            killed: AtomicBool::new(false),
            shutdown_started: AtomicBool::new(false),
            init_result: OnceLock::new(),
            cancels_sent: AtomicU64::new(0),
            server_requests: AtomicU64::new(0),
            notifications: AtomicU64::new(0),
        }
    }

    /// The program's name, for messages.
    pub(super) fn program(&self) -> &str {
        &self.program
    }

    /// The server's process, when the peer is one.
    pub(super) fn process(&self) -> Option<&Arc<Process>> {
        match &self.peer {
            Peer::Process(process) => Some(process),
            Peer::Stream { .. } => None,
        }
    }

    /// The pid shown in the frame trace and logs (0 for a stream).
    pub(super) fn pid(&self) -> u32 {
        self.process().map_or(0, |p| p.pid())
    }

    /// Resolves once the peer is stopped (at once for one stopped already).
    pub(super) async fn stopped(&self) {
        match &self.peer {
            Peer::Stream { stopped } => {
                let _ = stopped.subscribe().wait_for(|s| *s).await;
            }
            Peer::Process(_) => std::future::pending().await,
        }
    }

    /// `false` once the process was killed, has exited, or the connection broke.
    pub(super) fn is_alive(&self) -> bool {
        !self.killed.load(Ordering::Acquire) && self.pending.is_open()
    }

    /// `true` for the first caller only.
    pub(super) fn begin_shutdown(&self) -> bool {
        !self.shutdown_started.swap(true, Ordering::AcqRel)
    }

    pub(super) fn set_initialize_result(&self, result: Value) {
        let _ = self.init_result.set(result);
    }

    pub(super) fn initialize_result(&self) -> &Value {
        self.init_result.get().unwrap_or(&Value::Null)
    }

    pub(super) fn stats(&self) -> ClientStats {
        ClientStats {
            requests: (self.next_id.load(Ordering::Relaxed) - 1).max(0) as u64,
            pending: self.pending.len(),
            cancels_sent: self.cancels_sent.load(Ordering::Relaxed),
            server_requests_answered: self.server_requests.load(Ordering::Relaxed),
            notifications: self.notifications.load(Ordering::Relaxed),
        }
    }

    /// The last bytes the server wrote to stderr (lossy UTF-8).
    pub(super) fn stderr_tail(&self) -> String {
        String::from_utf8_lossy(&lock(&self.stderr_tail)).into_owned()
    }

    /// Keep `bytes` of stderr, dropping what falls out of the last
    /// [`STDERR_TAIL_BYTES`].
    pub(super) fn append_stderr(&self, bytes: &[u8]) {
        let mut tail = lock(&self.stderr_tail);
        tail.extend_from_slice(bytes);
        if tail.len() > STDERR_TAIL_BYTES {
            let excess = tail.len() - STDERR_TAIL_BYTES;
            tail.drain(..excess);
        }
    }

    /// How the process ended, once it has (and has been reaped).
    pub(super) fn exit_info(&self) -> Option<ExitInfo> {
        self.exit.borrow().clone()
    }

    /// Finish the frames the pipe had no room for, in order, as it drains;
    /// returns at the process's exit or when a write fails.
    pub(super) async fn drain_until_exit(&self) {
        let mut exit = self.exit.subscribe();
        let result = tokio::select! {
            biased;
            result = self.outgoing.drain_forever() => result,
            _ = exit.wait_for(|e| e.is_some()) => return,
        };
        if let Err(e) = result {
            self.write_failed(&e);
        }
    }

    /// The process was reaped (see [`Process::reaped`]): the server is gone,
    /// so nothing new can start.
    pub(super) fn reaped(&self) {
        self.killed.store(true, Ordering::Release);
        if let Some(process) = self.process() {
            process.reaped();
        }
    }

    /// The end: every request, waiting or new, fails with `Exited`, and the
    /// last event is sent.
    pub(super) fn finish(&self, info: ExitInfo) {
        self.pending.finish(&LspError::Exited(info.clone()));
        self.exit.send_replace(Some(info.clone()));
        let _ = self.events.send(ServerEvent::Exited(info));
    }

    pub(super) async fn request(&self, method: &str, params: Value) -> Result<Value, LspError> {
        let (id, frame) = self.encode_request(method, value_params(&params))?;
        drop(params);
        self.send_request(id, frame).await
    }

    /// A new request id and the request's frame.
    pub(super) fn encode_request<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(i64, Frame), LspError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        Ok((id, Outgoing::request(id, method, params).encode()?))
    }

    /// Send request `id` and await its answer.
    pub(super) async fn send_request(&self, id: i64, frame: Frame) -> Result<Value, LspError> {
        let answer = self.pending.register(id)?;
        let mut guard = PendingGuard::new(&self.pending, id, |id| self.cancel(id));
        // If the write failed the connection is dying: the waiter task will fail
        // the pending entry with `Exited`, so keep waiting for that.
        if self.write_unbounded(frame).is_ok() {
            guard.sent();
        }
        let answer = answer.await;
        guard.answered();
        match answer {
            Ok(answer) => answer,
            Err(_) => Err(self.closed_error()),
        }
    }

    /// `$/cancelRequest` for a request whose caller gave up.
    fn cancel(&self, id: i64) {
        log_debug!("cancelling request {id} to {}", self.program);
        let params = json!({ "id": id });
        if self
            .send_notification(Cancel::METHOD, Some(&params))
            .is_ok()
        {
            self.cancels_sent.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(super) fn notify(&self, method: &str, params: Value) -> Result<(), LspError> {
        self.send_notification(method, value_params(&params))
    }

    pub(super) fn send_notification<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), LspError> {
        if let Some(e) = self.pending.closed() {
            return Err(e);
        }
        let frame = Outgoing::notification(method, params).encode()?;
        self.write(frame)
    }

    /// Write one frame now, or queue it while fewer than [`OUTGOING_QUEUE`]
    /// wait (see [`Sink::send`]). A broken pipe kills the server: the waiter
    /// then reports its exit.
    fn write(&self, frame: Frame) -> Result<(), LspError> {
        trace_frame(self.pid(), "->", frame.rest());
        let sent = self.outgoing.send(frame);
        self.after_send(sent)
    }

    /// [`Connection::write`] for a request: never refused for a full queue.
    fn write_unbounded(&self, frame: Frame) -> Result<(), LspError> {
        trace_frame(self.pid(), "->", frame.rest());
        let sent = self.outgoing.send_unbounded(frame);
        self.after_send(sent)
    }

    /// What a send's outcome means for the caller and the connection.
    fn after_send(&self, sent: Result<(), SendError>) -> Result<(), LspError> {
        match sent {
            Ok(()) => Ok(()),
            Err(SendError::Full) => Err(LspError::Io(format!(
                "outgoing queue to `{}` is full ({OUTGOING_QUEUE} messages): the server is not reading",
                self.program
            ))),
            Err(SendError::Closed) => Err(self.closed_error()),
            Err(SendError::Io(e)) => {
                self.write_failed(&e);
                Err(self.closed_error())
            }
        }
    }

    fn write_failed(&self, e: &std::io::Error) {
        // EPIPE after the server died is expected; the waiter reports the exit.
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            log_debug!("stdin of {} closed: {e}", self.program);
        } else {
            log_warn!("writing to {} failed: {e}", self.program);
        }
        self.stop_peer();
    }

    fn closed_error(&self) -> LspError {
        if let Some(e) = self.pending.closed() {
            return e;
        }
        match self.exit.borrow().clone() {
            Some(info) => LspError::Exited(info),
            None => LspError::Io(format!("connection to `{}` closed", self.program)),
        }
    }

    pub(super) async fn wait_exit(&self) -> ExitInfo {
        let mut rx = self.exit.subscribe();
        let info = rx
            .wait_for(|e| e.is_some())
            .await
            .ok()
            .and_then(|e| e.clone());
        info.unwrap_or_default()
    }

    /// [`Self::stop_peer`], and for a process every process of its tree too
    /// (blocking: a scan of `/proc`).
    pub(super) fn kill_tree(&self) {
        self.stop_peer();
        if let Some(process) = self.process() {
            process.kill_tree();
        }
    }

    /// [`Connection::kill_tree`] without the scan of `/proc` (see
    /// [`Process::kill_tree_walked`]).
    pub(super) fn kill_tree_walked(&self) {
        match &self.peer {
            // The walk comes before the group kill: see `kill_tree_walked`.
            Peer::Process(process) => {
                self.killed.store(true, Ordering::Release);
                process.kill_tree_walked();
            }
            Peer::Stream { .. } => self.stop_peer(),
        }
    }

    /// Stop the peer: SIGKILL a process's group, close a stream.
    pub(super) fn stop_peer(&self) {
        self.killed.store(true, Ordering::Release);
        match &self.peer {
            Peer::Process(process) => process.kill_group(),
            Peer::Stream { stopped } => {
                self.outgoing.close();
                stopped.send_replace(true);
            }
        }
    }

    /// The connection is unusable (garbled input, stdout closed): fail what is
    /// pending with `err` and kill the process; the waiter then finalizes.
    pub(super) fn connection_broken(&self, err: LspError) {
        self.pending.break_off(&err);
        self.stop_peer();
    }

    /// Act on one frame from the server. `Err` when the server broke the
    /// protocol.
    pub(super) fn dispatch(&self, body: &[u8]) -> Result<(), String> {
        trace_frame(self.pid(), "<-", body);
        match classify(body)? {
            Received::Notification(event) => {
                self.notifications.fetch_add(1, Ordering::Relaxed);
                let _ = self.events.send(event);
            }
            Received::MalformedNotification { method, problem } => {
                self.notifications.fetch_add(1, Ordering::Relaxed);
                log_warn!(
                    "dropped a malformed {method} from {}: {problem}",
                    self.program
                );
            }
            Received::Request { method, id } => {
                // A server → client request: we support none beyond acknowledging.
                log_debug!("answering server request {method} with null");
                let reply = json!({ "jsonrpc": "2.0", "id": id, "result": null });
                let frame = Frame::encode(&reply).map_err(|e| e.to_string())?;
                match self.write(frame) {
                    Ok(()) => {
                        self.server_requests.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => log_warn!("cannot answer server request {method}: {e}"),
                }
            }
            Received::Answer { id, answer } => {
                if !self.pending.answer(id, answer) {
                    log_debug!("discarding answer to forgotten request {id}");
                }
            }
            Received::ForeignAnswer(id) => {
                log_warn!("answer with foreign id {id} from {}", self.program);
            }
            Received::PeerError { code, message } => {
                log_warn!("{} reported error {code}: {message}", self.program);
            }
        }
        Ok(())
    }
}
