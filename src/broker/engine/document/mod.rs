//! One document of a workspace runtime: the broker's mirror of the on-disk
//! source, its version, and what Lean has reported for that version.
//!
//! The document's life in Lean is one state machine ([`state::Lifecycle`]);
//! what Lean reports applies to it as events. Changing the text, or opening
//! and closing the document in Lean, takes the document's edit lock, held as
//! a [`DocEdit`]: the functions that need it take one.

mod diagnostic_set;
pub mod state;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::watch;

use super::workspace::DocPath;
use crate::broker::error::MemoryKill;
use crate::lean_source::text::LineIndex;
use crate::lsp::protocol::{FileProgressKind, FileProgressProcessingInfo, PlainGoalResult};
use crate::process::tree::Seen;
use crate::results::DocumentProgress;
use crate::util::lock;
pub use diagnostic_set::DiagnosticSet;
pub use state::{Lifecycle, Notice, Sent, Worker};

/// What is known of a document's file worker when its exit is waited for
/// (see `LeanServer::wait_worker_gone`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KnownWorker {
    /// The process was seen (a sync looked it up): its exit ends the wait.
    Seen(Seen),
    /// Not looked up, but it reported for the current opening (diagnostics or
    /// file progress come from the worker): it started, so one no longer in
    /// the tree is gone. Probe slots are here: their workers are never
    /// looked up.
    Reported,
    /// Neither: it may not have started yet (a `didOpen` without a barrier).
    Unknown,
}

/// The marker in every shadow URI (a probe's virtual document); results from
/// Lean that name one (references, symbols) are filtered out, since shadows
/// are the broker's own artifacts.
pub const SHADOW_MARKER: &str = ".beam-shadow-";

pub fn is_shadow_uri(uri: &str) -> bool {
    uri.contains(SHADOW_MARKER)
}

/// What Lean has reported for the document's current version. Published through
/// a watch channel so that waiting calls see every change.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The version this report belongs to.
    pub version: u64,
    /// The latest complete diagnostic set.
    pub diagnostics: Arc<DiagnosticSet>,
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
    /// What results and errors show of it.
    pub fn summary(&self) -> DocumentProgress {
        DocumentProgress {
            updates: self.updates,
            done: self.done,
            range_end_line: self.frontier_line,
        }
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
    /// Serializes the edits of this document (update, sync, refresh, close):
    /// held through a [`DocEdit`].
    edit: tokio::sync::Mutex<()>,
    state: Mutex<DocState>,
    live: watch::Sender<Snapshot>,
    /// Lean RPC session (for structured goals).
    rpc: Mutex<Option<Arc<RpcSession>>>,
    /// `$/lean/plainGoal` answers for positions of one version (how probes
    /// tell proof mode from command mode): Lean finds a position's snapshot in
    /// time proportional to the commands before it, and an agent probes the
    /// same place again and again.
    probe_goals: Mutex<ProbeGoals>,
    /// Calls in flight on this document (see [`DocUse`]).
    in_flight: AtomicUsize,
    /// When a call last began or ended on it.
    last_used: Mutex<Instant>,
}

/// A call's use of a document. While one exists the document is busy: it is
/// never closed to make room for another (see `LeanServer::admit`). Documents
/// are closed least recently used first, by when a use last began or ended.
#[derive(Debug)]
pub struct DocUse(Arc<Doc>);

impl std::ops::Deref for DocUse {
    type Target = Arc<Doc>;

    fn deref(&self) -> &Arc<Doc> {
        &self.0
    }
}

impl Drop for DocUse {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// `plainGoal` answers of one version, by (line, character).
#[derive(Debug, Default)]
struct ProbeGoals {
    version: u64,
    /// Lean's `plainGoal` answers (`None`: outside a tactic block).
    answers: Vec<((u64, u64), Option<PlainGoalResult>)>,
}

/// Positions remembered per version in `Doc::probe_goals`.
const PROBE_GOALS_KEPT: usize = 64;

/// What the file on disk looked like when the text of a version was read:
/// enough to tell, with one `stat`, that it has changed since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskStamp {
    pub len: u64,
    pub modified: Option<std::time::SystemTime>,
}

impl DiskStamp {
    pub fn of(meta: &std::fs::Metadata) -> Self {
        DiskStamp {
            len: meta.len(),
            modified: meta.modified().ok(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct DocState {
    /// The MCP-visible version: increases on every change, never reused, also
    /// across close/reopen and Lean restarts.
    pub version: u64,
    pub text: Arc<str>,
    pub index: Arc<LineIndex>,
    /// The file as it was when `text` was read from it (`None` for the
    /// broker's own shadow documents, or when it could not be told).
    pub disk: Option<DiskStamp>,
    /// Versions of this document start above this one (see `Doc::new`).
    pub floor: u64,
    /// Where the document is in Lean.
    pub lifecycle: Lifecycle,
}

/// A new text of a document: the version it is, and what it was read from.
pub struct Content {
    pub version: u64,
    pub text: Arc<str>,
    pub disk: Option<DiskStamp>,
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
                disk: None,
                lifecycle: Lifecycle::default(),
            }),
            live,
            rpc: Mutex::new(None),
            probe_goals: Mutex::new(ProbeGoals::default()),
            in_flight: AtomicUsize::new(0),
            last_used: Mutex::new(Instant::now()),
        }
    }

    /// The edit lock: waits for the edit in progress, if any.
    pub async fn lock_edit(&self) -> DocEdit<'_> {
        DocEdit {
            doc: self,
            _held: self.edit.lock().await,
        }
    }

    /// The edit lock if no edit is in progress.
    pub fn try_lock_edit(&self) -> Option<DocEdit<'_>> {
        let held = self.edit.try_lock().ok()?;
        Some(DocEdit {
            doc: self,
            _held: held,
        })
    }

    /// Begin a call's use of the document (ends when the use is dropped).
    pub fn begin_use(self: &Arc<Self>) -> DocUse {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.touch();
        DocUse(Arc::clone(self))
    }

    /// No call is in flight on the document.
    pub fn is_idle(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
    }

    /// When a call last began or ended on the document.
    pub fn last_used(&self) -> Instant {
        *lock(&self.last_used)
    }

    fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    /// Lean's `plainGoal` answer at a position of `version`, if asked before.
    pub fn probe_goal(
        &self,
        version: u64,
        line: u64,
        character: u64,
    ) -> Option<Option<PlainGoalResult>> {
        let memo = lock(&self.probe_goals);
        (memo.version == version)
            .then(|| memo.answers.iter().find(|(at, _)| *at == (line, character)))
            .flatten()
            .map(|(_, answer)| answer.clone())
    }

    pub fn remember_probe_goal(
        &self,
        version: u64,
        line: u64,
        character: u64,
        answer: &Option<PlainGoalResult>,
    ) {
        let mut memo = lock(&self.probe_goals);
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
        match &*lock(&self.rpc) {
            Some(rpc) if rpc.generation == generation => Some(rpc.id.clone()),
            _ => None,
        }
    }

    /// Record a new RPC session; it lives while the document holds it (the
    /// keep-alive task watches the returned reference).
    pub fn set_rpc_session(&self, generation: u64, id: String) -> Arc<RpcSession> {
        let rpc = Arc::new(RpcSession { generation, id });
        *lock(&self.rpc) = Some(Arc::clone(&rpc));
        rpc
    }

    /// A shadow slot (a virtual document of the broker's own), not a user file.
    pub fn is_shadow(&self) -> bool {
        is_shadow_uri(&self.uri)
    }

    pub fn state(&self) -> DocState {
        lock(&self.state).clone()
    }

    /// Where the document is in Lean.
    pub fn lifecycle(&self) -> Lifecycle {
        lock(&self.state).lifecycle
    }

    /// What is known of the worker of the document's current opening, for
    /// waiting on its exit once the document is closed.
    pub fn known_worker(&self) -> KnownWorker {
        if let Some(seen) = self.lifecycle().worker() {
            return KnownWorker::Seen(seen);
        }
        // Only a probe slot: its report is reset with each opening. A user
        // document reopened at the same version keeps its last report, which
        // says nothing of the new worker (an evicted document's worker must
        // still be waited for to appear).
        let live = self.live.borrow();
        if self.is_shadow() && (live.published || live.progress.updates > 0) {
            KnownWorker::Reported
        } else {
            KnownWorker::Unknown
        }
    }

    fn update_state<R>(&self, f: impl FnOnce(&mut DocState) -> R) -> R {
        f(&mut lock(&self.state))
    }

    pub fn subscribe(&self) -> watch::Receiver<Snapshot> {
        self.live.subscribe()
    }

    pub fn snapshot(&self) -> Snapshot {
        self.live.borrow().clone()
    }

    /// Apply `textDocument/publishDiagnostics` (a complete set for its version).
    /// A line of Lake's setup output is progress, not a diagnostic: it is
    /// recorded as such and leaves the diagnostics alone.
    pub fn on_diagnostics(&self, version: Option<u64>, set: DiagnosticSet) {
        let current = lock(&self.state).version;
        if version.is_some_and(|v| v != current) {
            return; // a report for an older version
        }
        if let Some(line) = set.lake_setup_line() {
            let line: Arc<str> = Arc::from(line.trim_end());
            self.live.send_modify(|snap| {
                if snap.version == current {
                    snap.lake_setup.lines += 1;
                    snap.lake_setup.last = Some(line);
                }
            });
            return;
        }
        let set = Arc::new(set);
        self.live.send_modify(|snap| {
            if snap.version == current {
                snap.diagnostics = set;
                snap.published = true;
            }
        });
    }

    /// Apply `$/lean/fileProgress`. Kind 2 (fatal error): the file's worker
    /// stopped. Lean queues every later request for the file until the next
    /// didOpen/didChange, so an unchanged file must be reopened, or the next
    /// sync waits forever (see [`Lifecycle::progress`]).
    pub fn on_progress(&self, version: Option<u64>, processing: &[FileProgressProcessingInfo]) {
        let fatal = processing
            .iter()
            .any(|r| r.kind == FileProgressKind::FATAL_ERROR);
        let applied = self.update_state(|s| {
            if version.is_some_and(|v| v != s.version) {
                return None;
            }
            s.lifecycle.progress(if fatal {
                Worker::Stopped
            } else {
                Worker::Alive
            });
            Some((s.version, s.index.line_count().saturating_sub(1) as u32))
        });
        let Some((version, line_count)) = applied else {
            return;
        };
        self.live.send_modify(|snap| {
            if snap.version != version {
                return;
            }
            let p = &mut snap.progress;
            p.updates += 1;
            // Each report replaces the previous one. A crash report that
            // reaches the document after a reopen of the same version is
            // followed by the new worker's reports, which end it.
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

    /// A request sent when Lean had been sent `sent_at` failed because the
    /// worker crashed or exited (see [`Lifecycle::crash_answer`]): if that
    /// is the worker Lean runs now, report it as fatal and reopen later.
    pub fn on_crash_answer(&self, sent_at: Sent) {
        if self.update_state(|s| s.lifecycle.crash_answer(sent_at)) {
            self.live.send_modify(|snap| snap.progress.fatal = true);
        }
    }

    /// A wait gave up on a worker Lean reported stopped: report it as fatal
    /// and reopen later.
    pub fn on_stopped_wait(&self) {
        self.update_state(|s| s.lifecycle.stopped_wait());
        self.live.send_modify(|snap| snap.progress.fatal = true);
    }

    /// `worker` runs the file after what was sent as `sent_at` (see
    /// [`Lifecycle::worker_seen`]).
    pub fn on_worker_seen(&self, sent_at: Sent, worker: Seen) {
        self.update_state(|s| s.lifecycle.worker_seen(sent_at, worker));
    }

    /// Lean answered `waitForDiagnostics` for `version`, sent as `sent_at`;
    /// `worker` runs the file (see [`Lifecycle::wait_answered`]).
    pub fn on_wait_answered(&self, sent_at: Sent, version: u64, worker: Option<Seen>) {
        self.update_state(|s| {
            if s.version == version {
                s.lifecycle.wait_answered(sent_at, worker);
            }
        });
    }

    /// Lean server `generation` is gone.
    pub fn on_server_gone(&self, generation: u64) {
        self.update_state(|s| s.lifecycle.server_gone(generation));
    }

    /// Reopen before the next use (its imports were rebuilt).
    pub fn mark_for_reopen(&self) {
        self.update_state(|s| s.lifecycle.mark_for_reopen());
    }

    /// The worker was killed for its memory.
    pub fn on_memory_kill(&self, kill: MemoryKill) {
        self.update_state(|s| s.lifecycle.memory_killed(kill));
    }
}

/// The edit lock of a document, held: the text changes, and the document
/// opens and closes in Lean, only through one. Dropping it lets the next
/// edit in.
pub struct DocEdit<'a> {
    doc: &'a Doc,
    _held: tokio::sync::MutexGuard<'a, ()>,
}

impl std::ops::Deref for DocEdit<'_> {
    type Target = Doc;

    fn deref(&self) -> &Doc {
        self.doc
    }
}

impl DocEdit<'_> {
    /// The unchanged text stands for what the disk holds now.
    pub fn set_disk(&self, disk: Option<DiskStamp>) {
        self.doc.update_state(|s| s.disk = disk);
    }

    fn set_content(state: &mut DocState, content: Content) {
        state.version = content.version;
        state.index = Arc::new(LineIndex::new(&content.text));
        state.text = content.text;
        state.disk = content.disk;
    }

    /// Open the document in Lean server `generation`, with `content` as its
    /// new text (`None`: the current text again). The new version is
    /// recorded before Lean hears of it, so that none of its notifications is
    /// mistaken for a stale one; what Lean reported of the old one goes.
    pub fn open(&self, generation: u64, content: Option<Content>) -> Notice {
        let (notice, version) = self.doc.update_state(|s| {
            if let Some(content) = content {
                Self::set_content(s, content);
            }
            (s.lifecycle.open(generation), s.version)
        });
        self.reset_report(version);
        notice
    }

    /// Edit the open document in place to `content`.
    pub fn change(&self, content: Content) -> Notice {
        let version = content.version;
        let notice = self.doc.update_state(|s| {
            Self::set_content(s, content);
            s.lifecycle.change()
        });
        self.reset_report(version);
        notice
    }

    /// Close the document (see [`Lifecycle::close`]); `live`: the Lean server
    /// running now.
    pub fn close(&self, live: Option<u64>) -> Option<Notice> {
        self.doc.update_state(|s| s.lifecycle.close(live))
    }

    /// Forget the RPC session (the worker is replaced: its sessions are gone).
    pub fn clear_rpc_session(&self) {
        *lock(&self.doc.rpc) = None;
    }

    /// Start a fresh report for a new version.
    fn reset_report(&self, version: u64) {
        self.doc.live.send_replace(Snapshot {
            version,
            ..Snapshot::default()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Doc {
        Doc::new(
            DocPath {
                file: "/w/F.lean".into(),
                shown: "F.lean".into(),
            },
            "file:///w/F.lean".into(),
            0,
        )
    }

    fn content(version: u64, text: &str) -> Content {
        Content {
            version,
            text: Arc::from(text),
            disk: None,
        }
    }

    fn report(kind: u8) -> Vec<FileProgressProcessingInfo> {
        serde_json::from_value(serde_json::json!([{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 9, "character": 0}}, "kind": kind}])).unwrap()
    }

    /// What Lean reports reaches the lifecycle only for the current version,
    /// and the live report follows it: the crash's fatal report that arrives
    /// after the reopen shows as fatal until the new worker reports.
    #[tokio::test]
    async fn reports_apply_to_the_current_version_only() {
        let doc = doc();
        let edit = doc.lock_edit().await;
        assert_eq!(edit.open(1, Some(content(2, "a\nb\n"))), Notice::Open);
        drop(edit);
        doc.on_progress(Some(1), &report(2));
        assert!(doc.lifecycle().is_open_in(1), "an older version's report");
        doc.on_progress(Some(2), &report(2));
        assert!(!doc.lifecycle().is_open_in(1));
        assert!(doc.snapshot().progress.fatal);
        doc.on_progress(Some(2), &report(1));
        assert!(doc.lifecycle().is_open_in(1));
        assert!(!doc.snapshot().progress.fatal);
        doc.on_progress(Some(2), &[]);
        let snap = doc.snapshot();
        assert!(snap.progress.done);
        assert_eq!((snap.progress.updates, snap.progress.frontier_line), (3, 2));
        // A wait answered for another version settles nothing.
        let sent = doc.lifecycle().sent();
        doc.on_wait_answered(sent, 1, None);
        assert!(!doc.lifecycle().is_settled());
        doc.on_wait_answered(sent, 2, None);
        assert!(doc.lifecycle().is_settled());
    }

    /// A crash answer to what Lean runs now marks the file and its live
    /// report fatal; a stale one changes neither.
    #[tokio::test]
    async fn a_crash_answer_shows_in_the_report_only_when_current() {
        let doc = doc();
        let edit = doc.lock_edit().await;
        edit.open(1, Some(content(1, "x")));
        let before = doc.lifecycle().sent();
        edit.change(content(2, "y"));
        drop(edit);
        doc.on_crash_answer(before);
        assert!(doc.lifecycle().is_open_in(1));
        assert!(!doc.snapshot().progress.fatal);
        doc.on_crash_answer(doc.lifecycle().sent());
        assert!(!doc.lifecycle().is_open_in(1));
        assert!(doc.snapshot().progress.fatal);
        // A reopen asked for that way outlives the reports of the worker.
        doc.on_progress(Some(2), &report(1));
        assert!(!doc.lifecycle().is_open_in(1));
    }

    /// Only one edit holds a document at a time.
    #[tokio::test]
    async fn the_edit_lock_is_exclusive() {
        let doc = doc();
        let edit = doc.lock_edit().await;
        assert!(doc.try_lock_edit().is_none());
        drop(edit);
        assert!(doc.try_lock_edit().is_some());
    }
}
