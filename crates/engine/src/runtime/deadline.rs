//! One iteration under its deadline: cut when the deadline passes or the run
//! aborts. The deadline is a moment of the plan plus a grace (the scenario's end
//! plus its graceful stop, a ramp-down plus its graceful ramp-down), so a hold or
//! a skip of the plan's clock moves it while the iteration runs.

use std::future::Future;
use std::pin::Pin;
use std::task::{Poll, Waker};
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
    ///
    /// `it` is polled first, then, only when needed, the timer and the
    /// interruption: they are polled (their wakers registered with the task's)
    /// on the first poll and after either fired; on every other wake-up, while
    /// the task's waker is the one they hold, a look at the timer's state and at
    /// the worker's abort flag and clock generation tells whether either has
    /// anything to say (both set their cell before they wake the task). A
    /// streamed answer wakes the VU's task once per piece of the body (an LLM's
    /// every token), and a `select!` over the three, which polled the timer
    /// (its waker registered again) and the interruption (the notifier's lock
    /// taken) on each, showed in the CPU per token.
    pub(super) async fn run<T>(
        &mut self,
        ctx: &WorkerCtx,
        mut it: Pin<&mut impl Future<Output = T>>,
        renew: impl Fn() -> I,
    ) -> Option<T> {
        // The waker the timer and the interruption were last polled with.
        let mut armed: Option<Waker> = None;
        std::future::poll_fn(|cx| {
            if let Poll::Ready(r) = it.as_mut().poll(cx) {
                return Poll::Ready(Some(r));
            }
            if armed.as_ref().is_some_and(|w| w.will_wake(cx.waker()))
                && !self.sleep.is_elapsed()
                && !ctx.aborted.get()
                && ctx.clock_generation() == self.clock_seen
            {
                return Poll::Pending;
            }
            loop {
                if self.sleep.as_mut().poll(cx).is_ready() {
                    // A hold may have moved the deadline on since it was set.
                    let at = (self.at)();
                    if Instant::now() >= at {
                        return Poll::Ready(None);
                    }
                    self.sleep.as_mut().reset(at.into());
                    continue;
                }
                if self.interrupted.as_mut().poll(cx).is_ready() {
                    if ctx.aborted.get() {
                        return Poll::Ready(None);
                    }
                    // The plan's clock moved: so did the deadline.
                    self.interrupted.set(renew());
                    self.clock_seen = ctx.clock_generation();
                    let at = (self.at)();
                    self.sleep.as_mut().reset(at.into());
                    continue;
                }
                armed = Some(cx.waker().clone());
                return Poll::Pending;
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::path::Path;
    use std::rc::Rc;
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::runtime::steering::LoadControl;
    use crate::runtime::worker::{Outlets, ABORT};

    fn worker() -> Rc<WorkerCtx> {
        let src = "target: http://127.0.0.1:9\nscenarios:\n  s:\n    executor: per-vu-iterations\n    vus: 1\n    iterations: 1\n    flow:\n      - request: /\n";
        let cfg = pado_scenario::parse_str(src, "t.yaml").unwrap();
        let plan = Arc::new(crate::plan::compile(&cfg, Path::new(".")).unwrap());
        let (tx, _rx) = crossbeam_channel::unbounded();
        let outlets = Outlets {
            tx,
            observer: None,
            raw: None,
        };
        WorkerCtx::new(0, plan, Instant::now(), outlets, Vec::new())
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// An iteration that never ends but wakes its task every millisecond (a
    /// stream's pieces), counting its wake-ups in `woken`.
    async fn woken_forever(woken: &Cell<u32>) {
        loop {
            tokio::time::sleep(Duration::from_millis(1)).await;
            woken.set(woken.get() + 1);
        }
    }

    /// The deadline, planted 60 ms after the worker's start, cuts an iteration
    /// woken again and again: the timer armed on the first poll fires though the
    /// later wake-ups only look at it.
    #[test]
    fn an_iteration_woken_again_and_again_is_cut_at_its_deadline() {
        let ctx = worker();
        let at = |c: &WorkerCtx| c.real_at(Duration::from_millis(60));
        let woken = Cell::new(0);
        let out = rt().block_on(async {
            pinned_deadline!(deadline, ctx, at);
            let it = std::pin::pin!(woken_forever(&woken));
            deadline.run(&ctx, it, || ctx.interrupted()).await
        });
        let took = ctx.t0.elapsed();
        assert_eq!(out, None);
        assert!(woken.get() >= 5, "polled on its wake-ups: {}", woken.get());
        assert!(
            took >= Duration::from_millis(60) && took < Duration::from_secs(1),
            "cut at the deadline: {took:?}"
        );
    }

    /// An iteration that ends in time gives its output, on the first run and on
    /// a later one with the same timer.
    #[test]
    fn an_iteration_done_in_time_gives_its_output() {
        let ctx = worker();
        let at = |c: &WorkerCtx| c.real_at(Duration::from_secs(5));
        let outs = rt().block_on(async {
            pinned_deadline!(deadline, ctx, at);
            let mut outs = Vec::new();
            for n in 1..=2u32 {
                let it = std::pin::pin!(async move {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    n
                });
                outs.push(deadline.run(&ctx, it, || ctx.interrupted()).await);
            }
            outs
        });
        assert_eq!(outs, [Some(1), Some(2)]);
    }

    /// An abort cuts a busy iteration at once, long before its deadline.
    #[test]
    fn an_abort_cuts_an_iteration_woken_again_and_again() {
        let ctx = worker();
        let at = |c: &WorkerCtx| c.real_at(Duration::from_secs(30));
        let woken = Cell::new(0);
        let (out, aborted_at) = rt().block_on(async {
            pinned_deadline!(deadline, ctx, at);
            let it = std::pin::pin!(woken_forever(&woken));
            let abort = async {
                tokio::time::sleep(Duration::from_millis(30)).await;
                ctx.observe_stop(ABORT);
                Instant::now()
            };
            tokio::join!(deadline.run(&ctx, it, || ctx.interrupted()), abort)
        });
        assert_eq!(out, None);
        let late = aborted_at.elapsed();
        assert!(late < Duration::from_secs(1), "cut at the abort: {late:?}");
    }

    /// A hold of the plan's clock while the iteration runs moves its deadline
    /// on by the hold's length: the iteration is cut then, not at the deadline
    /// first planted.
    #[test]
    fn a_hold_of_the_clock_moves_a_running_iterations_deadline() {
        let ctx = worker();
        let control = Arc::new(LoadControl::default());
        ctx.steer_with(Arc::clone(&control));
        let at = |c: &WorkerCtx| c.real_at(Duration::from_millis(80));
        let woken = Cell::new(0);
        let out = rt().block_on(async {
            pinned_deadline!(deadline, ctx, at);
            let it = std::pin::pin!(woken_forever(&woken));
            let hold = async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                control
                    .hold(ctx.t0.elapsed(), Duration::from_millis(150))
                    .unwrap();
                ctx.follow_control(Instant::now());
            };
            tokio::join!(deadline.run(&ctx, it, || ctx.interrupted()), hold).0
        });
        let took = ctx.t0.elapsed();
        assert_eq!(out, None);
        assert!(
            took >= Duration::from_millis(230) && took < Duration::from_secs(2),
            "cut at the moved deadline: {took:?}"
        );
    }

    /// A skip of the plan's clock while the iteration runs brings its deadline
    /// nearer: the iteration is cut then, without waiting for the timer set
    /// for the deadline first planted.
    #[test]
    fn a_skip_of_the_clock_brings_a_running_iterations_deadline_nearer() {
        let ctx = worker();
        let control = Arc::new(LoadControl::default());
        ctx.steer_with(Arc::clone(&control));
        let at = |c: &WorkerCtx| c.real_at(Duration::from_millis(900));
        let woken = Cell::new(0);
        let out = rt().block_on(async {
            pinned_deadline!(deadline, ctx, at);
            let it = std::pin::pin!(woken_forever(&woken));
            let skip = async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                // The plan jumps 800 ms ahead: the deadline is 100 ms away.
                let now = ctx.t0.elapsed();
                control
                    .skip_to(now, now + Duration::from_millis(800))
                    .unwrap();
                ctx.follow_control(Instant::now());
            };
            tokio::join!(deadline.run(&ctx, it, || ctx.interrupted()), skip).0
        });
        let took = ctx.t0.elapsed();
        assert_eq!(out, None);
        assert!(
            took >= Duration::from_millis(100) && took < Duration::from_millis(600),
            "cut at the nearer deadline: {took:?}"
        );
    }
}
