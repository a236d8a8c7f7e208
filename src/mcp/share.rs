//! A client's share of the running slots over HTTP, so that one client's flood
//! can neither starve another's calls nor fill the server's connections.
//!
//! A client is a 2025-11-25 session, or, for sessionless 2026-07-28 requests,
//! the workspace root a call names: those requests carry no identity the
//! server can trust (`clientInfo` is what the client says, the token is shared
//! by every client, the peer address is the proxy's), and the root is the
//! resource calls contend for (its own Lean runtime). A client runs at most
//! `per_client` calls at once (the rest wait, still cancellable) and holds at
//! most twice that admitted; a call past that is refused at once (HTTP 429),
//! so that a flood's surplus holds neither a slot nor a connection.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::util::lock;

#[derive(Debug)]
pub struct Share {
    per_client: usize,
    running: Arc<Semaphore>,
    held: Arc<Semaphore>,
}

impl Share {
    pub fn new(per_client: usize) -> Self {
        Self {
            per_client,
            running: Arc::new(Semaphore::new(per_client)),
            held: Arc::new(Semaphore::new(per_client.saturating_mul(2))),
        }
    }

    /// A place among the calls this client holds admitted, or `None` when it
    /// already holds twice its share.
    pub fn hold(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.held).try_acquire_owned().ok()
    }

    /// Wait for one of this client's running slots.
    pub async fn run(&self) -> OwnedSemaphorePermit {
        Arc::clone(&self.running)
            .acquire_owned()
            .await
            .expect("semaphore open")
    }

    /// Calls this client may run at once.
    pub fn per_client(&self) -> usize {
        self.per_client
    }
}

/// The shares of sessionless requests, one per canonical root.
#[derive(Debug)]
pub struct RootShares {
    per_client: usize,
    shares: Mutex<HashMap<PathBuf, Arc<Share>>>,
}

impl RootShares {
    pub fn new(per_client: usize) -> Self {
        Self {
            per_client,
            shares: Mutex::new(HashMap::new()),
        }
    }

    /// The share of `root`. A call keeps its share alive while it lives; the
    /// shares no call holds are forgotten now and then.
    pub fn of(&self, root: &Path) -> Arc<Share> {
        let mut shares = lock(&self.shares);
        if shares.len() >= 64 && shares.len().is_power_of_two() {
            shares.retain(|_, share| Arc::strong_count(share) > 1);
        }
        Arc::clone(
            shares
                .entry(root.to_path_buf())
                .or_insert_with(|| Arc::new(Share::new(self.per_client))),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_share_runs_its_size_and_holds_twice_it() {
        let share = Share::new(2);
        let held: Vec<_> = (0..4).map(|_| share.hold().expect("room")).collect();
        assert!(share.hold().is_none(), "twice the share is the most held");
        let running = (share.run().await, share.run().await);
        assert_eq!(share.running.available_permits(), 0);
        drop(running);
        drop(held);
        assert!(share.hold().is_some());
    }

    #[test]
    fn roots_have_shares_of_their_own() {
        let shares = RootShares::new(1);
        let a = shares.of(Path::new("/a"));
        assert!(Arc::ptr_eq(&a, &shares.of(Path::new("/a"))));
        let b = shares.of(Path::new("/b"));
        assert!(!Arc::ptr_eq(&a, &b));
        let _held = a.hold().unwrap();
        let _other = a.hold().unwrap();
        assert!(a.hold().is_none());
        assert!(b.hold().is_some(), "another root's share is untouched");
    }
}
