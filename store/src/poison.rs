//! Locks that outlive a panic. berth's mutexes and read-write locks guard maps, sets and
//! lists that every step leaves whole (an insert, a remove, one assignment or push), so a
//! panic elsewhere leaves nothing half done in them: the data is used as it is, and one
//! panicking thread does not take every later lock down with it.

use std::sync::{LockResult, PoisonError};

/// The guard `result` holds (from `Mutex::lock`, `RwLock::read`/`write` or
/// `Condvar::wait`), whether or not a thread panicked while holding the lock.
pub fn unpoisoned<G>(result: LockResult<G>) -> G {
    result.unwrap_or_else(PoisonError::into_inner)
}
