//! The stream-order fence behind `lean_drop_workspace`.
//!
//! Admission happens synchronously, in the order requests were read, so the
//! order is the stream's order even though calls then run on separate tasks. A
//! fence waits for every call admitted before it; every call admitted after it
//! waits for the fence.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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
}
