//! Locking a mutex whose holder panicked. berth's mutexes guard maps and sets that every
//! step leaves whole (an insert or a remove), so a panic elsewhere leaves nothing half
//! done in them: the data is used as it is, and one panicking thread does not take every
//! later lock down with it.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, taking the data as it is when a holder panicked.
pub fn lock_unpoisoned<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `condvar` with `guard`, as [`lock_unpoisoned`] locks.
pub fn wait_unpoisoned<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    condvar.wait(guard).unwrap_or_else(PoisonError::into_inner)
}
