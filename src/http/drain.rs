//! The draining state of a replica (see `crate::replica`): once started, new
//! calls are answered `503 Service Unavailable` with `Retry-After` (nothing of
//! them was done, so a load balancer may send them to another replica) and
//! `/health` answers `503`, while the calls already admitted run on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Seconds a refused client is told to wait; the load balancer retries at once
/// on another replica.
pub const RETRY_AFTER_SECS: &str = "1";

/// A shared switch: cloned into the transport and whoever starts the drain.
#[derive(Debug, Clone, Default)]
pub struct Drain(Arc<AtomicBool>);

impl Drain {
    pub fn start(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_draining(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
