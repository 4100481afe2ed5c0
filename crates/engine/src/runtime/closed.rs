//! The closed model at run time: a VU loops iterations while its windows are open
//! (and, for `shared-iterations`, while the shared count has some left), finishing
//! the current iteration gracefully when a window closes.

use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::executor::{ClosedSchedule, Window};

use super::deadline::pinned_deadline;
use super::steering::Steer;
use super::vu::{IterationEnd, Vu};
use super::worker::WorkerCtx;

/// Run one VU of a closed schedule: `ids` are its number in the scenario and in the
/// whole test; with `steer`, it waits at an iteration boundary while held (a VU cap
/// below its rank, a pause). Its windows are moments of the plan: a hold or a skip
/// of the plan's clock moves them, and the deadlines of its iterations with them.
pub(super) async fn run_vu(
    ctx: Rc<WorkerCtx>,
    sc_idx: usize,
    (vu_number, global_id): (u64, u64),
    windows: Vec<Window>,
    sched: Rc<ClosedSchedule>,
    steer: Option<Steer>,
) {
    let sc = &ctx.plan.scenarios[sc_idx];
    // Moments of the plan (schedule time since second 0).
    let sc_start = sc.start_time;
    let sc_end = sc_start + sc.executor.duration();
    let mut vu = Vu::new(
        ctx.clone(),
        seed(ctx.id, sc_idx, vu_number),
        global_id + 1,
        sc.cookies,
    );
    ctx.vus_alloc.set(ctx.vus_alloc.get() + 1);
    let mut done: u64 = 0;
    let mut set_up = false;
    'windows: for w in windows {
        if !ctx.sleep_until_schedule(sc_start + w.start).await {
            break;
        }
        let end = sc_start + w.end;
        if ctx.schedule_at(Instant::now()) >= end {
            // A skip jumped over the whole window.
            continue;
        }
        if !set_up && !sc.setup.is_empty() {
            set_up = true;
            vu.run_once(&sc.name, &sc.setup).await;
        }
        // A window that closes before the scenario ends is a ramp-down (its iteration
        // gets graceful_ramp_down); one that closes at the end gets graceful_stop.
        // Real instants, computed again when the plan's clock moves.
        let hard_at = |ctx: &WorkerCtx| {
            let scenario_hard_end = ctx.real_at(sc_end) + sc.graceful_stop;
            if w.end >= sc.executor.duration() {
                scenario_hard_end
            } else {
                (ctx.real_at(end) + sched.graceful_ramp_down).min(scenario_hard_end)
            }
        };
        let mut now = Instant::now();
        // Active (counted in the second's VUs) only while it may run iterations: a
        // VU held from the start (a cap, a pause) is never counted.
        let mut active = false;
        // One deadline timer and one abort registration per window, not per iteration.
        pinned_deadline!(deadline, ctx, hard_at);
        // The clock read that ends an iteration also starts the next one when there
        // is no think time: one read per iteration, not two.
        // The window's end as an instant while the plan's clock has not moved.
        let unmoved_end = ctx.t0 + end;
        while ctx.before_schedule(now, end, unmoved_end) && !ctx.stopping.get() {
            if sched.iterations_per_vu.is_some_and(|n| done >= n) {
                if active {
                    ctx.vu_stopped(now);
                }
                break 'windows;
            }
            if let Some(s) = steer.as_ref().filter(|s| s.holds()) {
                // Parked: not an active VU until the cap is raised or the pause ends.
                if active {
                    ctx.vu_stopped(now);
                    active = false;
                }
                let go_on = s.park(&ctx, end).await;
                now = Instant::now();
                if !go_on {
                    break;
                }
                continue;
            }
            // shared-iterations: the next iteration comes from the count all VUs
            // share (taken only once this VU is free to run it); none left, done.
            if sched.shared_iterations.as_ref().is_some_and(|p| !p.take()) {
                if active {
                    ctx.vu_stopped(now);
                }
                break 'windows;
            }
            if !active {
                ctx.vu_started(now);
                active = true;
            }
            deadline.follow(&ctx);
            let entry = vu.pick(sc);
            let it_start = now;
            let outcome = {
                // Made in place, not moved (see `Deadline::run`).
                let it = std::pin::pin!(vu.iteration(sc, entry, None));
                deadline.run(&ctx, it, || ctx.interrupted()).await
            };
            now = Instant::now();
            match outcome {
                // An iteration a script's exception ended counts among
                // `iterations` as k6 counts it (the exception is sampled as a
                // `script_error`); the VU goes on.
                Some(IterationEnd::Completed | IterationEnd::Failed) => {
                    ctx.iteration(sc_idx, sc.entries[entry].flow, Some(now - it_start), now);
                    done += 1;
                }
                Some(IterationEnd::Stopped) | None => {
                    if outcome.is_none() {
                        vu.reset_connections();
                    }
                    ctx.iteration(sc_idx, sc.entries[entry].flow, None, now);
                    break;
                }
            }
            let think = sc.entries[entry].think.as_ref().or(sc.think.as_ref());
            if let Some(t) = think {
                let pause = t.pause(vu.rng(), now - it_start);
                if pause > Duration::ZERO {
                    let wake = (now + pause).min(ctx.real_at(end));
                    if !ctx.sleep_until(wake).await {
                        break;
                    }
                    now = Instant::now();
                }
            }
        }
        if active {
            ctx.vu_stopped(Instant::now());
        }
    }
    if set_up && !sc.teardown.is_empty() && !ctx.aborted.get() {
        vu.run_once(&sc.name, &sc.teardown).await;
    }
}

/// A distinct, reproducible random seed per VU.
pub(super) fn seed(worker: usize, scenario: usize, vu: u64) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64
        ^ (worker as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9)
        ^ (scenario as u64).wrapping_mul(0x94D0_49BB_1331_11EB)
        ^ vu.wrapping_mul(0x2545_F491_4F6C_DD1D);
    x ^= x >> 31;
    x
}
