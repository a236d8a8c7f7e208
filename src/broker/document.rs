//! One document of a workspace runtime: the broker's mirror of the on-disk
//! source, its version, and what Lean has reported for that version.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::watch;

use super::diagnostics;
use super::text::LineIndex;
use super::workspace::DocPath;
use crate::lsp::lean::{FileProgressKind, FileProgressProcessingInfo};
use crate::lsp::tree::Seen;

/// What Lean has reported for the document's current version. Published through
/// a watch channel so that waiting calls see every change.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The version this report belongs to.
    pub version: u64,
    /// The latest complete diagnostic set (silent messages removed).
    pub diagnostics: Arc<Vec<Value>>,
    /// Lean has published diagnostics for this version at least once.
    pub published: bool,
    pub progress: Progress,
    /// What the worker's `lake setup-file` reported for this version.
    pub lake_setup: LakeSetup,
}

/// Lake's build output while the worker set up the imports (`lake setup-file`),
/// which Lean publishes line by line in place of diagnostics (see
/// [`diagnostics::lake_setup_line`]). Lake prints nothing when every import is
/// up to date, so this stays empty then.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LakeSetup {
    /// Lines received for this version.
    pub lines: u64,
    /// The latest line, without its line break.
    pub last: Option<Arc<str>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    /// `$/lean/fileProgress` notifications received for this version.
    pub updates: u64,
    /// Lean reported no remaining work.
    pub done: bool,
    /// Lean reported a fatal error (kind 2), e.g. a crashed worker.
    pub fatal: bool,
    /// The first line still being processed, or the last line once done.
    pub frontier_line: u32,
}

impl Progress {
    pub fn to_json(&self) -> Value {
        json!({ "updates": self.updates, "done": self.done, "range_end_line": self.frontier_line })
    }
}

/// A Lean RPC session of a document's worker.
#[derive(Debug)]
pub struct RpcSession {
    pub generation: u64,
    pub id: String,
}

/// The mirror of one file.
#[derive(Debug)]
pub struct Doc {
    pub path: DocPath,
    pub uri: String,
    /// Serializes the edits of this document (update, sync, refresh, close).
    pub edit: tokio::sync::Mutex<()>,
    state: Mutex<DocState>,
    live: watch::Sender<Snapshot>,
    /// Lean RPC session (for structured goals).
    rpc: Mutex<Option<Arc<RpcSession>>>,
    /// `$/lean/plainGoal` answers for positions of one version (how probes
    /// tell proof mode from command mode): Lean finds a position's snapshot in
    /// time proportional to the commands before it, and an agent probes the
    /// same place again and again.
    probe_goals: Mutex<ProbeGoals>,
}

/// `plainGoal` answers of one version, by (line, character).
#[derive(Debug, Default)]
struct ProbeGoals {
    version: u64,
    answers: Vec<((u64, u64), Value)>,
}

/// Positions remembered per version in `Doc::probe_goals`.
const PROBE_GOALS_KEPT: usize = 64;

#[derive(Debug, Clone)]
pub struct DocState {
    /// The MCP-visible version: increases on every change, never reused, also
    /// across close/reopen and Lean restarts.
    pub version: u64,
    pub text: Arc<str>,
    pub index: Arc<LineIndex>,
    /// Versions of this document start above this one (see `Doc::new`).
    pub floor: u64,
    /// The Lean session generation in which the document is open, if any.
    pub open_in: Option<u64>,
    /// The worker crashed or imports changed: reopen before the next use.
    pub needs_reopen: bool,
    /// Counts what Lean was sent for this document (opens and edits): each one
    /// starts an elaboration whose report is not final yet.
    pub sent: u64,
    /// `Some(sent)` while Lean's report of the current text is final: Lean
    /// answered `waitForDiagnostics` for `version` after the last thing it was
    /// sent, and the document is open in a live worker.
    pub settled: Option<u64>,
    /// The file worker process Lean runs for this document, once seen. Lean
    /// reports a crash as fatal progress, but only after it noticed: the
    /// process itself tells at once.
    pub worker: Option<Seen>,
}

impl DocState {
    /// Lean's report of the current version is complete and nothing has been
    /// sent since: another `waitForDiagnostics` could only answer the same.
    pub fn is_settled(&self) -> bool {
        self.settled == Some(self.sent) && self.open_in.is_some() && !self.needs_reopen
    }

    /// Lean is about to be sent something for this document.
    pub fn unsettle(&mut self) {
        self.sent += 1;
        self.settled = None;
    }
}

impl Doc {
    /// `floor`: the highest version this file had in an earlier runtime of the
    /// process, so that versions keep growing across a drop.
    pub fn new(path: DocPath, uri: String, floor: u64) -> Self {
        let (live, _) = watch::channel(Snapshot::default());
        Doc {
            path,
            uri,
            edit: tokio::sync::Mutex::new(()),
            state: Mutex::new(DocState {
                version: 0,
                floor,
                text: Arc::from(""),
                index: Arc::new(LineIndex::new("")),
                open_in: None,
                needs_reopen: false,
                sent: 0,
                settled: None,
                worker: None,
            }),
            live,
            rpc: Mutex::new(None),
            probe_goals: Mutex::new(ProbeGoals::default()),
        }
    }

    /// Lean's `plainGoal` answer at a position of `version`, if asked before.
    pub fn probe_goal(&self, version: u64, line: u64, character: u64) -> Option<Value> {
        let memo = self.probe_goals.lock().unwrap_or_else(|e| e.into_inner());
        (memo.version == version)
            .then(|| memo.answers.iter().find(|(at, _)| *at == (line, character)))
            .flatten()
            .map(|(_, answer)| answer.clone())
    }

    pub fn remember_probe_goal(&self, version: u64, line: u64, character: u64, answer: &Value) {
        let mut memo = self.probe_goals.lock().unwrap_or_else(|e| e.into_inner());
        if memo.version != version {
            *memo = ProbeGoals {
                version,
                answers: Vec::new(),
            };
        }
        if memo.answers.len() >= PROBE_GOALS_KEPT {
            memo.answers.remove(0);
        }
        memo.answers.push(((line, character), answer.clone()));
    }

    /// The RPC session id opened in Lean session `generation`, if any.
    pub fn rpc_session(&self, generation: u64) -> Option<String> {
        match &*self.rpc.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(rpc) if rpc.generation == generation => Some(rpc.id.clone()),
            _ => None,
        }
    }

    /// Record a new RPC session; it lives while the document holds it (the
    /// keep-alive task watches the returned reference).
    pub fn set_rpc_session(&self, generation: u64, id: String) -> Arc<RpcSession> {
        let rpc = Arc::new(RpcSession { generation, id });
        *self.rpc.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&rpc));
        rpc
    }

    /// Forget the RPC session (the worker was reopened: its sessions are gone).
    pub fn clear_rpc_session(&self) {
        *self.rpc.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// A shadow slot (a virtual document of the broker's own), not a user file.
    pub fn is_shadow(&self) -> bool {
        super::shadow::is_shadow_uri(&self.uri)
    }

    pub fn state(&self) -> DocState {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn update_state<R>(&self, f: impl FnOnce(&mut DocState) -> R) -> R {
        f(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn subscribe(&self) -> watch::Receiver<Snapshot> {
        self.live.subscribe()
    }

    pub fn snapshot(&self) -> Snapshot {
        self.live.borrow().clone()
    }

    /// Start a fresh report for a new version.
    pub fn reset_report(&self, version: u64) {
        self.live.send_replace(Snapshot {
            version,
            ..Snapshot::default()
        });
    }

    /// Apply `textDocument/publishDiagnostics` (a complete set for its version).
    /// A line of Lake's setup output is progress, not a diagnostic: it is
    /// recorded as such and leaves the diagnostics alone.
    pub fn on_diagnostics(&self, version: Option<u64>, diagnostics: &[Value]) {
        let current = self.state().version;
        if version.is_some_and(|v| v != current) {
            return; // a report for an older version
        }
        if let Some(line) = diagnostics::lake_setup_line(diagnostics) {
            let line: Arc<str> = Arc::from(line.trim_end());
            self.live.send_modify(|snap| {
                if snap.version == current {
                    snap.lake_setup.lines += 1;
                    snap.lake_setup.last = Some(line);
                }
            });
            return;
        }
        let mut kept: Vec<Value> = diagnostics
            .iter()
            .filter(|d| !diagnostics::is_silent(d))
            .cloned()
            .collect();
        // Lean's order varies between runs (elaboration, kernel and linters run
        // in parallel); position order makes results reproducible.
        kept.sort_by_key(|d| {
            let at = |p: &str| d.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            (
                at("/range/start/line"),
                at("/range/start/character"),
                diagnostics::severity(d),
            )
        });
        self.live.send_modify(|snap| {
            if snap.version == current {
                snap.diagnostics = Arc::new(kept);
                snap.published = true;
            }
        });
    }

    /// Apply `$/lean/fileProgress`.
    pub fn on_progress(&self, version: Option<u64>, processing: &[FileProgressProcessingInfo]) {
        let state = self.state();
        if version.is_some_and(|v| v != state.version) {
            return;
        }
        // Kind 2 (fatal error): the file's worker stopped. Lean queues every
        // later request for the file until the next didOpen/didChange, so an
        // unchanged file must be reopened, or the next sync waits forever.
        let fatal = processing
            .iter()
            .any(|r| r.kind == FileProgressKind::FATAL_ERROR);
        if fatal {
            self.update_state(|s| {
                if s.version == state.version {
                    s.needs_reopen = true;
                }
            });
        }
        let line_count = state.index.line_count().saturating_sub(1) as u32;
        self.live.send_modify(|snap| {
            if snap.version != state.version {
                return;
            }
            let p = &mut snap.progress;
            p.updates += 1;
            // Each report replaces the previous one. A crash report that
            // overtook a reopen of the same version is followed by the new
            // worker's reports, which end it.
            p.fatal = fatal;
            if processing.is_empty() {
                p.done = true;
                p.frontier_line = line_count;
            } else {
                p.done = false;
                p.frontier_line = processing
                    .iter()
                    .map(|r| r.range.start.line)
                    .min()
                    .unwrap_or(0);
            }
        });
    }

    /// The worker of this document crashed: report it as fatal and reopen later.
    pub fn on_crash(&self) {
        self.update_state(|s| s.needs_reopen = true);
        self.live.send_modify(|snap| snap.progress.fatal = true);
    }
}
