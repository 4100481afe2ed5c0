//! HDR histograms of durations in microseconds, and the summary users read in ms.
//!
//! Histograms auto-resize, so one that only ever saw sub-millisecond values stays a few
//! KiB, while a stalled target's 60 s timeouts still fit. Three significant digits keep
//! every percentile within 0.1% of the recorded value.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Significant digits kept by every latency histogram.
const SIGFIG: u8 = 3;

/// A mergeable distribution of durations (µs).
#[derive(Clone)]
pub struct LatencyHistogram {
    h: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for LatencyHistogram {
    /// Equal when they hold the same recorded values (whatever their allocated size).
    fn eq(&self, other: &Self) -> bool {
        self.h.len() == other.h.len()
            && self
                .h
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .eq(other
                    .h
                    .iter_recorded()
                    .map(|v| (v.value_iterated_to(), v.count_at_value())))
    }
}

impl std::fmt::Debug for LatencyHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "LatencyHistogram(n={}, min={}us, max={}us)",
            self.count(),
            self.min_us(),
            self.max_us()
        )
    }
}

impl LatencyHistogram {
    /// An empty histogram that grows to whatever values it is given.
    pub fn new() -> Self {
        let mut h = Histogram::<u64>::new(SIGFIG).expect("3 significant digits is valid");
        h.auto(true);
        LatencyHistogram { h }
    }

    /// Record one duration. Never fails: auto-resize covers any u64 value that
    /// HdrHistogram can hold; an absurd value is clamped rather than lost.
    #[inline]
    pub fn record(&mut self, us: u64) {
        if self.h.record(us).is_err() {
            let _ = self.h.record(self.h.high());
        }
    }

    /// Add another histogram's counts (exact merge).
    pub fn add(&mut self, other: &LatencyHistogram) {
        if other.h.is_empty() {
            return;
        }
        // Both auto-resize, so adding cannot run out of range.
        let _ = self.h.add(&other.h);
    }

    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        self.h.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.h.is_empty()
    }

    /// Value at quantile `q` (0..=1) in µs.
    pub fn quantile_us(&self, q: f64) -> u64 {
        self.h.value_at_quantile(q)
    }

    /// Mean in µs.
    pub fn mean_us(&self) -> f64 {
        self.h.mean()
    }

    /// Smallest recorded value in µs.
    pub fn min_us(&self) -> u64 {
        self.h.min()
    }

    /// Largest recorded value (highest equivalent value) in µs.
    pub fn max_us(&self) -> u64 {
        if self.h.is_empty() {
            0
        } else {
            self.h.highest_equivalent(self.h.max())
        }
    }

    /// Share of recorded values strictly above `us` (0..=1).
    pub fn share_above_us(&self, us: u64) -> f64 {
        if self.h.is_empty() {
            return 0.0;
        }
        let below = self.h.count_between(0, us);
        1.0 - below as f64 / self.h.len() as f64
    }

    /// The summary users read, in milliseconds.
    pub fn summary(&self) -> LatencySummary {
        if self.h.is_empty() {
            return LatencySummary::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        LatencySummary {
            min: ms(self.min_us()),
            mean: self.mean_us() / 1000.0,
            p50: ms(self.quantile_us(0.50)),
            p90: ms(self.quantile_us(0.90)),
            p95: ms(self.quantile_us(0.95)),
            p99: ms(self.quantile_us(0.99)),
            p99_9: ms(self.quantile_us(0.999)),
            max: ms(self.max_us()),
        }
    }

    /// Compact text form (HdrHistogram V2 deflate, base64): the form HdrHistogram
    /// interval logs use, so the per-second files stay small and exact.
    /// An error when the histogram cannot be serialised: never written as an empty
    /// histogram, which would silently lose its samples.
    pub fn encode(&self) -> Result<String, String> {
        let mut buf = Vec::new();
        let mut ser = V2DeflateSerializer::new();
        ser.serialize(&self.h, &mut buf).map_err(|e| {
            format!(
                "histogram of {} values does not encode: {e:?}",
                self.h.len()
            )
        })?;
        Ok(base64::engine::general_purpose::STANDARD.encode(buf))
    }

    /// Inverse of [`LatencyHistogram::encode`]. An empty string is an empty histogram.
    pub fn decode(s: &str) -> Result<Self, String> {
        if s.is_empty() {
            return Ok(Self::new());
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(|e| format!("histogram is not base64: {e}"))?;
        let mut h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut &bytes[..])
            .map_err(|e| format!("histogram does not decode: {e:?}"))?;
        h.auto(true);
        Ok(LatencyHistogram { h })
    }
}

/// Latency statistics in milliseconds, with the exact key names of `summary.json`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Smallest value.
    pub min: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p99_9: f64,
    /// Largest value.
    pub max: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut h = LatencyHistogram::new();
        for v in 1..=10_000u64 {
            h.record(v * 100); // 0.1 ms .. 1000 ms
        }
        let s = h.summary();
        assert!((s.p50 - 500.0).abs() / 500.0 < 0.002, "{s:?}");
        assert!((s.p99 - 990.0).abs() / 990.0 < 0.002, "{s:?}");
        assert!((s.min - 0.1).abs() < 1e-9);
        assert!((s.max - 1000.0).abs() / 1000.0 < 0.002);
        assert!((s.mean - 500.05).abs() < 1.0);
    }

    #[test]
    fn encode_decode_round_trip_and_merge_is_exact() {
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        for v in 0..1000u64 {
            a.record(v);
            b.record(v * 7 + 3_000_000);
        }
        let a2 = LatencyHistogram::decode(&a.encode().unwrap()).unwrap();
        assert_eq!(a, a2);
        let mut m = a2.clone();
        m.add(&LatencyHistogram::decode(&b.encode().unwrap()).unwrap());
        assert_eq!(m.count(), 2000);
        assert_eq!(m.max_us(), b.max_us());
        assert!(LatencyHistogram::decode("").unwrap().is_empty());
        assert!(LatencyHistogram::decode("not base64!").is_err());
    }

    #[test]
    fn share_above() {
        let mut h = LatencyHistogram::new();
        for v in 1..=100u64 {
            h.record(v * 1000);
        }
        let s = h.share_above_us(80_000);
        assert!((s - 0.2).abs() < 0.011, "{s}");
    }
}
