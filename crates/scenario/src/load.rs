//! Reading a scenario file: YAML (or JSON, which is YAML) into [`Config`], then
//! validation that collects every problem with its line.

use std::path::Path;

use crate::error::{Diagnostic, ScenarioError};
use crate::line_index::LineIndex;
use crate::model::*;

/// A loaded, validated scenario with where it came from.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The scenario.
    pub config: Config,
    /// File name as given (for messages).
    pub file: String,
    /// Directory of the file (relative paths in the scenario are resolved against it).
    pub base_dir: std::path::PathBuf,
    /// Where each field of the file sits, for later errors (thresholds, compiling)
    /// without reading the file again.
    pub lines: LineIndex,
}

/// Read and validate a scenario file.
pub fn load_file(path: &Path) -> Result<Loaded, ScenarioError> {
    load_file_with_target(path, None)
}

/// Read a scenario file, replace its `target` with `target` (from `--target`) when
/// given, then validate: a file without `target:` whose paths are relative is valid
/// once the command line supplies the base URL.
pub fn load_file_with_target(path: &Path, target: Option<&str>) -> Result<Loaded, ScenarioError> {
    let file = path.display().to_string();
    let text = crate::limits::read_capped_string(path, crate::limits::MAX_SCENARIO_BYTES).map_err(
        |source| ScenarioError::Read {
            file: file.clone(),
            source,
        },
    )?;
    let config = parse_str_with_target(&text, &file, target)?;
    Ok(Loaded {
        config,
        lines: LineIndex::build(text.strip_prefix('\u{feff}').unwrap_or(&text)),
        file,
        base_dir: path
            .parent()
            .map(|p| p.to_path_buf())
            .unwrap_or_else(|| ".".into()),
    })
}

/// Parse and validate scenario text; `file` names it in messages.
///
/// A leading UTF-8 byte order mark (Windows editors write one) is dropped: the YAML
/// parser would otherwise read it as content and refuse the file as "more than one
/// document". It sits before the first line, so line numbers stay as they were.
pub fn parse_str(text: &str, file: &str) -> Result<Config, ScenarioError> {
    parse_str_with_target(text, file, None)
}

/// [`parse_str`] with the file's `target` replaced before validation.
pub fn parse_str_with_target(
    text: &str,
    file: &str,
    target: Option<&str>,
) -> Result<Config, ScenarioError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // First pass: syntax, depth and duplicate keys (fatal), then the structure
    // against the model, every problem at once (see `structure`).
    let tree = crate::structure::read(text, file).map_err(ScenarioError::Invalid)?;
    let shape = tree
        .as_ref()
        .map(|t| crate::structure::check(t, file))
        .unwrap_or_default();
    let index = LineIndex::build(text);
    let config: Config = match serde_yaml_ng::from_str(text) {
        Ok(c) => c,
        Err(e) if shape.is_empty() => {
            return Err(ScenarioError::Invalid(vec![serde_diagnostic(&e, file)]))
        }
        Err(_) => return Err(ScenarioError::Invalid(shape)),
    };
    let mut config = config;
    if let Some(t) = target {
        config.target = Some(t.to_string());
    }
    if let Some(t) = config.target.clone().filter(|t| t.contains("{{")) {
        match crate::template::render_env_only(&t) {
            Ok(v) => {
                config.target = Some(v);
                config.target_template = Some(t);
            }
            Err(e) => {
                let pos = index.locate("target");
                let hint = match e
                    .strip_prefix("environment variable `")
                    .and_then(|r| r.split_once('`'))
                {
                    Some((name, _)) => format!("set it before running: `export {name}=...`"),
                    None => "write e.g. `target: \"http://{{ env.TARGET_HOST }}:8080\"`".into(),
                };
                return Err(ScenarioError::Invalid(vec![Diagnostic {
                    file: file.to_string(),
                    line: pos.map(|p| p.0),
                    column: pos.map(|p| p.1),
                    field: "target".into(),
                    message: e,
                    hint: Some(hint),
                }]));
            }
        }
    }
    let mut v = Validator {
        file,
        index: &index,
        out: Vec::new(),
        names: defined_names(&config),
    };
    v.config(&config);
    if v.out.is_empty() {
        Ok(config)
    } else {
        Err(ScenarioError::Invalid(v.out))
    }
}

/// Validate a configuration built in code (quick mode, overrides): same rules, no lines.
pub fn validate(config: &Config, file: &str) -> Result<(), ScenarioError> {
    let index = LineIndex::default();
    let mut v = Validator {
        file,
        index: &index,
        out: Vec::new(),
        names: defined_names(config),
    };
    v.config(config);
    if v.out.is_empty() {
        Ok(())
    } else {
        Err(ScenarioError::Invalid(v.out))
    }
}

fn serde_diagnostic(e: &serde_yaml_ng::Error, file: &str) -> Diagnostic {
    let loc = e.location();
    let mut msg = e.to_string();
    // serde_yaml_ng appends " at line N column M"; the location is shown in front.
    if let Some(i) = msg.find(" at line ") {
        msg.truncate(i);
    }
    let (field, message) = match msg.split_once(": ") {
        Some((f, m))
            if !f.contains(' ')
                && (f.contains('.') || f.contains('[') || f.chars().all(is_ident)) =>
        {
            (f.to_string(), m.to_string())
        }
        _ => (String::new(), msg.clone()),
    };
    let hint = if message.contains("did not match any variant of untagged enum RequestSpec") {
        Some("a request is `\"GET /path\"` or `{ method: POST, url: /path, json: {...} }`".into())
    } else if message.contains("untagged enum Think") {
        Some("think time is `1s`, `{ uniform: [0.5s, 2s] }`, `{ normal: { mean: 1s, stddev: 200ms } }` or `{ pacing: 5s }`".into())
    } else if message.contains("untagged enum StatusMatch") {
        Some("status is `200`, `[200, 201]` or `\"2xx\"`".into())
    } else if message.contains("untagged enum ThresholdEntry") {
        Some("a threshold is `\"p(95) < 200\"` or `{ threshold: \"p(95) < 200\", abort_on_fail: true }`".into())
    } else if message.contains("unknown field") {
        Some("check the spelling; `pado validate` lists every problem at once".into())
    } else {
        None
    };
    Diagnostic {
        file: file.to_string(),
        line: loc.as_ref().map(|l| l.line()),
        column: loc.as_ref().map(|l| l.column()),
        field,
        message,
        hint,
    }
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

struct Validator<'a> {
    file: &'a str,
    index: &'a LineIndex,
    out: Vec<Diagnostic>,
    /// Feeds and extracted variables a template may name.
    names: Names,
}

/// What templates may refer to.
#[derive(Default)]
struct Names {
    feeds: Vec<String>,
    vars: Vec<String>,
}

fn collect_extracts(steps: &[Step], out: &mut Vec<String>) {
    for s in steps {
        out.extend(s.extract.keys().cloned());
        if let Some(inner) = &s.steps {
            collect_extracts(inner, out);
        }
    }
}

fn defined_names(c: &Config) -> Names {
    let mut vars = Vec::new();
    collect_extracts(&c.setup, &mut vars);
    collect_extracts(&c.teardown, &mut vars);
    for (_, s) in &c.scenarios {
        collect_extracts(&s.setup_per_vu, &mut vars);
        collect_extracts(&s.teardown_per_vu, &mut vars);
        collect_extracts(&s.flow, &mut vars);
        for m in &s.mix {
            vars.extend(m.extract.keys().cloned());
            if let Some(f) = &m.flow {
                collect_extracts(f, &mut vars);
            }
        }
    }
    Names {
        feeds: c.data.keys().cloned().collect(),
        vars,
    }
}

const METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

impl Validator<'_> {
    fn err(&mut self, field: &str, message: impl Into<String>, hint: Option<&str>) {
        let pos = self.index.locate(field);
        self.out.push(Diagnostic {
            file: self.file.to_string(),
            line: pos.map(|p| p.0),
            column: pos.map(|p| p.1),
            field: field.to_string(),
            message: message.into(),
            hint: hint.map(str::to_string),
        });
    }

    fn config(&mut self, c: &Config) {
        if let Some(t) = &c.target {
            // An environment-derived target is named as written, never by its value.
            let shown = c.target_template.as_deref().unwrap_or(t);
            let t = shown;
            match url::Url::parse(c.target.as_deref().unwrap_or_default()) {
                Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {
                    if u.host_str().is_none() {
                        self.err("target", format!("`{t}` has no host"), None);
                    }
                }
                Ok(u) => self.err(
                    "target",
                    format!("scheme `{}` is not supported", u.scheme()),
                    Some("use an http:// or https:// URL"),
                ),
                Err(e) => self.err(
                    "target",
                    format!("`{t}` is not a URL: {e}"),
                    Some("write e.g. `target: http://127.0.0.1:8080`"),
                ),
            }
        }
        if let Some(d) = c.defaults.timeout {
            if d.get().is_zero() {
                self.err("defaults.timeout", "timeout must be more than 0", None);
            }
        }
        if c.defaults.max_body.is_some_and(|m| m.0 == 0) {
            self.err(
                "defaults.max_body",
                "max_body must be more than 0",
                Some("write e.g. `max_body: 16MiB`"),
            );
        }
        for (k, v) in &c.defaults.headers {
            self.header(&format!("defaults.headers.{k}"), k, v);
        }
        if let Some(t) = &c.defaults.think {
            self.think("defaults.think", t);
        }
        for (name, d) in &c.data {
            self.data(&format!("data.{name}"), d);
        }
        self.steps("setup", &c.setup, true);
        self.steps("teardown", &c.teardown, true);
        for (metric, list) in &c.thresholds {
            if list.is_empty() {
                self.err(
                    &format!("thresholds.{metric}"),
                    "no expressions",
                    Some("write e.g. `http_req_duration: [\"p(95) < 200\"]`"),
                );
            }
        }
        if let Some(o) = &c.observe {
            self.observe(o, c.target.is_some());
        }
        if c.scenarios.is_empty() {
            self.err(
                "scenarios",
                "no scenarios: nothing would run",
                Some("add `scenarios: { main: { executor: constant-vus, vus: 10, duration: 30s, flow: [ { request: \"GET /\" } ] } }`"),
            );
        }
        for (name, s) in &c.scenarios {
            self.scenario(&format!("scenarios.{name}"), s, c.target.is_some());
        }
    }

    fn observe(&mut self, o: &Observe, has_target: bool) {
        let interval = o.interval.map(|d| d.get());
        if let Some(i) = interval {
            if i < std::time::Duration::from_millis(100) || i > std::time::Duration::from_secs(3600)
            {
                self.err(
                    "observe.interval",
                    "interval must be between 100ms and 1h",
                    Some("2s suits most runs; Prometheus itself defaults to 15s"),
                );
            }
        }
        if let Some(t) = o.timeout {
            if t.get().is_zero() {
                self.err("observe.timeout", "timeout must be more than 0", None);
            }
        }
        if o.endpoints.is_empty() {
            self.err(
                "observe.endpoints",
                "no endpoints to scrape",
                Some("add e.g. `endpoints: [ http://127.0.0.1:8080/actuator/prometheus ]`"),
            );
        }
        let mut names: Vec<String> = Vec::new();
        for (i, e) in o.endpoints.iter().enumerate() {
            let p = match e {
                ObserveEndpoint::Url(_) => format!("observe.endpoints[{i}]"),
                ObserveEndpoint::Full(_) => format!("observe.endpoints[{i}].url"),
            };
            if e.url().starts_with('/') {
                if !has_target {
                    self.err(
                        &p,
                        format!("`{}` is relative but the file has no `target`", e.url()),
                        Some("write a full URL, or set `target:` (relative endpoints are the target's own, e.g. `/actuator/prometheus`)"),
                    );
                }
            } else {
                match url::Url::parse(e.url()) {
                    Ok(u)
                        if (u.scheme() == "http" || u.scheme() == "https")
                            && u.host_str().is_some() => {}
                    Ok(u) => self.err(
                        &p,
                        format!(
                            "`{}`: only http:// and https:// URLs with a host can be scraped",
                            u
                        ),
                        None,
                    ),
                    Err(err) => self.err(
                        &p,
                        format!("`{}` is not a URL: {err}", e.url()),
                        Some("write e.g. `http://127.0.0.1:9100/metrics`"),
                    ),
                }
            }
            let name = e.name();
            if names.contains(&name) {
                let f = match e {
                    ObserveEndpoint::Full(ObserveEndpointSpec { name: Some(_), .. }) => {
                        format!("observe.endpoints[{i}].name")
                    }
                    _ => p.clone(),
                };
                self.err(
                    &f,
                    format!("two endpoints are named `{name}`"),
                    Some("give each endpoint its own `name:`"),
                );
            }
            names.push(name);
            if let ObserveEndpoint::Full(f) = e {
                for (k, v) in &f.headers {
                    let t = match crate::template::parse_template(v) {
                        Ok(t) => t,
                        Err(err) => {
                            self.err(
                                &format!("observe.endpoints[{i}].headers.{k}"),
                                err.to_string(),
                                None,
                            );
                            continue;
                        }
                    };
                    let only_env = t.segments.iter().all(|s| {
                        matches!(
                            s,
                            crate::template::Segment::Lit(_)
                                | crate::template::Segment::Expr(crate::template::Expr::Env(_))
                        )
                    });
                    if !only_env {
                        self.err(
                            &format!("observe.endpoints[{i}].headers.{k}"),
                            "only `{{ env.NAME }}` templates may be used in observe headers",
                            Some("headers are resolved once at start, e.g. `Bearer {{ env.METRICS_TOKEN }}`"),
                        );
                    }
                }
            }
        }
    }

    fn scenario(&mut self, p: &str, s: &Scenario, has_target: bool) {
        use ExecutorKind::*;
        let k = s.executor;
        let allowed: &[&str] = match k {
            ConstantVus => &["vus", "duration"],
            RampingVus => &[
                "stages",
                "steps",
                "start_vus",
                "duration",
                "graceful_ramp_down",
            ],
            ConstantArrivalRate => &[
                "rate",
                "time_unit",
                "duration",
                "pre_allocated_vus",
                "max_vus",
            ],
            RampingArrivalRate => &[
                "stages",
                "start_rate",
                "time_unit",
                "pre_allocated_vus",
                "max_vus",
            ],
            PerVuIterations => &["vus", "iterations", "max_duration"],
        };
        let present = [
            ("vus", s.vus.is_some()),
            ("duration", s.duration.is_some()),
            ("stages", s.stages.is_some()),
            ("steps", s.steps.is_some()),
            ("start_vus", s.start_vus.is_some()),
            ("rate", s.rate.is_some()),
            ("start_rate", s.start_rate.is_some()),
            ("time_unit", s.time_unit.is_some()),
            ("pre_allocated_vus", s.pre_allocated_vus.is_some()),
            ("max_vus", s.max_vus.is_some()),
            ("iterations", s.iterations.is_some()),
            ("max_duration", s.max_duration.is_some()),
            ("graceful_ramp_down", s.graceful_ramp_down.is_some()),
        ];
        for (f, is) in present {
            if is && !allowed.contains(&f) {
                self.err(
                    &format!("{p}.{f}"),
                    format!("`{f}` does not apply to executor {}", k.as_str()),
                    Some(&format!("{} takes: {}", k.as_str(), allowed.join(", "))),
                );
            }
        }
        let need = |v: &mut Self, f: &str, ok: bool, hint: &str| {
            if !ok {
                v.err(
                    &format!("{p}.executor"),
                    format!("executor {} needs `{f}`", k.as_str()),
                    Some(hint),
                );
            }
        };
        match k {
            ConstantVus => {
                need(
                    self,
                    "duration",
                    s.duration.is_some(),
                    "e.g. `duration: 30s`",
                );
                if s.vus == Some(0) {
                    self.err(&format!("{p}.vus"), "must be at least 1", None);
                }
            }
            RampingVus => {
                if s.stages.is_some() && s.steps.is_some() {
                    self.err(
                        &format!("{p}.steps"),
                        "give either `stages` or `steps`, not both",
                        None,
                    );
                }
                if s.duration.is_some() && s.steps.is_none() {
                    self.err(
                        &format!("{p}.duration"),
                        "`duration` only goes with `steps` for ramping-vus (stages set the length)",
                        None,
                    );
                }
                need(
                    self,
                    "stages",
                    s.stages.is_some() || s.steps.is_some(),
                    "e.g. `stages: [{ duration: 30s, target: 100 }, { duration: 1m, target: 100 }, { duration: 30s, target: 0 }]` or `steps: { start: 10, add: 20, every: 10s, max: 130 }`",
                );
                if let Some(st) = &s.steps {
                    let sp = format!("{p}.steps");
                    if st.every.get().is_zero() {
                        self.err(&format!("{sp}.every"), "must be more than 0", None);
                    }
                    if st.max < st.start {
                        self.err(&format!("{sp}.max"), "must be at least `start`", None);
                    }
                    if st.add == 0 && st.max > st.start {
                        self.err(&format!("{sp}.add"), "must be at least 1", None);
                    }
                }
            }
            ConstantArrivalRate => {
                need(
                    self,
                    "rate",
                    s.rate.is_some(),
                    "e.g. `rate: 200` (per time_unit, default 1s)",
                );
                need(
                    self,
                    "duration",
                    s.duration.is_some(),
                    "e.g. `duration: 1m`",
                );
                if let Some(r) = s.rate {
                    if !(r.is_finite() && r > 0.0) {
                        self.err(&format!("{p}.rate"), "must be more than 0", None);
                    }
                }
            }
            RampingArrivalRate => {
                need(
                    self,
                    "stages",
                    s.stages.is_some(),
                    "e.g. `stages: [{ duration: 1m, target: 200 }]` (targets are rates)",
                );
                if let Some(r) = s.start_rate {
                    if !(r.is_finite() && r >= 0.0) {
                        self.err(&format!("{p}.start_rate"), "must be 0 or more", None);
                    }
                }
            }
            PerVuIterations => {
                if s.vus == Some(0) {
                    self.err(&format!("{p}.vus"), "must be at least 1", None);
                }
                if s.iterations == Some(0) {
                    self.err(&format!("{p}.iterations"), "must be at least 1", None);
                }
            }
        }
        if let Some(stages) = &s.stages {
            if stages.is_empty() {
                self.err(&format!("{p}.stages"), "no stages", None);
            }
            for (i, st) in stages.iter().enumerate() {
                if !(st.target.is_finite() && st.target >= 0.0) {
                    self.err(
                        &format!("{p}.stages[{i}].target"),
                        "must be 0 or more",
                        None,
                    );
                }
                if k == RampingVus && st.target.fract() != 0.0 {
                    self.err(
                        &format!("{p}.stages[{i}].target"),
                        "a VU count must be a whole number",
                        None,
                    );
                }
            }
        }
        if let Some(t) = s.time_unit {
            if t.get().is_zero() {
                self.err(&format!("{p}.time_unit"), "must be more than 0", None);
            }
        }
        if let (Some(pre), Some(max)) = (s.pre_allocated_vus, s.max_vus) {
            if max < pre {
                self.err(
                    &format!("{p}.max_vus"),
                    format!("max_vus ({max}) is below pre_allocated_vus ({pre})"),
                    None,
                );
            }
        }
        if s.max_vus == Some(0) {
            self.err(&format!("{p}.max_vus"), "must be at least 1", None);
        }
        self.limits(p, s, k);
        if let Some(t) = &s.think {
            self.think(&format!("{p}.think"), t);
        }
        match (s.mix.is_empty(), s.flow.is_empty()) {
            (true, true) => self.err(
                &format!("{p}.executor"),
                "the scenario has neither `flow` nor `mix`: an iteration would do nothing",
                Some("add `flow: [ { request: \"GET /\" } ]` or a weighted `mix`"),
            ),
            (false, false) => self.err(
                &format!("{p}.mix"),
                "give either `flow` or `mix`, not both",
                Some("put the flow inside the mix as `{ weight: 1, flow: [...] }`"),
            ),
            _ => {}
        }
        for (i, m) in s.mix.iter().enumerate() {
            let mp = format!("{p}.mix[{i}]");
            if let Some(w) = m.weight {
                if !(w.is_finite() && w > 0.0) {
                    self.err(&format!("{mp}.weight"), "must be more than 0", None);
                }
            }
            match (&m.request, &m.flow) {
                (Some(r), None) => self.request(&format!("{mp}.request"), r, has_target),
                (None, Some(f)) => {
                    if m.check.is_some() {
                        self.err(
                            &format!("{mp}.check"),
                            "a check belongs to a step inside the flow",
                            None,
                        );
                    }
                    if f.is_empty() {
                        self.err(&format!("{mp}.flow"), "empty flow", None);
                    }
                    self.steps(&format!("{mp}.flow"), f, has_target);
                }
                (Some(_), Some(_)) => self.err(
                    &format!("{mp}.flow"),
                    "give either `request` or `flow`, not both",
                    None,
                ),
                (None, None) => self.err(
                    &mp,
                    "a mix entry needs a `request` or a `flow`",
                    Some("e.g. `{ weight: 30, name: search, request: \"GET /api/search?q=x\" }`"),
                ),
            }
            if let Some(c) = &m.check {
                self.check(&format!("{mp}.check"), c);
            }
            if let Some(t) = &m.think {
                self.think(&format!("{mp}.think"), t);
            }
            if m.flow.is_some() && (!m.extract.is_empty() || !m.tags.is_empty()) {
                self.err(&mp, "`extract` and `tags` go on the steps of a flow", None);
            }
            for (k, e) in &m.extract {
                self.extract(&format!("{mp}.extract"), k, e);
            }
            for (k, v) in &m.tags {
                self.tag_template(&format!("{mp}.tags.{k}"), v);
            }
        }
        self.steps(&format!("{p}.flow"), &s.flow, has_target);
        self.steps(&format!("{p}.setup_per_vu"), &s.setup_per_vu, has_target);
        self.steps(
            &format!("{p}.teardown_per_vu"),
            &s.teardown_per_vu,
            has_target,
        );
    }

    /// Bounds no machine could honour, checked before anything is allocated: a VU
    /// count that would need more memory than any host has, a rate no scheduler can
    /// start, a load that starts no iteration at all.
    fn limits(&mut self, p: &str, s: &Scenario, k: ExecutorKind) {
        use crate::limits::{MAX_RATE_PER_S, MAX_VUS};
        let vus_fields = [
            ("vus", s.vus),
            ("start_vus", s.start_vus),
            ("pre_allocated_vus", s.pre_allocated_vus),
            ("max_vus", s.max_vus),
            ("steps.start", s.steps.map(|x| x.start)),
            ("steps.max", s.steps.map(|x| x.max)),
        ];
        for (f, v) in vus_fields {
            if let Some(v) = v.filter(|v| *v > MAX_VUS) {
                self.err(
                    &format!("{p}.{f}"),
                    format!("{v} VUs is more than pado allows ({MAX_VUS} per generator)"),
                    Some("split the load across generators, or use an arrival-rate executor"),
                );
            }
        }
        for (f, d) in [("duration", s.duration), ("max_duration", s.max_duration)] {
            if d.is_some_and(|d| d.get().is_zero()) {
                self.err(
                    &format!("{p}.{f}"),
                    "must be more than 0",
                    Some("e.g. `30s`"),
                );
            }
        }
        let unit = s.time_unit.map_or(1.0, |t| t.get().as_secs_f64());
        let open = matches!(
            k,
            ExecutorKind::ConstantArrivalRate | ExecutorKind::RampingArrivalRate
        );
        if let Some(stages) = &s.stages {
            if !stages.is_empty() && stages.iter().all(|st| st.duration.get().is_zero()) {
                self.err(
                    &format!("{p}.stages"),
                    "every stage lasts 0s: nothing would run",
                    None,
                );
            }
            for (i, st) in stages.iter().enumerate() {
                if k == ExecutorKind::RampingVus && st.target > MAX_VUS as f64 {
                    self.err(
                        &format!("{p}.stages[{i}].target"),
                        format!(
                            "{} VUs is more than pado allows ({MAX_VUS} per generator)",
                            st.target
                        ),
                        None,
                    );
                }
            }
        }
        if !open || unit <= 0.0 {
            return;
        }
        let too_fast = |v: &mut Self, f: &str, r: f64| {
            if r.is_finite() && r / unit > MAX_RATE_PER_S {
                v.err(
                    &format!("{p}.{f}"),
                    format!(
                        "{} iterations per second is more than one generator can schedule (at most {MAX_RATE_PER_S:.0}/s)",
                        crate::limits::fmt_rate(r / unit)
                    ),
                    Some("lower the rate, lengthen `time_unit`, or split the load across generators"),
                );
            }
        };
        if let Some(r) = s.rate {
            too_fast(self, "rate", r);
            if let Some(d) = s.duration.filter(|d| !d.get().is_zero()) {
                let n = r / unit * d.get().as_secs_f64();
                if r.is_finite() && r > 0.0 && n < 1.0 {
                    self.err(
                        &format!("{p}.rate"),
                        format!(
                            "at {} per {} for {}, not one iteration would start",
                            crate::limits::fmt_rate(r),
                            s.time_unit.map_or("1s".to_string(), |t| t.to_string()),
                            d
                        ),
                        Some("raise the rate or lengthen the duration"),
                    );
                }
            }
        }
        if let Some(r) = s.start_rate {
            too_fast(self, "start_rate", r);
        }
        if let Some(stages) = &s.stages {
            for (i, st) in stages.iter().enumerate() {
                too_fast(self, &format!("stages[{i}].target"), st.target);
            }
        }
    }

    fn data(&mut self, p: &str, d: &DataSpec) {
        let sources = [d.file.is_some(), d.values.is_some(), d.range.is_some()]
            .iter()
            .filter(|x| **x)
            .count();
        if sources != 1 {
            self.err(
                p,
                "a feed needs exactly one of `file`, `values`, `range`",
                Some(
                    "e.g. `{ file: keywords.csv }`, `{ values: [a, b] }` or `{ range: [1, 100] }`",
                ),
            );
        }
        if let Some([a, b]) = d.range {
            if a > b {
                self.err(
                    &format!("{p}.range"),
                    format!("[{a}, {b}]: the first must not exceed the last"),
                    None,
                );
            }
        }
        if let Some(v) = &d.values {
            if v.is_empty() {
                self.err(&format!("{p}.values"), "no values", None);
            }
        }
        if let Some(s) = d.s {
            if d.pick != Some(PickMode::Zipf) {
                self.err(&format!("{p}.s"), "`s` only applies to `pick: zipf`", None);
            } else if !(s.is_finite() && s > 0.0) {
                self.err(&format!("{p}.s"), "must be more than 0", None);
            }
        }
    }

    /// Check a template's syntax and that every name it uses exists.
    /// A tag value: a template like any other, except that values from the
    /// environment are refused. Tags are written into every result file and shown
    /// in reports, and environment values are often secrets.
    fn tag_template(&mut self, p: &str, text: &str) {
        self.template(p, text);
        if let Ok(t) = crate::template::parse_template(text) {
            for e in t.exprs() {
                if let crate::template::Expr::Env(n) = e {
                    self.err(
                        p,
                        format!("`{{{{ env.{n} }}}}` cannot be used in a tag: tags are written to the results and reports, and values from the environment are kept out of them"),
                        Some("tag with something that is not secret (a class, a region); use env values in URLs, headers or bodies"),
                    );
                }
            }
        }
    }

    fn template(&mut self, p: &str, text: &str) {
        self.template_value(p, text, false);
    }

    /// Check a template's syntax and names; `json_value` says it is a whole string
    /// of a JSON body, the one place a typed hole (`"{{ n | int }}"`) may stand.
    fn template_value(&mut self, p: &str, text: &str, json_value: bool) {
        match crate::template::parse_template(text) {
            Err(e) => self.err(p, format!("template: {e}"), None),
            Ok(t) => {
                if t.has_typed() && !(json_value && t.whole_typed().is_some()) {
                    self.err(
                        p,
                        "a typed value (`| int`, `| number`, `| bool`, `| json`) must be the whole of a JSON body value",
                        Some(if json_value {
                            "write the hole alone in the string: `count: \"{{ n | int }}\"`"
                        } else {
                            "types apply to `json:` bodies; elsewhere a value is text"
                        }),
                    );
                }
                for e in t.exprs() {
                    match e {
                        crate::template::Expr::Name(n, col) => {
                            let feed = self.names.feeds.iter().any(|f| f == n);
                            let var = self.names.vars.iter().any(|v| v == n);
                            if !feed && !var {
                                let known: Vec<&str> = self
                                    .names
                                    .feeds
                                    .iter()
                                    .chain(self.names.vars.iter())
                                    .map(String::as_str)
                                    .collect();
                                self.err(
                                    p,
                                    format!("`{n}` is neither a data feed nor an extracted variable"),
                                    Some(&if known.is_empty() {
                                        "declare it under `data:` or `extract:` it from an earlier response".to_string()
                                    } else {
                                        format!("known names: {}", known.join(", "))
                                    }),
                                );
                            } else if var && !feed && col.is_some() {
                                self.err(
                                    p,
                                    format!("`{n}` is a variable: it has no columns"),
                                    None,
                                );
                            }
                        }
                        crate::template::Expr::Pick(items) => {
                            for (f, _) in items {
                                if !self.names.feeds.iter().any(|x| x == f) {
                                    self.err(p, format!("pick: `{f}` is not a data feed"), None);
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    fn json_templates(&mut self, p: &str, v: &serde_json::Value) {
        match v {
            serde_json::Value::String(s) => self.template_value(p, s, true),
            serde_json::Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    self.json_templates(&format!("{p}[{i}]"), x);
                }
            }
            serde_json::Value::Object(o) => {
                for (k, x) in o {
                    self.json_templates(&format!("{p}.{k}"), x);
                }
            }
            _ => {}
        }
    }

    fn extract(&mut self, p: &str, name: &str, e: &ExtractSpec) {
        let ep = format!("{p}.{name}");
        match e {
            ExtractSpec::Path(path) | ExtractSpec::From(ExtractFrom::Json(path)) => {
                if let Err(err) = serde_json_path::JsonPath::parse(path) {
                    self.err(
                        &ep,
                        format!("`{path}` is not a JSONPath: {err}"),
                        Some("write e.g. `$.token` or `$.items[0].id`; other sources: `{ regex: ... }`, `{ header: Location }`, `{ cookie: SESSION }`"),
                    );
                }
            }
            ExtractSpec::From(ExtractFrom::Regex(r)) => {
                if let Err(err) = regex::Regex::new(r) {
                    self.err(&ep, format!("bad regular expression: {err}"), None);
                }
            }
            ExtractSpec::From(ExtractFrom::Header(h))
            | ExtractSpec::From(ExtractFrom::Cookie(h)) => {
                if h.trim().is_empty() {
                    self.err(&ep, "empty name", None);
                }
            }
        }
    }

    fn steps(&mut self, p: &str, steps: &[Step], has_target: bool) {
        for (i, st) in steps.iter().enumerate() {
            let sp = format!("{p}[{i}]");
            match (&st.group, &st.steps) {
                (Some(_), Some(inner)) => {
                    if inner.iter().any(|s| s.group.is_some()) {
                        self.err(&format!("{sp}.steps"), "groups cannot be nested", None);
                    }
                    if st.request.is_some() {
                        self.err(
                            &format!("{sp}.request"),
                            "a group holds `steps`, not a request of its own",
                            None,
                        );
                    }
                    if inner.is_empty() {
                        self.err(&format!("{sp}.steps"), "empty group", None);
                    }
                    self.steps(&format!("{sp}.steps"), inner, has_target);
                    continue;
                }
                (Some(_), None) => {
                    self.err(
                        &format!("{sp}.group"),
                        "a group needs `steps`",
                        Some("e.g. `{ group: login, steps: [ ... ] }`"),
                    );
                    continue;
                }
                (None, Some(_)) => {
                    self.err(
                        &format!("{sp}.steps"),
                        "`steps` belong to a `group`",
                        Some("add `group: <name>`"),
                    );
                    continue;
                }
                (None, None) => {}
            }
            if st.request.is_none() && st.think.is_none() {
                self.err(
                    &sp,
                    "a step needs a `request` or a `think`",
                    Some("e.g. `{ name: list, request: \"GET /api/posts\" }`"),
                );
            }
            if st.request.is_none() && (!st.extract.is_empty() || !st.tags.is_empty()) {
                self.err(&sp, "`extract` and `tags` need a request", None);
            }
            for (k, e) in &st.extract {
                self.extract(&format!("{sp}.extract"), k, e);
            }
            for (k, v) in &st.tags {
                self.tag_template(&format!("{sp}.tags.{k}"), v);
            }
            if let Some(r) = &st.request {
                self.request(&format!("{sp}.request"), r, has_target);
            } else if st.check.is_some() {
                self.err(&format!("{sp}.check"), "a check needs a request", None);
            }
            if let Some(c) = &st.check {
                self.check(&format!("{sp}.check"), c);
            }
            if let Some(t) = &st.think {
                self.think(&format!("{sp}.think"), t);
            }
        }
    }

    fn request(&mut self, p: &str, r: &RequestSpec, has_target: bool) {
        let (method, url) = match r {
            RequestSpec::Line(line) => match split_request_line(line) {
                Ok(x) => x,
                Err(e) => {
                    self.err(
                        p,
                        e,
                        Some("write `\"GET /path\"` or `\"POST https://host/path\"`"),
                    );
                    return;
                }
            },
            RequestSpec::Full(f) => {
                let bodies = [
                    f.body.is_some(),
                    f.json.is_some(),
                    f.form.is_some(),
                    f.body_file.is_some(),
                ]
                .iter()
                .filter(|b| **b)
                .count();
                if bodies > 1 {
                    self.err(
                        &format!("{p}.body"),
                        "give only one of `body`, `json`, `form`, `body_file`",
                        None,
                    );
                }
                for (k, v) in &f.headers {
                    self.header(&format!("{p}.headers.{k}"), k, v);
                    self.template(&format!("{p}.headers.{k}"), v);
                }
                if let Some(b) = &f.body {
                    self.template(&format!("{p}.body"), b);
                }
                if let Some(j) = &f.json {
                    self.json_templates(&format!("{p}.json"), j);
                }
                if let Some(form) = &f.form {
                    for (k, v) in form {
                        self.template(&format!("{p}.form.{k}"), v);
                    }
                }
                if let Some(t) = f.timeout {
                    if t.get().is_zero() {
                        self.err(&format!("{p}.timeout"), "must be more than 0", None);
                    }
                }
                (
                    f.method.clone().unwrap_or_else(|| "GET".into()),
                    f.url.clone(),
                )
            }
        };
        let up = match r {
            RequestSpec::Line(_) => p.to_string(),
            RequestSpec::Full(_) => format!("{p}.url"),
        };
        if !METHODS.contains(&method.to_ascii_uppercase().as_str()) {
            self.err(
                &up,
                format!("unknown method `{method}`"),
                Some(&format!("use one of {}", METHODS.join(", "))),
            );
        }
        self.template(&up, &url);
        if url.contains("{{") {
            let head = url.split("{{").next().unwrap_or_default();
            if head.is_empty() {
                // The URL starts with a hole: its value is the path (an extracted
                // `Location`, a link from a response), checked when it is rendered.
                if !has_target {
                    self.err(
                        &up,
                        format!("`{url}` is a path from a template but the file has no `target`"),
                        Some("add `target: http://127.0.0.1:8080` at the top: the path is requested there"),
                    );
                }
            } else if !url.starts_with('/') && head.matches('/').count() < 3 {
                self.err(
                    &up,
                    "the scheme, host and port of a URL cannot come from a template",
                    Some("put the host in `target` (or `--target`) and template the path and query, or start the URL with the hole (`{{ next }}`) to request a path taken from a response"),
                );
            }
            return;
        }
        if url.is_empty() {
            self.err(&up, "empty URL", None);
        } else if url.starts_with('/') {
            if !has_target {
                self.err(
                    &up,
                    format!("`{url}` is relative but the file has no `target`"),
                    Some("add `target: http://127.0.0.1:8080` at the top, or use an absolute URL"),
                );
            }
        } else {
            match url::Url::parse(&url) {
                Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {}
                Ok(u) => self.err(
                    &up,
                    format!("scheme `{}` is not supported", u.scheme()),
                    Some("use http:// or https://"),
                ),
                Err(e) => self.err(
                    &up,
                    format!("`{url}` is not a URL: {e}"),
                    Some("a path starts with `/`; a full URL with http:// or https://"),
                ),
            }
        }
    }

    fn header(&mut self, p: &str, k: &str, v: &str) {
        let bad_name = k.is_empty()
            || !k
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if bad_name {
            self.err(p, format!("`{k}` is not a valid header name"), None);
        }
        if v.contains('\r') || v.contains('\n') {
            self.err(p, "a header value cannot contain a line break", None);
        }
        if v.contains('\0') {
            self.err(p, "a header value cannot contain a NUL byte", None);
        }
        if k.eq_ignore_ascii_case("transfer-encoding") {
            self.err(
                p,
                "pado frames request bodies itself (Content-Length); a `Transfer-Encoding` header would make the request unreadable",
                Some("remove the header"),
            );
        }
    }

    fn check(&mut self, p: &str, c: &Check) {
        // Values compared with the response may hold templates (`{{ id }}`): the
        // names they use must exist like anywhere else.
        if let Some(t) = c.body_contains.as_deref().filter(|t| t.contains("{{")) {
            self.template(&format!("{p}.body_contains"), t);
        }
        for (path, v) in &c.json {
            if let Some(t) = v.as_str().filter(|t| t.contains("{{")) {
                self.template(&format!("{p}.json.{path}"), t);
            }
        }
        for (name, v) in &c.header {
            if v.contains("{{") {
                self.template(&format!("{p}.header.{name}"), v);
            }
        }
        if let Some(StatusMatch::Class(s)) = &c.status {
            if parse_status_class(s).is_none() {
                self.err(
                    &format!("{p}.status"),
                    format!("`{s}` is not a status or class"),
                    Some("write `200`, `[200, 201]` or `\"2xx\"`"),
                );
            }
        }
        if let Some(StatusMatch::Any(v)) = &c.status {
            if v.is_empty() {
                self.err(&format!("{p}.status"), "empty list of statuses", None);
            }
        }
        for path in c.json.keys().chain(c.json_exists.iter()) {
            if let Err(err) = serde_json_path::JsonPath::parse(path) {
                self.err(
                    &format!("{p}.json"),
                    format!("`{path}` is not a JSONPath: {err}"),
                    None,
                );
            }
        }
        if let Some(r) = &c.body_matches {
            if let Err(err) = regex::Regex::new(r) {
                self.err(
                    &format!("{p}.body_matches"),
                    format!("bad regular expression: {err}"),
                    None,
                );
            }
        }
        if c.status.is_none()
            && c.body_contains.is_none()
            && c.max_duration.is_none()
            && c.json.is_empty()
            && c.json_exists.is_empty()
            && c.header.is_empty()
            && c.body_matches.is_none()
        {
            self.err(
                p,
                "a check with nothing to check",
                Some("use `status`, `body_contains`, `body_matches`, `json`, `json_exists`, `header` or `max_duration`"),
            );
        }
    }

    fn think(&mut self, p: &str, t: &Think) {
        if let Think::Dist(ThinkDist::Uniform([a, b])) = t {
            if b < a {
                self.err(
                    p,
                    "uniform bounds are reversed",
                    Some("write `[low, high]`"),
                );
            }
        }
    }
}

/// Split `"GET /path"` (or a bare URL, meaning GET) into method and URL. Everything
/// after the method is the URL, so a query with a space (`q=검색 엔진`) is kept whole
/// and percent-encoded later.
pub fn split_request_line(line: &str) -> Result<(String, String), String> {
    let t = line.trim();
    if t.is_empty() {
        return Err("empty request".into());
    }
    match t.split_once(char::is_whitespace) {
        Some((first, rest)) if first.chars().all(|c| c.is_ascii_alphabetic()) => {
            Ok((first.to_ascii_uppercase(), rest.trim().to_string()))
        }
        _ => Ok(("GET".into(), t.to_string())),
    }
}

/// A status written as text: `"2xx"` (a class) or `"201"` (one code), as the
/// inclusive range of codes it accepts. `None` if it is neither.
pub fn parse_status_class(s: &str) -> Option<(u16, u16)> {
    let b = s.trim().as_bytes();
    if b.len() == 3 && (b'1'..=b'5').contains(&b[0]) && b[1..].eq_ignore_ascii_case(b"xx") {
        let c = (b[0] - b'0') as u16 * 100;
        Some((c, c + 99))
    } else {
        match s.trim().parse::<u16>() {
            Ok(n) if (100..=599).contains(&n) => Some((n, n)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errs(src: &str) -> Vec<Diagnostic> {
        match parse_str(src, "t.yaml") {
            Ok(_) => vec![],
            Err(e) => e.diagnostics().to_vec(),
        }
    }

    fn one_scenario(body: &str) -> Vec<Diagnostic> {
        errs(&format!(
            "target: http://127.0.0.1:1\nscenarios:\n  a:\n{body}    flow: [{{ request: \"GET /\" }}]\n"
        ))
    }

    #[test]
    fn loads_no_machine_could_run_are_refused_with_the_limit() {
        let cases = [
            ("    executor: constant-vus\n    vus: 4294967295\n    duration: 2s\n", "scenarios.a.vus", "1000000"),
            ("    executor: constant-arrival-rate\n    rate: 100\n    duration: 2s\n    pre_allocated_vus: 4294967295\n    max_vus: 4294967295\n", "scenarios.a.pre_allocated_vus", "1000000"),
            ("    executor: constant-arrival-rate\n    rate: 1e308\n    duration: 2s\n", "scenarios.a.rate", "10000000/s"),
            ("    executor: constant-arrival-rate\n    rate: 1\n    time_unit: 1ns\n    duration: 2s\n", "scenarios.a.rate", "1.000e9 iterations"),
            ("    executor: ramping-arrival-rate\n    stages: [{ duration: 2s, target: 1e300 }]\n", "scenarios.a.stages[0].target", "10000000/s"),
            ("    executor: ramping-vus\n    stages: [{ duration: 2s, target: 5000000 }]\n", "scenarios.a.stages[0].target", "1000000"),
            ("    executor: constant-vus\n    vus: 1\n    duration: 0s\n", "scenarios.a.duration", "more than 0"),
            ("    executor: constant-arrival-rate\n    rate: 1e-9\n    duration: 10s\n", "scenarios.a.rate", "not one iteration"),
            ("    executor: ramping-vus\n    stages: [{ duration: 0s, target: 5 }]\n", "scenarios.a.stages", "lasts 0s"),
        ];
        for (body, field, says) in cases {
            let e = one_scenario(body);
            let hit = e.iter().find(|d| d.field == field);
            let d = hit.unwrap_or_else(|| panic!("{field} not refused for {body:?}: {e:?}"));
            assert!(d.message.contains(says), "{d}");
            assert!(d.line.is_some(), "{d}");
            assert!(!d.message.contains("inf"), "{d}");
        }
    }

    #[test]
    fn environment_values_are_refused_in_tags() {
        let e = one_scenario("    executor: constant-vus\n    vus: 1\n    duration: 1s\n    mix:\n      - { request: \"GET /\", tags: { who: \"u-{{ env.SECRET_TOKEN }}\" } }\n");
        let d = e
            .iter()
            .find(|d| d.field == "scenarios.a.mix[0].tags.who")
            .unwrap_or_else(|| panic!("{e:?}"));
        assert!(d.message.contains("cannot be used in a tag"), "{d}");
        assert_eq!(d.line, Some(8), "{d}");
        // Other templates in tags stay allowed.
        let ok = errs("target: http://127.0.0.1:1\nscenarios:\n  a:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n    mix:\n      - { request: \"GET /\", tags: { vu: \"{{ vu }}\" } }\n");
        assert_eq!(ok, vec![]);
    }

    #[test]
    fn nul_bytes_and_transfer_encoding_headers_are_refused() {
        let file = |headers: &str| {
            errs(&format!(
                "target: http://127.0.0.1:1\ndefaults:\n  headers: {headers}\nscenarios:\n  a:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n    flow: [{{ request: {{ url: /, headers: {headers} }} }}]\n"
            ))
        };
        let e = file("{ X-A: \"a\\0b\", Transfer-Encoding: chunked }");
        for field in [
            "defaults.headers.X-A",
            "scenarios.a.flow[0].request.headers.X-A",
        ] {
            assert!(
                e.iter()
                    .any(|d| d.field == field && d.message.contains("NUL")),
                "{field}: {e:?}"
            );
        }
        assert_eq!(
            e.iter()
                .filter(|d| d.message.contains("frames request bodies itself"))
                .count(),
            2,
            "{e:?}"
        );
        assert_eq!(file("{ X-A: b }"), vec![]);
    }

    #[test]
    fn loads_at_the_limits_are_accepted() {
        for body in [
            "    executor: constant-vus\n    vus: 1000000\n    duration: 2s\n",
            "    executor: constant-arrival-rate\n    rate: 10000000\n    duration: 2s\n",
            "    executor: constant-arrival-rate\n    rate: 1\n    time_unit: 1m\n    duration: 1m\n",
            "    executor: ramping-arrival-rate\n    stages: [{ duration: 0s, target: 5 }, { duration: 2s, target: 5 }]\n",
        ] {
            assert_eq!(one_scenario(body), vec![], "{body}");
        }
    }

    #[test]
    fn a_good_file_loads() {
        let c = parse_str(
            "name: demo\ntarget: http://127.0.0.1:8080\nthresholds:\n  http_req_duration: [\"p(95) < 200\"]\nscenarios:\n  browse:\n    executor: ramping-vus\n    stages: [{ duration: 10s, target: 5 }, { duration: 5s, target: 0 }]\n    mix:\n      - { weight: 30, name: search, request: \"GET /api/search?q=x\", check: { status: 200 } }\n      - { weight: 5, name: write, flow: [ { request: { method: POST, url: /api/posts, json: { title: \"안녕\" } } }, { think: 1s } ] }\n    think: { uniform: [0.5s, 2s] }\n",
            "t.yaml",
        )
        .unwrap();
        assert_eq!(c.scenarios[0].0, "browse");
        assert_eq!(c.scenarios[0].1.mix.len(), 2);
    }

    #[test]
    fn a_leading_byte_order_mark_is_ignored_and_lines_stay_right() {
        let body = "name: bom\ntarget: http://127.0.0.1:8080\nscenarios:\n  a:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n    flow: [{ request: \"GET /\" }]\n";
        let plain = parse_str(body, "t.yaml").unwrap();
        let with_bom = parse_str(&format!("\u{feff}{body}"), "t.yaml").unwrap();
        assert_eq!(with_bom, plain);
        assert_eq!(with_bom.name.as_deref(), Some("bom"));
        // Errors found after parsing and by the YAML parser still name the right line.
        let e = errs("\u{feff}target: http://x\nscenarios:\n  a:\n    executor: constant-vus\n    vus: 1\n    duraton: 10s\n    flow: [{ request: \"GET /\" }]\n");
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].line, Some(6), "{:?}", e[0]);
        let e = errs("\u{feff}target: http://x\nscenarios:\n  a:\n    executor: constant-arrival-rate\n    rate: -5\n    duration: 1s\n    flow: [{ request: \"GET /\" }]\n");
        assert!(
            e.iter()
                .any(|d| d.line == Some(5) && d.field.ends_with("rate")),
            "{e:?}"
        );
    }

    #[test]
    fn unknown_field_names_line_and_field() {
        let e = errs("target: http://x\nscenarios:\n  a:\n    executor: constant-vus\n    vus: 1\n    duraton: 10s\n    flow: [{ request: \"GET /\" }]\n");
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].line, Some(6), "{:?}", e[0]);
        assert!(e[0].message.contains("duraton"), "{}", e[0]);
        assert!(e[0].to_string().starts_with("t.yaml:6:"), "{}", e[0]);
    }

    #[test]
    fn semantic_errors_are_all_reported_with_lines() {
        let e = errs("scenarios:\n  a:\n    executor: constant-arrival-rate\n    rate: -5\n    vus: 3\n    flow:\n      - request: \"FETCH /x\"\n");
        let text: Vec<String> = e.iter().map(|d| d.to_string()).collect();
        let all = text.join("\n");
        assert!(
            all.contains("t.yaml:5:") && all.contains("`vus` does not apply"),
            "{all}"
        );
        assert!(
            all.contains("t.yaml:4:") && all.contains("rate: must be more than 0"),
            "{all}"
        );
        assert!(all.contains("needs `duration`"), "{all}");
        assert!(all.contains("unknown method `FETCH`"), "{all}");
        assert!(
            all.contains("relative but the file has no `target`"),
            "{all}"
        );
    }

    #[test]
    fn bad_executor_and_bad_duration() {
        let e = errs("scenarios:\n  a:\n    executor: constant-users\n");
        assert_eq!(e[0].line, Some(3));
        assert!(
            e[0].message.contains("unknown executor `constant-users`"),
            "{}",
            e[0]
        );
        assert!(
            e[0].hint
                .as_deref()
                .unwrap_or_default()
                .contains("did you mean `constant-vus`"),
            "{}",
            e[0]
        );
        let e = errs("target: http://h\nscenarios:\n  a:\n    executor: constant-vus\n    duration: 10x\n    flow: [{request: /}]\n");
        assert_eq!(e[0].line, Some(5), "{}", e[0]);
        assert!(e[0].message.contains("unknown unit"), "{}", e[0]);
    }

    #[test]
    fn templates_and_names_are_checked_with_lines() {
        let e = errs("target: http://h\ndata:\n  kw: { file: k.csv }\n  bad: { range: [5, 1] }\nscenarios:\n  a:\n    executor: constant-vus\n    duration: 1s\n    flow:\n      - request: \"GET /s?q={{ kw.term }}&t={{ token }}\"\n      - { request: \"GET /x\", extract: { id: \"$.[\" } }\n      - request: { method: POST, url: /p, json: { a: \"{{ nope }}\" } }\n");
        let all: Vec<String> = e.iter().map(|d| d.to_string()).collect();
        let all = all.join("\n");
        assert!(
            all.contains("t.yaml:4:") && all.contains("first must not exceed"),
            "{all}"
        );
        assert!(
            all.contains("t.yaml:10:") && all.contains("`token` is neither"),
            "{all}"
        );
        assert!(
            all.contains("t.yaml:11:") && all.contains("not a JSONPath"),
            "{all}"
        );
        assert!(all.contains("json.a") && all.contains("`nope`"), "{all}");
        // Defined by an extract elsewhere: fine.
        let ok = errs("target: http://h\nscenarios:\n  a:\n    executor: constant-vus\n    duration: 1s\n    setup_per_vu:\n      - { request: \"POST /login\", extract: { token: $.token } }\n    flow:\n      - request: { url: \"/me/{{ token }}\", headers: { Authorization: \"Bearer {{ token }}\" } }\n      - { group: g, steps: [ { request: /a } ] }\n");
        assert!(ok.is_empty(), "{ok:?}");
    }

    #[test]
    fn typed_values_and_path_holes_are_checked_where_they_stand() {
        let flow = |steps: &str, target: &str| {
            errs(&format!(
                "{target}scenarios:\n  a:\n    executor: constant-vus\n    duration: 1s\n    flow:\n{steps}"
            ))
        };
        let t = "target: http://127.0.0.1:1\n";
        // The whole of a JSON value: fine, and a path taken from a response.
        let ok = flow("      - { request: \"GET /a\", extract: { next: { header: Location } } }\n      - request: { method: POST, url: \"{{ next }}\", json: { n: \"{{ iter | int }}\", items: [\"{{ next | json }}\"] } }\n", t);
        assert!(ok.is_empty(), "{ok:?}");
        let text = |d: Vec<Diagnostic>| {
            d.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        };
        // Part of a JSON string, a URL, a header: a type has no meaning there.
        let e = text(flow("      - request: { method: POST, url: \"/a/{{ iter | int }}\", headers: { X-N: \"{{ vu | int }}\" }, json: { n: \"n{{ iter | int }}\" } }\n", t));
        assert_eq!(
            e.matches("must be the whole of a JSON body value").count(),
            3,
            "{e}"
        );
        assert!(
            e.contains("t.yaml:7:106: scenarios.a.flow[0].request.json.n"),
            "{e}"
        );
        let e = text(flow(
            "      - request: { method: POST, url: /a, json: { n: \"{{ iter | integer }}\" } }\n",
            t,
        ));
        assert!(e.contains("unknown type `integer`"), "{e}");
        // A leading hole needs a target to be requested on.
        let e = text(flow("      - request: \"GET {{ vu }}\"\n", ""));
        assert!(
            e.contains("is a path from a template but the file has no `target`"),
            "{e}"
        );
        // The host still cannot come from a template.
        let e = text(flow("      - request: \"GET http://{{ vu }}/x\"\n", t));
        assert!(e.contains("cannot come from a template"), "{e}");
    }

    #[test]
    fn request_line_split() {
        assert_eq!(
            split_request_line("post /a").unwrap(),
            ("POST".into(), "/a".into())
        );
        assert_eq!(
            split_request_line("http://h/x").unwrap(),
            ("GET".into(), "http://h/x".into())
        );
        assert_eq!(
            split_request_line("GET /s?q=검색 엔진").unwrap().1,
            "/s?q=검색 엔진"
        );
        assert!(split_request_line("  ").is_err());
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = fastrand::Rng::with_seed(0x9e3779b97f4a7c15);
        let alphabet = b"ab:- \n{}[],\"'#&*!|>%@`0123456789scenariosexecutor\t";
        for _ in 0..3000 {
            let s: Vec<u8> = (0..rng.usize(..80))
                .map(|_| alphabet[rng.usize(..alphabet.len())])
                .collect();
            let s = String::from_utf8_lossy(&s);
            let _ = parse_str(&s, "fuzz.yaml");
        }
    }

    #[test]
    fn observe_section_loads_and_its_errors_name_lines() {
        let c = parse_str(
            "target: http://127.0.0.1:8080\nobserve:\n  interval: 1s\n  endpoints:\n    - http://127.0.0.1:9100/metrics\n    - { name: app, url: http://127.0.0.1:8080/actuator/prometheus, headers: { Authorization: \"Bearer {{ env.T }}\" } }\nscenarios:\n  a: { executor: constant-vus, vus: 1, duration: 1s, flow: [{ request: \"GET /\" }] }\n",
            "t.yaml",
        )
        .unwrap();
        let o = c.observe.unwrap();
        assert_eq!(o.endpoints[0].name(), "node");
        assert_eq!(o.endpoints[1].name(), "app");
        let e = errs("target: http://127.0.0.1:8080\nobserve:\n  interval: 10ms\n  endpoints:\n    - ftp://x/metrics\n    - http://127.0.0.1:9100/metrics\n    - { name: node, url: \"http://127.0.0.1:9101/m\", headers: { X: \"{{ vu }}\" } }\nscenarios:\n  a: { executor: constant-vus, vus: 1, duration: 1s, flow: [{ request: \"GET /\" }] }\n");
        let all: Vec<String> = e.iter().map(|d| d.to_string()).collect();
        let all = all.join("\n");
        assert!(
            all.contains("t.yaml:3:") && all.contains("between 100ms and 1h"),
            "{all}"
        );
        assert!(
            all.contains("t.yaml:5:") && all.contains("only http://"),
            "{all}"
        );
        assert!(all.contains("two endpoints are named `node`"), "{all}");
        assert!(all.contains("observe.endpoints[2].headers.X"), "{all}");
    }
}
