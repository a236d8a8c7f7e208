//! One language-server process and its JSON-RPC connection: the public
//! [`LspClient`] and the tasks that keep the connection (see also
//! `outgoing`, `incoming` and `pending` beside it).
//!
//! Writes go straight from the sending task into the child's stdin: the frame
//! is serialized first, then written with non-blocking writes under a lock, with
//! no await in between, so frames never interleave and a cancelled caller can
//! never leave half a frame (see `outgoing::Sink`).
//!
//! Tasks per client (all ended by the process's exit):
//! * drain — finishes the frames the pipe had no room for (only when Lean is
//!   not reading fast enough), in order;
//! * reader — parses frames from stdout, routes answers to their waiting request,
//!   answers server → client requests with `null`, forwards notifications;
//! * stderr — keeps the last [`STDERR_TAIL_BYTES`] of stderr;
//! * waiter — reaps the process, kills what is left of its tree, fails every
//!   pending request with [`LspError::Exited`] and sends [`ServerEvent::Exited`].

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use lsp_types::notification::Notification;
use lsp_types::request::Request;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::net::unix::pipe;
use tokio::sync::{mpsc, oneshot, watch};

use super::capabilities::initialize_params;
use super::incoming::{Received, classify};
use super::outgoing::{Frame, Outgoing, SendError, Sink, trace_frame, typed_params, value_params};
use super::pending::{PendingGuard, PendingTable};
use super::{ExitInfo, LeanErrorCode, LspError, ServerCommand, ServerEvent};
use crate::process::{sys, tree};
use crate::util::lock;
use crate::{log_debug, log_warn};

pub use super::outgoing::OUTGOING_QUEUE;

mod lifecycle;
use lifecycle::{drain_task, reader_task, spawn, stderr_task, waiter_task};

/// How much of the server's stderr is kept (the tail).
pub const STDERR_TAIL_BYTES: usize = 64 * 1024;

/// A running language server. Use it behind the [`Arc`] that [`LspClient::start`]
/// returns; every method takes `&self`. Dropping the last reference kills the
/// server's whole process tree (its group and its workers).
pub struct LspClient {
    shared: Arc<Shared>,
}

// The broker shares one client across tasks.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<LspClient>();
};

struct Shared {
    /// Program name, for messages.
    program: String,
    /// Pid of the server = its process group id.
    pid: u32,
    /// Marks every process of this server's tree (see [`tree`]).
    tree_token: String,
    /// Set once the tree was swept after the server was reaped.
    tree_swept: AtomicBool,
    next_id: AtomicI64,
    outgoing: Sink,
    pending: PendingTable,
    stderr_tail: Mutex<Vec<u8>>,
    events: mpsc::UnboundedSender<ServerEvent>,
    /// `Some` once the process has been reaped and the client finalized.
    exit: watch::Sender<Option<ExitInfo>>,
    /// Set once we have sent SIGKILL to the group (via kill, shutdown, drop, or a
    /// dead connection).
    killed: AtomicBool,
    /// Set after the final post-reap group kill: from then on the pgid may be
    /// reused by an unrelated process and must never be signalled again.
    group_gone: AtomicBool,
    shutdown_started: AtomicBool,
    init_result: OnceLock<Value>,
    cancels_sent: AtomicU64,
    server_requests: AtomicU64,
    notifications: AtomicU64,
}

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

impl LspClient {
    /// Spawn the server and run the LSP `initialize` handshake.
    ///
    /// The process runs in its own process group with stdin/stdout piped (never our
    /// stdout: that is the MCP stream) and stderr piped into a bounded tail; on Linux
    /// it gets `PR_SET_PDEATHSIG(SIGKILL)` so it dies with us. `initialize` carries
    /// plain client capabilities (no Lean silent/incremental diagnostics),
    /// `initializationOptions {"editDelay":0}` and the `rootUri` of `cmd.cwd`; once
    /// answered, `initialized` is sent. Every server → client request
    /// (`client/registerCapability`, `workspace/*/refresh`, …) is answered with
    /// `null`; notifications go to `events` in arrival order.
    ///
    /// Errors: [`LspError::Io`] naming the program if it cannot be spawned;
    /// [`LspError::Exited`] (with the stderr tail) if it exits during start-up;
    /// [`LspError::Protocol`] if `initialize` is not answered within
    /// `startup_timeout` or the server garbles a frame. In those cases the process
    /// is killed and `events` still receives its [`ServerEvent::Exited`].
    /// Dropping the future mid-way kills the process too.
    pub async fn start(
        cmd: &ServerCommand,
        events: mpsc::UnboundedSender<ServerEvent>,
        startup_timeout: Duration,
    ) -> Result<Arc<Self>, LspError> {
        let program = cmd.program.display().to_string();
        let tree_token = tree::new_token();
        let mut child = spawn(cmd, &tree_token).await.map_err(|e| {
            LspError::Io(format!(
                "cannot start language server `{program}` (in {}): {e}",
                cmd.cwd.display()
            ))
        })?;
        let pid = child
            .id()
            .ok_or_else(|| LspError::Io(format!("`{program}` exited at once")))?;
        let stdin = child
            .stdin
            .take()
            .expect("stdin is piped")
            .into_owned_fd()
            .and_then(pipe::Sender::from_owned_fd)
            .map_err(|e| LspError::Io(format!("cannot set up the stdin of `{program}`: {e}")))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");

        let shared = Arc::new(Shared {
            program: program.clone(),
            pid,
            tree_token,
            tree_swept: AtomicBool::new(false),
            next_id: AtomicI64::new(1),
            outgoing: Sink::new(stdin),
            pending: PendingTable::default(),
            stderr_tail: Mutex::new(Vec::new()),
            events,
            exit: watch::Sender::new(None),
            killed: AtomicBool::new(false),
            group_gone: AtomicBool::new(false),
            shutdown_started: AtomicBool::new(false),
            init_result: OnceLock::new(),
            cancels_sent: AtomicU64::new(0),
            server_requests: AtomicU64::new(0),
            notifications: AtomicU64::new(0),
        });
        // From here on, dropping `client` kills the group: every early return is safe.
        let client = Arc::new(LspClient {
            shared: shared.clone(),
        });

        let (stdout_done_tx, stdout_done) = oneshot::channel();
        let (stderr_done_tx, stderr_done) = oneshot::channel();
        tokio::spawn(drain_task(shared.clone(), shared.exit.subscribe()));
        tokio::spawn(reader_task(stdout, shared.clone(), stdout_done_tx));
        tokio::spawn(stderr_task(stderr, shared.clone(), stderr_done_tx));
        tokio::spawn(waiter_task(child, shared.clone(), stdout_done, stderr_done));

        let params = initialize_params(&cmd.cwd);
        let init =
            tokio::time::timeout(startup_timeout, shared.request("initialize", params)).await;
        let result = match init {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => {
                client.kill();
                return Err(e);
            }
            Err(_) => {
                client.kill();
                let tail = client.stderr_tail();
                let (tail, _) = super::short_tail(&tail);
                return Err(LspError::Protocol(format!(
                    "`{program}` did not answer `initialize` within {startup_timeout:?}{}{tail}",
                    if tail.is_empty() { "" } else { "; stderr: " }
                )));
            }
        };
        let _ = shared.init_result.set(result);
        shared.notify("initialized", json!({}))?;
        Ok(client)
    }

    /// Send request `R` and await its typed answer ([`LspError::Rpc`] for an
    /// error answer). An answer that does not read as `R::Result` fails with
    /// [`LeanErrorCode::InternalError`]; the connection stays up. Every
    /// notification the server sent before the answer is already in `events`
    /// when this returns.
    ///
    /// Dropping the returned future before the answer arrives sends
    /// `$/cancelRequest` for its id and forgets the id (a late answer is discarded).
    /// Note that Lean answers a cancelled request only when it would have finished
    /// anyway and does not stop elaboration. If the process exits, every pending
    /// request fails with [`LspError::Exited`]; requests made after that fail at once.
    pub async fn request_typed<R: Request>(
        &self,
        params: R::Params,
    ) -> Result<R::Result, LspError> {
        let (id, frame) = self
            .shared
            .encode_request(R::METHOD, typed_params(&params))?;
        drop(params);
        let answer = self.shared.send_request(id, frame).await?;
        serde_json::from_value(answer).map_err(|e| LspError::Rpc {
            code: LeanErrorCode::InternalError,
            message: format!("cannot read the answer to {}: {e}", R::METHOD),
            data: None,
        })
    }

    /// Queue notification `N`. Fails if the connection is dead, or with
    /// [`LspError::Io`] if [`OUTGOING_QUEUE`] messages are already waiting.
    pub fn notify_typed<N: Notification>(&self, params: N::Params) -> Result<(), LspError> {
        self.shared
            .send_notification(N::METHOD, typed_params(&params))
    }

    /// [`LspClient::request_typed`] by method name, with untyped params
    /// (`null` for none) and answer. Being retired: the broker's requests move
    /// to [`LspClient::request_typed`]; new code uses that.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, LspError> {
        self.shared.request(method, params).await
    }

    /// [`LspClient::notify_typed`] by method name, with untyped params (`null`
    /// for none). Being retired like [`LspClient::request`].
    pub fn notify(&self, method: &str, params: Value) -> Result<(), LspError> {
        self.shared.notify(method, params)
    }

    /// Pid of the server process, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.shared.pid
    }

    /// The last bytes the server wrote to stderr (lossy UTF-8).
    pub fn stderr_tail(&self) -> String {
        String::from_utf8_lossy(&lock(&self.shared.stderr_tail)).into_owned()
    }

    /// `false` once the process was killed, has exited, or the connection broke.
    pub fn is_alive(&self) -> bool {
        !self.shared.killed.load(Ordering::Acquire) && self.shared.pending.is_open()
    }

    /// [`LspClient::is_alive`], and the process is not dying either: killed
    /// by somebody else, it looks alive here until it is reaped and its
    /// output drained (up to half a second), and a request sent meanwhile
    /// fails although it came after the death.
    pub fn is_running(&self) -> bool {
        self.is_alive() && tree::runs(self.shared.pid)
    }

    /// `serverInfo` from the `initialize` result (`{"name":"Lean 4 Server","version":…}`),
    /// or `Value::Null` if the server sent none.
    pub fn server_info(&self) -> Value {
        self.initialize_result()
            .get("serverInfo")
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// The whole `initialize` result (`capabilities`, `serverInfo`).
    pub fn initialize_result(&self) -> &Value {
        self.shared.init_result.get().unwrap_or(&Value::Null)
    }

    /// Counters: requests, pending, cancellations, server requests, notifications.
    pub fn stats(&self) -> ClientStats {
        let sh = &self.shared;
        ClientStats {
            requests: (sh.next_id.load(Ordering::Relaxed) - 1).max(0) as u64,
            pending: sh.pending.len(),
            cancels_sent: sh.cancels_sent.load(Ordering::Relaxed),
            server_requests_answered: sh.server_requests.load(Ordering::Relaxed),
            notifications: sh.notifications.load(Ordering::Relaxed),
        }
    }

    /// How the process ended, once it has (and has been reaped).
    pub fn exit_info(&self) -> Option<ExitInfo> {
        self.shared.exit.borrow().clone()
    }

    /// Wait until the process has exited and been reaped; returns how it ended.
    pub async fn wait_exit(&self) -> ExitInfo {
        self.shared.wait_exit().await
    }

    /// Graceful stop: `shutdown` request and `exit` notification, wait up to `grace`
    /// for the process to exit, then SIGKILL the whole process tree (group and
    /// workers) and reap. Idempotent; concurrent callers all return once the
    /// process is gone (bounded: a few seconds after `grace` at most).
    pub async fn shutdown(&self, grace: Duration) {
        let sh = &self.shared;
        if !sh.shutdown_started.swap(true, Ordering::AcqRel) && self.is_alive() {
            let graceful = async {
                // The answer does not matter: `exit` follows either way.
                let _ = sh.request("shutdown", Value::Null).await;
                let _ = sh.notify("exit", Value::Null);
                sh.wait_exit().await
            };
            let _ = tokio::time::timeout(grace, graceful).await;
        } else {
            let _ = tokio::time::timeout(grace, sh.wait_exit()).await;
        }
        // Kill what is left (the server if it ignored `exit`, stray workers).
        sh.kill_tree();
        if tokio::time::timeout(Duration::from_secs(5), sh.wait_exit())
            .await
            .is_err()
        {
            log_warn!(
                "language server {} (pid {}) not reaped 5 s after SIGKILL",
                sh.program,
                sh.pid
            );
        }
    }

    /// SIGKILL the server's process group and every other process of its tree
    /// (Lean's workers live in their own sessions, see [`tree`]) now. Pending
    /// requests then fail with [`LspError::Exited`] and [`ServerEvent::Exited`]
    /// follows, once reaped.
    pub fn kill(&self) {
        self.shared.kill_tree();
    }

    /// Pids of the live processes of this server's tree: the server, its file
    /// workers and anything they started (Linux; elsewhere empty).
    pub fn process_tree(&self) -> Vec<u32> {
        tree::processes_with_token(&self.shared.tree_token)
    }

    /// The live process of this server's tree with `arg` on its command line
    /// (the file worker of a URI), if any.
    pub fn find_in_tree(&self, arg: &str) -> Option<tree::Seen> {
        tree::find_with_arg(&self.shared.tree_token, arg)
    }
}

impl Drop for LspClient {
    fn drop(&mut self) {
        self.shared.kill_tree();
    }
}

impl std::fmt::Debug for LspClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LspClient")
            .field("program", &self.shared.program)
            .field("pid", &self.shared.pid)
            .field("alive", &self.is_alive())
            .finish()
    }
}

impl Shared {
    async fn request(&self, method: &str, params: Value) -> Result<Value, LspError> {
        let (id, frame) = self.encode_request(method, value_params(&params))?;
        drop(params);
        self.send_request(id, frame).await
    }

    /// A new request id and the request's frame.
    fn encode_request<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(i64, Frame), LspError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        Ok((id, Outgoing::request(id, method, params).encode()?))
    }

    /// Send request `id` and await its answer.
    async fn send_request(&self, id: i64, frame: Frame) -> Result<Value, LspError> {
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
            .send_notification(lsp_types::notification::Cancel::METHOD, Some(&params))
            .is_ok()
        {
            self.cancels_sent.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn notify(&self, method: &str, params: Value) -> Result<(), LspError> {
        self.send_notification(method, value_params(&params))
    }

    fn send_notification<P: Serialize + ?Sized>(
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
        trace_frame(self.pid, "->", frame.rest());
        let sent = self.outgoing.send(frame);
        self.sent(sent)
    }

    /// [`Shared::write`] for a request: never refused for a full queue.
    fn write_unbounded(&self, frame: Frame) -> Result<(), LspError> {
        trace_frame(self.pid, "->", frame.rest());
        let sent = self.outgoing.send_unbounded(frame);
        self.sent(sent)
    }

    fn sent(&self, sent: Result<(), SendError>) -> Result<(), LspError> {
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
        self.kill_group();
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

    async fn wait_exit(&self) -> ExitInfo {
        let mut rx = self.exit.subscribe();
        let info = rx
            .wait_for(|e| e.is_some())
            .await
            .ok()
            .and_then(|e| e.clone());
        info.unwrap_or_default()
    }

    /// [`Self::kill_group`], then SIGKILL every process carrying our tree token
    /// (workers in their own sessions, or re-parented after the server died).
    fn kill_tree(&self) {
        self.kill_group();
        if self.tree_swept.load(Ordering::Acquire) {
            return;
        }
        self.sweep_tree();
    }

    fn sweep_tree(&self) {
        for pid in tree::processes_with_token(&self.tree_token) {
            log_debug!("killing pid {pid} of the tree of {}", self.program);
            if let Err(e) = sys::kill_process(pid, sys::SIGKILL) {
                log_warn!("cannot kill pid {pid} of the tree of {}: {e}", self.program);
            }
        }
    }

    fn kill_group(&self) {
        if self.group_gone.load(Ordering::Acquire) {
            return;
        }
        self.killed.store(true, Ordering::Release);
        if let Err(e) = sys::kill_process_group(self.pid, sys::SIGKILL) {
            log_warn!(
                "cannot kill process group {} ({}): {e}",
                self.pid,
                self.program
            );
        }
    }

    /// The connection is unusable (garbled input, stdout closed): fail what is
    /// pending with `err` and kill the process; the waiter then finalizes.
    fn connection_broken(&self, err: LspError) {
        self.pending.break_off(&err);
        self.kill_group();
    }

    /// Act on one frame from the server. `Err` when the server broke the
    /// protocol.
    fn dispatch(&self, body: &[u8]) -> Result<(), String> {
        trace_frame(self.pid, "<-", body);
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
