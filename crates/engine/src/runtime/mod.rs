//! Running a plan: one worker thread per core, each a current-thread tokio runtime
//! with its share of VUs (closed model) or of the arrival schedule (open model), and
//! the aggregator merging their per-second intervals.

mod closed;
mod deadline;
mod open;
mod self_stats;
mod steering;
mod timer;
mod vu;
mod worker;

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use pado_metrics::{aggregator::Sink, Aggregator, Totals, WorkerMessage};

use crate::executor::Schedule;
use crate::plan::RunPlan;
use crate::trace::Observer;

pub use steering::clock::{ClockError, ClockMap, HeldSpan, MAX_HELD};
pub use steering::ramp::Ramp;
pub use steering::{LoadControl, MAX_RATE_FACTOR};
pub use worker::{StopState, ABORT, RUNNING, STOPPING};

/// How to run.
#[derive(Default)]
pub struct RunOptions {
    /// Worker threads (default: the cores this process may use).
    pub workers: usize,
    /// Shared stop state: the CLI sets it on Ctrl-C or an aborting threshold.
    pub stop: StopState,
    /// Called once with the instant of second 0, just before the workers start,
    /// so that what runs beside the load (the target's metrics scrapes) shares
    /// its clock.
    pub on_start: Option<Box<dyn FnOnce(Instant) + Send>>,
    /// Sees every exchange as it finishes (`--http-debug`); `None` for a plain load
    /// run, which then pays one branch per request for the feature.
    pub observer: Option<Arc<dyn Observer>>,
    /// When second 0 should be (`--start-at`): the workers wait for it after the
    /// global setup; `None` starts as soon as they are ready.
    pub start_at: Option<Instant>,
    /// The global setup's variables from elsewhere (`--setup-vars`, one entry per
    /// [`RunPlan::vars`]): every VU is seeded with them and the setup is not run.
    pub setup_vars: Option<Vec<Option<Vec<u8>>>>,
    /// Leave the global teardown out (a segment other than 0: it runs once, there).
    pub skip_teardown: bool,
    /// Where raw per-request records go (`--output raw-json=FILE`): `None` for a
    /// run without, whose requests then pay one branch for the feature.
    pub raw: Option<pado_metrics::raw::RawLink>,
    /// The load as steered from outside while it runs (VU cap, rate factor, pause):
    /// `None` for a run nobody steers, whose iterations then pay one branch for it.
    pub control: Option<Arc<LoadControl>>,
}

/// What a finished run reports besides its measurements.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// Wall-clock time of second 0 (after the global setup).
    pub started_at: SystemTime,
    /// Monotonic start (second 0 of the timeline).
    pub t0: Instant,
    /// How long it ran.
    pub elapsed: Duration,
    /// Whether it was stopped before its planned end.
    pub interrupted: bool,
    /// Worker threads used.
    pub workers: usize,
    /// Everything measured.
    pub totals: Totals,
    /// With [`RunOptions::start_at`]: how late second 0 actually began, measured by
    /// the workers (the latest of them to be ready, or its timer's wake-up).
    pub start_skew: Option<Duration>,
    /// Whether the global setup ran here (it has steps and no variables were given).
    pub ran_setup: bool,
    /// A script's `setup()` or `teardown()` threw, or it called
    /// `exec.test.abort()` (k6's exit codes 107 and 108); `None` otherwise.
    pub script_end: Option<crate::script_state::ScriptEnd>,
}

/// Cores this process may use (`available_parallelism`: honours CPU affinity such as
/// `taskset` and cgroup CPU quotas). The result directory records it because the
/// generator's CPU use only means something as a share of it.
pub fn allowed_cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .max(1)
}

/// Worker threads by default: one per allowed core ([`allowed_cores`]).
pub fn default_workers() -> usize {
    allowed_cores()
}

/// Run the plan to its end (or until stopped), feeding closed seconds to `sink`.
pub fn run(plan: Arc<RunPlan>, opts: RunOptions, sink: Sink) -> RunReport {
    let workers = opts.workers.max(1);
    // One more participant than workers: the global setup/teardown runner (it says
    // Done after setup, so it never holds seconds back, and may send again later).
    let agg = Aggregator::spawn(workers + 1, sink);
    // Global setup: its requests land in second 0; its variables seed every VU.
    // Variables handed over from elsewhere (`pado setup`) replace it.
    let ran_setup = opts.setup_vars.is_none() && !plan.setup.is_empty();
    let outlets = worker::Outlets {
        tx: agg.tx.clone(),
        observer: opts.observer.clone(),
        raw: opts.raw.clone(),
    };
    let (setup, vars): (&[crate::plan::StepPlan], _) = match opts.setup_vars {
        Some(mut vars) => {
            vars.resize(plan.vars.len(), None);
            // The setup's runner still reports (nothing) so the aggregator hears from it.
            (&[], vars)
        }
        None => (&plan.setup, Vec::new()),
    };
    // A script's `setup()` runs here too; its return value goes to every VU.
    let (script_setup, has_teardown) = script_parts(&plan);
    let (initial_vars, script_data) = run_once(
        workers,
        plan.clone(),
        None,
        outlets.clone(),
        (setup, "setup", vars),
        script_setup.then_some((crate::script::ScriptRole::Setup, None)),
    );
    let (script_data, setup_fault, stop_state) = after_script_setup(script_data, &opts.stop);
    // k6: no teardown after a `setup()` that threw.
    let script_teardown = has_teardown && setup_fault.is_none();
    // Give threads a moment to start so second 0 is a full second of load; an agreed
    // start (`--start-at`) is kept unless the setup ran past it.
    let ready = Instant::now() + Duration::from_millis(20);
    let t0 = match opts.start_at {
        Some(at) if at > ready => at,
        _ => ready,
    };
    // The wall-clock time of second 0.
    let started_at = {
        let (now_i, now_s) = (Instant::now(), SystemTime::now());
        now_s + t0.saturating_duration_since(now_i) - now_i.saturating_duration_since(t0)
    };
    let planned_end = t0 + plan.planned_duration();
    if let Some(f) = opts.on_start {
        f(t0);
    }
    // Each worker notes when it was ready and woke at second 0: the latest is how
    // late the run really began (nanoseconds after the agreed start).
    let began = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut handles = Vec::new();
    for id in 0..workers {
        let plan = plan.clone();
        let outlets = outlets.clone();
        let stop = stop_state.clone();
        let vars = initial_vars.clone();
        let start = opts.start_at.map(|at| (at, began.clone()));
        let control = opts.control.clone();
        let data = script_data.clone();
        let h = std::thread::Builder::new()
            .name(format!("pado-worker-{id}"))
            .spawn(move || {
                worker_main(
                    id,
                    workers,
                    plan,
                    t0,
                    (outlets, data),
                    stop,
                    vars,
                    start,
                    control,
                )
            })
            .expect("spawning a worker thread");
        handles.push(h);
    }
    let mut stop_asked_at = join_workers(handles, &opts.stop);
    if plan.max_vus() == 0 && stop_asked_at.is_none() {
        stop_asked_at = idle_until_planned_end(&plan, opts.control.as_deref(), &opts.stop, t0);
    }
    let aborted = opts.stop.load(std::sync::atomic::Ordering::Relaxed) == ABORT;
    let teardown: &[crate::plan::StepPlan] = if aborted || opts.skip_teardown {
        &[]
    } else {
        &plan.teardown
    };
    let script_teardown = script_teardown && !aborted && !opts.skip_teardown;
    let (_, teardown_out) = run_once(
        workers,
        plan.clone(),
        Some(t0),
        outlets,
        (teardown, "teardown", initial_vars),
        script_teardown.then_some((crate::script::ScriptRole::Teardown, script_data)),
    );
    let totals = agg.finish();
    let end = Instant::now();
    // Holds and skips moved the planned end with the plan's clock.
    let planned_end = match &opts.control {
        Some(c) => t0 + c.clock().real_at(plan.planned_duration()),
        None => planned_end,
    };
    let interrupted = stop_asked_at.is_some_and(|at| at < planned_end);
    RunReport {
        started_at,
        t0,
        elapsed: end.saturating_duration_since(t0),
        interrupted,
        workers,
        totals,
        start_skew: opts.start_at.map(|at| {
            (at + Duration::from_nanos(began.load(std::sync::atomic::Ordering::Relaxed)))
                .saturating_duration_since(at)
        }),
        ran_setup,
        script_end: script_end(&plan, setup_fault, teardown_out),
    }
}

/// Wait for the workers, noting when a stop was first asked for: a run stopped
/// before its planned end was interrupted, however long its graceful stop took.
fn join_workers(
    handles: Vec<std::thread::JoinHandle<()>>,
    stop: &std::sync::atomic::AtomicU8,
) -> Option<Instant> {
    let asked = || stop.load(std::sync::atomic::Ordering::Relaxed) != RUNNING;
    let mut stop_asked_at = None;
    while !handles.iter().all(|h| h.is_finished()) {
        if stop_asked_at.is_none() && asked() {
            stop_asked_at = Some(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // A stop the workers obeyed within the last sleep: they ended at its word, now.
    if stop_asked_at.is_none() && asked() {
        stop_asked_at = Some(Instant::now());
    }
    for h in handles {
        let _ = h.join();
    }
    stop_asked_at
}

/// A segment whose share of the test is nothing (fewer VUs than segments) still
/// lasts to the end of the test's last stage (moved by holds and skips when
/// steered), its seconds empty: its run then covers the whole test and merges as
/// whole, instead of reading as a generator that ended early. Executors that end
/// by their iterations (`per-vu-iterations`, `shared-iterations`) have no stages:
/// their length is the work, and an empty share ends at once, as the others may.
/// Returns when a stop was asked for, if one was before that end.
fn idle_until_planned_end(
    plan: &RunPlan,
    control: Option<&LoadControl>,
    stop: &std::sync::atomic::AtomicU8,
    t0: Instant,
) -> Option<Instant> {
    let last_stage = plan
        .stage_marks()
        .iter()
        .map(|m| m.end_s)
        .fold(0.0f64, f64::max);
    let last_stage = Duration::try_from_secs_f64(last_stage).unwrap_or_default();
    let end = || match control {
        Some(c) => t0 + c.clock().real_at(last_stage),
        None => t0 + last_stage,
    };
    while Instant::now() < end() {
        if stop.load(std::sync::atomic::Ordering::Relaxed) != RUNNING {
            return Some(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

/// What a script's `setup()` left: its data for every VU, or the exception that
/// stops the test (k6: no iteration, no teardown; the workers still start, told
/// to stop at once, so the result directory is written as for any run), and the
/// stop state the workers follow.
fn after_script_setup(
    setup: Result<Option<String>, crate::script::ScriptFault>,
    stop: &StopState,
) -> (
    Option<Arc<str>>,
    Option<crate::script::ScriptFault>,
    StopState,
) {
    match setup {
        Ok(d) => (d.map(Arc::from), None, stop.clone()),
        Err(f) => (
            None,
            Some(f),
            Arc::new(std::sync::atomic::AtomicU8::new(ABORT)),
        ),
    }
}

/// Whether the plan's script (if any) exports `setup` and `teardown`.
fn script_parts(plan: &RunPlan) -> (bool, bool) {
    plan.script
        .as_ref()
        .map_or((false, false), |s| s.0.has_setup())
}

/// How the script's own part ended, when not well: setup's or teardown's
/// exception, else the reason given to `exec.test.abort()`.
fn script_end(
    plan: &RunPlan,
    setup_fault: Option<crate::script::ScriptFault>,
    teardown: Result<Option<String>, crate::script::ScriptFault>,
) -> Option<crate::script_state::ScriptEnd> {
    use crate::script_state::ScriptEnd;
    match (setup_fault, teardown) {
        (Some(f), _) => Some(ScriptEnd::Setup(f)),
        (None, Err(f)) => Some(ScriptEnd::Teardown(f)),
        (None, Ok(_)) => plan
            .script_state
            .aborted()
            .map(|r| ScriptEnd::Aborted(r.to_string())),
    }
}

/// What a setup or teardown runner leaves: the variables, and the script's
/// part's outcome (setup's return value as JSON, or its exception).
type OnceOut = (
    Vec<Option<Vec<u8>>>,
    Result<Option<String>, crate::script::ScriptFault>,
);

/// Run setup or teardown steps on a runner of their own (participant `id` of the
/// aggregator) and return the variables they leave. With no `t0` (setup, before the
/// run's clock starts) every sample lands in second 0.
fn run_once_steps(
    id: usize,
    plan: Arc<RunPlan>,
    t0: Option<Instant>,
    outlets: worker::Outlets,
    steps: &[crate::plan::StepPlan],
    scope: &str,
    vars: Vec<Option<Vec<u8>>>,
) -> Vec<Option<Vec<u8>>> {
    run_once(id, plan, t0, outlets, (steps, scope, vars), None).0
}

/// A script's `setup()` or `teardown(data)` to run after a runner's steps, with
/// setup's return value (JSON) it is handed.
type ScriptOnce = (crate::script::ScriptRole, Option<Arc<str>>);

/// [`run_once_steps`], then the script's part (`script`): the variables left and
/// what the script's setup returned (or the exception it threw).
fn run_once(
    id: usize,
    plan: Arc<RunPlan>,
    t0: Option<Instant>,
    outlets: worker::Outlets,
    (steps, scope, vars): (&[crate::plan::StepPlan], &str, Vec<Option<Vec<u8>>>),
    script: Option<ScriptOnce>,
) -> OnceOut {
    let t0 = t0.unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365));
    let ctx = worker::WorkerCtx::new(id, plan.clone(), t0, outlets, vars.clone());
    if steps.is_empty() && script.is_none() {
        ctx.finish();
        return (vars, Ok(None));
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(_) => {
            ctx.finish();
            return (vars, Ok(None));
        }
    };
    let local = tokio::task::LocalSet::new();
    let out = local.block_on(&rt, async {
        let mut vu = vu::Vu::new(ctx.clone(), 0x5e7_u64 ^ id as u64, 0, true);
        vu.run_once(scope, steps).await;
        let returned = match script {
            Some((role, data)) => {
                *ctx.script_data.borrow_mut() = data;
                vu.script_once(role).await
            }
            None => Ok(None),
        };
        (vu.into_vars(), returned)
    });
    ctx.finish();
    out
}

/// What `pado setup` gets from running the global setup alone.
#[derive(Debug)]
pub struct SetupRun {
    /// Every variable the setup left set, as (name, value), in the plan's order.
    pub vars: Vec<(String, Vec<u8>)>,
    /// Variables the setup extracts that it did not set (an extraction failed).
    pub missing: Vec<String>,
    /// Its requests, checks and failures.
    pub totals: Totals,
}

/// Run only the global setup, as the first thing of a run would (`pado setup`): its
/// variables are handed to segments of a split test with `--setup-vars`.
pub fn run_setup(plan: Arc<RunPlan>, observer: Option<Arc<dyn Observer>>) -> SetupRun {
    let agg = Aggregator::spawn(1, Box::new(|_, _| {}));
    let outlets = worker::Outlets {
        tx: agg.tx.clone(),
        observer,
        raw: None,
    };
    let vars = run_once_steps(
        0,
        plan.clone(),
        None,
        outlets,
        &plan.setup,
        "setup",
        Vec::new(),
    );
    let totals = agg.finish();
    let mut extracted = Vec::new();
    collect_extracted(&plan.setup, &mut extracted);
    let set = |i: usize| vars.get(i).is_some_and(Option::is_some);
    SetupRun {
        vars: plan
            .vars
            .iter()
            .enumerate()
            .filter_map(|(i, name)| Some((name.clone(), vars.get(i)?.clone()?)))
            .collect(),
        missing: plan
            .vars
            .iter()
            .enumerate()
            .filter(|(i, _)| extracted.contains(i) && !set(*i))
            .map(|(_, n)| n.clone())
            .collect(),
        totals,
    }
}

fn collect_extracted(steps: &[crate::plan::StepPlan], out: &mut Vec<usize>) {
    for s in steps {
        out.extend(s.extract.iter().map(|e| e.var));
        if let Some((_, inner)) = &s.group {
            collect_extracted(inner, out);
        }
    }
}

/// Run every scenario's flow once with one VU, for checking a script rather than
/// loading a target (`pado run --once`): the global setup, then per scenario its VU
/// setup, one iteration of each of its flows (every entry of a weighted mix) and
/// its VU teardown, then the global teardown; think times skipped. Each exchange goes
/// to `observer`, which is how the caller learns what happened. Nothing is measured.
pub fn run_single(plan: Arc<RunPlan>, observer: Arc<dyn Observer>) {
    // Measurements go nowhere: the receiver is dropped and sends fail silently.
    let (tx, _) = crossbeam_channel::unbounded();
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let t0 = Instant::now();
        let outlets = worker::Outlets {
            tx,
            observer: Some(observer),
            raw: None,
        };
        let ctx = |vars: Vec<Option<Vec<u8>>>| {
            worker::WorkerCtx::with_options(0, plan.clone(), t0, outlets.clone(), vars, true)
        };
        let (script_setup, script_teardown) = match &plan.script {
            Some(s) => s.0.has_setup(),
            None => (false, false),
        };
        let mut setup = vu::Vu::new(ctx(Vec::new()), 0x5e7, 0, true);
        setup.run_once("setup", &plan.setup).await;
        // A script's `setup()` too: what it returns goes to its iteration and
        // teardown; when it throws (said through the observer's sample), nothing
        // else runs, as in a load run.
        let data: Option<Arc<str>> = if script_setup {
            match setup.script_once(crate::script::ScriptRole::Setup).await {
                Ok(d) => d.map(Arc::from),
                Err(_) => return,
            }
        } else {
            None
        };
        let vars = setup.into_vars();
        for sc in &plan.scenarios {
            let c = ctx(vars.clone());
            *c.script_data.borrow_mut() = data.clone();
            let mut vu = vu::Vu::new(c, 1, 1, sc.cookies);
            vu.run_once(&sc.name, &sc.setup).await;
            // A scripted scenario runs its function once.
            let entries = if sc.script_exec.is_some() {
                1
            } else {
                sc.entries.len()
            };
            for entry in 0..entries {
                vu.iteration(sc, entry, None).await;
            }
            vu.run_once(&sc.name, &sc.teardown).await;
        }
        let c = ctx(vars);
        *c.script_data.borrow_mut() = data;
        let mut teardown = vu::Vu::new(c, 0x5e7, 0, true);
        teardown.run_once("teardown", &plan.teardown).await;
        if script_teardown {
            let _ = teardown
                .script_once(crate::script::ScriptRole::Teardown)
                .await;
        }
    });
}

#[allow(clippy::too_many_arguments)]
fn worker_main(
    id: usize,
    workers: usize,
    plan: Arc<RunPlan>,
    t0: Instant,
    (outlets, script_data): (worker::Outlets, Option<Arc<str>>),
    stop: StopState,
    initial_vars: Vec<Option<Vec<u8>>>,
    start: Option<(Instant, Arc<std::sync::atomic::AtomicU64>)>,
    control: Option<Arc<LoadControl>>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(_) => {
            let _ = outlets.tx.send(WorkerMessage::Done { worker: id });
            return;
        }
    };
    let local = tokio::task::LocalSet::new();
    let ctx = worker::WorkerCtx::new(id, plan.clone(), t0, outlets, initial_vars);
    ctx.prime(script_data, &stop);
    ctx.measure_self();
    // A scenario steered from outside needs a control even when nobody steers this
    // run: it then holds its starting VUs.
    let control = control.or_else(|| {
        plan.scenarios
            .iter()
            .any(|s| s.executor.steered_start().is_some())
            .then(|| Arc::new(LoadControl::default()))
    });
    if let Some(c) = &control {
        ctx.steer_with(c.clone());
    }
    local.block_on(&rt, async {
        let mut tasks = Vec::new();
        // VU ids are numbered over the whole test (all segments of a split test):
        // each scenario takes its id space after the previous scenarios'.
        let mut id_base: u64 = 0;
        for (sc_idx, sc) in plan.scenarios.iter().enumerate() {
            match sc.executor.schedule() {
                Schedule::Closed(c) => {
                    let c = Rc::new(c);
                    for (n, windows) in c.vus.iter().enumerate() {
                        // Spread VUs over workers: VU n of every scenario to worker
                        // (global index % workers), so mixed scenarios share cores.
                        let index = c.global_index(n as u64);
                        let global = id_base + index;
                        if global as usize % workers != id {
                            continue;
                        }
                        let steer = control.clone().map(|control| steering::Steer {
                            control,
                            rank: n as u64,
                            default_cap: sc.executor.steered_start().unwrap_or(u64::MAX),
                        });
                        tasks.push(tokio::task::spawn_local(closed::run_vu(
                            ctx.clone(),
                            sc_idx,
                            (index, global),
                            windows.clone(),
                            c.clone(),
                            steer,
                        )));
                    }
                    id_base += c.id_space();
                }
                Schedule::Open(o) => {
                    let share_workers = workers.min(o.max_vus.max(1) as usize);
                    let space = o.id_space();
                    if id < share_workers {
                        tasks.push(tokio::task::spawn_local(open::run_scheduler(
                            ctx.clone(),
                            sc_idx,
                            o,
                            (id, share_workers),
                            id_base,
                            control.clone(),
                        )));
                    }
                    id_base += space;
                }
            }
        }
        // An agreed start: this worker is ready now; when does its loop see second 0?
        if let Some((at, began)) = start {
            tokio::task::spawn_local(async move {
                tokio::time::sleep_until(t0.into()).await;
                let late = Instant::now().saturating_duration_since(at);
                began.fetch_max(
                    late.as_nanos().min(u64::MAX as u128) as u64,
                    std::sync::atomic::Ordering::Relaxed,
                );
            });
        }
        // The clock: once a second flush, and follow the shared stop state.
        let clock_ctx = ctx.clone();
        let stop2 = stop.clone();
        let clock = tokio::task::spawn_local(async move {
            let mut next_flush = clock_ctx.t0 + Duration::from_secs(1) + Duration::from_millis(2);
            let mut poll = tokio::time::interval(Duration::from_millis(20));
            poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // A stop (Ctrl-C, an aborting threshold) gives in-flight iterations the
            // longest graceful stop of the plan from the moment it is seen, then
            // cuts them: a target that never answers cannot hold the run open.
            let grace = clock_ctx
                .plan
                .scenarios
                .iter()
                .map(|s| s.graceful_stop)
                .max()
                .unwrap_or_default();
            loop {
                poll.tick().await;
                clock_ctx.poll_state(&stop2);
                let now = Instant::now();
                clock_ctx.follow_control(now);
                if clock_ctx
                    .stop_seen_at
                    .get()
                    .is_some_and(|at| now >= at + grace)
                {
                    clock_ctx.observe_stop(ABORT);
                }
                if now >= next_flush {
                    clock_ctx.tick();
                    while next_flush <= now {
                        next_flush += Duration::from_secs(1);
                    }
                }
            }
        });
        // The event-loop probe: how late this worker's loop wakes a timer.
        let probe = tokio::task::spawn_local(self_stats::lag_probe(ctx.clone()));
        for t in tasks {
            let _ = t.await;
        }
        clock.abort();
        probe.abort();
    });
    ctx.finish();
}
