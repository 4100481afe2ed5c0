//! Compiling a validated scenario into what the runtime executes: origins resolved,
//! request bytes built once, series and checks numbered, weights accumulated. The hot
//! path then indexes vectors; it never looks anything up by name.

mod builder;
mod checks;
mod grpc;
mod request;
mod sse;
#[cfg(test)]
mod tests;
mod websocket;

pub use builder::{compile, compile_for_elsewhere};
pub use checks::{CheckPlan, ExtractPlan, ExtractSource, TemplatedCheck};
pub use grpc::{
    decode_grpc_json, descriptors_from_files, encode_grpc_json, reflect_services, GrpcMessage,
    GrpcPlan,
};
pub use pado_scenario::naming::default_step_name;
pub use request::{RequestForm, RequestPlan, StatusSet};
pub use sse::{EventTest, LlmPlan, SseCheckPlan, SseExtractPlan, SsePlan, MAX_EVENT_CHECKS};
pub use websocket::{WsActionPlan, WsPlan, WS_DEFAULT_TIMEOUT};

use std::sync::Arc;
use std::time::Duration;

use pado_metrics::SeriesKey;
use pado_results::StageMark;
use pado_scenario::{Think, ThinkDist};

use crate::data::{DataError, Feed, WeightedFeeds};
use crate::executor::Executor;
use crate::render::{BindError, Compiled};
use pado_http::Origin;

/// Default request timeout, as k6's.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Default of the largest response body kept for checks and extraction
/// (`defaults.max_body`); the rest is read and counted, not kept, so memory per VU
/// stays bounded whatever the server sends.
pub const BODY_KEEP_CAP: usize = 4 * 1024 * 1024;

/// Why a configuration could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A URL that validation let through but that cannot be used.
    #[error("{field}: {message}")]
    Url {
        /// Where.
        field: String,
        /// What.
        message: String,
    },
    /// A template could not be bound.
    #[error("{field}: {source}")]
    Template {
        /// Where.
        field: String,
        /// Why.
        source: BindError,
    },
    /// A data feed could not be loaded (the message names the feed).
    #[error("{source}")]
    Data {
        /// Feed.
        name: String,
        /// Why.
        source: DataError,
    },
    /// A `body_base64` that is not base64 (the loader reports it first; a plan
    /// built without loading still refuses it rather than send other bytes).
    #[error("{field}: not base64: {source}")]
    BodyBase64 {
        /// Where.
        field: String,
        /// Why.
        source: base64::DecodeError,
    },
    /// A JSONPath or regular expression that does not compile.
    #[error("{field}: {message}")]
    Pattern {
        /// Where.
        field: String,
        /// Why.
        message: String,
    },
    /// A TLS file (`defaults.tls`, `--ca-cert`, `--client-cert`, `--client-key`)
    /// that cannot be used.
    #[error("{field}: {source}")]
    Tls {
        /// Where.
        field: String,
        /// Which file, and why.
        source: pado_http::TlsFileError,
    },
    /// A `grpc:` step that cannot be made: its `.proto` files, the reflection
    /// service, the method, or a message that does not fit its type.
    #[error("{field}: {message}")]
    Grpc {
        /// Where.
        field: String,
        /// What.
        message: String,
    },
    /// A proxy (`defaults.proxy`, `--proxy`, `HTTPS_PROXY`...) that cannot be used.
    #[error("{source}")]
    Proxy {
        /// Which setting, and why.
        source: pado_http::ProxyError,
    },
    /// A body file could not be read.
    #[error("{field}: cannot read body file {path}: {source}")]
    BodyFile {
        /// Where.
        field: String,
        /// The file.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
}

impl PlanError {
    /// The scenario field the error is about (`data.NAME` for a feed), so callers can
    /// point at its line.
    pub fn field(&self) -> String {
        match self {
            PlanError::Url { field, .. }
            | PlanError::Template { field, .. }
            | PlanError::Pattern { field, .. }
            | PlanError::BodyFile { field, .. }
            | PlanError::BodyBase64 { field, .. }
            | PlanError::Grpc { field, .. }
            | PlanError::Tls { field, .. } => field.clone(),
            PlanError::Proxy { .. } => "defaults.proxy".into(),
            PlanError::Data { name, .. } => format!("data.{name}"),
        }
    }

    /// How to fix it, when there is more to say than the message.
    pub fn hint(&self) -> Option<String> {
        match self {
            PlanError::Template {
                source: BindError::MissingEnv(name),
                ..
            } => Some(format!(
                "set it before running: `export {name}=...` (values from the environment never appear in results)"
            )),
            _ => None,
        }
    }
}

/// Everything a run needs, shared read-only by all worker threads.
#[derive(Debug)]
pub struct RunPlan {
    /// Test name.
    pub name: String,
    /// Distinct origins.
    pub origins: Vec<Origin>,
    /// Series keys by id.
    pub series: Vec<SeriesKey>,
    /// Each series' scenarios, methods and groups (and each group's flows): what
    /// thresholds' `scenario`, `method` and `group` tags select, kept in `run.json`.
    pub steps: pado_metrics::StepCatalog,
    /// Check names by id.
    pub checks: Vec<String>,
    /// Named flows of mixes and groups (`scenario/name`) by id, for their durations.
    pub flows: Vec<String>,
    /// Scenarios.
    pub scenarios: Vec<ScenarioPlan>,
    /// Data feeds, shared read-only by all VUs.
    pub feeds: Vec<Arc<Feed>>,
    /// Variable names by id (extracted values, global setup outputs).
    pub vars: Vec<String>,
    /// Weighted feed choices of `pick(...)`.
    pub picks: Vec<WeightedFeeds>,
    /// Steps run once before the test (their variables seed every VU).
    pub setup: Vec<StepPlan>,
    /// Steps run once after the test.
    pub teardown: Vec<StepPlan>,
    /// Values of `{{ env.NAME }}` in requests (raw and escaped): they become literal
    /// request bytes, so debug output and failure samples redact them by value.
    pub secrets: crate::redact::Redactor,
    /// Bytes of a response body checks and extraction see (`defaults.max_body`).
    pub max_body: usize,
    /// Things the user should know about the file (e.g. one step name used in two
    /// flows, whose requests are then measured as one step).
    pub warnings: Vec<String>,
    /// What TLS trusts and presents (`defaults.insecure`, `defaults.tls`), read once:
    /// for the plan's origins and those first met in a redirect.
    pub tls: Arc<pado_http::TlsSettings>,
    /// HTTP/2: most concurrent streams per connection (`defaults.max_streams`).
    pub max_streams: u32,
    /// How long a VU keeps its HTTP/1.1 connections (`defaults.connections`).
    pub connections: pado_scenario::ConnectionReuse,
    /// Which proxy each origin's connections go through (`defaults.proxy`, the
    /// environment), read once: for the plan's origins and those first met in a
    /// redirect.
    pub proxies: Arc<pado_http::ProxyConfig>,
    /// How long resolved names are reused (`defaults.dns.ttl`), for origins first
    /// met in a redirect; `None` is the default.
    pub dns_ttl: Option<std::time::Duration>,
    /// The script whose VUs run the scenarios that name an exported function
    /// ([`ScenarioPlan::script_exec`]); set by whoever loaded a script (`pado run
    /// script.js`), `None` for a scenario file.
    pub script: Option<crate::script::ScriptRef>,
    /// What a scripted run's workers share (k6/execution's live figures, the
    /// abort); untouched by a scenario file's run.
    pub script_state: crate::script_state::ScriptRunState,
}

/// One scenario, compiled.
#[derive(Debug)]
pub struct ScenarioPlan {
    /// Name.
    pub name: String,
    /// Load model.
    pub executor: Box<dyn Executor>,
    /// Offset from the run start.
    pub start_time: Duration,
    /// Time in-flight iterations get after the end.
    pub graceful_stop: Duration,
    /// What an iteration does.
    pub entries: Vec<WorkEntry>,
    /// Sum of weights.
    pub total_weight: f64,
    /// Pause after each iteration.
    pub think: Option<ThinkPlan>,
    /// Steps each VU runs before its first iteration.
    pub setup: Vec<StepPlan>,
    /// Steps each VU runs after its last iteration.
    pub teardown: Vec<StepPlan>,
    /// Keep a cookie jar per VU.
    pub cookies: bool,
    /// A scripted scenario: the exported function of [`RunPlan::script`] each
    /// iteration calls (its `entries` are then empty of steps).
    pub script_exec: Option<String>,
    /// A scripted scenario's iterations begun on this generator (k6's
    /// `scenario.iterationInInstance`, taken once per iteration).
    pub iterations_begun: std::sync::atomic::AtomicU64,
    /// The segment of the test this generator runs (`apply_segment`): maps an
    /// iteration's number here to its number in the whole test.
    pub segment: Option<crate::executor::segment::Segment>,
}

/// One weighted alternative of an iteration.
#[derive(Debug)]
pub struct WorkEntry {
    /// Cumulative weight up to and including this entry.
    pub cum_weight: f64,
    /// Steps in order.
    pub steps: Vec<StepPlan>,
    /// Pause after the iteration instead of the scenario's.
    pub think: Option<ThinkPlan>,
    /// Index into [`RunPlan::flows`] when this entry is a named flow.
    pub flow: Option<usize>,
}

/// One step.
#[derive(Debug, Default)]
pub struct StepPlan {
    /// Series the request is recorded under.
    pub series: u32,
    /// The request, if any.
    pub request: Option<RequestPlan>,
    /// Checks on the response.
    pub checks: Vec<CheckPlan>,
    /// Whether a failed check fails the request.
    pub checks_fail_request: bool,
    /// Values taken from the response.
    pub extract: Vec<ExtractPlan>,
    /// Tags of the request's metrics (rendered per request).
    pub tags: Vec<(String, Compiled)>,
    /// A group: its timing id and steps.
    pub group: Option<(usize, Vec<StepPlan>)>,
    /// Pause after the step.
    pub think: Option<ThinkPlan>,
    /// A WebSocket session instead of a request.
    pub ws: Option<Box<WsPlan>>,
    /// A gRPC call instead of a request (`checks` and `extract` read its reply).
    pub grpc: Option<Box<GrpcPlan>>,
}

/// A compiled think time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ThinkPlan {
    /// Fixed.
    Fixed(Duration),
    /// Uniform in [a, b].
    Uniform(Duration, Duration),
    /// Normal, truncated at 0.
    Normal(Duration, Duration),
    /// Iterations start this far apart.
    Pacing(Duration),
}

impl ThinkPlan {
    fn from(t: &Think) -> ThinkPlan {
        match t {
            Think::Fixed(d) | Think::Dist(ThinkDist::Constant(d)) => ThinkPlan::Fixed(d.get()),
            Think::Dist(ThinkDist::Uniform([a, b])) => ThinkPlan::Uniform(a.get(), b.get()),
            Think::Dist(ThinkDist::Normal { mean, stddev }) => {
                ThinkPlan::Normal(mean.get(), stddev.get())
            }
            Think::Dist(ThinkDist::Pacing(d)) => ThinkPlan::Pacing(d.get()),
        }
    }

    /// Pause to take now, given how long the iteration took (for pacing).
    pub fn pause(&self, rng: &mut fastrand::Rng, iteration: Duration) -> Duration {
        match *self {
            ThinkPlan::Fixed(d) => d,
            ThinkPlan::Uniform(a, b) => {
                let (a, b) = (a.as_secs_f64(), b.as_secs_f64());
                Duration::from_secs_f64(a + (b - a) * rng.f64())
            }
            ThinkPlan::Normal(m, s) => {
                // Box-Muller.
                let u1 = rng.f64().max(1e-12);
                let u2 = rng.f64();
                let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                Duration::from_secs_f64((m.as_secs_f64() + z * s.as_secs_f64()).max(0.0))
            }
            ThinkPlan::Pacing(p) => p.saturating_sub(iteration),
        }
    }
}

impl RunPlan {
    /// Stage windows of all scenarios as offsets from the run start, for the result file.
    pub fn stage_marks(&self) -> Vec<StageMark> {
        let mut out = Vec::new();
        for s in &self.scenarios {
            for (i, w) in s.executor.stages().into_iter().enumerate() {
                out.push(StageMark {
                    scenario: s.name.clone(),
                    index: i,
                    start_s: (s.start_time + w.start).as_secs_f64(),
                    end_s: (s.start_time + w.end).as_secs_f64(),
                    label: w.label(),
                    target: w.to,
                    from: Some(w.from),
                });
            }
        }
        out
    }

    /// Longest planned scenario end (start time + duration).
    pub fn planned_duration(&self) -> Duration {
        self.scenarios
            .iter()
            .map(|s| s.start_time + s.executor.duration())
            .max()
            .unwrap_or_default()
    }

    /// Most VUs all scenarios can hold at once (for the open-files limit).
    pub fn max_vus(&self) -> u64 {
        self.scenarios
            .iter()
            .map(|s| s.executor.max_vus() as u64)
            .sum()
    }

    /// How many VU ids the whole test numbers (VU ids run over `1..=` this): the
    /// most VUs of every scenario, all segments of a split test together, so that
    /// `pick: unique` shares stay disjoint across generators.
    pub fn vu_id_space(&self) -> u64 {
        self.scenarios.iter().map(|s| s.executor.id_space()).sum()
    }

    /// Make this plan segment `segment` of its test: every scenario's executor split
    /// ([`crate::executor::segment::SegmentedExecutor`]) and every `sequential` feed
    /// limited to the segment's stripe of rows. Returns the names of the scenarios
    /// left with nothing to run (fewer VUs or arrivals than segments).
    pub fn apply_segment(&mut self, segment: &crate::executor::segment::Segment) -> Vec<String> {
        let mut empty = Vec::new();
        for sc in &mut self.scenarios {
            let whole = std::mem::replace(
                &mut sc.executor,
                Box::new(crate::executor::ConstantVus {
                    vus: 0,
                    duration: Duration::ZERO,
                }),
            );
            let part = crate::executor::segment::SegmentedExecutor::new(whole, segment.clone());
            sc.segment = Some(segment.clone());
            if part.is_empty() {
                empty.push(sc.name.clone());
            }
            sc.executor = Box::new(part);
        }
        for f in &self.feeds {
            f.partition_sequential(segment);
        }
        empty
    }

    /// Warnings to give before the run: `pick: unique` feeds with fewer rows than the
    /// run may have VUs, where some VUs must share rows (the user asked for none).
    pub fn warnings(&self) -> Vec<String> {
        let vus = self.vu_id_space();
        self.feeds
            .iter()
            .filter(|f| f.pick_mode() == pado_scenario::PickMode::Unique && f.len() < vus)
            .map(|f| {
                format!(
                    "feed `{}` (pick: unique) has {} rows for up to {vus} VUs: VUs beyond row {} share rows with others; give at least {vus} rows",
                    f.name(),
                    f.len(),
                    f.len()
                )
            })
            .collect()
    }
}
