//! Stability figures from the per-second series, as seed 002 tabulates them by hand:
//! throughput percentiles over seconds (the "p95" is the rate reached in 95% of the
//! seconds, so it is a low rate: how bad the worse seconds were) and the variability
//! of time to first byte from one second to the next.

use serde::{Deserialize, Serialize};

use crate::timeline::SecondPoint;

/// Throughput and TTFB stability of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stability {
    /// Full seconds the figures are computed over.
    pub seconds: u32,
    /// Requests per second reached in 50% of the seconds (the median rate).
    pub rps_p50: f64,
    /// Rate reached in 95% of the seconds.
    pub rps_p95: f64,
    /// Rate reached in 99% of the seconds.
    pub rps_p99: f64,
    /// Rate reached in 99.9% of the seconds.
    pub rps_p99_9: f64,
    /// Mean absolute change of the per-second mean TTFB between consecutive seconds, ms.
    pub ttfb_mean_abs_change_ms: f64,
    /// Coefficient of variation (stddev / mean) of the per-second mean TTFB.
    pub ttfb_cv: f64,
}

/// The rate reached in `share` of the seconds: the highest rate that at least that
/// share of the seconds reached (ascending `sorted`).
fn reached_in(sorted: &[f64], share: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let n = sorted.len();
    let need = ((share.clamp(0.0, 1.0) * n as f64) - 1e-9).ceil().max(1.0) as usize;
    sorted[n - need.min(n)]
}

/// Figures over the full seconds of a run lasting `duration_s` (the last, partial
/// second is left out so a short tail does not read as a throughput dip).
pub fn stability(points: &[SecondPoint], duration_s: f64) -> Stability {
    let full = duration_s.floor().max(0.0) as u32;
    let pts: Vec<&SecondPoint> = points.iter().filter(|p| p.t < full.max(1)).collect();
    let mut rates: Vec<f64> = pts.iter().map(|p| p.all.requests as f64).collect();
    rates.sort_by(|a, b| a.total_cmp(b));
    let ttfb: Vec<f64> = pts
        .iter()
        .filter_map(|p| p.all.ttfb_mean_us)
        .map(|us| us / 1000.0)
        .collect();
    let (mac, cv) = if ttfb.len() >= 2 {
        let changes: f64 = ttfb.windows(2).map(|w| (w[1] - w[0]).abs()).sum();
        let mean = ttfb.iter().sum::<f64>() / ttfb.len() as f64;
        let var = ttfb.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / ttfb.len() as f64;
        (
            changes / (ttfb.len() - 1) as f64,
            if mean > 0.0 { var.sqrt() / mean } else { 0.0 },
        )
    } else {
        (0.0, 0.0)
    };
    Stability {
        seconds: pts.len() as u32,
        rps_p50: reached_in(&rates, 0.50),
        rps_p95: reached_in(&rates, 0.95),
        rps_p99: reached_in(&rates, 0.99),
        rps_p99_9: reached_in(&rates, 0.999),
        ttfb_mean_abs_change_ms: mac,
        ttfb_cv: cv,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::PointStats;

    fn pt(t: u32, requests: u64, ttfb_ms: f64) -> SecondPoint {
        SecondPoint {
            t,
            all: PointStats {
                requests,
                ttfb_mean_us: Some(ttfb_ms * 1000.0),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn rate_percentiles_are_rates_reached_in_that_share_of_seconds() {
        // 100 seconds: rates 1..=100.
        let pts: Vec<SecondPoint> = (0..100).map(|t| pt(t, t as u64 + 1, 10.0)).collect();
        let s = stability(&pts, 100.4);
        assert_eq!(s.seconds, 100);
        // 50 seconds reached 51 req/s, 95 seconds reached 6, 99 reached 2.
        assert_eq!(s.rps_p50, 51.0);
        assert_eq!(s.rps_p95, 6.0);
        assert_eq!(s.rps_p99, 2.0);
        assert_eq!(s.rps_p99_9, 1.0);
        assert_eq!(s.ttfb_mean_abs_change_ms, 0.0);
        assert_eq!(s.ttfb_cv, 0.0);
    }

    #[test]
    fn ttfb_variability() {
        let pts = vec![
            pt(0, 10, 10.0),
            pt(1, 10, 20.0),
            pt(2, 10, 10.0),
            pt(3, 1, 99.0),
        ];
        // The partial last second (t = 3 of a 3.5 s run) is left out.
        let s = stability(&pts, 3.5);
        assert_eq!(s.seconds, 3);
        assert!((s.ttfb_mean_abs_change_ms - 10.0).abs() < 1e-9);
        let mean = 40.0 / 3.0;
        let sd = (((10.0 - mean) * (10.0f64 - mean)) * 2.0 + (20.0 - mean) * (20.0 - mean)) / 3.0;
        assert!((s.ttfb_cv - sd.sqrt() / mean).abs() < 1e-9);
    }
}
