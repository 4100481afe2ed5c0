//! Changing the load of a running test from outside it (a dashboard, a library
//! caller): how many closed-model VUs may run, how fast open-model arrivals come,
//! a pause, ramps between levels ([`ramp`]), and holds and skips of the plan's
//! stages ([`clock`]). Workers read plain atomics at iteration and arrival
//! boundaries only, so a run nobody steers pays one branch per iteration, and one
//! that is steered pays a relaxed load: no lock on the hot path. A ramp is moved
//! by the workers' clock tasks (every 20 ms), and a changed plan clock is copied
//! into each worker by its clock task when its generation changes.

pub(super) mod clock;
pub(super) mod ramp;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pado_base::lock;

use self::clock::{ClockError, ClockMap};
use self::ramp::Ramp;
use super::worker::WorkerCtx;

/// How often a parked VU looks whether it may run again: short enough that a
/// raised cap shows in the same second, long enough to cost nothing measurable.
const PARK_POLL: Duration = Duration::from_millis(10);

/// The rate factor's fixed-point unit: a factor is kept in thousandths, so that an
/// arrival's share of credit is an integer add.
const MILLI: u64 = 1000;

/// Most a rate factor may be: far above any useful steering, low enough that the
/// credit arithmetic cannot overflow.
pub const MAX_RATE_FACTOR: f64 = 1000.0;

/// The ramps running now, at most one per kind of level.
#[derive(Debug, Default)]
struct Ramps {
    vus: Option<Ramp>,
    rate: Option<Ramp>,
}

/// The load a caller asked for, shared by every worker of one run.
#[derive(Debug)]
pub struct LoadControl {
    /// Closed-model VUs of each scenario whose rank is at or above this park at
    /// their next iteration boundary; `u64::MAX`: no cap.
    vu_cap: AtomicU64,
    /// Open-model arrivals as a multiple of the plan's, in thousandths.
    rate_milli: AtomicU64,
    /// No new iterations (closed) or arrivals (open) while set.
    paused: AtomicBool,
    /// Whether a ramp runs (the clock tasks look at [`LoadControl::ramps`] only then).
    ramping: AtomicBool,
    ramps: Mutex<Ramps>,
    /// The plan's clock (holds and skips); replaced whole on each change.
    clock: Mutex<Arc<ClockMap>>,
    /// Bumped on each change of the clock, so a worker copies it only then.
    clock_generation: AtomicU64,
}

impl Default for LoadControl {
    fn default() -> Self {
        LoadControl {
            vu_cap: AtomicU64::new(u64::MAX),
            rate_milli: AtomicU64::new(MILLI),
            paused: AtomicBool::new(false),
            ramping: AtomicBool::new(false),
            ramps: Mutex::new(Ramps::default()),
            clock: Mutex::new(Arc::new(ClockMap::default())),
            clock_generation: AtomicU64::new(0),
        }
    }
}

fn clamp_factor(factor: f64) -> f64 {
    if factor.is_nan() {
        1.0
    } else {
        factor.clamp(0.0, MAX_RATE_FACTOR)
    }
}

impl LoadControl {
    /// Cap every closed-model scenario at `cap` active VUs (`None`: as planned).
    /// VUs above the cap finish their iteration, then wait until it is raised. A
    /// ramp of the cap running is replaced.
    pub fn set_vu_cap(&self, cap: Option<u64>) {
        lock(&self.ramps).vus = None;
        self.store_vu_cap(cap);
    }

    fn store_vu_cap(&self, cap: Option<u64>) {
        self.vu_cap
            .store(cap.unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// The cap on closed-model VUs per scenario, if any.
    pub fn vu_cap(&self) -> Option<u64> {
        Some(self.vu_cap.load(Ordering::Relaxed)).filter(|&c| c != u64::MAX)
    }

    /// Move the VU cap linearly from `from` to `to` over `length` from `now` (a ramp
    /// of the cap, or of the rate, running is replaced; see [`Ramp::vus_at`]).
    pub fn ramp_vu_cap(&self, from: u64, to: u64, length: Duration, now: Instant) {
        let r = Ramp {
            from: from as f64,
            to: to as f64,
            start: now,
            length,
        };
        lock(&self.ramps).vus = Some(r);
        self.store_vu_cap(Some(r.vus_at(now)));
        self.ramping.store(true, Ordering::Relaxed);
    }

    /// Open-model arrivals at `factor` times the plan's rate (clamped to
    /// 0..=[`MAX_RATE_FACTOR`]; NaN counts as 1). The VU pool stays as planned, so an
    /// arrival with no free VU is dropped and counted, as in an unsteered run. A
    /// ramp of the factor running is replaced.
    pub fn set_rate_factor(&self, factor: f64) {
        lock(&self.ramps).rate = None;
        self.store_rate_factor(factor);
    }

    fn store_rate_factor(&self, factor: f64) {
        self.rate_milli.store(
            (clamp_factor(factor) * MILLI as f64).round() as u64,
            Ordering::Relaxed,
        );
    }

    /// Move the rate factor linearly from `from` to `to` over `length` from `now`.
    pub fn ramp_rate_factor(&self, from: f64, to: f64, length: Duration, now: Instant) {
        let r = Ramp {
            from: clamp_factor(from),
            to: clamp_factor(to),
            start: now,
            length,
        };
        lock(&self.ramps).rate = Some(r);
        self.store_rate_factor(r.at(now));
        self.ramping.store(true, Ordering::Relaxed);
    }

    /// The ramps' ends (VU cap, rate factor) while they run: what the load is
    /// heading for.
    pub fn ramp_targets(&self) -> (Option<u64>, Option<f64>) {
        let r = lock(&self.ramps);
        (r.vus.map(|v| v.to as u64), r.rate.map(|v| v.to))
    }

    /// Move the running ramps to their level at `now` (the workers' clock tasks
    /// call this every 20 ms; nothing to do, and no lock taken, without a ramp).
    pub fn tick(&self, now: Instant) {
        if !self.ramping.load(Ordering::Relaxed) {
            return;
        }
        let mut r = lock(&self.ramps);
        if let Some(v) = r.vus {
            self.store_vu_cap(Some(v.vus_at(now)));
            if v.done(now) {
                r.vus = None;
            }
        }
        if let Some(f) = r.rate {
            self.store_rate_factor(f.at(now));
            if f.done(now) {
                r.rate = None;
            }
        }
        if r.vus.is_none() && r.rate.is_none() {
            self.ramping.store(false, Ordering::Relaxed);
        }
    }

    /// The factor open-model arrivals are multiplied by.
    pub fn rate_factor(&self) -> f64 {
        self.rate_milli.load(Ordering::Relaxed) as f64 / MILLI as f64
    }

    /// Pause (`true`) or resume: while paused no iteration or arrival starts;
    /// in-flight ones finish.
    pub fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::Relaxed);
    }

    /// Whether the run is paused.
    pub fn paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }

    /// The plan's clock as it stands.
    pub fn clock(&self) -> Arc<ClockMap> {
        lock(&self.clock).clone()
    }

    /// How many times the clock changed: a worker copies [`LoadControl::clock`]
    /// when this moves.
    pub fn clock_generation(&self) -> u64 {
        self.clock_generation.load(Ordering::Acquire)
    }

    /// Hold the plan at `now` (since second 0) for `length`: every later stage,
    /// and the run's end, come that much later.
    pub fn hold(&self, now: Duration, length: Duration) -> Result<(), ClockError> {
        self.change_clock(|c| c.hold(now, length))
    }

    /// Jump the plan at `now` (since second 0) to schedule time `to`: the rest of
    /// the stage running is not run.
    pub fn skip_to(&self, now: Duration, to: Duration) -> Result<(), ClockError> {
        self.change_clock(|c| c.skip_to(now, to))
    }

    fn change_clock(
        &self,
        f: impl FnOnce(&mut ClockMap) -> Result<(), ClockError>,
    ) -> Result<(), ClockError> {
        let mut guard = lock(&self.clock);
        let mut next = (**guard).clone();
        f(&mut next)?;
        *guard = Arc::new(next);
        self.clock_generation.fetch_add(1, Ordering::Release);
        Ok(())
    }

    /// Whether the closed-model VU of rank `rank` (0-based within its scenario) must
    /// wait instead of starting an iteration; `default_cap` is its scenario's level
    /// when nobody set one (an externally controlled scenario's starting VUs;
    /// `u64::MAX` for a planned one).
    pub(super) fn holds(&self, rank: u64, default_cap: u64) -> bool {
        let cap = match self.vu_cap.load(Ordering::Relaxed) {
            u64::MAX => default_cap,
            c => c,
        };
        self.paused() || rank >= cap
    }

    /// How many iterations one scheduled arrival starts, given the credit carried
    /// from earlier arrivals (in thousandths): 1 as planned, 0 or 1 below a factor of
    /// 1, more above; none while paused.
    pub(super) fn arrivals(&self, credit: &mut u64) -> u64 {
        if self.paused() {
            return 0;
        }
        *credit += self.rate_milli.load(Ordering::Relaxed);
        let n = *credit / MILLI;
        *credit %= MILLI;
        n
    }
}

/// A closed-model VU's place under the cap: the run's control and the VU's rank.
pub(super) struct Steer {
    /// The run's control.
    pub control: std::sync::Arc<LoadControl>,
    /// The VU's 0-based number within its scenario (its share of a split test).
    pub rank: u64,
    /// The scenario's level when nobody set one: an externally controlled
    /// scenario's starting VUs (this generator's share), `u64::MAX` otherwise.
    pub default_cap: u64,
}

impl Steer {
    /// Whether this VU must wait now.
    pub(super) fn holds(&self) -> bool {
        self.control.holds(self.rank, self.default_cap)
    }

    /// Wait while held, until the plan reaches `end` (schedule time) or a stop:
    /// `true` when the VU may go on.
    pub(super) async fn park(&self, ctx: &WorkerCtx, end: Duration) -> bool {
        while self.holds() {
            let now = Instant::now();
            if ctx.schedule_at(now) >= end
                || !ctx
                    .sleep_until((now + PARK_POLL).min(ctx.real_at(end)))
                    .await
            {
                return false;
            }
        }
        ctx.schedule_at(Instant::now()) < end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_factor_of_one_starts_one_iteration_per_arrival() {
        let c = LoadControl::default();
        let mut credit = 0;
        let n: u64 = (0..100).map(|_| c.arrivals(&mut credit)).sum();
        assert_eq!(n, 100);
    }

    #[test]
    fn factors_scale_arrivals_exactly_over_many() {
        let c = LoadControl::default();
        for (f, want) in [(2.0, 200), (0.5, 50), (0.25, 25), (1.5, 150), (0.0, 0)] {
            c.set_rate_factor(f);
            let mut credit = 0;
            let n: u64 = (0..100).map(|_| c.arrivals(&mut credit)).sum();
            assert_eq!(n, want, "factor {f}");
        }
    }

    #[test]
    fn a_pause_starts_nothing_and_holds_every_vu() {
        let c = LoadControl::default();
        assert!(!c.holds(0, u64::MAX));
        c.set_paused(true);
        let mut credit = 0;
        assert_eq!(c.arrivals(&mut credit), 0);
        assert!(c.holds(0, u64::MAX));
        c.set_paused(false);
        assert_eq!(c.arrivals(&mut credit), 1);
    }

    #[test]
    fn the_cap_holds_ranks_at_and_above_it() {
        let c = LoadControl::default();
        c.set_vu_cap(Some(1));
        assert!(!c.holds(0, u64::MAX));
        assert!(c.holds(1, u64::MAX) && c.holds(3, u64::MAX));
        assert_eq!(c.vu_cap(), Some(1));
        c.set_vu_cap(None);
        assert!(!c.holds(3, u64::MAX));
        assert_eq!(c.vu_cap(), None);
    }

    #[test]
    fn silly_factors_are_clamped() {
        let c = LoadControl::default();
        c.set_rate_factor(-3.0);
        assert_eq!(c.rate_factor(), 0.0);
        c.set_rate_factor(f64::NAN);
        assert_eq!(c.rate_factor(), 1.0);
        c.set_rate_factor(1e12);
        assert_eq!(c.rate_factor(), MAX_RATE_FACTOR);
    }

    #[test]
    fn a_ramp_of_the_cap_moves_with_the_ticks() {
        let c = LoadControl::default();
        let t = Instant::now();
        c.ramp_vu_cap(1, 4, Duration::from_secs(3), t);
        assert_eq!(c.vu_cap(), Some(1));
        c.tick(t + Duration::from_millis(1000));
        assert_eq!(c.vu_cap(), Some(2));
        c.tick(t + Duration::from_millis(2000));
        assert_eq!(c.vu_cap(), Some(3));
        assert_eq!(c.ramp_targets().0, Some(4));
        c.tick(t + Duration::from_millis(3000));
        assert_eq!(c.vu_cap(), Some(4));
        // Done: the ramp is gone and the cap stays.
        assert_eq!(c.ramp_targets(), (None, None));
        c.tick(t + Duration::from_millis(9000));
        assert_eq!(c.vu_cap(), Some(4));
    }

    #[test]
    fn a_new_change_replaces_a_running_ramp() {
        let c = LoadControl::default();
        let t = Instant::now();
        c.ramp_vu_cap(1, 10, Duration::from_secs(10), t);
        c.set_vu_cap(Some(2));
        c.tick(t + Duration::from_secs(5));
        assert_eq!(c.vu_cap(), Some(2), "the ramp no longer moves the cap");
        c.ramp_rate_factor(1.0, 3.0, Duration::from_secs(2), t);
        c.tick(t + Duration::from_secs(1));
        assert_eq!(c.rate_factor(), 2.0);
        // A second ramp starts from where it is asked to, towards its own end.
        c.ramp_rate_factor(2.0, 0.0, Duration::from_secs(4), t + Duration::from_secs(1));
        c.tick(t + Duration::from_secs(2));
        assert_eq!(c.rate_factor(), 1.5);
        c.set_rate_factor(1.0);
        c.tick(t + Duration::from_secs(4));
        assert_eq!(c.rate_factor(), 1.0);
    }

    #[test]
    fn a_scenario_steered_from_outside_holds_its_start_until_a_cap_is_set() {
        let c = LoadControl::default();
        assert!(!c.holds(1, 2) && c.holds(2, 2), "2 VUs to start");
        c.set_vu_cap(Some(4));
        assert!(!c.holds(3, 2) && c.holds(4, 2));
    }

    #[test]
    fn a_changed_clock_bumps_its_generation() {
        let c = LoadControl::default();
        assert_eq!(c.clock_generation(), 0);
        c.hold(Duration::from_secs(1), Duration::from_secs(2))
            .unwrap();
        assert_eq!(c.clock_generation(), 1);
        assert_eq!(
            c.clock().real_at(Duration::from_secs(5)),
            Duration::from_secs(7)
        );
        // A refused change leaves it alone.
        assert!(c.skip_to(Duration::from_secs(2), Duration::ZERO).is_err());
        assert_eq!(c.clock_generation(), 1);
    }
}
