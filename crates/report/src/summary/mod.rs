//! The end-of-run summary: built from a result directory only (so `pado report` on a
//! directory from another machine gives the same answer), serialised as
//! `summary.json` with the contract keys of the architecture guide.
//!
//! Reading ([`load`]), computing the figures ([`build`], with the analyses in
//! `analyses`) and wording them (the warnings and the verdict sentences, in
//! `warnings` and `verdict`) are apart; presenting is for [`crate::text`] and
//! [`crate::html`].

mod analyses;
mod build;
pub mod custom;
mod generators;
mod load;
#[cfg(test)]
mod tests;
mod verdict;
mod warnings;

use std::collections::BTreeMap;

use pado_analysis::thresholds::ThresholdResult;
use pado_metrics::{LatencySummary, Totals};
use pado_results::{ResultError, RunMeta, ScenarioMeta};
use serde::{Deserialize, Serialize};

use crate::stages::StageStats;
use crate::timeline::SecondPoint;

pub use analyses::bottlenecks_of;
pub use build::{build, parse_spec};
pub use load::{load, load_folded, load_with_windows};
pub use verdict::{dropped_sentence, dropped_words, VuPool};

/// Why a summary could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The result directory could not be read.
    #[error(transparent)]
    Result(#[from] ResultError),
    /// A threshold stored in run.json does not parse (edited by hand?).
    #[error("run.json: threshold `{metric}: {expr}`: {message}")]
    Threshold {
        /// Metric key.
        metric: String,
        /// Expression.
        expr: String,
        /// Why.
        message: String,
    },
}

/// Per-step figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepSummary {
    /// Requests.
    pub requests: u64,
    /// Failed requests.
    pub failed: u64,
    /// Requests per second over the run.
    pub rps: f64,
    /// Failures by category.
    pub errors: BTreeMap<String, u64>,
    /// `http_req_duration` in ms.
    pub latency_ms: LatencySummary,
    /// `http_req_waiting` (time to first byte) in ms.
    pub waiting_ms: LatencySummary,
    /// The step's WebSocket sessions (`ws:` steps only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws: Option<WsSummary>,
    /// The step's gRPC calls (`grpc:` steps only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<GrpcSummary>,
    /// The step's event streams and LLM figures (`sse:` steps only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sse: Option<SseSummary>,
}

/// gRPC figures of a step, in k6's vocabulary: the calls are the step's requests
/// (`grpc_req_duration` is its `latency_ms`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GrpcSummary {
    /// Calls answered with an accepted status, by gRPC code (`"0"` is OK); a
    /// status the step did not accept is a failure in `errors` instead.
    pub status: BTreeMap<String, u64>,
    /// Server streams ended (`grpc_streams`).
    pub streams: u64,
    /// Messages received on them (`grpc_streams_msgs_received`).
    pub stream_msgs: u64,
    /// Messages a k6 script's client and bidirectional streams sent
    /// (`grpc_streams_msgs_sent`); absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stream_msgs_sent: u64,
}

/// WebSocket figures (of a step, or of all `ws:` steps), in k6's vocabulary.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WsSummary {
    /// Sessions ended, successful or not (`ws_sessions`).
    pub sessions: u64,
    /// Of them, failed.
    pub failed: u64,
    /// Messages sent (`ws_msgs_sent`).
    pub msgs_sent: u64,
    /// Data messages received (`ws_msgs_received`).
    pub msgs_received: u64,
    /// Messages sent per second over the run.
    pub msgs_sent_per_s: f64,
    /// Messages received per second over the run.
    pub msgs_received_per_s: f64,
    /// Failed sessions by category (`ws_handshake_403`, `ws_closed_early`,
    /// `ws_expect_timeout`, `ws_protocol`, or a connect category).
    pub errors: BTreeMap<String, u64>,
    /// `ws_connecting` in ms.
    pub connecting_ms: LatencySummary,
    /// `ws_session_duration` in ms.
    pub session_duration_ms: LatencySummary,
    /// `ws_msg_latency` in ms (send → the message an `expect` matched).
    pub msg_latency_ms: LatencySummary,
    /// How many latencies `msg_latency_ms` summarises.
    pub msg_latency_count: u64,
}

/// Event streams (of a step, or of all `sse:` steps) and, for LLM streams, the
/// figures LLM serving is judged by (vLLM's and genai-perf's names).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SseSummary {
    /// Streams read (`sse_streams`).
    pub streams: u64,
    /// Events they carried (`sse_events`).
    pub events: u64,
    /// The LLM figures, when the streams were read as an LLM's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmSummary>,
}

/// What users of a streaming LLM endpoint feel: how long until the first token,
/// the gaps between tokens, and the tokens per second.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmSummary {
    /// Streams read as an LLM's answer.
    pub requests: u64,
    /// Output tokens, all streams together (`llm_output_tokens`).
    pub output_tokens: u64,
    /// Output tokens per second of the run (throughput, all streams together).
    pub output_tokens_per_s: f64,
    /// `llm_ttft` in ms: from the request's start to its first token.
    pub ttft_ms: LatencySummary,
    /// `llm_itl` in ms: every gap between two tokens.
    pub itl_ms: LatencySummary,
    /// `llm_tpot` in ms: a stream's time per output token after the first.
    pub tpot_ms: LatencySummary,
    /// `llm_output_tokens` per stream (tokens, not ms).
    pub output_tokens_per_request: LatencySummary,
    /// `llm_tokens_per_s` per stream (tokens per second, not ms).
    pub tokens_per_s_per_request: LatencySummary,
    /// `llm_input_tokens` per stream whose prompt pado sized (`sse.prompt`;
    /// tokens, not ms); absent when pado sent the prompts as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens_per_request: Option<LatencySummary>,
}

/// Pass/fail counts of a check.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckSummary {
    /// Passes.
    pub passes: u64,
    /// Fails.
    pub fails: u64,
}

/// Iterations of one named flow.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowSummary {
    /// Completed iterations.
    pub iterations: u64,
    /// Their duration in ms.
    pub iteration_duration_ms: LatencySummary,
}

/// The summary (`summary.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Test name.
    pub name: String,
    /// RFC 3339 start.
    pub started_at: String,
    /// Length in seconds.
    pub duration_s: f64,
    /// Requests completed (`http_reqs`).
    pub requests: u64,
    /// Failed requests.
    pub failed: u64,
    /// `failed / requests` (`http_req_failed`).
    pub failed_rate: f64,
    /// Requests per second.
    pub rps: f64,
    /// Failures by category: `http_<code>`, transport kinds, `check_failed`.
    pub errors: BTreeMap<String, u64>,
    /// Requests sent again on a new connection because the server had closed the
    /// kept-alive one before answering (not failures; see `docs/result-format.md`).
    #[serde(default)]
    pub reconnects: u64,
    /// Requests by the HTTP version they went over (`"1.1"`, `"2"`; gRPC calls are
    /// HTTP/2, a WebSocket session's upgrade HTTP/1.1), versions with none left out.
    /// Absent for result directories written before pado counted them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub http_versions: BTreeMap<String, u64>,
    /// Connections pado opened (TCP connects that succeeded, with their TLS
    /// handshake over https): as many as VUs × origins when keep-alive holds, one
    /// per request when it does not. Absent as `http_versions` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections_opened: Option<u64>,
    /// The same by the HTTP version they then spoke; absent as `http_versions` is.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub connections_by_version: BTreeMap<String, u64>,
    /// Of `connections_opened`, those over TLS; absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub connections_tls: u64,
    /// Responses by status code.
    pub status: BTreeMap<String, u64>,
    /// `http_req_duration` in ms.
    pub latency_ms: LatencySummary,
    /// How latency was timed.
    pub latency_origin: String,
    /// Other timing phases in ms, by k6 metric name.
    pub phases_ms: BTreeMap<String, LatencySummary>,
    /// Bytes written.
    pub data_sent: u64,
    /// Bytes read.
    pub data_received: u64,
    /// Bodies of encoded responses (`Content-Encoding` gzip, br, zstd, deflate) as
    /// received, after chunked framing: part of `data_received`. Absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub data_received_encoded: u64,
    /// The same bodies decoded: the bytes checks and the application see.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub data_received_decoded: u64,
    /// Completed iterations.
    pub iterations: u64,
    /// Iterations cut off.
    pub iterations_interrupted: u64,
    /// Open model: iterations that could not start.
    pub dropped_iterations: u64,
    /// Open model: iterations that started late.
    pub late_iterations: u64,
    /// `iteration_duration` in ms.
    pub iteration_duration_ms: LatencySummary,
    /// Iterations and `iteration_duration` (ms) per named flow (`scenario/flow`).
    pub flows: BTreeMap<String, FlowSummary>,
    /// Highest active VUs.
    pub vus: u32,
    /// Highest allocated VUs.
    pub vus_max: u32,
    /// Per stage window (requests, req/s, latency, error rate): the "100 VU segment
    /// vs 200 VU segment" table users build by hand.
    #[serde(default)]
    pub stages: Vec<crate::stages::StageStats>,
    /// Throughput percentiles over seconds and TTFB variability.
    #[serde(default)]
    pub stability: crate::stability::Stability,
    /// Saturation analysis: runs with at least three load levels over ten full
    /// seconds or more while the load rose or held; `None` otherwise, and when the
    /// generator capped the load (the figures would describe pado, not the target).
    /// A generator that was only delayed keeps it.
    #[serde(default)]
    pub saturation: Option<pado_analysis::saturation::Saturation>,
    /// Trend of the per-second mean latency in the steady-load period that says the
    /// most (the notable drift with the largest change, else the longest period);
    /// `None` when no period of steady load lasted long enough (30 s after a 5 s
    /// warm-up). Ramps are never measured: latency rising with the load is not drift.
    #[serde(default)]
    pub drift: Option<pado_analysis::drift::PeriodDrift>,
    /// Drift in every steady-load period long enough to measure, in time order.
    #[serde(default)]
    pub drift_periods: Vec<pado_analysis::drift::PeriodDrift>,
    /// How drift was measured and when it is significant, in words, for whoever
    /// reads the figures above (the terminal summary shows only significant drift
    /// and leaves the method to this field and the docs); absent when nothing was
    /// measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_method: Option<String>,
    /// The soak analysis: within each period of steady load, whether the target's
    /// memory, descriptors, threads or pools (from `observe:`) and its latency drift,
    /// with a verdict (`leak suspected`, `pool drift`, `latency drift`, `stable`).
    /// Present in soak mode (`--soak`, or a run planned for an hour or more) and
    /// whenever something drifted; absent when no steady period was long enough.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak: Option<pado_analysis::soak::Soak>,
    /// Soak mode, from `run.json`: `requested` (`--soak`: the verdict is judged) or
    /// `long`; absent for other runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak_mode: Option<pado_results::SoakMode>,
    /// False when the run asked to be judged as a soak (`--soak`) and its verdict is
    /// not `stable`, or when no period of steady load was long enough to judge.
    #[serde(default = "yes")]
    pub soak_ok: bool,
    /// The run was still going when this summary was made (`pado report` of a
    /// directory a run is writing): the figures are of the seconds so far.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_progress: bool,
    /// How long the run was planned to last, in seconds (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_s: Option<f64>,
    /// Which component limited the run, from the target's scraped metrics
    /// (absent when nothing was observed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottlenecks: Option<pado_analysis::attribution::Attribution>,
    /// Generator self-check: whether pado itself was saturated or starved (CPU,
    /// run-queue wait, event-loop lag, late starts), with the figures and a sentence
    /// saying by how much. `None` for result directories without generator figures.
    #[serde(default)]
    pub generator: Option<pado_analysis::self_check::GeneratorCheck>,
    /// A short plain-language verdict.
    #[serde(default)]
    pub verdict: Vec<String>,
    /// Per step.
    pub steps: BTreeMap<String, StepSummary>,
    /// All WebSocket steps together; absent when the run had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket: Option<WsSummary>,
    /// All `sse:` steps together (and their LLM figures); absent when the run had
    /// none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sse: Option<SseSummary>,
    /// Per step and tag set (`search{class=rare}`), for requests that carry tags.
    pub tagged: BTreeMap<String, StepSummary>,
    /// Checks by name.
    pub checks: BTreeMap<String, CheckSummary>,
    /// A k6 script's own metrics (`k6/metrics`, `group_duration`) by name, with
    /// k6's statistics of each; absent when the run had none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub custom: BTreeMap<String, custom::CustomSummary>,
    /// Threshold results in the order they were given.
    pub thresholds: Vec<ThresholdResult>,
    /// Whether all thresholds passed (true when there are none).
    pub thresholds_ok: bool,
    /// Everything the run was judged on — thresholds, events' expectations, the
    /// soak, the checks policy, the requests rule — and the one pass/fail and exit
    /// code that follow; what the terminal, the HTML badge, JUnit and the history
    /// read.
    #[serde(default)]
    pub judged: pado_analysis::verdict::Verdict,
    /// The scenario's events (`events:`): each one's impact (before / during /
    /// after its window, time to first error and to recovery) and expectations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<pado_analysis::events::EventImpact>,
    /// Whether every event's expectations held and no required event failed (true
    /// without events).
    #[serde(default = "yes")]
    pub events_ok: bool,
    /// Stopped early.
    pub interrupted: bool,
    /// Scenarios as run.
    pub scenarios: Vec<ScenarioMeta>,
    /// Warnings to show the user.
    pub warnings: Vec<String>,
    /// Samples of failed requests (`failures.jsonl`): at most three per step and
    /// error category, with the URL, status, first bytes of the body and the failing
    /// check with what it saw; the "why" behind [`Summary::errors`].
    #[serde(default)]
    pub failures: Vec<pado_metrics::FailureSample>,
    /// A merged result (`pado merge`): one row per generator, with its own
    /// throughput, latency, start skew and self-check. Absent for a run of one
    /// generator.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generators: Vec<GeneratorSummary>,
    /// A merge of only part of the test (`pado merge --allow-partial`): the missing
    /// and cut-short segments, one sentence each. Absent for a whole test.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partial: Vec<String>,
    /// The live outputs the run streamed to and what each delivered (from
    /// `run.json`); absent when there were none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<pado_metrics::OutputMeta>,
    /// The raw per-request file (`--output raw-json=FILE`): lines written and
    /// dropped (from `run.json`); absent when none was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<pado_metrics::RawOutputMeta>,
}

fn yes() -> bool {
    true
}

impl Summary {
    /// Whether the run's load was WebSocket sessions only (no HTTP request besides
    /// the handshakes): its request figures are all zero and say nothing, so the
    /// summary shows the sessions' instead.
    pub fn websocket_only(&self) -> bool {
        self.requests == 0 && self.websocket.as_ref().is_some_and(|w| w.sessions > 0)
    }

    /// Whether the run passed what it was judged on ([`Summary::judged`]: the exit
    /// code 0 or 99). A `summary.json` written before the verdict has none, and is
    /// read by its thresholds, events and soak.
    pub fn passed(&self) -> bool {
        self.judged.passed && self.thresholds_ok && self.events_ok && self.soak_ok
    }
}

/// One generator of a merged result, from its own seconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorSummary {
    /// `index/count`, e.g. `2/8`.
    pub segment: String,
    /// Its share of the load (0..=1).
    pub share: f64,
    /// The directory it was merged from.
    pub source: String,
    /// Requests it completed.
    pub requests: u64,
    /// Its requests per second over its own length.
    pub rps: f64,
    /// Of its requests, failed.
    pub failed: u64,
    /// Its `http_req_duration`, ms.
    pub latency_ms: LatencySummary,
    /// How far its start was from the agreed (or the earliest) start, ms.
    pub start_skew_ms: Option<f64>,
    /// Whether it stopped early.
    pub ended_early: bool,
    /// Its own self-check (was this generator saturated?); `None` without figures.
    pub self_check: Option<pado_analysis::self_check::GeneratorCheck>,
}

/// Everything read from a result directory, in memory bounded by the number of series
/// and stages plus about a hundred bytes per step and second (no histograms per second).
pub struct LoadedRun {
    /// run.json.
    pub meta: RunMeta,
    /// The run summed (full histograms of every series).
    pub totals: Totals,
    /// One compact point per line of timeline.jsonl, in file order: what the charts
    /// and the CSV export read.
    pub points: Vec<SecondPoint>,
    /// One row per stage of `meta.stages`, in that order.
    pub stages: Vec<StageStats>,
    /// Step names the points refer to by index ([`SecondPoint::steps`]), in order of
    /// first appearance.
    pub step_names: Vec<String>,
    /// Failure categories the points refer to by index ([`SecondPoint::errors`]).
    pub error_names: Vec<String>,
    /// The target's metrics scraped during the run (`observe.jsonl`), only the
    /// families the attribution and the charts read.
    pub observations: pado_results::Observations,
    /// Every event-loop probe wake-up of the run, all workers merged: the run's lag
    /// percentiles for the generator self-check.
    pub generator_lag: pado_metrics::LagHistogram,
    /// A merged result's generators (`generators.json`, written by `pado merge`);
    /// `None` for a run of one generator.
    pub generators: Option<pado_results::merge::GeneratorsFile>,
    /// The run's events (`events.jsonl`): impact and expectations, judged on the
    /// seconds as they were folded.
    pub events: Vec<pado_analysis::events::EventImpact>,
    /// A run was still writing the directory when it was read: the figures are of
    /// the seconds written so far, and nothing may be written into it.
    pub in_progress: bool,
    /// The thresholds scoped to a stage or window (`{stage:2}`), judged on exactly
    /// those seconds as they were folded, with their position in
    /// `meta.thresholds`.
    pub scoped: Vec<(usize, ThresholdResult)>,
}

/// How the self-check's finding starts, in the verdict, the warnings and the terminal
/// summary: one fixed phrase that scripts and people can look for.
pub const GENERATOR_SATURATED: &str =
    "GENERATOR SATURATED (these results measure pado, not the target)";

/// How the self-check's note starts when pado was delayed by its machine (it waited
/// for a CPU or its loop woke late) but delivered the load: the analysis stands and
/// the note says how much scheduling delay the timings may carry.
pub const GENERATOR_DELAYED: &str = "generator delayed, not saturated";

fn is_zero(n: &u64) -> bool {
    *n == 0
}
