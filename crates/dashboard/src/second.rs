//! One closed second as the page draws it (`Second` of `docs/dashboard.md`): the
//! figures pado already writes to `timeline.jsonl`, summed and turned into
//! percentiles once, when the second closes, so every reader gets the same bytes.
//! Only counts, latencies and the names of steps, checks and error categories
//! appear: nothing of a request's bytes, so no secret can.

use std::collections::BTreeMap;

use pado_metrics::{Phase, SecondRecord, SeriesStats};
use serde::Serialize;

/// One closed second, as the JSON API serves it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Second {
    /// Second of the run (0: the first).
    pub t: u32,
    /// Active VUs at its end.
    pub vus: u32,
    /// Requests completed in it.
    pub requests: u64,
    /// Requests a second (the same figure: a second is one second long).
    pub rps: f64,
    /// Failed requests by category (`http_503`, `timeout`, `check_failed`...).
    pub errors: BTreeMap<String, u64>,
    /// Open model: arrivals that found no free VU.
    pub dropped: u64,
    /// Open model: iterations that started late.
    pub late: u64,
    /// Latency percentiles of every request of the second (absent without one).
    #[serde(flatten)]
    pub latency: Option<Latency>,
    /// Per step (series of one name merged, whatever their tags).
    pub steps: BTreeMap<String, StepSecond>,
    /// The target's own metrics scraped in this second (`observe:`), by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub observed: BTreeMap<String, f64>,
    /// LLM streams (`sse:` steps) that ended in this second, all steps together
    /// (absent when none did).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmSecond>,
    /// pado's own health in this second (absent when no worker reported it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_check: Option<SelfCheck>,
    /// A distributed run: each generator's share.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub generators: BTreeMap<String, GeneratorShare>,
}

/// Latency percentiles in milliseconds (HDR histograms, exact to their precision).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Slowest.
    pub max_ms: f64,
}

/// One step in one second.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StepSecond {
    /// Requests completed.
    pub count: u64,
    /// Of them, failed.
    pub failures: u64,
    /// Percentiles (absent when no request had a latency).
    #[serde(flatten)]
    pub latency: Option<Latency>,
    /// Checks of this step (`step: what`) that held.
    pub checks_passed: u64,
    /// Checks of this step that did not.
    pub checks_failed: u64,
}

/// The event streams of one second and, for LLM streams, what their users felt:
/// the first token's wait, the gaps between tokens, tokens per second.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LlmSecond {
    /// Streams that ended in the second.
    pub streams: u64,
    /// Events they carried.
    pub events: u64,
    /// Output tokens of the LLM streams that ended in it: the run's tokens per
    /// second.
    pub tokens: u64,
    /// `llm_ttft` median, ms (absent without a first token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_p50_ms: Option<f64>,
    /// `llm_ttft` 95th percentile, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_p95_ms: Option<f64>,
    /// `llm_itl` median, ms (absent without a gap between two tokens).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub itl_p50_ms: Option<f64>,
    /// `llm_itl` 99th percentile, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub itl_p99_ms: Option<f64>,
    /// `llm_tpot` median, ms (absent without a stream of two tokens or more).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tpot_p50_ms: Option<f64>,
}

impl LlmSecond {
    /// The figures of `e`.
    fn of(e: &pado_metrics::SseStats) -> LlmSecond {
        let q = |h: &pado_metrics::LatencyHistogram, p: f64| {
            (!h.is_empty()).then(|| ms(h.quantile_us(p)))
        };
        LlmSecond {
            streams: e.streams,
            events: e.events,
            tokens: e.tokens,
            ttft_p50_ms: q(&e.ttft, 0.50),
            ttft_p95_ms: q(&e.ttft, 0.95),
            itl_p50_ms: q(&e.itl, 0.50),
            itl_p99_ms: q(&e.itl, 0.99),
            tpot_p50_ms: q(&e.tpot, 0.50),
        }
    }
}

/// pado's own CPU and whether it could deliver the load (the self-check's rules).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SelfCheck {
    /// CPU used, in percent of one core.
    pub cpu_pct: f64,
    /// No worker was saturated, starved of CPU or woken late.
    pub ok: bool,
    /// What was wrong, when something was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One generator's part of a second (a distributed run): what the generators
/// tab draws over the whole run, so a reload shows its history too.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GeneratorShare {
    /// Requests it completed in this second.
    pub requests: u64,
    /// Its part of the second's requests (0–1; absent in a second without any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    /// Its CPU in this second, in percent of one core, if it reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_pct: Option<f64>,
    /// Whether it reported this second (a generator that stalled or left did not).
    pub reporting: bool,
}

/// Milliseconds with microsecond precision.
fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// The request-duration percentiles of `s`, if it has any.
fn latency(s: &SeriesStats) -> Option<Latency> {
    let h = s.phase(Phase::Duration);
    if h.is_empty() {
        return None;
    }
    let [p50, p95, p99] = h.quantiles_us([0.50, 0.95, 0.99]);
    Some(Latency {
        p50_ms: ms(p50),
        p95_ms: ms(p95),
        p99_ms: ms(p99),
        max_ms: ms(h.max_us()),
    })
}

impl Second {
    /// The page's view of `r`.
    pub fn of(r: &SecondRecord) -> Second {
        let mut by_step: BTreeMap<&str, SeriesStats> = BTreeMap::new();
        let mut errors = BTreeMap::new();
        for s in &r.series {
            for (k, n) in s.error_breakdown() {
                *errors.entry(k).or_insert(0) += n;
            }
            by_step
                .entry(s.key.name.as_str())
                .or_insert_with(|| SeriesStats::new(pado_metrics::SeriesKey::named(&s.key.name)))
                .merge(s);
        }
        let steps = by_step
            .into_iter()
            .map(|(name, s)| {
                let prefix = format!("{name}: ");
                let (checks_passed, checks_failed) = r
                    .checks
                    .iter()
                    .filter(|(k, _)| k.starts_with(&prefix))
                    .fold((0, 0), |(p, f), (_, c)| (p + c.passes, f + c.fails));
                let step = StepSecond {
                    count: s.requests,
                    failures: s.failed,
                    latency: latency(&s),
                    checks_passed,
                    checks_failed,
                };
                (name.to_string(), step)
            })
            .collect();
        let requests = r.requests();
        let mut llm: Option<pado_metrics::SseStats> = None;
        for e in r.series.iter().filter_map(|s| s.sse.as_deref()) {
            llm.get_or_insert_with(Default::default).merge(e);
        }
        Second {
            t: r.t,
            vus: r.vus,
            requests,
            rps: requests as f64,
            errors,
            dropped: r.scenarios.iter().map(|s| s.dropped).sum(),
            late: r.scenarios.iter().map(|s| s.late).sum(),
            latency: latency(&r.overall()),
            steps,
            observed: BTreeMap::new(),
            llm: llm.as_ref().map(LlmSecond::of),
            self_check: r.generator.as_ref().map(|g| self_check(r.t, g)),
            generators: BTreeMap::new(),
        }
    }
}

/// The self-check's per-second rules on one second's generator figures.
fn self_check(t: u32, g: &pado_metrics::GeneratorSecond) -> SelfCheck {
    let s = pado_report::timeline::gen_second(t, g);
    let mut notes = Vec::new();
    if s.is_full() && s.busy() {
        notes.push(format!(
            "a worker was {:.0}% busy: pado may be the bottleneck",
            s.busy_max.min(1.0) * 100.0
        ));
    }
    if s.is_full() && s.starved() {
        notes.push("pado waited for a CPU (other work on this machine)".to_string());
    }
    if s.late() {
        notes.push(format!(
            "pado's event loop woke up {} late",
            pado_analysis::self_check::lag_ms(s.lag_max_ms)
        ));
    }
    SelfCheck {
        cpu_pct: (s.cores * 1000.0).round() / 10.0,
        ok: notes.is_empty(),
        note: (!notes.is_empty()).then(|| notes.join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pado_metrics::{SeriesKey, SseStats, SseStream};

    /// A series of step `name` with `n` LLM streams of 5 tokens: the first after
    /// `ttft_ms`, then one every `gap_ms`.
    fn streams(name: &str, n: u64, ttft_ms: u64, gap_ms: u64) -> SeriesStats {
        let mut s = SeriesStats::new(SeriesKey::named(name));
        let mut e = SseStats::default();
        for _ in 0..n {
            for _ in 0..4 {
                e.record_itl(gap_ms * 1000);
            }
            e.record(&SseStream {
                events: 7,
                llm: true,
                tokens: 5,
                ttft_us: Some(ttft_ms * 1000),
                decode_us: 4 * gap_ms * 1000,
                duration_us: (ttft_ms + 4 * gap_ms) * 1000,
            });
        }
        s.sse = Some(Box::new(e));
        s
    }

    #[test]
    fn a_second_with_llm_streams_carries_their_figures_and_one_without_none() {
        let mut r = SecondRecord::new(3);
        r.series = vec![streams("채팅", 3, 100, 10), streams("요약", 1, 300, 30)];
        let s = Second::of(&r);
        let l = s.llm.as_ref().expect("llm figures");
        assert_eq!((l.streams, l.events, l.tokens), (4, 28, 20));
        let near = |v: Option<f64>, want: f64| (v.unwrap() - want).abs() <= want * 0.002;
        assert!(near(l.ttft_p50_ms, 100.0), "{l:?}");
        assert!(near(l.ttft_p95_ms, 300.0), "{l:?}");
        assert!(
            near(l.itl_p50_ms, 10.0) && near(l.itl_p99_ms, 30.0),
            "{l:?}"
        );
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["llm"]["tokens"], 20);
        let plain = Second::of(&SecondRecord::new(4));
        assert!(plain.llm.is_none());
        assert!(serde_json::to_value(&plain).unwrap().get("llm").is_none());
    }
}
