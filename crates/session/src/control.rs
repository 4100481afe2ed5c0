//! The handle of a running session: watch each closed second, read the run's
//! state, and change its load (closed-model VUs, open-model arrival rate, at once
//! or ramped; pause, stop; skip to the next stage or hold the plan) while it goes.
//! Every change is kept and written to the result directory's `events.jsonl` as a
//! `control` event, so a report of a hand-steered run says so and its analyses
//! take a change for the start of a new load level.
//!
//! The handle is cheap to clone and safe to share between threads: the load lives
//! in the engine's atomics ([`LoadControl`]), read by the workers at iteration and
//! arrival boundaries; the rest is touched once a second or when a caller asks.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use pado_engine::executor::segment::Segment;
use pado_engine::{LoadControl, RunPlan, StopState, MAX_RATE_FACTOR, RUNNING, STOPPING};
use pado_metrics::SecondRecord;
use pado_results::events::EventRecord;
use pado_results::StageMark;

use crate::command::ControlCommand;
use crate::error::ControlError;
use crate::plan_now;
use crate::subscribe::{Subscribers, Subscription};
use pado_base::lock;

/// What a run is doing now, as its handle reads it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunState {
    /// Time since second 0 (zero before it).
    pub elapsed: Duration,
    /// When the load is planned to end, since second 0: the plan's length moved by
    /// the holds (later) and skips (earlier) made so far; the graceful stop comes
    /// after it.
    pub planned_end: Duration,
    /// Seconds closed so far.
    pub seconds_closed: u32,
    /// The stage running now (its label), if the plan has stages: on the plan's
    /// clock, so a hold keeps it and a skip moves on.
    pub stage: Option<String>,
    /// Active VUs in the last closed second.
    pub active_vus: u32,
    /// The cap on closed-model VUs a caller set (while a ramp runs: where it is
    /// now), or an externally controlled scenario's starting VUs; `None`: as planned.
    pub vu_cap: Option<u64>,
    /// The factor open-model arrivals run at (1: as planned).
    pub rate_factor: f64,
    /// Whether new iterations and arrivals are held.
    pub paused: bool,
    /// Whether a stop was asked for (Ctrl-C, an aborting threshold, the handle).
    pub stopping: bool,
    /// How many thresholds fail on the seconds so far.
    pub thresholds_failing: usize,
    /// Why the run stopped itself (an `abort_on_fail` threshold, a required event).
    pub abort_reason: Option<String>,
    /// Whether the load has ended.
    pub ended: bool,
}

/// What the handle and the run share.
pub(crate) struct Shared {
    control: Arc<LoadControl>,
    stop: StopState,
    plan: Arc<RunPlan>,
    stages: Vec<StageMark>,
    t0: OnceLock<Instant>,
    pub(crate) subscribers: Subscribers,
    changes: Mutex<Vec<EventRecord>>,
    seconds_closed: AtomicU32,
    active_vus: AtomicU32,
    thresholds_failing: AtomicUsize,
    abort_reason: OnceLock<String>,
    ended: AtomicBool,
    /// This run's part of a split test, if it is one: a coordinator's ramp of the
    /// whole test's VUs is followed as this segment's share of it.
    segment: Option<Segment>,
    /// Bumped by every change of the VUs: a share's ramp ([`RunHandle::apply`]'s
    /// `set_segment_vus`) stops at the next one.
    vu_changes: AtomicU64,
}

/// How often a share of the whole test's ramp sets this run's VUs: as often as
/// the engine's own clock writes a ramp's level.
const SHARE_TICK: Duration = Duration::from_millis(20);

/// The handle of a running session (see the module's documentation).
#[derive(Clone)]
pub struct RunHandle {
    shared: Arc<Shared>,
}

impl RunHandle {
    /// A handle for a run of `plan` stopped through `stop`.
    pub(crate) fn new(
        plan: Arc<RunPlan>,
        stop: StopState,
        stages: Vec<StageMark>,
        segment: Option<Segment>,
    ) -> Self {
        RunHandle {
            shared: Arc::new(Shared {
                control: Arc::new(LoadControl::default()),
                stop,
                plan,
                stages,
                t0: OnceLock::new(),
                subscribers: Subscribers::default(),
                changes: Mutex::new(Vec::new()),
                seconds_closed: AtomicU32::new(0),
                active_vus: AtomicU32::new(0),
                thresholds_failing: AtomicUsize::new(0),
                abort_reason: OnceLock::new(),
                ended: AtomicBool::new(false),
                segment,
                vu_changes: AtomicU64::new(0),
            }),
        }
    }

    /// The engine's side of the control.
    pub(crate) fn load_control(&self) -> Arc<LoadControl> {
        self.shared.control.clone()
    }

    /// Second 0 has begun at `t0`.
    pub(crate) fn started(&self, t0: Instant) {
        let _ = self.shared.t0.set(t0);
    }

    /// One closed second, judged: kept for [`RunHandle::state`] and handed to every
    /// subscriber without waiting.
    pub(crate) fn closed(&self, r: &SecondRecord, failing: usize) {
        let s = &self.shared;
        s.seconds_closed.store(r.t + 1, Ordering::Relaxed);
        s.active_vus.store(r.vus, Ordering::Relaxed);
        s.thresholds_failing.store(failing, Ordering::Relaxed);
        s.subscribers.send(r);
    }

    /// The run stops itself (`why`, said once): the first reason is kept.
    pub(crate) fn abort(&self, why: String) -> bool {
        let first = self.shared.abort_reason.set(why).is_ok();
        if first {
            self.shared.stop.store(STOPPING, Ordering::SeqCst);
        }
        first
    }

    /// The first reason the run stopped itself, if it did.
    pub(crate) fn abort_reason(&self) -> Option<String> {
        self.shared.abort_reason.get().cloned()
    }

    /// The load has ended: subscriptions end, changes are refused.
    pub(crate) fn ended(&self) {
        self.shared.ended.store(true, Ordering::SeqCst);
        self.shared.subscribers.close();
    }

    /// The changes made so far, as `control` events.
    pub(crate) fn changes(&self) -> Vec<EventRecord> {
        lock(&self.shared.changes).clone()
    }

    /// Each closed second from now on, through a channel of `capacity` seconds: a
    /// subscriber that falls further behind loses seconds (counted by
    /// [`Subscription::lost`]) and never slows the run. The subscription ends when
    /// the load ends.
    pub fn subscribe(&self, capacity: usize) -> Subscription {
        self.shared.subscribers.add(capacity)
    }

    /// What the run is doing now.
    pub fn state(&self) -> RunState {
        let s = &self.shared;
        let elapsed = self.elapsed();
        let clock = s.control.clock();
        let at = clock.schedule_at(elapsed);
        RunState {
            elapsed,
            planned_end: clock.real_at(s.plan.planned_duration()),
            seconds_closed: s.seconds_closed.load(Ordering::Relaxed),
            stage: plan_now::stage_at(&s.stages, at).map(|m| m.label.clone()),
            active_vus: s.active_vus.load(Ordering::Relaxed),
            vu_cap: s.control.vu_cap().or_else(|| self.steered_start()),
            rate_factor: s.control.rate_factor(),
            paused: s.control.paused(),
            stopping: s.stop.load(Ordering::Relaxed) != RUNNING,
            thresholds_failing: s.thresholds_failing.load(Ordering::Relaxed),
            abort_reason: s.abort_reason.get().cloned(),
            ended: s.ended.load(Ordering::Relaxed),
        }
    }

    /// Run at most `vus` VUs in each closed-model scenario (up to the plan's most):
    /// VUs above it finish their iteration and wait; raising it lets them go on.
    pub fn set_vus(&self, vus: u64) -> Result<(), ControlError> {
        self.ramp_vus(vus, Duration::ZERO)
    }

    /// The VUs a change to `vus` starts from (the cap set, else the plan's VUs
    /// now, at most the plan's most) and that most, once the change is found possible: the run
    /// is live, has a closed-model scenario, and `vus` is within its most.
    fn vus_from(&self, vus: u64) -> Result<(u64, u64), ControlError> {
        self.live()?;
        let max = self.closed_max_vus().ok_or_else(|| {
            ControlError::NotApplicable(
                "the run has no closed-model scenario (VUs are set by its arrival rate)".into(),
            )
        })?;
        if vus > max {
            return Err(ControlError::AboveMax { asked: vus, max });
        }
        let from = self
            .shared
            .control
            .vu_cap()
            .unwrap_or_else(|| plan_now::planned_vus(&self.shared.plan, self.plan_time()))
            .min(max);
        Ok((from, max))
    }

    /// [`RunHandle::set_vus`], moving linearly from the VUs running now to `vus`
    /// over `over` (zero: at once). A ramp running is replaced.
    pub fn ramp_vus(&self, vus: u64, over: Duration) -> Result<(), ControlError> {
        let (from, _) = self.vus_from(vus)?;
        let c = &self.shared.control;
        self.shared.vu_changes.fetch_add(1, Ordering::SeqCst);
        if over.is_zero() {
            c.set_vu_cap(Some(vus));
        } else {
            c.ramp_vu_cap(from, vus, over, Instant::now());
        }
        self.record(
            format!("active VUs {from} → {vus}{}", over_text(over)),
            over,
        );
        Ok(())
    }

    /// This segment's share of the whole test's ramp from `test_from` to `test_to`
    /// VUs over `over` (`vus`: its share at the end): every 20 ms its cap is its
    /// VUs among the whole test's first N of that moment, so every generator's
    /// caps add up to the whole test's VUs at every moment, as planned load's
    /// segments do. A thread of its own sets it (an atomic store, nothing on the
    /// workers' path); the next change of the VUs, or the end, stops it.
    fn ramp_share(
        &self,
        segment: Segment,
        vus: u64,
        test_from: u64,
        test_to: u64,
        over: Duration,
    ) -> Result<(), ControlError> {
        let (from, max) = self.vus_from(vus)?;
        let c = &self.shared.control;
        let change = self.shared.vu_changes.fetch_add(1, Ordering::SeqCst) + 1;
        let start = Instant::now();
        let cap_at = move |now: Instant| {
            crate::distributed::split::segment_vus_at(
                &segment,
                test_from,
                test_to,
                over,
                now.saturating_duration_since(start),
            )
            .min(max)
        };
        c.set_vu_cap(Some(cap_at(start)));
        if !over.is_zero() {
            let shared = self.shared.clone();
            std::thread::Builder::new()
                .name("pado-vu-share".into())
                .spawn(move || loop {
                    std::thread::sleep(SHARE_TICK);
                    if shared.vu_changes.load(Ordering::SeqCst) != change
                        || shared.ended.load(Ordering::SeqCst)
                    {
                        return;
                    }
                    let now = Instant::now();
                    shared.control.set_vu_cap(Some(cap_at(now)));
                    if now.saturating_duration_since(start) >= over {
                        return;
                    }
                })
                .map_err(|e| {
                    ControlError::NotApplicable(format!("the ramp could not start: {e}"))
                })?;
        }
        self.record(
            format!("active VUs {from} → {vus}{}", over_text(over)),
            over,
        );
        Ok(())
    }

    /// Run open-model arrivals at `factor` times the plan's rate (the VU pool stays
    /// as planned: an arrival with no free VU is dropped and counted).
    pub fn set_rate_factor(&self, factor: f64) -> Result<(), ControlError> {
        self.ramp_rate_factor(factor, Duration::ZERO)
    }

    /// [`RunHandle::set_rate_factor`], moving linearly from the factor now to
    /// `factor` over `over` (zero: at once). A ramp running is replaced.
    pub fn ramp_rate_factor(&self, factor: f64, over: Duration) -> Result<(), ControlError> {
        self.live()?;
        self.open_scenarios()?;
        if !factor.is_finite() || !(0.0..=MAX_RATE_FACTOR).contains(&factor) {
            return Err(ControlError::BadRate(factor));
        }
        let c = &self.shared.control;
        let from = c.rate_factor();
        if over.is_zero() {
            c.set_rate_factor(factor);
        } else {
            c.ramp_rate_factor(from, factor, over, Instant::now());
        }
        self.record(
            format!("arrival rate ×{from} → ×{factor}{}", over_text(over)),
            over,
        );
        Ok(())
    }

    /// Run open-model arrivals at `per_s` a second in all: a factor of the rate the
    /// plan has at this moment (a ramp keeps its shape around it).
    pub fn set_rate(&self, per_s: f64) -> Result<(), ControlError> {
        self.ramp_rate(per_s, Duration::ZERO)
    }

    /// [`RunHandle::set_rate`], moving linearly from the rate now to `per_s` over
    /// `over` (zero: at once). The factor reached is that of the plan's rate now.
    pub fn ramp_rate(&self, per_s: f64, over: Duration) -> Result<(), ControlError> {
        self.live()?;
        self.open_scenarios()?;
        if !per_s.is_finite() || per_s < 0.0 {
            return Err(ControlError::BadRate(per_s));
        }
        let planned = plan_now::planned_rate(&self.shared.plan, self.plan_time());
        if planned <= 0.0 {
            return Err(ControlError::NotApplicable(
                "no arrivals are planned at this moment: set a factor instead".into(),
            ));
        }
        let factor = (per_s / planned).min(MAX_RATE_FACTOR);
        let c = &self.shared.control;
        let from_factor = c.rate_factor();
        let from = planned * from_factor;
        if over.is_zero() {
            c.set_rate_factor(factor);
        } else {
            c.ramp_rate_factor(from_factor, factor, over, Instant::now());
        }
        self.record(
            format!("arrival rate {from:.1}/s → {per_s:.1}/s{}", over_text(over)),
            over,
        );
        Ok(())
    }

    /// End the stage running now and go on with the next one: the plan's clock
    /// jumps to the stage's end, so every later stage, and the run's end, come
    /// sooner by what was skipped.
    pub fn next_stage(&self) -> Result<(), ControlError> {
        self.live()?;
        let at = self.plan_time();
        let to = plan_now::next_stage_start(&self.shared.stages, at)
            .map_err(ControlError::NotApplicable)?;
        let from = plan_now::stage_at(&self.shared.stages, at)
            .map(|m| m.label.clone())
            .unwrap_or_default();
        self.shared
            .control
            .skip_to(self.elapsed(), to)
            .map_err(|e| ControlError::NotApplicable(e.to_string()))?;
        self.record(
            format!(
                "skipped to the next stage ({from} ended {} early)",
                pado_base::units::duration((to - at).as_secs_f64())
            ),
            Duration::ZERO,
        );
        Ok(())
    }

    /// Keep the load at its level for `length` more: the plan's clock waits, so
    /// every later stage, and the run's end, come that much later (at most
    /// [`pado_engine::MAX_HELD`] in all).
    pub fn hold(&self, length: Duration) -> Result<(), ControlError> {
        self.live()?;
        if length.is_zero() {
            return Err(ControlError::NotApplicable(
                "a hold needs a length of more than 0 seconds".into(),
            ));
        }
        if self.shared.stages.is_empty() {
            return Err(ControlError::NotApplicable(
                "the plan has no stages to hold (its executor runs iterations, not a timetable)"
                    .into(),
            ));
        }
        self.shared
            .control
            .hold(self.elapsed(), length)
            .map_err(|e| ControlError::NotApplicable(e.to_string()))?;
        self.record(
            format!(
                "held the plan for {}",
                pado_base::units::duration(length.as_secs_f64())
            ),
            length,
        );
        Ok(())
    }

    /// Apply one [`ControlCommand`] (the dashboard's and the agents' way in).
    pub fn apply(&self, cmd: &ControlCommand) -> Result<(), ControlError> {
        match *cmd {
            ControlCommand::Pause => self.pause(),
            ControlCommand::Resume => self.resume(),
            ControlCommand::Stop => self.stop(),
            ControlCommand::SetVus { vus, ramp_s } => self.ramp_vus(vus, ramp_length(ramp_s)?),
            ControlCommand::SetSegmentVus {
                vus,
                ramp_s,
                test_from,
                test_to,
            } => match self.shared.segment.clone() {
                Some(segment) => {
                    self.ramp_share(segment, vus, test_from, test_to, ramp_length(ramp_s)?)
                }
                None => self.ramp_vus(vus, ramp_length(ramp_s)?),
            },
            ControlCommand::SetRate { per_s, ramp_s } => {
                self.ramp_rate(per_s, ramp_length(ramp_s)?)
            }
            ControlCommand::SetRateFactor { factor, ramp_s } => {
                self.ramp_rate_factor(factor, ramp_length(ramp_s)?)
            }
            ControlCommand::NextStage => self.next_stage(),
            ControlCommand::Hold { seconds } => {
                if !seconds.is_finite() || seconds <= 0.0 {
                    return Err(ControlError::BadCommand(format!(
                        "hold: seconds {seconds}: give a number of seconds more than 0"
                    )));
                }
                self.hold(Duration::try_from_secs_f64(seconds).map_err(|_| {
                    ControlError::NotApplicable(format!("a hold of {seconds} s is too long"))
                })?)
            }
        }
    }

    /// Hold new iterations and arrivals (in-flight ones finish).
    pub fn pause(&self) -> Result<(), ControlError> {
        self.set_paused(true)
    }

    /// Let iterations and arrivals start again.
    pub fn resume(&self) -> Result<(), ControlError> {
        self.set_paused(false)
    }

    fn set_paused(&self, paused: bool) -> Result<(), ControlError> {
        self.live()?;
        if self.shared.control.paused() != paused {
            self.shared.control.set_paused(paused);
            self.record(
                if paused { "paused" } else { "resumed" }.into(),
                Duration::ZERO,
            );
        }
        Ok(())
    }

    /// Stop the run gracefully, as Ctrl-C does: in-flight iterations get the
    /// graceful stop, then the result directory is written.
    pub fn stop(&self) -> Result<(), ControlError> {
        self.live()?;
        if self
            .shared
            .stop
            .compare_exchange(RUNNING, STOPPING, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            self.record("stopped".into(), Duration::ZERO);
        }
        Ok(())
    }

    fn live(&self) -> Result<(), ControlError> {
        if self.shared.ended.load(Ordering::SeqCst) {
            return Err(ControlError::Ended);
        }
        Ok(())
    }

    /// The most VUs of any closed-model scenario, if there is one.
    fn closed_max_vus(&self) -> Option<u64> {
        self.shared
            .plan
            .scenarios
            .iter()
            .filter(|s| !s.executor.kind().is_open_model())
            .map(|s| u64::from(s.executor.max_vus()))
            .max()
    }

    fn open_scenarios(&self) -> Result<(), ControlError> {
        let any = self
            .shared
            .plan
            .scenarios
            .iter()
            .any(|s| s.executor.kind().is_open_model());
        if any {
            Ok(())
        } else {
            Err(ControlError::NotApplicable(
                "the run has no open-model scenario (its load is set by VUs)".into(),
            ))
        }
    }

    /// Time since second 0 (zero before it).
    fn elapsed(&self) -> Duration {
        self.shared
            .t0
            .get()
            .map_or(Duration::ZERO, |t0| t0.elapsed())
    }

    /// Where the plan is now (its clock: held and skipped time taken into account).
    fn plan_time(&self) -> Duration {
        self.shared.control.clock().schedule_at(self.elapsed())
    }

    /// The starting VUs of an externally controlled scenario, if the plan has one.
    fn steered_start(&self) -> Option<u64> {
        self.shared
            .plan
            .scenarios
            .iter()
            .filter_map(|s| s.executor.steered_start())
            .max()
    }

    /// The stage marks of the run on the real clock (holds and skips applied),
    /// for the result directory.
    pub(crate) fn real_stages(&self) -> Vec<StageMark> {
        plan_now::real_marks(&self.shared.stages, &self.shared.control.clock())
    }

    /// The plan's length on the real clock (holds and skips applied).
    pub(crate) fn real_planned(&self) -> Duration {
        self.shared
            .control
            .clock()
            .real_at(self.shared.plan.planned_duration())
    }

    /// Keep a change as a `control` event at the run's current time; a ramp (or a
    /// hold) is a window of `over` from then.
    fn record(&self, what: String, over: Duration) {
        let ms = self.elapsed().as_millis() as u64;
        let window_end_ms = (!over.is_zero()).then(|| ms + over.as_millis() as u64);
        lock(&self.shared.changes).push(control_event(what, ms, window_end_ms));
    }
}

/// A `control` event: a change made while the run was going, at `ms` into the run,
/// over a window ending at `window_end_ms` (none: at once). One shape for a single
/// run's changes and a distributed run's, so the report reads both alike.
pub(crate) fn control_event(what: String, ms: u64, window_end_ms: Option<u64>) -> EventRecord {
    EventRecord {
        name: what.clone(),
        kind: CONTROL_KIND.into(),
        planned_ms: ms,
        started_ms: Some(ms),
        window_end_ms,
        required: false,
        mark: Some(what),
        action: None,
        undo: None,
        expect: Default::default(),
        left_open: None,
    }
}

/// A ramp's length from a command's `ramp_s` (0 or less: at once).
fn ramp_length(ramp_s: f64) -> Result<Duration, ControlError> {
    if ramp_s.is_nan() {
        return Err(ControlError::BadCommand(
            "ramp_s is not a number: give the seconds to reach the target (0: at once)".into(),
        ));
    }
    if ramp_s <= 0.0 {
        return Ok(Duration::ZERO);
    }
    if ramp_s > pado_engine::MAX_HELD.as_secs_f64() {
        return Err(ControlError::BadCommand(format!(
            "ramp_s {ramp_s}: at most {} s",
            pado_engine::MAX_HELD.as_secs()
        )));
    }
    Ok(Duration::from_secs_f64(ramp_s))
}

/// ` over 10s` for a ramp, nothing for a change at once.
fn over_text(over: Duration) -> String {
    if over.is_zero() {
        String::new()
    } else {
        format!(" over {}", pado_base::units::duration(over.as_secs_f64()))
    }
}

/// The `kind` of an `events.jsonl` entry that records a change of the load.
pub const CONTROL_KIND: &str = "control";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::split::segment_vus_at;

    /// A handle of a 30-VU closed-model plan, run as `segment`.
    fn handle(segment: Option<Segment>) -> RunHandle {
        let yaml = "name: 몫\ntarget: http://127.0.0.1:9\nscenarios:\n  s:\n    executor: constant-vus\n    vus: 30\n    duration: 10s\n    flow:\n      - request: /\n";
        let config = pado_scenario::parse_str(yaml, "t.yaml").expect("scenario");
        let plan = pado_engine::compile(&config, std::path::Path::new(".")).expect("plan");
        let h = RunHandle::new(Arc::new(plan), StopState::default(), Vec::new(), segment);
        h.started(Instant::now());
        h
    }

    #[test]
    fn a_generator_follows_its_share_of_the_whole_test_s_ramp_and_stops_at_the_next_change() {
        let seg = Segment::new(1, 3, None).unwrap();
        let h = handle(Some(seg.clone()));
        let length = Duration::from_millis(1000);
        let start = Instant::now();
        h.apply(&ControlCommand::SetSegmentVus {
            vus: seg.count_before(30),
            ramp_s: 1.0,
            test_from: 0,
            test_to: 30,
        })
        .unwrap();
        // Every cap read during the ramp is its share of the whole test's VUs
        // at some moment since the previous 20 ms tick (allowing a late tick on a
        // busy machine), never its own linear ramp's.
        let mut seen = Vec::new();
        while start.elapsed() < length + Duration::from_millis(150) {
            let before = start.elapsed();
            let cap = h.state().vu_cap.unwrap();
            let lo = segment_vus_at(
                &seg,
                0,
                30,
                length,
                before.saturating_sub(Duration::from_millis(200)),
            );
            let hi = segment_vus_at(&seg, 0, 30, length, start.elapsed());
            assert!(
                (lo..=hi).contains(&cap),
                "{cap} at {before:?}: not in {lo}..={hi}"
            );
            seen.push(cap);
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(*seen.last().unwrap(), 10, "its share of 30 at the end");
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
        assert!(
            seen.iter().any(|c| (1..10).contains(c)),
            "it ramped: {seen:?}"
        );
        // Another change stops the share's ramp: the cap stays as then set.
        h.apply(&ControlCommand::SetSegmentVus {
            vus: 0,
            ramp_s: 2.0,
            test_from: 30,
            test_to: 0,
        })
        .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        h.set_vus(7).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(h.state().vu_cap, Some(7));
        let names: Vec<String> = lock(&h.shared.changes)
            .iter()
            .map(|e| e.name.clone())
            .collect();
        assert_eq!(names[0], "active VUs 30 → 10 over 1.0s", "{names:?}");
    }

    #[test]
    fn a_run_that_is_no_segment_takes_the_share_as_its_own_vus() {
        let h = handle(None);
        h.apply(&ControlCommand::SetSegmentVus {
            vus: 12,
            ramp_s: 0.0,
            test_from: 30,
            test_to: 36,
        })
        .unwrap();
        assert_eq!(h.state().vu_cap, Some(12));
    }
}
