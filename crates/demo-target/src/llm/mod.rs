//! The demo target's LLM: `POST /v1/chat/completions` (and `/v1/completions`)
//! answered with the pacing of a real LLM server, so that a load test of an LLM
//! endpoint shows what it shows on vLLM or TGI, on any machine and without a GPU.
//!
//! The model of the server (every cost a timer, never busy work, so the demo
//! target costs the load generator beside it almost no CPU):
//!
//! * **A bounded batch.** At most `llm_batch_limit` generations run at once (vLLM's
//!   `max_num_seqs`, in practice the KV cache a GPU holds); the rest wait, first
//!   come first served ([`Pool`]). A waiting request's first token waits too: past
//!   the limit, time to first token grows with the queue while tokens per second
//!   per stream stay as they were.
//! * **Prefill.** Before its first token a request spends
//!   `llm_prefill_ms_per_1k_tokens` per 1,000 prompt tokens ([`request::prompt_tokens`]).
//! * **Decode.** Each further token takes `llm_decode_ms_per_token × (1 +
//!   llm_batch_slowdown × (running − 1))`: a fuller batch makes every stream's
//!   tokens slower, as a GPU step over more sequences takes longer.
//!
//! The knobs are [`Faults`](crate::Faults) fields, so flags set them at start and
//! `POST /admin/faults` changes them while the target runs; they are copied into
//! atomics here so that a token's timer reads them without a lock.
//!
//! `/metrics` gains vLLM's names ([`Llm::render`]): `vllm:num_requests_running`,
//! `vllm:num_requests_waiting`, `vllm:gpu_cache_usage_perc` and
//! `vllm:kv_cache_usage_perc` (the share of the KV cache the running requests'
//! tokens hold, 0..1), `vllm:time_to_first_token_seconds` (histogram, vLLM's
//! buckets), `vllm:prompt_tokens_total`, `vllm:generation_tokens_total` and
//! `vllm:request_success_total`, each with the `model_name` label.

pub(crate) mod events;
pub(crate) mod request;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use crate::capacity::{AcquireError, Permit, Pool};
use crate::metrics::{format_value, Text};
use crate::Faults;

/// The `model_name` label of the metrics: one demo model, whatever the requests name.
pub(crate) const MODEL_NAME: &str = "pado-demo-llm";
/// KV-cache room per batch slot, in tokens: the cache holds `batch limit × this`
/// tokens, so `kv_cache_usage_perc` is the running requests' prompt and generated
/// tokens over that.
pub(crate) const KV_TOKENS_PER_SLOT: u64 = 2_048;
/// vLLM's bucket bounds of `vllm:time_to_first_token_seconds`.
const TTFT_BUCKETS: [f64; 16] = [
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];

/// The LLM's shared state: the batch, the pacing knobs, the counters `/metrics`
/// shows. Lock-free: a stream's every token reads and counts through atomics.
#[derive(Debug)]
pub(crate) struct Llm {
    batch: Pool,
    running: AtomicUsize,
    /// Prompt and generated tokens the running requests hold in the KV cache.
    kv_tokens: AtomicU64,
    prefill_us_per_1k: AtomicU64,
    decode_us: AtomicU64,
    /// `llm_batch_slowdown` in millionths.
    slowdown_ppm: AtomicU64,
    prompt_total: AtomicU64,
    generation_total: AtomicU64,
    success_total: AtomicU64,
    ttft_buckets: [AtomicU64; TTFT_BUCKETS.len() + 1],
    ttft_count: AtomicU64,
    ttft_sum_ns: AtomicU64,
}

/// The pacing in force, read once per token.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Pacing {
    /// Prefill time per 1,000 prompt tokens.
    pub prefill_per_1k: Duration,
    /// One token's decode time alone in the batch.
    pub decode: Duration,
    /// How much slower a token gets per other running request.
    pub slowdown: f64,
}

impl Pacing {
    /// Prefill of a prompt of `tokens` tokens.
    pub(crate) fn prefill(&self, tokens: u64) -> Duration {
        self.prefill_per_1k.mul_f64(tokens as f64 / 1_000.0)
    }

    /// One token's decode time with `running` requests in the batch.
    pub(crate) fn decode_with(&self, running: usize) -> Duration {
        let others = running.saturating_sub(1) as f64;
        self.decode.mul_f64(1.0 + self.slowdown * others)
    }
}

fn us(ms: f64) -> u64 {
    (ms * 1_000.0).round().max(0.0) as u64
}

/// A request admitted to the batch: holds its slot and its KV-cache tokens, and
/// gives both back however it ends (finished, or its client gone).
pub(crate) struct Admitted<'a> {
    llm: &'a Llm,
    _slot: Permit<'a>,
    kv: u64,
}

impl Admitted<'_> {
    /// Counts one generated token (it now holds KV cache too).
    pub(crate) fn token(&mut self) {
        self.kv += 1;
        self.llm.kv_tokens.fetch_add(1, Ordering::Relaxed);
        self.llm.generation_total.fetch_add(1, Ordering::Relaxed);
    }

    /// Requests in the batch now, this one among them.
    pub(crate) fn running(&self) -> usize {
        self.llm.running.load(Ordering::Relaxed)
    }
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.llm.running.fetch_sub(1, Ordering::Relaxed);
        self.llm.kv_tokens.fetch_sub(self.kv, Ordering::Relaxed);
    }
}

impl Llm {
    /// The LLM with the knobs of `faults`.
    pub(crate) fn new(faults: &Faults) -> Llm {
        let llm = Llm {
            batch: Pool::new(faults.llm_batch_limit as usize),
            running: AtomicUsize::new(0),
            kv_tokens: AtomicU64::new(0),
            prefill_us_per_1k: AtomicU64::new(0),
            decode_us: AtomicU64::new(0),
            slowdown_ppm: AtomicU64::new(0),
            prompt_total: AtomicU64::new(0),
            generation_total: AtomicU64::new(0),
            success_total: AtomicU64::new(0),
            ttft_buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            ttft_count: AtomicU64::new(0),
            ttft_sum_ns: AtomicU64::new(0),
        };
        llm.apply(faults);
        llm
    }

    /// Takes the knobs of `faults` (validated): a smaller batch takes effect as
    /// running requests finish, a larger one at once.
    pub(crate) fn apply(&self, faults: &Faults) {
        self.batch.resize(faults.llm_batch_limit as usize);
        self.prefill_us_per_1k
            .store(us(faults.llm_prefill_ms_per_1k_tokens), Ordering::Relaxed);
        self.decode_us
            .store(us(faults.llm_decode_ms_per_token), Ordering::Relaxed);
        self.slowdown_ppm.store(
            (faults.llm_batch_slowdown * 1e6).round().max(0.0) as u64,
            Ordering::Relaxed,
        );
    }

    /// The pacing in force now.
    pub(crate) fn pacing(&self) -> Pacing {
        Pacing {
            prefill_per_1k: Duration::from_micros(self.prefill_us_per_1k.load(Ordering::Relaxed)),
            decode: Duration::from_micros(self.decode_us.load(Ordering::Relaxed)),
            slowdown: self.slowdown_ppm.load(Ordering::Relaxed) as f64 / 1e6,
        }
    }

    /// Waits (first come, first served) for a place in the batch for a request of
    /// `prompt_tokens` tokens.
    pub(crate) async fn admit(&self, prompt_tokens: u64) -> Result<Admitted<'_>, AcquireError> {
        let (slot, _waited) = self.batch.acquire(None, 0).await?;
        self.running.fetch_add(1, Ordering::Relaxed);
        self.kv_tokens.fetch_add(prompt_tokens, Ordering::Relaxed);
        self.prompt_total
            .fetch_add(prompt_tokens, Ordering::Relaxed);
        Ok(Admitted {
            llm: self,
            _slot: slot,
            kv: prompt_tokens,
        })
    }

    /// Records a request's time to first token (from its arrival, its wait for
    /// the batch included, as vLLM measures it).
    pub(crate) fn first_token(&self, ttft: Duration) {
        let secs = ttft.as_secs_f64();
        let slot = TTFT_BUCKETS
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(TTFT_BUCKETS.len());
        self.ttft_buckets[slot].fetch_add(1, Ordering::Relaxed);
        self.ttft_count.fetch_add(1, Ordering::Relaxed);
        self.ttft_sum_ns.fetch_add(
            ttft.as_nanos().min(u128::from(u64::MAX)) as u64,
            Ordering::Relaxed,
        );
    }

    /// Counts a request that generated all its tokens.
    pub(crate) fn finished(&self) {
        self.success_total.fetch_add(1, Ordering::Relaxed);
    }

    /// Wakes every request waiting for the batch with an error (shutdown).
    pub(crate) fn close(&self) {
        self.batch.close();
    }

    /// The vLLM families of `/metrics`.
    pub(crate) fn render(&self, t: &mut Text) {
        let label = [("model_name", MODEL_NAME)];
        let batch = self.batch.stats();
        let gauge = |t: &mut Text, name: &str, help: &str, v: f64| {
            t.family(name, help, "gauge");
            t.sample(name, &label, v);
        };
        gauge(
            t,
            "vllm:num_requests_running",
            "Requests in the batch (generating), at most the batch limit",
            self.running.load(Ordering::Relaxed) as f64,
        );
        gauge(
            t,
            "vllm:num_requests_waiting",
            "Requests waiting for a place in the batch",
            batch.pending as f64,
        );
        let room = (batch.max as u64 * KV_TOKENS_PER_SLOT).max(1) as f64;
        let usage = (self.kv_tokens.load(Ordering::Relaxed) as f64 / room).min(1.0);
        gauge(
            t,
            "vllm:gpu_cache_usage_perc",
            "KV-cache usage, 0..1 (1 means 100%): the running requests' tokens over the cache's room",
            usage,
        );
        gauge(
            t,
            "vllm:kv_cache_usage_perc",
            "KV-cache usage, 0..1 (newer vLLM's name of gpu_cache_usage_perc)",
            usage,
        );
        let name = "vllm:time_to_first_token_seconds";
        t.family(
            name,
            "Time to first token: from a request's arrival (its wait for the batch included)",
            "histogram",
        );
        let mut cumulative = 0;
        for (i, upper) in TTFT_BUCKETS.iter().enumerate() {
            cumulative += self.ttft_buckets[i].load(Ordering::Relaxed);
            let le = format_value(*upper);
            t.sample(
                "vllm:time_to_first_token_seconds_bucket",
                &[("model_name", MODEL_NAME), ("le", le.as_str())],
                cumulative as f64,
            );
        }
        let count = self.ttft_count.load(Ordering::Relaxed) as f64;
        t.sample(
            "vllm:time_to_first_token_seconds_bucket",
            &[("model_name", MODEL_NAME), ("le", "+Inf")],
            count,
        );
        t.sample("vllm:time_to_first_token_seconds_count", &label, count);
        t.sample(
            "vllm:time_to_first_token_seconds_sum",
            &label,
            self.ttft_sum_ns.load(Ordering::Relaxed) as f64 / 1e9,
        );
        let counter = |t: &mut Text, name: &str, help: &str, v: &AtomicU64| {
            t.family(name, help, "counter");
            t.sample(name, &label, v.load(Ordering::Relaxed) as f64);
        };
        counter(
            t,
            "vllm:prompt_tokens_total",
            "Prompt tokens prefilled",
            &self.prompt_total,
        );
        counter(
            t,
            "vllm:generation_tokens_total",
            "Tokens generated",
            &self.generation_total,
        );
        counter(
            t,
            "vllm:request_success_total",
            "Requests that generated all their tokens",
            &self.success_total,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_slows_as_the_batch_fills_and_prefill_grows_with_the_prompt() {
        let p = Pacing {
            prefill_per_1k: Duration::from_millis(40),
            decode: Duration::from_millis(10),
            slowdown: 0.5,
        };
        assert_eq!(p.decode_with(1), Duration::from_millis(10));
        assert_eq!(p.decode_with(0), Duration::from_millis(10));
        assert_eq!(p.decode_with(3), Duration::from_millis(20));
        assert_eq!(p.prefill(500), Duration::from_millis(20));
        assert_eq!(p.prefill(2_000), Duration::from_millis(80));
    }

    #[test]
    fn the_batch_holds_its_limit_and_the_metrics_say_who_waits() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let faults = Faults {
                llm_batch_limit: 2,
                ..Faults::default()
            };
            let llm = Llm::new(&faults);
            let mut a = llm.admit(100).await.unwrap();
            let _b = llm.admit(300).await.unwrap();
            a.token();
            assert_eq!(a.running(), 2);
            // A third waits for a place.
            let third = llm.admit(10);
            tokio::pin!(third);
            assert!(
                tokio::time::timeout(Duration::from_millis(30), third.as_mut())
                    .await
                    .is_err(),
                "admitted past the limit"
            );
            let mut t = Text::default();
            llm.render(&mut t);
            let m = &t.out;
            assert!(m.contains("vllm:num_requests_running{model_name=\"pado-demo-llm\"} 2\n"), "{m}");
            assert!(m.contains("vllm:num_requests_waiting{model_name=\"pado-demo-llm\"} 1\n"), "{m}");
            // 401 tokens held of 2 × 2048.
            let want = format!(
                "vllm:kv_cache_usage_perc{{model_name=\"pado-demo-llm\"}} {}\n",
                format_value(401.0 / 4096.0)
            );
            assert!(m.contains(&want), "{m}");
            assert!(m.contains("vllm:prompt_tokens_total{model_name=\"pado-demo-llm\"} 400\n"), "{m}");
            assert!(m.contains("vllm:generation_tokens_total{model_name=\"pado-demo-llm\"} 1\n"), "{m}");
            drop(a);
            let c = tokio::time::timeout(Duration::from_secs(1), third)
                .await
                .expect("a place freed is given to the one waiting")
                .unwrap();
            assert_eq!(c.running(), 2);
            llm.first_token(Duration::from_millis(30));
            let mut t = Text::default();
            llm.render(&mut t);
            assert!(t.out.contains(
                "vllm:time_to_first_token_seconds_bucket{model_name=\"pado-demo-llm\",le=\"0.02\"} 0\n"
            ), "{}", t.out);
            assert!(t.out.contains(
                "vllm:time_to_first_token_seconds_bucket{model_name=\"pado-demo-llm\",le=\"0.04\"} 1\n"
            ), "{}", t.out);
            assert!(t.out.contains(
                "vllm:num_requests_waiting{model_name=\"pado-demo-llm\"} 0\n"
            ), "{}", t.out);
        });
    }
}
