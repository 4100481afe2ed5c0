//! HDR histograms of durations in microseconds, and the summary users read in ms.
//!
//! pado's histograms keep HdrHistogram's layout and encoding (three significant
//! digits: every percentile within 0.1% of the recorded value; the V2 form, read by
//! any HdrHistogram library) in a type of its own: all of them share one layout
//! ([`layout`]), so decoding a second of a timeline or adding two histograms is an add
//! per slot at the slot's index, over the slots that hold counts, and a histogram that
//! recorded nothing holds no memory. Merging generators' timelines decodes, adds and
//! re-encodes tens of histograms per second of the test; through the `hdrhistogram`
//! crate's API (a value per count, re-bucketed; whole arrays walked and zeroed) that
//! was most of a merge's time. The crate stays the reference the tests check this one
//! against, and reads V2 histograms of other parameters.
//!
//! The array grows to whatever values it is given, so one that only ever saw
//! sub-millisecond values stays 16 KiB, while a stalled target's 60 s timeouts still
//! fit; any u64 value has a slot.

mod codec;
mod layout;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

pub use codec::HistogramDecoder;

/// A mergeable distribution of durations (µs).
#[derive(Clone)]
pub struct LatencyHistogram {
    /// Counts of the slots `base..base + counts.len()` ([`layout::index_of`]): whole
    /// buckets from the lowest to the highest that held a value, none until the
    /// first. A second's durations usually fall in one or two buckets (8 KiB each),
    /// not the 70 KiB of every slot from 0 up.
    counts: Vec<u64>,
    /// Slot of `counts[0]`.
    base: usize,
    /// Values recorded.
    total: u64,
    /// Lowest slot with a count (`usize::MAX` while empty).
    min_idx: usize,
    /// Highest slot with a count (0 while empty).
    max_idx: usize,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for LatencyHistogram {
    /// Equal when they hold the same recorded values (whatever their allocated size).
    fn eq(&self, other: &Self) -> bool {
        self.total == other.total
            && (self.total == 0
                || (self.min_idx == other.min_idx
                    && self.max_idx == other.max_idx
                    && self.filled() == other.filled()))
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
    /// An empty histogram (no memory held until the first value).
    pub fn new() -> Self {
        LatencyHistogram {
            counts: Vec::new(),
            base: 0,
            total: 0,
            min_idx: usize::MAX,
            max_idx: 0,
        }
    }

    /// Record one duration. Never fails: every u64 value has a slot.
    #[inline]
    pub fn record(&mut self, us: u64) {
        self.add_at(layout::index_of(us), 1);
    }

    /// Add `n` (> 0) values at slot `i` (< [`layout::MAX_LEN`]).
    #[inline]
    fn add_at(&mut self, i: usize, n: u64) {
        let mut j = i.wrapping_sub(self.base);
        if j >= self.counts.len() {
            self.grow(i, i);
            j = i - self.base;
        }
        self.counts[j] = self.counts[j].saturating_add(n);
        self.min_idx = self.min_idx.min(i);
        self.max_idx = self.max_idx.max(i);
        self.total = self.total.saturating_add(n);
    }

    /// Make room for the slots `lo..=hi` (and every slot between them and those
    /// held): whole buckets, in one allocation.
    #[cold]
    fn grow(&mut self, lo: usize, hi: usize) {
        let start = layout::bucket_slots(lo).0;
        let end = layout::bucket_slots(hi).1;
        if self.counts.is_empty() {
            self.base = start;
            self.counts.resize(end - start, 0);
            return;
        }
        let held_end = self.base + self.counts.len();
        let (start, end) = (start.min(self.base), end.max(held_end));
        if start < self.base {
            let mut wider = vec![0u64; end - start];
            wider[self.base - start..held_end - start].copy_from_slice(&self.counts);
            self.counts = wider;
            self.base = start;
        } else if end > held_end {
            self.counts.resize(end - self.base, 0);
        }
    }

    /// Whether slot `i` has room.
    #[inline]
    fn holds(&self, i: usize) -> bool {
        i.wrapping_sub(self.base) < self.counts.len()
    }

    /// Add counts at slots, ascending, each below [`layout::MAX_LEN`] and above 0:
    /// a decoded histogram, with one check for room.
    fn add_slots(&mut self, slots: &[(u32, u64)]) {
        let (Some(first), Some(last)) = (slots.first(), slots.last()) else {
            return;
        };
        let (lo, hi) = (first.0 as usize, last.0 as usize);
        if !self.holds(lo) || !self.holds(hi) {
            self.grow(lo, hi);
        }
        let counts = &mut self.counts[lo - self.base..=hi - self.base];
        let mut total = 0u64;
        for &(i, n) in slots {
            let c = &mut counts[i as usize - lo];
            *c = c.saturating_add(n);
            total = total.saturating_add(n);
        }
        self.min_idx = self.min_idx.min(lo);
        self.max_idx = self.max_idx.max(hi);
        self.total = self.total.saturating_add(total);
    }

    /// The slots from the lowest to the highest with a count (empty while empty).
    fn filled(&self) -> &[u64] {
        if self.total == 0 {
            &[]
        } else {
            &self.counts[self.min_idx - self.base..=self.max_idx - self.base]
        }
    }

    /// Add another histogram's counts (exact merge).
    pub fn add(&mut self, other: &LatencyHistogram) {
        if other.total == 0 {
            return;
        }
        let (lo, hi) = (other.min_idx, other.max_idx);
        if !self.holds(lo) || !self.holds(hi) {
            self.grow(lo, hi);
        }
        let at = lo - self.base;
        for (a, b) in self.counts[at..=hi - self.base]
            .iter_mut()
            .zip(other.filled())
        {
            *a = a.saturating_add(*b);
        }
        self.min_idx = self.min_idx.min(lo);
        self.max_idx = self.max_idx.max(hi);
        self.total = self.total.saturating_add(other.total);
    }

    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Value at quantile `q` (0..=1) in µs: the highest value of the class that holds
    /// the `⌈q·n⌉`-th smallest value (the lowest for `q = 0`), as HdrHistogram says it.
    pub fn quantile_us(&self, q: f64) -> u64 {
        self.quantiles_us([q])[0]
    }

    /// Values at several ascending quantiles in one walk over the counts (the report
    /// asks for four or five of each histogram it shows).
    pub fn quantiles_us<const N: usize>(&self, qs: [f64; N]) -> [u64; N] {
        let mut out = [0u64; N];
        if self.total == 0 {
            return out;
        }
        let want = qs.map(|q| {
            let q = if q > 1.0 { 1.0 } else { q };
            ((q * self.total as f64).ceil() as u64).max(1)
        });
        let (mut k, mut next) = (0, want.first().copied().unwrap_or(0));
        let mut seen = 0u64;
        for (off, c) in self.filled().iter().enumerate() {
            seen = seen.saturating_add(*c);
            if seen < next {
                continue;
            }
            while k < N && seen >= want[k] {
                let i = self.min_idx + off;
                out[k] = if qs[k] == 0.0 {
                    layout::lowest_at(i)
                } else {
                    layout::highest_at(i)
                };
                k += 1;
            }
            if k == N {
                break;
            }
            next = want[k];
        }
        out
    }

    /// Mean in µs: each value counted at the middle of its class (as HdrHistogram
    /// does), summed exactly in integers, so it is the same number whichever way the
    /// histogram was built.
    pub fn mean_us(&self) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        // Bucket by bucket: a slot's middle is (sub-bucket << bucket) + half the
        // class, so a bucket's share is (Σ sub·count) << bucket + half · Σ count, with
        // no per-slot branch or shift.
        let mut sum = 0u128;
        let (end, mut i) = (self.max_idx + 1, self.min_idx);
        while i < end {
            let stop = layout::bucket_slots(i).1.min(end);
            let shift = layout::bucket_of_index(i);
            let first_sub = u128::from(layout::lowest_at(i) >> shift);
            let slots = &self.counts[i - self.base..stop - self.base];
            let (n, subs) = if self.total < 1 << 52 {
                // A sub-bucket is below 2^11, so no sum of sub·count over fewer
                // than 2^52 values passes 2^63: adds in u64.
                let (mut n, mut weighted) = (0u64, 0u64);
                for (k, c) in slots.iter().enumerate() {
                    n += *c;
                    weighted += k as u64 * *c;
                }
                (
                    u128::from(n),
                    u128::from(weighted) + first_sub * u128::from(n),
                )
            } else {
                let (mut n, mut subs) = (0u128, 0u128);
                for (k, c) in slots.iter().enumerate() {
                    let c = u128::from(*c);
                    n += c;
                    subs += (first_sub + k as u128) * c;
                }
                (n, subs)
            };
            sum = sum.saturating_add((subs << shift) + n * u128::from((1u64 << shift) >> 1));
            i = stop;
        }
        sum as f64 / self.total as f64
    }

    /// Smallest recorded value in µs (the lowest of its class).
    pub fn min_us(&self) -> u64 {
        if self.total == 0 {
            0
        } else {
            layout::lowest_at(self.min_idx)
        }
    }

    /// Largest recorded value (the highest of its class) in µs.
    pub fn max_us(&self) -> u64 {
        if self.total == 0 {
            0
        } else {
            layout::highest_at(self.max_idx)
        }
    }

    /// Share of recorded values strictly above `us` (0..=1): values in `us`'s own
    /// class count as not above.
    pub fn share_above_us(&self, us: u64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let at = layout::index_of(us);
        if at < self.min_idx {
            return 1.0;
        }
        let below: u64 = self.counts[self.min_idx - self.base..=at.min(self.max_idx) - self.base]
            .iter()
            .fold(0u64, |a, c| a.saturating_add(*c));
        1.0 - below as f64 / self.total as f64
    }

    /// Values recorded at or below `us` (values in `us`'s own class count as at or
    /// below, as [`LatencyHistogram::share_above_us`] counts them): the cumulative
    /// bucket counts of a Prometheus classic histogram, exact in whole counts.
    pub fn count_at_or_below_us(&self, us: u64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let at = layout::index_of(us);
        if at < self.min_idx {
            return 0;
        }
        self.counts[self.min_idx - self.base..=at.min(self.max_idx) - self.base]
            .iter()
            .fold(0u64, |a, c| a.saturating_add(*c))
    }

    /// The summary users read, in milliseconds.
    pub fn summary(&self) -> LatencySummary {
        if self.total == 0 {
            return LatencySummary::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        let [p50, p90, p95, p99, p99_9] = self.quantiles_us([0.50, 0.90, 0.95, 0.99, 0.999]);
        LatencySummary {
            min: ms(self.min_us()),
            mean: self.mean_us() / 1000.0,
            p50: ms(p50),
            p90: ms(p90),
            p95: ms(p95),
            p99: ms(p99),
            p99_9: ms(p99_9),
            max: ms(self.max_us()),
        }
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
