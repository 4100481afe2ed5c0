//! The scenario file as users write it (serde model). Field names follow k6 where k6
//! has one (`executor`, `stages`, `preAllocatedVUs` is spelled `pre_allocated_vus`),
//! so a k6 user can translate an options block line by line. Unknown fields are errors:
//! a typo must never silently fall back to a default.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Dur;

/// A whole scenario file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Test name (used for the result directory and reports).
    #[serde(default)]
    pub name: Option<String>,
    /// Base URL that relative request URLs are joined to. May use `{{ env.NAME }}`
    /// (resolved when the file is loaded).
    #[serde(default)]
    pub target: Option<String>,
    /// `target` as written when it took values from the environment: what results,
    /// reports and messages show instead of the resolved URL (values from the
    /// environment never appear in them). Set by the loader, not by the file.
    #[serde(skip)]
    #[schemars(skip)]
    pub target_template: Option<String>,
    /// Settings every request inherits.
    #[serde(default)]
    pub defaults: Defaults,
    /// Pass/fail criteria in k6 syntax, keyed by metric (with optional tags).
    #[serde(default)]
    pub thresholds: BTreeMap<String, Vec<ThresholdEntry>>,
    /// Data feeds by name, readable in templates as `{{ name.column }}`.
    #[serde(default)]
    pub data: BTreeMap<String, DataSpec>,
    /// Steps run once before the test; their extracted variables are visible to all VUs.
    #[serde(default)]
    pub setup: Vec<Step>,
    /// Steps run once after the test (e.g. delete test data).
    #[serde(default)]
    pub teardown: Vec<Step>,
    /// The target's metrics endpoints to scrape during the run (Prometheus text
    /// or OpenMetrics), for the report's charts and the bottleneck analysis.
    #[serde(default)]
    pub observe: Option<Observe>,
    /// Live outputs: the run's per-second metrics streamed while it runs to
    /// Prometheus (remote write), InfluxDB (line protocol) or an OpenTelemetry
    /// collector (OTLP/HTTP); `--output KIND=URL` adds more (docs/outputs.md).
    #[serde(default)]
    pub outputs: Vec<OutputEntry>,
    /// Events on the run's timeline: faults injected (a command, an HTTP call) and
    /// undone, or moments marked, with what is expected during and after each
    /// (see [`crate::events`]).
    #[serde(default)]
    pub events: Vec<crate::events::Event>,
    /// An experiment: one knob swept over its values, this test (or the scenario
    /// file it names) rerun at each (see [`crate::experiment`]; `pado experiment`).
    /// A plain `pado run` ignores it.
    #[serde(default)]
    pub experiment: Option<crate::experiment::Experiment>,
    /// Scenarios, run in parallel, in file order.
    #[serde(default, with = "ordered_map")]
    #[schemars(with = "BTreeMap<String, Scenario>")]
    pub scenarios: Vec<(String, Scenario)>,
}

/// A data feed: rows from a CSV or JSON file, inline values, or an integer range.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DataSpec {
    /// CSV (with a header row) or JSON (an array of objects or of scalars) file,
    /// relative to the scenario file. Read once, shared by all VUs.
    #[serde(default)]
    pub file: Option<String>,
    /// Inline rows: scalars (column `value`) or objects (their keys are columns).
    #[serde(default)]
    pub values: Option<Vec<serde_json::Value>>,
    /// Integers from the first to the last, inclusive (column `value`).
    #[serde(default)]
    pub range: Option<[i64; 2]>,
    /// How rows are chosen (default random).
    #[serde(default)]
    pub pick: Option<PickMode>,
    /// Zipf exponent for `pick: zipf` (default 1.0; larger is more skewed).
    #[serde(default)]
    pub s: Option<f64>,
}

/// How a feed's rows are chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PickMode {
    /// Uniformly at random, independently per use.
    #[default]
    Random,
    /// In order, shared by all VUs (each row once per lap), wrapping at the end.
    Sequential,
    /// Per VU disjoint rows: no two VUs ever get the same row (each VU walks its own
    /// share in order, wrapping within it).
    Unique,
    /// Skewed popularity: row 1 most often (Zipf distribution).
    Zipf,
}

/// Request defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// Headers added to every request (a step's own header of the same name wins).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Per-request timeout (default 60s, as k6).
    #[serde(default)]
    pub timeout: Option<Dur>,
    /// Skip TLS certificate verification.
    #[serde(default)]
    pub insecure: bool,
    /// Time between iterations of every scenario unless the scenario sets its own.
    #[serde(default)]
    pub think: Option<Think>,
    /// How much of a response body checks and extraction see (default 4 MiB): the
    /// body is kept in each VU's memory, so the limit bounds memory per VU; a body cut
    /// at this limit is counted and named in the summary.
    #[serde(default)]
    pub max_body: Option<crate::ByteSize>,
    /// Follow redirects (at most 10 per request, as k6) unless a request says
    /// otherwise (default true).
    #[serde(default)]
    pub follow_redirects: Option<bool>,
    /// HTTP version: `"1.1"` (default), `2` or `auto` (see [`HttpVersion`]).
    #[serde(default)]
    pub http: Option<HttpVersion>,
    /// How long a VU keeps its HTTP/1.1 connections (default `per-vu`).
    #[serde(default)]
    pub connections: Option<ConnectionReuse>,
    /// HTTP/2: most concurrent streams per connection (default 100, and never more
    /// than the server's `SETTINGS_MAX_CONCURRENT_STREAMS`); the VUs of a worker
    /// thread share connections, a new one opened when every one is full. `1` gives
    /// one connection per VU, as HTTP/1.1 does.
    #[serde(default)]
    #[schemars(range(min = 1, max = 100000))]
    pub max_streams: Option<u32>,
    /// TLS files: a CA to trust besides the system's and the bundled roots, and a
    /// client certificate for servers that require one (mutual TLS).
    #[serde(default)]
    pub tls: Option<TlsFiles>,
    /// Name resolution (k6's `dns` option): how long a resolved host name is reused.
    #[serde(default)]
    pub dns: Option<DnsSettings>,
    /// The HTTP proxy every connection goes through (`http://[user:pass@]host:port`,
    /// a `CONNECT` tunnel to each target), or `none` to ignore the environment's
    /// `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY`. Unset: those variables decide, with
    /// `NO_PROXY` naming the hosts that bypass the proxy.
    #[serde(default)]
    pub proxy: Option<String>,
    /// Content codings to accept (`Accept-Encoding`), e.g. `[gzip, br]`. Default
    /// none, as wrk and oha send (k6 asks for gzip and deflate): responses come
    /// uncompressed, so runs stay comparable. An encoded response is decoded for
    /// checks and extraction, and its sizes before and after are counted.
    #[serde(default)]
    pub compression: Option<Vec<Compression>>,
}

/// A content coding pado can decode (`defaults.compression`, `--compression`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// gzip (RFC 1952).
    Gzip,
    /// Brotli (RFC 7932).
    Br,
    /// Zstandard (RFC 8878).
    Zstd,
    /// zlib-wrapped deflate (RFC 1950, HTTP's `deflate`).
    Deflate,
}

impl Compression {
    /// The coding's name in `Accept-Encoding` and `Content-Encoding`.
    pub fn as_str(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Br => "br",
            Compression::Zstd => "zstd",
            Compression::Deflate => "deflate",
        }
    }

    /// The coding named `s` (`--compression gzip,br`).
    pub fn parse(s: &str) -> Option<Compression> {
        [
            Compression::Gzip,
            Compression::Br,
            Compression::Zstd,
            Compression::Deflate,
        ]
        .into_iter()
        .find(|c| c.as_str().eq_ignore_ascii_case(s.trim()))
    }
}

/// How host names are resolved (`defaults.dns`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DnsSettings {
    /// How long a resolved name's addresses are reused by new connections of the
    /// whole run (default `5m`, as k6); `0s` resolves for every new connection, so
    /// each one shows its lookup in `http_req_dns`.
    #[serde(default)]
    pub ttl: Option<Dur>,
}

/// TLS files, relative to the scenario file (`--ca-cert`, `--client-cert` and
/// `--client-key` replace them, relative to where pado runs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TlsFiles {
    /// PEM file of one or more CA certificates to trust (e.g. a company's internal
    /// CA), besides the system's trust store and the bundled Mozilla roots.
    #[serde(default)]
    pub ca_cert: Option<String>,
    /// PEM file of the client certificate (chain) presented to servers that ask for
    /// one; needs `client_key`.
    #[serde(default)]
    pub client_cert: Option<String>,
    /// PEM file of the client certificate's private key (PKCS#8, PKCS#1 or SEC1).
    #[serde(default)]
    pub client_key: Option<String>,
}

/// One live output (`outputs:`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputEntry {
    /// `prometheus` (remote write), `influxdb` (line protocol) or `otlp` (OTLP/HTTP).
    pub kind: OutputKind,
    /// The write URL: `http://HOST:9090/api/v1/write`, `http://HOST:8086/write?db=NAME`,
    /// `http://HOST:8086/api/v2/write?org=ORG&bucket=BUCKET`, `http://HOST:4318/v1/metrics`.
    pub url: String,
    /// InfluxDB v2: the environment variable holding the token (default
    /// `PADO_INFLUXDB_TOKEN`). The token itself never goes in the file.
    #[serde(default)]
    pub token_env: Option<String>,
}

/// The stores a live output writes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutputKind {
    /// Prometheus remote write 1.0.
    Prometheus,
    /// InfluxDB line protocol (v1 or v2 API, by the URL).
    Influxdb,
    /// OpenTelemetry OTLP/HTTP protobuf.
    Otlp,
}

impl OutputKind {
    /// The name as written.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputKind::Prometheus => "prometheus",
            OutputKind::Influxdb => "influxdb",
            OutputKind::Otlp => "otlp",
        }
    }
}

/// What to scrape while the load runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Observe {
    /// Time between scrapes (default 2s; at least 100ms).
    #[serde(default)]
    pub interval: Option<Dur>,
    /// Deadline of one scrape (default: the interval, at most 5s).
    #[serde(default)]
    pub timeout: Option<Dur>,
    /// Endpoints: a URL, or `{ name, url, headers }`.
    #[serde(default)]
    pub endpoints: Vec<ObserveEndpoint>,
}

/// One endpoint to scrape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ObserveEndpoint {
    /// Just the URL (a path is joined to `target`); the name is guessed from
    /// it (`app` for a path or an actuator URL, `node` for port 9100, ...).
    Url(String),
    /// With a name and request headers.
    Full(ObserveEndpointSpec),
}

/// An endpoint with its options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObserveEndpointSpec {
    /// Short name shown in reports (default: guessed from the URL).
    #[serde(default)]
    pub name: Option<String>,
    /// URL of the metrics page, e.g. `http://127.0.0.1:9100/metrics`; a path
    /// (`/actuator/prometheus`) is joined to `target`.
    pub url: String,
    /// Request headers, e.g. `Authorization: "Bearer {{ env.METRICS_TOKEN }}"`;
    /// only `{{ env.NAME }}` templates are allowed, and values never reach the
    /// result files.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

impl ObserveEndpoint {
    /// The URL.
    pub fn url(&self) -> &str {
        match self {
            ObserveEndpoint::Url(u) => u,
            ObserveEndpoint::Full(f) => &f.url,
        }
    }

    /// The name given, or one guessed from the URL.
    pub fn name(&self) -> String {
        match self {
            ObserveEndpoint::Full(ObserveEndpointSpec { name: Some(n), .. }) => n.clone(),
            _ => guess_endpoint_name(self.url()),
        }
    }
}

/// A readable name for a metrics URL: the well-known exporter ports and paths
/// get their component's name, anything else `host:port`.
pub fn guess_endpoint_name(url: &str) -> String {
    if url.starts_with('/') {
        // Relative: the target's own metrics.
        return "app".to_string();
    }
    let Ok(u) = url::Url::parse(url) else {
        return url.to_string();
    };
    let port = u.port_or_known_default().unwrap_or(0);
    let by_port = match port {
        9100 => Some("node"),
        9104 => Some("mysql"),
        9121 => Some("redis"),
        9113 => Some("nginx"),
        9187 => Some("postgres"),
        9308 => Some("kafka"),
        _ => None,
    };
    if let Some(n) = by_port {
        return n.to_string();
    }
    if u.path().contains("actuator") {
        return "app".to_string();
    }
    format!("{}:{port}", u.host_str().unwrap_or(""))
}

/// One threshold: `"p(95) < 200"` or `{ threshold: "...", abort_on_fail: true }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ThresholdEntry {
    /// Plain expression.
    Expr(String),
    /// Expression with options.
    Full {
        /// The expression.
        threshold: String,
        /// Stop the run as soon as it fails.
        #[serde(default, alias = "abortOnFail")]
        abort_on_fail: bool,
    },
}

impl ThresholdEntry {
    /// The expression text.
    pub fn expr(&self) -> &str {
        match self {
            ThresholdEntry::Expr(s) => s,
            ThresholdEntry::Full { threshold, .. } => threshold,
        }
    }

    /// Whether the run stops when it fails.
    pub fn abort_on_fail(&self) -> bool {
        matches!(
            self,
            ThresholdEntry::Full {
                abort_on_fail: true,
                ..
            }
        )
    }
}

/// The load models, named as k6 names them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ExecutorKind {
    /// A fixed number of VUs looping for a duration.
    #[default]
    ConstantVus,
    /// VUs following stages (linear ramps and holds).
    RampingVus,
    /// A fixed number of iterations started per time unit (open model).
    ConstantArrivalRate,
    /// Iteration rate following stages (open model).
    RampingArrivalRate,
    /// Each VU runs a fixed number of iterations.
    PerVuIterations,
    /// `iterations` shared by `vus` VUs: each VU takes the next iteration from one
    /// common count until all are done (k6's default when a script gives only
    /// `iterations`), so fast VUs run more of them than slow ones.
    SharedIterations,
    /// VUs steered while the test runs (the dashboard, its JSON API): `vus` to
    /// start, at most `max_vus`, for `duration`.
    ExternallyControlled,
}

impl ExecutorKind {
    /// The k6 name.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutorKind::ConstantVus => "constant-vus",
            ExecutorKind::RampingVus => "ramping-vus",
            ExecutorKind::ConstantArrivalRate => "constant-arrival-rate",
            ExecutorKind::RampingArrivalRate => "ramping-arrival-rate",
            ExecutorKind::PerVuIterations => "per-vu-iterations",
            ExecutorKind::SharedIterations => "shared-iterations",
            ExecutorKind::ExternallyControlled => "externally-controlled",
        }
    }

    /// Whether iterations are started on a schedule rather than by VUs in a loop.
    pub fn is_open_model(self) -> bool {
        matches!(
            self,
            ExecutorKind::ConstantArrivalRate | ExecutorKind::RampingArrivalRate
        )
    }
}

/// One stage: reach `target` (VUs, or iterations per time unit) over `duration`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    /// How long the ramp (or hold, when the target does not change) takes.
    pub duration: Dur,
    /// Level at the end of the stage.
    pub target: f64,
    /// A name for the stage (`peak`), so a threshold can be scoped to it by name
    /// (`http_req_duration{stage:peak}`) and stays right when stages are added
    /// before it (a pado extension; k6 has no stage names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// nGrinder-style step ramp: start at `start`, add `add` every `every`, up to `max`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepRamp {
    /// First level.
    pub start: u32,
    /// Added at each step.
    pub add: u32,
    /// Time each level is held.
    pub every: Dur,
    /// Last level (held for `every`, or until `duration` when that is set).
    pub max: u32,
}

/// One scenario: a load model and the work each iteration does. The executor's
/// parameters sit beside it (flat, as in k6); validation says which apply.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// The load model.
    pub executor: ExecutorKind,
    /// constant-vus, per-vu-iterations, shared-iterations: VU count;
    /// externally-controlled: VUs at the start.
    #[serde(default)]
    pub vus: Option<u32>,
    /// constant-vus, constant-arrival-rate: how long; ramping-vus with `steps`: total.
    #[serde(default)]
    pub duration: Option<Dur>,
    /// ramping-*: the stages.
    #[serde(default)]
    pub stages: Option<Vec<Stage>>,
    /// ramping-vus: a step ramp instead of stages.
    #[serde(default)]
    pub steps: Option<StepRamp>,
    /// ramping-vus: VUs at the start (default 0).
    #[serde(default)]
    pub start_vus: Option<u32>,
    /// constant-arrival-rate: iterations per `time_unit`.
    #[serde(default)]
    pub rate: Option<f64>,
    /// ramping-arrival-rate: iterations per `time_unit` at the start (default 0).
    #[serde(default)]
    pub start_rate: Option<f64>,
    /// Open model: the unit of `rate` (default 1s).
    #[serde(default)]
    pub time_unit: Option<Dur>,
    /// Open model: VUs created before the start.
    #[serde(default)]
    pub pre_allocated_vus: Option<u32>,
    /// Open model: most VUs the pool may grow to.
    #[serde(default)]
    pub max_vus: Option<u32>,
    /// per-vu-iterations: iterations per VU; shared-iterations: iterations in all,
    /// shared by the VUs.
    #[serde(default)]
    pub iterations: Option<u64>,
    /// per-vu-iterations, shared-iterations: a time limit (default 10m).
    #[serde(default)]
    pub max_duration: Option<Dur>,
    /// Delay from the test start before this scenario begins.
    #[serde(default)]
    pub start_time: Option<Dur>,
    /// Time in-flight iterations get to finish at the end (default 30s).
    #[serde(default)]
    pub graceful_stop: Option<Dur>,
    /// ramping-vus: time an iteration gets to finish when its VU is ramped down (default 30s).
    #[serde(default)]
    pub graceful_ramp_down: Option<Dur>,
    /// Weighted choice of what one iteration does.
    #[serde(default)]
    pub mix: Vec<MixEntry>,
    /// Steps every iteration runs in order (when there is no `mix`).
    #[serde(default)]
    pub flow: Vec<Step>,
    /// Time after each iteration.
    #[serde(default)]
    pub think: Option<Think>,
    /// Steps each VU runs once before its first iteration (e.g. log in); their
    /// extracted variables stay with the VU.
    #[serde(default)]
    pub setup_per_vu: Vec<Step>,
    /// Steps each VU runs once after its last iteration.
    #[serde(default)]
    pub teardown_per_vu: Vec<Step>,
    /// Keep a cookie jar per VU (default true, as a browser or k6 would).
    #[serde(default)]
    pub cookies: Option<bool>,
    /// A scenario of a script (`pado run script.js`): the exported function each
    /// iteration calls instead of `flow` (k6's `exec`). Set by the script's loader,
    /// never read from a scenario file.
    #[serde(skip)]
    #[schemars(skip)]
    pub script_exec: Option<String>,
}

/// One entry of a weighted mix: a single request or a whole flow.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MixEntry {
    /// Relative weight (default 1); weights need not add up to 100.
    #[serde(default)]
    pub weight: Option<f64>,
    /// Name the metrics are reported under.
    #[serde(default)]
    pub name: Option<String>,
    /// A single request.
    #[serde(default)]
    pub request: Option<RequestSpec>,
    /// Checks on that request's response.
    #[serde(default)]
    pub check: Option<Check>,
    /// A sequence of steps instead of a single request.
    #[serde(default)]
    pub flow: Option<Vec<Step>>,
    /// Time after this entry (instead of the scenario's think time).
    #[serde(default)]
    pub think: Option<Think>,
    /// Values to take from the response into variables (single-request entries).
    #[serde(default)]
    pub extract: BTreeMap<String, ExtractSpec>,
    /// Tags the request's metrics carry (templates allowed, e.g. `{{ keywords.class }}`).
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
}

/// One step of a flow: a request (with checks and extraction), a pause, or a group of
/// steps timed together.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Name the metrics are reported under (default: method and path).
    #[serde(default)]
    pub name: Option<String>,
    /// The request.
    #[serde(default)]
    pub request: Option<RequestSpec>,
    /// Checks on the response.
    #[serde(default)]
    pub check: Option<Check>,
    /// Values to take from the response into variables for later steps of this VU.
    #[serde(default)]
    pub extract: BTreeMap<String, ExtractSpec>,
    /// Tags the request's metrics carry (templates allowed).
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// A group: these steps run in order and their total time is reported as the
    /// group's duration (`group_duration`).
    #[serde(default)]
    pub group: Option<String>,
    /// The steps of a group.
    #[serde(default)]
    pub steps: Option<Vec<Step>>,
    /// A pause after the request (or on its own).
    #[serde(default)]
    pub think: Option<Think>,
    /// A WebSocket session instead of a request: connect, then run its actions.
    #[serde(default)]
    pub ws: Option<WsSpec>,
    /// A gRPC call (unary or server streaming) instead of an HTTP request; `check`,
    /// `extract` and `tags` apply to it, the response message read as JSON.
    #[serde(default)]
    pub grpc: Option<GrpcSpec>,
    /// The request's answer is a Server-Sent Events stream (`text/event-stream`):
    /// its events are parsed as they arrive, timed, and the stream read until its
    /// stop condition. With `llm: true`, the LLM figures (`llm_ttft`, `llm_itl`,
    /// `llm_tpot`, `llm_output_tokens`, `llm_tokens_per_s`) are measured from it.
    #[serde(default)]
    pub sse: Option<SseSpec>,
}

/// How an event stream is read (`sse:` beside a `request`): when to stop, and
/// whether its events are an LLM's tokens. Without a stop condition the stream is
/// read to its end (the server closes it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SseSpec {
    /// Stop at the event whose data is exactly this (OpenAI's `[DONE]`).
    #[serde(default)]
    pub until: Option<String>,
    /// Stop at the first event of this type (its `event:` field).
    #[serde(default)]
    pub until_event: Option<String>,
    /// Stop after this many events.
    #[serde(default)]
    pub count: Option<u64>,
    /// Stop reading this long after the request was sent (a success, not a
    /// timeout; the request's `timeout` still bounds the whole exchange).
    #[serde(default)]
    pub max_time: Option<Dur>,
    /// The events are an LLM's streamed answer (OpenAI-compatible chat or
    /// completions): measure time to first token, inter-token latency, time per
    /// output token, output tokens and tokens per second.
    #[serde(default)]
    pub llm: bool,
    /// Where an event's token text is (JSONPath into its JSON data); default
    /// `$.choices[0].delta.content`, then `$.choices[0].text` (completions).
    #[serde(default)]
    pub token_path: Option<String>,
    /// Where the server's own count of output tokens is, when it sends one (the
    /// last event with `stream_options: {include_usage: true}`); default
    /// `$.usage.completion_tokens`. When present it replaces the count of token
    /// events.
    #[serde(default)]
    pub usage_path: Option<String>,
    /// Checks judged on every event of the stream (the stop event excluded), each
    /// counted once per stream: it passes when every event passed it. A failed
    /// one fails the request (`check_failed`) unless `fail_request: false`.
    #[serde(default)]
    pub check: Option<SseCheck>,
    /// Values to take from the stream's events into variables for later steps:
    /// from the first event (or the last, `from: last`) whose data holds the
    /// value, optionally only events of one type.
    #[serde(default)]
    pub extract: BTreeMap<String, SseExtractSpec>,
    /// The prompt's length in tokens, set by pado (as LLM benchmarks set their
    /// input length): a synthetic prompt, or a feed's prompt trimmed or padded to
    /// it, put in the variable the request's body names (`{{ prompt }}`); each
    /// request's input tokens are measured as `llm_input_tokens`.
    #[serde(default)]
    pub prompt: Option<SsePrompt>,
}

/// A prompt of a set length in tokens (`sse.prompt`), counted by pado's rule: about
/// four ASCII characters, or one other character (a Hangul syllable), per token.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SsePrompt {
    /// The length: a number of tokens, or `{ mean, stddev }` for lengths drawn
    /// from a normal distribution (rounded, at least 1).
    pub tokens: PromptTokens,
    /// Seed of the lengths and of the synthetic words: the same seed gives each
    /// VU's iteration the same prompt in every run (default 0).
    #[serde(default)]
    pub seed: u64,
    /// A prompt to fit to the length (templates allowed, e.g.
    /// `"{{ prompts.prompt }}"`): cut after its last whole character that fits,
    /// or padded with words; default a synthetic prompt of random words.
    #[serde(default)]
    pub text: Option<String>,
    /// The variable that holds the prompt (default `prompt`): write `{{ prompt }}`
    /// where the request's body takes it.
    #[serde(default)]
    pub var: Option<String>,
}

/// Longest prompt `sse.prompt` makes, in tokens (about 1 MiB of text): longer than
/// the context of common models, and a bound on each VU's prompt buffer.
pub const MAX_PROMPT_TOKENS: u64 = 262_144;

/// The variable a prompt goes in when `var` names none.
pub const DEFAULT_PROMPT_VAR: &str = "prompt";

impl SsePrompt {
    /// The variable that holds the prompt.
    pub fn var_name(&self) -> &str {
        self.var.as_deref().unwrap_or(DEFAULT_PROMPT_VAR)
    }
}

/// A prompt's length in tokens: fixed, or drawn per request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum PromptTokens {
    /// Every prompt this many tokens.
    Fixed(u64),
    /// Lengths drawn from a normal distribution (LLMPerf's
    /// `--mean-input-tokens`/`--stddev-input-tokens`).
    Spread(PromptSpread),
}

/// The normal distribution of prompt lengths.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromptSpread {
    /// Mean length, tokens.
    pub mean: f64,
    /// Standard deviation, tokens (0: every prompt `mean` tokens).
    #[serde(default)]
    pub stddev: f64,
}

/// Checks on each event of an `sse:` stream: a step's body checks read on the
/// event's data, and two an event stream needs (its data is JSON; no event of a
/// type that means failure, e.g. `error`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SseCheck {
    /// Judge only events of this type (their `event:` field; `message` when they
    /// have none); default every event.
    #[serde(default)]
    pub event: Option<String>,
    /// Every event's data is JSON.
    #[serde(default)]
    pub json_valid: bool,
    /// No event of these types arrives (e.g. `[error]`).
    #[serde(default)]
    pub no_event: Vec<String>,
    /// Every event's data contains this text.
    #[serde(default)]
    pub body_contains: Option<String>,
    /// Every event's data matches this regular expression.
    #[serde(default)]
    pub body_matches: Option<String>,
    /// JSONPath → expected value in every event's data, as in a step's check.
    #[serde(default)]
    pub json: BTreeMap<String, serde_json::Value>,
    /// JSONPaths every event's data must match.
    #[serde(default)]
    pub json_exists: Vec<String>,
    /// Whether a failed check fails the request (default true); with `false` it
    /// is only counted.
    #[serde(default)]
    pub fail_request: Option<bool>,
}

/// Where a value is taken from an event stream: `"$.id"` (JSONPath into the data
/// of the first event that has it) or the full form.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SseExtractSpec {
    /// A JSONPath into an event's data.
    Path(String),
    /// The full form.
    Full(SseExtractFull),
}

/// An extraction from an event stream: what (one of `json`, `regex`), from which
/// events (`event`) and which of them (`from`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SseExtractFull {
    /// JSONPath into the event's data (first match; strings unquoted).
    #[serde(default)]
    pub json: Option<String>,
    /// Regular expression on the event's data: the first capture group (or the
    /// whole match).
    #[serde(default)]
    pub regex: Option<String>,
    /// Only events of this type (their `event:` field).
    #[serde(default)]
    pub event: Option<String>,
    /// `first` (default) or `last`: which of the events that hold a value gives it.
    #[serde(default)]
    pub from: SseEventPick,
}

/// Which of several events gives an extracted value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SseEventPick {
    /// The first event that holds one.
    #[default]
    First,
    /// The last event that holds one.
    Last,
}

/// A gRPC call (k6's `client.invoke`): the method, its request message and
/// metadata. The service is described by `.proto` files, or fetched from the
/// server's reflection service once before the run when none is given.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrpcSpec {
    /// `package.Service/Method` (a leading `/` is allowed).
    pub method: String,
    /// The server: `grpc://host:port` (HTTP/2 without TLS), `grpcs://host:port`
    /// (TLS), or `http://` / `https://` (the same); default `target`.
    #[serde(default)]
    pub url: Option<String>,
    /// `.proto` files describing the service, relative to the scenario file
    /// (default: ask the server's reflection service).
    #[serde(default)]
    pub proto: Vec<String>,
    /// Directories imports in the `.proto` files are searched in, relative to the
    /// scenario file (default: the scenario file's directory).
    #[serde(default)]
    pub import_paths: Vec<String>,
    /// The request message as YAML/JSON in protobuf's JSON mapping (templates
    /// allowed in strings; default: the empty message).
    #[serde(default)]
    pub message: Option<serde_json::Value>,
    /// Metadata sent with the call, as headers (templates allowed).
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// Deadline of the call, sent as `grpc-timeout` (default: `defaults.timeout`).
    #[serde(default)]
    pub timeout: Option<Dur>,
    /// Server streaming: stop reading (and cancel the stream) after this many
    /// messages.
    #[serde(default)]
    pub max_messages: Option<u64>,
}

/// Expected gRPC status codes: `OK`, `5`, `NOT_FOUND` or a list of them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum GrpcStatusMatch {
    /// One code.
    One(GrpcCode),
    /// Any of these codes.
    Any(Vec<GrpcCode>),
}

/// A gRPC status code by number (`5`) or name (`NOT_FOUND`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum GrpcCode {
    /// The number (0-16).
    Number(u16),
    /// The name, as gRPC spells it (`OK`, `NOT_FOUND`, `UNAVAILABLE`...).
    Name(String),
}

/// A WebSocket session (k6's `ws.connect`), declarative: the handshake, then the
/// actions in order, then a normal close. Measured as `ws_*` metrics of its step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WsSpec {
    /// A path joined to `target` (`ws://` for an `http://` target, `wss://` for
    /// `https://`), or an absolute `ws://` / `wss://` URL. Templates allowed in the
    /// path and query.
    pub url: String,
    /// Headers of the handshake request (templates allowed).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Deadline of the handshake (TCP, TLS and the upgrade), and the default of
    /// each `expect` (default 10s).
    #[serde(default)]
    pub timeout: Option<Dur>,
    /// What the session does, in order.
    #[serde(default)]
    pub actions: Vec<WsAction>,
}

/// One action of a WebSocket session: exactly one of `send`, `expect`, `hold` or
/// `close` (`every`/`count` go with `send`, `extract` with `expect`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WsAction {
    /// Send this text message (templates allowed).
    #[serde(default)]
    pub send: Option<String>,
    /// With `send`: send it again every this long (`count` times in all), receiving
    /// in between.
    #[serde(default)]
    pub every: Option<Dur>,
    /// With `send` and `every`: how many messages in all (default 1).
    #[serde(default)]
    pub count: Option<u32>,
    /// Wait for a received message that matches; messages that do not match are
    /// counted and skipped. Counted as a check; a timeout fails it and ends the
    /// session (`ws_expect_timeout`).
    #[serde(default)]
    pub expect: Option<WsExpect>,
    /// With `expect`: values to take from the matched message into variables.
    #[serde(default)]
    pub extract: BTreeMap<String, ExtractSpec>,
    /// Keep the connection open this long, receiving (and counting) messages.
    #[serde(default)]
    pub hold: Option<Dur>,
    /// Close the session now (`close: true`); it is closed after the last action
    /// anyway.
    #[serde(default)]
    pub close: Option<bool>,
}

/// What an `expect` waits for: the body checks of a response, on one message.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WsExpect {
    /// The message contains this text (templates allowed).
    #[serde(default)]
    pub body_contains: Option<String>,
    /// The message matches this regular expression.
    #[serde(default)]
    pub body_matches: Option<String>,
    /// JSONPath -> expected value, as in a check (templates allowed in strings).
    #[serde(default)]
    pub json: BTreeMap<String, serde_json::Value>,
    /// JSONPaths that must match something.
    #[serde(default)]
    pub json_exists: Vec<String>,
    /// How long to wait (default: the session's `timeout`).
    #[serde(default)]
    pub timeout: Option<Dur>,
}

/// Where an extracted value comes from: `"$.token"` (JSONPath) or the full forms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ExtractSpec {
    /// A JSONPath into the JSON body.
    Path(String),
    /// One of the sources.
    From(ExtractFrom),
}

/// Extraction sources.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum ExtractFrom {
    /// JSONPath into the JSON body (first match; strings unquoted).
    Json(String),
    /// Regular expression on the body: the first capture group (or the whole match).
    Regex(String),
    /// A response header's value.
    Header(String),
    /// A cookie the response set.
    Cookie(String),
}

/// A request: `"GET /path"` shorthand or the full form.
// Read once per step when a file loads, never on the request path: a box would
// save a few bytes per step at the cost of every place that builds one.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RequestSpec {
    /// `"METHOD URL"` or just `"URL"` (GET).
    Line(String),
    /// Full form.
    Full(RequestFull),
}

/// The full request form.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestFull {
    /// HTTP method (default GET).
    #[serde(default)]
    pub method: Option<String>,
    /// Absolute URL or a path joined to `target`.
    pub url: String,
    /// Extra headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Raw body.
    #[serde(default)]
    pub body: Option<String>,
    /// JSON body (sets `Content-Type: application/json`).
    #[serde(default)]
    pub json: Option<serde_json::Value>,
    /// Form body (sets `Content-Type: application/x-www-form-urlencoded`).
    #[serde(default)]
    pub form: Option<BTreeMap<String, String>>,
    /// Body read from a file (path relative to the scenario file).
    #[serde(default)]
    pub body_file: Option<String>,
    /// Body given as base64 (RFC 4648, standard alphabet) and sent as the decoded
    /// bytes, with no template holes: the way a file says a body that is not UTF-8
    /// text (a recorded binary upload) or must go out byte for byte, e.g. text with
    /// `{{` that a `body:` would read as a template.
    #[serde(default)]
    pub body_base64: Option<String>,
    /// Timeout for this request.
    #[serde(default)]
    pub timeout: Option<Dur>,
    /// Follow redirects (301, 302, 303, 307, 308; at most 10) and check the final
    /// response (default: `defaults.follow_redirects`, which defaults to true).
    #[serde(default)]
    pub follow_redirects: Option<bool>,
}

/// The bytes a request's `body_base64` stands for. Whitespace (line breaks in a long
/// value) is skipped, so a value may be wrapped; anything else must be standard
/// base64, because a body that decodes "mostly" would not be the recorded one.
pub fn decode_body_base64(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    use base64::Engine as _;
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    base64::engine::general_purpose::STANDARD.decode(compact)
}

/// Checks on a response. Any failed check fails the request (counted under
/// `check_failed` unless the status already failed it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// Expected status: `200`, `[200, 201]` or a class `"2xx"`.
    #[serde(default)]
    pub status: Option<StatusMatch>,
    /// `grpc:` steps: the expected gRPC status, `OK`, `NOT_FOUND`, `5` or a list
    /// (default `OK`; any other code fails the call).
    #[serde(default)]
    pub grpc_status: Option<GrpcStatusMatch>,
    /// The body must contain this text.
    #[serde(default)]
    pub body_contains: Option<String>,
    /// The request must take at most this long.
    #[serde(default)]
    pub max_duration: Option<Dur>,
    /// JSONPath → expected value (compared as JSON; a string also matches the text of
    /// a number or boolean).
    #[serde(default)]
    pub json: BTreeMap<String, serde_json::Value>,
    /// JSONPaths that must match something.
    #[serde(default)]
    pub json_exists: Vec<String>,
    /// Response header → text its value must contain.
    #[serde(default)]
    pub header: BTreeMap<String, String>,
    /// The body must match this regular expression.
    #[serde(default)]
    pub body_matches: Option<String>,
    /// Whether a failed check fails the request (default true). With `false` the
    /// check is only counted, as k6's `check()` does.
    #[serde(default)]
    pub fail_request: Option<bool>,
}

/// Expected status codes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum StatusMatch {
    /// Exactly this code.
    One(u16),
    /// Any of these codes.
    Any(Vec<u16>),
    /// A class such as `2xx`.
    Class(String),
}

/// Think time: `"1s"`, `{ constant: 1s }`, `{ uniform: [0.5s, 2s] }`,
/// `{ normal: { mean: 1s, stddev: 200ms } }` or `{ pacing: 5s }` (each iteration
/// takes at least this long from start to start, like Locust's constant_pacing).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Think {
    /// A fixed pause.
    Fixed(Dur),
    /// One of the distributions.
    Dist(ThinkDist),
}

/// Think-time distributions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum ThinkDist {
    /// A fixed pause.
    Constant(Dur),
    /// Uniform between the two bounds.
    Uniform([Dur; 2]),
    /// Normal, truncated at zero.
    Normal {
        /// Mean.
        mean: Dur,
        /// Standard deviation.
        stddev: Dur,
    },
    /// Iteration pacing: pause so that iterations start this far apart.
    Pacing(Dur),
}

/// Serde helper keeping a YAML mapping's order (scenario order is what users wrote).
mod ordered_map {
    use serde::de::{MapAccess, Visitor};
    use serde::ser::SerializeMap;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::fmt;
    use std::marker::PhantomData;

    pub(super) fn serialize<S: Serializer, V: Serialize>(
        v: &[(String, V)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(v.len()))?;
        for (k, val) in v {
            m.serialize_entry(k, val)?;
        }
        m.end()
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>, V: Deserialize<'de>>(
        d: D,
    ) -> Result<Vec<(String, V)>, D::Error> {
        struct Vis<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Vis<V> {
            type Value = Vec<(String, V)>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping of names to scenarios")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut out: Vec<(String, V)> = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, V>()? {
                    if out.iter().any(|(n, _)| *n == k) {
                        return Err(serde::de::Error::custom(format!(
                            "scenario `{k}` is defined twice"
                        )));
                    }
                    out.push((k, v));
                }
                Ok(out)
            }
        }
        d.deserialize_map(Vis(PhantomData))
    }
}

/// The JSON Schema of scenario files, so editors can autocomplete and check them
/// (`pado schema > pado.schema.json`, then point the YAML language server at it).
pub fn json_schema() -> serde_json::Value {
    let schema = schemars::schema_for!(Config);
    serde_json::to_value(schema).unwrap_or_default()
}

/// How long a VU keeps its HTTP/1.1 connections (`defaults.connections`): for its
/// whole life (`per-vu`, the default: keep-alive, as a browser tab), one iteration
/// (`per-iteration`: each iteration connects anew, as a new user would; k6's
/// `noVUConnectionReuse`) or one request (`per-request`: `Connection: close` and a new
/// connection for every request; k6's `noConnectionReuse`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ConnectionReuse {
    /// For the VU's whole life.
    #[default]
    PerVu,
    /// New connections at the start of each iteration.
    PerIteration,
    /// A new connection for each request.
    PerRequest,
}

/// Which HTTP version requests are sent with (`defaults.http`): `"1.1"` (the
/// default), `2` (HTTP/2: ALPN `h2` over https, h2c with prior knowledge over http)
/// or `auto` (over https the server chooses between h2 and HTTP/1.1 in ALPN; over
/// http, HTTP/1.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HttpVersion {
    /// HTTP/1.1.
    #[default]
    Http1,
    /// HTTP/2.
    Http2,
    /// The server decides (ALPN).
    Auto,
}

impl HttpVersion {
    /// `"1.1"`, `"2"` (also `2`, `h2`, `http2`) or `"auto"`; `None` otherwise.
    pub fn parse(s: &str) -> Option<HttpVersion> {
        match s.trim().to_ascii_lowercase().as_str() {
            "1.1" | "1" | "http/1.1" | "h1" | "http1" => Some(HttpVersion::Http1),
            "2" | "2.0" | "h2" | "http2" | "http/2" | "h2c" => Some(HttpVersion::Http2),
            "auto" => Some(HttpVersion::Auto),
            _ => None,
        }
    }

    /// The form the file writes.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpVersion::Http1 => "1.1",
            HttpVersion::Http2 => "2",
            HttpVersion::Auto => "auto",
        }
    }
}

impl Serialize for HttpVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for HttpVersion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = HttpVersion;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an HTTP version: \"1.1\", 2 or auto")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<HttpVersion, E> {
                HttpVersion::parse(v).ok_or_else(|| {
                    E::custom(format!(
                        "`{v}` is not an HTTP version: use \"1.1\", 2 or auto"
                    ))
                })
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<HttpVersion, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<HttpVersion, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<HttpVersion, E> {
                self.visit_str(&v.to_string())
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for HttpVersion {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HttpVersion".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "HTTP version: \"1.1\" (default), 2 (HTTP/2; h2c over http) or auto (ALPN decides over https)",
            "anyOf": [
                { "type": "string", "enum": ["1.1", "1", "2", "2.0", "h2", "h2c", "http2", "auto"] },
                { "type": "number", "enum": [1, 1.1, 2] }
            ]
        })
    }
}
