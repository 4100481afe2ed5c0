//! What a change has to beat to count: the noise *between* runs.
//!
//! The rank test of [`crate::noise`] sees only the spread of the seconds within
//! each run. Two runs of the same build also differ as wholes (another process on
//! the machine, another moment, a warmer cache), by a percent or three, and with
//! thousands of seconds' worth of evidence that small, steady offset comes out
//! "significant". A change the user made has to beat that spread, so a verdict of
//! better or worse also needs the change to reach a floor: a minimum practical
//! effect (`--min-change`, [`DEFAULT_MIN_CHANGE_PCT`] by default), or the spread
//! measured between earlier runs of the same test when it is the larger and there
//! are enough of them ([`MIN_EARLIER_RUNS`]).

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The default minimum practical change, in percent: identical runs of a
/// fixed-delay server differ by 1–3% between runs on a busy machine, and a change
/// worth acting on is larger.
pub const DEFAULT_MIN_CHANGE_PCT: f64 = 5.0;

/// Fewest earlier runs whose spread is trusted: two runs give a spread with one
/// degree of freedom, whose 95% interval is twelve standard deviations wide.
pub const MIN_EARLIER_RUNS: usize = 3;

/// How far a run's figure wanders between identical runs, measured on earlier
/// runs of the same test.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RunSpread {
    /// How many earlier runs it was measured on.
    pub runs: usize,
    /// Half-width, in percent of their mean, of the 95% prediction interval of the
    /// change being judged (one run against a baseline of `baseline_runs` runs).
    pub pct: f64,
}

/// The floor a change must reach to be called better or worse.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ChangeFloor {
    /// The floor in percent: the larger of `min_change_pct` and the earlier runs'
    /// spread.
    pub pct: f64,
    /// The minimum practical change asked for (`--min-change`).
    pub min_change_pct: f64,
    /// The spread between earlier runs of the same test, when there were enough.
    pub earlier_runs: Option<RunSpread>,
}

impl ChangeFloor {
    /// The floor from the minimum practical change and, when known, the spread
    /// between earlier runs: whichever is larger, since a change smaller than
    /// either is one identical runs also show.
    pub fn new(min_change_pct: f64, earlier_runs: Option<RunSpread>) -> ChangeFloor {
        let min_change_pct = if min_change_pct.is_finite() {
            min_change_pct.max(0.0)
        } else {
            DEFAULT_MIN_CHANGE_PCT
        };
        let spread = earlier_runs.map_or(0.0, |s| s.pct);
        ChangeFloor {
            pct: min_change_pct.max(spread),
            min_change_pct,
            earlier_runs,
        }
    }

    /// Whether the earlier runs' spread set the floor (rather than `--min-change`).
    pub fn from_earlier_runs(&self) -> bool {
        self.earlier_runs
            .is_some_and(|s| s.pct > self.min_change_pct)
    }

    /// Whether a change of `change_pct` reaches the floor. A change that cannot be
    /// put in percent (a baseline of zero, such as no errors before and some now)
    /// is not held back: no relative floor applies to it.
    pub fn reached_by(&self, change_pct: Option<f64>) -> bool {
        match change_pct {
            Some(c) if c.is_finite() => c.abs() >= self.pct,
            _ => true,
        }
    }

    /// The floor in words, for the outputs: which of the two was used and why.
    pub fn describe(&self) -> String {
        let min = format!(
            "changes under {} are treated as noise (--min-change)",
            pct(self.min_change_pct)
        );
        match self.earlier_runs {
            None => min,
            Some(s) if !self.from_earlier_runs() => format!(
                "{min}; the spread between the {} earlier runs of this test is smaller: ±{}",
                s.runs,
                pct(s.pct)
            ),
            Some(s) => format!(
                "changes under ±{} are treated as noise: the spread between the {} earlier runs of this test (larger than --min-change {})",
                pct(s.pct),
                s.runs,
                pct(self.min_change_pct)
            ),
        }
    }
}

/// A percentage for people: `5%`, `2.5%`, `0.25%`.
fn pct(v: f64) -> String {
    let s = if v >= 10.0 || v == v.round() {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    format!("{s}%")
}

/// The spread between earlier runs' figures of one metric (each run's overall
/// value, e.g. its p95), as the half-width of the 95% prediction interval of a
/// new run's change against a baseline of `baseline_runs` runs, in percent of
/// their mean: `t(0.975, n−1) · s · √(1 + 1/baseline_runs) / mean` (with a single
/// baseline run, as `pado compare` has, the difference of two runs: `s·√2`).
///
/// `None` with fewer than [`MIN_EARLIER_RUNS`] finite figures, or a mean of zero.
pub fn run_spread(figures: &[f64], baseline_runs: usize) -> Option<RunSpread> {
    let v: Vec<f64> = figures.iter().copied().filter(|x| x.is_finite()).collect();
    let n = v.len();
    if n < MIN_EARLIER_RUNS {
        return None;
    }
    let nf = n as f64;
    let mean = v.iter().sum::<f64>() / nf;
    if mean == 0.0 {
        return None;
    }
    let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (nf - 1.0)).sqrt();
    let t = StudentsT::new(0.0, 1.0, nf - 1.0).ok()?.inverse_cdf(0.975);
    let k = baseline_runs.max(1) as f64;
    let half = t * sd * (1.0 + 1.0 / k).sqrt();
    Some(RunSpread {
        runs: n,
        pct: half / mean.abs() * 100.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_is_the_prediction_interval_of_a_runs_change() {
        // Five runs at 100 ± a known sd of 2 (figures 97, 99, 100, 101, 103: sd² =
        // (9+1+0+1+9)/4 = 5). t(0.975, 4) = 2.776: one run against one, √2.
        let s = run_spread(&[100.0, 97.0, 103.0, 99.0, 101.0], 1).unwrap();
        assert_eq!(s.runs, 5);
        let want = 2.776_445 * 5f64.sqrt() * 2f64.sqrt();
        assert!((s.pct - want).abs() < 1e-3, "{s:?} want {want}");
        // Against the median of the five runs: √(1 + 1/5).
        let s5 = run_spread(&[100.0, 97.0, 103.0, 99.0, 101.0], 5).unwrap();
        assert!((s5.pct - 2.776_445 * 5f64.sqrt() * 1.2f64.sqrt()).abs() < 1e-3);
        // Too few runs, NaN left out, a zero mean.
        assert_eq!(run_spread(&[100.0, 101.0], 1), None);
        assert_eq!(run_spread(&[100.0, f64::NAN, 101.0], 1), None);
        assert_eq!(run_spread(&[0.0, 0.0, 0.0], 1), None);
        // Identical runs: no spread at all.
        assert_eq!(run_spread(&[7.0; 4], 1).unwrap().pct, 0.0);
    }

    #[test]
    fn the_floor_is_the_larger_of_min_change_and_the_spread_and_says_which() {
        let f = ChangeFloor::new(5.0, None);
        assert_eq!(f.pct, 5.0);
        assert!(!f.reached_by(Some(4.9)) && !f.reached_by(Some(-4.9)));
        assert!(f.reached_by(Some(5.0)) && f.reached_by(Some(-10.0)));
        // No percent to hold back (a baseline of zero).
        assert!(f.reached_by(None));
        assert_eq!(
            f.describe(),
            "changes under 5% are treated as noise (--min-change)"
        );
        let wide = ChangeFloor::new(5.0, Some(RunSpread { runs: 6, pct: 8.25 }));
        assert!(wide.from_earlier_runs());
        assert_eq!(wide.pct, 8.25);
        assert!(!wide.reached_by(Some(7.0)) && wide.reached_by(Some(9.0)));
        assert!(
            wide.describe().contains("±8.2% are treated as noise")
                && wide.describe().contains("6 earlier runs"),
            "{}",
            wide.describe()
        );
        let narrow = ChangeFloor::new(5.0, Some(RunSpread { runs: 4, pct: 2.1 }));
        assert!(!narrow.from_earlier_runs());
        assert_eq!(narrow.pct, 5.0);
        assert!(narrow.describe().starts_with("changes under 5%"));
        assert!(narrow.describe().contains("±2.1%"));
        // --min-change 0 leaves the spread alone; a nonsense value the default.
        assert_eq!(ChangeFloor::new(0.0, None).pct, 0.0);
        assert!(ChangeFloor::new(0.0, None).reached_by(Some(0.1)));
        assert_eq!(ChangeFloor::new(f64::NAN, None).pct, DEFAULT_MIN_CHANGE_PCT);
    }
}
