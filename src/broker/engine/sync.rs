//! A sync: the diagnostics of exactly the version on disk. Read the file,
//! bring Lean's copy up to date ([`edit::apply`]), wait until Lean has
//! elaborated that version (the `waitForDiagnostics` barrier, skipped while
//! the report of an unchanged file is final and its worker runs), and tell the
//! caller what Lean reports meanwhile.

use std::sync::Arc;
use std::time::Duration;

use super::diagnostics::{self, IMPORTS_OUT_OF_DATE};
use super::document::{DiskStamp, Doc, DocEdit, DocState, Snapshot};
use super::edit::{self};
use super::forward::Forwarder;
use super::server::LeanServer;
use super::wait::{Wait, Waited};
use crate::broker::ask::{EditMode, SyncOptions};
use crate::broker::error::{Error, Result, SourceProblem};
use crate::broker::progress::ProgressSink;
use crate::lsp::protocol::{WaitForDiagnostics, WaitForDiagnosticsParams};
use crate::process::tree::Seen;
use crate::safe_fs;
use lsp_types::request::Request;

/// Read the source from disk, at most `max_bytes` of it. The server only ever
/// reads `.lean` files, and only regular ones: the read runs off the runtime
/// (the hop to the blocking pool costs 7 to 13 us of every sync and update,
/// `cargo bench --bench safe_fs`; a FIFO or a hung mount in its place would
/// cost every other call) and never follows a link swapped in for the
/// canonical name.
pub async fn read_source(doc: &Doc, max_bytes: u64) -> Result<Arc<str>> {
    let read = safe_fs::read_regular(
        &doc.path.file,
        safe_fs::Links::Refuse,
        max_bytes,
        safe_fs::Oversize::Refuse,
    )
    .await;
    let source_error = |problem| Error::Source {
        path: doc.path.shown.clone(),
        problem,
    };
    let bytes = read.map_err(|e| source_error(SourceProblem::Fs(e)))?.bytes;
    String::from_utf8(bytes)
        .map(Arc::from)
        .map_err(|e| source_error(SourceProblem::NotUtf8(e.to_string())))
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
pub async fn read_disk(doc: &Doc, max_bytes: u64) -> Result<(Arc<str>, Option<DiskStamp>)> {
    let stamp = disk_stamp(&doc.path.file).await;
    Ok((read_source(doc, max_bytes).await?, stamp))
}

/// Wait until Lean has elaborated `version` completely, forwarding what it
/// reports meanwhile; `ready`, if given, ends the wait early when a report of
/// the document satisfies it. A timeout (`limit`) is an error, never "no
/// errors".
pub async fn barrier(
    server: &LeanServer,
    doc: &Doc,
    version: u64,
    limit: Duration,
    forwarder: &mut Forwarder<'_>,
    ready: Option<&(dyn Fn(&Snapshot) -> bool + Sync)>,
) -> Result<()> {
    let request = async {
        let params = WaitForDiagnosticsParams {
            uri: doc.uri.clone(),
            version: i32::try_from(version).unwrap_or(i32::MAX),
        };
        server
            .client
            .request_typed::<WaitForDiagnostics>(params)
            .await
            .map_err(|e| Error::lsp(WaitForDiagnostics::METHOD, e))
    };
    let mut wait = Wait::new(server, doc, version)
        .forwarding(Some(forwarder))
        .deadline(limit);
    if let Some(ready) = ready {
        wait = wait.until(ready);
    }
    match wait.on(request).await? {
        Waited::Answered(_) | Waited::Ready => Ok(()),
        Waited::Deadline => {
            let snap = doc.snapshot();
            Err(Error::BarrierIncomplete {
                path: doc.path.shown.clone(),
                version,
                limit,
                progress: Box::new(snap.progress.summary()),
                counts: Box::new(diagnostics::counts(snap.diagnostics.items())),
            })
        }
    }
}

/// The result of a completed barrier.
pub struct Synced {
    pub version: u64,
    pub snapshot: Snapshot,
    pub text: Arc<str>,
}

/// Apply `text` (read from disk as `disk`) and wait: the diagnostics of
/// exactly that version. `limit`: the barrier's time limit.
pub async fn apply_and_wait(
    server: &LeanServer,
    sink: &dyn ProgressSink,
    edit: &DocEdit<'_>,
    (text, disk): (Arc<str>, Option<DiskStamp>),
    options: SyncOptions,
    limit: Duration,
) -> Result<Synced> {
    let doc: &Doc = edit;
    let mut mode = options.mode;
    let mut reopened_for_imports = false;
    let mut reopened_for_stop = false;
    loop {
        let applied = edit::apply(server, edit, Arc::clone(&text), disk, mode).await?;
        let mut forwarder = Forwarder::new(
            sink,
            doc,
            applied.version,
            Some(options.scope),
            applied.sent,
        );
        let state = doc.state();
        // An unchanged file whose final report Lean already gave needs no
        // round trip while its worker runs: another wait could only return the
        // same report. Lean holds a file as crashed only once its worker is
        // gone (its pipe closed, or unwritable), and a worker counts as gone
        // from the moment it was killed (`Seen::is_running`), so a sync never
        // answers "fine" after anybody could have seen the worker die.
        let settled = !applied.sent
            && state.version == applied.version
            && state.lifecycle.answers_from_report(Seen::is_running);
        let waited = if settled {
            Ok(())
        } else {
            barrier(server, doc, applied.version, limit, &mut forwarder, None).await
        };
        match waited {
            Ok(()) => {}
            // The worker stopped while this sync waited (or just before, faster
            // than its report): the document is marked for reopening, so try
            // once more, on a new worker.
            Err(Error::WorkerStopped { .. }) if !reopened_for_stop => {
                reopened_for_stop = true;
                continue;
            }
            Err(error) => return Err(error),
        }
        if !settled {
            server.settle().await;
            // The worker answered for this version, so it runs now; it is
            // looked up once per worker (a scan of the server's processes).
            let worker = match state.lifecycle.worker().filter(Seen::is_running) {
                Some(worker) => Some(worker),
                // Off the async runtime: the scan reads every process's
                // `environ` in /proc.
                None => {
                    let client = Arc::clone(&server.client);
                    let uri = doc.uri.clone();
                    tokio::task::spawn_blocking(move || client.find_in_tree(&uri))
                        .await
                        .ok()
                        .flatten()
                }
            };
            doc.on_wait_answered(state.lifecycle.sent(), applied.version, worker);
        }
        let snapshot = doc.snapshot();
        forwarder.observe(&snapshot).await;
        let stale_imports = snapshot
            .diagnostics
            .items()
            .iter()
            .any(|d| d.message.contains(IMPORTS_OUT_OF_DATE));
        if stale_imports && !reopened_for_imports {
            // A dependency was rebuilt under the open file: reopen it once so
            // Lean loads the new imports, instead of reporting stale state.
            reopened_for_imports = true;
            mode = EditMode::Reelaborate;
            continue;
        }
        return Ok(Synced {
            version: applied.version,
            snapshot,
            text,
        });
    }
}
