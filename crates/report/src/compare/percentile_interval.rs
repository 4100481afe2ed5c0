//! How sure a run's percentile is of itself: the p99 of 500 requests is the fifth
//! slowest, and another run of the same server puts a different request there. A
//! percentile row is called better or worse only when the two runs' 95% intervals
//! of that percentile do not overlap; otherwise another draw of the same
//! requests could have given the other figure.
//!
//! The interval is the distribution-free one of order statistics: the values at
//! ranks `n·q ∓ 1.96·√(n·q·(1−q))` of the run's `n` requests, read from the run's
//! histogram of the whole run.

use pado_metrics::{LatencyHistogram, Phase};

use super::{CompareRow, Side, Verdict};

/// The 95% interval, in ms, of the `q`-quantile of the values in `h`.
pub(super) fn interval_ms(h: &LatencyHistogram, q: f64) -> Option<(f64, f64)> {
    let n = h.count() as f64;
    if n == 0.0 {
        return None;
    }
    let half = 1.96 * (n * q * (1.0 - q)).sqrt();
    let lo = ((n * q - half) / n).clamp(0.0, 1.0);
    let hi = ((n * q + half + 1.0) / n).clamp(0.0, 1.0);
    let [a, b] = h.quantiles_us([lo, hi]);
    Some((a as f64 / 1000.0, b as f64 / 1000.0))
}

/// The phase and quantile an overall percentile row shows.
fn of_row(r: &CompareRow) -> Option<(Phase, f64)> {
    if r.scope != "overall" {
        return None;
    }
    Some(match r.metric.as_str() {
        "latency p50 ms" => (Phase::Duration, 0.50),
        "latency p95 ms" => (Phase::Duration, 0.95),
        "latency p99 ms" => (Phase::Duration, 0.99),
        "ttfb p50 ms" => (Phase::Waiting, 0.50),
        "ttfb p95 ms" => (Phase::Waiting, 0.95),
        "ttfb p99 ms" => (Phase::Waiting, 0.99),
        _ => return None,
    })
}

/// Turns a better, worse, few-seconds or mixed verdict on an overall percentile
/// into "within noise" when the baseline's and the candidate's intervals of it
/// overlap.
pub(super) fn apply(rows: &mut [CompareRow], sides: &[Side<'_>]) {
    if sides.len() < 2 {
        return;
    }
    let overall: Vec<_> = sides.iter().map(|s| s.run.totals.overall()).collect();
    for r in rows {
        let Some((phase, q)) = of_row(r) else {
            continue;
        };
        let intervals: Vec<_> = overall
            .iter()
            .map(|o| interval_ms(o.phase(phase), q))
            .collect();
        hold_back_overlapping(r, &intervals);
    }
}

/// The rule itself, for any percentile row: `intervals` holds each run's 95%
/// interval of the row's percentile (baseline first); a decided verdict whose
/// candidate interval overlaps the baseline's becomes "within noise".
pub(super) fn hold_back_overlapping(r: &mut CompareRow, intervals: &[Option<(f64, f64)>]) {
    let Some(Some((blo, bhi))) = intervals.first().copied() else {
        return;
    };
    for (i, v) in r.verdicts.iter_mut().enumerate() {
        let decided = matches!(
            v,
            Verdict::Better | Verdict::Worse | Verdict::FewSeconds | Verdict::Mixed
        );
        let Some(Some((clo, chi))) = intervals.get(i + 1).copied() else {
            continue;
        };
        if decided && clo <= bhi && blo <= chi {
            *v = Verdict::WithinNoise;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_the_order_statistics_one() {
        // 1000 requests of 1, 2, ..., 1000 ms: the p99's ranks are 990 ∓ 1.96·√9.9
        // = 983.8 … 997.2 (+1), so about 984 ms to 998 ms (histogram classes are
        // within 0.1% of a value).
        let mut h = LatencyHistogram::new();
        for ms in 1..=1000u64 {
            h.record(ms * 1000);
        }
        let (lo, hi) = interval_ms(&h, 0.99).unwrap();
        assert!((lo - 984.0).abs() <= 1.5, "{lo}");
        assert!((hi - 998.0).abs() <= 1.5, "{hi}");
        // The median of 1000: 500 ∓ 31.
        let (lo, hi) = interval_ms(&h, 0.5).unwrap();
        assert!(
            (lo - 469.0).abs() <= 1.5 && (hi - 532.0).abs() <= 1.5,
            "{lo} {hi}"
        );
        // Ten values: the p99's interval reaches the top, and nothing has none.
        let mut few = LatencyHistogram::new();
        for ms in 1..=10u64 {
            few.record(ms * 1000);
        }
        assert!((interval_ms(&few, 0.99).unwrap().1 - 10.0).abs() < 0.05);
        assert_eq!(interval_ms(&LatencyHistogram::new(), 0.99), None);
    }
}
