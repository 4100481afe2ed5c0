//! Changing the load of a running test from outside it (a dashboard, a library
//! caller): how many closed-model VUs may run, how fast open-model arrivals come,
//! and a pause. Workers read these atomics at iteration and arrival boundaries only,
//! so a run nobody steers pays one branch per iteration, and one that is steered
//! pays a relaxed load: no lock on the hot path.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::worker::WorkerCtx;

/// How often a parked VU looks whether it may run again: short enough that a
/// raised cap shows in the same second, long enough to cost nothing measurable.
const PARK_POLL: Duration = Duration::from_millis(10);

/// The rate factor's fixed-point unit: a factor is kept in thousandths, so that an
/// arrival's share of credit is an integer add.
const MILLI: u64 = 1000;

/// The bit of [`LoadControl`]'s hold word that says the run is paused; the bits below
/// it are the VU cap. One word, so that a VU's check at each iteration is one load.
const PAUSED: u64 = 1 << 63;

/// The hold word's cap when there is none (every rank is below it).
const NO_CAP: u64 = PAUSED - 1;

/// Most a rate factor may be: far above any useful steering, low enough that the
/// credit arithmetic cannot overflow.
pub const MAX_RATE_FACTOR: f64 = 1000.0;

/// The load a caller asked for, shared by every worker of one run.
#[derive(Debug)]
pub struct LoadControl {
    /// The cap and the pause in one word: closed-model VUs of each scenario whose
    /// rank is at or above the low bits ([`NO_CAP`]: no cap) park at their next
    /// iteration boundary, and no iteration (closed) or arrival (open) starts while
    /// [`PAUSED`] is set.
    hold: AtomicU64,
    /// Open-model arrivals as a multiple of the plan's, in thousandths.
    rate_milli: AtomicU64,
}

impl Default for LoadControl {
    fn default() -> Self {
        LoadControl {
            hold: AtomicU64::new(NO_CAP),
            rate_milli: AtomicU64::new(MILLI),
        }
    }
}

impl LoadControl {
    /// Cap every closed-model scenario at `cap` active VUs (`None`: as planned).
    /// VUs above the cap finish their iteration, then wait until it is raised.
    pub fn set_vu_cap(&self, cap: Option<u64>) {
        let cap = cap.map_or(NO_CAP, |c| c.min(NO_CAP));
        // The pause bit stays as it is.
        let _ = self
            .hold
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |h| {
                Some((h & PAUSED) | cap)
            });
    }

    /// The cap on closed-model VUs per scenario, if any.
    pub fn vu_cap(&self) -> Option<u64> {
        Some(self.hold.load(Ordering::Relaxed) & NO_CAP).filter(|&c| c != NO_CAP)
    }

    /// Open-model arrivals at `factor` times the plan's rate (clamped to
    /// 0..=[`MAX_RATE_FACTOR`]; NaN counts as 1). The VU pool stays as planned, so an
    /// arrival with no free VU is dropped and counted, as in an unsteered run.
    pub fn set_rate_factor(&self, factor: f64) {
        let f = if factor.is_nan() {
            1.0
        } else {
            factor.clamp(0.0, MAX_RATE_FACTOR)
        };
        self.rate_milli
            .store((f * MILLI as f64).round() as u64, Ordering::Relaxed);
    }

    /// The factor open-model arrivals are multiplied by.
    pub fn rate_factor(&self) -> f64 {
        self.rate_milli.load(Ordering::Relaxed) as f64 / MILLI as f64
    }

    /// Pause (`true`) or resume: while paused no iteration or arrival starts;
    /// in-flight ones finish.
    pub fn set_paused(&self, paused: bool) {
        if paused {
            self.hold.fetch_or(PAUSED, Ordering::Relaxed);
        } else {
            self.hold.fetch_and(NO_CAP, Ordering::Relaxed);
        }
    }

    /// Whether the run is paused.
    pub fn paused(&self) -> bool {
        (self.hold.load(Ordering::Relaxed) & PAUSED) != 0
    }

    /// Whether the closed-model VU of rank `rank` (0-based within its scenario) must
    /// wait instead of starting an iteration: one relaxed load of the word that
    /// holds both the pause and the cap, as it runs once per iteration.
    #[inline]
    pub(super) fn holds(&self, rank: u64) -> bool {
        let h = self.hold.load(Ordering::Relaxed);
        (h & PAUSED) != 0 || rank >= h
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
}

impl Steer {
    /// Whether this VU must wait now.
    pub(super) fn holds(&self) -> bool {
        self.control.holds(self.rank)
    }

    /// Wait while held, until `end` or a stop: `true` when the VU may go on.
    pub(super) async fn park(&self, ctx: &WorkerCtx, end: Instant) -> bool {
        while self.holds() {
            let now = Instant::now();
            if now >= end || !ctx.sleep_until((now + PARK_POLL).min(end)).await {
                return false;
            }
        }
        Instant::now() < end
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
        assert!(!c.holds(0));
        c.set_paused(true);
        let mut credit = 0;
        assert_eq!(c.arrivals(&mut credit), 0);
        assert!(c.holds(0));
        c.set_paused(false);
        assert_eq!(c.arrivals(&mut credit), 1);
    }

    #[test]
    fn the_cap_holds_ranks_at_and_above_it() {
        let c = LoadControl::default();
        c.set_vu_cap(Some(1));
        assert!(!c.holds(0));
        assert!(c.holds(1) && c.holds(3));
        assert_eq!(c.vu_cap(), Some(1));
        c.set_vu_cap(None);
        assert!(!c.holds(3));
        assert_eq!(c.vu_cap(), None);
    }

    #[test]
    fn a_pause_keeps_the_cap_and_a_new_cap_keeps_the_pause() {
        let c = LoadControl::default();
        c.set_vu_cap(Some(3));
        c.set_paused(true);
        assert!(c.holds(0) && c.paused());
        assert_eq!(c.vu_cap(), Some(3));
        c.set_vu_cap(None);
        assert!(c.holds(0) && c.paused(), "a new cap ended the pause");
        c.set_vu_cap(Some(2));
        c.set_paused(false);
        assert!(!c.paused());
        assert_eq!(c.vu_cap(), Some(2));
        assert!(!c.holds(1) && c.holds(2));
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
}
