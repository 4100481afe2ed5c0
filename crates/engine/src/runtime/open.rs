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
use super::steering::LoadControl;
use super::timer::PreciseTimer;
use super::vu::{IterationEnd, Vu};
use super::worker::WorkerCtx;

/// An iteration that starts this much after its scheduled time counts as late: the
/// generator, not the target, was behind.
pub(super) const LATE_AFTER: Duration = Duration::from_millis(10);

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

/// Run this worker's share of an open schedule: arrivals `k` with
/// `k % workers == share`, and `1/workers` of the VU pool. With `control`, each
/// arrival starts as many iterations as the steered rate gives it (none while paused).
pub(super) async fn run_scheduler(
    ctx: Rc<WorkerCtx>,
    sc_idx: usize,
    sched: OpenSchedule,
    (share, workers): (usize, usize),
    vu_base: u64,
    control: Option<std::sync::Arc<LoadControl>>,
) {
    let sc = &ctx.plan.scenarios[sc_idx];
    let sc_start = ctx.t0 + sc.start_time;
    let split = |n: u32| -> u32 {
        let n = n as usize;
        (n / workers + usize::from(share < n % workers)) as u32
    };
    let pre = split(sched.pre_allocated_vus);
    let max = split(sched.max_vus).max(pre);
    let pool = Rc::new(Pool {
        idle: RefCell::new(Vec::new()),
        all: RefCell::new(Vec::new()),
        tasks: RefCell::new(Vec::new()),
    });
    // Pool VU n of this worker is VU n·workers + share of the (segment's) pool; its id
    // is that VU's index in the whole test's id space (a stripe position for a segment).
    let spawn_vu = |n: u64| -> Rc<Slot> {
        let slot = Rc::new(Slot::default());
        let h = tokio::task::spawn_local(vu_loop(
            ctx.clone(),
            sc_idx,
            n,
            vu_base + sched.vu_index(n * workers as u64 + share as u64) + 1,
            slot.clone(),
            pool.clone(),
        ));
        pool.tasks.borrow_mut().push(h);
        pool.all.borrow_mut().push(slot.clone());
        ctx.vus_alloc.set(ctx.vus_alloc.get() + 1);
        slot
    };
    let mut created: u64 = 0;
    for _ in 0..pre {
        let s = spawn_vu(created);
        pool.idle.borrow_mut().push(s);
        created += 1;
    }
    let timer = PreciseTimer::new().ok();
    // No iteration starts after the schedule's end: a scheduler that fell behind
    // (a rate above what this machine can start) drops what is still due then, so
    // the run ends by its duration plus the graceful stop, as k6's does.
    let end = sc_start + sched.end();
    let total = sched.total();
    let mine = total / workers as u64 + u64::from((share as u64) < total % workers as u64);
    let mut seen: u64 = 0;
    // A steered rate's carried share of an arrival, in thousandths.
    let mut credit: u64 = 0;
    for (k, offset) in sched.arrivals().enumerate() {
        if k % workers != share {
            continue;
        }
        if ctx.stopping.get() {
            break;
        }
        let at = sc_start + offset;
        let now = Instant::now();
        if now >= end {
            ctx.dropped_n(sc_idx, mine.saturating_sub(seen), end);
            break;
        }
        seen += 1;
        if at > now {
            match &timer {
                Some(t) => {
                    tokio::select! {
                        _ = t.sleep_until(at) => {}
                        _ = ctx.stop_notify.notified() => break,
                    }
                }
                None => {
                    if !ctx.sleep_until(at).await {
                        break;
                    }
                }
            }
        } else if now - at > LATE_AFTER {
            ctx.late(sc_idx, now);
        }
        let starts = match &control {
            None => 1,
            Some(c) => c.arrivals(&mut credit),
        };
        for _ in 0..starts {
            let mut slot = pool.idle.borrow_mut().pop();
            if slot.is_none() {
                // VUs whose responses have arrived but that were not polled yet are as
                // good as idle: let them run before growing the pool (otherwise a
                // scheduler that falls behind would open connection after connection).
                tokio::task::yield_now().await;
                slot = pool.idle.borrow_mut().pop();
            }
            let slot = match slot {
                Some(s) => Some(s),
                None if (created as u32) < max => {
                    let s = spawn_vu(created);
                    created += 1;
                    Some(s)
                }
                None => None,
            };
            match slot {
                Some(s) => {
                    s.start.set(Some(at));
                    s.wake();
                }
                None => ctx.dropped(sc_idx, Instant::now().max(at)),
            }
        }
        // Let the VU just started (and any other ready task) run before the next
        // arrival, so a burst of overdue arrivals cannot starve the VUs.
        tokio::task::yield_now().await;
    }
    // The schedule lasts to its end even when its last arrival comes earlier (5/s for
    // 2 s: the last of 10 arrivals is at 1.8 s): the run's length, and so its rate,
    // is that of the schedule (as in k6), not that of its last arrival. Iterations
    // still running go on meanwhile; a stop ends the wait.
    let _ = ctx.sleep_until(end).await;
    // Let running iterations finish, then retire every VU.
    for s in pool.all.borrow().iter() {
        s.exit.set(true);
        s.wake();
    }
    let tasks: Vec<_> = pool.tasks.borrow_mut().drain(..).collect();
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
    let hard_end = ctx.t0 + sc.start_time + sc.executor.duration() + sc.graceful_stop;
    let mut vu = Vu::new(ctx.clone(), seed(ctx.id, sc_idx, n), id, sc.cookies);
    if !sc.setup.is_empty() {
        vu.run_once(&sc.name, &sc.setup).await;
    }
    let hard_sleep = tokio::time::sleep_until(hard_end.into());
    tokio::pin!(hard_sleep);
    let aborted = ctx.aborted();
    tokio::pin!(aborted);
    while let Some(scheduled) = slot.next().await {
        ctx.vu_started(Instant::now());
        let entry = vu.pick(sc);
        let outcome = tokio::select! {
            r = vu.iteration(sc, entry, Some(scheduled)) => Some(r),
            _ = &mut hard_sleep => None,
            _ = &mut aborted => None,
        };
        let now = Instant::now();
        ctx.vu_stopped(now);
        match outcome {
            Some(IterationEnd::Completed) => ctx.iteration(
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
