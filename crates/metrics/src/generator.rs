//! How busy the load generator itself was: per worker thread and per second, the CPU
//! time it used, the time it sat runnable on a run queue without a CPU, and how late
//! its event loop woke up. A saturated or starved generator adds its own delay to every
//! latency and caps throughput, so a report must be able to say "these numbers measure
//! pado, not the target"; these are the figures it says it with.
//!
//! Workers send one [`GeneratorStats`] per [`Interval`](crate::Interval); the
//! aggregator folds them into one [`GeneratorSecond`] per
//! [`SecondRecord`](crate::SecondRecord), keeping the worst worker's figures next to
//! the sums because one saturated worker delays its VUs even while the others idle.

/// Upper bounds (µs, inclusive) of the [`LagHistogram`] buckets; the last one catches
/// everything above. Dense around the 10 ms and 50 ms lines the self-check draws, so
/// "p99 above 10 ms" is decided at a bucket boundary, not guessed inside a bucket.
pub const LAG_BUCKETS_US: [u64; 28] = [
    100,
    250,
    500,
    750,
    1_000,
    1_500,
    2_000,
    3_000,
    4_000,
    5_000,
    7_500,
    10_000,
    12_500,
    15_000,
    20_000,
    25_000,
    30_000,
    40_000,
    50_000,
    75_000,
    100_000,
    150_000,
    200_000,
    300_000,
    500_000,
    1_000_000,
    2_000_000,
    u64::MAX,
];

/// Event-loop lag samples (how late a fixed-period timer woke, µs) in fixed buckets:
/// a few hundred bytes whatever the run length, no allocation when recording, exact
/// merges across workers and seconds. Quantiles are reported as the upper bound of
/// their bucket (capped at the largest value seen): "up to", never an understatement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LagHistogram {
    /// Samples per bucket of [`LAG_BUCKETS_US`].
    pub counts: [u64; LAG_BUCKETS_US.len()],
    /// Largest sample (µs).
    pub max_us: u64,
}

impl LagHistogram {
    /// Record one wake-up that came `us` microseconds late.
    #[inline]
    pub fn record(&mut self, us: u64) {
        let i = LAG_BUCKETS_US.partition_point(|&b| b < us);
        self.counts[i.min(LAG_BUCKETS_US.len() - 1)] += 1;
        self.max_us = self.max_us.max(us);
    }

    /// Add another histogram's samples.
    pub fn merge(&mut self, o: &LagHistogram) {
        for (a, b) in self.counts.iter_mut().zip(o.counts.iter()) {
            *a += b;
        }
        self.max_us = self.max_us.max(o.max_us);
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// The value at quantile `q` (0..=1): the upper bound of the bucket holding that
    /// rank, capped at the largest sample; 0 when empty.
    pub fn quantile_us(&self, q: f64) -> u64 {
        let n = self.count();
        if n == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return LAG_BUCKETS_US[i].min(self.max_us);
            }
        }
        self.max_us
    }

    /// Bucket of an upper bound as written in result files, if it is one.
    pub fn bucket_of_bound(bound_us: u64) -> Option<usize> {
        LAG_BUCKETS_US.iter().position(|&b| b == bound_us)
    }
}

/// What one worker thread measured about itself over one interval (about a second).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GeneratorStats {
    /// Wall time the CPU figures cover (ns): from the previous reading to this one.
    pub wall_ns: u64,
    /// CPU time the thread used in that span (ns), user and system.
    pub cpu_ns: u64,
    /// Time the thread was runnable but waiting for a CPU (ns); `None` where the
    /// kernel does not tell (no `/proc/thread-self/schedstat`).
    pub wait_ns: Option<u64>,
    /// How late its event loop's probe timer woke, sample by sample.
    pub lag: LagHistogram,
}

impl GeneratorStats {
    /// Share of the span the thread was on a CPU (0..=1, a little more with clock
    /// skew between the two readings).
    pub fn busy(&self) -> f64 {
        ratio(self.cpu_ns, self.wall_ns)
    }

    /// Share of the span the thread waited on a run queue, if known.
    pub fn waiting(&self) -> Option<f64> {
        self.wait_ns.map(|w| ratio(w, self.wall_ns))
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The generator's figures for one second, merged over the workers that reported.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GeneratorSecond {
    /// Workers that reported for this second.
    pub workers: u32,
    /// Sum of the workers' measured spans (ns): what run-queue wait is a share of.
    pub wall_ns: u64,
    /// Longest span of one worker (ns), about 1 s: what CPU in cores is per. (A
    /// worker that ran out of VUs reports once more over a few ms; it must not halve
    /// the second.)
    pub span_ns: u64,
    /// CPU time of all workers (ns).
    pub cpu_ns: u64,
    /// Run-queue wait of the workers that know it (ns); `None` if none does.
    pub wait_ns: Option<u64>,
    /// Busiest worker: its CPU time over its span (0..=1).
    pub busy_max: f64,
    /// Worker that waited longest on a run queue: its wait over its span, if known.
    pub wait_max: Option<f64>,
    /// Worst worker's event-loop lag p99 this second (µs).
    pub lag_p99_us: u64,
    /// All workers' lag samples this second (its `max_us` is the worst wake-up).
    pub lag: LagHistogram,
    /// pado's own resident memory when the second closed (bytes), read once a
    /// second by the aggregator: the soak analysis checks that it stays flat.
    /// `None` where the system does not tell, and in older files.
    pub rss_bytes: Option<u64>,
}

/// This process's resident memory now (`VmRSS` of `/proc/self/status`), in bytes;
/// `None` where there is no such file.
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line
        .trim_start_matches("VmRSS:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

impl GeneratorSecond {
    /// Fold one worker's interval in.
    pub fn absorb(&mut self, g: &GeneratorStats) {
        self.workers += 1;
        self.wall_ns += g.wall_ns;
        self.span_ns = self.span_ns.max(g.wall_ns);
        self.cpu_ns += g.cpu_ns;
        if let Some(w) = g.wait_ns {
            self.wait_ns = Some(self.wait_ns.unwrap_or(0) + w);
        }
        self.busy_max = self.busy_max.max(g.busy());
        if let Some(w) = g.waiting() {
            self.wait_max = Some(self.wait_max.map_or(w, |m| m.max(w)));
        }
        self.lag_p99_us = self.lag_p99_us.max(g.lag.quantile_us(0.99));
        self.lag.merge(&g.lag);
    }

    /// Record pado's resident memory for this second (see [`resident_bytes`]).
    pub fn note_memory(&mut self) {
        self.rss_bytes = resident_bytes();
    }

    /// Wall time this second's figures cover, in seconds: the longest worker span
    /// (about 1; a few ms for the run's last flush).
    pub fn span_s(&self) -> f64 {
        self.span_ns as f64 / 1e9
    }

    /// CPU used, in cores (CPU seconds per wall second).
    pub fn cores(&self) -> f64 {
        let span = self.span_s();
        if span <= 0.0 {
            0.0
        } else {
            self.cpu_ns as f64 / 1e9 / span
        }
    }

    /// Run-queue wait over the workers' spans (0..=1), if known.
    pub fn wait_share(&self) -> Option<f64> {
        self.wait_ns.map(|w| ratio(w, self.wall_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_quantiles_are_bucket_upper_bounds_capped_at_max() {
        let mut h = LagHistogram::default();
        assert_eq!(h.quantile_us(0.99), 0);
        for _ in 0..98 {
            h.record(300); // bucket (250, 500]
        }
        h.record(11_000); // (10 000, 12 500]
        h.record(60_000); // (50 000, 75 000]
        assert_eq!(h.count(), 100);
        assert_eq!(h.quantile_us(0.5), 500);
        assert_eq!(h.quantile_us(0.99), 12_500);
        assert_eq!(h.quantile_us(1.0), 60_000);
        assert_eq!(h.max_us, 60_000);
        // Exactly on a bound goes into that bound's bucket.
        let mut b = LagHistogram::default();
        b.record(10_000);
        assert_eq!(b.counts[LagHistogram::bucket_of_bound(10_000).unwrap()], 1);
        b.record(u64::MAX);
        assert_eq!(b.counts[LAG_BUCKETS_US.len() - 1], 1);
    }

    #[test]
    fn merging_workers_keeps_the_worst_and_sums_the_rest() {
        // Worker 0 idles, worker 1 is pegged and its loop runs late.
        let mut idle = GeneratorStats {
            wall_ns: 1_000_000_000,
            cpu_ns: 50_000_000,
            wait_ns: Some(10_000_000),
            ..Default::default()
        };
        for _ in 0..100 {
            idle.lag.record(400);
        }
        let mut busy = GeneratorStats {
            wall_ns: 1_000_000_000,
            cpu_ns: 990_000_000,
            wait_ns: Some(300_000_000),
            ..Default::default()
        };
        for i in 0..20 {
            busy.lag.record(if i == 0 { 80_000 } else { 30_000 });
        }
        let mut s = GeneratorSecond::default();
        s.absorb(&idle);
        s.absorb(&busy);
        assert_eq!(s.workers, 2);
        assert_eq!(s.cpu_ns, 1_040_000_000);
        assert_eq!(s.wait_ns, Some(310_000_000));
        assert!((s.busy_max - 0.99).abs() < 1e-9, "{s:?}");
        assert!((s.wait_max.unwrap() - 0.3).abs() < 1e-9);
        assert!((s.cores() - 1.04).abs() < 1e-9);
        assert!((s.wait_share().unwrap() - 0.155).abs() < 1e-9);
        assert!((s.span_s() - 1.0).abs() < 1e-9);
        // A worker that ran out of VUs flushes once over a few ms: the second still
        // spans 1 s, and its CPU adds, not halves, the cores.
        let mut early = s;
        early.absorb(&GeneratorStats {
            wall_ns: 2_000_000,
            cpu_ns: 1_000_000,
            wait_ns: Some(0),
            ..Default::default()
        });
        assert!((early.span_s() - 1.0).abs() < 1e-9);
        assert!((early.cores() - 1.041).abs() < 1e-9, "{early:?}");
        // The busy worker's p99, not the merged one (which the idle worker's many
        // on-time samples would pull down).
        assert_eq!(s.lag_p99_us, 80_000);
        assert_eq!(s.lag.max_us, 80_000);
        assert_eq!(s.lag.count(), 120);
        // A worker that cannot read its wait leaves the known part alone.
        s.absorb(&GeneratorStats {
            wall_ns: 1_000_000_000,
            cpu_ns: 1,
            wait_ns: None,
            ..Default::default()
        });
        assert_eq!(s.wait_ns, Some(310_000_000));
        let mut unknown = GeneratorSecond::default();
        unknown.absorb(&GeneratorStats {
            wall_ns: 5,
            ..Default::default()
        });
        assert_eq!(unknown.wait_ns, None);
        assert_eq!(unknown.wait_share(), None);
    }
}
