//! A script's own metrics (k6's `Counter`, `Gauge`, `Rate`, `Trend` from
//! `k6/metrics`, and k6's `group_duration`): one [`CustomStats`] per metric and
//! tag set per second, summed like the request series so that a run's totals, a
//! merge of generators and every report read the same exact figures.
//!
//! What each kind keeps is what k6 reports of it: a counter's sum, a gauge's last,
//! smallest and largest value, a rate's non-zero and total adds, a trend's exact
//! count, sum, min and max plus an HDR histogram of its values for percentiles.
//! A trend's values are held in the histogram in thousandths (a millisecond trend
//! in µs, as every other pado histogram), so `p(95)` is within HdrHistogram's 0.1%
//! and merges add slot by slot, never resample.

use serde::{Deserialize, Serialize};

use crate::latency::LatencyHistogram;
use crate::series::SeriesKey;

/// The four kinds of k6 metric a script can make.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CustomKind {
    /// A sum of the values added (`count`, and `rate` per second).
    Counter,
    /// The last value added, with the smallest and largest.
    Gauge,
    /// The share of adds that were non-zero.
    Rate,
    /// A distribution of the values added.
    Trend,
}

impl CustomKind {
    /// k6's name of the kind (`counter`, `gauge`, `rate`, `trend`).
    pub fn as_str(self) -> &'static str {
        match self {
            CustomKind::Counter => "counter",
            CustomKind::Gauge => "gauge",
            CustomKind::Rate => "rate",
            CustomKind::Trend => "trend",
        }
    }

    /// The kind k6 calls `name`, if any.
    pub fn parse(name: &str) -> Option<CustomKind> {
        Some(match name {
            "counter" => CustomKind::Counter,
            "gauge" => CustomKind::Gauge,
            "rate" => CustomKind::Rate,
            "trend" => CustomKind::Trend,
            _ => return None,
        })
    }
}

/// Scale of a trend's values in its histogram: thousandths, so a time trend in ms
/// is held in µs like every other pado histogram.
pub const TREND_SCALE: f64 = 1000.0;

/// One custom metric (with one set of tags) over a second, or summed over many.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomStats {
    /// The metric's name and the tags of its adds (`group`, the script's own).
    pub key: SeriesKey,
    /// Its kind.
    pub kind: CustomKind,
    /// Whether its values are times in milliseconds (`new Trend(name, true)`).
    pub is_time: bool,
    /// Values added.
    pub count: u64,
    /// Adds that were non-zero (a rate's passes).
    pub nonzero: u64,
    /// Sum of the values added (a counter's `count`, a trend's `avg` × count).
    pub sum: f64,
    /// Smallest value added (`+inf` while none).
    pub min: f64,
    /// Largest value added (`-inf` while none).
    pub max: f64,
    /// The last value added (a gauge's `value`).
    pub last: f64,
    /// When the last value was added, in µs from the run's start: across workers
    /// and seconds, the later add's value is the gauge's.
    pub last_at_us: u64,
    /// A trend's values × [`TREND_SCALE`] (negative values as 0: the histogram
    /// holds none; `min`, `max` and `avg` stay exact).
    pub hist: LatencyHistogram,
}

impl CustomStats {
    /// An empty metric `key` of `kind`.
    pub fn new(key: SeriesKey, kind: CustomKind, is_time: bool) -> Self {
        CustomStats {
            key,
            kind,
            is_time,
            count: 0,
            nonzero: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            last: 0.0,
            last_at_us: 0,
            hist: LatencyHistogram::new(),
        }
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Add one value at `at_us` (µs from the run's start). A value that is not a
    /// number (NaN) is not a measurement: it is dropped.
    #[inline]
    pub fn add(&mut self, value: f64, at_us: u64) {
        if value.is_nan() {
            return;
        }
        self.count += 1;
        if value != 0.0 {
            self.nonzero += 1;
        }
        self.sum += value;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        if at_us >= self.last_at_us {
            self.last = value;
            self.last_at_us = at_us;
        }
        if self.kind == CustomKind::Trend {
            let scaled = (value * TREND_SCALE).round();
            self.hist
                .record(if scaled > 0.0 { scaled as u64 } else { 0 });
        }
    }

    /// Add another part of the same metric (another worker, second or generator):
    /// exact for every figure; the gauge's value is the later add's.
    pub fn merge(&mut self, o: &CustomStats) {
        if o.count == 0 {
            return;
        }
        self.count = self.count.saturating_add(o.count);
        self.nonzero = self.nonzero.saturating_add(o.nonzero);
        self.sum += o.sum;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        if o.last_at_us >= self.last_at_us {
            self.last = o.last;
            self.last_at_us = o.last_at_us;
        }
        self.hist.add(&o.hist);
    }

    /// The average of the values added (`None` while none).
    pub fn avg(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }

    /// A trend's `p`-quantile (0..=1) from its histogram, in the values' unit:
    /// within HdrHistogram's 0.1% of the value, and never outside the exact
    /// smallest and largest values added.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        (self.count > 0 && !self.hist.is_empty()).then(|| {
            let v = self.hist.quantile_us(q) as f64 / TREND_SCALE;
            v.clamp(self.min.min(self.max), self.max)
        })
    }

    /// The share of non-zero adds (a rate's `rate`).
    pub fn rate(&self) -> Option<f64> {
        (self.count > 0).then(|| self.nonzero as f64 / self.count as f64)
    }
}

/// Fold `s` into the sorted list `v` (by key).
pub fn merge_custom_into(v: &mut Vec<CustomStats>, s: &CustomStats) {
    match v.binary_search_by(|x| x.key.cmp(&s.key)) {
        Ok(i) => v[i].merge(s),
        Err(i) => v.insert(i, s.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(kind: CustomKind, values: &[(f64, u64)]) -> CustomStats {
        let mut s = CustomStats::new(SeriesKey::named("지연"), kind, true);
        for &(v, at) in values {
            s.add(v, at);
        }
        s
    }

    #[test]
    fn each_kind_keeps_what_k6_reports_of_it() {
        let c = stats(CustomKind::Counter, &[(1.0, 0), (2.5, 1), (0.0, 2)]);
        assert_eq!((c.count, c.sum, c.nonzero), (3, 3.5, 2));
        let g = stats(CustomKind::Gauge, &[(5.0, 10), (1.0, 30), (9.0, 20)]);
        // The latest add (at 30 µs) is the value, whatever the order of arrival.
        assert_eq!((g.last, g.min, g.max), (1.0, 1.0, 9.0));
        let r = stats(CustomKind::Rate, &[(1.0, 0), (0.0, 0), (1.0, 0), (1.0, 0)]);
        assert_eq!(r.rate(), Some(0.75));
        let t = stats(CustomKind::Trend, &[(10.0, 0), (20.0, 0), (30.0, 0)]);
        assert_eq!(t.avg(), Some(20.0));
        // Within HdrHistogram's 0.1%; the largest value is exact (clamped to max).
        let med = t.quantile(0.5).unwrap();
        assert!((med - 20.0).abs() <= 0.02, "{med}");
        assert_eq!(t.quantile(1.0), Some(30.0));
        let q = stats(CustomKind::Trend, &[(30.0, 0), (50.0, 0), (70.0, 0)]);
        let med = q.quantile(0.5).unwrap();
        assert!((med - 50.0).abs() <= 50.0 * 0.001, "{med}");
        assert_eq!((t.min, t.max), (10.0, 30.0));
        // NaN is no measurement.
        let n = stats(CustomKind::Trend, &[(f64::NAN, 0)]);
        assert!(n.is_empty() && n.avg().is_none());
    }

    #[test]
    fn merging_parts_equals_adding_everything_to_one() {
        let values: Vec<(f64, u64)> = (0..200).map(|i| (f64::from(i) * 1.5, i as u64)).collect();
        for kind in [
            CustomKind::Counter,
            CustomKind::Gauge,
            CustomKind::Rate,
            CustomKind::Trend,
        ] {
            let whole = stats(kind, &values);
            let mut a = stats(kind, &values[..77]);
            let b = stats(kind, &values[77..]);
            // Merged in either order: the later gauge value wins, not the last merged.
            let mut b2 = b.clone();
            b2.merge(&a);
            a.merge(&b);
            for m in [&a, &b2] {
                assert_eq!(m.count, whole.count, "{kind:?}");
                assert_eq!(m.nonzero, whole.nonzero);
                assert_eq!(m.sum, whole.sum);
                assert_eq!((m.min, m.max, m.last), (whole.min, whole.max, whole.last));
                assert_eq!(m.hist, whole.hist);
            }
        }
    }
}
