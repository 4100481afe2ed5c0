//! Compiling a validated scenario into what the runtime executes: origins resolved,
//! request bytes built once, series and checks numbered, weights accumulated. The hot
//! path then indexes vectors; it never looks anything up by name.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use pado_http::{tls_client_config, Origin};
use pado_metrics::{SeriesKey, StageMark};
use pado_scenario::template::{parse_template, Expr, Segment};
use pado_scenario::{
    parse_status_class, split_request_line, Check, Config, ExtractFrom, ExtractSpec, MixEntry,
    RequestSpec, Scenario, StatusMatch, Step, Think, ThinkDist,
};
use serde_json_path::JsonPath;

use crate::data::{DataError, Feed, WeightedFeeds};
use crate::executor::{self, Executor, DEFAULT_GRACEFUL_STOP};
use crate::render::{encode_url_literal, escape_into, BindError, Binder, Compiled, Escape, Part};

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
    /// A JSONPath or regular expression that does not compile.
    #[error("{field}: {message}")]
    Pattern {
        /// Where.
        field: String,
        /// Why.
        message: String,
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
            | PlanError::BodyFile { field, .. } => field.clone(),
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
    /// Accept any TLS certificate (`defaults.insecure`), also for origins first met
    /// in a redirect.
    pub insecure: bool,
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
}

/// A request ready to write (or to render, when templated).
#[derive(Debug)]
pub struct RequestPlan {
    /// Index into [`RunPlan::origins`].
    pub origin: usize,
    /// The bytes, or how to render them.
    pub form: RequestForm,
    /// HEAD request.
    pub is_head: bool,
    /// Whether the request may be sent again on a fresh connection when a reused one
    /// turns out to have been closed by the server (see [`pado_http::exchange`]):
    /// idempotent methods (RFC 9110 §9.2.2) and requests with an `Idempotency-Key`.
    pub resend_safe: bool,
    /// Timeout.
    pub timeout: Duration,
    /// Whether checks or extraction need the body.
    pub keep_body: bool,
    /// Whether checks or extraction need the response headers.
    pub keep_head: bool,
    /// Statuses that count as success (default: below 400).
    pub expect: StatusSet,
    /// Follow redirects (`follow_redirects`, default true): each hop is a sample of
    /// the step; checks and extraction see the final response.
    pub follow_redirects: bool,
}

/// Request bytes: fixed, or rendered per request.
#[derive(Debug)]
pub enum RequestForm {
    /// Everything fixed; `head_end` is where extra headers (cookies) go.
    Static {
        /// Head and body.
        bytes: Box<[u8]>,
        /// Offset of the blank line ending the head.
        head_end: usize,
    },
    /// Something is templated.
    Dynamic {
        /// `METHOD `.
        prefix: Box<[u8]>,
        /// Path and query.
        target: Compiled,
        /// ` HTTP/1.1\r\n` and the fixed headers.
        fixed: Box<[u8]>,
        /// Templated headers: `Name: ` and the value.
        headers: Vec<(Box<[u8]>, Compiled)>,
        /// Body.
        body: Option<Compiled>,
        /// Send Content-Length even without a body (POST/PUT/PATCH).
        needs_length: bool,
    },
}

/// Where an extracted value goes and comes from.
#[derive(Debug)]
pub struct ExtractPlan {
    /// Variable id.
    pub var: usize,
    /// Source.
    pub source: ExtractSource,
}

/// Extraction sources, compiled.
#[derive(Debug)]
pub enum ExtractSource {
    /// JSONPath into the body.
    Json(JsonPath),
    /// Regex on the body (first group or whole match).
    Regex(regex::bytes::Regex),
    /// A response header.
    Header(String),
    /// A cookie set by the response (or already in the jar).
    Cookie(String),
}

/// A set of accepted statuses (defined with the client, which reads it per response).
pub use pado_http::StatusSet;

/// A compiled check.
#[derive(Debug)]
pub enum CheckPlan {
    /// Status among these.
    Status {
        /// Check id.
        id: u32,
        /// Accepted.
        set: StatusSet,
    },
    /// Body contains bytes.
    BodyContains {
        /// Check id.
        id: u32,
        /// Needle.
        needle: Box<[u8]>,
    },
    /// Request duration at most this.
    MaxDuration {
        /// Check id.
        id: u32,
        /// Limit.
        max: Duration,
    },
    /// JSONPath equals a value.
    JsonEquals {
        /// Check id.
        id: u32,
        /// Path.
        path: JsonPath,
        /// Expected.
        expected: serde_json::Value,
    },
    /// JSONPath matches something.
    JsonExists {
        /// Check id.
        id: u32,
        /// Path.
        path: JsonPath,
    },
    /// A header contains text.
    Header {
        /// Check id.
        id: u32,
        /// Header name.
        name: String,
        /// Text.
        contains: Box<[u8]>,
    },
    /// The body matches a regex.
    BodyMatches {
        /// Check id.
        id: u32,
        /// Pattern.
        re: regex::bytes::Regex,
    },
    /// A check whose value holds a template (`json: { $.id: "{{ id }}" }`): rendered
    /// per response with the VU's variables, then judged as the plain check it
    /// stands for ([`CheckPlan::with_value`]). Checks without templates stay
    /// pre-built and cost nothing extra.
    Templated {
        /// Check id.
        id: u32,
        /// The value's template.
        value: Compiled,
        /// Which check it is.
        kind: TemplatedCheck,
    },
}

/// What a [`CheckPlan::Templated`] compares its rendered value with.
#[derive(Debug)]
pub enum TemplatedCheck {
    /// The body contains the value.
    BodyContains,
    /// The JSONPath's first match equals the value (as text, so `"7"` matches `7`).
    JsonEquals(JsonPath),
    /// The header contains the value.
    Header(String),
}

impl CheckPlan {
    /// The plain check a templated one stands for, with its value rendered.
    pub fn with_value(id: u32, kind: &TemplatedCheck, value: &[u8]) -> CheckPlan {
        match kind {
            TemplatedCheck::BodyContains => CheckPlan::BodyContains {
                id,
                needle: value.into(),
            },
            TemplatedCheck::JsonEquals(path) => CheckPlan::JsonEquals {
                id,
                path: path.clone(),
                expected: serde_json::Value::String(String::from_utf8_lossy(value).into_owned()),
            },
            TemplatedCheck::Header(name) => CheckPlan::Header {
                id,
                name: name.clone(),
                contains: value.into(),
            },
        }
    }
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

struct Builder<'a> {
    cfg: &'a Config,
    base_dir: &'a Path,
    origins: Vec<Origin>,
    origin_keys: Vec<(String, String, u16)>,
    series: Vec<SeriesKey>,
    checks: Vec<String>,
    flows: Vec<String>,
    feeds: Vec<Arc<Feed>>,
    vars: Vec<String>,
    picks: Vec<WeightedFeeds>,
    secrets: Vec<Vec<u8>>,
    tls: Option<Arc<rustls::ClientConfig>>,
    /// Scenario (or `setup`) being compiled, for group names.
    scope: String,
    /// The flow being compiled, in words (`flow `write` of scenario `browse``).
    flow_label: String,
    /// Explicit step names and the flows they appear in.
    named_steps: Vec<(String, String)>,
}

/// Compile a validated configuration. `base_dir` resolves relative file paths.
pub fn compile(cfg: &Config, base_dir: &Path) -> Result<RunPlan, PlanError> {
    let mut feeds = Vec::new();
    for (name, spec) in &cfg.data {
        let f = Feed::load(name, spec, base_dir).map_err(|source| PlanError::Data {
            name: name.clone(),
            source,
        })?;
        feeds.push(Arc::new(f));
    }
    let mut b = Builder {
        cfg,
        base_dir,
        origins: Vec::new(),
        origin_keys: Vec::new(),
        series: Vec::new(),
        checks: Vec::new(),
        flows: Vec::new(),
        feeds,
        vars: Vec::new(),
        picks: Vec::new(),
        secrets: Vec::new(),
        tls: None,
        scope: "setup".into(),
        flow_label: "the setup".into(),
        named_steps: Vec::new(),
    };
    let setup = b.steps("setup", &cfg.setup, None)?;
    b.scope = "teardown".into();
    b.flow_label = "the teardown".into();
    let teardown = b.steps("teardown", &cfg.teardown, None)?;
    let mut scenarios = Vec::new();
    for (name, s) in &cfg.scenarios {
        b.scope = name.clone();
        scenarios.push(b.scenario(name, s)?);
    }
    let warnings = shared_step_names(&b.named_steps);
    Ok(RunPlan {
        warnings,
        name: cfg.name.clone().unwrap_or_else(|| "pado".into()),
        origins: b.origins,
        series: b.series,
        checks: b.checks,
        flows: b.flows,
        scenarios,
        feeds: b.feeds,
        vars: b.vars,
        picks: b.picks,
        setup,
        teardown,
        secrets: crate::redact::Redactor::new({
            let mut secrets = b.secrets;
            secrets.extend(target_env_values(cfg));
            secrets
        }),
        max_body: cfg.defaults.max_body.map_or(BODY_KEEP_CAP, |m| {
            usize::try_from(m.0).unwrap_or(usize::MAX)
        }),
        insecure: cfg.defaults.insecure,
    })
}

/// Values a `target:` written with `{{ env.NAME }}` took from the environment: the
/// host and port in every printed URL must hide them like any other env value.
fn target_env_values(cfg: &Config) -> Vec<Vec<u8>> {
    let Some(t) = cfg.target_template.as_deref() else {
        return Vec::new();
    };
    let Ok(parsed) = pado_scenario::template::parse_template(t) else {
        return Vec::new();
    };
    parsed
        .exprs()
        .filter_map(|e| match e {
            pado_scenario::template::Expr::Env(n) => std::env::var(n).ok(),
            _ => None,
        })
        .filter(|v| !v.is_empty())
        .map(String::into_bytes)
        .collect()
}

/// One warning per step name given to steps of more than one flow: their requests
/// land in one series, which is rarely what the names meant.
fn shared_step_names(named: &[(String, String)]) -> Vec<String> {
    let mut names: Vec<&str> = Vec::new();
    for (n, _) in named {
        if !names.contains(&n.as_str()) {
            names.push(n);
        }
    }
    names
        .into_iter()
        .filter_map(|n| {
            let flows: Vec<&str> = named
                .iter()
                .filter(|(m, _)| m == n)
                .map(|(_, f)| f.as_str())
                .collect();
            (flows.len() > 1).then(|| {
                let (last, rest) = flows.split_last().unwrap_or((&"", &[]));
                format!(
                    "step name `{n}` is used in {} and {last}: their requests are measured as one step `{n}`; give them different names to see them apart",
                    rest.join(", ")
                )
            })
        })
        .collect()
}

/// `GET /posts/{id}`: a default step name from a method and a URL or URL template,
/// with template holes named and numeric or id-like path segments grouped, so that
/// `/posts/123` and `/posts/456` land in one series.
pub fn default_step_name(method: &str, url: &str) -> String {
    let path_and_query = match url.find("://") {
        Some(i) => {
            let rest = &url[i + 3..];
            rest.find('/').map_or("/", |j| &rest[j..])
        }
        None => url,
    };
    let path = path_and_query.split('?').next().unwrap_or("/");
    let mut named = String::new();
    match parse_template(path) {
        Ok(t) => {
            for seg in t.segments {
                match seg {
                    Segment::Lit(l) => named.push_str(&l),
                    Segment::Expr(e) => named.push_str(&match e {
                        Expr::Name(n, Some(c)) => format!("{{{n}.{c}}}"),
                        Expr::Name(n, None) => format!("{{{n}}}"),
                        Expr::Pick(items) => format!("{{{}}}", items[0].0),
                        Expr::Env(n) => format!("{{env.{n}}}"),
                        _ => "{value}".to_string(),
                    }),
                }
            }
        }
        Err(_) => named.push_str(path),
    }
    let grouped: Vec<String> = named
        .split('/')
        .map(|seg| {
            let id_like = !seg.is_empty()
                && (seg.chars().all(|c| c.is_ascii_digit())
                    || (seg.len() >= 16 && seg.chars().all(|c| c.is_ascii_hexdigit() || c == '-')));
            if id_like {
                "{id}".to_string()
            } else {
                seg.to_string()
            }
        })
        .collect();
    format!("{method} {}", grouped.join("/"))
}

impl Builder<'_> {
    fn binder(&mut self) -> Binder<'_> {
        Binder {
            feeds: &self.feeds,
            vars: &mut self.vars,
            picks: &mut self.picks,
            secrets: &mut self.secrets,
        }
    }

    fn compile_text(
        &mut self,
        field: &str,
        text: &str,
        escape: Escape,
        lit: impl Fn(&str) -> Vec<u8>,
    ) -> Result<Compiled, PlanError> {
        self.binder()
            .compile(text, escape, lit)
            .map_err(|source| PlanError::Template {
                field: field.to_string(),
                source,
            })
    }

    fn var_id(&mut self, name: &str) -> usize {
        match self.vars.iter().position(|v| v == name) {
            Some(i) => i,
            None => {
                self.vars.push(name.to_string());
                self.vars.len() - 1
            }
        }
    }

    fn scenario(&mut self, name: &str, s: &Scenario) -> Result<ScenarioPlan, PlanError> {
        let p = format!("scenarios.{name}");
        let mut entries = Vec::new();
        let mut cum = 0.0;
        if !s.mix.is_empty() {
            for (i, m) in s.mix.iter().enumerate() {
                let mp = format!("{p}.mix[{i}]");
                cum += m.weight.unwrap_or(1.0);
                self.flow_label = match (&m.flow, &m.name) {
                    (Some(_), Some(n)) => format!("flow `{n}` of scenario `{name}`"),
                    (Some(_), None) => format!("mix entry {} of scenario `{name}`", i + 1),
                    (None, _) => format!("the mix of scenario `{name}`"),
                };
                let steps = self.mix_steps(&mp, m)?;
                let flow = match (&m.flow, &m.name) {
                    (Some(_), Some(n)) => Some(self.flow_id(&format!("{name}/{n}"))),
                    _ => None,
                };
                entries.push(WorkEntry {
                    cum_weight: cum,
                    steps,
                    think: m.think.as_ref().map(ThinkPlan::from),
                    flow,
                });
            }
        } else {
            cum = 1.0;
            self.flow_label = format!("the flow of scenario `{name}`");
            let steps = self.steps(&format!("{p}.flow"), &s.flow, None)?;
            entries.push(WorkEntry {
                cum_weight: 1.0,
                steps,
                think: None,
                flow: None,
            });
        }
        self.flow_label = format!("setup_per_vu of scenario `{name}`");
        let setup = self.steps(&format!("{p}.setup_per_vu"), &s.setup_per_vu, None)?;
        self.flow_label = format!("teardown_per_vu of scenario `{name}`");
        let teardown = self.steps(&format!("{p}.teardown_per_vu"), &s.teardown_per_vu, None)?;
        Ok(ScenarioPlan {
            name: name.to_string(),
            executor: executor::from_scenario(s),
            start_time: s.start_time.map(|d| d.get()).unwrap_or_default(),
            graceful_stop: s
                .graceful_stop
                .map(|d| d.get())
                .unwrap_or(DEFAULT_GRACEFUL_STOP),
            entries,
            total_weight: cum,
            think: s
                .think
                .as_ref()
                .or(self.cfg.defaults.think.as_ref())
                .map(ThinkPlan::from),
            setup,
            teardown,
            cookies: s.cookies.unwrap_or(true),
        })
    }

    fn flow_id(&mut self, name: &str) -> usize {
        match self.flows.iter().position(|f| f == name) {
            Some(i) => i,
            None => {
                self.flows.push(name.to_string());
                self.flows.len() - 1
            }
        }
    }

    fn mix_steps(&mut self, p: &str, m: &MixEntry) -> Result<Vec<StepPlan>, PlanError> {
        if let Some(flow) = &m.flow {
            // A named flow entry prefixes its steps' default names for readability.
            return self.steps(&format!("{p}.flow"), flow, m.name.as_deref());
        }
        let step = Step {
            name: m.name.clone(),
            request: m.request.clone(),
            check: m.check.clone(),
            extract: m.extract.clone(),
            tags: m.tags.clone(),
            ..Default::default()
        };
        Ok(vec![self.step(p, &step, None)?])
    }

    fn steps(
        &mut self,
        p: &str,
        steps: &[Step],
        prefix: Option<&str>,
    ) -> Result<Vec<StepPlan>, PlanError> {
        steps
            .iter()
            .enumerate()
            .map(|(i, s)| self.step(&format!("{p}[{i}]"), s, prefix))
            .collect()
    }

    fn series_id(&mut self, name: &str) -> u32 {
        if let Some(i) = self.series.iter().position(|k| k.name == name) {
            return i as u32;
        }
        self.series.push(SeriesKey::named(name));
        (self.series.len() - 1) as u32
    }

    fn check_id(&mut self, name: String) -> u32 {
        if let Some(i) = self.checks.iter().position(|k| *k == name) {
            return i as u32;
        }
        self.checks.push(name);
        (self.checks.len() - 1) as u32
    }

    fn step(&mut self, p: &str, s: &Step, prefix: Option<&str>) -> Result<StepPlan, PlanError> {
        let think = s.think.as_ref().map(ThinkPlan::from);
        if let (Some(g), Some(inner)) = (&s.group, &s.steps) {
            let id = self.flow_id(&format!("{}/{g}", self.scope));
            let steps = self.steps(&format!("{p}.steps"), inner, prefix)?;
            return Ok(StepPlan {
                series: u32::MAX,
                group: Some((id, steps)),
                think,
                ..Default::default()
            });
        }
        let Some(spec) = &s.request else {
            return Ok(StepPlan {
                series: u32::MAX,
                think,
                ..Default::default()
            });
        };
        let (mut req, method, url_text) = self.request(&format!("{p}.request"), spec)?;
        if let Some(n) = &s.name {
            let seen = (n.clone(), self.flow_label.clone());
            if !self.named_steps.contains(&seen) {
                self.named_steps.push(seen);
            }
        }
        let name = s.name.clone().unwrap_or_else(|| {
            let n = default_step_name(&method, &url_text);
            match prefix {
                Some(pre) => format!("{pre}: {n}"),
                None => n,
            }
        });
        let series = self.series_id(&name);
        let checks = match &s.check {
            Some(c) => self.checks_for(&format!("{p}.check"), &name, c, &mut req)?,
            None => Vec::new(),
        };
        let mut extract = Vec::new();
        for (var, spec) in &s.extract {
            let field = format!("{p}.extract.{var}");
            let source = match spec {
                ExtractSpec::Path(path) | ExtractSpec::From(ExtractFrom::Json(path)) => {
                    req.keep_body = true;
                    ExtractSource::Json(json_path(&field, path)?)
                }
                ExtractSpec::From(ExtractFrom::Regex(r)) => {
                    req.keep_body = true;
                    ExtractSource::Regex(regex(&field, r)?)
                }
                ExtractSpec::From(ExtractFrom::Header(h)) => {
                    req.keep_head = true;
                    ExtractSource::Header(h.clone())
                }
                ExtractSpec::From(ExtractFrom::Cookie(c)) => {
                    req.keep_head = true;
                    ExtractSource::Cookie(c.clone())
                }
            };
            let var = self.var_id(var);
            extract.push(ExtractPlan { var, source });
        }
        let mut tags = Vec::new();
        for (k, v) in &s.tags {
            let c = self.compile_text(&format!("{p}.tags.{k}"), v, Escape::Raw, |l| {
                l.as_bytes().to_vec()
            })?;
            tags.push((k.clone(), c));
        }
        Ok(StepPlan {
            series,
            request: Some(req),
            checks,
            checks_fail_request: s
                .check
                .as_ref()
                .and_then(|c| c.fail_request)
                .unwrap_or(true),
            extract,
            tags,
            group: None,
            think,
        })
    }

    fn checks_for(
        &mut self,
        field: &str,
        step: &str,
        c: &Check,
        req: &mut RequestPlan,
    ) -> Result<Vec<CheckPlan>, PlanError> {
        let mut out = Vec::new();
        if let Some(st) = &c.status {
            let (set, text) = match st {
                StatusMatch::One(n) => (StatusSet(vec![(*n, *n)]), n.to_string()),
                StatusMatch::Any(v) => (
                    StatusSet(v.iter().map(|n| (*n, *n)).collect()),
                    v.iter()
                        .map(|n| n.to_string())
                        .collect::<Vec<_>>()
                        .join(" or "),
                ),
                StatusMatch::Class(s) => (
                    StatusSet(parse_status_class(s).into_iter().collect()),
                    s.clone(),
                ),
            };
            // A status check states what the user expects: it replaces the default
            // "below 400" expectation (checking for a 404 is not a failure), unless
            // the check is only counted.
            if c.fail_request != Some(false) {
                req.expect = set.clone();
            }
            let id = self.check_id(format!("{step}: status is {text}"));
            out.push(CheckPlan::Status { id, set });
        }
        if let Some(needle) = &c.body_contains {
            let id = self.check_id(format!("{step}: body contains {needle:?}"));
            req.keep_body = true;
            out.push(if needle.contains("{{") {
                self.templated_check(
                    &format!("{field}.body_contains"),
                    id,
                    needle,
                    TemplatedCheck::BodyContains,
                )?
            } else {
                CheckPlan::BodyContains {
                    id,
                    needle: needle.as_bytes().into(),
                }
            });
        }
        if let Some(r) = &c.body_matches {
            let id = self.check_id(format!("{step}: body matches /{r}/"));
            req.keep_body = true;
            out.push(CheckPlan::BodyMatches {
                id,
                re: regex(&format!("{field}.body_matches"), r)?,
            });
        }
        for (path, expected) in &c.json {
            let id = self.check_id(format!("{step}: {path} == {expected}"));
            req.keep_body = true;
            let jp = json_path(&format!("{field}.json"), path)?;
            out.push(match expected.as_str().filter(|t| t.contains("{{")) {
                Some(t) => self.templated_check(
                    &format!("{field}.json.{path}"),
                    id,
                    t,
                    TemplatedCheck::JsonEquals(jp),
                )?,
                None => CheckPlan::JsonEquals {
                    id,
                    path: jp,
                    expected: expected.clone(),
                },
            });
        }
        for path in &c.json_exists {
            let id = self.check_id(format!("{step}: {path} exists"));
            req.keep_body = true;
            out.push(CheckPlan::JsonExists {
                id,
                path: json_path(&format!("{field}.json_exists"), path)?,
            });
        }
        for (name, contains) in &c.header {
            let id = self.check_id(format!("{step}: header {name} contains {contains:?}"));
            req.keep_head = true;
            out.push(if contains.contains("{{") {
                self.templated_check(
                    &format!("{field}.header.{name}"),
                    id,
                    contains,
                    TemplatedCheck::Header(name.clone()),
                )?
            } else {
                CheckPlan::Header {
                    id,
                    name: name.clone(),
                    contains: contains.as_bytes().into(),
                }
            });
        }
        if let Some(max) = c.max_duration {
            let id = self.check_id(format!("{step}: duration <= {max}"));
            out.push(CheckPlan::MaxDuration { id, max: max.get() });
        }
        Ok(out)
    }

    /// A check whose value is a template, rendered as is (no escaping: it is
    /// compared with response text, not sent).
    fn templated_check(
        &mut self,
        field: &str,
        id: u32,
        text: &str,
        kind: TemplatedCheck,
    ) -> Result<CheckPlan, PlanError> {
        let value = self.compile_text(field, text, Escape::Raw, |l| l.as_bytes().to_vec())?;
        Ok(CheckPlan::Templated { id, value, kind })
    }

    /// Compile a request; returns it with its method and URL text (for the name).
    fn request(
        &mut self,
        p: &str,
        spec: &RequestSpec,
    ) -> Result<(RequestPlan, String, String), PlanError> {
        let d = &self.cfg.defaults;
        let (method, raw_url, mut headers, body_src, timeout, follow) = match spec {
            RequestSpec::Line(line) => {
                let (m, u) = split_request_line(line).map_err(|message| PlanError::Url {
                    field: p.to_string(),
                    message,
                })?;
                (m, u, BTreeMap::new(), BodySrc::None, None, None)
            }
            RequestSpec::Full(f) => {
                let body = if let Some(b) = &f.body {
                    BodySrc::Text(b.clone())
                } else if let Some(j) = &f.json {
                    BodySrc::Json(j.clone())
                } else if let Some(form) = &f.form {
                    BodySrc::Form(form.clone())
                } else if let Some(path) = &f.body_file {
                    let full = self.base_dir.join(path);
                    let data = pado_scenario::limits::read_capped(
                        &full,
                        pado_scenario::limits::MAX_DATA_BYTES,
                    )
                    .map_err(|source| PlanError::BodyFile {
                        field: format!("{p}.body_file"),
                        path: full.display().to_string(),
                        source,
                    })?;
                    BodySrc::Bytes(data)
                } else {
                    BodySrc::None
                };
                (
                    f.method
                        .clone()
                        .unwrap_or_else(|| "GET".into())
                        .to_ascii_uppercase(),
                    f.url.clone(),
                    f.headers.clone(),
                    body,
                    f.timeout.map(|t| t.get()),
                    f.follow_redirects,
                )
            }
        };
        let full = if raw_url.starts_with('/') {
            let base = self.cfg.target.as_deref().unwrap_or_default();
            format!("{}{}", base.trim_end_matches('/'), raw_url)
        } else {
            raw_url.clone()
        };
        // A fragment is the client's alone (RFC 9110 §7.1): never sent.
        let full = strip_fragment(&full).to_string();
        // `user:pass@` becomes `Authorization: Basic` (as curl does) and leaves the URL,
        // so the password never reaches a step name, a result or a report.
        let (full, userinfo) = take_userinfo(&full);
        if let Some(ui) = userinfo {
            let has_auth = headers
                .keys()
                .chain(d.headers.keys())
                .any(|k| k.eq_ignore_ascii_case("authorization"));
            if !has_auth {
                use base64::Engine as _;
                let token = base64::engine::general_purpose::STANDARD.encode(ui);
                headers.insert("Authorization".into(), format!("Basic {token}"));
            }
        }
        // The origin never comes from a template (validation ensures it).
        let (origin_url, path_template) = split_origin(&full).ok_or_else(|| PlanError::Url {
            field: p.to_string(),
            message: format!("`{full}` is not an absolute http(s) URL"),
        })?;
        let origin_parsed = url::Url::parse(&origin_url).map_err(|e| PlanError::Url {
            field: p.to_string(),
            message: format!("`{full}` is not a URL: {e}"),
        })?;
        let origin = self.origin(p, &origin_parsed)?;
        for (k, v) in &d.headers {
            if !headers.keys().any(|h| h.eq_ignore_ascii_case(k)) {
                headers.insert(k.clone(), v.clone());
            }
        }
        let has =
            |h: &BTreeMap<String, String>, n: &str| h.keys().any(|k| k.eq_ignore_ascii_case(n));
        // Fixed part of the head after the request target.
        let mut fixed = Vec::with_capacity(256);
        fixed.extend_from_slice(b" HTTP/1.1\r\n");
        if !has(&headers, "host") {
            let host = origin_parsed.host_str().unwrap_or_default();
            let host_header = match origin_parsed.port() {
                Some(port) => format!("{host}:{port}"),
                None => host.to_string(),
            };
            fixed.extend_from_slice(format!("Host: {host_header}\r\n").as_bytes());
        }
        if !has(&headers, "user-agent") {
            fixed.extend_from_slice(
                concat!("User-Agent: pado/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes(),
            );
        }
        let ctype = match &body_src {
            BodySrc::Json(_) => Some("application/json"),
            BodySrc::Form(_) => Some("application/x-www-form-urlencoded"),
            _ => None,
        };
        if let Some(ct) = ctype {
            if !has(&headers, "content-type") {
                fixed.extend_from_slice(format!("Content-Type: {ct}\r\n").as_bytes());
            }
        }
        let mut dyn_headers = Vec::new();
        for (k, v) in &headers {
            if k.eq_ignore_ascii_case("content-length") {
                continue;
            }
            let c = self.compile_text(&format!("{p}.headers.{k}"), v, Escape::Header, |l| {
                l.as_bytes().to_vec()
            })?;
            if c.is_static() {
                fixed.extend_from_slice(k.as_bytes());
                fixed.extend_from_slice(b": ");
                fixed.extend_from_slice(&c.static_bytes());
                fixed.extend_from_slice(b"\r\n");
            } else {
                dyn_headers.push((format!("{k}: ").into_bytes().into_boxed_slice(), c));
            }
        }
        let target = self.compile_text(p, &path_template, Escape::Url, encode_url_literal)?;
        let body = match body_src {
            BodySrc::None => None,
            BodySrc::Bytes(b) => Some(Compiled {
                parts: vec![Part::Lit(b.into_boxed_slice())],
                escape: Escape::Raw,
            }),
            BodySrc::Text(t) => Some(self.compile_text(
                &format!("{p}.body"),
                &t,
                Escape::Raw,
                |l| l.as_bytes().to_vec(),
            )?),
            BodySrc::Json(v) => {
                let mut parts = Vec::new();
                self.json_parts(&format!("{p}.json"), &v, &mut parts)?;
                Some(Compiled {
                    parts,
                    escape: Escape::Json,
                })
            }
            BodySrc::Form(f) => {
                let mut parts = Vec::new();
                for (i, (k, v)) in f.iter().enumerate() {
                    let mut key = Vec::new();
                    if i > 0 {
                        key.push(b'&');
                    }
                    escape_into(Escape::Form, k.as_bytes(), &mut key);
                    key.push(b'=');
                    parts.push(Part::Lit(key.into_boxed_slice()));
                    let c = self.compile_text(&format!("{p}.form.{k}"), v, Escape::Form, |l| {
                        let mut o = Vec::new();
                        escape_into(Escape::Form, l.as_bytes(), &mut o);
                        o
                    })?;
                    parts.extend(c.parts);
                }
                Some(Compiled {
                    parts,
                    escape: Escape::Form,
                })
            }
        };
        let needs_length = body.is_some() || matches!(method.as_str(), "POST" | "PUT" | "PATCH");
        let all_static = target.is_static()
            && dyn_headers.is_empty()
            && body.as_ref().is_none_or(|b| b.is_static());
        let form = if all_static {
            let mut out = Vec::with_capacity(256);
            out.extend_from_slice(method.as_bytes());
            out.push(b' ');
            out.extend_from_slice(&target.static_bytes());
            out.extend_from_slice(&fixed);
            let body_bytes = body.as_ref().map(|b| b.static_bytes());
            if needs_length {
                let n = body_bytes.as_ref().map_or(0, |b| b.len());
                out.extend_from_slice(format!("Content-Length: {n}\r\n").as_bytes());
            }
            let head_end = out.len();
            out.extend_from_slice(b"\r\n");
            if let Some(b) = body_bytes {
                out.extend_from_slice(&b);
            }
            RequestForm::Static {
                bytes: out.into_boxed_slice(),
                head_end,
            }
        } else {
            RequestForm::Dynamic {
                prefix: format!("{method} ").into_bytes().into_boxed_slice(),
                target,
                fixed: fixed.into_boxed_slice(),
                headers: dyn_headers,
                body,
                needs_length,
            }
        };
        let plan = RequestPlan {
            origin,
            form,
            is_head: method == "HEAD",
            resend_safe: pado_http::idempotent_method(&method) || has(&headers, "idempotency-key"),
            timeout: timeout
                .or(d.timeout.map(|t| t.get()))
                .unwrap_or(DEFAULT_TIMEOUT),
            keep_body: false,
            keep_head: false,
            expect: StatusSet::default_ok(),
            follow_redirects: follow.or(d.follow_redirects).unwrap_or(true),
        };
        Ok((plan, method, full))
    }

    /// A JSON body as template parts: structure literal, strings templated and
    /// JSON-escaped.
    fn json_parts(
        &mut self,
        field: &str,
        v: &serde_json::Value,
        out: &mut Vec<Part>,
    ) -> Result<(), PlanError> {
        use serde_json::Value;
        let lit = |out: &mut Vec<Part>, b: &[u8]| {
            if let Some(Part::Lit(prev)) = out.last_mut() {
                let mut x = prev.to_vec();
                x.extend_from_slice(b);
                *prev = x.into_boxed_slice();
            } else {
                out.push(Part::Lit(b.into()));
            }
        };
        match v {
            Value::String(s) => {
                lit(out, b"\"");
                let c = self.compile_text(field, s, Escape::Json, |l| {
                    let mut o = Vec::new();
                    escape_into(Escape::Json, l.as_bytes(), &mut o);
                    o
                })?;
                for part in c.parts {
                    match part {
                        Part::Lit(b) => lit(out, &b),
                        other => out.push(other),
                    }
                }
                lit(out, b"\"");
            }
            Value::Array(a) => {
                lit(out, b"[");
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        lit(out, b",");
                    }
                    self.json_parts(&format!("{field}[{i}]"), x, out)?;
                }
                lit(out, b"]");
            }
            Value::Object(o) => {
                lit(out, b"{");
                for (i, (k, x)) in o.iter().enumerate() {
                    if i > 0 {
                        lit(out, b",");
                    }
                    let key = serde_json::to_string(k).unwrap_or_default();
                    lit(out, key.as_bytes());
                    lit(out, b":");
                    self.json_parts(&format!("{field}.{k}"), x, out)?;
                }
                lit(out, b"}");
            }
            other => lit(out, other.to_string().as_bytes()),
        }
        Ok(())
    }

    fn origin(&mut self, p: &str, url: &url::Url) -> Result<usize, PlanError> {
        let key = (
            url.scheme().to_string(),
            url.host_str().unwrap_or("").to_string(),
            url.port_or_known_default().unwrap_or(80),
        );
        if let Some(i) = self.origin_keys.iter().position(|k| *k == key) {
            return Ok(i);
        }
        let insecure = self.cfg.defaults.insecure;
        let tls = &mut self.tls;
        let origin = Origin::for_url(url, || {
            tls.get_or_insert_with(|| tls_client_config(insecure))
                .clone()
        })
        .map_err(|message| PlanError::Url {
            field: p.to_string(),
            message,
        })?;
        self.origins.push(origin);
        self.origin_keys.push(key);
        Ok(self.origins.len() - 1)
    }
}

enum BodySrc {
    None,
    Text(String),
    Json(serde_json::Value),
    Form(BTreeMap<String, String>),
    Bytes(Vec<u8>),
}

/// The URL up to its fragment (`#...`), outside template expressions.
fn strip_fragment(url: &str) -> &str {
    let b = url.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"{{") {
            depth += 1;
            i += 2;
        } else if b[i..].starts_with(b"}}") && depth > 0 {
            depth -= 1;
            i += 2;
        } else if b[i] == b'#' && depth == 0 {
            return &url[..i];
        } else {
            i += 1;
        }
    }
    url
}

/// Remove `user[:pass]@` from an absolute URL's authority; returns the URL without it
/// and the percent-decoded `user:pass` (for `Authorization: Basic`).
fn take_userinfo(full: &str) -> (String, Option<Vec<u8>>) {
    let Some(scheme_end) = full.find("://") else {
        return (full.to_string(), None);
    };
    let rest = &full[scheme_end + 3..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return (full.to_string(), None);
    };
    let userinfo = percent_decode(&rest[..at]);
    let url = format!("{}{}", &full[..scheme_end + 3], &rest[at + 1..]);
    (url, Some(userinfo))
}

fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// Split `http://host:port/path?{{x}}` into the origin URL (`http://host:port/`) and
/// the path-and-query template (`/path?{{x}}`).
fn split_origin(full: &str) -> Option<(String, String)> {
    let scheme_end = full.find("://")?;
    let scheme = &full[..scheme_end];
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let rest = &full[scheme_end + 3..];
    let path_start = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..path_start];
    if authority.is_empty() || authority.contains("{{") {
        return None;
    }
    let mut path = rest[path_start..].to_string();
    if path.is_empty() {
        path.push('/');
    } else if path.starts_with('?') {
        path.insert(0, '/');
    }
    Some((format!("{scheme}://{authority}/"), path))
}

fn json_path(field: &str, path: &str) -> Result<JsonPath, PlanError> {
    JsonPath::parse(path).map_err(|e| PlanError::Pattern {
        field: field.to_string(),
        message: format!("`{path}` is not a JSONPath: {e}"),
    })
}

fn regex(field: &str, r: &str) -> Result<regex::bytes::Regex, PlanError> {
    regex::bytes::Regex::new(r).map_err(|e| PlanError::Pattern {
        field: field.to_string(),
        message: format!("bad regular expression: {e}"),
    })
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

    /// Warnings to give before the run: `pick: unique` feeds with fewer rows than the
    /// run may have VUs, where some VUs must share rows (the user asked for none).
    pub fn warnings(&self) -> Vec<String> {
        let vus = self.max_vus();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(src: &str) -> RunPlan {
        let cfg = pado_scenario::parse_str(src, "t.yaml").unwrap();
        compile(&cfg, Path::new(".")).unwrap()
    }

    #[test]
    fn a_unique_feed_with_fewer_rows_than_vus_is_warned_about() {
        let src = |vus: u32| {
            format!("target: http://127.0.0.1:9\ndata:\n  users: {{ range: [1, 5], pick: unique }}\nscenarios:\n  s:\n    executor: constant-vus\n    vus: {vus}\n    duration: 1s\n    flow: [{{ request: \"GET /u/{{{{ users.value }}}}\" }}]\n")
        };
        let w = plan(&src(8)).warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("feed `users`") && w[0].contains("5 rows for up to 8 VUs"),
            "{w:?}"
        );
        assert_eq!(plan(&src(5)).warnings(), Vec::<String>::new());
    }

    #[test]
    fn request_bytes_are_built_once_and_correct() {
        let p = plan("target: http://127.0.0.1:9\ndefaults:\n  headers: { X-Env: a, Accept: text/plain }\nscenarios:\n  s:\n    executor: constant-vus\n    duration: 1s\n    flow:\n      - name: search\n        request: \"GET /api/search?q=검색 엔진\"\n      - request: { method: post, url: /api/posts, headers: { accept: application/json }, json: { title: \"안녕\" } }\n        check: { status: 201, body_contains: ok }\n");
        let s = &p.scenarios[0];
        let bytes_of = |r: &RequestPlan| match &r.form {
            RequestForm::Static { bytes, .. } => bytes.to_vec(),
            RequestForm::Dynamic { .. } => panic!("expected a static request"),
        };
        let r0 = s.entries[0].steps[0].request.as_ref().unwrap();
        let text = String::from_utf8(bytes_of(r0)).unwrap();
        assert!(
            text.starts_with("GET /api/search?q=%EA%B2%80%EC%83%89%20%EC%97%94%EC%A7%84 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n"),
            "{text}"
        );
        assert!(text.ends_with("\r\n\r\n"));
        assert!(!text.contains("Content-Length"));
        let r1 = s.entries[0].steps[1].request.as_ref().unwrap();
        let text = String::from_utf8(bytes_of(r1)).unwrap();
        assert!(text.starts_with("POST /api/posts HTTP/1.1\r\n"), "{text}");
        assert!(text.contains("Content-Type: application/json\r\n"));
        assert!(text.contains("accept: application/json\r\n"));
        assert!(!text.contains("Accept: text/plain"), "{text}");
        let body = "{\"title\":\"안녕\"}";
        assert!(text.contains(&format!("Content-Length: {}\r\n", body.len())));
        assert!(text.ends_with(body));
        assert!(r1.keep_body);
        assert!(r1.expect.contains(201) && !r1.expect.contains(200));
        assert_eq!(p.series[0].name, "search");
        assert_eq!(p.series[1].name, "POST /api/posts");
        assert_eq!(p.checks.len(), 2);
        assert_eq!(p.origins.len(), 1);
        assert_eq!(p.origins[0].addrs.len(), 1);
    }

    #[test]
    fn one_step_name_in_two_flows_is_warned_about_naming_both() {
        let p = plan("target: http://127.0.0.1:9\nscenarios:\n  s:\n    executor: constant-vus\n    duration: 1s\n    mix:\n      - { name: read, flow: [ { name: login, request: \"POST /a\" }, { name: get, request: /x } ] }\n      - { name: write, flow: [ { name: login, request: \"POST /b\" }, { name: get, request: /x }, { name: get, request: /y } ] }\n  t:\n    executor: constant-vus\n    duration: 1s\n    setup_per_vu: [ { name: solo, request: /s } ]\n    flow: [ { name: solo2, request: /s } ]\n");
        assert_eq!(p.warnings.len(), 2, "{:?}", p.warnings);
        assert_eq!(
            p.warnings[0],
            "step name `login` is used in flow `read` of scenario `s` and flow `write` of scenario `s`: their requests are measured as one step `login`; give them different names to see them apart"
        );
        assert!(p.warnings[1].starts_with("step name `get` is used in flow `read`"));
        // One name repeated inside one flow is one flow: no warning.
        let q = plan("target: http://127.0.0.1:9\nscenarios:\n  s:\n    executor: constant-vus\n    duration: 1s\n    flow: [ { name: poll, request: /a }, { name: poll, request: /a } ]\n");
        assert!(q.warnings.is_empty(), "{:?}", q.warnings);
    }

    #[test]
    fn mix_weights_accumulate() {
        let p = plan("target: http://127.0.0.1:9\nscenarios:\n  s:\n    executor: constant-vus\n    duration: 1s\n    mix:\n      - { weight: 30, name: a, request: /a }\n      - { weight: 70, name: w, flow: [ { request: \"POST /b\" }, { think: 1s } ] }\n");
        let s = &p.scenarios[0];
        assert_eq!(s.total_weight, 100.0);
        assert_eq!(s.entries[0].cum_weight, 30.0);
        assert_eq!(p.series[1].name, "w: POST /b");
        assert_eq!(p.flows, vec!["s/w".to_string()]);
        assert_eq!(s.entries[1].flow, Some(0));
        assert!(s.entries[1].steps[1].request.is_none());
    }

    #[test]
    fn think_pauses() {
        let mut rng = fastrand::Rng::with_seed(1);
        let u = ThinkPlan::Uniform(Duration::from_millis(500), Duration::from_secs(2));
        for _ in 0..1000 {
            let d = u.pause(&mut rng, Duration::ZERO);
            assert!(d >= Duration::from_millis(500) && d <= Duration::from_secs(2));
        }
        let p = ThinkPlan::Pacing(Duration::from_secs(5));
        assert_eq!(
            p.pause(&mut rng, Duration::from_secs(2)),
            Duration::from_secs(3)
        );
        assert_eq!(p.pause(&mut rng, Duration::from_secs(7)), Duration::ZERO);
        let n = ThinkPlan::Normal(Duration::from_secs(1), Duration::from_millis(100));
        let mean: f64 = (0..10_000)
            .map(|_| n.pause(&mut rng, Duration::ZERO).as_secs_f64())
            .sum::<f64>()
            / 10_000.0;
        assert!((mean - 1.0).abs() < 0.01, "{mean}");
    }
}
