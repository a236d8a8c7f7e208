//! Small helpers every layer uses.

use std::sync::{Mutex, MutexGuard};

/// Lock `mutex`, also when an earlier holder panicked. The critical sections
/// of this crate are short and leave their data consistent at every point a
/// panic could occur (inserts, removals, counters); refusing the data after
/// one panic would turn that one failure into a failure of every later caller.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
