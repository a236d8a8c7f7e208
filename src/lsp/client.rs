//! One language server and its JSON-RPC connection: the public
//! [`LspClient`], started as a process ([`LspClient::start`]: a [`Process`]
//! and a connection over its pipes) or connected over any byte stream
//! ([`LspClient::connect`]: an in-process server, see `lsp::testing`). The
//! connection's state is `connection`, the tasks that keep it are in
//! `lifecycle`; `outgoing`, `incoming` and `pending` beside them.
//!
//! Writes go straight from the sending task into the child's stdin: the frame
//! is serialized first, then written with non-blocking writes under a lock, with
//! no await in between, so frames never interleave and a cancelled caller can
//! never leave half a frame (see `outgoing::Sink`).

use std::sync::Arc;
use std::time::Duration;

use lsp_types::notification::Notification;
use lsp_types::request::Request;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;
use tokio::sync::{mpsc, watch};

use super::capabilities::initialize_params;
use super::connection::{Connection, Peer};
use super::error::LspError;
use super::lifecycle;
use super::outgoing::{Wire, typed_params};
use super::process::Process;
use super::protocol::LeanErrorCode;
use super::server::{ExitInfo, ServerCommand, ServerEvent, short_tail};
use crate::log_warn;
use crate::process::tree;

pub use super::connection::{ClientStats, STDERR_TAIL_BYTES};
pub use super::outgoing::OUTGOING_QUEUE;

/// A running language server. Use it behind the [`Arc`] that [`LspClient::start`]
/// returns; every method takes `&self`. Dropping the last reference kills the
/// server's whole process tree (its group and its workers).
pub struct LspClient {
    connection: Arc<Connection>,
}

// The broker shares one client across tasks.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<LspClient>();
};

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
        let (process, mut child) = Process::spawn(cmd).await.map_err(|e| {
            LspError::Io(format!(
                "cannot start language server `{program}` (in {}): {e}",
                cmd.cwd.display()
            ))
        })?;
        let stdin = child
            .stdin
            .take()
            .expect("stdin is piped")
            .into_owned_fd()
            .and_then(pipe::Sender::from_owned_fd)
            .map_err(|e| LspError::Io(format!("cannot set up the stdin of `{program}`: {e}")))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");

        let connection = Arc::new(Connection::new(
            program,
            Peer::Process(process),
            Wire::Pipe(stdin),
            events,
        ));
        // From here on, dropping `client` kills the group: every early return is safe.
        let client = Arc::new(LspClient {
            connection: connection.clone(),
        });
        lifecycle::keep(&connection, child, stdout, stderr);
        client.initialize(&cmd.cwd, startup_timeout).await?;
        Ok(client)
    }

    /// A server at the other end of a byte stream (`input` what it reads,
    /// `output` what it writes): the `initialize` handshake of
    /// [`LspClient::start`] with `root` as `rootUri`, then the same
    /// connection, with no process behind it (no pid, no tree). Killing or
    /// dropping the client closes the stream; the end of `output` is the
    /// server's exit ([`ServerEvent::Exited`] with no status).
    pub async fn connect<R, W>(
        name: &str,
        output: R,
        input: W,
        root: &std::path::Path,
        events: mpsc::UnboundedSender<ServerEvent>,
        startup_timeout: Duration,
    ) -> Result<Arc<Self>, LspError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (wire, pump) = Wire::stream(input);
        let peer = Peer::Stream {
            stopped: watch::Sender::new(false),
        };
        let connection = Arc::new(Connection::new(name.to_string(), peer, wire, events));
        let client = Arc::new(LspClient {
            connection: connection.clone(),
        });
        lifecycle::keep_stream(&connection, output, pump);
        client.initialize(root, startup_timeout).await?;
        Ok(client)
    }

    /// The `initialize` handshake, then `initialized`; the server stopped
    /// when it fails.
    async fn initialize(
        &self,
        root: &std::path::Path,
        startup_timeout: Duration,
    ) -> Result<(), LspError> {
        let connection = &self.connection;
        let program = connection.program().to_string();
        let params = initialize_params(root);
        let init =
            tokio::time::timeout(startup_timeout, connection.request("initialize", params)).await;
        let result = match init {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => {
                self.kill().await;
                return Err(e);
            }
            Err(_) => {
                self.kill().await;
                let tail = self.stderr_tail();
                let (tail, _) = short_tail(&tail);
                return Err(LspError::Protocol(format!(
                    "`{program}` did not answer `initialize` within {startup_timeout:?}{}{tail}",
                    if tail.is_empty() { "" } else { "; stderr: " }
                )));
            }
        };
        connection.set_initialize_result(result);
        connection.notify("initialized", json!({}))?;
        Ok(())
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
            .connection
            .encode_request(R::METHOD, typed_params(&params))?;
        drop(params);
        let answer = self.connection.send_request(id, frame).await?;
        serde_json::from_value(answer).map_err(|e| LspError::Rpc {
            code: LeanErrorCode::InternalError,
            message: format!("cannot read the answer to {}: {e}", R::METHOD),
            data: None,
        })
    }

    /// Queue notification `N`. Fails if the connection is dead, or with
    /// [`LspError::Io`] if [`OUTGOING_QUEUE`] messages are already waiting.
    pub fn notify_typed<N: Notification>(&self, params: N::Params) -> Result<(), LspError> {
        self.connection
            .send_notification(N::METHOD, typed_params(&params))
    }

    /// Send request `R` (its method and typed params) and return the answer
    /// as Lean wrote it: for answers handed on to agents whole, where a
    /// typed reading would drop what `lsp_types` does not model.
    pub async fn request_verbatim<R: Request>(&self, params: R::Params) -> Result<Value, LspError> {
        let (id, frame) = self
            .connection
            .encode_request(R::METHOD, typed_params(&params))?;
        drop(params);
        self.connection.send_request(id, frame).await
    }

    /// A request by method name, with untyped params (`null` for none) and
    /// answer: for tests that send what no typed request can (a malformed
    /// or unknown request).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, LspError> {
        self.connection.request(method, params).await
    }

    /// [`LspClient::notify_typed`] by method name, with untyped params (`null`
    /// for none): the handshake's `initialized` and `exit`, and tests.
    pub fn notify(&self, method: &str, params: Value) -> Result<(), LspError> {
        self.connection.notify(method, params)
    }

    /// Pid of the server process, which is also its process group id (0
    /// for a server over a stream, see [`LspClient::connect`]).
    pub fn pid(&self) -> u32 {
        self.connection.pid()
    }

    /// The last bytes the server wrote to stderr (lossy UTF-8).
    pub fn stderr_tail(&self) -> String {
        self.connection.stderr_tail()
    }

    /// `false` once the process was killed, has exited, or the connection broke.
    pub fn is_alive(&self) -> bool {
        self.connection.is_alive()
    }

    /// [`LspClient::is_alive`], and the process is not dying either: killed
    /// by somebody else, it looks alive here until it is reaped and its
    /// output drained (up to half a second), and a request sent meanwhile
    /// fails although it came after the death.
    pub fn is_running(&self) -> bool {
        self.is_alive() && self.connection.process().is_none_or(|p| p.runs())
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
        self.connection.initialize_result()
    }

    /// Counters: requests, pending, cancellations, server requests, notifications.
    pub fn stats(&self) -> ClientStats {
        self.connection.stats()
    }

    /// How the process ended, once it has (and has been reaped).
    pub fn exit_info(&self) -> Option<ExitInfo> {
        self.connection.exit_info()
    }

    /// Wait until the process has exited and been reaped; returns how it ended.
    pub async fn wait_exit(&self) -> ExitInfo {
        self.connection.wait_exit().await
    }

    /// Graceful stop: `shutdown` request and `exit` notification, wait up to `grace`
    /// for the process to exit, then SIGKILL the whole process tree (group and
    /// workers) and reap. Idempotent; concurrent callers all return once the
    /// process is gone (bounded: a few seconds after `grace` at most).
    pub async fn shutdown(&self, grace: Duration) {
        let sh = &self.connection;
        if sh.begin_shutdown() && self.is_alive() {
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
        self.kill().await;
        if tokio::time::timeout(Duration::from_secs(5), sh.wait_exit())
            .await
            .is_err()
        {
            log_warn!(
                "language server {} (pid {}) not reaped 5 s after SIGKILL",
                sh.program(),
                sh.pid()
            );
        }
    }

    /// SIGKILL the server's process group and every other process of its tree
    /// (Lean's workers live in their own sessions, see [`tree`]) now. Pending
    /// requests then fail with [`LspError::Exited`] and [`ServerEvent::Exited`]
    /// follows, once reaped. Off the async runtime: the sweep for workers
    /// reads the `environ` of every process in `/proc`, which on a busy
    /// machine takes long enough to stall every other call on the runtime.
    pub async fn kill(&self) {
        let connection = Arc::clone(&self.connection);
        if tokio::task::spawn_blocking(move || connection.kill_tree())
            .await
            .is_err()
        {
            // The blocking pool is shutting down with the runtime: kill here.
            self.connection.kill_tree();
        }
    }

    /// Pids of the live processes of this server's tree: the server, its file
    /// workers and anything they started (Linux; elsewhere, and over a
    /// stream, empty).
    pub fn process_tree(&self) -> Vec<u32> {
        self.connection
            .process()
            .map_or_else(Vec::new, |p| p.processes())
    }

    /// The resident memory of every live process of this server's tree
    /// (blocking: a scan of `/proc`).
    pub fn tree_usage(&self) -> Vec<tree::Usage> {
        self.connection
            .process()
            .map_or_else(Vec::new, |p| p.usage())
    }

    /// Whether a process of this server's tree with `arg` on its command line
    /// is still there, also one on its way out (see [`tree::any_with_arg`]).
    pub fn tree_has(&self, arg: &str) -> bool {
        self.connection.process().is_some_and(|p| p.has(arg))
    }

    /// SIGKILL one process of this server's tree (a file worker), if it is
    /// still the process that was seen.
    pub fn kill_in_tree(&self, process: tree::Seen) {
        if let Some(p) = self.connection.process() {
            p.kill_one(process);
        }
    }

    /// The live process of this server's tree with `arg` on its command line
    /// (the file worker of a URI), if any.
    pub fn find_in_tree(&self, arg: &str) -> Option<tree::Seen> {
        self.connection.process().and_then(|p| p.find(arg))
    }
}

impl Drop for LspClient {
    fn drop(&mut self) {
        // A destructor runs on whatever thread drops the client, often the
        // async runtime, where the full sweep (a scan of `/proc`) would stall
        // every call: there the tree is walked from the server instead, and
        // the waiter task, which outlives the client, sweeps off the runtime
        // once it reaps the server. Without a runtime there is no waiter and
        // nothing to stall.
        if tokio::runtime::Handle::try_current().is_ok() {
            self.connection.kill_tree_walked();
        } else {
            self.connection.kill_tree();
        }
    }
}

impl std::fmt::Debug for LspClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LspClient")
            .field("program", &self.connection.program())
            .field("pid", &self.connection.pid())
            .field("alive", &self.is_alive())
            .finish()
    }
}
