//! Bringing Lean's copy of a document up to date with the file on disk, and the
//! elaboration barrier that makes diagnostics exact for one version.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::diagnostics::{self, IMPORTS_OUT_OF_DATE};
use super::document::{DiagnosticSet, DiskStamp, Doc, DocState, Snapshot};
use super::errors::from_lsp;
use super::runtime::{Runtime, Session, memory_error};
use super::text::{LineIndex, minimal_change, position_json};
use crate::context::{CallContext, LogLevel};
use crate::safe_fs;
use crate::surface::{DiagnosticScope, ErrorCode, StatusNotice, ToolError};

/// Progress notifications are throttled to at most one per this interval
/// (the final `done` update is never throttled).
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// How long a request keeps waiting after Lean reported its version fatal (the
/// file's worker stopped). A worker that failed on the header still answers
/// at once; a crashed one never does: Lean holds requests for the file until
/// it is reopened.
pub const STOPPED_WORKER_GRACE: Duration = Duration::from_millis(1000);

/// `data.reason` of the error for a request held by a stopped worker.
pub const WORKER_STOPPED: &str = "workerStopped";

/// The error of a request that Lean holds because the file's worker stopped.
/// Marks the document for reopening, so the next request recovers.
pub fn worker_stopped(doc: &Doc, version: u64) -> ToolError {
    doc.on_crash();
    ToolError::new(
        ErrorCode::WorkerCrashed,
        format!(
            "the Lean worker of {} stopped (fatal file progress) and Lean holds requests for it until it is reopened; the next lean_sync reopens the file",
            doc.path.shown
        ),
    )
    .with_data(json!({ "reason": WORKER_STOPPED, "path": doc.path.shown, "version": version }))
}

/// What `apply` did.
#[derive(Debug, Clone, Copy)]
pub struct Applied {
    pub version: u64,
    pub changed: bool,
    /// Lean was sent an edit or a (re)open.
    pub sent: bool,
}

/// How an edit is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Send the change if the file differs (update, sync).
    IfChanged,
    /// Re-elaborate from scratch under a new version even if unchanged (refresh,
    /// imports rebuilt).
    Reelaborate,
}

/// Read the source from disk, at most `max_bytes` of it. The server only ever
/// reads `.lean` files, and only regular ones: the read runs off the runtime
/// (the hop to the blocking pool costs 7 to 13 us of every sync and update,
/// `cargo bench --bench safe_fs`; a FIFO or a hung mount in its place would
/// cost every other call) and never follows a link swapped in for the
/// canonical name.
pub async fn read_source(doc: &Doc, max_bytes: u64) -> Result<Arc<str>, ToolError> {
    let read = safe_fs::read_regular(
        &doc.path.file,
        safe_fs::Links::Refuse,
        max_bytes,
        safe_fs::Oversize::Refuse,
    )
    .await;
    let bytes = read
        .map_err(|e| {
            let mut error = e.tool_error();
            if let safe_fs::FsError::TooLarge { .. } = e {
                error
                    .message
                    .push_str(" (LEAN_BEAM_MAX_FILE_BYTES raises the limit)");
            }
            if let Some(data) = error.data.as_mut() {
                data["field"] = json!("path");
                data["value"] = json!(doc.path.shown);
            }
            error
        })?
        .bytes;
    String::from_utf8(bytes).map(Arc::from).map_err(|e| {
        ToolError::new(
            ErrorCode::InvalidInput,
            format!(
                "{} is not valid UTF-8 ({e}); Lean sources are UTF-8",
                doc.path.shown
            ),
        )
        .with_data(json!({ "field": "path", "value": doc.path.shown }))
    })
}

/// Before `doc` is (re)opened in `session`: close its current opening there,
/// if any, and make room for it within the bound on open documents (see
/// [`Session::admit`]). The caller holds `doc.edit`.
pub async fn make_room(session: &Session, doc: &Doc, old: &DocState) -> Result<(), ToolError> {
    let reopen = old.open_in == Some(session.generation);
    if reopen {
        let closed = session.client.notify(
            "textDocument/didClose",
            json!({ "textDocument": { "uri": doc.uri } }),
        );
        if let Err(error) = closed {
            doc.update_state(DocState::mark_for_reopen);
            return Err(from_lsp(error, "textDocument/didClose"));
        }
        doc.update_state(|s| s.open_in = None);
    }
    session.admit(doc, reopen).await
}

/// A `stat` of a source file gives up after this long (a hung network mount):
/// nothing is known then.
const STAT_LIMIT: Duration = Duration::from_secs(2);

/// The size and modification time of `file`, off the async runtime; `None`
/// when they cannot be told.
pub async fn disk_stamp(file: &std::path::Path) -> Option<DiskStamp> {
    let meta = tokio::time::timeout(STAT_LIMIT, tokio::fs::metadata(file))
        .await
        .ok()?
        .ok()?;
    Some(DiskStamp::of(&meta))
}

/// Whether the file of `doc` changed on disk since the text of `state` was
/// read from it: one `stat`, no read. A file that is gone has changed; a
/// `stat` that does not answer in time says nothing.
pub async fn disk_changed(doc: &Doc, state: &DocState) -> bool {
    let Some(read) = state.disk else {
        return false;
    };
    match tokio::time::timeout(STAT_LIMIT, tokio::fs::metadata(&doc.path.file)).await {
        Ok(Ok(meta)) => DiskStamp::of(&meta) != read,
        Ok(Err(_)) => true,
        Err(_) => false,
    }
}

/// Read the source and what the file looked like: the `stat` comes first, so
/// that a change between the two shows as a change later, never the reverse.
pub async fn read_disk(
    doc: &Doc,
    max_bytes: u64,
) -> Result<(Arc<str>, Option<DiskStamp>), ToolError> {
    let stamp = disk_stamp(&doc.path.file).await;
    Ok((read_source(doc, max_bytes).await?, stamp))
}

/// Bring Lean's copy of `doc` up to date with `text`, read from disk as
/// `disk` says (`None` for the broker's own documents). The caller holds
/// `doc.edit`.
pub async fn apply(
    session: &Session,
    doc: &Doc,
    text: Arc<str>,
    disk: Option<DiskStamp>,
    mode: Mode,
) -> Result<Applied, ToolError> {
    let old = doc.state();
    let open = old.open_in == Some(session.generation) && !old.needs_reopen;
    let differs = old.version == 0 || *old.text != *text;
    if open && !differs && mode == Mode::IfChanged {
        // The same text: the version stands for what the disk holds now.
        doc.update_state(|s| s.disk = disk);
        return Ok(Applied {
            version: old.version,
            changed: false,
            sent: false,
        });
    }
    let version = if differs || mode == Mode::Reelaborate {
        old.version.max(old.floor) + 1
    } else {
        old.version
    };
    let index = Arc::new(LineIndex::new(&text));
    let edit_in_place = open && mode == Mode::IfChanged;
    if !edit_in_place {
        doc.clear_rpc_session();
        make_room(session, doc, &old).await?;
    }
    // The new version is recorded before Lean hears of it, so that none of its
    // notifications is mistaken for a stale one.
    doc.update_state(|s| {
        s.version = version;
        s.text = Arc::clone(&text);
        s.index = Arc::clone(&index);
        s.disk = disk;
        s.open_in = Some(session.generation);
        s.needs_reopen = false;
        s.stopped_by_report = false;
        s.unsettle();
        if !edit_in_place {
            s.worker = None;
        }
    });
    doc.reset_report(version);
    let client = &session.client;
    let sent = if edit_in_place {
        let (start, end, insert) = minimal_change(&old.text, &text).expect("texts differ");
        let (sl, sc) = old.index.position(&old.text, start);
        let (el, ec) = old.index.position(&old.text, end);
        client.notify(
            "textDocument/didChange",
            json!({
                "textDocument": { "uri": doc.uri, "version": version },
                "contentChanges": [{
                    "range": { "start": position_json(sl, sc), "end": position_json(el, ec) },
                    "text": insert,
                }],
            }),
        )
    } else {
        client.notify(
            "textDocument/didOpen",
            json!({
                "textDocument": { "uri": doc.uri, "languageId": "lean4", "version": version, "text": &*text },
            }),
        )
    };
    if let Err(error) = sent {
        doc.update_state(DocState::mark_for_reopen);
        return Err(from_lsp(error, "textDocument/didChange"));
    }
    Ok(Applied {
        version,
        changed: differs,
        sent: true,
    })
}

/// Forwards what Lean reports while a call waits on a document: live
/// `lean.diagnostic` logs, Lake's setup of the imports and throttled file
/// progress, each at most once.
pub struct Forwarder<'a> {
    ctx: &'a CallContext,
    doc: &'a Doc,
    version: u64,
    /// The file progress names: the document's own path, or for a probe's
    /// shadow the user's file it probes.
    shown: &'a str,
    probe: bool,
    /// Which diagnostics go out live as `lean.diagnostic`; `None` for none.
    scope: Option<DiagnosticScope>,
    sent: HashSet<String>,
    /// The diagnostic set last looked at: progress updates far outnumber
    /// new sets, and each set is only looked at once.
    seen_diagnostics: Option<Arc<DiagnosticSet>>,
    /// The diagnostic set last read for logs: a later set that only appends
    /// to it is read from there on.
    read_diagnostics: Option<Arc<DiagnosticSet>>,
    last_progress: Option<Instant>,
    seen_updates: u64,
    done_sent: bool,
    /// Lake setup lines already observed, and when one last went out as progress.
    seen_setup_lines: u64,
    last_setup_progress: Option<Instant>,
}

impl<'a> Forwarder<'a> {
    pub fn new(
        ctx: &'a CallContext,
        doc: &'a Doc,
        version: u64,
        scope: Option<DiagnosticScope>,
    ) -> Self {
        Forwarder {
            ctx,
            doc,
            version,
            shown: &doc.path.shown,
            probe: false,
            scope,
            sent: HashSet::new(),
            seen_diagnostics: None,
            read_diagnostics: None,
            last_progress: None,
            seen_updates: 0,
            done_sent: false,
            // Lake output of this version that came before this call is not
            // something it waits for (an unchanged file keeps its worker). A
            // call that (re)opens the file starts at 0: `apply` reset the
            // report before Lean heard of the file, and Lake can only print
            // once the new worker runs.
            seen_setup_lines: Some(doc.snapshot())
                .filter(|snap| snap.version == version)
                .map_or(0, |snap| snap.lake_setup.lines),
            last_setup_progress: None,
        }
    }

    /// The progress of a probe elaborated in the shadow document `doc`,
    /// named after the user's file `shown`.
    pub fn for_probe(ctx: &'a CallContext, doc: &'a Doc, version: u64, shown: &'a str) -> Self {
        Forwarder {
            shown,
            probe: true,
            ..Forwarder::new(ctx, doc, version, None)
        }
    }

    /// The progress of a request that waits on `doc` at `version` (Lean
    /// answers a position once it has elaborated it): what changes while it
    /// waits. A version already elaborated has nothing to tell.
    pub fn for_wait(ctx: &'a CallContext, doc: &'a Doc, version: u64) -> Self {
        let mut forwarder = Forwarder::new(ctx, doc, version, None);
        let snap = doc.snapshot();
        forwarder.done_sent = snap.version == version && snap.progress.done;
        forwarder
    }

    /// Lake building the imports (the worker's `lake setup-file`, seen through
    /// the build lines Lean publishes): for the tools whose status notice is
    /// "on Lake setup or after the delay", the call's one `beam.status` notice
    /// without a progress token, throttled progress updates with one.
    async fn observe_lake_setup(&mut self, snap: &Snapshot) {
        let setup = &snap.lake_setup;
        if setup.lines == self.seen_setup_lines
            || self.ctx.tool.spec().status_notice != StatusNotice::OnSetupOrDelay
        {
            return;
        }
        self.seen_setup_lines = setup.lines;
        let output = setup.last.as_deref().unwrap_or("");
        let path = self.shown;
        self.ctx
            .status_notice(
                "lakeSetup",
                Some(path),
                format!(
                    "{} on {path} is waiting for Lake to set up its imports ({output}).",
                    self.ctx.tool.name()
                ),
            )
            .await;
        if self.ctx.has_progress_token()
            && self
                .last_setup_progress
                .is_none_or(|t| t.elapsed() >= PROGRESS_INTERVAL)
        {
            let sent = self
                .ctx
                .progress(
                    &format!("{path}: Lake setup: {output}"),
                    Some(json!({ "done": false, "phase": "lakeSetup", "lake": output })),
                )
                .await;
            if sent {
                self.last_setup_progress = Some(Instant::now());
            }
        }
    }

    pub async fn observe(&mut self, snap: &Snapshot) {
        if snap.version != self.version {
            return;
        }
        let new_set = !self
            .seen_diagnostics
            .as_ref()
            .is_some_and(|seen| Arc::ptr_eq(seen, &snap.diagnostics));
        if new_set {
            self.seen_diagnostics = Some(Arc::clone(&snap.diagnostics));
        }
        // Reading a set costs; most sets have nothing to log (no level
        // admitted, or errors only and none among them).
        let worth_reading = new_set
            && match self.scope {
                None => false,
                Some(_) if !self.ctx.admits(LogLevel::Error) => false,
                Some(DiagnosticScope::Errors) => snap.diagnostics.may_hold_errors(),
                Some(DiagnosticScope::All) => true,
            };
        let to_read: Cow<'_, [Value]> = if worth_reading {
            let added = self
                .read_diagnostics
                .as_ref()
                .and_then(|earlier| snap.diagnostics.appended_since(earlier));
            self.read_diagnostics = Some(Arc::clone(&snap.diagnostics));
            added.map_or_else(|| Cow::Borrowed(snap.diagnostics.items()), Cow::Owned)
        } else {
            Cow::Borrowed(&[])
        };
        for diagnostic in to_read.iter() {
            let Some(scope) = self.scope else { break };
            if !diagnostics::in_scope(diagnostic, scope) {
                continue;
            }
            let level = diagnostics::log_level(diagnostic);
            if !self.ctx.admits(level) {
                continue;
            }
            let key = diagnostic.to_string();
            if self.sent.insert(key) {
                let data = json!({
                    "path": self.doc.path.shown,
                    "version": self.version,
                    "diagnostic": diagnostics::item(diagnostic),
                });
                self.ctx.log(level, "lean.diagnostic", data).await;
            }
        }
        self.observe_lake_setup(snap).await;
        if !self.ctx.has_progress_token()
            || snap.progress.updates == self.seen_updates
            || self.done_sent
        {
            return;
        }
        let p = &snap.progress;
        let path = self.shown;
        if p.done {
            self.seen_updates = p.updates;
            self.done_sent = true;
            let message = if self.probe {
                format!("{path}: probe elaborated")
            } else {
                let lines = self.doc.state().index.line_count();
                format!("{path}: elaborated ({lines} lines)")
            };
            self.ctx
                .progress(
                    &message,
                    Some(json!({ "done": true, "line": p.frontier_line })),
                )
                .await;
        } else if self
            .last_progress
            .is_none_or(|t| t.elapsed() >= PROGRESS_INTERVAL)
        {
            self.seen_updates = p.updates;
            let line = p.frontier_line + 1;
            let lines = self.doc.state().index.line_count();
            // A probe's lines past the probe position are its own, so only
            // the line is told, not a count of the user's file.
            let message = if self.probe {
                format!("{path}: elaborating the probe, line {line}")
            } else {
                format!("{path}: elaborating, line {line} of {lines}")
            };
            // Lean reports changes of ranges that leave the first line being
            // processed where it was: such an update says nothing new and is
            // not sent (nor does it hold back the next one).
            let sent = self
                .ctx
                .progress(
                    &message,
                    Some(json!({ "done": false, "line": p.frontier_line, "lines": lines })),
                )
                .await;
            if sent {
                self.last_progress = Some(Instant::now());
            }
        }
    }
}

impl Forwarder<'_> {
    /// When the newest file progress, held back by the throttle, is due: it
    /// goes out then even if Lean reports nothing more (a long command
    /// elaborates for minutes without a word, and the client must see where).
    pub fn progress_due(&self, snap: &Snapshot) -> Option<tokio::time::Instant> {
        let held_back = self.ctx.has_progress_token()
            && !self.done_sent
            && snap.version == self.version
            && snap.progress.updates != self.seen_updates;
        let last = self.last_progress.filter(|_| held_back)?;
        Some(tokio::time::Instant::from_std(last + PROGRESS_INTERVAL))
    }
}

/// Wait until Lean has elaborated `version` completely, forwarding what it
/// reports meanwhile. A timeout is an error, never "no errors".
pub async fn barrier(
    rt: &Runtime,
    session: &Session,
    doc: &Doc,
    version: u64,
    forwarder: &mut Forwarder<'_>,
) -> Result<(), ToolError> {
    let mut live = doc.subscribe();
    let sent = doc.state().sent;
    let wait = session.client.request(
        "textDocument/waitForDiagnostics",
        json!({ "uri": doc.uri, "version": version }),
    );
    tokio::pin!(wait);
    let deadline = tokio::time::sleep(rt.timeouts.sync);
    tokio::pin!(deadline);
    let snap = live.borrow_and_update().clone();
    // When Lean reported the version fatal, and until it reports it alive again.
    let stopped_since = |snap: &Snapshot, since: Option<tokio::time::Instant>| {
        (snap.version == version && snap.progress.fatal)
            .then(|| since.unwrap_or_else(tokio::time::Instant::now))
    };
    let mut stopped = stopped_since(&snap, None);
    forwarder.observe(&snap).await;
    let mut snap = snap;
    loop {
        let give_up = stopped.map(|since| since + STOPPED_WORKER_GRACE);
        let progress_due = forwarder.progress_due(&snap);
        tokio::select! {
            answer = &mut wait => {
                return match answer {
                    Ok(_) => Ok(()),
                    Err(error) => {
                        let error = from_lsp(error, "textDocument/waitForDiagnostics");
                        if matches!(error.code, ErrorCode::WorkerCrashed | ErrorCode::WorkerExited) {
                            doc.on_crash_of(sent);
                        }
                        Err(memory_error(session, Some(doc), error))
                    }
                };
            }
            changed = live.changed() => {
                if changed.is_err() {
                    continue;
                }
                snap = live.borrow_and_update().clone();
                stopped = stopped_since(&snap, stopped);
                forwarder.observe(&snap).await;
            }
            () = tokio::time::sleep_until(progress_due.unwrap_or_else(tokio::time::Instant::now)), if progress_due.is_some() => {
                forwarder.observe(&snap).await;
            }
            () = tokio::time::sleep_until(give_up.unwrap_or_else(tokio::time::Instant::now)), if give_up.is_some() => {
                return Err(memory_error(session, Some(doc), worker_stopped(doc, version)));
            }
            () = &mut deadline => {
                let snap = doc.snapshot();
                return Err(ToolError::new(
                    ErrorCode::SyncBarrierIncomplete,
                    format!(
                        "Lean did not finish elaborating {} version {version} within {} s (LEAN_BEAM_SYNC_TIMEOUT_SECS); the diagnostics so far are partial, not a clean result",
                        doc.path.shown,
                        rt.timeouts.sync.as_secs()
                    ),
                )
                .with_data(json!({
                    "path": doc.path.shown,
                    "version": version,
                    "partial": true,
                    "document_progress": snap.progress.summary(),
                    "counts_so_far": diagnostics::counts(snap.diagnostics.items()),
                })));
            }
        }
    }
}

/// Options of a sync.
#[derive(Debug, Clone, Copy)]
pub struct SyncOptions {
    pub scope: DiagnosticScope,
    pub items: bool,
    pub mode: Mode,
}

/// The result of a completed barrier.
pub struct Synced {
    pub version: u64,
    pub snapshot: Snapshot,
    pub text: Arc<str>,
}

/// Read, apply and wait: the diagnostics of exactly the version on disk. The
/// caller holds `doc.edit`.
pub async fn sync_locked(
    rt: &Runtime,
    ctx: &CallContext,
    doc: &Doc,
    options: SyncOptions,
) -> Result<Synced, ToolError> {
    let (text, disk) = read_disk(doc, rt.max_file_bytes).await?;
    rt.notice_rebuilt_imports(doc, &text).await;
    let session = rt.session().await?;
    let mut mode = options.mode;
    let mut reopened_for_imports = false;
    let mut reopened_for_stop = false;
    loop {
        let applied = apply(&session, doc, Arc::clone(&text), disk, mode).await?;
        let mut forwarder = Forwarder::new(ctx, doc, applied.version, Some(options.scope));
        let state = doc.state();
        // An unchanged file whose final report Lean already gave needs no
        // round trip while its worker runs: another wait could only return the
        // same report. Lean holds a file as crashed only once its worker is
        // gone (its pipe closed, or unwritable), and a worker counts as gone
        // from the moment it was killed (`Seen::is_running`), so a sync never
        // answers "fine" after anybody could have seen the worker die.
        let settled = !applied.sent
            && state.is_settled()
            && state.version == applied.version
            && state.worker.is_some_and(|w| w.is_running());
        let waited = if settled {
            Ok(())
        } else {
            barrier(rt, &session, doc, applied.version, &mut forwarder).await
        };
        match waited {
            Ok(()) => {}
            // The worker stopped while this sync waited (or just before, faster
            // than its report): the document is marked for reopening, so try
            // once more, on a new worker.
            Err(error)
                if !reopened_for_stop
                    && error.data.as_ref().and_then(|d| d.get("reason"))
                        == Some(&json!(WORKER_STOPPED)) =>
            {
                reopened_for_stop = true;
                continue;
            }
            Err(error) => return Err(error),
        }
        if !settled {
            rt.settle(&session).await;
            // The worker answered for this version, so it runs now; it is
            // looked up once per worker (a scan of the server's processes).
            let worker = state
                .worker
                .filter(|w| w.is_running())
                .or_else(|| session.client.find_in_tree(&doc.uri));
            doc.update_state(|s| {
                if s.sent == state.sent && s.version == applied.version {
                    s.settled = Some(s.sent);
                    s.worker = worker;
                }
            });
        }
        let snapshot = doc.snapshot();
        forwarder.observe(&snapshot).await;
        let stale_imports = snapshot
            .diagnostics
            .items()
            .iter()
            .any(|d| diagnostics::message(d).contains(IMPORTS_OUT_OF_DATE));
        if stale_imports && !reopened_for_imports {
            // A dependency was rebuilt under the open file: reopen it once so
            // Lean loads the new imports, instead of reporting stale state.
            reopened_for_imports = true;
            mode = Mode::Reelaborate;
            continue;
        }
        return Ok(Synced {
            version: applied.version,
            snapshot,
            text,
        });
    }
}

/// Close `doc` in Lean if it is open there. A dead connection has closed it
/// anyway.
pub async fn close_in_lean(session: Option<&Session>, doc: &Doc) -> bool {
    let _edit = doc.edit.lock().await;
    let Some(generation) = doc.state().open_in else {
        return false;
    };
    if let Some(session) = session.filter(|s| s.generation == generation) {
        let closed = session.client.notify(
            "textDocument/didClose",
            json!({ "textDocument": { "uri": doc.uri } }),
        );
        doc.update_state(|s| s.open_in = None);
        // The room counts as free only once the worker is gone: a document
        // opened right after must not run next to the closing worker (over
        // LEAN_BEAM_MAX_DOCUMENTS), as at an eviction.
        if closed.is_ok() {
            session.wait_worker_gone(doc).await;
        }
        return true;
    }
    doc.update_state(|s| s.open_in = None);
    true
}
