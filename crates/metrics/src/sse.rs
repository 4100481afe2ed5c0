//! Event streams of a step (`sse:` steps) and, when they are an LLM's answer
//! (`llm: true`), the figures LLM serving is judged by, in the words of vLLM's
//! `benchmark_serving` and NVIDIA's genai-perf: `llm_ttft` (time to first token),
//! `llm_itl` (inter-token latency, every gap between two tokens), `llm_tpot` (time
//! per output token after the first, one value per request), `llm_output_tokens`
//! (per request, and their sum), `llm_tokens_per_s` (per request) and, when pado
//! set the prompt's length (`sse.prompt`), `llm_input_tokens` (per request, the
//! prompt's tokens as pado counted what it sent). They ride in
//! their step's [`crate::SeriesStats`] (as [`crate::SeriesStats::sse`]), so they
//! travel the same per-second intervals, timeline lines, exact merges and totals as
//! the HTTP figures; a series without streams pays one `None`.

use crate::LatencyHistogram;

/// One finished event stream, as the engine measured it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SseStream {
    /// Events dispatched.
    pub events: u64,
    /// Whether its events were read as an LLM's tokens (the rest is zero otherwise).
    pub llm: bool,
    /// Output tokens: the server's `usage` count when it sent one, else the events
    /// that carried token text.
    pub tokens: u64,
    /// From the request's start to the first token (µs); `None` without a token.
    pub ttft_us: Option<u64>,
    /// From the first token to the last (µs): with `tokens`, the time per output
    /// token after the first.
    pub decode_us: u64,
    /// From the request's start to the end of the stream (µs).
    pub duration_us: u64,
}

impl SseStream {
    /// `llm_tpot` (µs): the decode time over the tokens after the first; `None`
    /// for fewer than two tokens (no gap to divide).
    pub fn tpot_us(&self) -> Option<u64> {
        (self.tokens >= 2).then(|| self.decode_us / (self.tokens - 1))
    }

    /// `llm_tokens_per_s` of this request, in thousandths (a histogram holds
    /// integers): output tokens over the stream's whole time.
    pub fn tokens_per_s_milli(&self) -> Option<u64> {
        (self.tokens > 0 && self.duration_us > 0)
            .then(|| self.tokens.saturating_mul(1_000_000_000) / self.duration_us)
    }
}

/// The event-stream figures of one step over some span.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SseStats {
    /// Streams ended (`sse_streams`), whatever their outcome.
    pub streams: u64,
    /// Events dispatched (`sse_events`).
    pub events: u64,
    /// Of `streams`, those read as an LLM's answer (`llm_requests`).
    pub llm_streams: u64,
    /// Output tokens, summed (`llm_output_tokens`' count).
    pub tokens: u64,
    /// `llm_ttft` (µs), one value per stream with a token.
    pub ttft: LatencyHistogram,
    /// `llm_itl` (µs), one value per gap between two tokens.
    pub itl: LatencyHistogram,
    /// `llm_tpot` (µs), one value per stream with two tokens or more.
    pub tpot: LatencyHistogram,
    /// `llm_output_tokens` per stream, in thousandths of a token (as
    /// `tokens_per_s`: a summary of it reads in tokens).
    pub output_tokens: LatencyHistogram,
    /// `llm_tokens_per_s` per stream, in thousandths of a token per second.
    pub tokens_per_s: LatencyHistogram,
    /// `llm_input_tokens` per stream whose prompt pado sized (`sse.prompt`), in
    /// thousandths of a token (as `output_tokens`): the prompt lengths a run's
    /// time to first token is read against.
    pub input_tokens: LatencyHistogram,
}

impl SseStats {
    /// Add one ended stream (its gaps between tokens are added as they happen,
    /// [`SseStats::record_itl`]).
    pub fn record(&mut self, s: &SseStream) {
        self.streams += 1;
        self.events += s.events;
        if !s.llm {
            return;
        }
        self.llm_streams += 1;
        self.tokens += s.tokens;
        self.output_tokens.record(s.tokens.saturating_mul(1000));
        if let Some(t) = s.ttft_us {
            self.ttft.record(t);
        }
        if let Some(t) = s.tpot_us() {
            self.tpot.record(t);
        }
        if let Some(r) = s.tokens_per_s_milli() {
            self.tokens_per_s.record(r);
        }
    }

    /// Add one gap between two tokens (µs).
    #[inline]
    pub fn record_itl(&mut self, us: u64) {
        self.itl.record(us);
    }

    /// Add the input tokens of one LLM stream whose prompt pado sized.
    #[inline]
    pub fn record_input_tokens(&mut self, tokens: u64) {
        self.input_tokens.record(tokens.saturating_mul(1000));
    }

    /// Add another span's figures of the same step: counts add, histograms merge
    /// exactly (HdrHistogram's buckets), so a merged run's figures are those of one
    /// run that made every request.
    pub fn merge(&mut self, o: &SseStats) {
        self.streams = self.streams.saturating_add(o.streams);
        self.events = self.events.saturating_add(o.events);
        self.llm_streams = self.llm_streams.saturating_add(o.llm_streams);
        self.tokens = self.tokens.saturating_add(o.tokens);
        for (a, b) in self.hists_mut().into_iter().zip(o.hists()) {
            a.add(b.1);
        }
    }

    /// The histograms with their names on the wire, in a fixed order.
    pub fn hists(&self) -> [(&'static str, &LatencyHistogram); 6] {
        [
            ("ttft", &self.ttft),
            ("itl", &self.itl),
            ("tpot", &self.tpot),
            ("output_tokens", &self.output_tokens),
            ("tokens_per_s", &self.tokens_per_s),
            ("input_tokens", &self.input_tokens),
        ]
    }

    /// The histograms, mutable, in [`SseStats::hists`]' order.
    pub fn hists_mut(&mut self) -> [&mut LatencyHistogram; 6] {
        [
            &mut self.ttft,
            &mut self.itl,
            &mut self.tpot,
            &mut self.output_tokens,
            &mut self.tokens_per_s,
            &mut self.input_tokens,
        ]
    }

    /// Whether the counters agree: LLM streams among streams, one
    /// `llm_output_tokens` value per LLM stream, at most one `llm_input_tokens`
    /// value per LLM stream. A file whose counts do not is corrupt.
    pub fn check_consistent(&self) -> Result<(), String> {
        if self.llm_streams > self.streams
            || self.output_tokens.count() != self.llm_streams
            || self.input_tokens.count() > self.llm_streams
        {
            return Err(format!(
                "event streams: {} LLM streams of {} with {} token counts (corrupt counters)",
                self.llm_streams,
                self.streams,
                self.output_tokens.count()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(tokens: u64, ttft_us: u64, gap_us: u64) -> SseStream {
        let decode_us = gap_us * tokens.saturating_sub(1);
        SseStream {
            events: tokens + 1,
            llm: true,
            tokens,
            ttft_us: (tokens > 0).then_some(ttft_us),
            decode_us,
            duration_us: ttft_us + decode_us,
        }
    }

    #[test]
    fn tpot_and_rate_of_one_stream() {
        // 11 tokens: first at 200 ms, then one every 20 ms: 200 ms of decode.
        let s = stream(11, 200_000, 20_000);
        assert_eq!(s.tpot_us(), Some(20_000));
        // 11 tokens in 0.4 s = 27.5 tokens/s.
        assert_eq!(s.tokens_per_s_milli(), Some(27_500));
        assert_eq!(stream(1, 5, 0).tpot_us(), None, "one token has no gap");
        assert_eq!(stream(0, 0, 0).tokens_per_s_milli(), None);
    }

    #[test]
    fn merged_spans_equal_one_span_with_every_stream() {
        let all = [
            stream(10, 100_000, 10_000),
            stream(3, 50_000, 30_000),
            stream(0, 0, 0),
        ];
        let mut one = SseStats::default();
        let (mut a, mut b) = (SseStats::default(), SseStats::default());
        for (i, s) in all.iter().enumerate() {
            one.record(s);
            if i % 2 == 0 { &mut a } else { &mut b }.record(s);
        }
        one.record(&SseStream {
            events: 4,
            ..Default::default()
        });
        b.record(&SseStream {
            events: 4,
            ..Default::default()
        });
        a.merge(&b);
        assert_eq!(a, one);
        assert_eq!(a.tokens, 13);
        assert_eq!(a.streams, 4);
        assert_eq!(a.llm_streams, 3);
        assert_eq!(a.events, 11 + 4 + 1 + 4);
        a.check_consistent().unwrap();
        a.llm_streams += 1;
        assert!(a.check_consistent().is_err());
    }

    #[test]
    fn input_tokens_merge_exactly_and_never_outnumber_the_streams() {
        let (mut a, mut b) = (SseStats::default(), SseStats::default());
        a.record(&stream(4, 10, 1));
        a.record_input_tokens(100);
        b.record(&stream(4, 10, 1));
        b.record_input_tokens(1_000);
        // A stream whose prompt pado did not size has no input tokens.
        b.record(&stream(4, 10, 1));
        a.merge(&b);
        assert_eq!(a.input_tokens.count(), 2);
        let s = a.input_tokens.summary();
        assert!((99.9..=100.1).contains(&s.min), "{s:?}");
        assert!((999.0..=1001.0).contains(&s.max), "{s:?}");
        a.check_consistent().unwrap();
        a.record_input_tokens(5);
        a.record_input_tokens(5);
        assert!(
            a.check_consistent().is_err(),
            "4 input counts for 3 streams"
        );
    }
}
