//! One tokio timer for many waits of the same length.
//!
//! Every call on a Lean server waits with two limits of a fixed length: the
//! status notice after `LEAN_BEAM_STATUS_DELAY_MS` and the request time
//! limit. A `tokio::time::sleep` per call registers a timer in the wheel and,
//! whenever no earlier timer is pending (so on every call of a sequential
//! client), wakes the reactor to re-arm its own timeout: an `eventfd` write
//! and an `epoll_wait` that returns at once, for every call. Waits of one
//! length end in the order they began, so a queue in start order and one
//! clock task sleeping until the first live deadline serve them all: the
//! clock re-arms once per deadline it reaches, not once per call.
//!
//! A leaf: tokio only.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// Waits of `delay`, each started by [`FifoTimer::start`].
pub struct FifoTimer {
    delay: Duration,
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes an idle clock (a first wait, or the timer dropped).
    wake: Notify,
}

#[derive(Default)]
struct State {
    /// Live waits in start order (so in deadline order), with their
    /// deadlines; a wait whose owner dropped it is left for the clock or the
    /// next start to remove.
    queue: VecDeque<(Instant, Weak<Notify>)>,
    /// The clock runs (it is spawned on the first start, in the runtime of
    /// the caller) and has not ended.
    clock: Option<tokio::task::JoinHandle<()>>,
    /// The clock waits for a first wait (no deadline armed).
    idle: bool,
    /// The timer was dropped: the clock ends.
    closed: bool,
}

impl FifoTimer {
    pub fn new(delay: Duration) -> Self {
        FifoTimer {
            delay,
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                wake: Notify::new(),
            }),
        }
    }

    /// The length of every wait.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// A wait that ends `delay` from now (see [`Expiry::expired`]). Must be
    /// called inside a tokio runtime.
    pub fn start(&self) -> Expiry {
        let notify = Arc::new(Notify::new());
        let deadline = Instant::now() + self.delay;
        let mut state = crate::util::lock(&self.shared.state);
        // Waits mostly end in order: drop the finished ones at the front, so
        // the queue holds about the waits still running.
        while state
            .queue
            .front()
            .is_some_and(|(_, waiter)| waiter.strong_count() == 0)
        {
            state.queue.pop_front();
        }
        state.queue.push_back((deadline, Arc::downgrade(&notify)));
        let running = state
            .clock
            .as_ref()
            .is_some_and(|clock| !clock.is_finished());
        if !running {
            state.idle = false;
            state.clock = Some(tokio::spawn(clock(Arc::clone(&self.shared))));
        } else if state.idle {
            state.idle = false;
            self.shared.wake.notify_one();
        }
        Expiry { notify }
    }
}

impl Drop for FifoTimer {
    fn drop(&mut self) {
        crate::util::lock(&self.shared.state).closed = true;
        self.shared.wake.notify_one();
    }
}

/// One wait of a [`FifoTimer`]; dropping it ends the wait.
pub struct Expiry {
    notify: Arc<Notify>,
}

impl Expiry {
    /// Resolves once the wait's deadline has passed.
    pub async fn expired(&self) {
        self.notify.notified().await;
    }
}

/// Fire every wait whose deadline has passed, then sleep until the first
/// live one (or until a first wait arrives).
async fn clock(shared: Arc<Shared>) {
    loop {
        let next = {
            let mut state = crate::util::lock(&shared.state);
            if state.closed {
                return;
            }
            let now = Instant::now();
            while let Some((deadline, waiter)) = state.queue.front() {
                match waiter.upgrade() {
                    None => {}
                    Some(_) if *deadline > now => break,
                    // A permit: the wait ends even if it polls only later.
                    Some(notify) => notify.notify_one(),
                }
                state.queue.pop_front();
            }
            let next = state.queue.front().map(|(deadline, _)| *deadline);
            state.idle = next.is_none();
            next
        };
        match next {
            Some(deadline) => tokio::select! {
                () = tokio::time::sleep_until(deadline) => {}
                () = shared.wake.notified() => {}
            },
            None => shared.wake.notified().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real time, lower bounds only: a wait never ends before its deadline,
    // and every wait ends (a lost wake-up would hang the test).
    const DELAY: Duration = Duration::from_millis(40);

    #[tokio::test]
    async fn waits_end_after_their_deadlines_in_order() {
        let timer = FifoTimer::new(DELAY);
        let first_start = Instant::now();
        let first = timer.start();
        tokio::time::sleep(DELAY / 2).await;
        let second_start = Instant::now();
        let second = timer.start();
        first.expired().await;
        assert!(first_start.elapsed() >= DELAY);
        second.expired().await;
        assert!(second_start.elapsed() >= DELAY);
        // Both fired by the one clock: the queue is empty again.
        assert!(crate::util::lock(&timer.shared.state).queue.is_empty());
    }

    #[tokio::test]
    async fn a_dropped_wait_does_not_hold_up_the_next() {
        let timer = FifoTimer::new(DELAY);
        drop(timer.start());
        let kept_start = Instant::now();
        let kept = timer.start();
        // The finished wait at the front was dropped by the start.
        assert_eq!(crate::util::lock(&timer.shared.state).queue.len(), 1);
        kept.expired().await;
        assert!(kept_start.elapsed() >= DELAY);
        // The clock is idle now; a new wait wakes it.
        tokio::time::sleep(DELAY).await;
        let later = Instant::now();
        timer.start().expired().await;
        assert!(later.elapsed() >= DELAY);
    }

    #[tokio::test]
    async fn a_clock_that_ended_is_started_again() {
        let timer = FifoTimer::new(DELAY);
        timer.start().expired().await;
        // As on a runtime that shut down: the clock task is gone.
        let clock = crate::util::lock(&timer.shared.state).clock.take().unwrap();
        clock.abort();
        let _ = clock.await;
        timer.start().expired().await;
        let clock = crate::util::lock(&timer.shared.state).clock.take();
        assert!(clock.is_some(), "a new clock");
    }

    #[tokio::test]
    async fn dropping_the_timer_ends_its_clock() {
        let timer = FifoTimer::new(Duration::from_secs(3600));
        let _wait = timer.start();
        let clock = crate::util::lock(&timer.shared.state).clock.take().unwrap();
        drop(timer);
        clock.await.expect("the clock ended on its own");
    }
}
