//! The compiler's state while it walks a configuration: names numbered (series,
//! checks, variables, flows), origins resolved, and the scenario and step structure.

use std::path::Path;
use std::sync::Arc;

use pado_metrics::SeriesKey;
use pado_scenario::{Check, Config, ExtractFrom, ExtractSpec, MixEntry, Scenario, Step};

use crate::data::{Feed, WeightedFeeds};
use crate::executor::{self, DEFAULT_GRACEFUL_STOP};
use crate::render::{Binder, Compiled, Escape};
use pado_http::Origin;

use super::checks::{json_path, regex};
use super::*;

pub(super) struct Builder<'a> {
    pub(super) cfg: &'a Config,
    pub(super) base_dir: &'a Path,
    pub(super) origins: Vec<Origin>,
    pub(super) origin_keys: Vec<(String, String, u16)>,
    pub(super) series: Vec<SeriesKey>,
    pub(super) checks: Vec<String>,
    pub(super) flows: Vec<String>,
    pub(super) feeds: Vec<Arc<Feed>>,
    pub(super) vars: Vec<String>,
    pub(super) picks: Vec<WeightedFeeds>,
    pub(super) secrets: Vec<Vec<u8>>,
    pub(super) tls: Option<Arc<rustls::ClientConfig>>,
    pub(super) tls_settings: Arc<pado_http::TlsSettings>,
    /// The proxies origins connect through.
    pub(super) proxies: Arc<pado_http::ProxyConfig>,
    /// The client configuration whose ALPN offers h2 (`http: 2` or `auto`).
    pub(super) h2_tls: Option<Arc<rustls::ClientConfig>>,
    /// Scenario (or `setup`) being compiled, for group names.
    pub(super) scope: String,
    /// The flow being compiled, in words (`flow `write` of scenario `browse``).
    pub(super) flow_label: String,
    /// Explicit step names and the flows they appear in.
    pub(super) named_steps: Vec<(String, String)>,
    /// Descriptors of `grpc:` steps read so far.
    pub(super) grpc: super::grpc::GrpcCache,
    /// Each step's scenarios, methods and groups, for thresholds' tags.
    pub(super) catalog: pado_metrics::StepCatalog,
    /// The k6 path of the `group:` blocks being compiled (`::a::b`; `""` outside).
    pub(super) group_path: String,
    /// The `env.NAME`s left to where the plan runs ([`compile_for_elsewhere`]).
    pub(super) deferred_env: Option<Vec<String>>,
}

/// Compile a validated configuration. `base_dir` resolves relative file paths.
pub fn compile(cfg: &Config, base_dir: &Path) -> Result<RunPlan, PlanError> {
    compile_plan(cfg, base_dir, None).map(|(plan, _)| plan)
}

/// Compile a configuration that will run on other machines (`pado k8s`: pods whose
/// environment comes from a Kubernetes Secret), to check it and know its plan here.
/// A request's `{{ env.NAME }}` unset on this machine is not an error: it binds to
/// nothing in this plan, which must not be run, and its name is returned so the
/// caller can say where the value is expected from. Set variables bind as in
/// [`compile`].
pub fn compile_for_elsewhere(
    cfg: &Config,
    base_dir: &Path,
) -> Result<(RunPlan, Vec<String>), PlanError> {
    compile_plan(cfg, base_dir, Some(Vec::new()))
}

fn compile_plan(
    cfg: &Config,
    base_dir: &Path,
    deferred_env: Option<Vec<String>>,
) -> Result<(RunPlan, Vec<String>), PlanError> {
    let mut feeds = Vec::new();
    for (name, spec) in &cfg.data {
        let f = Feed::load(name, spec, base_dir).map_err(|source| PlanError::Data {
            name: name.clone(),
            source,
        })?;
        feeds.push(Arc::new(f));
    }
    let tls_settings = Arc::new(tls_settings(cfg, base_dir)?);
    let proxies = Arc::new(proxies(cfg)?);
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
        tls_settings: tls_settings.clone(),
        proxies: proxies.clone(),
        h2_tls: None,
        scope: "setup".into(),
        flow_label: "the setup".into(),
        named_steps: Vec::new(),
        grpc: Default::default(),
        catalog: Default::default(),
        group_path: String::new(),
        deferred_env,
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
    let deferred = b.deferred_env.take().unwrap_or_default();
    let plan = RunPlan {
        warnings,
        name: cfg.name.clone().unwrap_or_else(|| "pado".into()),
        origins: b.origins,
        series: b.series,
        steps: b.catalog,
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
            // The proxy's credentials go only in CONNECT, never in a request; kept
            // out of any output all the same.
            secrets.extend(proxies.credentials().map(|a| a.as_bytes().to_vec()));
            secrets
        }),
        max_body: cfg.defaults.max_body.map_or(BODY_KEEP_CAP, |m| {
            usize::try_from(m.0).unwrap_or(usize::MAX)
        }),
        tls: tls_settings,
        max_streams: cfg
            .defaults
            .max_streams
            .unwrap_or(DEFAULT_MAX_STREAMS)
            .max(1),
        connections: cfg.defaults.connections.unwrap_or_default(),
        proxies,
        dns_ttl: cfg
            .defaults
            .dns
            .as_ref()
            .and_then(|d| d.ttl)
            .map(|t| t.get()),
        script: None,
        script_state: Default::default(),
    };
    Ok((plan, deferred))
}

/// The proxies of a run: `defaults.proxy` (which `--proxy` and `--no-proxy` set),
/// or, unset, the environment's, read now, once.
fn proxies(cfg: &Config) -> Result<pado_http::ProxyConfig, PlanError> {
    let env = |k: &str| std::env::var(k).ok();
    match cfg.defaults.proxy.as_deref().map(str::trim) {
        Some("none") | Some("") => Ok(pado_http::ProxyConfig::direct()),
        Some(url) => pado_http::ProxyConfig::explicit(url, "defaults.proxy", env),
        None => pado_http::ProxyConfig::from_env(env),
    }
    .map_err(|source| PlanError::Proxy { source })
}

/// `defaults.insecure` and the files of `defaults.tls` (relative to the scenario
/// file), read once.
fn tls_settings(cfg: &Config, base_dir: &Path) -> Result<pado_http::TlsSettings, PlanError> {
    let files = cfg.defaults.tls.clone().unwrap_or_default();
    let path = |p: &Option<String>| p.as_ref().map(|p| base_dir.join(p));
    let ca = path(&files.ca_cert);
    let (cert, key) = (path(&files.client_cert), path(&files.client_key));
    let client = cert.as_deref().zip(key.as_deref());
    pado_http::TlsSettings::from_files(cfg.defaults.insecure, ca.as_deref(), client).map_err(
        |source| {
            let field = match &source {
                pado_http::TlsFileError::Unusable { what, .. } if what.starts_with("CA") => {
                    "defaults.tls.ca_cert"
                }
                pado_http::TlsFileError::Unusable { what, .. } if what.contains("key") => {
                    "defaults.tls.client_key"
                }
                _ => "defaults.tls.client_cert",
            };
            PlanError::Tls {
                field: field.into(),
                source,
            }
        },
    )
}

/// Concurrent streams per HTTP/2 connection unless `defaults.max_streams` says
/// otherwise (h2load's `-m` is 1; browsers and servers commonly allow 100).
pub(super) const DEFAULT_MAX_STREAMS: u32 = 100;

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

impl Builder<'_> {
    pub(super) fn binder(&mut self) -> Binder<'_> {
        Binder {
            feeds: &self.feeds,
            vars: &mut self.vars,
            picks: &mut self.picks,
            secrets: &mut self.secrets,
            deferred_env: self.deferred_env.as_mut(),
        }
    }

    pub(super) fn compile_text(
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

    pub(super) fn var_id(&mut self, name: &str) -> usize {
        match self.vars.iter().position(|v| v == name) {
            Some(i) => i,
            None => {
                self.vars.push(name.to_string());
                self.vars.len() - 1
            }
        }
    }

    pub(super) fn scenario(&mut self, name: &str, s: &Scenario) -> Result<ScenarioPlan, PlanError> {
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
            script_exec: s.script_exec.clone(),
            iterations_begun: Default::default(),
            segment: None,
        })
    }

    pub(super) fn flow_id(&mut self, name: &str) -> usize {
        match self.flows.iter().position(|f| f == name) {
            Some(i) => i,
            None => {
                self.flows.push(name.to_string());
                self.flows.len() - 1
            }
        }
    }

    pub(super) fn mix_steps(&mut self, p: &str, m: &MixEntry) -> Result<Vec<StepPlan>, PlanError> {
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

    pub(super) fn steps(
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

    pub(super) fn series_id(&mut self, name: &str) -> u32 {
        if let Some(i) = self.series.iter().position(|k| k.name == name) {
            return i as u32;
        }
        self.series.push(SeriesKey::named(name));
        (self.series.len() - 1) as u32
    }

    pub(super) fn check_id(&mut self, name: String) -> u32 {
        if let Some(i) = self.checks.iter().position(|k| *k == name) {
            return i as u32;
        }
        self.checks.push(name);
        (self.checks.len() - 1) as u32
    }

    pub(super) fn step(
        &mut self,
        p: &str,
        s: &Step,
        prefix: Option<&str>,
    ) -> Result<StepPlan, PlanError> {
        let think = s.think.as_ref().map(ThinkPlan::from);
        if let (Some(g), Some(inner)) = (&s.group, &s.steps) {
            return self.group_step(p, g, inner, prefix, think);
        }
        if let Some(ws) = &s.ws {
            self.note_named(s);
            let name = step_name(s, prefix, || default_step_name("WS", &ws.url));
            let series = self.series_id(&name);
            self.catalog
                .record(&name, &self.scope, None, &self.group_path);
            let plan = self.websocket(&format!("{p}.ws"), &name, ws)?;
            return Ok(StepPlan {
                series,
                ws: Some(Box::new(plan)),
                think,
                ..Default::default()
            });
        }
        let mut grpc = None;
        let mut http_method = None;
        let (mut req, name) = if let Some(g) = &s.grpc {
            let name = step_name(s, prefix, || {
                format!("GRPC {}", g.method.trim_start_matches('/'))
            });
            let (plan, status_check) =
                self.grpc(&format!("{p}.grpc"), &name, g, s.check.as_ref())?;
            let req = plan.stand_in();
            grpc = Some((plan, status_check));
            (req, name)
        } else {
            let Some(spec) = &s.request else {
                return Ok(StepPlan {
                    series: u32::MAX,
                    think,
                    ..Default::default()
                });
            };
            let (mut req, method, url_text) = self.request(&format!("{p}.request"), spec)?;
            let name = step_name(s, prefix, || default_step_name(&method, &url_text));
            if let Some(sse) = &s.sse {
                let plan = self.sse_plan(&format!("{p}.sse"), &name, sse)?;
                if let Some(pr) = plan.prompt.as_ref().filter(|pr| !req.form.uses_var(pr.var)) {
                    let var = self.vars.get(pr.var).cloned().unwrap_or_default();
                    return Err(PlanError::Pattern {
                        field: format!("{p}.sse.prompt"),
                        message: format!(
                            "the request never uses `{{{{ {var} }}}}`, so the prompt would not be sent: write it where the prompt goes, e.g. `messages: [ {{ role: user, content: \"{{{{ {var} }}}}\" }} ]`"
                        ),
                    });
                }
                req.sse = Some(plan);
            }
            http_method = Some(method);
            (req, name)
        };
        self.note_named(s);
        let series = self.series_id(&name);
        self.catalog
            .record(&name, &self.scope, http_method.as_deref(), &self.group_path);
        let mut checks = match &s.check {
            // A gRPC call's status is judged by its own check (made above).
            Some(c) if grpc.is_some() => {
                let rest = Check {
                    grpc_status: None,
                    status: None,
                    ..c.clone()
                };
                self.checks_for(&format!("{p}.check"), &name, &rest, &mut req)?
            }
            Some(c) => self.checks_for(&format!("{p}.check"), &name, c, &mut req)?,
            None => Vec::new(),
        };
        let extract = self.extracts(p, s, &mut req)?;
        let mut tags = Vec::new();
        for (k, v) in &s.tags {
            let c = self.compile_text(&format!("{p}.tags.{k}"), v, Escape::Raw, |l| {
                l.as_bytes().to_vec()
            })?;
            tags.push((k.clone(), c));
        }
        let grpc = grpc.map(|(mut plan, status_check)| {
            checks.splice(0..0, status_check);
            plan.decode = req.keep_body;
            Box::new(plan)
        });
        let request = if grpc.is_some() { None } else { Some(req) };
        Ok(StepPlan {
            series,
            request,
            grpc,
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
            ws: None,
        })
    }

    /// A `group:` step: its steps compiled under the group's path, measured as a
    /// flow of their own.
    fn group_step(
        &mut self,
        p: &str,
        g: &str,
        inner: &[Step],
        prefix: Option<&str>,
        think: Option<ThinkPlan>,
    ) -> Result<StepPlan, PlanError> {
        let flow = format!("{}/{g}", self.scope);
        let id = self.flow_id(&flow);
        let outer = std::mem::take(&mut self.group_path);
        self.group_path = format!("{outer}::{g}");
        self.catalog.record_group(&self.group_path, &flow);
        let steps = self.steps(&format!("{p}.steps"), inner, prefix);
        self.group_path = outer;
        let steps = steps?;
        Ok(StepPlan {
            series: u32::MAX,
            group: Some((id, steps)),
            think,
            ..Default::default()
        })
    }

    /// Remember a step the scenario named, with its flow (for the warning about one
    /// name in two flows).
    fn note_named(&mut self, s: &Step) {
        if let Some(n) = &s.name {
            let seen = (n.clone(), self.flow_label.clone());
            if !self.named_steps.contains(&seen) {
                self.named_steps.push(seen);
            }
        }
    }

    /// The step's extractions; what they read is kept of the answer.
    fn extracts(
        &mut self,
        p: &str,
        s: &Step,
        req: &mut RequestPlan,
    ) -> Result<Vec<ExtractPlan>, PlanError> {
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
        Ok(extract)
    }
}

/// A step's name: its own, or `default` (after the entry's name, in a mix).
fn step_name(s: &Step, prefix: Option<&str>, default: impl FnOnce() -> String) -> String {
    s.name.clone().unwrap_or_else(|| {
        let n = default();
        match prefix {
            Some(pre) => format!("{pre}: {n}"),
            None => n,
        }
    })
}
