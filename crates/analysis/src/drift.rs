//! Drift over a long run (soak): the slope of per-second latency over time and
//! whether it is significant. Memory leaks, pool drift and GC build-up show here
//! first, long before a threshold fails.

use serde::{Deserialize, Serialize};

use crate::noise::normal_cdf;

/// A trend of one per-second series.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    /// Change per hour, in the series' unit (ms per hour for latency).
    pub slope_per_hour: f64,
    /// Relative change over the run: slope × duration / mean.
    pub relative_change: f64,
    /// Two-sided p-value of the slope (t-test of the regression, normal approximation).
    pub p_value: f64,
    /// Whether it is worth telling: significant (p < 0.01) and the fitted change over
    /// the run is at least 10% of the mean.
    pub notable: bool,
    /// Seconds used.
    pub n: usize,
}

/// Ordinary least squares of `y` over `t` (seconds); `None` under 30 samples.
pub fn drift(samples: &[(f64, f64)]) -> Option<Drift> {
    let n = samples.len();
    if n < 30 {
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
    let sse: f64 = samples.iter().map(|s| (s.1 - a - b * s.0).powi(2)).sum();
    let se = (sse / (nf - 2.0) / sxx).sqrt();
    let p = if se > 0.0 {
        let z = (b / se).abs();
        2.0 * (1.0 - normal_cdf(z))
    } else if b != 0.0 {
        0.0
    } else {
        1.0
    };
    let span = samples.last().map(|s| s.0).unwrap_or(0.0) - samples[0].0;
    let rel = if my.abs() > 0.0 { b * span / my } else { 0.0 };
    Some(Drift {
        slope_per_hour: b * 3600.0,
        relative_change: rel,
        p_value: p.clamp(0.0, 1.0),
        notable: p < 0.01 && rel.abs() >= 0.10,
        n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(slope_per_s: f64, seed: u64) -> Vec<(f64, f64)> {
        let mut x = seed;
        (0..3600)
            .map(|t| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let noise = (x % 1000) as f64 / 1000.0 - 0.5;
                (t as f64, 50.0 + slope_per_s * t as f64 + 10.0 * noise)
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
    }
}
