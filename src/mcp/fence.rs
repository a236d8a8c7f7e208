//! The stream-order fence behind `lean_drop_workspace`.
//!
//! Admission happens synchronously, in the order requests were read, so the
//! order is the stream's order even though calls then run on separate tasks. A
//! fence waits for every call admitted before it; every call admitted after it
//! waits for the fence.
//!
//! Which calls one fence covers is the stream's [`FenceScope`]: every call of
//! the stream (stdio, a legacy HTTP session), or, for sessionless modern HTTP
//! requests, the calls on the same canonical root ([`RootFences`]), so that a
//! drop by one client never stalls the calls of another on other roots.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::util::lock;
use tokio::sync::watch;

#[derive(Debug, Default)]
pub struct Fence {
    state: Mutex<FenceState>,
}

#[derive(Debug, Default)]
struct FenceState {
    next: u64,
    /// Completion signals of the calls admitted and not yet finished.
    in_flight: HashMap<u64, watch::Receiver<bool>>,
    /// The completion signal of the most recent fence.
    last_fence: Option<watch::Receiver<bool>>,
}

/// One admitted call's place in stream order. Dropping it marks the call done.
#[derive(Debug)]
pub struct Admission {
    fence: Arc<Fence>,
    id: u64,
    done: watch::Sender<bool>,
    wait_for: Vec<watch::Receiver<bool>>,
}

impl Fence {
    /// Admit a call now, in stream order.
    pub fn admit(self: &Arc<Self>, is_fence: bool) -> Admission {
        let (done, rx) = watch::channel(false);
        let mut state = self.state.lock().expect("fence lock");
        let id = state.next;
        state.next += 1;
        let wait_for = if is_fence {
            state.in_flight.values().cloned().collect()
        } else {
            state.last_fence.iter().cloned().collect()
        };
        state.in_flight.insert(id, rx.clone());
        if is_fence {
            state.last_fence = Some(rx);
        }
        Admission {
            fence: Arc::clone(self),
            id,
            done,
            wait_for,
        }
    }

    pub fn in_flight(&self) -> usize {
        self.state.lock().expect("fence lock").in_flight.len()
    }
}

impl Admission {
    /// Wait until the calls this one must follow have finished.
    pub async fn wait_turn(&mut self) {
        for rx in &mut self.wait_for {
            // An error means the sender is gone: that call is finished too.
            let _ = rx.wait_for(|done| *done).await;
        }
        self.wait_for.clear();
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        let _ = self.done.send(true);
        if let Ok(mut state) = self.fence.state.lock() {
            state.in_flight.remove(&self.id);
        }
    }
}

/// Which calls a `lean_drop_workspace` fence covers.
#[derive(Debug, Clone)]
pub enum FenceScope {
    /// Every call of one stream, in the order it was read: the seed's full
    /// stream-order fence (stdio, one legacy HTTP session).
    Stream(Arc<Fence>),
    /// The calls on the same canonical root, whoever sent them (modern HTTP,
    /// where requests share no stream). Calls without a root are not fenced.
    Root(Arc<RootFences>),
}

impl Default for FenceScope {
    fn default() -> Self {
        FenceScope::Stream(Arc::default())
    }
}

/// One fence per canonical root, shared by every sessionless request.
#[derive(Debug, Default)]
pub struct RootFences {
    fences: Mutex<HashMap<PathBuf, Arc<Fence>>>,
}

impl RootFences {
    /// Admit a call on `root`, in the order admissions reach this registry.
    pub fn admit(&self, root: &Path, is_fence: bool) -> Admission {
        let mut fences = lock(&self.fences);
        // Forget the fences of roots with nothing in flight now and then; an
        // idle fence holds no order (everything it admitted has finished).
        if fences.len() >= 64 && fences.len().is_power_of_two() {
            fences.retain(|_, fence| fence.in_flight() > 0);
        }
        let fence = fences.entry(root.to_path_buf()).or_default();
        fence.admit(is_fence)
    }

    /// Roots with a fence registered (for tests and statistics).
    pub fn roots(&self) -> usize {
        lock(&self.fences).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn fence_waits_for_earlier_calls_and_blocks_later_ones() {
        let fence = Arc::new(Fence::default());
        let mut early = fence.admit(false);
        let mut drop_call = fence.admit(true);
        let mut late = fence.admit(false);
        early.wait_turn().await; // nothing before it

        let fence_turn = tokio::time::timeout(Duration::from_millis(50), drop_call.wait_turn());
        assert!(
            fence_turn.await.is_err(),
            "fence must wait for the earlier call"
        );
        drop(early);
        drop_call.wait_turn().await;

        let late_turn = tokio::time::timeout(Duration::from_millis(50), late.wait_turn());
        assert!(
            late_turn.await.is_err(),
            "later call must wait for the fence"
        );
        drop(drop_call);
        late.wait_turn().await;
        drop(late);
        assert_eq!(fence.in_flight(), 0);
    }

    #[tokio::test]
    async fn root_fences_order_only_calls_on_the_same_root() {
        let roots = RootFences::default();
        let (a, b) = (Path::new("/a"), Path::new("/b"));
        let early_a = roots.admit(a, false);
        let mut drop_a = roots.admit(a, true);
        let mut call_b = roots.admit(b, false);
        let mut late_a = roots.admit(a, false);
        // Root b knows nothing of a's fence.
        tokio::time::timeout(Duration::from_millis(50), call_b.wait_turn())
            .await
            .expect("a call on another root does not wait for the fence");
        let blocked = tokio::time::timeout(Duration::from_millis(50), drop_a.wait_turn());
        assert!(
            blocked.await.is_err(),
            "the fence waits for a's earlier call"
        );
        drop(early_a);
        drop_a.wait_turn().await;
        let blocked = tokio::time::timeout(Duration::from_millis(50), late_a.wait_turn());
        assert!(blocked.await.is_err(), "a's later call waits for the fence");
        drop(drop_a);
        late_a.wait_turn().await;
        assert_eq!(roots.roots(), 2);
    }
}
