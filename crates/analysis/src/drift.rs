//! Drift under steady load (soak): the slope of per-second latency over time and
//! whether it is significant. Memory leaks, pool drift and GC build-up show here
//! first, long before a threshold fails.
//!
//! Only periods of steady load are measured (holds of ramping executors, constant
//! executors): latency that rises because the load rises is the load's doing, not
//! drift, so a ramp says nothing about it. Each period is measured on its own, its
//! first seconds skipped as warm-up.

use pado_results::StageMark;
use serde::{Deserialize, Serialize};

use crate::noise::{effective_sample_size, t_two_sided};

/// The method, in words, printed with drift output.
pub const METHOD: &str = "least-squares slope of the per-second mean latency within each period of steady load (its first 5 s skipped as warm-up); the slope's standard error is widened for the autocorrelation of the residuals (effective sample size n·(1−r₁)/(1+r₁)), two-sided normal test; notable when p < 0.01 and the fitted rise over the period is at least 10% of its mean (latency falling through a hold is warm-up, not a soak signal)";

/// The p-value below which a slope is significant: what the summary shows and what
/// `notable` requires. Lines above it are chance at the run's length and noise to a
/// reader, so the summary leaves them to `summary.json`.
pub const SIGNIFICANCE: f64 = 0.01;

/// Seconds skipped at the start of each steady period: connections, caches and JITs
/// settle there, and the end of the previous stage still drains.
pub const WARMUP_S: u32 = 5;

/// Fewest seconds a period needs (after warm-up) to be measured.
pub const MIN_SECONDS: usize = 30;

/// A trend of one per-second series.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    /// Change per hour, in the series' unit (ms per hour for latency).
    pub slope_per_hour: f64,
    /// Relative change over the seconds measured: slope × span / mean.
    pub relative_change: f64,
    /// Two-sided p-value of the slope (normal approximation), with the standard
    /// error widened for autocorrelated residuals.
    pub p_value: f64,
    /// Whether it is worth telling: significant (p < 0.01) and the fitted rise over
    /// the seconds measured is at least 10% of the mean. A fall is not: latency that
    /// improves through a hold is caches and JITs still warming, not a leak.
    pub notable: bool,
    /// Seconds used.
    pub n: usize,
    /// What those seconds are worth as independent samples, given the lag-1
    /// autocorrelation of the residuals (`n` when they are independent).
    #[serde(default)]
    pub n_effective: f64,
}

impl Drift {
    /// Whether the slope is significant (p below [`SIGNIFICANCE`]), rising or
    /// falling: the lines the summary prints.
    pub fn significant(&self) -> bool {
        self.p_value < SIGNIFICANCE
    }
}

/// A stretch of the run during which the load held steady.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SteadyPeriod {
    /// What held (`hold 150 VUs`, stages of several scenarios joined by ` + `).
    pub label: String,
    /// Start, seconds from run start.
    pub start_s: f64,
    /// End, seconds from run start.
    pub end_s: f64,
}

/// Drift measured within one steady period.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeriodDrift {
    /// The period.
    #[serde(default)]
    pub period: SteadyPeriod,
    /// The trend within it (after warm-up).
    #[serde(flatten)]
    pub drift: Drift,
}

/// A least-squares line through `(t, value)` samples and how sure it is: what
/// latency drift and the soak analysis of the target's resources both read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Fit {
    /// Change per second, in the values' unit.
    pub slope: f64,
    /// Value of the line at `t = 0`.
    pub intercept: f64,
    /// Mean of the values.
    pub mean: f64,
    /// Two-sided p-value of the slope, its standard error widened for
    /// autocorrelated residuals.
    pub p_value: f64,
    /// Samples used.
    pub n: usize,
    /// What they are worth as independent samples.
    pub n_effective: f64,
    /// First and last `t`.
    pub t_first: f64,
    /// Last `t`.
    pub t_last: f64,
}

impl Fit {
    /// The line's value at `t`.
    pub(crate) fn at(&self, t: f64) -> f64 {
        self.intercept + self.slope * t
    }

    /// The line's rise from the first sample to the last.
    pub(crate) fn rise(&self) -> f64 {
        self.slope * (self.t_last - self.t_first)
    }
}

/// Ordinary least squares of `y` over `t`; `None` under `min_n` samples or when
/// every `t` is the same.
pub(crate) fn fit(samples: &[(f64, f64)], min_n: usize) -> Option<Fit> {
    let n = samples.len();
    if n < min_n.max(3) {
        return None;
    }
    let nf = n as f64;
    let mt = samples.iter().map(|s| s.0).sum::<f64>() / nf;
    let my = samples.iter().map(|s| s.1).sum::<f64>() / nf;
    let sxx: f64 = samples.iter().map(|s| (s.0 - mt).powi(2)).sum();
    let sxy: f64 = samples.iter().map(|s| (s.0 - mt) * (s.1 - my)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let b = sxy / sxx;
    let a = my - b * mt;
    let resid: Vec<f64> = samples.iter().map(|s| s.1 - a - b * s.0).collect();
    let sse: f64 = resid.iter().map(|e| e * e).sum();
    // Seconds are not independent (a slow second is followed by another): with
    // AR(1) residuals the slope's variance grows by (1 + r₁)/(1 − r₁) = n / n_eff.
    let n_eff = effective_sample_size(&resid).max(2.0);
    let inflation = (nf / n_eff).max(1.0);
    let se = (sse / (nf - 2.0) / sxx * inflation).sqrt();
    // Student's t at the effective size less the two fitted parameters: on a few
    // effective seconds the normal curve is far too sure of a slope.
    let p = if se > 0.0 {
        t_two_sided(b / se, (n_eff - 2.0).max(1.0))
    } else if b != 0.0 {
        0.0
    } else {
        1.0
    };
    Some(Fit {
        slope: b,
        intercept: a,
        mean: my,
        p_value: p.clamp(0.0, 1.0),
        n,
        n_effective: n_eff.min(nf),
        t_first: samples[0].0,
        t_last: samples[n - 1].0,
    })
}

/// Ordinary least squares of `y` over `t` (seconds); `None` under [`MIN_SECONDS`]
/// samples.
pub fn drift(samples: &[(f64, f64)]) -> Option<Drift> {
    let f = fit(samples, MIN_SECONDS)?;
    let rel = if f.mean.abs() > 0.0 {
        f.rise() / f.mean
    } else {
        0.0
    };
    Some(Drift {
        slope_per_hour: f.slope * 3600.0,
        relative_change: rel,
        p_value: f.p_value,
        notable: f.p_value < SIGNIFICANCE && rel >= 0.10,
        n: f.n,
        n_effective: f.n_effective,
    })
}

/// A change of the load made by hand while the run went (a `control` event of
/// `events.jsonl`: VUs or a rate set from a dashboard, a pause): judged like a
/// planned change, it starts a new load level, so no steady period spans it.
#[derive(Clone, Debug, PartialEq)]
pub struct ManualChange {
    /// What changed (the event's name), for the label of the level it starts.
    pub label: String,
    /// When it was made, seconds from run start.
    pub start_s: f64,
    /// When the new level was reached (the end of a ramp; `start_s` for a change
    /// made at once).
    pub end_s: f64,
    /// Whether the load is steady after it (not after a pause or a stop).
    pub steady_after: bool,
}

impl ManualChange {
    /// Whether second `[t, t + 1)` sees the load move: the change falls inside it
    /// (a change exactly at its start belongs to what follows) or its ramp
    /// overlaps it.
    fn moves_in(&self, t: f64) -> bool {
        let (a, b) = (self.start_s, self.end_s.max(self.start_s));
        if b > a {
            a < t + 1.0 && b > t
        } else {
            a > t && a < t + 1.0
        }
    }
}

/// The periods of steady load of a run lasting `duration_s`, from its stage windows
/// (`stages`, user windows ignored): the full seconds every running stage of which is
/// a hold, split where the set of running stages changes (a step from one hold to
/// the next). A run without executor stages (per-VU iterations, older files) falls
/// back on its per-second load figures `loads` (second, active VUs): runs of seconds
/// at the same non-zero load.
pub fn steady_periods(
    stages: &[StageMark],
    loads: &[(u32, f64)],
    duration_s: f64,
) -> Vec<SteadyPeriod> {
    steady_periods_with_changes(stages, &[], loads, duration_s)
}

/// [`steady_periods`] of a run whose load was also changed by hand (`changes`, in
/// time order): each change is a level boundary as a planned step is. The second
/// it falls in (or that its ramp covers) is not steady, the seconds on either side
/// are separate periods, and nothing after a pause or a stop is steady until the
/// next change. With no change this is exactly [`steady_periods`].
pub fn steady_periods_with_changes(
    stages: &[StageMark],
    changes: &[ManualChange],
    loads: &[(u32, f64)],
    duration_s: f64,
) -> Vec<SteadyPeriod> {
    let steady = planned_steady_seconds(stages, loads, duration_s);
    let mut out: Vec<SteadyPeriod> = Vec::new();
    let mut last: Option<(Vec<usize>, u32)> = None;
    for (mut key, mut label, t) in steady {
        let ts = t as f64;
        if changes.iter().any(|c| c.moves_in(ts)) {
            continue;
        }
        // The changes made before this second: the level it belongs to.
        let before: Vec<&ManualChange> = changes.iter().filter(|c| c.start_s <= ts).collect();
        if let Some(c) = before.last() {
            if !c.steady_after {
                continue;
            }
            label = format!("{label}, after {}", c.label);
        }
        key.push(usize::MAX - before.len());
        match (&last, out.last_mut()) {
            (Some((k, lt)), Some(p)) if *k == key && *lt + 1 == t => p.end_s = ts + 1.0,
            _ => out.push(SteadyPeriod {
                label,
                start_s: ts,
                end_s: ts + 1.0,
            }),
        }
        last = Some((key, t));
    }
    out
}

/// Each steady second of the plan as (key of what held, label, second), in time
/// order: see [`steady_periods`].
fn planned_steady_seconds(
    stages: &[StageMark],
    loads: &[(u32, f64)],
    duration_s: f64,
) -> Vec<(Vec<usize>, String, u32)> {
    let exec: Vec<&StageMark> = stages.iter().filter(|s| s.is_executor_stage()).collect();
    // (key, label, second) of each steady second, in time order.
    let mut steady: Vec<(Vec<usize>, String, u32)> = Vec::new();
    if exec.is_empty() {
        for &(t, load) in loads {
            if load > 0.0 && (t as f64 + 1.0) <= duration_s + 0.05 {
                let l = load.round();
                steady.push((vec![l as usize], format!("{l:.0} VUs"), t));
            }
        }
    } else {
        // No steady second lies past the last second measured, when seconds are
        // given (a run.json whose duration is absurd must not make this loop run for
        // ever).
        let measured = loads
            .iter()
            .map(|&(t, _)| t.saturating_add(1))
            .max()
            .unwrap_or(u32::MAX);
        let full = ((duration_s + 0.05).floor().max(0.0) as u32).min(measured);
        for t in 0..full {
            let running: Vec<usize> = (0..exec.len())
                .filter(|&i| pado_metrics::second_in_window(t, exec[i].start_s, exec[i].end_s))
                .collect();
            if !running.is_empty() && running.iter().all(|&i| exec[i].is_hold()) {
                let label = running
                    .iter()
                    .map(|&i| exec[i].label.as_str())
                    .collect::<Vec<_>>()
                    .join(" + ");
                steady.push((running, label, t));
            }
        }
    }
    steady
}

/// Drift of `series` (second, value) within each steady period long enough to
/// measure after its warm-up, in time order.
pub fn drift_in_periods(periods: &[SteadyPeriod], series: &[(f64, f64)]) -> Vec<PeriodDrift> {
    periods
        .iter()
        .filter_map(|p| {
            let from = p.start_s + WARMUP_S as f64;
            let within: Vec<(f64, f64)> = series
                .iter()
                .copied()
                .filter(|(t, v)| *t >= from && *t + 1.0 <= p.end_s && v.is_finite())
                .collect();
            drift(&within).map(|d| PeriodDrift {
                period: p.clone(),
                drift: d,
            })
        })
        .collect()
}

/// The period to tell the user about: the notable drift with the largest relative
/// change, or else the longest period measured.
pub fn headline(periods: &[PeriodDrift]) -> Option<&PeriodDrift> {
    periods
        .iter()
        .filter(|p| p.drift.notable)
        .max_by(|a, b| {
            a.drift
                .relative_change
                .abs()
                .total_cmp(&b.drift.relative_change.abs())
        })
        .or_else(|| periods.iter().max_by_key(|p| p.drift.n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(start_s: f64, end_s: f64, vus: f64) -> StageMark {
        StageMark {
            scenario: "s".into(),
            index: 0,
            start_s,
            end_s,
            label: format!("hold {vus} VUs"),
            target: vus,
            from: Some(vus),
        }
    }

    /// One hold of 20 s with VUs set by hand at 10.4 s: two levels, split at the
    /// change's second (which belongs to neither); with no change, one level.
    #[test]
    fn a_manual_step_splits_a_hold_into_two_levels_at_its_second() {
        let stages = [hold(0.0, 20.0, 4.0)];
        let change = ManualChange {
            label: "active VUs 4 → 1".into(),
            start_s: 10.4,
            end_s: 10.4,
            steady_after: true,
        };
        let p = steady_periods_with_changes(&stages, &[change], &[], 20.0);
        let spans: Vec<(f64, f64)> = p.iter().map(|p| (p.start_s, p.end_s)).collect();
        assert_eq!(spans, [(0.0, 10.0), (11.0, 20.0)]);
        assert_eq!(p[1].label, "hold 4 VUs, after active VUs 4 → 1");
        let unchanged = steady_periods_with_changes(&stages, &[], &[], 20.0);
        assert_eq!(unchanged, steady_periods(&stages, &[], 20.0));
        assert_eq!(unchanged.len(), 1);
        assert_eq!((unchanged[0].start_s, unchanged[0].end_s), (0.0, 20.0));
    }

    /// A ramp made by hand is not steady while it runs; a pause is not steady until
    /// the resume; a change on a second's boundary leaves both sides whole.
    #[test]
    fn ramps_and_pauses_by_hand_are_not_steady() {
        let stages = [hold(0.0, 30.0, 4.0)];
        let c = |label: &str, start_s: f64, end_s: f64, steady_after: bool| ManualChange {
            label: label.into(),
            start_s,
            end_s,
            steady_after,
        };
        let changes = [
            c("active VUs 4 → 8 over 3.0s", 5.0, 8.0, true),
            c("paused", 15.0, 15.0, false),
            c("resumed", 20.0, 20.0, true),
        ];
        let p = steady_periods_with_changes(&stages, &changes, &[], 30.0);
        let spans: Vec<(f64, f64)> = p.iter().map(|p| (p.start_s, p.end_s)).collect();
        assert_eq!(spans, [(0.0, 5.0), (8.0, 15.0), (20.0, 30.0)]);
    }

    /// Uniform noise in [-0.5, 0.5).
    fn noise(rng: &mut fastrand::Rng) -> f64 {
        rng.f64() - 0.5
    }

    fn series(slope_per_s: f64, seed: u64) -> Vec<(f64, f64)> {
        let mut rng = fastrand::Rng::with_seed(seed);
        (0..3600)
            .map(|t| {
                (
                    t as f64,
                    50.0 + slope_per_s * t as f64 + 10.0 * noise(&mut rng),
                )
            })
            .collect()
    }

    /// `n` seconds of AR(1) noise (φ = 0.9, as a GC cycle or a draining queue makes
    /// them) around 50 ms plus a planted slope.
    fn ar_series(slope_per_s: f64, n: usize, seed: u64) -> Vec<(f64, f64)> {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut e = 0.0;
        (0..n)
            .map(|t| {
                e = 0.9 * e + 4.0 * noise(&mut rng);
                (t as f64, 50.0 + slope_per_s * t as f64 + e)
            })
            .collect()
    }

    #[test]
    fn a_leak_shows_as_notable_drift() {
        // +20 ms over an hour on a 50 ms baseline.
        let d = drift(&series(20.0 / 3600.0, 7)).unwrap();
        assert!(d.notable, "{d:?}");
        assert!((d.slope_per_hour - 20.0).abs() < 2.0, "{d:?}");
    }

    #[test]
    fn a_flat_series_does_not() {
        let d = drift(&series(0.0, 9)).unwrap();
        assert!(!d.notable, "{d:?}");
        assert!(d.slope_per_hour.abs() < 2.0, "{d:?}");
        assert!(drift(&[(0.0, 1.0); 10]).is_none());
        // Latency falling (caches warming) is significant but not a soak signal.
        let d = drift(&series(-20.0 / 3600.0, 9)).unwrap();
        assert!(d.p_value < 0.01 && !d.notable, "{d:?}");
    }

    #[test]
    fn autocorrelated_seconds_do_not_make_flat_series_significant() {
        // Forty flat runs of 300 s with strongly autocorrelated noise: at p < 0.01 a
        // test that takes seconds as independent flags far more than 1% of them.
        let alarms = (1..=40u64)
            .filter(|&seed| drift(&ar_series(0.0, 300, seed * 7919)).unwrap().p_value < 0.01)
            .count();
        assert!(
            alarms <= 4,
            "{alarms} of 40 flat series came out significant"
        );
        let d = drift(&ar_series(0.0, 300, 3)).unwrap();
        assert!(d.n_effective < 60.0, "{d:?}");
        // A real trend in the same noise still shows, with its slope.
        let d = drift(&ar_series(0.05, 300, 5)).unwrap();
        assert!(d.p_value < 0.01 && d.notable, "{d:?}");
        assert!((d.slope_per_hour - 180.0).abs() < 45.0, "{d:?}");
    }

    fn mark(index: usize, start_s: f64, end_s: f64, from: f64, to: f64) -> StageMark {
        StageMark {
            scenario: "s".into(),
            index,
            start_s,
            end_s,
            label: if from == to {
                format!("hold {to} VUs")
            } else {
                format!("ramp {from}→{to} VUs")
            },
            target: to,
            from: Some(from),
        }
    }

    #[test]
    fn steady_periods_are_the_holds() {
        let stages = [
            mark(0, 0.0, 10.0, 0.0, 20.0),
            mark(1, 10.0, 50.0, 20.0, 20.0),
            mark(2, 50.0, 60.0, 20.0, 150.0),
            mark(3, 60.0, 100.0, 150.0, 150.0),
            mark(4, 100.0, 110.0, 150.0, 0.0),
        ];
        let p = steady_periods(&stages, &[], 110.4);
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!((p[0].start_s, p[0].end_s), (10.0, 50.0));
        assert_eq!(p[1].label, "hold 150 VUs");
        assert_eq!((p[1].start_s, p[1].end_s), (60.0, 100.0));
        // A step ramp: holds back to back are separate periods.
        let step = [
            mark(0, 0.0, 40.0, 10.0, 10.0),
            mark(1, 40.0, 80.0, 30.0, 30.0),
        ];
        let p = steady_periods(&step, &[], 80.0);
        assert_eq!(p.len(), 2, "{p:?}");
        // A run cut short: only its full seconds.
        let p = steady_periods(&step, &[], 55.5);
        assert_eq!(p[1].end_s, 55.0, "{p:?}");
        // A corrupt run.json duration (found by the fuzzer: it made this loop run
        // for ever) is bounded by the seconds measured.
        let measured: Vec<(u32, f64)> = (0..60).map(|t| (t, 20.0)).collect();
        let t0 = std::time::Instant::now();
        let p = steady_periods(&step, &measured, 1e29);
        assert!(t0.elapsed() < std::time::Duration::from_secs(1));
        assert!(p.iter().all(|x| x.end_s <= 60.0), "{p:?}");
        // No stages (per-VU iterations): seconds at the same VU count.
        let loads: Vec<(u32, f64)> = (0..50)
            .map(|t| (t, if t < 45 { 8.0 } else { 3.0 }))
            .collect();
        let p = steady_periods(&[], &loads, 50.0);
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!(
            (p[0].start_s, p[0].end_s, p[0].label.as_str()),
            (0.0, 45.0, "8 VUs")
        );
    }

    /// Latency that rises with the load across a ramp/hold/ramp run, flat within
    /// each hold, is not drift; a hold in which latency grows is.
    #[test]
    fn drift_is_measured_only_within_steady_load() {
        let stages = [
            mark(0, 0.0, 10.0, 0.0, 20.0),
            mark(1, 10.0, 50.0, 20.0, 20.0),
            mark(2, 50.0, 60.0, 20.0, 150.0),
            mark(3, 60.0, 100.0, 150.0, 150.0),
        ];
        let mut rng = fastrand::Rng::with_seed(11);
        let lat = |t: u32, rng: &mut fastrand::Rng, slope: f64| -> f64 {
            let base = match t {
                0..=9 => 5.0 + t as f64,
                10..=49 => 15.0,
                50..=59 => 15.0 + (t - 50) as f64 * 20.0,
                _ => 200.0 + slope * (t - 60) as f64,
            };
            base * (1.0 + 0.05 * noise(rng))
        };
        let flat: Vec<(f64, f64)> = (0..100)
            .map(|t| (t as f64, lat(t, &mut rng, 0.0)))
            .collect();
        // The whole run, as one line: a rise of several times the mean latency.
        assert!(drift(&flat).unwrap().relative_change > 1.0);
        let periods = steady_periods(&stages, &[], 100.0);
        let d = drift_in_periods(&periods, &flat);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d.iter().all(|p| !p.drift.notable), "{d:?}");
        // 2 ms a second planted in the 150-VU hold: found there, close to the truth.
        let leak: Vec<(f64, f64)> = (0..100)
            .map(|t| (t as f64, lat(t, &mut rng, 2.0)))
            .collect();
        let d = drift_in_periods(&periods, &leak);
        let h = headline(&d).unwrap();
        assert_eq!(h.period.label, "hold 150 VUs");
        assert!(h.drift.notable, "{h:?}");
        assert!((h.drift.slope_per_hour / 7200.0 - 1.0).abs() < 0.1, "{h:?}");
        assert!(!d[0].drift.notable, "{d:?}");
    }
}
