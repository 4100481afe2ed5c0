//! `summary.json` as its readers read it: the history's row of a run, and anything
//! else that needs a finished run's headline figures without loading its timeline.
//!
//! The writer (`pado-report`'s `Summary`) holds far more than any reader needs; this
//! is the part readers rely on, every field defaulted so a summary written by an
//! older pado (before `judged`, `events_ok`, `soak_ok`, per-step figures...) still
//! reads, and fields a reader does not know are ignored.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The headline figures of a finished run (`summary.json`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SummaryFigures {
    /// The test's name.
    pub name: Option<String>,
    /// Second 0, RFC 3339 UTC.
    pub started_at: Option<String>,
    /// Wall-clock length, seconds.
    pub duration_s: Option<f64>,
    /// Requests completed.
    pub requests: u64,
    /// Failed requests.
    pub failed: u64,
    /// Requests per second over the run.
    pub rps: Option<f64>,
    /// Failed / requests.
    pub failed_rate: Option<f64>,
    /// `http_req_duration` percentiles.
    pub latency_ms: Percentiles,
    /// Each check's passes and failures, by name.
    pub checks: BTreeMap<String, CheckFigures>,
    /// Whether every threshold passed (absent: no thresholds, so true).
    pub thresholds_ok: Option<bool>,
    /// Whether every event's expectation held (absent before events were judged).
    pub events_ok: Option<bool>,
    /// Whether the soak verdict passed (absent when no soak was judged).
    pub soak_ok: Option<bool>,
    /// The run's verdict (absent in summaries written before it).
    pub judged: Option<Judged>,
    /// Stopped early.
    pub interrupted: Option<bool>,
    /// Each step's figures, by step name.
    pub steps: BTreeMap<String, StepFigures>,
    /// All `sse:` steps' event streams (absent for runs without any).
    pub sse: Option<SseFigures>,
}

/// Event streams of a run or a step (`summary.json`'s `sse`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SseFigures {
    /// The LLM figures, when the streams were read as an LLM's answer.
    pub llm: Option<LlmFigures>,
}

/// What a streaming LLM endpoint is judged by (`summary.json`'s `sse.llm`): the
/// history keeps these per run and step so `pado trend` can follow them.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct LlmFigures {
    /// Streams read as an LLM's answer.
    pub requests: u64,
    /// Output tokens, all streams together.
    pub output_tokens: u64,
    /// Output tokens per second of the run.
    pub output_tokens_per_s: Option<f64>,
    /// `llm_ttft` percentiles, ms.
    pub ttft_ms: Percentiles,
    /// `llm_itl` percentiles, ms.
    pub itl_ms: Percentiles,
    /// `llm_tpot` percentiles, ms.
    pub tpot_ms: Percentiles,
    /// `llm_tokens_per_s` per request, tokens/s.
    pub tokens_per_s_per_request: Percentiles,
}

/// Latency percentiles in ms; `None` when nothing was timed.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Percentiles {
    /// Median.
    pub p50: Option<f64>,
    /// 95th percentile.
    pub p95: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
}

/// One check's counts.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CheckFigures {
    /// Times it held.
    pub passes: u64,
    /// Times it failed.
    pub fails: u64,
}

/// The verdict every presenter and the exit code read.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Judged {
    /// 0, or 99 when anything judged failed.
    pub exit_code: Option<i64>,
}

/// One step's figures.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct StepFigures {
    /// Requests completed.
    pub requests: u64,
    /// Failed requests.
    pub failed: u64,
    /// Requests per second over the run.
    pub rps: Option<f64>,
    /// Latency percentiles.
    pub latency_ms: Percentiles,
    /// The step's event streams (`sse:` steps only).
    pub sse: Option<SseFigures>,
}

impl SummaryFigures {
    /// The exit code of the run: its verdict's (`judged`), or, for a summary written
    /// before the verdict, from what it judged (thresholds, events, soak).
    pub fn exit_code(&self) -> i32 {
        if let Some(code) = self.judged.as_ref().and_then(|j| j.exit_code) {
            return i32::try_from(code).unwrap_or(1);
        }
        let ok = |v: Option<bool>| v.unwrap_or(true);
        if ok(self.thresholds_ok) && ok(self.events_ok) && ok(self.soak_ok) {
            0
        } else {
            99
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> SummaryFigures {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn an_older_summary_without_a_verdict_still_reads() {
        let s = parse(r#"{"name":"부하","requests":3,"latency_ms":{"p50":null,"p95":2.5}}"#);
        assert_eq!(s.name.as_deref(), Some("부하"));
        assert_eq!((s.requests, s.failed), (3, 0));
        assert_eq!(s.latency_ms.p50, None);
        assert_eq!(s.latency_ms.p95, Some(2.5));
        assert_eq!(s.exit_code(), 0, "nothing judged failed");
        assert!(parse("{}").steps.is_empty());
    }

    #[test]
    fn the_exit_code_is_the_verdicts_else_what_was_judged() {
        let v = r#"{"thresholds_ok":true,"events_ok":false,"judged":{"exit_code":0}}"#;
        assert_eq!(parse(v).exit_code(), 0, "the verdict wins");
        assert_eq!(parse(r#"{"events_ok":false}"#).exit_code(), 99);
        assert_eq!(parse(r#"{"soak_ok":false}"#).exit_code(), 99);
        assert_eq!(parse(r#"{"thresholds_ok":false}"#).exit_code(), 99);
        assert_eq!(parse(r#"{"judged":{"exit_code":99}}"#).exit_code(), 99);
    }
}
