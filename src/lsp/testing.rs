//! A scripted Lean language server in the same process, for tests that need
//! no Lean toolchain: it speaks Lean's protocol over `tokio::io::duplex`
//! (the way lsp-server's `Connection::memory` pairs two ends), and a
//! [`Script`] says what each elaboration reports.
//!
//! What it answers: `initialize`, `shutdown`/`exit`; `didOpen`/`didChange`
//! (incremental edits applied) by elaborating the text as the script says,
//! with `$/lean/fileProgress` before and after and the diagnostics published
//! the way Lean republishes them (the set growing, one publish per command);
//! `didClose`; `textDocument/waitForDiagnostics` once the version asked for
//! is elaborated; `$/lean/plainGoal` and the RPC goals
//! (`$/lean/rpc/connect`, `$/lean/rpc/call` of `getInteractiveGoals`) from
//! the script's goal texts; `null` for every other request. Faults, per
//! elaboration: a worker crash (the file reported fatal, its requests held
//! until it is reopened, as Lean does), a fatal report (a header failure:
//! fatal, but answered), the whole server dying (the stream closed).
//!
//! Every message it receives is logged ([`ScriptedLean::received`]) and can
//! be waited for ([`ScriptedLean::wait_for`]): tests wait on events, never on
//! sleeps.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::{Notify, Semaphore, mpsc};

use super::framing;
use crate::util::lock;

/// One elaboration the scripted server runs: a document's text at a version.
#[derive(Debug, Clone)]
pub struct Elaboration {
    pub uri: String,
    pub version: i64,
    pub text: String,
    /// How many times this URI was opened (`didOpen`) by any server of this
    /// script, this opening included.
    pub opened: u64,
}

/// What an elaboration reports.
#[derive(Debug, Clone)]
pub enum Report {
    /// These diagnostics (Lean's JSON), published as Lean does: the set
    /// growing one diagnostic per publish, the whole set last, then the file
    /// reported done.
    Diagnostics(Vec<Value>),
    /// The same, after `gate` gives a permit (a test holds the elaboration
    /// there to look at what waits on it).
    Gated(Arc<Semaphore>, Vec<Value>),
    /// The file's worker crashed: reported fatal, its requests held (never
    /// answered) until it is closed and reopened.
    WorkerCrash,
    /// A fatal report with these diagnostics (a header that failed): the
    /// file reported fatal, its requests answered.
    Fatal(Vec<Value>),
    /// The whole server dies: its stream is closed.
    ServerCrash,
    /// Lake sets the imports up first: held until the client asks
    /// `waitForDiagnostics` of the version, then these build lines published
    /// as Lean 4.35 publishes Lake's stderr (one information diagnostic each
    /// at the header, no `source`, then an empty publish), these
    /// diagnostics and the answer, all at once: what a client on a loaded
    /// machine reads in one go.
    LakeSetup(Vec<String>, Vec<Value>),
}

type Elaborate = dyn Fn(&Elaboration) -> Report + Send + Sync;
type Goals = dyn Fn(&str, u32, u32) -> Option<Vec<String>> + Send + Sync;

/// What the scripted server reports.
pub struct Script {
    elaborate: Box<Elaborate>,
    goals: Box<Goals>,
}

impl Script {
    /// Every elaboration reports what `elaborate` says; no goals anywhere.
    pub fn new(elaborate: impl Fn(&Elaboration) -> Report + Send + Sync + 'static) -> Self {
        Script {
            elaborate: Box::new(elaborate),
            goals: Box::new(|_, _, _| None),
        }
    }

    /// The goals at (`line`, `character`) of a text, each as Lean renders
    /// one (`case x\nh : T\n⊢ target`); `Some(vec![])` for no goals left,
    /// `None` where there is no tactic.
    pub fn goals(
        mut self,
        goals: impl Fn(&str, u32, u32) -> Option<Vec<String>> + Send + Sync + 'static,
    ) -> Self {
        self.goals = Box::new(goals);
        self
    }
}

/// One message the scripted server received.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    pub method: String,
    /// The document it is about, when it names one.
    pub uri: Option<String>,
    /// The version it names (didOpen, didChange, waitForDiagnostics).
    pub version: Option<i64>,
    /// Which server of the script received it (1 for the first started).
    pub server: u64,
}

/// A scripted Lean: every server started from it shares its script and its
/// log. Cheap to clone.
#[derive(Clone)]
pub struct ScriptedLean {
    shared: Arc<Shared>,
}

struct Shared {
    script: Script,
    received: Mutex<Vec<Received>>,
    arrived: Notify,
    servers: AtomicU64,
    opened: Mutex<HashMap<String, u64>>,
}

impl std::fmt::Debug for ScriptedLean {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedLean")
            .field("servers", &self.servers())
            .finish()
    }
}

impl PartialEq for ScriptedLean {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl Eq for ScriptedLean {}

impl ScriptedLean {
    pub fn new(script: Script) -> Self {
        ScriptedLean {
            shared: Arc::new(Shared {
                script,
                received: Mutex::default(),
                arrived: Notify::new(),
                servers: AtomicU64::new(0),
                opened: Mutex::default(),
            }),
        }
    }

    /// Start one server: the client's ends of its streams (what the server
    /// writes, what it reads). The server runs until its input ends, `exit`,
    /// or a [`Report::ServerCrash`].
    pub fn start(&self) -> (DuplexStream, DuplexStream) {
        let (client_reads, server_writes) = tokio::io::duplex(1 << 16);
        let (server_reads, client_writes) = tokio::io::duplex(1 << 16);
        let server = self.shared.servers.fetch_add(1, Ordering::SeqCst) + 1;
        let (out, frames) = mpsc::unbounded_channel();
        tokio::spawn(write_frames(server_writes, frames));
        let state = Server {
            shared: Arc::clone(&self.shared),
            number: server,
            out,
            docs: Arc::default(),
            next_session: AtomicU64::new(1),
        };
        tokio::spawn(state.serve(server_reads));
        (client_reads, client_writes)
    }

    /// How many servers were started.
    pub fn servers(&self) -> u64 {
        self.shared.servers.load(Ordering::SeqCst)
    }

    /// Every message received so far, in order.
    pub fn received(&self) -> Vec<Received> {
        lock(&self.shared.received).clone()
    }

    /// How many received messages of `method` name a URI ending in `uri_end`.
    pub fn count(&self, method: &str, uri_end: &str) -> usize {
        self.received()
            .iter()
            .filter(|r| {
                r.method == method && r.uri.as_deref().is_some_and(|u| u.ends_with(uri_end))
            })
            .count()
    }

    /// Wait until a received message satisfies `pred`.
    pub async fn wait_for(&self, pred: impl Fn(&Received) -> bool) -> Received {
        loop {
            let arrived = self.shared.arrived.notified();
            if let Some(found) = lock(&self.shared.received).iter().find(|r| pred(r)) {
                return found.clone();
            }
            arrived.await;
        }
    }
}

/// Write the server's frames in order; the stream closes when every sender
/// is gone (the server ended) or on `None` (a crash).
async fn write_frames(
    mut stream: DuplexStream,
    mut frames: mpsc::UnboundedReceiver<Option<Value>>,
) {
    while let Some(Some(frame)) = frames.recv().await {
        let body = serde_json::to_vec(&frame).expect("a JSON value serializes");
        let header = format!("Content-Length: {}\r\n\r\n", body.len());
        if stream.write_all(header.as_bytes()).await.is_err()
            || stream.write_all(&body).await.is_err()
        {
            return;
        }
    }
    let _ = stream.shutdown().await;
}

/// One document as the scripted server holds it.
#[derive(Default)]
struct DocState {
    text: String,
    version: i64,
    /// The last version elaborated, and whether its worker crashed.
    elaborated: Option<i64>,
    crashed: bool,
    /// `waitForDiagnostics` requests held: (id, version).
    waiting: Vec<(Value, i64)>,
}

struct Server {
    shared: Arc<Shared>,
    number: u64,
    /// Frames to the client; `None` closes the stream.
    out: mpsc::UnboundedSender<Option<Value>>,
    docs: Arc<Mutex<HashMap<String, DocState>>>,
    next_session: AtomicU64,
}

impl Server {
    async fn serve(self, input: DuplexStream) {
        let mut reader = BufReader::new(input);
        let mut line = Vec::new();
        let this = Arc::new(self);
        while let Ok(body) = framing::read_frame(&mut reader, &mut line).await {
            let Ok(message) = serde_json::from_slice::<Value>(&body) else {
                break;
            };
            if !this.handle(message) {
                break;
            }
        }
        let _ = this.out.send(None);
    }

    fn send(&self, frame: Value) {
        let _ = self.out.send(Some(frame));
    }

    fn notify(&self, method: &str, params: Value) {
        self.send(json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    fn answer(&self, id: &Value, result: Value) {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "result": result }));
    }

    fn log(&self, method: &str, params: &Value) {
        let uri = params
            .pointer("/textDocument/uri")
            .or_else(|| params.get("uri"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let version = params
            .pointer("/textDocument/version")
            .or_else(|| params.get("version"))
            .and_then(Value::as_i64);
        lock(&self.shared.received).push(Received {
            method: method.to_string(),
            uri,
            version,
            server: self.number,
        });
        self.shared.arrived.notify_waiters();
    }

    /// Act on one message; `false` ends the server.
    fn handle(self: &Arc<Self>, message: Value) -> bool {
        let method = message.get("method").and_then(Value::as_str).unwrap_or("");
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let id = message.get("id").cloned();
        if method.is_empty() {
            return true; // an answer to a request of ours: we send none
        }
        self.log(method, &params);
        let uri = params
            .pointer("/textDocument/uri")
            .or_else(|| params.get("uri"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        match (method, id) {
            ("initialize", Some(id)) => self.answer(
                &id,
                json!({
                    "capabilities": { "textDocumentSync": { "openClose": true, "change": 2 } },
                    "serverInfo": { "name": "Lean 4 Server (scripted)", "version": "scripted" }
                }),
            ),
            ("shutdown", Some(id)) => self.answer(&id, Value::Null),
            ("exit", None) => return false,
            ("textDocument/didOpen", None) => {
                let text = params
                    .pointer("/textDocument/text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let version = params
                    .pointer("/textDocument/version")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                *lock(&self.shared.opened).entry(uri.clone()).or_default() += 1;
                let held = lock(&self.docs).insert(
                    uri.clone(),
                    DocState {
                        text,
                        version,
                        ..DocState::default()
                    },
                );
                drop(held);
                return self.elaborate(&uri);
            }
            ("textDocument/didChange", None) => {
                let version = params
                    .pointer("/textDocument/version")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                {
                    let mut docs = lock(&self.docs);
                    let Some(doc) = docs.get_mut(&uri) else {
                        return true;
                    };
                    for change in params
                        .get("contentChanges")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        apply_change(&mut doc.text, change);
                    }
                    doc.version = version;
                    doc.crashed = false;
                }
                return self.elaborate(&uri);
            }
            ("textDocument/didClose", None) => {
                lock(&self.docs).remove(&uri);
            }
            ("textDocument/waitForDiagnostics", Some(id)) => {
                let version = params.get("version").and_then(Value::as_i64).unwrap_or(0);
                let mut docs = lock(&self.docs);
                match docs.get_mut(&uri) {
                    Some(doc) if doc.crashed => doc.waiting.push((id, version)),
                    Some(doc) if doc.elaborated.is_some_and(|v| v >= version) => {
                        self.answer(&id, json!({}))
                    }
                    Some(doc) => doc.waiting.push((id, version)),
                    None => self.send(json!({
                        "jsonrpc": "2.0", "id": id,
                        "error": { "code": -32801, "message": "Cannot process request to closed file" }
                    })),
                }
            }
            ("$/lean/plainGoal", Some(id)) => {
                let answer = self.goals_at(&uri, &params).map(|goals| {
                    let rendered = if goals.is_empty() {
                        "no goals".to_string()
                    } else {
                        goals
                            .iter()
                            .map(|g| format!("```lean\n{g}\n```"))
                            .collect::<Vec<_>>()
                            .join("\n")
                    };
                    json!({ "rendered": rendered, "goals": goals })
                });
                self.answer(&id, answer.unwrap_or(Value::Null));
            }
            ("$/lean/rpc/connect", Some(id)) => {
                let session = self.next_session.fetch_add(1, Ordering::Relaxed);
                self.answer(&id, json!({ "sessionId": session.to_string() }));
            }
            ("$/lean/rpc/call", Some(id)) => {
                let rpc = params.get("method").and_then(Value::as_str).unwrap_or("");
                if rpc != super::protocol::GET_INTERACTIVE_GOALS {
                    self.send(json!({
                        "jsonrpc": "2.0", "id": id,
                        "error": { "code": -32601, "message": format!("no RPC method '{rpc}'") }
                    }));
                    return true;
                }
                let goals = self
                    .goals_at(&uri, &params.get("params").cloned().unwrap_or_default())
                    .map(|goals| goals.iter().map(|g| interactive(g)).collect::<Vec<_>>());
                let answer = goals.map_or(Value::Null, |goals| json!({ "goals": goals }));
                self.answer(&id, answer);
            }
            (_, Some(id)) => self.answer(&id, Value::Null),
            (_, None) => {}
        }
        true
    }

    /// The script's goals at the position of `params` in `uri`'s text.
    fn goals_at(&self, uri: &str, params: &Value) -> Option<Vec<String>> {
        let line = params.pointer("/position/line")?.as_u64()? as u32;
        let character = params.pointer("/position/character")?.as_u64()? as u32;
        let text = lock(&self.docs).get(uri)?.text.clone();
        (self.shared.script.goals)(&text, line, character)
    }

    /// Elaborate `uri`'s current text as the script says, in a task of its
    /// own (messages keep being read meanwhile); `false` when the server dies.
    fn elaborate(self: &Arc<Self>, uri: &str) -> bool {
        let Some(elaboration) = lock(&self.docs).get(uri).map(|doc| Elaboration {
            uri: uri.to_string(),
            version: doc.version,
            text: doc.text.clone(),
            opened: lock(&self.shared.opened).get(uri).copied().unwrap_or(0),
        }) else {
            return true;
        };
        let report = (self.shared.script.elaborate)(&elaboration);
        if matches!(report, Report::ServerCrash) {
            return false;
        }
        let this = Arc::clone(self);
        tokio::spawn(async move { this.report(elaboration, report).await });
        true
    }

    async fn report(&self, elaboration: Elaboration, report: Report) {
        let Elaboration {
            uri, version, text, ..
        } = &elaboration;
        let lines = text.lines().count().max(1) as u32;
        let whole = json!({ "start": { "line": 0, "character": 0 }, "end": { "line": lines, "character": 0 } });
        let progress = |kind: u8| {
            json!({
                "textDocument": { "uri": uri, "version": version },
                "processing": if kind == 0 { json!([]) } else { json!([{ "range": whole, "kind": kind }]) }
            })
        };
        self.notify("$/lean/fileProgress", progress(1));
        let (diagnostics, fatal) = match report {
            Report::Diagnostics(d) => (d, false),
            Report::Gated(gate, d) => {
                let _ = gate.acquire().await.map(|p| p.forget());
                (d, false)
            }
            Report::Fatal(d) => (d, true),
            Report::LakeSetup(lines, d) => {
                self.wait_asked(uri, *version).await;
                for line in lines {
                    let at = json!({ "start": { "line": 0, "character": 0 }, "end": { "line": 1, "character": 0 } });
                    let set = json!([{
                        "range": at,
                        "fullRange": whole,
                        "severity": 3,
                        "message": format!("{line}\n"),
                    }]);
                    self.notify(
                        "textDocument/publishDiagnostics",
                        json!({ "uri": uri, "version": version, "diagnostics": set }),
                    );
                }
                self.notify(
                    "textDocument/publishDiagnostics",
                    json!({ "uri": uri, "version": version, "diagnostics": [] }),
                );
                (d, false)
            }
            Report::WorkerCrash => {
                if self.is_current(uri, *version) {
                    self.notify("$/lean/fileProgress", progress(2));
                    if let Some(doc) = lock(&self.docs).get_mut(uri) {
                        doc.crashed = true;
                    }
                }
                return;
            }
            Report::ServerCrash => unreachable!("handled in elaborate"),
        };
        // A newer version replaced this one meanwhile: Lean drops it.
        if !self.is_current(uri, *version) {
            return;
        }
        let publish = |set: &[Value]| {
            self.notify(
                "textDocument/publishDiagnostics",
                json!({ "uri": uri, "version": version, "diagnostics": set }),
            )
        };
        for end in 1..diagnostics.len() {
            publish(&diagnostics[..end]);
            tokio::task::yield_now().await;
        }
        publish(&diagnostics);
        self.notify("$/lean/fileProgress", progress(if fatal { 2 } else { 0 }));
        let mut docs = lock(&self.docs);
        let Some(doc) = docs.get_mut(uri).filter(|d| d.version == *version) else {
            return;
        };
        doc.elaborated = Some(*version);
        let (ready, waiting): (Vec<_>, Vec<_>) =
            doc.waiting.drain(..).partition(|(_, v)| *v <= *version);
        doc.waiting = waiting;
        for (id, _) in ready {
            self.answer(&id, json!({}));
        }
    }

    /// Until the client has asked `waitForDiagnostics` of `uri` at `version`
    /// or later.
    async fn wait_asked(&self, uri: &str, version: i64) {
        loop {
            let arrived = self.shared.arrived.notified();
            let asked = lock(&self.shared.received).iter().any(|r| {
                r.method == "textDocument/waitForDiagnostics"
                    && r.uri.as_deref() == Some(uri)
                    && r.version.is_some_and(|v| v >= version)
            });
            if asked {
                return;
            }
            arrived.await;
        }
    }

    fn is_current(&self, uri: &str, version: i64) -> bool {
        lock(&self.docs)
            .get(uri)
            .is_some_and(|d| d.version == version)
    }
}

/// Apply one `contentChanges` entry (a range and its new text, positions in
/// UTF-16 code units; no range replaces the whole text).
fn apply_change(text: &mut String, change: &Value) {
    let new = change.get("text").and_then(Value::as_str).unwrap_or("");
    let Some(range) = change.get("range") else {
        *text = new.to_string();
        return;
    };
    let offset = |at: &str| {
        let line = range
            .pointer(&format!("/{at}/line"))
            .and_then(Value::as_u64)? as usize;
        let character = range
            .pointer(&format!("/{at}/character"))
            .and_then(Value::as_u64)? as usize;
        Some(byte_offset(text, line, character))
    };
    let (Some(start), Some(end)) = (offset("start"), offset("end")) else {
        return;
    };
    text.replace_range(start..end.max(start), new);
}

/// The byte offset of (`line`, `character` in UTF-16 units), clamped to the
/// line's end and the text's end.
fn byte_offset(text: &str, line: usize, character: usize) -> usize {
    let mut start = 0;
    for _ in 0..line {
        match text[start..].find('\n') {
            Some(nl) => start += nl + 1,
            None => return text.len(),
        }
    }
    let rest = &text[start..];
    let line_end = rest.find('\n').unwrap_or(rest.len());
    let mut units = 0;
    for (i, c) in rest[..line_end].char_indices() {
        if units >= character {
            return start + i;
        }
        units += c.len_utf16();
    }
    start + line_end
}

/// A rendered goal (`case x\nh₁ h₂ : T\n⊢ target`) as Lean's RPC sends an
/// `InteractiveGoal` (tagged texts reduced to plain `text` leaves).
fn interactive(goal: &str) -> Value {
    let mut user_name = None;
    let mut hyps = Vec::new();
    let mut target = String::new();
    for line in goal.lines() {
        if let Some(name) = line.strip_prefix("case ") {
            user_name = Some(name.to_string());
        } else if let Some(t) = line.strip_prefix("⊢ ") {
            target = t.to_string();
        } else if let Some((names, ty)) = line.split_once(" : ") {
            let names: Vec<&str> = names.split_whitespace().collect();
            hyps.push(json!({ "names": names, "type": { "text": ty } }));
        }
    }
    let mut goal = json!({ "hyps": hyps, "type": { "text": target }, "goalPrefix": "⊢ " });
    if let Some(name) = user_name {
        goal["userName"] = json!(name);
    }
    goal
}

/// A diagnostic as Lean 4.35 publishes one: `range` (cut at the next line's
/// column 0 for multi-line spans, here the same as `fullRange`), severity
/// (1 error, 2 warning, 3 information), message.
pub fn diagnostic(line: u32, start: u32, end: u32, severity: u8, message: &str) -> Value {
    let range = json!({
        "start": { "line": line, "character": start },
        "end": { "line": line, "character": end }
    });
    json!({
        "range": range,
        "fullRange": range,
        "severity": severity,
        "source": "Lean 4",
        "message": message
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Edits land where LSP positions say, in UTF-16 units.
    #[test]
    fn changes_apply_at_utf16_positions() {
        let mut text = "a ∀ b\n𝔸 x\nend".to_string();
        let change = json!({
            "range": { "start": { "line": 1, "character": 3 }, "end": { "line": 1, "character": 4 } },
            "text": "yz"
        });
        apply_change(&mut text, &change);
        assert_eq!(text, "a ∀ b\n𝔸 yz\nend");
        apply_change(&mut text, &json!({ "text": "whole" }));
        assert_eq!(text, "whole");
    }

    #[test]
    fn rendered_goals_read_as_interactive_goals() {
        let goal = interactive("case succ\nm n : Nat\n⊢ m + n = n + m");
        assert_eq!(goal["userName"], "succ");
        assert_eq!(goal["hyps"][0]["names"], json!(["m", "n"]));
        assert_eq!(goal["type"]["text"], "m + n = n + m");
    }
}
