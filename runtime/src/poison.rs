//! Locks that outlive a panic.

use std::sync::{LockResult, PoisonError};

/// The guard `result` holds, whether or not a thread panicked while holding the lock.
/// berth's locks guard caches and lists that a panic leaves whole (every update is one
/// assignment or push), so a poisoned lock is used as it is rather than spreading the
/// panic to every later caller.
pub fn unpoisoned<G>(result: LockResult<G>) -> G {
    result.unwrap_or_else(PoisonError::into_inner)
}
