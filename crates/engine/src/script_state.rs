//! What a scripted run (a k6 script) shares across its worker threads: the live
//! figures k6's `k6/execution` module reads (VUs active and initialized,
//! iterations completed and interrupted), the reason a script gave to
//! `exec.test.abort()`, and how the script's own part of the run ended
//! ([`ScriptEnd`]), which gives k6's exit codes (107, 108).
//!
//! Only scripted runs touch it: a YAML scenario's hot path pays one branch.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::script::ScriptFault;

/// Live figures of a scripted run, summed over every worker (relaxed atomics: each
/// is a count read on its own, never a lock).
#[derive(Debug, Default)]
pub struct ScriptRunState {
    vus_active: AtomicU64,
    vus_initialized: AtomicU64,
    completed: AtomicU64,
    interrupted: AtomicU64,
    abort: OnceLock<String>,
}

impl ScriptRunState {
    /// A VU became active (`up`) or idle.
    pub fn vu_active(&self, up: bool) {
        if up {
            self.vus_active.fetch_add(1, Ordering::Relaxed);
        } else {
            // Never below zero: a VU stops only after it started.
            let _ = self
                .vus_active
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    Some(n.saturating_sub(1))
                });
        }
    }

    /// A VU made its JavaScript context.
    pub fn vu_initialized(&self) {
        self.vus_initialized.fetch_add(1, Ordering::Relaxed);
    }

    /// An iteration ended: completed (or ended by an exception, as k6 counts it) or
    /// interrupted by the run's end.
    pub fn iteration_ended(&self, completed: bool) {
        let c = if completed {
            &self.completed
        } else {
            &self.interrupted
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// The script called `exec.test.abort(reason)`: the first reason is kept; the
    /// run stops (teardown and `handleSummary` still run, as in k6).
    pub fn abort(&self, reason: String) {
        let _ = self.abort.set(reason);
    }

    /// The reason given to `exec.test.abort()`, once called.
    pub fn aborted(&self) -> Option<&str> {
        self.abort.get().map(String::as_str)
    }

    /// The figures now (k6's `exec.instance`).
    pub fn snapshot(&self) -> InstanceFigures {
        InstanceFigures {
            vus_active: self.vus_active.load(Ordering::Relaxed),
            vus_initialized: self.vus_initialized.load(Ordering::Relaxed),
            iterations_completed: self.completed.load(Ordering::Relaxed),
            iterations_interrupted: self.interrupted.load(Ordering::Relaxed),
        }
    }
}

/// k6's `exec.instance` figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InstanceFigures {
    /// `vusActive`.
    pub vus_active: u64,
    /// `vusInitialized`.
    pub vus_initialized: u64,
    /// `iterationsCompleted`.
    pub iterations_completed: u64,
    /// `iterationsInterrupted`.
    pub iterations_interrupted: u64,
}

/// How a script's own part of the run ended when it did not end well; each has
/// k6's exit code ([`ScriptEnd::exit_code`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScriptEnd {
    /// `setup()` threw: no iteration ran, no teardown (k6: exit 107).
    Setup(ScriptFault),
    /// `teardown()` threw (k6: exit 107).
    Teardown(ScriptFault),
    /// The script called `exec.test.abort(reason)` (k6: exit 108).
    Aborted(String),
}

impl ScriptEnd {
    /// k6's exit code: 107 (`ScriptException`) for an exception in setup or
    /// teardown, 108 (`ScriptAborted`) for `exec.test.abort()`.
    pub fn exit_code(&self) -> i32 {
        match self {
            ScriptEnd::Setup(_) | ScriptEnd::Teardown(_) => 107,
            ScriptEnd::Aborted(_) => 108,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_abort_reason_is_kept_and_figures_add_up() {
        let s = ScriptRunState::default();
        assert_eq!(s.aborted(), None);
        s.abort("first".into());
        s.abort("second".into());
        assert_eq!(s.aborted(), Some("first"));
        s.vu_active(true);
        s.vu_active(true);
        s.vu_active(false);
        s.vu_active(false);
        s.vu_active(false);
        s.vu_initialized();
        s.iteration_ended(true);
        s.iteration_ended(true);
        s.iteration_ended(false);
        assert_eq!(
            s.snapshot(),
            InstanceFigures {
                vus_active: 0,
                vus_initialized: 1,
                iterations_completed: 2,
                iterations_interrupted: 1,
            }
        );
        assert_eq!(ScriptEnd::Aborted("x".into()).exit_code(), 108);
        assert_eq!(ScriptEnd::Setup(ScriptFault::default()).exit_code(), 107);
    }
}
