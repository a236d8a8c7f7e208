//! Shadow documents: virtual copies of a document in which speculative text is
//! elaborated, so that the user's document, its diagnostics and the file on disk
//! are never touched.
//!
//! A shadow is the snapshot cut at the probe position with the probe text
//! appended. Each document has a small pool of shadow slots, each a virtual
//! document opened once in the workspace's Lean server and then edited in place:
//! Lean re-elaborates only from the first changed character, so a probe costs
//! the declaration it is in, not the file.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::docs::Docs;
use super::document::{Doc, DocUse, SHADOW_MARKER, Sent, Snapshot};
use super::edit;
use super::forward::Forwarder;
use super::memory::Memory;
use super::server::LeanServer;
use super::sync;
use super::workspace::DocPath;
use crate::broker::ask::EditMode;
use crate::broker::error::{Error, Result};
use crate::broker::progress::ProgressSink;
pub use crate::lean_source::placement::{Placement, advance};
use crate::process::tree::Seen;
use crate::util::lock;

/// The virtual path of slot `k` of a document: beside it, never written.
fn shadow_path(path: &DocPath, k: usize) -> DocPath {
    let dir = path.file.parent().unwrap_or_else(|| Path::new("/"));
    let stem = path
        .file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    DocPath {
        file: dir.join(format!(".{stem}{SHADOW_MARKER}{k}.lean")),
        shown: format!("{}#shadow-{k}", path.shown),
    }
}

/// The shadow slots of one document.
pub struct Pool {
    path: DocPath,
    capacity: usize,
    /// The runtime's documents, which the slots are.
    docs: Arc<Docs>,
    /// Told when a slot is given back (probes waiting on the budget).
    memory: Arc<Memory>,
    permits: Arc<Semaphore>,
    slots: Mutex<Vec<Arc<Slot>>>,
    /// Lean had no `skip` tactic in this document's shadows (a prelude
    /// file without it): tactic steps go without a sentinel after them.
    no_sentinel: std::sync::atomic::AtomicBool,
}

struct Slot {
    doc: Arc<Doc>,
    busy: std::sync::atomic::AtomicBool,
    /// When it was last given back.
    last_used: Mutex<Instant>,
    /// The module header that Lean imported without error in this slot's
    /// current worker.
    confirmed_header: Mutex<Option<String>>,
}

/// The module header of a shadow text (its imports).
pub fn header(text: &str) -> &str {
    &text[..crate::lean_source::outline::header_end(text)]
}

/// Exclusive use of one slot; dropping it (also by cancellation) frees the slot.
/// It is also a use of the slot's document: a slot in use is never closed to
/// make room for another document.
pub struct SlotGuard {
    slot: Arc<Slot>,
    _use: DocUse,
    /// Taken only by a reset (see [`elaborate`]), which keeps the slot until
    /// Lean has been told to stop.
    permit: Option<OwnedSemaphorePermit>,
    memory: Arc<Memory>,
    /// What the memory budget made this probe do to get the slot (waited,
    /// took others' idle slots, opened over it), said in its result.
    pub note: Option<String>,
    /// While Lean elaborates text in this slot for a probe that may be
    /// abandoned (cancelled, out of time): the server to close the slot's
    /// document in then, so that Lean stops the abandoned work.
    reset: Option<LeanServer>,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        if let (Some(server), Some(permit)) = (self.reset.take(), self.permit.take()) {
            // Lean does not stop every elaboration when a newer version
            // arrives (deep kernel or evaluation work runs on), but closing
            // the document ends its worker; the slot stays busy (a new
            // guard) until then and reopens on its next use.
            let guard = SlotGuard {
                _use: self.slot.doc.begin_use(),
                slot: Arc::clone(&self.slot),
                permit: Some(permit),
                memory: Arc::clone(&self.memory),
                note: None,
                reset: None,
            };
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move {
                    let edit = guard.doc().lock_edit().await;
                    if edit::close(&edit, Some(&server)).await {
                        crate::log_debug!(
                            "{}: closed to stop an abandoned probe",
                            guard.doc().path.shown
                        );
                    }
                    drop(edit);
                    drop(guard);
                });
            }
            return;
        }
        *lock(&self.slot.last_used) = Instant::now();
        self.slot
            .busy
            .store(false, std::sync::atomic::Ordering::SeqCst);
        // The permit goes with the rest of the guard, after this; a woken
        // probe waits for it.
        self.memory.returned.notify_waiters();
    }
}

impl SlotGuard {
    pub fn doc(&self) -> &Arc<Doc> {
        &self.slot.doc
    }

    /// Close the slot's document in Lean when this use ends, and keep the
    /// slot busy until it is closed: its worker crashed under the text it
    /// holds, and its next use must start on a new worker (reopened), not
    /// send an edit to the one Lean reported dead (whose late report could
    /// then be taken for the next text's).
    pub fn close_after_crash(&mut self, server: &LeanServer) {
        self.reset = Some(server.clone());
    }

    /// Record that the header `header` imported without error in the slot's
    /// current worker (or, `None`, that the last one did not).
    pub fn confirm_header(&self, header: Option<&str>) {
        *lock(&self.slot.confirmed_header) = header.map(str::to_string);
    }

    fn header_confirmed(&self, header: &str) -> bool {
        lock(&self.slot.confirmed_header).as_deref() == Some(header)
    }
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

impl Pool {
    pub fn new(path: DocPath, capacity: usize, docs: Arc<Docs>, memory: Arc<Memory>) -> Self {
        let capacity = capacity.max(1);
        Pool {
            path,
            capacity,
            docs,
            memory,
            permits: Arc::new(Semaphore::new(capacity)),
            slots: Mutex::new(Vec::new()),
            no_sentinel: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether tactic steps here get a `skip` after them to read their goals
    /// at (see `probe::exec::with_sentinel`).
    pub fn takes_sentinel(&self) -> bool {
        !self.no_sentinel.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Lean has no `skip` tactic in this document's shadows.
    pub fn refuse_sentinel(&self) {
        self.no_sentinel
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// The document the slots are shadows of.
    pub fn path(&self) -> &DocPath {
        &self.path
    }

    /// A permit to hold a slot: waits while all slots are busy.
    pub async fn permit(&self) -> OwnedSemaphorePermit {
        Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .expect("pool semaphore is never closed")
    }

    /// Take an idle slot, preferring the one whose text shares the longest
    /// prefix with `wanted` (least re-elaboration); the permit back when
    /// none is idle.
    pub fn take_idle_slot(
        &self,
        permit: OwnedSemaphorePermit,
        wanted: &str,
    ) -> std::result::Result<SlotGuard, OwnedSemaphorePermit> {
        let slots = lock(&self.slots);
        let idle = slots
            .iter()
            .filter(|s| !s.busy.load(std::sync::atomic::Ordering::SeqCst))
            .max_by_key(|s| common_prefix(&s.doc.state().text, wanted))
            .cloned();
        match idle {
            Some(slot) => Ok(self.guard(slot, permit)),
            None => Err(permit),
        }
    }

    /// Open a new slot (none is idle: with a permit, one more fits).
    pub fn open(&self, permit: OwnedSemaphorePermit) -> SlotGuard {
        let mut slots = lock(&self.slots);
        let k = slots.len();
        debug_assert!(
            k < self.capacity,
            "a permit guarantees an idle or a new slot"
        );
        let slot = Arc::new(Slot {
            doc: Arc::clone(&self.docs.doc(&shadow_path(&self.path, k))),
            busy: std::sync::atomic::AtomicBool::new(false),
            last_used: Mutex::new(Instant::now()),
            confirmed_header: Mutex::new(None),
        });
        slots.push(Arc::clone(&slot));
        drop(slots);
        self.guard(slot, permit)
    }

    fn guard(&self, slot: Arc<Slot>, permit: OwnedSemaphorePermit) -> SlotGuard {
        slot.busy.store(true, std::sync::atomic::Ordering::SeqCst);
        SlotGuard {
            _use: slot.doc.begin_use(),
            slot,
            permit: Some(permit),
            memory: Arc::clone(&self.memory),
            note: None,
            reset: None,
        }
    }

    /// Slots in use now.
    pub fn busy(&self) -> usize {
        lock(&self.slots)
            .iter()
            .filter(|s| s.busy.load(std::sync::atomic::Ordering::SeqCst))
            .count()
    }

    /// Idle slots open in Lean (each a worker that could be given back).
    pub fn idle_open(&self) -> usize {
        lock(&self.slots)
            .iter()
            .filter(|s| {
                !s.busy.load(std::sync::atomic::Ordering::SeqCst)
                    && s.doc.lifecycle().generation().is_some()
            })
            .count()
    }

    /// Exclusive use of every slot that is open in Lean and has not been
    /// used for `idle` (to close it); never waits for a busy slot.
    pub fn take_idle(&self, idle: Duration) -> Vec<SlotGuard> {
        let slots = lock(&self.slots);
        let mut taken = Vec::new();
        for slot in slots.iter() {
            let stale = lock(&slot.last_used).elapsed() >= idle;
            if !stale || slot.doc.lifecycle().generation().is_none() {
                continue;
            }
            // A permit first, as `acquire` does, so that a waiting probe
            // always finds an idle or a new slot once it holds one.
            let Ok(permit) = Arc::clone(&self.permits).try_acquire_owned() else {
                break;
            };
            if slot
                .busy
                .compare_exchange(
                    false,
                    true,
                    std::sync::atomic::Ordering::SeqCst,
                    std::sync::atomic::Ordering::SeqCst,
                )
                .is_ok()
            {
                taken.push(SlotGuard {
                    _use: slot.doc.begin_use(),
                    slot: Arc::clone(slot),
                    permit: Some(permit),
                    memory: Arc::clone(&self.memory),
                    note: None,
                    reset: None,
                });
            }
        }
        taken
    }

    /// Slots whose document is open in Lean (each a Lean worker).
    pub fn open_in_lean(&self) -> usize {
        lock(&self.slots)
            .iter()
            .filter(|s| s.doc.lifecycle().generation().is_some())
            .count()
    }

    pub fn len(&self) -> usize {
        lock(&self.slots).len()
    }

    /// The slot documents (to close them with their document).
    pub fn docs(&self) -> Vec<Arc<Doc>> {
        lock(&self.slots)
            .iter()
            .map(|s| Arc::clone(&s.doc))
            .collect()
    }
}

/// Elaborate `text` in the slot and return what Lean reported for it.
///
/// The result is complete once Lean has reported the version done
/// (`$/lean/fileProgress` with nothing left) and has published its diagnostics
/// at least once: Lean's reporter publishes every message as it finds it (the
/// first time at the latest when it first waits) and, if it never waited, once
/// right after "done". `textDocument/waitForDiagnostics` answers only after
/// the reporter has also sent the whole file's `.ilean` reference index, which
/// costs time in proportion to the file, not to the probe (about 0.4 s at the
/// end of a 2,000-line file); it stays the fallback for failures (a crashed
/// worker, a fatal report). The fast path can also precede the publish of a
/// failed import, so it is taken only while the slot stays open in the same
/// worker on a header whose import was confirmed (see
/// [`SlotGuard::confirm_header`]); otherwise the barrier decides. Progress
/// names the user's file `shown`, never the shadow. `limit`: the barrier's
/// time limit.
///
/// Should the caller give up before Lean is done (a cancelled call, a time
/// budget), dropping the slot closes its document in Lean, which ends the
/// abandoned work at once.
pub async fn elaborate(
    server: &LeanServer,
    limit: Duration,
    sink: &dyn ProgressSink,
    shown: &str,
    slot: &mut SlotGuard,
    text: String,
) -> Result<(u64, Snapshot)> {
    // The document outlives the borrow of `slot`, which is marked below.
    let slot_doc = Arc::clone(slot.doc());
    let edit = slot_doc.lock_edit().await;
    // A worker that died while the slot was idle (a crash after its last
    // report, a kill) is one Lean has not noticed: it would take the edit,
    // find the worker gone and report the crash as this text's. The slot is
    // recovered first: closed (the worker's end waited for) and reopened
    // below on a new worker.
    if edit
        .lifecycle()
        .lost_worker_unnoticed(server.generation, Seen::is_running)
    {
        crate::log_debug!(
            "{}: its worker is gone; reopened before its next use",
            edit.path.shown
        );
        edit::close(&edit, Some(server)).await;
    }
    let fast = {
        let old = edit.state();
        let header = header(&text);
        old.lifecycle.is_open_in(server.generation)
            && old.text.starts_with(header)
            && crate::lean_source::outline::header_end(&old.text) == header.len()
            && slot.header_confirmed(header)
    };
    let applied = edit::apply(server, &edit, Arc::from(text), None, EditMode::IfChanged).await?;
    slot.reset = Some(server.clone());
    let version = applied.version;
    let doc: &Doc = &edit;
    let mut forwarder = Forwarder::for_probe(sink, doc, version, shown, applied.sent);
    let complete = |snap: &Snapshot| {
        fast && snap.version == version
            && snap.progress.done
            && !snap.progress.fatal
            && snap.published
    };
    let sent = edit.lifecycle().sent();
    sync::barrier(server, doc, version, limit, &mut forwarder, Some(&complete))
        .await
        .map_err(|error| match error {
            Error::BarrierIncomplete { limit, .. } => Error::ProbeIncomplete {
                path: shown.to_owned(),
                limit,
            },
            other => other,
        })?;
    slot.reset = None;
    server.settle().await;
    remember_worker(server, doc, sent).await;
    Ok((version, doc.snapshot()))
}

/// Record the worker that runs a slot now, so that its next use can tell
/// whether it is still there (see [`elaborate`]): looked up once per worker
/// (a scan of the server's processes, off the async runtime), checked with
/// four system calls on every later use. Lean starts a new worker for a
/// changed header, which the check after that use finds.
async fn remember_worker(server: &LeanServer, doc: &Doc, sent: Sent) {
    if doc.lifecycle().worker().is_some_and(|w| w.is_running())
        || doc.lifecycle().generation() != Some(server.generation)
    {
        return;
    }
    let client = Arc::clone(&server.client);
    let uri = doc.uri.clone();
    let found = tokio::task::spawn_blocking(move || client.find_in_tree(&uri))
        .await
        .ok()
        .flatten();
    if let Some(worker) = found {
        doc.on_worker_seen(sent, worker);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_positions_are_told_in_the_users_file() {
        // `    show …` ends at (15, 48); the probe went on a new line at (16, 4).
        let moved = Placement {
            anchor: (15, 48),
            text: (16, 4),
            origin: (15, 48),
            resume: None,
        };
        assert_eq!(moved.to_user((3, 7)), (3, 7), "the user's own text");
        assert_eq!(moved.to_user((16, 0)), (15, 48), "the line break put in");
        assert_eq!(
            moved.to_user((16, 10)),
            (15, 54),
            "on the probe's first line"
        );
        assert_eq!(moved.to_user((17, 10)), (16, 10), "on a later line");
        // A term probe `(t)` in place of `sorry` at (5, 30), which ended at
        // (5, 35); the probe text `t` ends at (5, 32).
        let term = Placement {
            anchor: (5, 30),
            text: (5, 31),
            origin: (5, 30),
            resume: Some(((5, 33), (5, 35))),
        };
        assert_eq!(term.to_user((5, 30)), (5, 30), "the parenthesis");
        assert_eq!(term.to_user((5, 31)), (5, 30));
        assert_eq!(term.to_user((5, 32)), (5, 31));
        assert_eq!(term.to_user((5, 34)), (5, 36), "the user's text after it");
        assert_eq!(advance((5, 31), "ab\n  c𝔽"), (6, 5));
        assert_eq!(advance((5, 31), "a𝔽"), (5, 34));
    }
}
