//! The open model at run time: a scheduler starts iterations at their scheduled times
//! on idle VUs from a pool, growing it up to `max_vus`; when none is free the
//! iteration is dropped and counted. VUs are long-lived tasks woken through a slot, so
//! starting an iteration allocates nothing.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use crate::executor::OpenSchedule;

use super::closed::seed;
use super::deadline::pinned_deadline;
use super::steering::LoadControl;
use super::timer::PreciseTimer;
use super::vu::{IterationEnd, Vu};
use super::worker::WorkerCtx;

/// An iteration that starts this much after its scheduled time counts as late: the
/// generator, not the target, was behind.
pub(super) const LATE_AFTER: Duration = Duration::from_millis(10);

/// The longest a scheduler of a steered run sleeps before it looks at the plan's
/// clock again (a skip or a hold may have moved its next arrival).
const CLOCK_RECHECK: Duration = Duration::from_millis(50);

/// The mailbox between the scheduler and one idle VU.
#[derive(Default)]
struct Slot {
    start: Cell<Option<Instant>>,
    exit: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

impl Slot {
    fn wake(&self) {
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }

    /// Wait for a start time (Some) or the order to exit (None).
    async fn next(&self) -> Option<Instant> {
        poll_fn(|cx| {
            if let Some(t) = self.start.take() {
                return Poll::Ready(Some(t));
            }
            if self.exit.get() {
                return Poll::Ready(None);
            }
            *self.waker.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

struct Pool {
    idle: RefCell<Vec<Rc<Slot>>>,
    all: RefCell<Vec<Rc<Slot>>>,
    tasks: RefCell<Vec<tokio::task::JoinHandle<()>>>,
}

/// What waiting for a moment of the plan ended with.
enum Waited {
    /// The moment has come: at once (`None`), or after a wait that ended at the
    /// instant given (the clock is read once per arrival that needs no wait).
    Due(Option<Instant>),
    /// A stop was asked for.
    Stopped,
}

/// One worker's scheduler of one open-model scenario: its VU pool and what it
/// carries from arrival to arrival.
struct Scheduler {
    ctx: Rc<WorkerCtx>,
    sc_idx: usize,
    sched: OpenSchedule,
    share: usize,
    workers: usize,
    vu_base: u64,
    pool: Rc<Pool>,
    created: u64,
    max: u32,
    control: Option<std::sync::Arc<LoadControl>>,
    /// A steered rate's carried share of an arrival, in thousandths.
    credit: u64,
    timer: Option<PreciseTimer>,
    /// The hold whose arrivals this scheduler runs (its real start), and how many
    /// of the hold's arrivals (of the whole test) it has passed.
    hold: Option<(Duration, u64)>,
}

impl Scheduler {
    fn spawn_vu(&mut self) -> Rc<Slot> {
        let n = self.created;
        self.created += 1;
        let slot = Rc::new(Slot::default());
        let h = tokio::task::spawn_local(vu_loop(
            self.ctx.clone(),
            self.sc_idx,
            n,
            self.vu_base
                + self
                    .sched
                    .vu_index(n * self.workers as u64 + self.share as u64)
                + 1,
            slot.clone(),
            self.pool.clone(),
        ));
        self.pool.tasks.borrow_mut().push(h);
        self.pool.all.borrow_mut().push(slot.clone());
        self.ctx.vus_alloc.set(self.ctx.vus_alloc.get() + 1);
        slot
    }

    /// Start the iterations one arrival scheduled at `at` gives (one as planned,
    /// as many as the steered rate says), each on an idle VU, growing the pool up
    /// to its most; an arrival with no VU is dropped and counted.
    async fn launch(&mut self, at: Instant) {
        let starts = match &self.control {
            None => 1,
            Some(c) => c.arrivals(&mut self.credit),
        };
        for _ in 0..starts {
            let mut slot = self.pool.idle.borrow_mut().pop();
            if slot.is_none() {
                // VUs whose responses have arrived but that were not polled yet are as
                // good as idle: let them run before growing the pool (otherwise a
                // scheduler that falls behind would open connection after connection).
                tokio::task::yield_now().await;
                slot = self.pool.idle.borrow_mut().pop();
            }
            let slot = match slot {
                Some(s) => Some(s),
                None if (self.created as u32) < self.max => Some(self.spawn_vu()),
                None => None,
            };
            match slot {
                Some(s) => {
                    self.ctx.started(self.sc_idx, at);
                    s.start.set(Some(at));
                    s.wake();
                }
                None => self.ctx.dropped(self.sc_idx, Instant::now().max(at)),
            }
        }
        // Let the VU just started (and any other ready task) run before the next
        // arrival, so a burst of overdue arrivals cannot starve the VUs.
        tokio::task::yield_now().await;
    }

    /// Sleep until `at` or a stop (`now`: the instant read last). In a steered run
    /// the sleep lasts at most [`CLOCK_RECHECK`], so that a change of the plan's
    /// clock is seen that soon without registering for a wake-up per arrival; the
    /// caller computes the moment again.
    async fn sleep(&self, at: Instant, now: Instant) -> bool {
        let ctx = &self.ctx;
        let at = if ctx.steered() {
            at.min(now + CLOCK_RECHECK)
        } else {
            at
        };
        match &self.timer {
            Some(t) => tokio::select! {
                _ = t.sleep_until(at) => true,
                _ = ctx.stop_notify.notified() => false,
            },
            None => ctx.sleep_until(at).await,
        }
    }

    /// The next arrival of a held level this scheduler runs, before `before`: a
    /// hold keeps the rate the plan had when it began, so arrivals go on at that
    /// rate (split over workers and segments as planned ones are).
    fn next_held(&mut self, now: Instant, before: Instant) -> Option<Instant> {
        let ctx = &self.ctx;
        let h = ctx.hold_at(now)?;
        let offset =
            h.at.checked_sub(ctx.plan.scenarios[self.sc_idx].start_time)?;
        let rate = self.sched.rate_at(offset);
        if rate <= 0.0 {
            return None;
        }
        let passed = match self.hold {
            Some((from, n)) if from == h.from => n,
            _ => 0,
        };
        let until = (ctx.t0 + h.until).min(before);
        let mut j = passed;
        loop {
            let at = ctx.t0 + h.from + Duration::from_secs_f64(j as f64 / rate);
            if at >= until {
                self.hold = Some((h.from, j));
                return None;
            }
            // The segment's own arrivals of the hold, then this worker's of those,
            // as planned arrivals are split.
            let mine = match self.sched.segment.as_ref() {
                None => (j as usize) % self.workers == self.share,
                Some(p) => {
                    p.segment.contains(j)
                        && (p.segment.count_before(j) as usize) % self.workers == self.share
                }
            };
            j += 1;
            if mine {
                self.hold = Some((h.from, j));
                return Some(at);
            }
        }
    }

    /// Wait until the plan reaches `sched` (schedule time since second 0), running
    /// the arrivals of any hold met meanwhile.
    /// `now` is the instant the caller read last.
    async fn wait_for(&mut self, sched: Duration, mut now: Instant) -> Waited {
        let mut waited = false;
        loop {
            if self.ctx.stopping.get() {
                return Waited::Stopped;
            }
            let at = self.ctx.real_at(sched);
            if waited {
                now = Instant::now();
            }
            if at <= now {
                return Waited::Due(waited.then_some(now));
            }
            waited = true;
            let passed = self.hold;
            if let Some(held) = self.next_held(now, at) {
                if held > now {
                    if !self.sleep(held, now).await {
                        return Waited::Stopped;
                    }
                    if Instant::now() < held {
                        // Woken early by a change of the plan's clock: look again.
                        self.hold = passed;
                        continue;
                    }
                }
                // Still in that hold (a skip may have ended it meanwhile)?
                if self.ctx.hold_at(held).is_some() && !self.ctx.stopping.get() {
                    let now = Instant::now();
                    if now.saturating_duration_since(held) > LATE_AFTER {
                        self.ctx.late(self.sc_idx, now);
                    }
                    self.launch(held).await;
                }
                continue;
            }
            if !self.sleep(at, now).await {
                return Waited::Stopped;
            }
        }
    }
}

/// Run this worker's share of an open schedule: arrivals `k` with
/// `k % workers == share`, and `1/workers` of the VU pool. With `control`, each
/// arrival starts as many iterations as the steered rate gives it (none while
/// paused); the arrivals are moments of the plan, so a hold of the plan's clock
/// keeps the rate of its moment going and a skip leaves out what it jumps over.
pub(super) async fn run_scheduler(
    ctx: Rc<WorkerCtx>,
    sc_idx: usize,
    sched: OpenSchedule,
    (share, workers): (usize, usize),
    vu_base: u64,
    control: Option<std::sync::Arc<LoadControl>>,
) {
    let sc = &ctx.plan.scenarios[sc_idx];
    let sc_start = sc.start_time;
    let split = |n: u32| -> u32 {
        let n = n as usize;
        (n / workers + usize::from(share < n % workers)) as u32
    };
    let pre = split(sched.pre_allocated_vus);
    let max = split(sched.max_vus).max(pre);
    // Pool VU n of this worker is VU n·workers + share of the (segment's) pool; its id
    // is that VU's index in the whole test's id space (a stripe position for a segment).
    let mut s = Scheduler {
        ctx: ctx.clone(),
        sc_idx,
        sched: sched.clone(),
        share,
        workers,
        vu_base,
        pool: Rc::new(Pool {
            idle: RefCell::new(Vec::new()),
            all: RefCell::new(Vec::new()),
            tasks: RefCell::new(Vec::new()),
        }),
        created: 0,
        max,
        control,
        credit: 0,
        timer: PreciseTimer::new().ok(),
        hold: None,
    };
    for _ in 0..pre {
        let slot = s.spawn_vu();
        s.pool.idle.borrow_mut().push(slot);
    }
    // No iteration starts after the schedule's end: a scheduler that fell behind
    // (a rate above what this machine can start) drops what is still due then, so
    // the run ends by its duration plus the graceful stop, as k6's does.
    let end = sc_start + sched.end();
    let total = sched.total();
    let mine = total / workers as u64 + u64::from((share as u64) < total % workers as u64);
    let mut seen: u64 = 0;
    for (k, offset) in sched.arrivals().enumerate() {
        if k % workers != share {
            continue;
        }
        if ctx.stopping.get() {
            break;
        }
        let planned = sc_start + offset;
        let now = Instant::now();
        if ctx.schedule_at(now) >= end {
            ctx.dropped_n(sc_idx, mine.saturating_sub(seen), now);
            break;
        }
        seen += 1;
        if ctx.skipped(planned) {
            // Its stage was skipped: not planned any more, not dropped.
            continue;
        }
        let at = match s.wait_for(planned, now).await {
            Waited::Stopped => break,
            Waited::Due(woke) => {
                let at = ctx.real_at(planned);
                // Late only when it was due before this scheduler got to it (a
                // wait that ended is on time).
                if woke.is_none() && now.saturating_duration_since(at) > LATE_AFTER {
                    ctx.late(sc_idx, now);
                }
                at
            }
        };
        s.launch(at).await;
    }
    // The schedule lasts to its end even when its last arrival comes earlier (5/s for
    // 2 s: the last of 10 arrivals is at 1.8 s): the run's length, and so its rate,
    // is that of the schedule (as in k6), not that of its last arrival. Iterations
    // still running go on meanwhile (a hold's arrivals too); a stop ends the wait.
    let _ = s.wait_for(end, Instant::now()).await;
    // Let running iterations finish, then retire every VU.
    for slot in s.pool.all.borrow().iter() {
        slot.exit.set(true);
        slot.wake();
    }
    let tasks: Vec<_> = s.pool.tasks.borrow_mut().drain(..).collect();
    for t in tasks {
        let _ = t.await;
    }
}

async fn vu_loop(
    ctx: Rc<WorkerCtx>,
    sc_idx: usize,
    n: u64,
    id: u64,
    slot: Rc<Slot>,
    pool: Rc<Pool>,
) {
    let sc = &ctx.plan.scenarios[sc_idx];
    // The scenario's end is a moment of the plan: a hold or a skip moves it.
    let sc_end = sc.start_time + sc.executor.duration();
    let hard_at = |ctx: &WorkerCtx| ctx.real_at(sc_end) + sc.graceful_stop;
    let mut vu = Vu::new(ctx.clone(), seed(ctx.id, sc_idx, n), id, sc.cookies);
    if !sc.setup.is_empty() {
        vu.run_once(&sc.name, &sc.setup).await;
    }
    pinned_deadline!(deadline, ctx, hard_at);
    while let Some(scheduled) = slot.next().await {
        ctx.vu_started(Instant::now());
        deadline.follow(&ctx);
        let entry = vu.pick(sc);
        let outcome = {
            // Made in place, not moved (see `Deadline::run`).
            let it = std::pin::pin!(vu.iteration(sc, entry, Some(scheduled)));
            deadline.run(&ctx, it, || ctx.interrupted()).await
        };
        let now = Instant::now();
        ctx.vu_stopped(now);
        match outcome {
            // A script's exception ended it: an iteration all the same, as in k6.
            Some(IterationEnd::Completed | IterationEnd::Failed) => ctx.iteration(
                sc_idx,
                sc.entries[entry].flow,
                Some(now.saturating_duration_since(scheduled)),
                now,
            ),
            Some(IterationEnd::Stopped) => ctx.iteration(sc_idx, sc.entries[entry].flow, None, now),
            None => {
                vu.reset_connections();
                ctx.iteration(sc_idx, sc.entries[entry].flow, None, now);
            }
        }
        if slot.exit.get() || ctx.stopping.get() {
            break;
        }
        pool.idle.borrow_mut().push(slot.clone());
    }
    if !sc.teardown.is_empty() && !ctx.aborted.get() {
        vu.run_once(&sc.name, &sc.teardown).await;
    }
}
