//! One language-server process and its JSON-RPC connection.
//!
//! Writes go straight from the sending task into the child's stdin: the frame
//! is serialized first, then written with non-blocking writes under a lock, with
//! no await in between, so frames never interleave and a cancelled caller can
//! never leave half a frame (see [`Sink`]).
//!
//! Tasks per client (all ended by the process's exit):
//! * drain — finishes the frames the pipe had no room for (only when Lean is
//!   not reading fast enough), in order;
//! * reader — parses frames from stdout, routes answers to their waiting request,
//!   answers server → client requests with `null`, forwards notifications;
//! * stderr — keeps the last [`STDERR_TAIL_BYTES`] of stderr;
//! * waiter — reaps the process, kills what is left of its tree, fails every
//!   pending request with [`LspError::Exited`] and sends [`ServerEvent::Exited`].

/// JSON-RPC's internal-error code, for a malformed answer.
const INTERNAL_ERROR: i64 = -32603;

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, BufReader};
use tokio::net::unix::pipe;
use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use tokio::sync::{Notify, mpsc, oneshot, watch};

use super::framing::{self, FrameError};
use super::lean::methods;
use super::{ExitInfo, LspError, ServerCommand, ServerEvent, uri};
use crate::process::{spawn_supervised, sys, tree};
use crate::util::lock;
use crate::{log_debug, log_warn};

/// How much of the server's stderr is kept (the tail).
pub const STDERR_TAIL_BYTES: usize = 64 * 1024;
/// How many frames may wait for room in the server's stdin (beyond what the
/// pipe holds). [`LspClient::notify`] fails with [`LspError::Io`] when that many
/// are waiting (the server has stopped reading).
pub const OUTGOING_QUEUE: usize = 4096;
/// After the process is reaped, how long to wait for the rest of its stdout and
/// stderr before declaring it exited anyway.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

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

type Answer = Result<Value, LspError>;

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
    state: Mutex<State>,
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

struct State {
    pending: HashMap<i64, oneshot::Sender<Answer>>,
    /// Why new requests fail at once; `None` while the connection is usable.
    closed: Option<LspError>,
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
            state: Mutex::new(State {
                pending: HashMap::new(),
                closed: None,
            }),
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

        let root = absolute(&cmd.cwd);
        let params = json!({
            "processId": std::process::id(),
            "clientInfo": { "name": crate::identity::NAME, "version": crate::identity::VERSION },
            "rootUri": uri::path_to_uri(&root),
            "workspaceFolders": [{ "uri": uri::path_to_uri(&root), "name": root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default() }],
            "capabilities": client_capabilities(),
            "initializationOptions": { "editDelay": 0 },
        });
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

    /// Send a request and await its answer (`result` on success, [`LspError::Rpc`]
    /// for an error answer). Every notification the server sent before the
    /// answer is already in `events` when this returns.
    ///
    /// Dropping the returned future before the answer arrives sends
    /// `$/cancelRequest` for its id and forgets the id (a late answer is discarded).
    /// Note that Lean answers a cancelled request only when it would have finished
    /// anyway and does not stop elaboration. If the process exits, every pending
    /// request fails with [`LspError::Exited`]; requests made after that fail at once.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, LspError> {
        self.shared.request(method, params).await
    }

    /// Queue a notification. Fails if the connection is dead, or with
    /// [`LspError::Io`] if [`OUTGOING_QUEUE`] messages are already waiting.
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
        !self.shared.killed.load(Ordering::Acquire) && lock(&self.shared.state).closed.is_none()
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
            pending: lock(&sh.state).pending.len(),
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

/// An outgoing request or notification, serialized without moving `params`.
#[derive(Serialize)]
struct Outgoing<'a> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<i64>,
    method: &'a str,
    #[serde(skip_serializing_if = "is_null")]
    params: &'a Value,
}

fn is_null(v: &&Value) -> bool {
    v.is_null()
}

/// The notifications that make up the bulk of what Lean sends, as typed
/// events (see [`ServerEvent::FileProgress`], [`ServerEvent::Diagnostics`]).
fn typed_notification(method: &str, params: &str) -> Option<Result<ServerEvent, String>> {
    let event = match method {
        methods::FILE_PROGRESS => serde_json::from_str(params).map(ServerEvent::FileProgress),
        methods::PUBLISH_DIAGNOSTICS => serde_json::from_str(params).map(ServerEvent::Diagnostics),
        _ => return None,
    };
    Some(event.map_err(|e| e.to_string()))
}

/// A typed notification parsed in one pass, when its method comes first (Lean
/// writes object members in key order, so `"method"` precedes `"params"`).
/// Anything else, or anything unexpected, takes the general path.
fn typed_notification_fast(body: &[u8]) -> Option<ServerEvent> {
    #[derive(Deserialize)]
    struct Message<P> {
        #[serde(default)]
        id: Option<serde::de::IgnoredAny>,
        method: String,
        params: P,
    }
    fn parse<P: serde::de::DeserializeOwned>(body: &[u8], method: &str) -> Option<P> {
        let msg: Message<P> = serde_json::from_slice(body).ok()?;
        (msg.id.is_none() && msg.method == method).then_some(msg.params)
    }
    const PREFIX: &[u8] = br#""method":""#;
    let head = &body[..body.len().min(64)];
    let at = head.windows(PREFIX.len()).position(|w| w == PREFIX)? + PREFIX.len();
    let names =
        |m: &str| body[at..].starts_with(m.as_bytes()) && body.get(at + m.len()) == Some(&b'"');
    if names(methods::FILE_PROGRESS) {
        parse(body, methods::FILE_PROGRESS).map(ServerEvent::FileProgress)
    } else if names(methods::PUBLISH_DIAGNOSTICS) {
        parse(body, methods::PUBLISH_DIAGNOSTICS).map(ServerEvent::Diagnostics)
    } else {
        None
    }
}

/// Any incoming message; which fields are present tells what it is. The
/// params stay raw until the method says how to parse them.
#[derive(Deserialize)]
struct Incoming<'a> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default, borrow)]
    params: Option<&'a serde_json::value::RawValue>,
    /// `Some(Value::Null)` for `"result": null`, `None` when absent.
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    #[serde(default)]
    error: Option<RpcErrorObject>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct RpcErrorObject {
    code: i64,
    #[serde(default)]
    message: String,
    #[serde(default)]
    data: Option<Value>,
}

/// Removes a request from the pending table if its future is dropped before the
/// answer, and cancels it on the server if it was already sent.
struct PendingGuard<'a> {
    shared: &'a Shared,
    id: i64,
    sent: bool,
    answered: bool,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        let was_pending = lock(&self.shared.state).pending.remove(&self.id).is_some();
        if was_pending && self.sent {
            log_debug!("cancelling request {} to {}", self.id, self.shared.program);
            let cancel = json!({ "id": self.id });
            if self.shared.notify("$/cancelRequest", cancel).is_ok() {
                self.shared.cancels_sent.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl Shared {
    async fn request(&self, method: &str, params: Value) -> Result<Value, LspError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let frame = serialize(&Outgoing {
            jsonrpc: "2.0",
            id: Some(id),
            method,
            params: &params,
        })?;
        drop(params);
        let (tx, rx) = oneshot::channel();
        {
            let mut st = lock(&self.state);
            if let Some(e) = &st.closed {
                return Err(e.clone());
            }
            st.pending.insert(id, tx);
        }
        let mut guard = PendingGuard {
            shared: self,
            id,
            sent: false,
            answered: false,
        };
        // If the write failed the connection is dying: the waiter task will fail
        // the pending entry with `Exited`, so keep waiting for that.
        guard.sent = self.write(frame, false).is_ok();
        let answer = rx.await;
        guard.answered = true;
        match answer {
            Ok(answer) => answer,
            Err(_) => Err(self.closed_error()),
        }
    }

    fn notify(&self, method: &str, params: Value) -> Result<(), LspError> {
        if let Some(e) = &lock(&self.state).closed {
            return Err(e.clone());
        }
        let frame = serialize(&Outgoing {
            jsonrpc: "2.0",
            id: None,
            method,
            params: &params,
        })?;
        self.write(frame, true)
    }

    /// Write one frame now (see [`Sink::send`]). A broken pipe kills the server:
    /// the waiter then reports its exit.
    fn write(&self, frame: Frame, bounded: bool) -> Result<(), LspError> {
        trace_frame(self.pid, "->", &frame.bytes[frame.start..]);
        match self.outgoing.send(frame, bounded) {
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
        if let Some(e) = &lock(&self.state).closed {
            return e.clone();
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
        let pending: Vec<_> = {
            let mut st = lock(&self.state);
            if st.closed.is_none() {
                st.closed = Some(err.clone());
            }
            st.pending.drain().map(|(_, tx)| tx).collect()
        };
        for tx in pending {
            let _ = tx.send(Err(err.clone()));
        }
        self.kill_group();
    }

    fn dispatch(&self, body: &[u8]) -> Result<(), String> {
        trace_frame(self.pid, "<-", body);
        if let Some(event) = typed_notification_fast(body) {
            self.notifications.fetch_add(1, Ordering::Relaxed);
            let _ = self.events.send(event);
            return Ok(());
        }
        let msg: Incoming = serde_json::from_slice(body).map_err(|e| {
            let start = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
            format!("invalid JSON-RPC message ({e}): {start}")
        })?;
        match (msg.method, msg.id) {
            (Some(method), Some(id)) => {
                // A server → client request: we support none beyond acknowledging.
                log_debug!("answering server request {method} with null");
                let reply = json!({ "jsonrpc": "2.0", "id": id, "result": null });
                let frame = Frame::encode(&reply).map_err(|e| e.to_string())?;
                match self.write(frame, true) {
                    Ok(()) => {
                        self.server_requests.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => log_warn!("cannot answer server request {method}: {e}"),
                }
            }
            (Some(method), None) => {
                self.notifications.fetch_add(1, Ordering::Relaxed);
                let raw = msg.params.map_or("null", |p| p.get());
                let event = match typed_notification(&method, raw) {
                    Some(Ok(event)) => event,
                    Some(Err(e)) => {
                        log_warn!("dropped a malformed {method} from {}: {e}", self.program);
                        return Ok(());
                    }
                    None => {
                        let params = serde_json::from_str(raw)
                            .map_err(|e| format!("invalid params of {method}: {e}"))?;
                        ServerEvent::Notification { method, params }
                    }
                };
                let _ = self.events.send(event);
            }
            (None, Some(id)) => {
                let Some(id) = id.as_i64() else {
                    log_warn!("answer with foreign id {id} from {}", self.program);
                    return Ok(());
                };
                let answer = match (msg.result, msg.error) {
                    (_, Some(e)) => Err(LspError::Rpc {
                        code: e.code,
                        message: e.message,
                        data: e.data,
                    }),
                    (Some(result), None) => Ok(result),
                    // One malformed answer; the connection itself is intact, so
                    // this is not the connection-breaking `Protocol` error.
                    (None, None) => Err(LspError::Rpc {
                        code: INTERNAL_ERROR,
                        message: format!("answer to request {id} has neither result nor error"),
                        data: None,
                    }),
                };
                let tx = lock(&self.state).pending.remove(&id);
                match tx {
                    Some(tx) => {
                        let _ = tx.send(answer);
                    }
                    None => log_debug!("discarding answer to forgotten request {id}"),
                }
            }
            (None, None) => match msg.error {
                Some(e) => log_warn!("{} reported error {}: {}", self.program, e.code, e.message),
                None => return Err("message with neither method nor id".into()),
            },
        }
        Ok(())
    }
}

/// At debug level, the start of every frame to and from the server, for
/// reconstructing what Lean was told and when (frames can be megabytes).
fn trace_frame(pid: u32, direction: &str, bytes: &[u8]) {
    if crate::logging::enabled(crate::logging::Level::Debug) {
        let body = bytes
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(bytes, |at| &bytes[at + 4..]);
        let shown = String::from_utf8_lossy(&body[..body.len().min(TRACE_BYTES)]);
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        log_debug!(
            "lsp {pid} {direction} {}.{:06} {shown}",
            since_epoch.as_secs(),
            since_epoch.subsec_micros()
        );
    }
}

/// How much of each frame the debug trace shows.
const TRACE_BYTES: usize = 320;

fn serialize(msg: &Outgoing<'_>) -> Result<Frame, LspError> {
    Frame::encode(msg)
        .map_err(|e| LspError::Protocol(format!("cannot serialize {}: {e}", msg.method)))
}

/// One whole frame, header and body, in one buffer: `bytes[start..]`.
struct Frame {
    bytes: Vec<u8>,
    start: usize,
}

impl Frame {
    /// Serialize `msg` behind room for its header, then put the header in front
    /// of it: one allocation, no copy of the body.
    fn encode<T: Serialize>(msg: &T) -> serde_json::Result<Frame> {
        const ROOM: usize = framing::MAX_HEADER_LEN;
        let mut bytes = Vec::with_capacity(512);
        bytes.resize(ROOM, 0);
        serde_json::to_writer(&mut bytes, msg)?;
        let start = framing::put_header(&mut bytes[..], ROOM);
        Ok(Frame { bytes, start })
    }

    fn rest(&self) -> &[u8] {
        &self.bytes[self.start..]
    }
}

enum SendError {
    /// [`OUTGOING_QUEUE`] frames are already waiting.
    Full,
    /// An earlier write failed.
    Closed,
    Io(std::io::Error),
}

/// The server's stdin. A frame is written by the task that sends it, with
/// non-blocking writes under a lock and no await, so it costs no task switch,
/// and cancelling the sender cannot cut a frame. What the pipe has no room for
/// waits in `backlog`, finished by [`drain_task`]; later frames queue behind it.
struct Sink {
    pipe: pipe::Sender,
    state: Mutex<SinkState>,
    /// Wakes [`drain_task`] when the backlog becomes non-empty.
    backlog_added: Notify,
}

#[derive(Default)]
struct SinkState {
    /// Frames not yet written completely; the first may be partly written.
    backlog: VecDeque<Frame>,
    /// Set after a write failed: nothing more is written.
    broken: bool,
}

impl Sink {
    fn new(pipe: pipe::Sender) -> Self {
        Sink {
            pipe,
            state: Mutex::new(SinkState::default()),
            backlog_added: Notify::new(),
        }
    }

    /// Write `frame` now, or queue it behind the frames already waiting (for a
    /// `bounded` frame, only while fewer than [`OUTGOING_QUEUE`] are).
    fn send(&self, mut frame: Frame, bounded: bool) -> Result<(), SendError> {
        let mut st = lock(&self.state);
        if st.broken {
            return Err(SendError::Closed);
        }
        if !st.backlog.is_empty() {
            if bounded && st.backlog.len() >= OUTGOING_QUEUE {
                return Err(SendError::Full);
            }
            st.backlog.push_back(frame);
            return Ok(());
        }
        match self.write_some(&mut frame) {
            Ok(true) => Ok(()),
            Ok(false) => {
                st.backlog.push_back(frame);
                self.backlog_added.notify_one();
                Ok(())
            }
            Err(e) => {
                st.broken = true;
                Err(SendError::Io(e))
            }
        }
    }

    /// Write as much of `frame` as the pipe takes; `true` once it is all written.
    fn write_some(&self, frame: &mut Frame) -> std::io::Result<bool> {
        while frame.start < frame.bytes.len() {
            match self.pipe.try_write(frame.rest()) {
                Ok(n) => frame.start += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Whenever frames wait in the backlog, write them as the pipe takes them.
    /// Returns only when a write fails.
    async fn drain_forever(&self) -> std::io::Result<()> {
        loop {
            while !self.drain_some()? {
                self.pipe.writable().await?;
            }
            self.backlog_added.notified().await;
        }
    }

    /// Write what the pipe takes from the backlog; `true` once it is empty.
    fn drain_some(&self) -> std::io::Result<bool> {
        let mut st = lock(&self.state);
        if st.broken {
            return Ok(true);
        }
        while let Some(frame) = st.backlog.front_mut() {
            match self.write_some(frame) {
                Ok(true) => {
                    st.backlog.pop_front();
                }
                Ok(false) => return Ok(false),
                Err(e) => {
                    st.broken = true;
                    st.backlog.clear();
                    return Err(e);
                }
            }
        }
        Ok(true)
    }
}

/// Plain LSP client capabilities. The `lean` section only selects the current
/// RPC wire format (references as `{"__rpcref": …}`; without it Lean 4.35 uses
/// the legacy `{"p": …}`); it does not ask for silent ("Goals accomplished!") or
/// incremental diagnostics, so every publish is the complete visible set.
fn client_capabilities() -> Value {
    json!({
        "general": { "positionEncodings": ["utf-16"] },
        "textDocument": {
            "synchronization": { "didSave": false, "willSave": false, "willSaveWaitUntil": false },
            "publishDiagnostics": { "relatedInformation": true, "versionSupport": true, "tagSupport": { "valueSet": [1, 2] } },
            "hover": { "contentFormat": ["markdown", "plaintext"] },
            "definition": { "linkSupport": true },
            "documentSymbol": { "hierarchicalDocumentSymbolSupport": true },
        },
        "window": { "workDoneProgress": false },
        "lean": { "rpcWireFormat": "v1" },
    })
}

fn absolute(p: &Path) -> std::path::PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Spawn the server process (see [`spawn_supervised`]).
async fn spawn(cmd: &ServerCommand, tree_token: &str) -> std::io::Result<Child> {
    let mut command = Command::new(&cmd.program);
    for name in &cmd.env_remove {
        command.env_remove(name);
    }
    command
        .args(&cmd.args)
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .env(tree::TREE_ENV, tree_token)
        .current_dir(&cmd.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    spawn_supervised(command).await
}

/// Finish the frames [`Sink::send`] could not write at once, in order, as the
/// pipe drains; ends at the process's exit or when a write fails.
async fn drain_task(shared: Arc<Shared>, mut exit: watch::Receiver<Option<ExitInfo>>) {
    let result = tokio::select! {
        biased;
        result = shared.outgoing.drain_forever() => result,
        _ = exit.wait_for(|e| e.is_some()) => return,
    };
    if let Err(e) = result {
        shared.write_failed(&e);
    }
}

async fn reader_task(stdout: ChildStdout, shared: Arc<Shared>, done: oneshot::Sender<()>) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::new();
    loop {
        let problem = match framing::read_frame(&mut reader, &mut line).await {
            Ok(body) => match shared.dispatch(&body) {
                Ok(()) => continue,
                Err(m) => m,
            },
            Err(FrameError::Eof) => break,
            Err(FrameError::Io(e)) => {
                // Usually the process died mid-frame; the waiter reports that.
                log_debug!("reading from {} failed: {e}", shared.program);
                break;
            }
            Err(FrameError::Garbled(m)) => m,
        };
        log_warn!(
            "language server {} (pid {}) broke the protocol, killing it: {problem}",
            shared.program,
            shared.pid
        );
        shared.connection_broken(LspError::Protocol(problem));
        break;
    }
    // stdout closed: the process is exiting (or closed it on purpose: either way
    // the connection is over).
    shared.kill_group();
    let _ = done.send(());
}

async fn stderr_task(mut stderr: ChildStderr, shared: Arc<Shared>, done: oneshot::Sender<()>) {
    let mut buf = vec![0u8; 8192];
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let mut tail = lock(&shared.stderr_tail);
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > STDERR_TAIL_BYTES {
                    let excess = tail.len() - STDERR_TAIL_BYTES;
                    tail.drain(..excess);
                }
            }
        }
    }
    let _ = done.send(());
}

async fn waiter_task(
    mut child: Child,
    shared: Arc<Shared>,
    stdout_done: oneshot::Receiver<()>,
    stderr_done: oneshot::Receiver<()>,
) {
    let status = child.wait().await;
    // Kill whatever is left of the group and of the tree (no-op after a clean
    // exit) so nothing is orphaned; the server is gone, so nothing new can start.
    shared.kill_group();
    shared.group_gone.store(true, Ordering::Release);
    shared.sweep_tree();
    shared.tree_swept.store(true, Ordering::Release);
    // Let the reader deliver what the server wrote before dying, and collect the
    // last of stderr, but do not wait forever for pipes a stray process may hold.
    let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, async {
        let _ = stdout_done.await;
        let _ = stderr_done.await;
    })
    .await;
    let (code, signal) = match &status {
        Ok(s) => (s.code(), exit_signal(s)),
        Err(e) => {
            log_warn!("waiting for {} failed: {e}", shared.program);
            (None, None)
        }
    };
    let info = ExitInfo {
        status: code,
        signal,
        stderr_tail: String::from_utf8_lossy(&lock(&shared.stderr_tail)).into_owned(),
    };
    log_debug!(
        "language server {} (pid {}) ended: {}",
        shared.program,
        shared.pid,
        info
    );
    let pending: Vec<_> = {
        let mut st = lock(&shared.state);
        st.closed = Some(LspError::Exited(info.clone()));
        st.pending.drain().map(|(_, tx)| tx).collect()
    };
    for tx in pending {
        let _ = tx.send(Err(LspError::Exited(info.clone())));
    }
    shared.exit.send_replace(Some(info.clone()));
    let _ = shared.events.send(ServerEvent::Exited(info));
}

#[cfg(unix)]
fn exit_signal(s: &std::process::ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(s)
}

#[cfg(not(unix))]
fn exit_signal(_s: &std::process::ExitStatus) -> Option<i32> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_notifications_are_parsed_in_one_pass_only_when_they_surely_are() {
        let progress = r#""params":{"processing":[{"kind":1,"range":{"end":{"character":0,"line":9},"start":{"character":0,"line":3}}}],"textDocument":{"uri":"file:///a.lean","version":4}}"#;
        let lean = format!(r#"{{"jsonrpc":"2.0","method":"$/lean/fileProgress",{progress}}}"#);
        match typed_notification_fast(lean.as_bytes()) {
            Some(ServerEvent::FileProgress(p)) => {
                assert_eq!(p.text_document.version, Some(4));
                assert_eq!(p.processing[0].range.start.line, 3);
            }
            other => panic!("Lean's own order: {other:?}"),
        }
        let diagnostics = r#"{"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"diagnostics":[{"message":"m","range":{"end":{"character":1,"line":0},"start":{"character":0,"line":0}}}],"uri":"file:///a.lean","version":2}}"#;
        match typed_notification_fast(diagnostics.as_bytes()) {
            Some(ServerEvent::Diagnostics(p)) => {
                assert_eq!((p.uri.as_str(), p.version), ("file:///a.lean", Some(2)));
                assert!(p.diagnostics.get().starts_with(r#"[{"message":"m""#));
            }
            other => panic!("Lean's own order: {other:?}"),
        }
        // A request with that method, params that do not fit, a method that
        // only starts alike, or a method after a long member: the general
        // path decides.
        let request = format!(r#"{{"id":1,"method":"$/lean/fileProgress",{progress}}}"#);
        assert!(typed_notification_fast(request.as_bytes()).is_none());
        let odd = r#"{"method":"$/lean/fileProgress","params":{"processing":7}}"#;
        assert!(typed_notification_fast(odd.as_bytes()).is_none());
        let longer = format!(r#"{{"method":"$/lean/fileProgressX",{progress}}}"#);
        assert!(typed_notification_fast(longer.as_bytes()).is_none());
        let late = format!(
            r#"{{"jsonrpc":"2.0","x":"{}","method":"$/lean/fileProgress",{progress}}}"#,
            "y".repeat(64)
        );
        assert!(typed_notification_fast(late.as_bytes()).is_none());
    }

    /// Frames larger than the pipe, and frames sent while others wait, arrive
    /// whole and in order.
    #[tokio::test]
    async fn sink_keeps_frames_whole_and_in_order_when_the_pipe_is_full() {
        let (tx, rx) = pipe::pipe().expect("pipe");
        let sink = Arc::new(Sink::new(tx));
        let drainer = {
            let sink = Arc::clone(&sink);
            tokio::spawn(async move { sink.drain_forever().await })
        };
        let big = "x".repeat(300 * 1024);
        let mut expected = Vec::new();
        for i in 0..20 {
            let text = if i % 3 == 0 { big.as_str() } else { "small" };
            let msg = json!({ "i": i, "text": text });
            expected.push(serde_json::to_vec(&msg).unwrap());
            sink.send(Frame::encode(&msg).unwrap(), false)
                .unwrap_or_else(|_| panic!("send {i}"));
        }
        assert!(
            !lock(&sink.state).backlog.is_empty(),
            "the pipe never filled"
        );
        let mut reader = BufReader::new(rx);
        let mut line = Vec::new();
        for (i, want) in expected.iter().enumerate() {
            let got = framing::read_frame(&mut reader, &mut line).await.unwrap();
            assert!(got == *want, "frame {i} differs");
        }
        assert!(lock(&sink.state).backlog.is_empty());
        drainer.abort();
    }

    /// A bounded frame is refused once OUTGOING_QUEUE frames wait; an unbounded
    /// one is queued anyway.
    #[tokio::test]
    async fn sink_refuses_bounded_frames_when_the_backlog_is_full() {
        let (tx, _rx) = pipe::pipe().expect("pipe");
        let sink = Sink::new(tx);
        let big = json!({ "text": "x".repeat(256 * 1024) });
        sink.send(Frame::encode(&big).unwrap(), true)
            .unwrap_or_else(|_| panic!("first send"));
        for _ in 1..OUTGOING_QUEUE {
            sink.send(Frame::encode(&json!(1)).unwrap(), true)
                .unwrap_or_else(|_| panic!("queued send"));
        }
        assert!(matches!(
            sink.send(Frame::encode(&json!(1)).unwrap(), true),
            Err(SendError::Full)
        ));
        assert!(sink.send(Frame::encode(&json!(1)).unwrap(), false).is_ok());
    }
}
