//! One protocol stream's state: its selected family, its legacy log level, the
//! request ids it owns from admission until their terminal response, and the
//! client's limits and fence scope.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

use super::era::Family;
use super::fence::FenceScope;
use super::share::Share;
use crate::context::{Cancellation, LogLevel};
use crate::util::lock;
use crate::wire::RequestId;

#[derive(Debug)]
pub struct Session {
    state: Mutex<State>,
    limits: Limits,
    fence: FenceScope,
}

/// The bounds one client's calls live under, besides the dispatcher's global
/// cap on running calls.
#[derive(Debug, Clone, Default)]
pub struct Limits {
    /// This client's share of the global slots, so that one client's slow
    /// calls cannot take every slot (a legacy HTTP session; sessionless
    /// requests take the share of their root instead).
    pub share: Option<Arc<Share>>,
    /// Calls this stream may hold admitted, running or waiting for a slot.
    /// Admission waits for it, which pushes back on a stdio reader; below it
    /// the reader keeps reading, so `notifications/cancelled` is read even
    /// while every running slot is busy.
    pub admitted: Option<Arc<Semaphore>>,
}

#[derive(Debug)]
struct State {
    family: Family,
    /// Legacy `logging/setLevel`; the legacy server starts at debug.
    log_level: LogLevel,
    active: HashMap<RequestId, Active>,
}

#[derive(Debug)]
struct Active {
    cancel: Cancellation,
    cancellable: bool,
}

/// What a `notifications/cancelled` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    Cancelled,
    NotCancellable,
    Unknown,
}

impl Default for Session {
    /// A stream with its own full fence and no limits of its own.
    fn default() -> Self {
        Self::new(Limits::default(), FenceScope::default())
    }
}

impl Session {
    pub fn new(limits: Limits, fence: FenceScope) -> Self {
        Self {
            state: Mutex::new(State {
                family: Family::Unselected,
                log_level: LogLevel::Debug,
                active: HashMap::new(),
            }),
            limits,
            fence,
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    pub fn fence(&self) -> &FenceScope {
        &self.fence
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // No code panics while holding this lock; recover the data if one ever did.
        lock(&self.state)
    }

    pub fn family(&self) -> Family {
        self.state().family
    }

    pub fn set_family(&self, family: Family) {
        self.state().family = family;
    }

    /// Select the modern family if nothing is selected yet.
    pub fn select_modern(&self) {
        let mut state = self.state();
        if state.family == Family::Unselected {
            state.family = Family::Modern;
        }
    }

    pub fn log_level(&self) -> LogLevel {
        self.state().log_level
    }

    pub fn set_log_level(&self, level: LogLevel) {
        self.state().log_level = level;
    }

    pub fn is_active(&self, id: &RequestId) -> bool {
        self.state().active.contains_key(id)
    }

    /// Own `id` from now until `retire`. Returns false if it is already active.
    pub fn activate(&self, id: RequestId, cancel: Cancellation, cancellable: bool) -> bool {
        let mut state = self.state();
        if state.active.contains_key(&id) {
            return false;
        }
        state.active.insert(
            id,
            Active {
                cancel,
                cancellable,
            },
        );
        true
    }

    /// Release `id` before its terminal response is published. Returns whether
    /// the response may be sent: false when cancellation won the race.
    pub fn retire(&self, id: &RequestId) -> bool {
        match self.state().active.remove(id) {
            Some(active) => !active.cancel.is_cancelled(),
            None => false,
        }
    }

    pub fn cancel(&self, id: &RequestId) -> CancelOutcome {
        let state = self.state();
        match state.active.get(id) {
            Some(active) if active.cancellable => {
                active.cancel.cancel();
                CancelOutcome::Cancelled
            }
            Some(_) => CancelOutcome::NotCancellable,
            None => CancelOutcome::Unknown,
        }
    }

    /// Cancel every cancellable call (transport shutdown).
    pub fn cancel_all(&self) -> usize {
        let state = self.state();
        let mut n = 0;
        for active in state.active.values().filter(|a| a.cancellable) {
            active.cancel.cancel();
            n += 1;
        }
        n
    }

    pub fn active_count(&self) -> usize {
        self.state().active.len()
    }
}
