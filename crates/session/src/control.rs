//! The handle of a running session: watch each closed second, read the run's
//! state, and change its load (closed-model VUs, open-model arrival rate, pause,
//! stop) while it goes. Every change is kept and written to the result directory's
//! `events.jsonl` as a `control` event, so a report of a hand-steered run says so.
//!
//! The handle is cheap to clone and safe to share between threads: the load lives
//! in the engine's atomics ([`LoadControl`]), read by the workers at iteration and
//! arrival boundaries; the rest is touched once a second or when a caller asks.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use pado_engine::executor::Schedule;
use pado_engine::{LoadControl, RunPlan, StopState, MAX_RATE_FACTOR, RUNNING, STOPPING};
use pado_metrics::SecondRecord;
use pado_results::events::EventRecord;
use pado_results::StageMark;

use crate::command::ControlCommand;
use crate::error::ControlError;
use crate::subscribe::{Subscribers, Subscription};
use pado_base::lock;

/// What a run is doing now, as its handle reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunState {
    /// Time since second 0 (zero before it).
    pub elapsed: Duration,
    /// Seconds closed so far.
    pub seconds_closed: u32,
    /// The stage running now (its label), if the plan has stages.
    pub stage: Option<String>,
    /// Active VUs in the last closed second.
    pub active_vus: u32,
    /// The cap on closed-model VUs a caller set, if any.
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
}

/// The handle of a running session (see the module's documentation).
#[derive(Clone)]
pub struct RunHandle {
    shared: Arc<Shared>,
}

impl RunHandle {
    /// A handle for a run of `plan` stopped through `stop`.
    pub(crate) fn new(plan: Arc<RunPlan>, stop: StopState, stages: Vec<StageMark>) -> Self {
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
        let elapsed = s.t0.get().map_or(Duration::ZERO, |t0| t0.elapsed());
        let at = elapsed.as_secs_f64();
        RunState {
            elapsed,
            seconds_closed: s.seconds_closed.load(Ordering::Relaxed),
            stage: s
                .stages
                .iter()
                .find(|m| m.start_s <= at && at < m.end_s)
                .map(|m| m.label.clone()),
            active_vus: s.active_vus.load(Ordering::Relaxed),
            vu_cap: s.control.vu_cap(),
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
        self.live()?;
        let max = self.closed_max_vus().ok_or_else(|| {
            ControlError::NotApplicable(
                "the run has no closed-model scenario (VUs are set by its arrival rate)".into(),
            )
        })?;
        if vus > max {
            return Err(ControlError::AboveMax { asked: vus, max });
        }
        let from = self.shared.control.vu_cap().unwrap_or(max);
        self.shared.control.set_vu_cap(Some(vus));
        self.record(format!("active VUs {from} → {vus}"));
        Ok(())
    }

    /// Run open-model arrivals at `factor` times the plan's rate (the VU pool stays
    /// as planned: an arrival with no free VU is dropped and counted).
    pub fn set_rate_factor(&self, factor: f64) -> Result<(), ControlError> {
        self.live()?;
        self.open_scenarios()?;
        if !factor.is_finite() || !(0.0..=MAX_RATE_FACTOR).contains(&factor) {
            return Err(ControlError::BadRate(factor));
        }
        let from = self.shared.control.rate_factor();
        self.shared.control.set_rate_factor(factor);
        self.record(format!("arrival rate ×{from} → ×{factor}"));
        Ok(())
    }

    /// Run open-model arrivals at `per_s` a second in all: a factor of the rate the
    /// plan has at this moment (a ramp keeps its shape around it).
    pub fn set_rate(&self, per_s: f64) -> Result<(), ControlError> {
        self.live()?;
        self.open_scenarios()?;
        if !per_s.is_finite() || per_s < 0.0 {
            return Err(ControlError::BadRate(per_s));
        }
        let planned = self.planned_rate_now();
        if planned <= 0.0 {
            return Err(ControlError::NotApplicable(
                "no arrivals are planned at this moment: set a factor instead".into(),
            ));
        }
        let factor = (per_s / planned).min(MAX_RATE_FACTOR);
        let from = planned * self.shared.control.rate_factor();
        self.shared.control.set_rate_factor(factor);
        self.record(format!("arrival rate {from:.1}/s → {per_s:.1}/s"));
        Ok(())
    }

    /// Apply one [`ControlCommand`] (the dashboard's and the agents' way in).
    /// Ramps, skipping a stage and holds are not steerable yet and say so.
    pub fn apply(&self, cmd: &ControlCommand) -> Result<(), ControlError> {
        let not_yet = |what: &str| {
            Err(ControlError::NotApplicable(format!(
                "{what} is not supported by this run"
            )))
        };
        match *cmd {
            ControlCommand::Pause => self.pause(),
            ControlCommand::Resume => self.resume(),
            ControlCommand::Stop => self.stop(),
            ControlCommand::SetVus { vus, ramp_s } if ramp_s <= 0.0 => self.set_vus(vus),
            ControlCommand::SetRate { per_s, ramp_s } if ramp_s <= 0.0 => self.set_rate(per_s),
            ControlCommand::SetRateFactor { factor, ramp_s } if ramp_s <= 0.0 => {
                self.set_rate_factor(factor)
            }
            ControlCommand::SetVus { .. }
            | ControlCommand::SetRate { .. }
            | ControlCommand::SetRateFactor { .. } => not_yet("a ramped change"),
            ControlCommand::NextStage => not_yet("skipping a stage"),
            ControlCommand::Hold { .. } => not_yet("holding a stage"),
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
            self.record(if paused { "paused" } else { "resumed" }.into());
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
            self.record("stopped".into());
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

    /// Arrivals the plan has in the second from now, over every open scenario.
    fn planned_rate_now(&self) -> f64 {
        let now = self.state().elapsed;
        let mut n = 0u64;
        for sc in &self.shared.plan.scenarios {
            if let Schedule::Open(o) = sc.executor.schedule() {
                let from = now.saturating_sub(sc.start_time);
                let to = from + Duration::from_secs(1);
                n += o.arrivals().filter(|a| *a >= from && *a < to).count() as u64;
            }
        }
        n as f64
    }

    /// Keep a change as a `control` event at the run's current time.
    fn record(&self, what: String) {
        let ms = self.state().elapsed.as_millis() as u64;
        lock(&self.shared.changes).push(EventRecord {
            name: what.clone(),
            kind: CONTROL_KIND.into(),
            planned_ms: ms,
            started_ms: Some(ms),
            window_end_ms: None,
            required: false,
            mark: Some(what),
            action: None,
            undo: None,
            expect: Default::default(),
            left_open: None,
        });
    }
}

/// The `kind` of an `events.jsonl` entry that records a change of the load.
pub const CONTROL_KIND: &str = "control";
