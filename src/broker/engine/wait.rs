//! The one way a call waits on Lean about a document: a request in flight,
//! watched together with what Lean reports of the document meanwhile.
//!
//! A worker that stops while a call waits does not leave the call hanging:
//! Lean reports the file fatal and holds its requests until it is reopened,
//! so after [`STOPPED_WORKER_GRACE`] the wait gives up (`WorkerStopped`) and
//! the document is reopened by its next use. An answer that says the worker
//! crashed marks the document the same way, if it is about the worker Lean
//! runs now (see [`Lifecycle::crash_answer`](super::document::Lifecycle::crash_answer)).
//! A call killed for its memory learns that instead of a crash. The file's
//! progress goes to the caller while it waits (see [`Forwarder`]).

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use super::document::{Doc, Snapshot};
use super::forward::Forwarder;
use super::server::{LeanServer, memory_error};
use crate::broker::error::{Error, Result};

/// How long a request keeps waiting after Lean reported its version fatal (the
/// file's worker stopped). A worker that failed on the header still answers
/// at once; a crashed one never does: Lean holds requests for the file until
/// it is reopened.
pub const STOPPED_WORKER_GRACE: Duration = Duration::from_millis(1000);

/// How a wait ended, when it did not fail.
pub enum Waited<T> {
    /// Lean answered.
    Answered(T),
    /// What Lean reported of the document made the answer unnecessary (see
    /// [`Wait::until`]).
    Ready,
    /// The deadline passed first (see [`Wait::deadline`]).
    Deadline,
}

/// A wait on Lean about `doc` at `version`.
pub struct Wait<'a, 'f> {
    server: &'a LeanServer,
    doc: &'a Doc,
    version: u64,
    forwarder: Option<&'a mut Forwarder<'f>>,
    deadline: Option<Duration>,
    ready: Option<&'a (dyn Fn(&Snapshot) -> bool + Sync)>,
}

impl<'a, 'f> Wait<'a, 'f> {
    pub fn new(server: &'a LeanServer, doc: &'a Doc, version: u64) -> Self {
        Wait {
            server,
            doc,
            version,
            forwarder: None,
            deadline: None,
            ready: None,
        }
    }

    /// Forward what Lean reports meanwhile.
    pub fn forwarding(mut self, forwarder: Option<&'a mut Forwarder<'f>>) -> Self {
        self.forwarder = forwarder;
        self
    }

    /// Stop waiting after `limit` ([`Waited::Deadline`]).
    pub fn deadline(mut self, limit: Duration) -> Self {
        self.deadline = Some(limit);
        self
    }

    /// Stop waiting as soon as a report of the document satisfies `ready`
    /// ([`Waited::Ready`]); looked at first, before anything is asked.
    pub fn until(mut self, ready: &'a (dyn Fn(&Snapshot) -> bool + Sync)) -> Self {
        self.ready = Some(ready);
        self
    }

    /// Wait for `request`'s answer, which is asked of Lean only when the
    /// document is not ready already.
    pub async fn on<T>(self, request: impl Future<Output = Result<T>>) -> Result<Waited<T>> {
        let Wait {
            server,
            doc,
            version,
            mut forwarder,
            deadline,
            ready,
        } = self;
        let is_ready = |snap: &Snapshot| ready.is_some_and(|ready| ready(snap));
        let sent = doc.lifecycle().sent();
        let answered = |answer: Result<T>| match answer {
            Ok(value) => Ok(Waited::Answered(value)),
            Err(error) => {
                if error.lost_worker() {
                    doc.on_crash_answer(sent);
                }
                Err(memory_error(server, Some(doc), error))
            }
        };
        let mut live = doc.subscribe();
        let mut snap = live.borrow_and_update().clone();
        if is_ready(&snap) {
            return Ok(Waited::Ready);
        }
        // Since when Lean has reported the version fatal, until it reports it
        // alive again.
        let fatal = |snap: &Snapshot| snap.version == version && snap.progress.fatal;
        let mut stopped = fatal(&snap).then(Instant::now);
        if let Some(forwarder) = forwarder.as_mut() {
            forwarder.observe(&snap).await;
        }
        tokio::pin!(request);
        let deadline = deadline.map(|limit| Instant::now() + limit);
        loop {
            let give_up = stopped.map(|since| since + STOPPED_WORKER_GRACE);
            let progress_due = forwarder.as_ref().and_then(|f| f.progress_due(&snap));
            tokio::select! {
                answer = &mut request => {
                    // What Lean reported before it answered goes out before
                    // the answer: read in the same go (a loaded machine),
                    // both branches are ready, and `select!` takes either
                    // (a probe's `lakeSetup` notice was lost so).
                    if let Some(forwarder) = forwarder.as_mut() {
                        let last = live.borrow_and_update().clone();
                        forwarder.observe(&last).await;
                    }
                    return answered(answer);
                }
                changed = live.changed() => {
                    if changed.is_err() {
                        // The document is gone: only Lean's answer is left.
                        return answered((&mut request).await);
                    }
                    snap = live.borrow_and_update().clone();
                    stopped = if fatal(&snap) {
                        stopped.or_else(|| Some(Instant::now()))
                    } else {
                        None
                    };
                    if let Some(forwarder) = forwarder.as_mut() {
                        forwarder.observe(&snap).await;
                    }
                    if is_ready(&snap) {
                        return Ok(Waited::Ready);
                    }
                }
                () = tokio::time::sleep_until(progress_due.unwrap_or_else(Instant::now)), if progress_due.is_some() => {
                    if let Some(forwarder) = forwarder.as_mut() {
                        forwarder.observe(&snap).await;
                    }
                }
                () = tokio::time::sleep_until(give_up.unwrap_or_else(Instant::now)), if give_up.is_some() => {
                    return Err(memory_error(server, Some(doc), worker_stopped(doc, version)));
                }
                () = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                    return Ok(Waited::Deadline);
                }
            }
        }
    }

    /// Wait for `request`'s answer (no deadline but the request's own, no
    /// readiness).
    pub async fn answer<T>(self, request: impl Future<Output = Result<T>>) -> Result<T> {
        debug_assert!(self.deadline.is_none() && self.ready.is_none());
        match self.on(request).await? {
            Waited::Answered(value) => Ok(value),
            // Neither can end a wait that has no deadline and no readiness.
            Waited::Ready | Waited::Deadline => Err(Error::Unexpected(
                "a wait on Lean ended without its answer".into(),
            )),
        }
    }
}

/// The error of a request that Lean holds because the file's worker stopped.
/// Marks the document for reopening, so the next request recovers.
pub fn worker_stopped(doc: &Doc, version: u64) -> Error {
    doc.on_stopped_wait();
    Error::WorkerStopped {
        path: doc.path.shown.clone(),
        version,
    }
}
