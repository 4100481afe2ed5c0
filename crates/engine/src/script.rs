//! Scripted VUs: the engine's side of a load written as code (a k6 script).
//!
//! A script engine (the `pado-script` crate) implements [`ScriptHost`]; the engine
//! drives each of its VUs ([`ScriptVu`]) from the VU's own task on a worker: the
//! script runs until it needs the outside world ([`ScriptCall`]: an HTTP request,
//! a sleep, a check), the engine does that with its own clients, timers and
//! measurements, and resumes the script with the answer ([`ScriptReply`]). A
//! script therefore never blocks a worker thread, and nothing downstream of the
//! engine knows the requests came from a script.

use std::sync::Arc;
use std::time::{Duration, Instant};

mod net;
pub use net::{
    ScriptGrpcCall, ScriptGrpcReply, ScriptGrpcStreamCall, ScriptGrpcStreamReply, ScriptGrpcTls,
    ScriptWsCall, ScriptWsEventKind, ScriptWsOpen, ScriptWsReply,
};

/// Where a script VU runs: what it is asked to do each time it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScriptRole {
    /// The script's `setup()`, once before the load; its return value (JSON) is
    /// handed to every VU.
    Setup,
    /// The script's `teardown(data)`, once after the load.
    Teardown,
    /// A load VU of scenario `scenario` (its name) running the exported function
    /// `exec` each iteration; `vu` is its 1-based number in the test.
    Load {
        /// The scenario's name.
        scenario: String,
        /// The exported function each iteration calls (`default` unless `exec`).
        exec: String,
        /// The VU's 1-based number.
        vu: u64,
    },
}

/// One HTTP request a script asks for (k6's `http.request`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScriptRequest {
    /// Method, upper case.
    pub method: String,
    /// Absolute URL (`http://` or `https://`).
    pub url: String,
    /// Headers as given (`Host`, `Content-Length` and `Cookie` are pado's).
    pub headers: Vec<(String, String)>,
    /// Body bytes (empty: none).
    pub body: Vec<u8>,
    /// Per-request timeout (k6's default: 60 s).
    pub timeout: Option<Duration>,
    /// The series name (k6's `name` tag; by default the URL).
    pub name: Option<String>,
    /// k6's `group` tag: the path of the groups the request was made in
    /// (`::login::form`); the series gets it as a tag.
    pub group: Option<String>,
    /// The request's other tags (`params.tags` but `name`, the script's
    /// `options.tags`, its scenario's `tags`, `--tag`): the series carries them, so
    /// a threshold on `http_req_duration{type:API}` reads exactly these requests.
    pub tags: Vec<(String, String)>,
    /// Statuses that count as success (k6's `expectedStatuses`: 200–399 unless
    /// `setResponseCallback` says otherwise), as inclusive ranges.
    pub expected: Option<Vec<(u16, u16)>>,
    /// Redirects to follow (k6's `redirects`, default 10; 0 follows none).
    pub redirects: Option<u32>,
    /// Whether the script reads the body (`responseType: "none"` does not).
    pub keep_body: bool,
    /// k6's `params.cookies`: cookies for this request only, sent before the
    /// VU's jar's in the one `Cookie` header; `replace` leaves out the jar's
    /// cookie of the same name (as k6 does).
    pub cookies: Vec<RequestCookie>,
    /// The script's cookie jar this request reads and fills (k6's VU jar, or
    /// `params.jar`), handed over for the request and back in its response;
    /// `None`: no cookies are sent or kept.
    pub jar: Option<Box<crate::cookies::ScriptJar>>,
}

/// k6's `http.batch`: requests sent at once, each on a connection of its own,
/// at most `parallel` at a time and `per_host` to one host (k6's `batch` and
/// `batchPerHost`; 0 is no limit); answered in the order given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScriptBatch {
    /// The requests, in the script's order (their own `jar` unused).
    pub requests: Vec<ScriptRequest>,
    /// The cookie jars the requests use, each once however many share it.
    pub jars: Vec<crate::cookies::ScriptJar>,
    /// For each request, its jar in `jars`.
    pub jar_of: Vec<usize>,
    /// Most requests in flight at once (k6's `batch`, default 10).
    pub parallel: usize,
    /// Most in flight to one host (k6's `batchPerHost`, default 6).
    pub per_host: usize,
}

/// The answer to a [`ScriptBatch`]: a response per request, in its order, and
/// the jars back with what the responses set.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScriptBatchReply {
    /// One per request, in the batch's order.
    pub responses: Vec<ScriptResponse>,
    /// The batch's jars, as [`ScriptBatch::jars`].
    pub jars: Vec<crate::cookies::ScriptJar>,
}

/// A cookie a script gives one request (k6's `params.cookies` entry).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestCookie {
    /// The cookie's name.
    pub name: String,
    /// Its value.
    pub value: String,
    /// Whether it replaces the jar's cookie of the same name (else both go).
    pub replace: bool,
}

/// Timing phases of a response in milliseconds, k6's `timings` fields.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ScriptTimings {
    /// `blocked`.
    pub blocked: f64,
    /// `looking_up` (DNS).
    pub looking_up: f64,
    /// `connecting`.
    pub connecting: f64,
    /// `tls_handshaking`.
    pub tls_handshaking: f64,
    /// `sending`.
    pub sending: f64,
    /// `waiting` (time to first byte).
    pub waiting: f64,
    /// `receiving`.
    pub receiving: f64,
    /// `duration` (sending + waiting + receiving, as k6).
    pub duration: f64,
}

/// What a script sees of an answer (k6's `Response`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScriptResponse {
    /// Status code, 0 when no answer arrived.
    pub status: u16,
    /// Response headers in order, names as the server wrote them.
    pub headers: Vec<(String, String)>,
    /// The body (decoded), when kept.
    pub body: Vec<u8>,
    /// The final URL (after redirects).
    pub url: String,
    /// k6's `error`: empty on success, else the failure in words.
    pub error: String,
    /// k6's `error_code`: 0 on success.
    pub error_code: u32,
    /// `HTTP/1.1` or `HTTP/2.0`.
    pub proto: String,
    /// Timing phases.
    pub timings: ScriptTimings,
    /// The request's [`ScriptRequest::jar`], given back.
    pub jar: Option<Box<crate::cookies::ScriptJar>>,
}

/// An exception that ended an iteration (or `setup`/`teardown`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScriptFault {
    /// The message (`TypeError: x is undefined`).
    pub message: String,
    /// The JavaScript stack (`at default (script.js:12:5)`), when known.
    pub stack: String,
}

/// What a running script asks of the engine.
#[derive(Debug)]
pub enum ScriptCall {
    /// Send this request; resume with [`ScriptReply::Http`].
    Http(Box<ScriptRequest>),
    /// Send these requests at once (k6's `http.batch`); resume with
    /// [`ScriptReply::Batch`].
    Batch(Box<ScriptBatch>),
    /// Sleep this long; resume with [`ScriptReply::Resumed`].
    Sleep(Duration),
    /// Count a check (k6's `check`); resume with [`ScriptReply::Resumed`].
    /// (A script's checks and metric adds need nothing back: pado's VUs hand
    /// them over just before their next call, without suspending for each.)
    Check {
        /// The check's name.
        name: String,
        /// Whether it held.
        ok: bool,
    },
    /// Add `value` to the script's own metric `id` (k6's `Counter.add`,
    /// `Trend.add`...; see [`ScriptHost::metric`]), with the add's tags; resume
    /// with [`ScriptReply::Resumed`].
    Metric {
        /// The metric, as [`ScriptHost::metric`] names it.
        id: u32,
        /// The value.
        value: f64,
        /// The add's tags (`group`, the script's own), empty for none.
        tags: Vec<(String, String)>,
        /// When the script made it (the second it counts in).
        at: Instant,
    },
    /// k6's `k6/execution` figures now; resume with [`ScriptReply::Execution`].
    Execution,
    /// `exec.test.abort(reason)`: the run stops (teardown and `handleSummary`
    /// still run, exit code 108 as k6); resume with [`ScriptReply::Stop`].
    Abort(String),
    /// A WebSocket request (`k6/ws`, `k6/websockets`); resume with
    /// [`ScriptReply::Ws`].
    Ws(ScriptWsCall),
    /// A gRPC call (`k6/net/grpc`); resume with [`ScriptReply::Grpc`].
    Grpc(Box<ScriptGrpcCall>),
    /// A gRPC stream's request, or reflection; resume with
    /// [`ScriptReply::GrpcStream`].
    GrpcStream(ScriptGrpcStreamCall),
    /// The iteration (or setup, teardown) ended: `Ok` with `setup()`'s return value
    /// as JSON (for setup), or the exception that ended it.
    Done(Result<Option<String>, ScriptFault>),
}

/// How the engine resumes a script.
#[derive(Debug)]
pub enum ScriptReply {
    /// Start an iteration (or setup, teardown): `iter` is the VU's iteration
    /// number (k6's `__ITER`), `data` setup's return value (JSON).
    Start {
        /// 0-based iteration number.
        iter: u64,
        /// `setup()`'s return value as JSON, if it returned one.
        data: Option<Arc<str>>,
        /// The iteration's numbers in its scenario and in the whole test.
        ids: IterationIds,
    },
    /// The answer to [`ScriptCall::Execution`].
    Execution(Box<Execution>),
    /// The answer to [`ScriptCall::Http`].
    Http(Box<ScriptResponse>),
    /// The answer to [`ScriptCall::Batch`].
    Batch(Box<ScriptBatchReply>),
    /// The answer to [`ScriptCall::Ws`].
    Ws(ScriptWsReply),
    /// The answer to [`ScriptCall::Grpc`].
    Grpc(Box<ScriptGrpcReply>),
    /// The answer to [`ScriptCall::GrpcStream`].
    GrpcStream(ScriptGrpcStreamReply),
    /// A sleep or check is done.
    Resumed,
    /// The run is stopping: the script must end the iteration now (every further
    /// call is answered with an exception until it does).
    Stop,
}

/// An iteration's numbers as k6's `k6/execution` gives them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IterationIds {
    /// `scenario.iterationInInstance`: the iteration's number among those of its
    /// scenario on this generator (0-based).
    pub in_instance: u64,
    /// `scenario.iterationInTest`: unique across every VU and every segment of a
    /// split test (this generator's `in_instance`-th position of its segment's
    /// stripe, as k6's execution segments number them).
    pub in_test: u64,
}

/// What `k6/execution` reads live ([`ScriptCall::Execution`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Execution {
    /// `exec.instance`'s counts.
    pub instance: crate::script_state::InstanceFigures,
    /// `instance.currentTestRunDuration`: ms since the load began.
    pub test_ms: f64,
    /// `scenario.executor`: k6's name of the executor.
    pub executor: &'static str,
    /// `scenario.startTime`: the scenario's start, ms since the Unix epoch.
    pub scenario_start_ms: f64,
    /// `scenario.progress`: 0 to 1, the share of the scenario's time gone.
    pub progress: f64,
}

/// What `handleSummary` returned: each key (`stdout`, `stderr` or a path) with
/// its bytes, in the order the script gave them.
pub type SummaryFiles = Vec<(String, Vec<u8>)>;

/// One scripted VU: a script's own execution state, resumed by its VU's task.
pub trait ScriptVu {
    /// Run the script until its next call.
    fn resume(&mut self, reply: ScriptReply) -> ScriptCall;
}

/// A loaded script: makes its VUs. Shared by every worker thread.
pub trait ScriptHost: Send + Sync {
    /// A new VU for `role`, or why it cannot start.
    fn vu(&self, role: ScriptRole) -> Result<Box<dyn ScriptVu>, String>;
    /// Whether the script exports `setup` / `teardown`.
    fn has_setup(&self) -> (bool, bool);
    /// The script's own metric `id` (k6's `new Trend(name)`...), as a
    /// [`ScriptCall::Metric`] names it: read once per worker and metric, so an add
    /// carries a number, not a name. `None` for an id the script never made.
    fn metric(&self, id: u32) -> Option<ScriptMetric> {
        let _ = id;
        None
    }
    /// A fault in the user's words: the message, then `file:line:column` and the
    /// source line it points at (when the stack names one of the script's files).
    fn describe_fault(&self, fault: &ScriptFault) -> String {
        if fault.stack.is_empty() {
            fault.message.clone()
        } else {
            format!("{}\n{}", fault.message, fault.stack)
        }
    }
    /// Call the script's `handleSummary(data)` (`data` as JSON, k6's shape) after
    /// the run: `None` when the script has none, else the files it returned
    /// (`stdout`, `stderr` or a path, each with its bytes) or its exception.
    fn handle_summary(&self, data: &str) -> Option<Result<SummaryFiles, ScriptFault>> {
        let _ = data;
        None
    }
    /// What the script's options say of k6's end-of-test summary
    /// (`summaryTrendStats`, `summaryTimeUnit`), so that `handleSummary`'s data
    /// carries the statistics the script asked for; an option of the wrong type
    /// is the message naming it.
    fn summary_options(&self) -> Result<SummaryOptions, String> {
        Ok(SummaryOptions::default())
    }
}

/// k6's summary options as a script's `options` wrote them: `None` where it gives
/// none (k6's defaults then apply, or the command line's flags).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SummaryOptions {
    /// `summaryTrendStats`: `avg`, `min`, `med`, `max`, `count`, `p(N)`.
    pub trend_stats: Option<Vec<String>>,
    /// `summaryTimeUnit`: `s`, `ms` or `us`.
    pub time_unit: Option<String>,
}

/// A metric a script made (`k6/metrics`): its name, kind and whether its values
/// are times (ms).
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptMetric {
    /// The name, as the script wrote it.
    pub name: Arc<str>,
    /// Counter, gauge, rate or trend.
    pub kind: pado_metrics::CustomKind,
    /// `new Trend(name, true)`: values in milliseconds.
    pub is_time: bool,
}

/// A script host as a plan holds it (`Debug` so the plan stays printable).
#[derive(Clone)]
pub struct ScriptRef(pub Arc<dyn ScriptHost>);

impl std::fmt::Debug for ScriptRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScriptRef")
    }
}
