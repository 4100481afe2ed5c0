//! What the charts, the compare and the CSV keep of one second's event streams and
//! LLM figures (`sse:` steps): a few percentiles of `llm_ttft`, `llm_itl` and
//! `llm_tpot`, the per-request tokens per second, and the counts. A second without
//! event streams keeps nothing.

use pado_metrics::SseStats;

use super::PointLatency;

/// One second's event-stream figures of one row (all `sse:` steps, or one step).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LlmPoint {
    /// Streams that ended in this second.
    pub streams: u64,
    /// Events they carried.
    pub events: u64,
    /// Of `streams`, those read as an LLM's answer.
    pub llm_streams: u64,
    /// Output tokens of those streams (the run's throughput, per second).
    pub tokens: u64,
    /// `llm_ttft` (µs); `None` when no stream of the second had a token.
    pub ttft: Option<PointLatency>,
    /// `llm_itl` (µs); `None` without a gap between two tokens.
    pub itl: Option<PointLatency>,
    /// `llm_tpot` (µs); `None` without a stream of two tokens or more.
    pub tpot: Option<PointLatency>,
    /// Median of `llm_tokens_per_s` per request (tokens/s); `None` without one.
    pub tokens_per_s_p50: Option<f64>,
}

impl LlmPoint {
    /// The figures of `e`.
    pub fn of(e: &SseStats) -> Self {
        LlmPoint {
            streams: e.streams,
            events: e.events,
            llm_streams: e.llm_streams,
            tokens: e.tokens,
            ttft: PointLatency::of(&e.ttft),
            itl: PointLatency::of(&e.itl),
            tpot: PointLatency::of(&e.tpot),
            // Thousandths of a token per second in the histogram.
            tokens_per_s_p50: (!e.tokens_per_s.is_empty())
                .then(|| e.tokens_per_s.quantile_us(0.50) as f64 / 1000.0),
        }
    }
}

/// Sums the event-stream figures of the series of one second: all of them, and
/// per step (series of one name merged, whatever their tags).
#[derive(Default)]
pub(super) struct LlmSecond {
    all: Option<SseStats>,
}

impl LlmSecond {
    /// Add one series' streams (nothing for a series without any).
    pub(super) fn add(&mut self, e: &SseStats) {
        self.all.get_or_insert_with(SseStats::default).merge(e);
    }

    /// The row of all steps; `None` when no series streamed.
    pub(super) fn point(&self) -> Option<LlmPoint> {
        self.all.as_ref().map(LlmPoint::of)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pado_metrics::SseStream;

    #[test]
    fn a_second_of_streams_keeps_their_percentiles_and_counts() {
        let mut e = SseStats::default();
        for ttft in [100_000, 200_000, 300_000] {
            e.record(&SseStream {
                events: 5,
                llm: true,
                tokens: 4,
                ttft_us: Some(ttft),
                decode_us: 30_000,
                duration_us: ttft + 30_000,
            });
            for _ in 0..3 {
                e.record_itl(10_000);
            }
        }
        let mut s = LlmSecond::default();
        assert_eq!(s.point(), None, "no streams, no point");
        s.add(&e);
        let p = s.point().expect("point");
        assert_eq!((p.streams, p.events, p.tokens), (3, 15, 12));
        let ttft = p.ttft.expect("ttft");
        assert!((ttft.p50_us as f64 - 200_000.0).abs() < 200_000.0 * 0.002);
        let itl = p.itl.expect("itl");
        assert!((itl.p50_us as f64 - 10_000.0).abs() < 10_000.0 * 0.002);
        // 10 ms per token after the first.
        assert!((p.tpot.expect("tpot").p50_us as f64 - 10_000.0).abs() < 20.0);
        // 4 tokens in 0.23 s = 17.39 tokens/s.
        assert!((p.tokens_per_s_p50.expect("tps") - 4.0 / 0.23).abs() < 0.05);
    }
}
