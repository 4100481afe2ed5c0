//! Where the service stopped keeping up: from per-second (load, throughput, p95)
//! samples of a run with several load levels, the load at which throughput stops
//! rising (or falls: a queueing avalanche), where latency turns upward, how long
//! latency takes to recover after the load falls, and a Universal Scalability Law fit
//! (Amdahl's law is its κ = 0 case) with its predicted peak.
//!
//! A knee is claimed only when the data show one: throughput per VU at the top load
//! fell well below what it was at low load **and** latency rose (Little's law: with
//! the number of VUs up and throughput flat, each request must take longer). A run
//! whose throughput grew in proportion to its VUs (an idle service, throughput set by
//! think time) reached no saturation, whatever the noise of its seconds.

use serde::{Deserialize, Serialize};

/// One second of a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoadSample {
    /// Second of the run.
    pub t: u32,
    /// Load level in that second (active VUs).
    pub load: f64,
    /// Requests completed in that second.
    pub rps: f64,
    /// p95 latency in that second, ms.
    pub p95_ms: Option<f64>,
}

/// Universal Scalability Law parameters: X(N) = λN / (1 + σ(N−1) + κN(N−1)).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Usl {
    /// Throughput of one VU.
    pub lambda: f64,
    /// Contention (serial fraction, Amdahl's σ).
    pub sigma: f64,
    /// Coherency (crosstalk) cost.
    pub kappa: f64,
    /// Load at which the fitted throughput peaks; `None` when the fit has no peak
    /// within reach of the data (κ = 0, or beyond four times the highest load tested),
    /// or when its peak would be below a throughput the run measured (the fit is
    /// wrong there, so it is not shown).
    #[serde(default)]
    pub peak_load: Option<f64>,
    /// Fitted throughput at that load, req/s (`None` as for `peak_load`).
    #[serde(default)]
    pub peak_rps: Option<f64>,
    /// The ceiling contention alone sets, λ/σ req/s, when it is within ten times the
    /// best measured throughput and not below it (otherwise `None`: a tiny σ gives an
    /// absurd number that says nothing).
    #[serde(default)]
    pub contention_cap_rps: Option<f64>,
    /// Coefficient of determination of the fit.
    pub r2: f64,
}

impl Usl {
    /// Predicted throughput at load `n`.
    pub fn predict(&self, n: f64) -> f64 {
        self.lambda * n / (1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0))
    }
}

/// Whether the run reached the service's limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Throughput stopped keeping up with the load and latency rose with it.
    #[default]
    Knee,
    /// Throughput kept growing with the load (in proportion, or near it): the limit
    /// is above the highest load of the run.
    NoSaturationReached,
}

/// What the saturation analysis found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Saturation {
    /// Whether a knee was found, or throughput kept up to the end.
    #[serde(default)]
    pub outcome: Outcome,
    /// Distinct load levels seen while the load was rising or holding (each with at
    /// least one full second that completed requests).
    pub levels: usize,
    /// Load at which throughput stopped keeping up (first level within 5% of the best
    /// level, or where throughput per VU fell below 70% of its low-load value);
    /// `None` (`null`) when no saturation was reached: a field named knee holds
    /// only a knee.
    pub throughput_knee_load: Option<f64>,
    /// The highest load level the analysis saw (while the load rose or held): the
    /// load throughput kept up to when no saturation was reached. 0 in summaries
    /// written before it.
    #[serde(default)]
    pub highest_load: f64,
    /// The best level's throughput (median of its seconds), req/s.
    pub max_rps: f64,
    /// Whether throughput fell by 10% or more at higher loads and stayed down
    /// (queueing avalanche): two or more levels beyond the best below 90% of it, the
    /// highest loads among them; only with a knee. A flat plateau with a noisy
    /// level is not a fall.
    pub throughput_falls: bool,
    /// Load at which p95 first exceeded twice its low-load value.
    pub latency_knee_load: Option<f64>,
    /// p95 at low load, ms (the baseline recovery is measured against).
    pub baseline_p95_ms: Option<f64>,
    /// Seconds after the load fell (to 70% of its peak or less) until p95 stayed
    /// within 1.5× baseline for 3 s; `None` without a knee, when the load never fell,
    /// or when latency never recovered.
    pub recovery_s: Option<f64>,
    /// USL fit over the level medians; `None` when it explains the levels poorly
    /// (r² below 0.8).
    pub usl: Option<Usl>,
}

/// Fewest full seconds the analysis needs while the load rises or holds: a run
/// aborted after a few seconds says nothing about capacity.
pub const MIN_SECONDS: usize = 10;
/// Lowest r² at which a USL fit is kept.
pub const MIN_USL_R2: f64 = 0.8;

/// One load level: its load (whole VUs), median throughput (requests/s) and median
/// p95 (ms, when measured).
type Level = (f64, f64, Option<f64>);

/// The load levels of the seconds in which the load rose or held, each with its
/// median second; `None` with fewer than [`MIN_SECONDS`] such seconds or three
/// levels.
fn level_medians(secs: &[LoadSample]) -> Option<Vec<Level>> {
    // Ramp-up and holds only: a second whose load is below the highest so far is a
    // ramp-down (or a dip), which belongs to recovery, not to capacity.
    let mut top = 0.0f64;
    let mut rising = Vec::new();
    for s in secs {
        top = top.max(s.load);
        if s.load >= 0.95 * top {
            rising.push(*s);
        }
    }
    if rising.len() < MIN_SECONDS {
        return None;
    }
    // Seconds by load level (whole VUs), in time order within each level.
    let mut by_level: Vec<(f64, Vec<LoadSample>)> = Vec::new();
    for s in &rising {
        let l = s.load.round().max(1.0);
        match by_level.iter_mut().find(|x| x.0 == l) {
            Some(x) => x.1.push(*s),
            None => by_level.push((l, vec![*s])),
        }
    }
    by_level.sort_by(|a, b| a.0.total_cmp(&b.0));
    if by_level.len() < 3 {
        return None;
    }
    // Each level's median second; a level of three seconds or more loses its first,
    // in which the step happened part-way.
    let pts: Vec<Level> = by_level
        .iter()
        .map(|(l, v)| {
            let v = if v.len() >= 3 { &v[1..] } else { &v[..] };
            let mut r: Vec<f64> = v.iter().map(|s| s.rps).collect();
            let mut p: Vec<f64> = v.iter().filter_map(|s| s.p95_ms).collect();
            (*l, median(&mut r), (!p.is_empty()).then(|| median(&mut p)))
        })
        .collect();
    Some(pts)
}

/// Seconds from the last second at the peak load, once the load has fallen to 70% of
/// it or less, until p95 holds within 1.5× the baseline p95 `b` for 3 s.
fn recovery(secs: &[LoadSample], b: f64) -> Option<f64> {
    let peak = secs.iter().map(|s| s.load).fold(0.0, f64::max);
    let drop_at = secs.iter().rposition(|s| s.load >= peak)?;
    let after: Vec<&LoadSample> = secs[drop_at + 1..]
        .iter()
        .filter(|s| s.load <= 0.7 * peak && s.rps > 0.0)
        .collect();
    if after.len() < 3 {
        return None;
    }
    let ok = |s: &LoadSample| s.p95_ms.is_none_or(|p| p <= 1.5 * b.max(0.001));
    (0..=after.len() - 3)
        .find(|&i| after[i..i + 3].iter().all(|s| ok(s)))
        .map(|i| (after[i].t as f64 - secs[drop_at].t as f64).max(0.0))
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The seconds that measure the service: the final second is dropped when the run
/// ended inside it (`duration_s`: a partial flush), so are seconds without load and
/// the trailing seconds that completed nothing (VUs still counted while the run
/// stops). `duration_s` 0 means unknown (nothing dropped for it).
pub fn full_seconds(samples: &[LoadSample], duration_s: f64) -> Vec<LoadSample> {
    let mut v: Vec<LoadSample> = samples
        .iter()
        .filter(|s| duration_s <= 0.0 || s.t as f64 + 1.0 <= duration_s + 0.05)
        .filter(|s| s.load > 0.0 && s.rps.is_finite())
        .copied()
        .collect();
    while v.last().is_some_and(|s| s.rps <= 0.0) {
        v.pop();
    }
    v
}

/// Analyse a run's seconds; the run lasted `duration_s` (0 when unknown). `None`
/// when there is too little to say: fewer than [`MIN_SECONDS`] full seconds or three
/// load levels while the load rose or held.
pub fn analyse(samples: &[LoadSample], duration_s: f64) -> Option<Saturation> {
    let secs = full_seconds(samples, duration_s);
    let pts = level_medians(&secs)?;
    let (max_i, max_rps) = pts
        .iter()
        .enumerate()
        .map(|(i, p)| (i, p.1))
        .fold((0, f64::MIN), |a, b| if b.1 > a.1 { b } else { a });
    let top_load = pts[pts.len() - 1].0;
    // The candidate knee: where throughput got within 5% of its best, or where each
    // VU got less than 70% of the throughput it got at low load (a plateau that
    // still creeps upward), whichever comes first.
    let plateau = pts
        .iter()
        .find(|p| p.1 >= 0.95 * max_rps)
        .map(|p| p.0)
        .unwrap_or(pts[max_i].0);
    let low_n = (pts.len() / 4).max(1);
    // Pooled (Σ throughput / Σ load) rather than a mean of ratios: steadier when the
    // lowest levels complete only a few requests a second.
    let pooled = |v: &[Level]| {
        let load: f64 = v.iter().map(|p| p.0).sum();
        if load > 0.0 {
            v.iter().map(|p| p.1).sum::<f64>() / load
        } else {
            0.0
        }
    };
    let low_eff = pooled(&pts[..low_n]);
    let diminishing = pts
        .iter()
        .skip(low_n)
        .find(|p| p.1 / p.0 < 0.7 * low_eff)
        .map(|p| p.0);
    let candidate = diminishing.map_or(plateau, |d| d.min(plateau));
    // Latency baseline: the lowest quarter of the levels.
    let low: Vec<f64> = pts.iter().take(low_n).filter_map(|p| p.2).collect();
    let baseline = (!low.is_empty()).then(|| mean(&low));
    let latency_knee_load = baseline.and_then(|b| {
        pts.iter()
            .find(|p| p.2.is_some_and(|v| v > 2.0 * b.max(0.001)))
            .map(|p| p.0)
    });
    // Confirm: at the top (levels within 10% of the highest load) each VU got clearly
    // less than at low load, and latency at and beyond the knee rose above baseline.
    let top_pts: Vec<_> = pts
        .iter()
        .copied()
        .filter(|p| p.0 >= 0.9 * top_load)
        .collect();
    let fell_behind = pooled(&top_pts) < 0.8 * low_eff;
    let mut beyond: Vec<f64> = pts
        .iter()
        .filter(|p| p.0 >= candidate)
        .filter_map(|p| p.2)
        .collect();
    let latency_rose =
        baseline.is_some_and(|b| !beyond.is_empty() && median(&mut beyond) > 1.5 * b.max(0.001));
    let saturated = candidate < top_load && fell_behind && latency_rose;
    let knee = saturated.then_some(candidate);
    // Throughput fell (a queueing avalanche) only when it stayed down: at least two
    // levels beyond the best below 90% of it, the highest loads among them. One
    // level that dipped on a flat plateau is noise, not a fall.
    let below = |p: &&Level| p.1 < 0.9 * max_rps;
    let beyond_best = &pts[max_i + 1..];
    let top_down = {
        let mut top: Vec<f64> = top_pts.iter().map(|p| p.1).collect();
        !top.is_empty() && median(&mut top) < 0.9 * max_rps
    };
    let throughput_falls = saturated && beyond_best.iter().filter(below).count() >= 2 && top_down;
    // Recovery: from the last second at the peak load, once the load has fallen to
    // 70% of it or less, until p95 holds near baseline for 3 s.
    let recovery_s = baseline
        .filter(|_| saturated)
        .and_then(|b| recovery(&secs, b));
    let usl = fit_usl(&pts.iter().map(|p| (p.0, p.1)).collect::<Vec<_>>())
        .filter(|u| u.r2 >= MIN_USL_R2)
        .map(|u| u.within_reach(top_load, max_rps));
    Some(Saturation {
        outcome: if saturated {
            Outcome::Knee
        } else {
            Outcome::NoSaturationReached
        },
        levels: pts.len(),
        throughput_knee_load: knee,
        highest_load: top_load,
        max_rps,
        throughput_falls,
        latency_knee_load,
        baseline_p95_ms: baseline,
        recovery_s,
        usl,
    })
}

impl Usl {
    /// Keep only the predictions the data support: a peak within four times the
    /// highest load tested and not below the best throughput measured (2% leeway
    /// for noise), and a contention ceiling between that throughput and ten times it.
    pub fn within_reach(mut self, top_load: f64, max_rps: f64) -> Usl {
        let sane = |x: Option<f64>| x.filter(|v| v.is_finite() && *v >= 0.98 * max_rps);
        let peak_ok = self
            .peak_load
            .is_some_and(|n| n.is_finite() && n <= 4.0 * top_load);
        self.peak_rps = sane(self.peak_rps).filter(|_| peak_ok);
        if self.peak_rps.is_none() {
            self.peak_load = None;
        }
        self.contention_cap_rps =
            sane(self.contention_cap_rps).filter(|c| *c <= 10.0 * max_rps.max(1e-9));
        self
    }
}

/// Least-squares USL fit over (load, throughput) points, by the experiments' fit
/// ([`crate::scaling`]); `None` below three load levels or on a bad point.
pub fn fit_usl(points: &[(f64, f64)]) -> Option<Usl> {
    if points.len() < 3 || points.iter().any(|p| !(p.0 > 0.0 && p.1.is_finite())) {
        return None;
    }
    let fit = crate::scaling::fit_pairs(points).ok()?;
    let (lambda, sigma, kappa) = (fit.lambda, fit.sigma, fit.kappa);
    let (peak_load, peak_rps) = match fit.peak_x {
        Some(n) => {
            let n = n.max(1.0);
            (Some(n), Some(fit.predict(n)))
        }
        None => (None, None),
    };
    let cap = lambda / sigma;
    Some(Usl {
        lambda,
        sigma,
        kappa,
        peak_load,
        peak_rps,
        contention_cap_rps: (sigma > 0.0 && cap.is_finite()).then_some(cap),
        r2: fit.r2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Uniform noise in [-0.5, 0.5).
    fn noise(rng: &mut fastrand::Rng) -> f64 {
        rng.f64() - 0.5
    }

    /// A ramp 5→100 VUs in steps of 5 (10 s each) against a service that saturates
    /// at 50 VUs (10 req/s per VU, 500 req/s at most), then a drop back to 5 VUs.
    fn run_with_knee_at_50() -> Vec<LoadSample> {
        let mut rng = fastrand::Rng::with_seed(42);
        let mut out = Vec::new();
        let mut t = 0;
        for level in (5..=100).step_by(5) {
            for _ in 0..10 {
                let n = level as f64;
                let rps = (n.min(50.0) * 10.0) * (1.0 + 0.02 * noise(&mut rng));
                let p95 = if n <= 50.0 {
                    20.0
                } else {
                    20.0 * n / 50.0 * 2.0
                };
                out.push(LoadSample {
                    t,
                    load: n,
                    rps,
                    p95_ms: Some(p95 * (1.0 + 0.05 * noise(&mut rng))),
                });
                t += 1;
            }
        }
        // Load falls; latency stays high for 6 s (queue draining), then recovers.
        for i in 0..20 {
            out.push(LoadSample {
                t,
                load: 5.0,
                rps: 50.0,
                p95_ms: Some(if i < 6 { 300.0 } else { 21.0 }),
            });
            t += 1;
        }
        out
    }

    #[test]
    fn finds_a_knee_placed_at_a_known_load() {
        let s = analyse(&run_with_knee_at_50(), 0.0).unwrap();
        assert_eq!(s.outcome, Outcome::Knee, "{s:?}");
        assert!(
            (s.throughput_knee_load.unwrap() - 50.0).abs() <= 5.0,
            "{s:?}"
        );
        assert_eq!(s.highest_load, 100.0, "{s:?}");
        assert!((s.max_rps - 500.0).abs() < 15.0, "{s:?}");
        assert!(!s.throughput_falls);
        let lk = s.latency_knee_load.unwrap();
        assert!((50.0..=60.0).contains(&lk), "{s:?}");
        // The first second back at baseline is 7 s after the last second at 100 VUs.
        assert_eq!(s.recovery_s, Some(7.0), "{s:?}");
    }

    /// `levels` of (VUs, req/s, p95 ms), `secs` seconds each, from t = 0.
    fn steps(levels: &[(f64, f64, f64)], secs: u32) -> Vec<LoadSample> {
        let mut v = Vec::new();
        for (i, &(load, rps, p95)) in levels.iter().enumerate() {
            for k in 0..secs {
                v.push(LoadSample {
                    t: i as u32 * secs + k,
                    load,
                    rps,
                    p95_ms: Some(p95),
                });
            }
        }
        v
    }

    #[test]
    fn a_falling_throughput_is_an_avalanche() {
        // A service with a USL shape planted (λ 10, σ 0.01, κ 0.0015: peak 116 req/s
        // at 26 VUs) and latency rising past it, 4 s per level.
        let truth = Usl {
            lambda: 10.0,
            sigma: 0.01,
            kappa: 0.0015,
            peak_load: None,
            peak_rps: None,
            contention_cap_rps: None,
            r2: 1.0,
        };
        let levels: Vec<(f64, f64, f64)> = (1..=6)
            .map(|i| {
                let n = i as f64 * 10.0;
                (n, truth.predict(n), if n <= 10.0 { 10.0 } else { n * 2.0 })
            })
            .collect();
        let s = analyse(&steps(&levels, 4), 24.0).unwrap();
        assert_eq!(s.outcome, Outcome::Knee, "{s:?}");
        assert!(s.throughput_falls);
        assert_eq!(s.throughput_knee_load, Some(20.0));
        let usl = s.usl.unwrap();
        assert!((usl.kappa - 0.0015).abs() < 0.0003, "{usl:?}");
        assert!((23.0..=29.0).contains(&usl.peak_load.unwrap()), "{usl:?}");
        assert!(usl.peak_rps.unwrap() >= 0.98 * s.max_rps, "{usl:?}");
    }

    /// Issue #28: a plateau, not an avalanche. Throughput rises to 500 req/s at 50
    /// VUs and stays flat to 100 VUs while p95 rises; one level on the plateau
    /// dips to 440 (noise, a GC pause). Throughput did not fall: no "avalanche".
    /// The same run whose last two levels really drop to 400 and 350 is one.
    #[test]
    fn a_flat_plateau_with_a_dip_is_not_an_avalanche() {
        let plateau: Vec<(f64, f64, f64)> = (1..=10)
            .map(|i| {
                let n = i as f64 * 10.0;
                let rps = match i {
                    1..=4 => n * 10.0,
                    7 => 440.0,
                    _ => 500.0,
                };
                (n, rps, if n <= 50.0 { 20.0 } else { n })
            })
            .collect();
        let s = analyse(&steps(&plateau, 4), 40.0).unwrap();
        assert_eq!(s.outcome, Outcome::Knee, "{s:?}");
        assert!(!s.throughput_falls, "{s:?}");
        let mut falling = plateau.clone();
        falling[8].1 = 400.0;
        falling[9].1 = 350.0;
        let s = analyse(&steps(&falling, 4), 40.0).unwrap();
        assert_eq!(s.outcome, Outcome::Knee, "{s:?}");
        assert!(s.throughput_falls, "{s:?}");
    }

    /// Issue #11: 10/30/50/70 VUs for 10 s each against an idle service, throughput
    /// set by think time (2 req/s per VU), then the run's last second: VUs still 70,
    /// nothing completed, and the run ended 0.3 s into it.
    fn linear_step_ramp() -> Vec<LoadSample> {
        let mut rng = fastrand::Rng::with_seed(7);
        let mut v = Vec::new();
        for (i, vus) in [10.0, 30.0, 50.0, 70.0].into_iter().enumerate() {
            for k in 0..10 {
                v.push(LoadSample {
                    t: i as u32 * 10 + k,
                    load: vus,
                    rps: (2.0 * vus * (1.0 + 0.05 * noise(&mut rng))).round(),
                    p95_ms: Some(2.0 + 0.2 * noise(&mut rng)),
                });
            }
        }
        v.push(LoadSample {
            t: 40,
            load: 70.0,
            rps: 0.0,
            p95_ms: None,
        });
        v
    }

    #[test]
    fn a_linear_step_ramp_reached_no_saturation() {
        let s = analyse(&linear_step_ramp(), 40.3).unwrap();
        assert_eq!(s.outcome, Outcome::NoSaturationReached, "{s:?}");
        // No knee: the knee's field is empty, the highest load has its own.
        assert_eq!(s.throughput_knee_load, None, "{s:?}");
        assert_eq!(s.highest_load, 70.0, "{s:?}");
        // The best level is the top one, 140 req/s: the empty second is not in it.
        assert!((s.max_rps - 140.0).abs() < 5.0, "{s:?}");
        assert!(!s.throughput_falls);
        assert_eq!(s.recovery_s, None, "the load never fell: {s:?}");
        if let Some(u) = s.usl {
            assert!(u.peak_rps.is_none_or(|p| p >= 0.98 * s.max_rps), "{u:?}");
            assert!(
                u.contention_cap_rps.is_none_or(|c| c >= 0.98 * s.max_rps),
                "{u:?}"
            );
        }
        // The same run with a real limit planted at 50 VUs (100 req/s, latency up
        // beyond it) is a knee at 50.
        let capped: Vec<LoadSample> = linear_step_ramp()
            .into_iter()
            .map(|mut s| {
                if s.load > 50.0 && s.rps > 0.0 {
                    s.rps = s.rps * 100.0 / 140.0;
                    s.p95_ms = Some(40.0);
                }
                s
            })
            .collect();
        let k = analyse(&capped, 40.3).unwrap();
        assert_eq!(k.outcome, Outcome::Knee, "{k:?}");
        assert_eq!(k.throughput_knee_load, Some(50.0), "{k:?}");
        assert_eq!(k.highest_load, 70.0, "{k:?}");
    }

    /// Issue #11: a ramp to 20 VUs, each with 1–3 s think time (0.5 req/s per VU on
    /// average, so a second completes a handful of requests, drawn at random) against
    /// a service answering in 2 ms.
    #[test]
    fn think_time_noise_is_not_a_knee() {
        let mut rng = fastrand::Rng::with_seed(99);
        let mut v = Vec::new();
        for t in 0..60u32 {
            let vus = (t / 2 + 1).min(20) as f64;
            // Each VU completes a request this second with probability 1/2.
            let rps = (0..vus as u32).filter(|_| noise(&mut rng) < 0.0).count() as f64;
            v.push(LoadSample {
                t,
                load: vus,
                rps,
                p95_ms: (rps > 0.0).then(|| 2.0 + 0.3 * noise(&mut rng)),
            });
        }
        let s = analyse(&v, 60.0).unwrap();
        assert_eq!(s.outcome, Outcome::NoSaturationReached, "{s:?}");
        assert_eq!(s.throughput_knee_load, None, "{s:?}");
        assert_eq!(s.highest_load, 20.0, "{s:?}");
        assert!(!s.throughput_falls, "{s:?}");
    }

    #[test]
    fn a_run_aborted_after_a_few_seconds_says_nothing() {
        let v = [(1.0, 50.0, 2.0), (2.0, 40.0, 30.0), (3.0, 5.0, 300.0)]
            .iter()
            .enumerate()
            .map(|(t, &(load, rps, p))| LoadSample {
                t: t as u32,
                load,
                rps,
                p95_ms: Some(p),
            })
            .collect::<Vec<_>>();
        assert_eq!(analyse(&v, 2.4), None);
        assert_eq!(analyse(&v, 0.0), None);
    }

    #[test]
    fn partial_and_empty_seconds_are_not_measurements() {
        let v = linear_step_ramp();
        let full = full_seconds(&v, 40.3);
        assert_eq!(full.len(), 40);
        assert!(full.iter().all(|s| s.rps > 0.0));
        // A run that ended 0.3 s into second 39: that second is partial.
        assert_eq!(full_seconds(&v[..40], 39.3).len(), 39);
    }

    #[test]
    fn usl_predictions_beyond_the_data_are_not_kept() {
        // Perfectly linear: no peak, no ceiling.
        let lin: Vec<(f64, f64)> = (1..=8)
            .map(|n| (n as f64 * 10.0, n as f64 * 20.0))
            .collect();
        let u = fit_usl(&lin).unwrap().within_reach(80.0, 160.0);
        assert_eq!(u.peak_rps, None, "{u:?}");
        assert_eq!(u.peak_load, None, "{u:?}");
        assert!(
            u.contention_cap_rps
                .is_none_or(|c| c.is_finite() && c <= 1600.0),
            "{u:?}"
        );
        // A fitted peak below what was measured is dropped, and so is a ceiling
        // absurdly far away.
        let wrong = Usl {
            lambda: 2.0,
            sigma: 1e-12,
            kappa: 1e-3,
            peak_load: Some(50.0),
            peak_rps: Some(114.0),
            contention_cap_rps: Some(2e12),
            r2: 0.9,
        }
        .within_reach(70.0, 140.0);
        assert_eq!((wrong.peak_load, wrong.peak_rps), (None, None), "{wrong:?}");
        assert_eq!(wrong.contention_cap_rps, None, "{wrong:?}");
        let inf = Usl {
            peak_load: Some(f64::INFINITY),
            peak_rps: Some(f64::INFINITY),
            contention_cap_rps: Some(f64::INFINITY),
            ..wrong
        }
        .within_reach(70.0, 140.0);
        assert_eq!((inf.peak_rps, inf.contention_cap_rps), (None, None));
    }

    #[test]
    fn usl_recovers_known_parameters() {
        let truth = Usl {
            lambda: 100.0,
            sigma: 0.05,
            kappa: 0.001,
            peak_load: None,
            peak_rps: None,
            contention_cap_rps: None,
            r2: 1.0,
        };
        let pts: Vec<(f64, f64)> = (1..=40)
            .map(|n| (n as f64, truth.predict(n as f64)))
            .collect();
        let fit = fit_usl(&pts).unwrap();
        assert!((fit.lambda - 100.0).abs() < 1.0, "{fit:?}");
        assert!((fit.sigma - 0.05).abs() < 0.005, "{fit:?}");
        assert!((fit.kappa - 0.001).abs() < 0.0002, "{fit:?}");
        assert!(fit.r2 > 0.999);
        // Amdahl (κ = 0): the peak is the asymptote λ/σ.
        let amdahl: Vec<(f64, f64)> = (1..=30)
            .map(|n| (n as f64, 50.0 * n as f64 / (1.0 + 0.1 * (n as f64 - 1.0))))
            .collect();
        let a = fit_usl(&amdahl).unwrap();
        assert!((a.sigma - 0.1).abs() < 0.01, "{a:?}");
        assert!(a.kappa < 1e-4, "{a:?}");
        assert!((a.predict(30.0) - amdahl[29].1).abs() < 2.0, "{a:?}");
    }

    #[test]
    fn too_few_levels() {
        assert!(analyse(
            &[LoadSample {
                t: 0,
                load: 5.0,
                rps: 10.0,
                p95_ms: None
            }],
            1.0
        )
        .is_none());
    }
}
