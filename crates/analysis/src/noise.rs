//! Telling change from noise between two runs: a Mann-Whitney U test on per-second
//! samples (throughput, latency percentiles, error rate of each second). It assumes
//! no distribution, which per-second latencies rarely follow, and is robust to the
//! outlier seconds every load test has.

use serde::Serialize;

/// The verdict on one metric between a baseline and a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Shift {
    /// Two-sided p-value of the rank test (1.0 when there are too few samples).
    pub p_value: f64,
    /// Whether the difference is significant at `alpha`.
    pub significant: bool,
    /// Samples on each side.
    pub n: (usize, usize),
}

/// The method's name, printed with every comparison.
pub const METHOD: &str = "Mann-Whitney U test on per-second values, two-sided, α = 0.05";

/// Significance level.
pub const ALPHA: f64 = 0.05;

/// Standard normal CDF (Abramowitz–Stegun 7.1.26 via erf), accurate to ~1e-7.
pub(crate) fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-x * x).exp();
    let erf = y;
    if z >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

/// Lag-1 autocorrelation of a series (0 for fewer than 3 values or a flat series).
///
/// Per-second figures of a load test are not independent: a slow second is usually
/// followed by another (a GC pause, a queue draining). Tests that treat them as
/// independent samples come out far too sure of themselves.
pub fn lag1_autocorrelation(values: &[f64]) -> f64 {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    let n = v.len();
    if n < 3 {
        return 0.0;
    }
    let m = v.iter().sum::<f64>() / n as f64;
    let var: f64 = v.iter().map(|x| (x - m).powi(2)).sum();
    if var <= 0.0 {
        return 0.0;
    }
    let cov: f64 = v.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum();
    (cov / var).clamp(-1.0, 1.0)
}

/// How many independent samples a series of `n` autocorrelated values is worth:
/// `n · (1 − r₁) / (1 + r₁)` for an AR(1) process with lag-1 autocorrelation `r₁`
/// (negative `r₁` is taken as 0, so the answer is never above `n`). Used by the rank
/// test and the drift regression so that their p-values account for runs of similar
/// seconds.
pub fn effective_sample_size(values: &[f64]) -> f64 {
    let n = values.iter().filter(|x| x.is_finite()).count() as f64;
    let r = lag1_autocorrelation(values).clamp(0.0, 0.99);
    (n * (1.0 - r) / (1.0 + r)).min(n)
}

/// Mann-Whitney U test with the normal approximation and tie correction.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Shift {
    let (n1, n2) = (a.len(), b.len());
    if n1 < 3 || n2 < 3 {
        return Shift {
            p_value: 1.0,
            significant: false,
            n: (n1, n2),
        };
    }
    let mut all: Vec<(f64, u8)> = a
        .iter()
        .map(|v| (*v, 0u8))
        .chain(b.iter().map(|v| (*v, 1u8)))
        .filter(|(v, _)| v.is_finite())
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let mut ranks = vec![0.0; n];
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let r = (i + j) as f64 / 2.0 + 1.0;
        for x in ranks.iter_mut().take(j + 1).skip(i) {
            *x = r;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    let r1: f64 = all
        .iter()
        .zip(&ranks)
        .filter(|((_, g), _)| *g == 0)
        .map(|(_, r)| r)
        .sum();
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let u1 = r1 - n1f * (n1f + 1.0) / 2.0;
    let mean = n1f * n2f / 2.0;
    let nf = n as f64;
    let var = n1f * n2f / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0)));
    if var <= 0.0 {
        return Shift {
            p_value: 1.0,
            significant: false,
            n: (n1, n2),
        };
    }
    // Continuity correction.
    let z = ((u1 - mean).abs() - 0.5).max(0.0) / var.sqrt();
    let p = (2.0 * (1.0 - normal_cdf(z))).clamp(0.0, 1.0);
    Shift {
        p_value: p,
        significant: p < ALPHA,
        n: (n1, n2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noisy(seed: u64, n: usize, mean: f64, sd: f64) -> Vec<f64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                // Sum of 12 uniforms - 6: approximately normal.
                let mut s = 0.0;
                for _ in 0..12 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    s += (x % 1_000_000) as f64 / 1_000_000.0;
                }
                mean + (s - 6.0) * sd
            })
            .collect()
    }

    #[test]
    fn same_distribution_is_within_noise() {
        let mut false_alarms = 0;
        for seed in 1..=40u64 {
            let a = noisy(seed, 60, 1000.0, 50.0);
            let b = noisy(seed * 7919 + 3, 60, 1000.0, 50.0);
            if mann_whitney(&a, &b).significant {
                false_alarms += 1;
            }
        }
        // α = 0.05: a few of 40 may come out significant by chance, not many.
        assert!(false_alarms <= 6, "{false_alarms}");
    }

    #[test]
    fn a_ten_percent_shift_is_significant() {
        let a = noisy(11, 60, 1000.0, 50.0);
        let b = noisy(12, 60, 1100.0, 50.0);
        let s = mann_whitney(&a, &b);
        assert!(s.significant, "{s:?}");
        assert!(s.p_value < 1e-6, "{s:?}");
    }

    #[test]
    fn ties_and_tiny_samples() {
        let s = mann_whitney(&[1.0, 1.0, 1.0, 1.0], &[1.0, 1.0, 1.0, 1.0]);
        assert!(!s.significant);
        assert_eq!(mann_whitney(&[1.0], &[2.0]).p_value, 1.0);
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-9);
        assert!((normal_cdf(1.96) - 0.975).abs() < 1e-4);
    }

    #[test]
    fn autocorrelated_series_are_worth_fewer_samples() {
        // White noise: close to n.
        let white = noisy(5, 400, 100.0, 10.0);
        let ess = effective_sample_size(&white);
        assert!(ess > 300.0 && ess <= 400.0, "{ess}");
        // AR(1) with φ = 0.9: about n·0.1/1.9 ≈ n/19.
        let mut x = 0.0;
        let ar: Vec<f64> = white
            .iter()
            .map(|e| {
                x = 0.9 * x + (e - 100.0);
                x
            })
            .collect();
        let r = lag1_autocorrelation(&ar);
        assert!((r - 0.9).abs() < 0.06, "{r}");
        let ess = effective_sample_size(&ar);
        assert!(ess > 10.0 && ess < 40.0, "{ess}");
        // Flat and tiny series.
        assert_eq!(lag1_autocorrelation(&[3.0; 10]), 0.0);
        assert_eq!(effective_sample_size(&[1.0, 2.0]), 2.0);
    }
}
