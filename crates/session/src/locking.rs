//! The poison-tolerant lock the session's shared lists use: a holder that panicked
//! leaves a list that is still whole (a push or a take), so it stays usable.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, ignoring poisoning.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
