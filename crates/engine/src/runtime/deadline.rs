//! One iteration under its deadline: cut when the deadline passes or the run
//! aborts. The deadline is a moment of the plan plus a grace (the scenario's end
//! plus its graceful stop, a ramp-down plus its graceful ramp-down), so a hold or
//! a skip of the plan's clock moves it while the iteration runs.

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use tokio::time::Sleep;

use super::worker::WorkerCtx;

/// Sets up `let mut $name: Deadline` on the caller's stack: the timer set to
/// `$at(&$ctx)` and the interruption registration, both pinned in place, so a
/// closed window and an open VU arm their deadline the same way without a box
/// (a macro, not a function, because the pinned futures must live in the
/// caller's frame).
macro_rules! pinned_deadline {
    ($name:ident, $ctx:ident, $at:ident) => {
        let sleep = tokio::time::sleep_until($at(&$ctx).into());
        tokio::pin!(sleep);
        let interrupted = $ctx.interrupted();
        tokio::pin!(interrupted);
        let mut $name = $crate::runtime::deadline::Deadline {
            sleep,
            interrupted,
            at: || $at(&$ctx),
            clock_seen: $ctx.clock_generation(),
        };
    };
}
pub(super) use pinned_deadline;

/// What a VU keeps across its iterations to time them out: one timer and one
/// registration for interruptions per window, not one per iteration.
pub(super) struct Deadline<'a, I, F> {
    /// The timer, set to the deadline as the clock last stood.
    pub sleep: Pin<&'a mut Sleep>,
    /// Fires on an abort or a change of the plan's clock.
    pub interrupted: Pin<&'a mut I>,
    /// The deadline now (computed from the plan's clock).
    pub at: F,
    /// The clock generation the timer was set for.
    pub clock_seen: u64,
}

impl<I, F> Deadline<'_, I, F>
where
    I: Future<Output = ()>,
    F: Fn() -> Instant,
{
    /// Set the timer again if the plan's clock changed since it was set (between
    /// iterations: a cheap look at the worker's generation).
    pub(super) fn follow(&mut self, ctx: &WorkerCtx) {
        if ctx.clock_generation() != self.clock_seen {
            self.clock_seen = ctx.clock_generation();
            let at = (self.at)();
            self.sleep.as_mut().reset(at.into());
        }
    }

    /// Run `it` to its end, or `None` when the deadline passed or the run
    /// aborted first. `renew` makes a fresh interruption future once one fired
    /// for a change of the clock. `it` is pinned by the caller where it was made
    /// (`std::pin::pin!`): an iteration's future is a few kilobytes, and taken by
    /// value it would be copied into this future, and this one into the caller's,
    /// once per iteration.
    pub(super) async fn run<T>(
        &mut self,
        ctx: &WorkerCtx,
        mut it: Pin<&mut impl Future<Output = T>>,
        renew: impl Fn() -> I,
    ) -> Option<T> {
        loop {
            tokio::select! {
                r = it.as_mut() => return Some(r),
                _ = self.sleep.as_mut() => {
                    // A hold may have moved the deadline on since it was set.
                    let at = (self.at)();
                    if Instant::now() >= at {
                        return None;
                    }
                    self.sleep.as_mut().reset(at.into());
                }
                _ = self.interrupted.as_mut() => {
                    if ctx.aborted.get() {
                        return None;
                    }
                    // The plan's clock moved: so did the deadline.
                    self.interrupted.set(renew());
                    self.clock_seen = ctx.clock_generation();
                    let at = (self.at)();
                    self.sleep.as_mut().reset(at.into());
                }
            }
        }
    }
}
