//! Quick mode and overrides: command-line flags expand into the same [`Config`] a file
//! would give (as k6's shortcut flags do), so the engine has one input.

use std::collections::BTreeMap;

use crate::model::*;
use crate::Dur;
use pado_base::units::parse_duration;

/// The load shape flags ask for.
#[derive(Clone, Debug, PartialEq)]
pub enum LoadShape {
    /// `--vus N --duration D`: constant-vus.
    Vus {
        /// VUs.
        vus: u32,
        /// Length.
        duration: Dur,
    },
    /// `--stages 30s:100,1m:100,30s:0`: ramping-vus.
    Stages(Vec<Stage>),
    /// `--step-ramp 10:20:10s:130`: ramping-vus in steps; `duration` extends the last
    /// level.
    StepRamp(StepRamp, Option<Dur>),
    /// `--rate R --duration D`: constant-arrival-rate.
    Rate {
        /// Iterations per second.
        rate: f64,
        /// Length.
        duration: Dur,
    },
    /// `--iterations N` (with `--vus`): per-vu-iterations.
    Iterations {
        /// VUs.
        vus: u32,
        /// Iterations each.
        iterations: u64,
    },
    /// `--iterations N` on a k6 script, as `k6 run` reads it: N iterations in all,
    /// shared by the VUs (shared-iterations), not N each.
    SharedIterations {
        /// VUs.
        vus: u32,
        /// Iterations in all.
        iterations: u64,
    },
    /// One parameter of the file's own load model: `--duration` alone, `--vus` alone
    /// or `--rate` alone on a scenario file. The executor stays what the file says (a
    /// lone `--duration` must not turn 200 arrivals/s into a closed test of 10 VUs);
    /// a parameter the executor does not have is refused by [`apply_overrides`].
    Adjust {
        /// New VU count (constant-vus, per-vu-iterations).
        vus: Option<u32>,
        /// New length (constant executors, and ramping-vus `steps`).
        duration: Option<Dur>,
        /// New arrival rate per `time_unit` (constant-arrival-rate).
        rate: Option<f64>,
    },
}

/// Settings from flags that apply on top of a file (or build quick mode).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides {
    /// Replace every scenario's load model.
    pub shape: Option<LoadShape>,
    /// Open model pool limit.
    pub max_vus: Option<u32>,
    /// Request timeout.
    pub timeout: Option<Dur>,
    /// Extra default headers.
    pub headers: Vec<(String, String)>,
    /// Skip certificate verification.
    pub insecure: bool,
    /// Extra thresholds: (metric key, expression).
    pub thresholds: Vec<(String, String)>,
    /// Test name.
    pub name: Option<String>,
    /// Think time after each iteration of every scenario.
    pub think: Option<Dur>,
    /// Replace the file's `target`.
    pub target: Option<String>,
    /// Extra metrics endpoints to scrape (`URL` or `NAME=URL`).
    pub observe: Vec<String>,
    /// Replace the scrape interval.
    pub observe_interval: Option<Dur>,
    /// Replace `defaults.max_body`.
    pub max_body: Option<crate::ByteSize>,
    /// Set `defaults.follow_redirects: false` (`--no-follow-redirects`).
    pub no_follow_redirects: bool,
    /// Replace `defaults.tls.ca_cert` (an absolute path: flags are relative to
    /// where pado runs, the file's paths to the file).
    pub ca_cert: Option<String>,
    /// Replace `defaults.tls.client_cert` and `client_key` (absolute paths).
    pub client_identity: Option<(String, String)>,
    /// Replace `defaults.http` (`--http2`, `--http`).
    pub http: Option<crate::HttpVersion>,
    /// Replace `defaults.max_streams` (`--max-streams`).
    pub max_streams: Option<u32>,
    /// Replace `defaults.connections` (`--connections`).
    pub connections: Option<crate::ConnectionReuse>,
    /// Replace `defaults.proxy` (`--proxy URL`, or `none` for `--no-proxy`).
    pub proxy: Option<String>,
    /// Replace `defaults.compression` (`--compression`).
    pub compression: Option<Vec<crate::Compression>>,
    /// `--env NAME=VALUE`: entries of a k6 script's `__ENV`, over the process
    /// environment (a scenario file reads its environment itself).
    pub env: Vec<(String, String)>,
    /// `--tag NAME=VALUE`: k6's test-wide tags, on every request and metric
    /// sample of a k6 script (over its `options.tags`).
    pub tags: Vec<(String, String)>,
}

/// The single request quick mode sends.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QuickRequest {
    /// Absolute URL.
    pub url: String,
    /// Method (default GET).
    pub method: Option<String>,
    /// Body text.
    pub body: Option<String>,
    /// Body file.
    pub body_file: Option<String>,
}

/// `--observe URL` or `--observe NAME=URL`.
fn observe_flag(flag: &str) -> ObserveEndpoint {
    match flag.split_once('=') {
        Some((name, url)) if !name.contains("://") && !name.is_empty() && !name.contains('/') => {
            ObserveEndpoint::Full(ObserveEndpointSpec {
                name: Some(name.to_string()),
                url: url.to_string(),
                headers: Default::default(),
            })
        }
        _ => ObserveEndpoint::Url(flag.to_string()),
    }
}

/// Build a one-scenario config from quick-mode flags.
pub fn quick_config(req: &QuickRequest, ov: &Overrides) -> Config {
    let method = req
        .method
        .clone()
        .unwrap_or_else(|| "GET".into())
        .to_ascii_uppercase();
    let name = crate::naming::default_step_name(&method, &req.url);
    let step = Step {
        name: Some(name),
        request: Some(RequestSpec::Full(RequestFull {
            method: Some(method),
            url: req.url.clone(),
            body: req.body.clone(),
            body_file: req.body_file.clone(),
            ..Default::default()
        })),
        ..Default::default()
    };
    let mut scenario = blank_scenario(ExecutorKind::ConstantVus);
    scenario.flow = vec![step];
    let mut cfg = Config {
        name: Some(ov.name.clone().unwrap_or_else(|| "quick".into())),
        scenarios: vec![("default".into(), scenario)],
        ..Default::default()
    };
    let mut ov = ov.clone();
    if ov.shape.is_none() {
        ov.shape = Some(LoadShape::Vus {
            vus: 10,
            duration: Dur::from_secs(10),
        });
    }
    // Quick mode's scenario is built here, so every shape fits it.
    let _ = apply_overrides(&mut cfg, &ov);
    // `--observe /metrics` is the target's own endpoint: quick mode has no `target`,
    // so a path joins the origin of `--url`.
    if let (Some(o), Ok(u)) = (cfg.observe.as_mut(), url::Url::parse(&req.url)) {
        let origin = u.origin().ascii_serialization();
        for e in o.endpoints.iter_mut() {
            match e {
                ObserveEndpoint::Url(x) if x.starts_with('/') => *x = format!("{origin}{x}"),
                ObserveEndpoint::Full(f) if f.url.starts_with('/') => {
                    f.url = format!("{origin}{}", f.url)
                }
                _ => {}
            }
        }
    }
    cfg
}

fn blank_scenario(executor: ExecutorKind) -> Scenario {
    Scenario {
        executor,
        ..Default::default()
    }
}

/// Apply flag overrides to a config (file or quick). A complete load shape replaces
/// the executor of every scenario, keeping what each iteration does;
/// [`LoadShape::Adjust`] changes one parameter of each scenario's own executor and
/// fails (naming the scenario and its executor) when that executor has no such
/// parameter, so a flag never silently changes the load model.
pub fn apply_overrides(cfg: &mut Config, ov: &Overrides) -> Result<(), String> {
    if let Some(LoadShape::Adjust {
        vus,
        duration,
        rate,
    }) = &ov.shape
    {
        for (name, s) in cfg.scenarios.iter_mut() {
            adjust(name, s, *vus, *duration, *rate)?;
        }
    }
    if let Some(n) = &ov.name {
        cfg.name = Some(n.clone());
    }
    if let Some(t) = &ov.target {
        cfg.target = Some(t.clone());
    }
    override_defaults(&mut cfg.defaults, ov);
    if !ov.observe.is_empty() || ov.observe_interval.is_some() {
        let o = cfg.observe.get_or_insert_with(Default::default);
        for e in &ov.observe {
            o.endpoints.push(observe_flag(e));
        }
        if let Some(i) = ov.observe_interval {
            o.interval = Some(i);
        }
    }
    for (metric, expr) in &ov.thresholds {
        cfg.thresholds
            .entry(metric.clone())
            .or_default()
            .push(ThresholdEntry::Expr(expr.clone()));
    }
    for (_, s) in cfg.scenarios.iter_mut() {
        if let Some(t) = ov.think {
            s.think = Some(Think::Fixed(t));
        }
        if let Some(shape) = ov
            .shape
            .as_ref()
            .filter(|s| !matches!(s, LoadShape::Adjust { .. }))
        {
            replace_load(s, shape);
        }
        if let Some(m) = ov.max_vus {
            if s.executor.is_open_model() {
                s.max_vus = Some(m);
                if s.pre_allocated_vus.is_some_and(|p| p > m) {
                    s.pre_allocated_vus = Some(m);
                }
            }
        }
    }
    Ok(())
}

/// The request defaults the flags set (timeout, headers, TLS, protocol, proxy...),
/// each replacing the file's value only when given.
fn override_defaults(d: &mut Defaults, ov: &Overrides) {
    if let Some(t) = ov.timeout {
        d.timeout = Some(t);
    }
    for (k, v) in &ov.headers {
        d.headers.insert(k.clone(), v.clone());
    }
    if ov.insecure {
        d.insecure = true;
    }
    if let Some(m) = ov.max_body {
        d.max_body = Some(m);
    }
    if ov.no_follow_redirects {
        d.follow_redirects = Some(false);
    }
    if let Some(ca) = &ov.ca_cert {
        d.tls.get_or_insert_with(Default::default).ca_cert = Some(ca.clone());
    }
    if let Some((cert, key)) = &ov.client_identity {
        let t = d.tls.get_or_insert_with(Default::default);
        t.client_cert = Some(cert.clone());
        t.client_key = Some(key.clone());
    }
    if let Some(h) = ov.http {
        d.http = Some(h);
    }
    if let Some(m) = ov.max_streams {
        d.max_streams = Some(m);
    }
    if let Some(c) = ov.connections {
        d.connections = Some(c);
    }
    if let Some(p) = &ov.proxy {
        d.proxy = Some(p.clone());
    }
    if let Some(c) = &ov.compression {
        d.compression = Some(c.clone());
    }
}

/// Replace a scenario's load model by a complete flag shape (never
/// [`LoadShape::Adjust`]).
fn replace_load(s: &mut Scenario, shape: &LoadShape) {
    // Replace the load model only: what iterations do (flow, mix, setup,
    // teardown, think, cookies) stays.
    let keep = std::mem::take(s);
    let mut n = Scenario {
        executor: s.executor,
        mix: keep.mix,
        flow: keep.flow,
        think: keep.think,
        start_time: keep.start_time,
        graceful_stop: keep.graceful_stop,
        setup_per_vu: keep.setup_per_vu,
        teardown_per_vu: keep.teardown_per_vu,
        cookies: keep.cookies,
        script_exec: keep.script_exec,
        ..Default::default()
    };
    match shape {
        LoadShape::Vus { vus, duration } => {
            n.executor = ExecutorKind::ConstantVus;
            n.vus = Some(*vus);
            n.duration = Some(*duration);
        }
        LoadShape::Stages(st) => {
            n.executor = ExecutorKind::RampingVus;
            n.stages = Some(st.clone());
        }
        LoadShape::StepRamp(r, d) => {
            n.executor = ExecutorKind::RampingVus;
            n.steps = Some(*r);
            n.duration = *d;
        }
        LoadShape::Rate { rate, duration } => {
            n.executor = ExecutorKind::ConstantArrivalRate;
            n.rate = Some(*rate);
            n.duration = Some(*duration);
        }
        LoadShape::Iterations { vus, iterations } => {
            n.executor = ExecutorKind::PerVuIterations;
            n.vus = Some(*vus);
            n.iterations = Some(*iterations);
        }
        LoadShape::SharedIterations { vus, iterations } => {
            n.executor = ExecutorKind::SharedIterations;
            n.vus = Some(*vus);
            n.iterations = Some(*iterations);
        }
        LoadShape::Adjust { .. } => unreachable!("the caller filters it out"),
    }
    *s = n;
}

/// Change one scenario's own load parameters (see [`LoadShape::Adjust`]).
fn adjust(
    name: &str,
    s: &mut Scenario,
    vus: Option<u32>,
    duration: Option<Dur>,
    rate: Option<f64>,
) -> Result<(), String> {
    use ExecutorKind::*;
    let k = s.executor;
    let refuse = |flag: &str, why: &str| {
        Err(format!(
            "{flag} does not fit scenario `{name}`: its executor is {}; {why}",
            k.as_str()
        ))
    };
    if let Some(v) = vus {
        match k {
            ConstantVus | PerVuIterations | SharedIterations | ExternallyControlled => s.vus = Some(v),
            RampingVus => return refuse("--vus", "its stages set the VUs; give --stages (or --step-ramp), or edit the file"),
            ConstantArrivalRate | RampingArrivalRate => return refuse("--vus", "in the open model the arrival rate sets the load; give --rate (VUs are a pool: --max-vus), or --vus with --duration to run a closed test instead"),
        }
    }
    if let Some(r) = rate {
        match k {
            ConstantArrivalRate => s.rate = Some(r),
            RampingArrivalRate => return refuse("--rate", "its stages set the rates; edit the stages in the file, or give --rate with --duration to run a constant rate instead"),
            ConstantVus | RampingVus | PerVuIterations | SharedIterations | ExternallyControlled => return refuse("--rate", "a closed model has no arrival rate; give --vus, or --rate with --duration to run an open-model test instead"),
        }
    }
    if let Some(d) = duration {
        match k {
            ConstantVus | ConstantArrivalRate | ExternallyControlled => s.duration = Some(d),
            RampingVus if s.steps.is_some() => s.duration = Some(d),
            RampingVus | RampingArrivalRate => return refuse("--duration", "its stages set the length; give --stages, or edit the stages in the file"),
            PerVuIterations | SharedIterations => return refuse("--duration", "its iterations set the length; give --iterations (or edit `max_duration` in the file)"),
        }
    }
    Ok(())
}

/// Stretch or compress every scenario's timeline by `factor` (durations, stages,
/// step-ramp intervals, start times), keeping its shape: how `pado demo --duration`
/// fits the bundled stress test into the time a user (or CI) has.
pub fn scale_timeline(cfg: &mut Config, factor: f64) {
    let f = |d: &mut Dur| *d = Dur(d.get().mul_f64(factor.max(0.0)));
    for (_, s) in cfg.scenarios.iter_mut() {
        if let Some(d) = s.duration.as_mut() {
            f(d);
        }
        if let Some(d) = s.max_duration.as_mut() {
            f(d);
        }
        if let Some(d) = s.start_time.as_mut() {
            f(d);
        }
        if let Some(st) = s.stages.as_mut() {
            for x in st.iter_mut() {
                f(&mut x.duration);
            }
        }
        if let Some(r) = s.steps.as_mut() {
            f(&mut r.every);
        }
    }
    // Events sit on the load's timeline and move with it; what is expected of
    // the target (`within`, `hold`, `no_errors_after`) is the target's own time.
    for e in cfg.events.iter_mut() {
        if let Some(d) = e.at.as_mut() {
            f(d);
        }
        if let Some(d) = e.duration.as_mut() {
            f(d);
        }
    }
}

/// The planned length of a config's longest scenario (start time included), for
/// scaling; `None` for iteration-bounded scenarios without a time limit.
pub fn planned_length(cfg: &Config) -> Option<std::time::Duration> {
    cfg.scenarios
        .iter()
        .map(|(_, s)| {
            let start = s.start_time.map(|d| d.get()).unwrap_or_default();
            let own = if let Some(st) = &s.stages {
                st.iter().map(|x| x.duration.get()).sum()
            } else if let Some(r) = &s.steps {
                let levels = if r.add == 0 {
                    1
                } else {
                    (r.max - r.start).div_ceil(r.add) + 1
                };
                s.duration
                    .map(|d| d.get())
                    .unwrap_or(r.every.get() * levels)
            } else {
                s.duration
                    .or(s.max_duration)
                    .map(|d| d.get())
                    .unwrap_or_default()
            };
            start + own
        })
        .max()
}

/// Parse `30s:100,1m:100,30s:0` (duration:target pairs).
pub fn parse_stages(text: &str) -> Result<Vec<Stage>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (d, t) = part
            .split_once(':')
            .ok_or_else(|| format!("stage `{part}` is not DURATION:TARGET (e.g. `30s:100`)"))?;
        let duration = Dur(parse_duration(d)?);
        let target: f64 = t
            .trim()
            .parse()
            .map_err(|_| format!("stage `{part}`: target `{t}` is not a number"))?;
        if !(target.is_finite() && target >= 0.0) {
            return Err(format!("stage `{part}`: target must be 0 or more"));
        }
        out.push(Stage {
            duration,
            target,
            name: None,
        });
    }
    if out.is_empty() {
        return Err("no stages given; write e.g. `30s:100,1m:100,30s:0`".into());
    }
    Ok(out)
}

/// Parse `10:20:10s:130`: start at 10 VUs, add 20 every 10 s, up to 130.
pub fn parse_step_ramp(text: &str) -> Result<StepRamp, String> {
    let parts: Vec<&str> = text.split(':').map(str::trim).collect();
    let hint = "write START:ADD:EVERY:MAX, e.g. `10:20:10s:130` (start at 10 VUs, add 20 every 10 s up to 130)";
    if parts.len() != 4 {
        return Err(format!("`{text}`: {hint}"));
    }
    let num = |s: &str, what: &str| -> Result<u32, String> {
        s.parse::<u32>()
            .map_err(|_| format!("`{text}`: {what} `{s}` is not a whole number; {hint}"))
    };
    let r = StepRamp {
        start: num(parts[0], "START")?,
        add: num(parts[1], "ADD")?,
        every: Dur(parse_duration(parts[2]).map_err(|e| format!("`{text}`: EVERY: {e}"))?),
        max: num(parts[3], "MAX")?,
    };
    if r.every.get().is_zero() {
        return Err(format!("`{text}`: EVERY must be more than 0"));
    }
    if r.max < r.start {
        return Err(format!("`{text}`: MAX must be at least START"));
    }
    if r.add == 0 && r.max > r.start {
        return Err(format!("`{text}`: ADD must be at least 1"));
    }
    Ok(r)
}

/// Parse `Name: value` header flags.
pub fn parse_header(text: &str) -> Result<(String, String), String> {
    let (k, v) = text
        .split_once(':')
        .ok_or_else(|| format!("header `{text}` is not `Name: value`"))?;
    let k = k.trim();
    if k.is_empty() {
        return Err(format!("header `{text}` has no name"));
    }
    Ok((k.to_string(), v.trim().to_string()))
}

/// Thresholds of a config as (metric key, expression, abort) triples, in key order.
pub fn threshold_list(cfg: &Config) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    let m: &BTreeMap<String, Vec<ThresholdEntry>> = &cfg.thresholds;
    for (k, list) in m {
        for e in list {
            out.push((k.clone(), e.expr().to_string(), e.abort_on_fail()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_and_step_ramps_parse() {
        let s = parse_stages("30s:100, 1m:100,30s:0").unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[1].duration.secs(), 60.0);
        assert!(parse_stages("30s").is_err());
        assert!(parse_stages("30s:x").is_err());
        let r = parse_step_ramp("10:20:10s:130").unwrap();
        assert_eq!((r.start, r.add, r.max), (10, 20, 130));
        assert!(parse_step_ramp("10:20:10s").is_err());
        assert!(parse_step_ramp("100:20:10s:30").is_err());
    }

    #[test]
    fn quick_mode_builds_a_valid_config() {
        let cfg = quick_config(
            &QuickRequest {
                url: "http://127.0.0.1:8080/검색?q=1".into(),
                ..Default::default()
            },
            &Overrides {
                shape: Some(LoadShape::Rate {
                    rate: 200.0,
                    duration: Dur::from_secs(15),
                }),
                max_vus: Some(50),
                thresholds: vec![("http_req_duration".into(), "p(95) < 200".into())],
                ..Default::default()
            },
        );
        crate::validate(&cfg, "<command line>").unwrap();
        let s = &cfg.scenarios[0].1;
        assert_eq!(s.executor, ExecutorKind::ConstantArrivalRate);
        assert_eq!(s.max_vus, Some(50));
        assert_eq!(threshold_list(&cfg).len(), 1);
    }

    #[test]
    fn overrides_replace_the_load_model_but_keep_the_work() {
        let mut cfg = crate::parse_str(
            "target: http://h\nscenarios:\n  a:\n    executor: constant-arrival-rate\n    rate: 5\n    duration: 1m\n    setup_per_vu: [{request: /login}]\n    flow: [{request: /x}]\n",
            "t",
        )
        .unwrap();
        apply_overrides(
            &mut cfg,
            &Overrides {
                shape: Some(LoadShape::Vus {
                    vus: 3,
                    duration: Dur::from_secs(2),
                }),
                ..Default::default()
            },
        )
        .unwrap();
        crate::validate(&cfg, "t").unwrap();
        let s = &cfg.scenarios[0].1;
        assert_eq!(s.executor, ExecutorKind::ConstantVus);
        assert_eq!(s.rate, None);
        assert_eq!(s.flow.len(), 1);
        assert_eq!(s.setup_per_vu.len(), 1, "setup survives an override");
    }

    fn file_with(executor_body: &str) -> Config {
        crate::parse_str(
            &format!(
                "target: http://h\nscenarios:\n  a:\n{executor_body}    flow: [{{request: /x}}]\n"
            ),
            "t",
        )
        .unwrap()
    }

    fn adjust_only(vus: Option<u32>, duration: Option<u64>, rate: Option<f64>) -> Overrides {
        Overrides {
            shape: Some(LoadShape::Adjust {
                vus,
                duration: duration.map(Dur::from_secs),
                rate,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_lone_duration_keeps_the_files_open_model() {
        let mut cfg = file_with(
            "    executor: constant-arrival-rate\n    rate: 200\n    duration: 1m\n    max_vus: 50\n",
        );
        apply_overrides(&mut cfg, &adjust_only(None, Some(3), None)).unwrap();
        crate::validate(&cfg, "t").unwrap();
        let s = &cfg.scenarios[0].1;
        assert_eq!(s.executor, ExecutorKind::ConstantArrivalRate);
        assert_eq!(s.rate, Some(200.0));
        assert_eq!(s.vus, None);
        assert_eq!(s.max_vus, Some(50));
        assert_eq!(s.duration, Some(Dur::from_secs(3)));
    }

    #[test]
    fn lone_vus_and_rate_change_their_own_executor() {
        let mut cfg = file_with("    executor: constant-vus\n    vus: 4\n    duration: 1m\n");
        apply_overrides(&mut cfg, &adjust_only(Some(7), None, None)).unwrap();
        let s = &cfg.scenarios[0].1;
        assert_eq!(
            (s.executor, s.vus, s.duration),
            (ExecutorKind::ConstantVus, Some(7), Some(Dur::from_secs(60)))
        );
        let mut cfg =
            file_with("    executor: constant-arrival-rate\n    rate: 5\n    duration: 1m\n");
        apply_overrides(&mut cfg, &adjust_only(None, None, Some(20.0))).unwrap();
        let s = &cfg.scenarios[0].1;
        assert_eq!(
            (s.executor, s.rate),
            (ExecutorKind::ConstantArrivalRate, Some(20.0))
        );
        // Step ramps take a duration (it extends the last level).
        let mut cfg = file_with(
            "    executor: ramping-vus\n    steps: { start: 1, add: 1, every: 1s, max: 3 }\n",
        );
        apply_overrides(&mut cfg, &adjust_only(None, Some(9), None)).unwrap();
        assert_eq!(cfg.scenarios[0].1.duration, Some(Dur::from_secs(9)));
    }

    #[test]
    fn a_flag_the_executor_does_not_have_is_refused_naming_it() {
        let cases = [
            (
                "    executor: ramping-vus\n    stages: [{duration: 5s, target: 3}]\n",
                adjust_only(None, Some(3), None),
                "ramping-vus",
                "--stages",
            ),
            (
                "    executor: ramping-arrival-rate\n    stages: [{duration: 5s, target: 3}]\n",
                adjust_only(None, Some(3), None),
                "ramping-arrival-rate",
                "--stages",
            ),
            (
                "    executor: per-vu-iterations\n    vus: 1\n    iterations: 3\n",
                adjust_only(None, Some(3), None),
                "per-vu-iterations",
                "--iterations",
            ),
            (
                "    executor: constant-arrival-rate\n    rate: 5\n    duration: 1m\n",
                adjust_only(Some(3), None, None),
                "constant-arrival-rate",
                "--rate",
            ),
            (
                "    executor: constant-vus\n    vus: 4\n    duration: 1m\n",
                adjust_only(None, None, Some(3.0)),
                "constant-vus",
                "--vus",
            ),
            (
                "    executor: ramping-vus\n    stages: [{duration: 5s, target: 3}]\n",
                adjust_only(Some(3), None, None),
                "ramping-vus",
                "--stages",
            ),
        ];
        for (body, ov, executor, advice) in cases {
            let mut cfg = file_with(body);
            let before = cfg.clone();
            let e = apply_overrides(&mut cfg, &ov).expect_err(body);
            assert!(
                e.contains(executor) && e.contains("scenario `a`") && e.contains(advice),
                "{e}"
            );
            assert_eq!(
                cfg.scenarios, before.scenarios,
                "nothing changed on refusal"
            );
        }
    }

    #[test]
    fn scaling_keeps_the_shape() {
        let mut cfg = crate::parse_str(
            "target: http://h\nscenarios:\n  a:\n    executor: ramping-vus\n    stages: [{duration: 10s, target: 5}, {duration: 30s, target: 5}]\n    flow: [{request: /x}]\n",
            "t",
        )
        .unwrap();
        assert_eq!(
            planned_length(&cfg),
            Some(std::time::Duration::from_secs(40))
        );
        scale_timeline(&mut cfg, 0.5);
        assert_eq!(
            planned_length(&cfg),
            Some(std::time::Duration::from_secs(20))
        );
        let st = cfg.scenarios[0].1.stages.as_ref().unwrap();
        assert_eq!(st[0].duration.get(), std::time::Duration::from_secs(5));
    }

    #[test]
    fn a_relative_observe_path_joins_the_quick_mode_url() {
        let cfg = quick_config(
            &QuickRequest {
                url: "http://127.0.0.1:8080/api?q=1".into(),
                ..Default::default()
            },
            &Overrides {
                observe: vec!["/metrics".into(), "app=/actuator/prometheus".into()],
                ..Default::default()
            },
        );
        crate::validate(&cfg, "<command line>").unwrap();
        let o = cfg.observe.unwrap();
        assert_eq!(o.endpoints[0].url(), "http://127.0.0.1:8080/metrics");
        assert_eq!(
            o.endpoints[1].url(),
            "http://127.0.0.1:8080/actuator/prometheus"
        );
        assert_eq!(o.endpoints[1].name(), "app");
    }

    #[test]
    fn headers_parse() {
        assert_eq!(
            parse_header("Authorization: Bearer x:y").unwrap(),
            ("Authorization".into(), "Bearer x:y".into())
        );
        assert!(parse_header("nocolon").is_err());
    }
}
