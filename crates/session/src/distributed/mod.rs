//! A test split over generators (`pado agent`s, `pado k8s run`'s pods) as one run a
//! live view watches and steers: [`DistributedRun`] is the coordinator's
//! [`LiveRun`]. The coordinator's live loop hands it each merged second of the
//! whole test ([`DistributedRun::second`]); a change of the load is split by
//! segment ([`split`]) and sent to every generator at once, each through the
//! caller's [`SendFn`] (an agent's or a pod's `POST /control`), bounded in time by
//! it.
//!
//! Each generator keeps the changes it took in its own `events.jsonl`, in its
//! segment's numbers; the coordinator keeps each change once, in the whole test's
//! numbers ([`DistributedRun::changes`]), and the merged result's `events.jsonl`
//! holds those in place of the generators' copies (`crate::MergeSpec::control`),
//! so one change is one event however many generators took it.
//!
//! The target's metrics (`observe:`) are scraped by one generator (segment 0);
//! the coordinator follows its scrapes and hands each to
//! [`DistributedRun::scrape`], so a live view gets them
//! ([`LiveRun::subscribe_observed`]) as it does from a run in one process.

pub mod split;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use pado_base::lock;
use pado_engine::executor::segment::Segment;
use pado_engine::{ClockMap, RunPlan};
use pado_metrics::{ScrapeOutcome, SecondRecord};
use pado_results::events::EventRecord;
use pado_results::StageMark;

use crate::control::control_event;
use crate::{
    ControlCommand, ControlError, GeneratorLive, LiveRun, RunState, Subscribers, Subscription,
};

/// How a command reaches generator `index` (blocking, bounded in time by the
/// implementation): `Ok` once it took it, or why not in its words.
pub type SendFn = Arc<dyn Fn(usize, &ControlCommand) -> Result<(), String> + Send + Sync>;

/// One generator of the test: its name as people read it and its segment.
#[derive(Clone, Debug)]
pub struct Generator {
    /// `generator 0/2 (http://10.0.0.5:7070)`, a pod's name.
    pub name: String,
    /// Its share of the test.
    pub segment: Segment,
}

/// What one generator did in one merged second (from the live merge).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GeneratorTick {
    /// Requests it completed in the second.
    pub requests: u64,
    /// Its CPU in the second, in percent of one core, if it measured it.
    pub cpu_pct: Option<f64>,
}

/// A change of the plan's clock a command makes, worked out before it is sent.
#[derive(Clone, Debug)]
enum ClockChange {
    /// `next_stage`: from plan time `at` (in stage `from`) to `to`.
    Skip {
        at: Duration,
        to: Duration,
        from: String,
    },
    /// `hold`: the plan waits this long.
    Hold(Duration),
}

/// The load as the coordinator last set it, in the whole test's numbers.
#[derive(Clone, Debug)]
struct Load {
    vu_cap: Option<u64>,
    /// A ramp of the VUs sent to the generators, while it may still run.
    vu_ramp: Option<pado_engine::Ramp>,
    rate_factor: f64,
    paused: bool,
}

/// How many merged seconds keep each generator's part for
/// [`LiveRun::generators_at`]: more than any live view's subscription holds, so
/// a view reading a second late still finds its part.
pub(crate) const GENERATOR_SECONDS_KEPT: usize = 600;

/// The merged view the live loop keeps up to date.
#[derive(Debug, Default)]
struct Seen {
    seconds_closed: u32,
    active_vus: u32,
    thresholds_failing: usize,
    generators: Vec<GeneratorLive>,
    /// Each generator's part of the latest merged seconds, by second.
    by_second: std::collections::VecDeque<(u32, Vec<GeneratorLive>)>,
}

/// The coordinator's side of a distributed run (see the module's documentation).
pub struct DistributedRun {
    plan: Arc<RunPlan>,
    generators: Vec<Generator>,
    stages: Vec<StageMark>,
    send: SendFn,
    subscribers: Subscribers,
    t0: OnceLock<Instant>,
    seen: Mutex<Seen>,
    load: Mutex<Load>,
    /// One change at a time: two callers' changes never interleave on the
    /// generators.
    applying: Mutex<()>,
    changes: Mutex<Vec<EventRecord>>,
    /// The plan's clock as the generators keep it: the holds and skips that were
    /// sent, applied at the coordinator's time.
    clock: Mutex<ClockMap>,
    stopping: AtomicBool,
    ended: AtomicBool,
    /// The scraping generator's scrapes of the target, for live views.
    observed: crate::observed_feed::ObservedFeed,
}

impl DistributedRun {
    /// The run of the whole test `plan` (as the coordinator compiled it, not split)
    /// on `generators`, in segment order, reached through `send`.
    pub fn new(plan: Arc<RunPlan>, generators: Vec<Generator>, send: SendFn) -> DistributedRun {
        let seen = Seen {
            generators: generators
                .iter()
                .map(|g| GeneratorLive {
                    name: g.name.clone(),
                    segment: Some(format!("{}/{}", g.segment.index(), g.segment.count())),
                    requests: 0,
                    cpu_pct: None,
                    reporting: true,
                })
                .collect(),
            ..Seen::default()
        };
        DistributedRun {
            stages: plan.stage_marks(),
            plan,
            generators,
            send,
            subscribers: Subscribers::default(),
            t0: OnceLock::new(),
            seen: Mutex::new(seen),
            load: Mutex::new(Load {
                vu_cap: None,
                vu_ramp: None,
                rate_factor: 1.0,
                paused: false,
            }),
            applying: Mutex::new(()),
            changes: Mutex::new(Vec::new()),
            clock: Mutex::new(ClockMap::default()),
            stopping: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            observed: crate::observed_feed::ObservedFeed::default(),
        }
    }

    /// One scrape of the target (`observe:`) by the generator that scrapes it, of
    /// its endpoint `endpoint`, its `t` on the test's time axis (seconds from the
    /// agreed start): handed to every live view subscribed, without waiting.
    pub fn scrape(&self, endpoint: &str, s: &ScrapeOutcome) {
        self.observed.send(endpoint, s);
    }

    /// Second 0 of every generator is at `t0` (the agreed start).
    pub fn started(&self, t0: Instant) {
        let _ = self.t0.set(t0);
    }

    /// One merged second of the whole test, with each generator's part of it (by
    /// index; `None` when it did not report it) and how many thresholds fail so
    /// far: kept for [`LiveRun::state`] and handed to every subscriber without
    /// waiting.
    pub fn second(&self, r: &SecondRecord, ticks: &[Option<GeneratorTick>], failing: usize) {
        {
            let mut seen = lock(&self.seen);
            seen.seconds_closed = r.t + 1;
            seen.active_vus = r.vus;
            seen.thresholds_failing = failing;
            for (g, tick) in seen.generators.iter_mut().zip(ticks) {
                match tick {
                    Some(t) => {
                        g.requests = t.requests;
                        g.cpu_pct = t.cpu_pct;
                    }
                    None => {
                        g.requests = 0;
                        g.cpu_pct = None;
                    }
                }
            }
            // This second's parts, as they were in it: a generator that did not
            // report it is not reporting in it.
            let parts = seen
                .generators
                .iter()
                .zip(ticks.iter().chain(std::iter::repeat(&None)))
                .map(|(g, tick)| GeneratorLive {
                    reporting: g.reporting && tick.is_some(),
                    ..g.clone()
                })
                .collect();
            if seen.by_second.len() >= GENERATOR_SECONDS_KEPT {
                seen.by_second.pop_front();
            }
            seen.by_second.push_back((r.t, parts));
        }
        self.subscribers.send(r);
    }

    /// Generator `index` is left out of the live view (it stalled or is gone).
    pub fn left_out(&self, index: usize) {
        if let Some(g) = lock(&self.seen).generators.get_mut(index) {
            g.reporting = false;
        }
    }

    /// Every generator was told to stop (Ctrl-C, an `abort_on_fail` threshold), or
    /// a stop was asked for through [`LiveRun::apply`]: the coordinator reads it in
    /// [`RunState::stopping`] and stops the test as it does for Ctrl-C.
    pub fn stopping(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }

    /// The live view is over: subscriptions end, changes are refused.
    pub fn ended(&self) {
        self.ended.store(true, Ordering::SeqCst);
        self.subscribers.close();
    }

    /// The changes made so far, once each, in the whole test's numbers, as
    /// `control` events on the merged timeline (for `events.jsonl`).
    pub fn changes(&self) -> Vec<EventRecord> {
        lock(&self.changes).clone()
    }

    fn elapsed(&self) -> Duration {
        self.t0.get().map_or(Duration::ZERO, |t0| t0.elapsed())
    }

    /// Where the plan is now: its clock, holds and skips taken into account.
    fn plan_time(&self) -> Duration {
        lock(&self.clock).schedule_at(self.elapsed())
    }

    /// What a skip or a hold does to the plan's clock, checked before anything is
    /// sent (as a single run checks it); `None` for the other commands.
    fn clock_change(&self, cmd: &ControlCommand) -> Result<Option<ClockChange>, ControlError> {
        let not = |why: &str| ControlError::NotApplicable(why.to_string());
        match *cmd {
            ControlCommand::NextStage => {
                let at = self.plan_time();
                let to = crate::plan_now::next_stage_start(&self.stages, at)
                    .map_err(ControlError::NotApplicable)?;
                let from = crate::plan_now::stage_at(&self.stages, at)
                    .map(|m| m.label.clone())
                    .unwrap_or_default();
                Ok(Some(ClockChange::Skip { at, to, from }))
            }
            ControlCommand::Hold { seconds } => {
                if !seconds.is_finite() || seconds <= 0.0 {
                    return Err(not("a hold needs a length of more than 0 seconds"));
                }
                if self.stages.is_empty() {
                    return Err(not(
                        "the plan has no stages to hold (its executor runs iterations, not a timetable)",
                    ));
                }
                Ok(Some(ClockChange::Hold(Duration::from_secs_f64(seconds))))
            }
            _ => Ok(None),
        }
    }

    /// `cmd` sent to every generator at once (its share of it); the names of the
    /// ones that did not take it, with their words.
    fn forward(&self, per_segment: &[ControlCommand]) -> Vec<String> {
        let send = &self.send;
        std::thread::scope(|scope| {
            let handles: Vec<_> = per_segment
                .iter()
                .enumerate()
                .map(|(i, c)| scope.spawn(move || send(i, c)))
                .collect();
            handles
                .into_iter()
                .zip(&self.generators)
                .filter_map(|(h, g)| match h.join() {
                    Ok(Ok(())) => None,
                    Ok(Err(why)) => Some(format!("{}: {why}", g.name)),
                    Err(_) => Some(format!("{}: its sender failed", g.name)),
                })
                .collect()
        })
    }

    /// What the change does to the whole test's load, in its words (`None` when it
    /// changes nothing: a pause while paused).
    fn note(
        &self,
        cmd: &ControlCommand,
        clock: Option<&ClockChange>,
        load: &mut Load,
    ) -> Option<String> {
        let ramp = |s: f64| {
            if s > 0.0 {
                format!(" over {}", pado_base::units::duration(s))
            } else {
                String::new()
            }
        };
        Some(match *cmd {
            ControlCommand::Pause => {
                if load.paused {
                    return None;
                }
                load.paused = true;
                "paused".into()
            }
            ControlCommand::Resume => {
                if !load.paused {
                    return None;
                }
                load.paused = false;
                "resumed".into()
            }
            ControlCommand::Stop => "stopped".into(),
            ControlCommand::NextStage => match clock {
                Some(ClockChange::Skip { at, to, from }) => format!(
                    "skipped to the next stage ({from} ended {} early)",
                    pado_base::units::duration(to.saturating_sub(*at).as_secs_f64())
                ),
                _ => "skipped to the next stage".into(),
            },
            ControlCommand::Hold { seconds } => {
                format!("held the plan for {}", pado_base::units::duration(seconds))
            }
            ControlCommand::SetVus { vus, ramp_s } => {
                let from = load
                    .vu_cap
                    .or_else(|| split::closed_max_vus(&self.plan))
                    .unwrap_or(0);
                let now = self.current_vus(load);
                load.vu_cap = Some(vus);
                load.vu_ramp = (ramp_s > 0.0 && ramp_s.is_finite()).then(|| pado_engine::Ramp {
                    from: now as f64,
                    to: vus as f64,
                    start: Instant::now(),
                    length: Duration::from_secs_f64(ramp_s),
                });
                format!("active VUs {from} → {vus}{}", ramp(ramp_s))
            }
            // Refused by the split before anything is sent.
            ControlCommand::SetSegmentVus { .. } => return None,
            ControlCommand::SetRate { per_s, ramp_s } => {
                let planned = split::planned_rate_at(&self.plan, self.plan_time());
                let from = planned * load.rate_factor;
                if planned > 0.0 {
                    load.rate_factor = per_s / planned;
                }
                format!("arrival rate {from:.1}/s → {per_s:.1}/s{}", ramp(ramp_s))
            }
            ControlCommand::SetRateFactor { factor, ramp_s } => {
                let from = load.rate_factor;
                load.rate_factor = factor;
                format!("arrival rate ×{from} → ×{factor}{}", ramp(ramp_s))
            }
        })
    }

    /// The whole test's VUs now, as the generators run them: where a ramp is
    /// (one still running), else the last target set, else the plan's.
    fn current_vus(&self, load: &Load) -> u64 {
        let max = split::closed_max_vus(&self.plan).unwrap_or(0);
        load.vu_ramp
            .map(|r| r.vus_at(Instant::now()))
            .or(load.vu_cap)
            .unwrap_or_else(|| crate::plan_now::planned_vus(&self.plan, self.plan_time()))
            .min(max)
    }

    /// Keep a change once, at the whole test's time now.
    fn record(&self, what: String) {
        let ms = self.elapsed().as_millis() as u64;
        lock(&self.changes).push(control_event(what, ms, None));
    }
}

impl LiveRun for DistributedRun {
    fn subscribe(&self, capacity: usize) -> Subscription {
        self.subscribers.add(capacity)
    }

    fn state(&self) -> RunState {
        let elapsed = self.elapsed();
        let (at, planned_end) = {
            let clock = lock(&self.clock);
            (
                clock.schedule_at(elapsed),
                clock.real_at(self.plan.planned_duration()),
            )
        };
        let seen = lock(&self.seen);
        let load = lock(&self.load).clone();
        RunState {
            elapsed,
            planned_end,
            seconds_closed: seen.seconds_closed,
            stage: crate::plan_now::stage_at(&self.stages, at).map(|m| m.label.clone()),
            active_vus: seen.active_vus,
            vu_cap: load.vu_cap,
            rate_factor: load.rate_factor,
            paused: load.paused,
            stopping: self.stopping.load(Ordering::SeqCst),
            thresholds_failing: seen.thresholds_failing,
            abort_reason: None,
            ended: self.ended.load(Ordering::SeqCst),
        }
    }

    /// Split by segment and sent to every generator at once: each gets it even
    /// when another refuses or cannot be reached; the error names those, in their
    /// words. The change is recorded once when at least one generator took it.
    fn apply(&self, cmd: &ControlCommand) -> Result<(), ControlError> {
        if self.ended.load(Ordering::SeqCst) {
            return Err(ControlError::Ended);
        }
        let _one_at_a_time = lock(&self.applying);
        let clock = self.clock_change(cmd)?;
        let per_segment = split::split_command(
            cmd,
            &self
                .generators
                .iter()
                .map(|g| g.segment.clone())
                .collect::<Vec<_>>(),
            &self.plan,
            || split::planned_rate_at(&self.plan, self.plan_time()),
            || self.current_vus(&lock(&self.load)),
        )?;
        let failed = self.forward(&per_segment);
        if failed.len() < self.generators.len() {
            let mut load = lock(&self.load);
            let what = self.note(cmd, clock.as_ref(), &mut load);
            drop(load);
            // The generators moved their plans' clocks: so does the coordinator's
            // view of it (the stage shown, the planned end, what a rate is of).
            let now = self.elapsed();
            let _ = match &clock {
                Some(ClockChange::Skip { to, .. }) => lock(&self.clock).skip_to(now, *to),
                Some(ClockChange::Hold(length)) => lock(&self.clock).hold(now, *length),
                None => Ok(()),
            };
            if let Some(what) = what {
                self.record(what);
            }
        }
        if *cmd == ControlCommand::Stop {
            // The coordinator stops the test its own way too (every generator's
            // `/stop`, the results collected at once), whoever took this one.
            self.stopping();
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(ControlError::Generators(format!(
                "{} of {} generators did not take it: {}",
                failed.len(),
                self.generators.len(),
                failed.join("; ")
            )))
        }
    }

    fn generators(&self) -> Vec<GeneratorLive> {
        lock(&self.seen).generators.clone()
    }

    /// The scrapes the coordinator hands in ([`DistributedRun::scrape`]).
    fn subscribe_observed(
        &self,
        capacity: usize,
    ) -> Option<crossbeam_channel::Receiver<Arc<crate::ObservedScrape>>> {
        Some(self.observed.subscribe(capacity))
    }

    fn generators_at(&self, t: u32) -> Vec<GeneratorLive> {
        lock(&self.seen)
            .by_second
            .iter()
            .rev()
            .find(|(s, _)| *s == t)
            .map(|(_, parts)| parts.clone())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;
