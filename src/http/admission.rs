//! Connection admission: connections that have not yet proved themselves are
//! bounded apart from the ones that have, so that a flood of slow or
//! token-less connections cannot lock out a client with the token.
//!
//! A connection is *pending* from its accept until a request's head has
//! arrived complete and, when the server has a token, carried it. Pending
//! connections are at most `max_connections`; when one more arrives, the one
//! pending the longest is evicted (answered 503 and closed): a flood must keep
//! re-opening connections faster than a genuine client sends its head to keep
//! it out, and it never holds a place an authorized client needs. A proved
//! connection takes one of the `max_connections` slots for the rest of its
//! life; when none is free its request is answered 503 and it is closed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};

use crate::util::lock;

/// The pending connections, oldest first, and the proved ones' slots.
pub struct Admission {
    max: usize,
    next: AtomicU64,
    /// Pending connections by accept order: their eviction signals.
    pending: Mutex<BTreeMap<u64, Arc<Notify>>>,
    proved: Arc<Semaphore>,
    pub evicted: AtomicU64,
    /// Bumped after each change of the counts (an accept, an eviction, a
    /// proof, a close): what `/health?after=N` waits on.
    changes: watch::Sender<u64>,
}

/// Why a connection could not prove itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Every slot of a proved connection is taken.
    Full,
    /// It was evicted from the pending connections meanwhile.
    Evicted,
}

impl Admission {
    pub fn new(max: usize) -> Self {
        Self {
            max,
            next: AtomicU64::new(0),
            pending: Mutex::new(BTreeMap::new()),
            proved: Arc::new(Semaphore::new(max)),
            evicted: AtomicU64::new(0),
            changes: watch::channel(0).0,
        }
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n += 1);
    }

    /// The changes so far.
    pub fn changes(&self) -> u64 {
        *self.changes.borrow()
    }

    /// Wait until there have been more than `seen` changes, at most `limit`.
    pub async fn changed_after(&self, seen: u64, limit: std::time::Duration) {
        let mut changes = self.changes.subscribe();
        let _ = tokio::time::timeout(limit, changes.wait_for(|n| *n > seen)).await;
    }

    /// Register a just-accepted connection as pending, evicting the one
    /// pending the longest when there are `max` already.
    pub fn accept(self: &Arc<Self>) -> Connection {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let evict = Arc::new(Notify::new());
        let mut pending = lock(&self.pending);
        if pending.len() >= self.max {
            if let Some((_, oldest)) = pending.pop_first() {
                oldest.notify_one();
                self.evicted.fetch_add(1, Ordering::Relaxed);
            }
        }
        pending.insert(id, Arc::clone(&evict));
        drop(pending);
        self.changed();
        Connection {
            admission: Arc::clone(self),
            id,
            evict,
            slot: Mutex::new(None),
        }
    }

    /// Proved connections open.
    pub fn proved(&self) -> usize {
        self.max - self.proved.available_permits()
    }

    /// Pending connections open.
    pub fn pending(&self) -> usize {
        lock(&self.pending).len()
    }
}

/// One accepted connection's place: pending, then proved with a slot.
pub struct Connection {
    admission: Arc<Admission>,
    id: u64,
    evict: Arc<Notify>,
    slot: Mutex<Option<OwnedSemaphorePermit>>,
}

impl Connection {
    /// Resolves when this connection is evicted (only a pending one is).
    pub async fn evicted(&self) {
        self.evict.notified().await;
    }

    pub fn is_proved(&self) -> bool {
        lock(&self.slot).is_some()
    }

    /// Move from the pending connections to a proved slot.
    pub fn prove(&self) -> Result<(), Refused> {
        let mut slot = lock(&self.slot);
        if slot.is_some() {
            return Ok(());
        }
        let mut pending = lock(&self.admission.pending);
        if !pending.contains_key(&self.id) {
            return Err(Refused::Evicted);
        }
        let permit = Arc::clone(&self.admission.proved)
            .try_acquire_owned()
            .map_err(|_| Refused::Full)?;
        pending.remove(&self.id);
        *slot = Some(permit);
        drop((pending, slot));
        self.admission.changed();
        Ok(())
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        lock(&self.admission.pending).remove(&self.id);
        // The slot goes before the change is told, so a waiter reads the
        // new count.
        drop(lock(&self.slot).take());
        self.admission.changed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_pending_connection_is_evicted_and_proved_ones_never_are() {
        let admission = Arc::new(Admission::new(2));
        let a = admission.accept();
        let b = admission.accept();
        assert_eq!(a.prove(), Ok(()));
        assert_eq!(admission.pending(), 1);
        let c = admission.accept();
        assert_eq!(admission.pending(), 2);
        let d = admission.accept();
        // b was pending the longest: evicted; a, proved, is not.
        assert_eq!(admission.evicted.load(Ordering::Relaxed), 1);
        assert_eq!(b.prove(), Err(Refused::Evicted));
        assert!(a.is_proved());
        assert_eq!(c.prove(), Ok(()));
        assert_eq!(d.prove(), Err(Refused::Full), "two slots, both taken");
        assert_eq!(admission.proved(), 2);
        drop(a);
        assert_eq!(d.prove(), Ok(()));
        drop((c, d));
        assert_eq!((admission.proved(), admission.pending()), (0, 0));
    }

    #[tokio::test]
    async fn an_evicted_connection_is_told() {
        let admission = Arc::new(Admission::new(1));
        let first = admission.accept();
        let _second = admission.accept();
        first.evicted().await;
    }
}
