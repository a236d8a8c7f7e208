//! The child-process plumbing shared by the stdio clients ([`super::stream::Server`],
//! [`super::mcp::Mcp`]): a spawned `lean-beam-mcp` with piped stdio, a thread
//! turning its stdout into lines, a thread collecting its stderr, and a kill on
//! drop.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::outputs::Calls;

/// The environment of a spawned server: `env` set after `LEAN_BEAM_LOG=info`.
#[derive(Debug, Clone, Default)]
pub struct Spawn {
    pub env: Vec<(String, String)>,
}

impl Spawn {
    pub fn env(mut self, key: &str, value: impl Into<String>) -> Spawn {
        self.env.push((key.to_string(), value.into()));
        self
    }

    pub fn envs(mut self, pairs: Vec<(String, String)>) -> Spawn {
        self.env.extend(pairs);
        self
    }
}

/// A running `lean-beam-mcp` with piped stdio.
pub struct StdioChild {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    /// Tool calls sent, whose results are checked against their schemas
    /// when they are read.
    calls: Calls,
}

impl StdioChild {
    /// Spawn with `spawn`'s environment. `isolate` drops the test process's
    /// `LEAN_BEAM_*` variables (`LEAN_BEAM_LOG` excepted) first; without
    /// `read_stdout` the stdout read end is closed at once.
    pub fn spawn(spawn: &Spawn, isolate: bool, read_stdout: bool) -> StdioChild {
        let mut command = Command::new(env!("CARGO_BIN_EXE_lean-beam-mcp"));
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("LEAN_BEAM_LOG", "info");
        if isolate {
            for (key, _) in std::env::vars_os() {
                if key.to_string_lossy().starts_with("LEAN_BEAM_") && key != "LEAN_BEAM_LOG" {
                    command.env_remove(&key);
                }
            }
        }
        for (key, value) in &spawn.env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("spawn lean-beam-mcp");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        if read_stdout {
            thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { return };
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            });
        } else {
            drop(stdout);
            drop(tx);
        }
        let stderr_pipe = child.stderr.take().expect("stderr");
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&stderr);
        thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines().map_while(Result::ok) {
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        let stdin = child.stdin.take();
        StdioChild {
            child,
            stdin,
            lines,
            stderr,
            calls: Calls::default(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the child wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    fn stdin(&mut self) -> &mut ChildStdin {
        self.stdin.as_mut().expect("stdin is open")
    }

    /// Write one raw line (a newline is appended). Returns false when the
    /// child no longer reads its input.
    pub fn send_raw(&mut self, line: &str) -> bool {
        self.calls.sent_line(line);
        let stdin = self.stdin();
        stdin.write_all(line.as_bytes()).is_ok()
            && stdin.write_all(b"\n").is_ok()
            && stdin.flush().is_ok()
    }

    /// Write raw bytes as they are (no newline added).
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin();
        stdin.write_all(bytes).expect("write");
        stdin.flush().expect("flush");
    }

    /// Write one message as a line.
    pub fn send(&mut self, message: &Value) {
        assert!(
            self.send_raw(&message.to_string()),
            "the server stopped reading stdin"
        );
    }

    /// Write several messages in one write (they arrive as a burst).
    pub fn send_all(&mut self, messages: &[Value]) {
        let mut text = String::new();
        for m in messages {
            self.calls.sent(m);
            text.push_str(&m.to_string());
            text.push('\n');
        }
        let stdin = self.stdin();
        stdin.write_all(text.as_bytes()).expect("write burst");
        stdin.flush().expect("flush burst");
    }

    /// The next stdout message, checked to be a JSON-RPC response or
    /// notification ([`super::check_line`]) and, if it answers a tool call,
    /// against the tool's schemas ([`super::outputs`]); None at EOF / after
    /// `limit`.
    pub fn next_message(&mut self, limit: Duration) -> Option<Value> {
        let message = super::check_line(&self.lines.recv_timeout(limit).ok()?);
        self.calls.received(&message);
        Some(message)
    }

    /// Tool results checked against their schemas so far.
    pub fn results_checked(&self) -> usize {
        self.calls.checked
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Wait for the process to exit, within `limit` (killed, and a panic, past it).
    pub fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!(
                    "the server did not exit within {limit:?}\nstderr:\n{}",
                    self.stderr()
                );
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// The polite shutdown: close stdin (EOF) and give the child `grace` to
    /// exit on its own; kill it past that.
    pub fn shut_down(&mut self, grace: Duration) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        self.stdin = None;
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            thread::sleep(Duration::from_millis(10));
        }
        self.kill();
    }

    fn kill(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Drop for StdioChild {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A `lean-beam-mcp --http` server spawned from `command` (its arguments and
/// environment set; stdin and stdout null here, stderr piped): the child, the
/// port it announces (`listening on http://HOST:PORT/mcp`, the first if it
/// listens on several), waited for `limit`, and every line of its stderr as
/// it comes.
pub fn spawn_http(mut command: Command, limit: Duration) -> (Child, u16, Arc<Mutex<Vec<String>>>) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn lean-beam-mcp --http");
    let stderr = child.stderr.take().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&log);
    let (port_tx, port_rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("listening on http://").nth(1) {
                let authority = rest.trim_end_matches("/mcp");
                let port: u16 = authority.rsplit(':').next().unwrap().parse().unwrap();
                let _ = port_tx.send(port);
            }
            sink.lock().unwrap().push(line);
        }
    });
    let port = port_rx
        .recv_timeout(limit)
        .expect("the server announces its port");
    (child, port, log)
}

/// A [`spawn_http`] server as one value, killed on drop.
pub struct HttpChild {
    pub child: Child,
    pub port: u16,
    pub log: Arc<Mutex<Vec<String>>>,
}

impl HttpChild {
    pub fn spawn(command: Command, limit: Duration) -> HttpChild {
        let (child, port, log) = spawn_http(command, limit);
        HttpChild { child, port, log }
    }

    /// Its stderr's lines so far.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for HttpChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
