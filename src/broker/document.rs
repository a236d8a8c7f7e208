//! One document of a workspace runtime: the broker's mirror of the on-disk
//! source, its version, and what Lean has reported for that version.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::watch;

use super::diagnostics;
use super::errors::MemoryKill;
use super::text::LineIndex;
use super::workspace::DocPath;
use crate::log_warn;
use crate::lsp::protocol::{FileProgressKind, FileProgressProcessingInfo};
use crate::process::tree::Seen;
use crate::results::DocumentProgress;

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

/// One complete diagnostic set as Lean published it, read on first use. Lean
/// republishes the whole set after each command that adds to it (44 MB of
/// JSON over an elaboration of a file with 400 warnings), and usually only the
/// last set of a version is ever read.
#[derive(Debug, Default)]
pub struct DiagnosticSet {
    published: Option<Box<RawValue>>,
    items: OnceLock<Vec<Value>>,
}

/// The diagnostics of a published list: objects only, silent ones
/// (editor-only "Goals accomplished!") dropped, the server's private paths
/// left out of their messages, in position order.
fn kept_in_position_order(list: Vec<Value>) -> Vec<Value> {
    let mut kept: Vec<Value> = list
        .into_iter()
        .filter(|d| d.is_object() && !diagnostics::is_silent(d))
        .map(|mut d| {
            diagnostics::scrub(&mut d);
            d
        })
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
    kept
}

/// Sets larger than this cannot be one line of Lake's output.
const LAKE_LINE_MAX: usize = 64 * 1024;

impl DiagnosticSet {
    pub fn published(raw: Box<RawValue>) -> Self {
        DiagnosticSet {
            published: Some(raw),
            items: OnceLock::new(),
        }
    }

    /// The diagnostics: objects only, silent ones (editor-only "Goals
    /// accomplished!") dropped, in position order.
    pub fn items(&self) -> &[Value] {
        self.items.get_or_init(|| {
            let Some(raw) = &self.published else {
                return Vec::new();
            };
            let list: Vec<Value> = serde_json::from_str(raw.get()).unwrap_or_else(|e| {
                log_warn!("Lean published diagnostics that are not a list ({e}); read as none");
                Vec::new()
            });
            kept_in_position_order(list)
        })
    }

    /// The diagnostics this set adds to `earlier`, when Lean only appended
    /// to it: its text is the earlier text with more elements after them.
    /// Read without reading the rest (Lean republishes every diagnostic so
    /// far after each command, so reading each set whole is quadratic).
    /// `None` when this set is not such an extension.
    pub fn appended_since(&self, earlier: &DiagnosticSet) -> Option<Vec<Value>> {
        let now = self.published.as_ref()?.get();
        let before = earlier.published.as_ref()?.get();
        let before_open = before.strip_suffix(']')?;
        let list: Vec<Value> = if before_open == "[" {
            serde_json::from_str(now).ok()?
        } else {
            let rest = now.strip_prefix(before_open)?;
            if rest == "]" {
                return Some(Vec::new());
            }
            serde_json::from_str(&format!("[{}", rest.strip_prefix(',')?)).ok()?
        };
        Some(kept_in_position_order(list))
    }

    /// Whether some diagnostic of the set may be an error: read without
    /// building the set, for callers that only want its errors.
    pub fn may_hold_errors(&self) -> bool {
        #[derive(serde::Deserialize)]
        struct Severity {
            #[serde(default)]
            severity: Option<u64>,
        }
        if let Some(items) = self.items.get() {
            return items
                .iter()
                .any(|d| diagnostics::severity(d) == diagnostics::ERROR);
        }
        let Some(raw) = &self.published else {
            return false;
        };
        // Anything unreadable here is left to the full reading.
        serde_json::from_str::<Vec<Severity>>(raw.get()).map_or(true, |list| {
            list.iter()
                .any(|d| d.severity.unwrap_or(diagnostics::ERROR) == diagnostics::ERROR)
        })
    }

    /// The line of Lake's setup output this set stands for, if it is one.
    fn lake_setup_line(&self) -> Option<&str> {
        let raw = self.published.as_ref()?;
        if raw.get().len() > LAKE_LINE_MAX {
            return None;
        }
        diagnostics::lake_setup_line(self.items())
    }
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
    /// Calls in flight on this document (see [`DocUse`]).
    in_flight: AtomicUsize,
    /// When a call last began or ended on it.
    last_used: Mutex<Instant>,
}

/// A call's use of a document. While one exists the document is busy: it is
/// never closed to make room for another (see `Runtime::admit`). Documents
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
    answers: Vec<((u64, u64), Value)>,
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
    /// The Lean session generation in which the document is open, if any.
    pub open_in: Option<u64>,
    /// The worker crashed or imports changed: reopen before the next use.
    /// Set through [`DocState::mark_for_reopen`] or by Lean's fatal report.
    pub needs_reopen: bool,
    /// `needs_reopen` stands only for Lean's latest report of this version
    /// being fatal. Lean writes a crash's answer before its fatal report, so
    /// the report can reach the document after the next request already
    /// reopened it; the new worker's reports of the version then end it.
    pub stopped_by_report: bool,
    /// Counts what Lean was sent for this document (opens and edits): each one
    /// starts an elaboration whose report is not final yet.
    pub sent: u64,
    /// `Some(sent)` while Lean's report of the current text is final: Lean
    /// answered `waitForDiagnostics` for `version` after the last thing it was
    /// sent, and the document is open in a live worker.
    pub settled: Option<u64>,
    /// The file worker process Lean runs for this document, once seen
    /// (`beam_stats.workerPid`). Lean reports a crash as fatal progress, but
    /// only after it noticed: the process itself tells at once.
    pub worker: Option<Seen>,
    /// The worker was killed for using more memory than allowed: the calls
    /// on it get that error instead of a crash, until Lean is sent anything
    /// for the document again (a reopen or an edit starts a new worker).
    pub memory_kill: Option<MemoryKill>,
}

impl DocState {
    /// Lean's report of the current version is complete and nothing has been
    /// sent since: another `waitForDiagnostics` could only answer the same.
    pub fn is_settled(&self) -> bool {
        self.settled == Some(self.sent) && self.open_in.is_some() && !self.needs_reopen
    }

    /// Reopen before the next use, whatever Lean reports meanwhile.
    pub fn mark_for_reopen(&mut self) {
        self.needs_reopen = true;
        self.stopped_by_report = false;
    }

    /// Lean is about to be sent something for this document.
    pub fn unsettle(&mut self) {
        self.sent += 1;
        self.settled = None;
        self.memory_kill = None;
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
                disk: None,
                open_in: None,
                needs_reopen: false,
                stopped_by_report: false,
                sent: 0,
                settled: None,
                worker: None,
                memory_kill: None,
            }),
            live,
            rpc: Mutex::new(None),
            probe_goals: Mutex::new(ProbeGoals::default()),
            in_flight: AtomicUsize::new(0),
            last_used: Mutex::new(Instant::now()),
        }
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
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
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
    pub fn on_diagnostics(&self, version: Option<u64>, set: DiagnosticSet) {
        let current = self.state().version;
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
        if fatal || state.stopped_by_report {
            self.update_state(|s| {
                if s.version != state.version {
                    return;
                }
                if fatal {
                    // A reopen already asked for otherwise stays asked for.
                    s.stopped_by_report = s.stopped_by_report || !s.needs_reopen;
                    s.needs_reopen = true;
                } else if s.stopped_by_report {
                    // A worker runs the file again: the fatal report was the
                    // last word of the one before the latest (re)open.
                    s.needs_reopen = false;
                    s.stopped_by_report = false;
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

    /// The worker of this document crashed: report it as fatal and reopen later.
    pub fn on_crash(&self) {
        self.update_state(DocState::mark_for_reopen);
        self.live.send_modify(|snap| snap.progress.fatal = true);
    }

    /// A request sent when Lean had been sent `sent` things for this document
    /// failed because the worker crashed. If the document was reopened or
    /// edited since, that worker is not the one Lean runs now (an edit makes
    /// Lean restart a crashed worker), and the answer is news of the past.
    pub fn on_crash_of(&self, sent: u64) {
        if self.state().sent == sent {
            self.on_crash();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(json: &str) -> DiagnosticSet {
        DiagnosticSet::published(RawValue::from_string(json.to_owned()).unwrap())
    }

    #[test]
    fn a_published_set_is_read_once_in_position_order_without_silent_ones() {
        let warnings = set(
            r#"[{"severity":2,"message":"b","range":{"start":{"line":3,"character":0},"end":{"line":3,"character":1}}},
                {"severity":3,"isSilent":true,"message":"Goals accomplished!","range":{"start":{"line":1,"character":0},"end":{"line":1,"character":1}}},
                {"severity":2,"message":"a","range":{"start":{"line":1,"character":4},"end":{"line":1,"character":5}}}]"#,
        );
        assert!(!warnings.may_hold_errors(), "read without building it");
        let messages: Vec<&str> = warnings.items().iter().map(diagnostics::message).collect();
        assert_eq!(messages, ["a", "b"]);
        assert!(!warnings.may_hold_errors(), "and from the built set");
        // A severity left out means an error, as everywhere else.
        assert!(set(r#"[{"message":"m"}]"#).may_hold_errors());
        assert!(
            set(r#"{"not":"a list"}"#).may_hold_errors(),
            "unreadable: read in full"
        );
        assert!(set(r#"{"not":"a list"}"#).items().is_empty());
        assert!(set("[7]").may_hold_errors(), "unreadable: read in full");
        assert!(
            set("[7]").items().is_empty(),
            "only objects are diagnostics"
        );
        assert!(DiagnosticSet::default().items().is_empty());
    }

    #[test]
    fn a_set_that_appends_to_an_earlier_one_is_read_from_where_that_ended() {
        let d = |line: u32, message: &str| {
            format!(
                r#"{{"severity":2,"message":"{message}","range":{{"start":{{"line":{line},"character":0}},"end":{{"line":{line},"character":1}}}}}}"#
            )
        };
        let silent = r#"{"severity":3,"isSilent":true,"message":"Goals accomplished!"}"#;
        let one = set(&format!("[{}]", d(1, "a")));
        let three = set(&format!(
            "[{},{},{silent},{}]",
            d(1, "a"),
            d(9, "c"),
            d(4, "b")
        ));
        let added = three.appended_since(&one).expect("an extension");
        let messages: Vec<&str> = added.iter().map(diagnostics::message).collect();
        assert_eq!(
            messages,
            ["b", "c"],
            "new ones only, no silent, in position order"
        );
        assert!(three.items.get().is_none(), "the whole set was not read");
        assert_eq!(one.appended_since(&one).map(|a| a.len()), Some(0));
        let from_empty = one.appended_since(&set("[]")).expect("all of it is new");
        assert_eq!(from_empty.len(), 1);
        // Not extensions: an element put in between, a last element that
        // goes on past where the earlier one ended, a shorter set, no
        // earlier text.
        let between = set(&format!("[{},{},{}]", d(0, "z"), d(1, "a"), d(9, "c")));
        assert!(between.appended_since(&one).is_none());
        assert!(set("[12]").appended_since(&set("[1]")).is_none());
        assert!(one.appended_since(&three).is_none());
        assert!(one.appended_since(&DiagnosticSet::default()).is_none());
    }

    #[test]
    fn a_fatal_report_that_trails_a_reopen_is_ended_by_the_new_workers_reports() {
        let doc = Doc::new(
            DocPath {
                file: "/w/F.lean".into(),
                shown: "F.lean".into(),
            },
            "file:///w/F.lean".into(),
            0,
        );
        doc.update_state(|s| {
            s.version = 2;
            s.open_in = Some(1);
        });
        doc.reset_report(2);
        let report = |kind: u8| -> Vec<FileProgressProcessingInfo> {
            serde_json::from_value(serde_json::json!([{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 9, "character": 0}}, "kind": kind}])).unwrap()
        };
        // The crash's report arrives after the reopen: the file looks stopped...
        doc.on_progress(Some(2), &report(2));
        assert!(doc.state().needs_reopen);
        assert!(doc.snapshot().progress.fatal);
        // ...until the new worker reports the same version.
        doc.on_progress(Some(2), &report(1));
        assert!(!doc.state().needs_reopen);
        assert!(!doc.snapshot().progress.fatal);
        doc.on_progress(Some(2), &[]);
        assert!(!doc.state().needs_reopen);
        // The crash answer of a request sent before the latest (re)open or
        // edit is news of a worker Lean no longer runs.
        let sent = doc.state().sent;
        doc.update_state(DocState::unsettle);
        doc.on_crash_of(sent);
        assert!(
            !doc.state().needs_reopen,
            "an answer from before the reopen"
        );
        // A reopen asked for by anything else stays asked for.
        doc.on_crash_of(sent + 1);
        doc.on_progress(Some(2), &report(1));
        assert!(doc.state().needs_reopen, "a crashed answer");
        doc.update_state(|s| s.needs_reopen = false);
        doc.update_state(DocState::mark_for_reopen);
        doc.on_progress(Some(2), &report(2));
        doc.on_progress(Some(2), &report(1));
        assert!(doc.state().needs_reopen, "marked before the fatal report");
    }

    #[test]
    fn only_a_small_set_can_be_a_line_of_lake_output() {
        let line = r#"[{"severity":3,"message":"✔ [2/5] Built Fix.Basic","range":{"start":{"line":0,"character":0},"end":{"line":1,"character":0}},"fullRange":{"start":{"line":0,"character":0},"end":{"line":1,"character":0}}}]"#;
        assert_eq!(set(line).lake_setup_line(), Some("✔ [2/5] Built Fix.Basic"));
        let padded = line.replace("Built", &format!("Built{}", " ".repeat(LAKE_LINE_MAX)));
        assert_eq!(set(&padded).lake_setup_line(), None);
    }
}
