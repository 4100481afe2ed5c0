//! Compiling a validated scenario into what the runtime executes: origins resolved,
//! request bytes built once, series and checks numbered, weights accumulated. The hot
//! path then indexes vectors; it never looks anything up by name.

use std::collections::BTreeMap;
use std::net::ToSocketAddrs;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use pado_metrics::{SeriesKey, StageMark};
use pado_scenario::{
    parse_status_class, split_request_line, step_name_for, Check, Config, MixEntry, RequestSpec,
    Scenario, StatusMatch, Step, Think, ThinkDist,
};
use rustls::pki_types::ServerName;
use tokio_rustls::TlsConnector;

use crate::executor::{self, Executor, DEFAULT_GRACEFUL_STOP};
use crate::http::{tls_client_config, Origin, TlsTarget};

/// Default request timeout, as k6's.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest response body kept for checks; the rest is read and counted, not kept.
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
    /// Named flows of mixes (`scenario/flow`) by id, for per-flow iteration metrics.
    pub flows: Vec<String>,
    /// Scenarios.
    pub scenarios: Vec<ScenarioPlan>,
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
#[derive(Debug)]
pub struct StepPlan {
    /// Series the request is recorded under.
    pub series: u32,
    /// The request, if any.
    pub request: Option<RequestPlan>,
    /// Checks on the response.
    pub checks: Vec<CheckPlan>,
    /// Pause after the step.
    pub think: Option<ThinkPlan>,
}

/// A request ready to write.
#[derive(Debug)]
pub struct RequestPlan {
    /// Index into [`RunPlan::origins`].
    pub origin: usize,
    /// Head and body bytes.
    pub bytes: Box<[u8]>,
    /// HEAD request.
    pub is_head: bool,
    /// Timeout.
    pub timeout: Duration,
    /// Whether a check needs the body.
    pub keep_body: bool,
    /// Statuses that count as success (default: below 400).
    pub expect: StatusSet,
}

/// A set of accepted statuses.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusSet(pub Vec<(u16, u16)>);

impl StatusSet {
    /// Whether `code` is accepted.
    #[inline]
    pub fn contains(&self, code: u16) -> bool {
        self.0.iter().any(|&(a, b)| a <= code && code <= b)
    }
    /// 100..=399, the default expectation.
    pub fn default_ok() -> Self {
        StatusSet(vec![(100, 399)])
    }
}

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
    tls: Option<Arc<rustls::ClientConfig>>,
}

/// Compile a validated configuration. `base_dir` resolves relative file paths.
pub fn compile(cfg: &Config, base_dir: &Path) -> Result<RunPlan, PlanError> {
    let mut b = Builder {
        cfg,
        base_dir,
        origins: Vec::new(),
        origin_keys: Vec::new(),
        series: Vec::new(),
        checks: Vec::new(),
        flows: Vec::new(),
        tls: None,
    };
    let mut scenarios = Vec::new();
    for (name, s) in &cfg.scenarios {
        scenarios.push(b.scenario(name, s)?);
    }
    Ok(RunPlan {
        name: cfg.name.clone().unwrap_or_else(|| "pado".into()),
        origins: b.origins,
        series: b.series,
        checks: b.checks,
        flows: b.flows,
        scenarios,
    })
}

impl Builder<'_> {
    fn scenario(&mut self, name: &str, s: &Scenario) -> Result<ScenarioPlan, PlanError> {
        let p = format!("scenarios.{name}");
        let mut entries = Vec::new();
        let mut cum = 0.0;
        if !s.mix.is_empty() {
            for (i, m) in s.mix.iter().enumerate() {
                let mp = format!("{p}.mix[{i}]");
                cum += m.weight.unwrap_or(1.0);
                let steps = self.mix_steps(&mp, m)?;
                let flow = match (&m.flow, &m.name) {
                    (Some(_), Some(n)) => {
                        self.flows.push(format!("{name}/{n}"));
                        Some(self.flows.len() - 1)
                    }
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
            let steps = self.steps(&format!("{p}.flow"), &s.flow, None)?;
            entries.push(WorkEntry {
                cum_weight: 1.0,
                steps,
                think: None,
                flow: None,
            });
        }
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
        })
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
        let Some(spec) = &s.request else {
            return Ok(StepPlan {
                series: u32::MAX,
                request: None,
                checks: Vec::new(),
                think,
            });
        };
        let (req, method, url) = self.request(&format!("{p}.request"), spec)?;
        let name = s.name.clone().unwrap_or_else(|| {
            let n = step_name_for(&method, url.as_str());
            match prefix {
                Some(pre) => format!("{pre}: {n}"),
                None => n,
            }
        });
        let series = self.series_id(&name);
        let mut req = req;
        let checks = match &s.check {
            Some(c) => self.checks_for(&name, c, &mut req),
            None => Vec::new(),
        };
        Ok(StepPlan {
            series,
            request: Some(req),
            checks,
            think,
        })
    }

    fn checks_for(&mut self, step: &str, c: &Check, req: &mut RequestPlan) -> Vec<CheckPlan> {
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
            // "below 400" expectation (checking for a 404 is not a failure).
            req.expect = set.clone();
            let id = self.check_id(format!("{step}: status is {text}"));
            out.push(CheckPlan::Status { id, set });
        }
        if let Some(needle) = &c.body_contains {
            let id = self.check_id(format!("{step}: body contains {needle:?}"));
            req.keep_body = true;
            out.push(CheckPlan::BodyContains {
                id,
                needle: needle.as_bytes().into(),
            });
        }
        if let Some(max) = c.max_duration {
            let id = self.check_id(format!("{step}: duration <= {max}"));
            out.push(CheckPlan::MaxDuration { id, max: max.get() });
        }
        out
    }

    fn request(
        &mut self,
        p: &str,
        spec: &RequestSpec,
    ) -> Result<(RequestPlan, String, url::Url), PlanError> {
        let d = &self.cfg.defaults;
        let (method, raw_url, mut headers, body, ctype, timeout) = match spec {
            RequestSpec::Line(line) => {
                let (m, u) = split_request_line(line).map_err(|message| PlanError::Url {
                    field: p.to_string(),
                    message,
                })?;
                (m, u, BTreeMap::new(), None, None, None)
            }
            RequestSpec::Full(f) => {
                let (body, ctype): (Option<Vec<u8>>, Option<&str>) = if let Some(b) = &f.body {
                    (Some(b.clone().into_bytes()), None)
                } else if let Some(j) = &f.json {
                    (Some(j.to_string().into_bytes()), Some("application/json"))
                } else if let Some(form) = &f.form {
                    let enc: String = url::form_urlencoded::Serializer::new(String::new())
                        .extend_pairs(form.iter())
                        .finish();
                    (
                        Some(enc.into_bytes()),
                        Some("application/x-www-form-urlencoded"),
                    )
                } else if let Some(path) = &f.body_file {
                    let full = self.base_dir.join(path);
                    let data = std::fs::read(&full).map_err(|source| PlanError::BodyFile {
                        field: format!("{p}.body_file"),
                        path: full.display().to_string(),
                        source,
                    })?;
                    (Some(data), None)
                } else {
                    (None, None)
                };
                (
                    f.method
                        .clone()
                        .unwrap_or_else(|| "GET".into())
                        .to_ascii_uppercase(),
                    f.url.clone(),
                    f.headers.clone(),
                    body,
                    ctype,
                    f.timeout.map(|t| t.get()),
                )
            }
        };
        let full = if raw_url.starts_with('/') {
            let base = self.cfg.target.as_deref().unwrap_or_default();
            format!("{}{}", base.trim_end_matches('/'), raw_url)
        } else {
            raw_url.clone()
        };
        let url = url::Url::parse(&full).map_err(|e| PlanError::Url {
            field: p.to_string(),
            message: format!("`{full}` is not a URL: {e}"),
        })?;
        let origin = self.origin(p, &url)?;
        // Step headers win over defaults, compared case-insensitively.
        for (k, v) in &d.headers {
            if !headers.keys().any(|h| h.eq_ignore_ascii_case(k)) {
                headers.insert(k.clone(), v.clone());
            }
        }
        let has =
            |h: &BTreeMap<String, String>, n: &str| h.keys().any(|k| k.eq_ignore_ascii_case(n));
        let mut out = Vec::with_capacity(256 + body.as_ref().map_or(0, |b| b.len()));
        let target = match url.query() {
            Some(q) => format!("{}?{}", url.path(), q),
            None => url.path().to_string(),
        };
        out.extend_from_slice(format!("{method} {target} HTTP/1.1\r\n").as_bytes());
        if !has(&headers, "host") {
            let host = url.host_str().unwrap_or_default();
            let host_header = match url.port() {
                Some(port) => format!("{host}:{port}"),
                None => host.to_string(),
            };
            out.extend_from_slice(format!("Host: {host_header}\r\n").as_bytes());
        }
        if !has(&headers, "user-agent") {
            out.extend_from_slice(
                concat!("User-Agent: pado/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes(),
            );
        }
        if let Some(ct) = ctype {
            if !has(&headers, "content-type") {
                out.extend_from_slice(format!("Content-Type: {ct}\r\n").as_bytes());
            }
        }
        for (k, v) in &headers {
            if k.eq_ignore_ascii_case("content-length") {
                continue;
            }
            out.extend_from_slice(k.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(v.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        let needs_length = body.is_some() || matches!(method.as_str(), "POST" | "PUT" | "PATCH");
        if needs_length {
            let n = body.as_ref().map_or(0, |b| b.len());
            out.extend_from_slice(format!("Content-Length: {n}\r\n").as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        if let Some(b) = &body {
            out.extend_from_slice(b);
        }
        let plan = RequestPlan {
            origin,
            bytes: out.into_boxed_slice(),
            is_head: method == "HEAD",
            timeout: timeout
                .or(d.timeout.map(|t| t.get()))
                .unwrap_or(DEFAULT_TIMEOUT),
            keep_body: false,
            expect: StatusSet::default_ok(),
        };
        Ok((plan, method, url))
    }

    fn origin(&mut self, p: &str, url: &url::Url) -> Result<usize, PlanError> {
        let scheme = url.scheme().to_string();
        let host = url
            .host_str()
            .ok_or_else(|| PlanError::Url {
                field: p.to_string(),
                message: format!("`{url}` has no host"),
            })?
            .to_string();
        let port = url.port_or_known_default().unwrap_or(80);
        let key = (scheme.clone(), host.clone(), port);
        if let Some(i) = self.origin_keys.iter().position(|k| *k == key) {
            return Ok(i);
        }
        // IPv6 literals come bracketed from the URL.
        let bare = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let addrs: Vec<_> = (bare.as_str(), port)
            .to_socket_addrs()
            .map(|a| a.collect())
            .unwrap_or_default();
        let tls = if scheme == "https" {
            let cfg = self
                .tls
                .get_or_insert_with(|| tls_client_config(self.cfg.defaults.insecure))
                .clone();
            let server_name = ServerName::try_from(bare.clone()).map_err(|e| PlanError::Url {
                field: p.to_string(),
                message: format!("`{host}` is not a valid TLS server name: {e}"),
            })?;
            Some(TlsTarget {
                connector: TlsConnector::from(cfg),
                server_name,
            })
        } else {
            None
        };
        self.origins.push(Origin {
            label: format!("{scheme}://{host}:{port}"),
            host,
            port,
            addrs,
            tls,
        });
        self.origin_keys.push(key);
        Ok(self.origins.len() - 1)
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(src: &str) -> RunPlan {
        let cfg = pado_scenario::parse_str(src, "t.yaml").unwrap();
        compile(&cfg, Path::new(".")).unwrap()
    }

    #[test]
    fn request_bytes_are_built_once_and_correct() {
        let p = plan("target: http://127.0.0.1:9\ndefaults:\n  headers: { X-Env: a, Accept: text/plain }\nscenarios:\n  s:\n    executor: constant-vus\n    duration: 1s\n    flow:\n      - name: search\n        request: \"GET /api/search?q=검색 엔진\"\n      - request: { method: post, url: /api/posts, headers: { accept: application/json }, json: { title: \"안녕\" } }\n        check: { status: 201, body_contains: ok }\n");
        let s = &p.scenarios[0];
        let r0 = s.entries[0].steps[0].request.as_ref().unwrap();
        let text = String::from_utf8(r0.bytes.to_vec()).unwrap();
        assert!(
            text.starts_with("GET /api/search?q=%EA%B2%80%EC%83%89%20%EC%97%94%EC%A7%84 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n"),
            "{text}"
        );
        assert!(text.ends_with("\r\n\r\n"));
        assert!(!text.contains("Content-Length"));
        let r1 = s.entries[0].steps[1].request.as_ref().unwrap();
        let text = String::from_utf8(r1.bytes.to_vec()).unwrap();
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
