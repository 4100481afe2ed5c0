//! Where the service stopped keeping up: from per-second (load, throughput, p95)
//! samples of a run with several load levels, the load at which throughput stops
//! rising (or falls: seed 000's queueing avalanche), where latency turns upward, how
//! long latency takes to recover after the load falls, and a Universal Scalability
//! Law fit (Amdahl's law is its κ = 0 case) with its predicted peak.

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
    /// Load at which the fitted throughput peaks (infinite when κ = 0).
    pub peak_load: f64,
    /// Fitted throughput at that load (the asymptote λ/σ when κ = 0).
    pub peak_rps: f64,
    /// Coefficient of determination of the fit.
    pub r2: f64,
}

impl Usl {
    /// Predicted throughput at load `n`.
    pub fn predict(&self, n: f64) -> f64 {
        self.lambda * n / (1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0))
    }
}

/// What the saturation analysis found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Saturation {
    /// Distinct load levels seen (with at least one full second).
    pub levels: usize,
    /// Load at which throughput stopped keeping up: within 5% of its highest level
    /// mean, or below 70% of the low-load throughput per VU, whichever came first.
    pub throughput_knee_load: f64,
    /// The highest level mean throughput, req/s.
    pub max_rps: f64,
    /// Whether throughput fell by 10% or more at higher loads (queueing avalanche).
    pub throughput_falls: bool,
    /// Load at which p95 first exceeded twice its low-load value.
    pub latency_knee_load: Option<f64>,
    /// p95 at low load, ms (the baseline recovery is measured against).
    pub baseline_p95_ms: Option<f64>,
    /// Seconds after the load started to fall until p95 stayed within 1.5× baseline
    /// for 3 s; `None` when the load never fell or latency never recovered.
    pub recovery_s: Option<f64>,
    /// USL fit over the level means.
    pub usl: Option<Usl>,
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// Analyse a run's seconds. `None` when the run had fewer than three load levels.
pub fn analyse(samples: &[LoadSample]) -> Option<Saturation> {
    // Level means, rounding the load to whole VUs, over the seconds up to the last
    // one at the peak load: the ramp-down belongs to recovery, not to capacity.
    let peak_load = samples.iter().map(|s| s.load).fold(0.0, f64::max);
    let rising_end = samples
        .iter()
        .rposition(|s| s.load >= peak_load)
        .map_or(0, |i| i + 1);
    let mut levels: Vec<(f64, Vec<f64>, Vec<f64>)> = Vec::new();
    for s in samples[..rising_end].iter().filter(|s| s.load > 0.0) {
        let l = s.load.round();
        match levels.iter_mut().find(|x| x.0 == l) {
            Some(x) => {
                x.1.push(s.rps);
                if let Some(p) = s.p95_ms {
                    x.2.push(p);
                }
            }
            None => levels.push((l, vec![s.rps], s.p95_ms.into_iter().collect())),
        }
    }
    levels.sort_by(|a, b| a.0.total_cmp(&b.0));
    if levels.len() < 3 {
        return None;
    }
    let pts: Vec<(f64, f64, Option<f64>)> = levels
        .iter()
        .map(|(l, r, p)| (*l, mean(r), (!p.is_empty()).then(|| mean(p))))
        .collect();
    let (max_i, max_rps) = pts
        .iter()
        .enumerate()
        .map(|(i, p)| (i, p.1))
        .fold((0, f64::MIN), |a, b| if b.1 > a.1 { b } else { a });
    // The knee: where throughput got within 5% of its best, or where each VU got
    // less than 70% of the throughput it got at low load (a plateau that still
    // creeps upward), whichever comes first.
    let plateau = pts
        .iter()
        .find(|p| p.1 >= 0.95 * max_rps)
        .map(|p| p.0)
        .unwrap_or(pts[max_i].0);
    let low_n = (pts.len() / 4).max(1);
    let low_eff = mean(&pts[..low_n].iter().map(|p| p.1 / p.0).collect::<Vec<_>>());
    let diminishing = pts
        .iter()
        .skip(low_n)
        .find(|p| p.1 / p.0 < 0.7 * low_eff)
        .map(|p| p.0);
    let knee = diminishing.map_or(plateau, |d| d.min(plateau));
    let tail = &pts[max_i..];
    let throughput_falls = tail.iter().skip(1).any(|p| p.1 < 0.9 * max_rps);
    // Latency baseline: the lowest quarter of the levels.
    let low: Vec<f64> = pts
        .iter()
        .take((pts.len() / 4).max(1))
        .filter_map(|p| p.2)
        .collect();
    let baseline = (!low.is_empty()).then(|| mean(&low));
    let latency_knee_load = baseline.and_then(|b| {
        pts.iter()
            .find(|p| p.2.is_some_and(|v| v > 2.0 * b.max(0.001)))
            .map(|p| p.0)
    });
    // Recovery: from the last second at the peak load, until p95 holds near baseline.
    let recovery_s = baseline.and_then(|b| {
        let drop_at = samples.iter().rposition(|s| s.load >= peak_load)?;
        let after = &samples[drop_at + 1..];
        if after.iter().all(|s| s.load >= peak_load) || after.is_empty() {
            return None;
        }
        let ok = |s: &LoadSample| s.p95_ms.is_none_or(|p| p <= 1.5 * b.max(0.001));
        (0..after.len())
            .find(|&i| after[i..].iter().take(3).all(ok) && after.len() - i >= 3.min(after.len()))
            .map(|i| (after[i].t as f64 - samples[drop_at].t as f64).max(0.0))
    });
    Some(Saturation {
        levels: pts.len(),
        throughput_knee_load: knee,
        max_rps,
        throughput_falls,
        latency_knee_load,
        baseline_p95_ms: baseline,
        recovery_s,
        usl: fit_usl(&pts.iter().map(|p| (p.0, p.1)).collect::<Vec<_>>()),
    })
}

/// Least-squares USL fit over (load, throughput) points: a grid over σ and κ (log
/// spaced) with λ solved in closed form for each, then refined around the best.
pub fn fit_usl(points: &[(f64, f64)]) -> Option<Usl> {
    if points.len() < 3 || points.iter().any(|p| !(p.0 > 0.0 && p.1.is_finite())) {
        return None;
    }
    let eval = |sigma: f64, kappa: f64| -> (f64, f64) {
        // For fixed σ, κ the model is λ·g(N): least-squares λ = Σ g·X / Σ g².
        let g: Vec<f64> = points
            .iter()
            .map(|(n, _)| n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0)))
            .collect();
        let num: f64 = g.iter().zip(points).map(|(g, p)| g * p.1).sum();
        let den: f64 = g.iter().map(|g| g * g).sum();
        let lambda = if den > 0.0 { num / den } else { 0.0 };
        let sse: f64 = g
            .iter()
            .zip(points)
            .map(|(g, p)| (lambda * g - p.1).powi(2))
            .sum();
        (lambda, sse)
    };
    let grid = |lo: f64, hi: f64, n: usize| -> Vec<f64> {
        let mut v = vec![0.0];
        for i in 0..n {
            v.push(lo * (hi / lo).powf(i as f64 / (n - 1) as f64));
        }
        v
    };
    let mut best = (f64::INFINITY, 0.0, 0.0, 0.0);
    for &s in &grid(1e-5, 1.0, 60) {
        for &k in &grid(1e-7, 0.1, 60) {
            let (l, e) = eval(s, k);
            if e < best.0 {
                best = (e, s, k, l);
            }
        }
    }
    // Local refinement.
    let (mut s, mut k) = (best.1, best.2);
    let mut step_s = (s * 0.5).max(1e-6);
    let mut step_k = (k * 0.5).max(1e-8);
    for _ in 0..200 {
        let mut improved = false;
        for (ds, dk) in [(step_s, 0.0), (-step_s, 0.0), (0.0, step_k), (0.0, -step_k)] {
            let (ns, nk) = ((s + ds).max(0.0), (k + dk).max(0.0));
            let (l, e) = eval(ns, nk);
            if e < best.0 {
                best = (e, ns, nk, l);
                s = ns;
                k = nk;
                improved = true;
            }
        }
        if !improved {
            step_s /= 2.0;
            step_k /= 2.0;
        }
    }
    let (sse, sigma, kappa, lambda) = best;
    let m = mean(&points.iter().map(|p| p.1).collect::<Vec<_>>());
    let sst: f64 = points.iter().map(|p| (p.1 - m).powi(2)).sum();
    let r2 = if sst > 0.0 { 1.0 - sse / sst } else { 1.0 };
    let (peak_load, peak_rps) = if kappa > 0.0 {
        let n = ((1.0 - sigma).max(0.0) / kappa).sqrt().max(1.0);
        let u = Usl {
            lambda,
            sigma,
            kappa,
            peak_load: n,
            peak_rps: 0.0,
            r2,
        };
        (n, u.predict(n))
    } else if sigma > 0.0 {
        (f64::INFINITY, lambda / sigma)
    } else {
        (f64::INFINITY, f64::INFINITY)
    };
    Some(Usl {
        lambda,
        sigma,
        kappa,
        peak_load,
        peak_rps,
        r2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(x: &mut u64) -> f64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        (*x % 10_000) as f64 / 10_000.0 - 0.5
    }

    /// A ramp 5→100 VUs in steps of 5 (10 s each) against a service that saturates
    /// at 50 VUs (10 req/s per VU, 500 req/s at most), then a drop back to 5 VUs.
    fn run_with_knee_at_50() -> Vec<LoadSample> {
        let mut x = 42u64;
        let mut out = Vec::new();
        let mut t = 0;
        for level in (5..=100).step_by(5) {
            for _ in 0..10 {
                let n = level as f64;
                let rps = (n.min(50.0) * 10.0) * (1.0 + 0.02 * noise(&mut x));
                let p95 = if n <= 50.0 {
                    20.0
                } else {
                    20.0 * n / 50.0 * 2.0
                };
                out.push(LoadSample {
                    t,
                    load: n,
                    rps,
                    p95_ms: Some(p95 * (1.0 + 0.05 * noise(&mut x))),
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
        let s = analyse(&run_with_knee_at_50()).unwrap();
        assert!((s.throughput_knee_load - 50.0).abs() <= 5.0, "{s:?}");
        assert!((s.max_rps - 500.0).abs() < 15.0, "{s:?}");
        assert!(!s.throughput_falls);
        let lk = s.latency_knee_load.unwrap();
        assert!((50.0..=60.0).contains(&lk), "{s:?}");
        // The first second back at baseline is 7 s after the last second at 100 VUs.
        assert_eq!(s.recovery_s, Some(7.0), "{s:?}");
    }

    #[test]
    fn a_falling_throughput_is_an_avalanche() {
        let mut v = Vec::new();
        for (i, (load, rps)) in [
            (10.0, 100.0),
            (20.0, 200.0),
            (30.0, 290.0),
            (40.0, 300.0),
            (50.0, 220.0),
            (60.0, 150.0),
        ]
        .into_iter()
        .enumerate()
        {
            v.push(LoadSample {
                t: i as u32,
                load,
                rps,
                p95_ms: Some(10.0 * (i as f64 + 1.0)),
            });
        }
        let s = analyse(&v).unwrap();
        assert!(s.throughput_falls);
        assert_eq!(s.throughput_knee_load, 30.0);
        let usl = s.usl.unwrap();
        assert!(usl.kappa > 0.0, "{usl:?}");
        assert!((25.0..=45.0).contains(&usl.peak_load), "{usl:?}");
    }

    #[test]
    fn usl_recovers_known_parameters() {
        let truth = Usl {
            lambda: 100.0,
            sigma: 0.05,
            kappa: 0.001,
            peak_load: 0.0,
            peak_rps: 0.0,
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
        assert!(analyse(&[LoadSample {
            t: 0,
            load: 5.0,
            rps: 10.0,
            p95_ms: None
        }])
        .is_none());
    }
}
