//! Stage two of argument handling: the raw flags of [`crate::args`] (stage one) plus
//! the scenario file into a typed, validated [`RunConfig`], as ripgrep turns its
//! low-level arguments into high-level ones.
//!
//! Every command that runs or checks a scenario (`run`, `run --once`, `validate`,
//! `find-capacity`, `demo`) builds its configuration here, from a [`LoadSpec`], so
//! that a flag means the same in each: `find-capacity -H ... -X POST --body ...`
//! sends what `run` would. Durations are [`Duration`]s and sizes numbers by the time
//! they leave this module; every bad value is a [`Failure`] naming its flag, never a
//! panic.

use std::path::PathBuf;
use std::time::Duration;

use pado_base::units::parse_duration;
use pado_scenario::quick::parse_header;
use pado_scenario::{ByteSize, Dur, LoadShape, Overrides, QuickRequest};

pub(crate) use pado_session::prepare::{LoadSpec, Prepared, Source};
use pado_session::Output;

use crate::args::{LoadArgs, RunArgs};
use crate::debugging::DebugLevel;
use crate::exit::Failure;

/// A run, ready to start: the loaded and validated scenario and how to run it.
pub(crate) struct RunConfig {
    /// The scenario with its thresholds and where its fields sit in the file.
    pub scenario: Prepared,
    /// Where results go.
    pub output: Output,
    /// Worker threads (`None`: the cores available).
    pub workers: Option<usize>,
    /// Print every exchange (`--http-debug`).
    pub http_debug: Option<DebugLevel>,
    /// Run each flow once instead of loading the target (`--once`).
    pub once: bool,
    /// Judge the soak verdict into the exit code (`--soak`).
    pub soak: bool,
    /// Segment, agreed start and setup variables of a split test.
    pub split: crate::split::Split,
    /// Where the setup variables came from (`--setup-vars`), for messages.
    pub setup_vars_file: Option<PathBuf>,
    /// Live outputs: the file's `outputs:` and `--output` flags.
    pub outputs: Vec<pado_outputs::OutputSpec>,
    /// The raw per-request file (`--output raw-json=FILE`, `raw-csv=FILE`), if asked.
    pub raw: Option<pado_outputs::raw::RawSpec>,
    /// The live page (`--dashboard`), if asked.
    pub dashboard: Option<crate::dashboard_cmd::DashboardSpec>,
    /// k6's summary options for a script's `handleSummary` (flags over the
    /// script's options over k6's defaults), checked at start.
    pub k6_summary: pado_report::k6_summary::K6SummaryOptions,
}

impl RunConfig {
    /// `pado run`'s flags into a configuration: every flag checked, the file read
    /// once.
    pub(crate) fn from_run_args(a: &RunArgs) -> Result<RunConfig, Failure> {
        let windows = crate::parse_windows(&a.windows)?;
        if let Some(w) = a.workers {
            pado_session::check_workers(w)?;
        }
        let spec = LoadSpec::from_run_args(a)?;
        let mut split = crate::split::Split {
            segment: pado_session::split::run_segment(
                a.segment.as_deref(),
                a.segment_weights.as_deref(),
                !a.generators.is_empty(),
            )?,
            start_at: a
                .start_at
                .as_deref()
                .map(|v| crate::split::start_at(v, std::time::SystemTime::now()))
                .transpose()?,
            setup_vars: a
                .setup_vars
                .as_deref()
                .map(pado_session::split::read_setup_vars)
                .transpose()?,
            plan_id: None,
            control_socket: a.control_socket.clone(),
        };
        let scenario = spec.load()?;
        let k6_summary = crate::script_summary::options(&scenario, a)?;
        if a.refuse_commands {
            pado_fleet::launch::refuse_commands(&scenario.config, &scenario.file)
                .map_err(Failure::invalid)?;
        }
        if let Some(seg) = &split.segment {
            if let Some(e) =
                pado_session::split::setup_vars_missing(seg, &scenario, split.setup_vars.is_some())
            {
                return Err(e.into());
            }
            split.plan_id = Some(pado_session::split::plan_id(&spec, &scenario)?);
        }
        let (raw, live) = pado_session::output_flags::raw_spec(&a.outputs)?;
        // A coordinator (`--generators`) writes to no output: the generators do.
        let outputs = pado_session::output_flags::specs(&scenario, &live, a.generators.is_empty())?;
        let dashboard = crate::dashboard_cmd::DashboardSpec::from_args(
            &a.dashboard,
            a.history.history.as_deref(),
        )?;
        Ok(RunConfig {
            dashboard,
            outputs,
            raw,
            split,
            setup_vars_file: a.setup_vars.clone(),
            scenario,
            output: Output {
                dir: a.out.clone(),
                overwrite: a.overwrite,
                html: !a.no_html,
                exports: a.exports.clone(),
                windows,
                quiet: a.quiet,
            },
            workers: a.workers,
            http_debug: DebugLevel::from_flag(a.http_debug.as_deref()),
            once: a.once,
            soak: a.soak,
            k6_summary,
        })
    }

    /// A configuration for a command that sets its own output (`find-capacity`'s
    /// steps, `demo`, `validate`): default workers, no debugging output.
    pub(crate) fn new(scenario: Prepared, output: Output) -> RunConfig {
        RunConfig {
            outputs: Vec::new(),
            raw: None,
            dashboard: None,
            scenario,
            output,
            workers: None,
            http_debug: None,
            once: false,
            soak: false,
            split: crate::split::Split::default(),
            setup_vars_file: None,
            k6_summary: Default::default(),
        }
    }
}

/// A duration flag.
fn dur(flag: &str, v: &str) -> Result<Duration, Failure> {
    parse_duration(v).map_err(|e| Failure::invalid(format!("--{flag}: {e}")))
}

/// A duration flag that must be more than 0.
fn positive_dur(flag: &str, v: &str) -> Result<Duration, Failure> {
    let d = dur(flag, v)?;
    if d.is_zero() {
        return Err(Failure::invalid(format!("--{flag}: must be more than 0")));
    }
    Ok(d)
}

/// What to load (`pado_session`'s [`LoadSpec`]) from the flags: each bad value an
/// error naming its flag.
pub(crate) trait LoadFlags: Sized {
    /// The flags every loading command shares ([`LoadArgs`]): the source and how
    /// requests are sent. No load shape yet.
    fn from_load_args(l: &LoadArgs) -> Result<Self, Failure>;
    /// `pado run`'s flags: [`LoadFlags::from_load_args`] plus the load shape, think
    /// time, thresholds, name and `--fit-to`.
    fn from_run_args(a: &RunArgs) -> Result<Self, Failure>;
}

impl LoadFlags for LoadSpec {
    fn from_load_args(l: &LoadArgs) -> Result<LoadSpec, Failure> {
        let mut ov = Overrides {
            insecure: l.insecure,
            no_follow_redirects: l.no_follow_redirects,
            max_vus: l.max_vus,
            target: l.target.clone(),
            observe: l.observe.clone(),
            ..Default::default()
        };
        if let Some(t) = &l.timeout {
            ov.timeout = Some(Dur(positive_dur("timeout", t)?));
        }
        for e in &l.env {
            let Some((k, v)) = e.split_once('=').filter(|(k, _)| !k.is_empty()) else {
                return Err(Failure::invalid(format!("--env: `{e}` is not NAME=VALUE")));
            };
            ov.env.push((k.to_string(), v.to_string()));
        }
        for t in &l.tags {
            let Some((k, v)) = t.split_once('=').filter(|(k, _)| !k.trim().is_empty()) else {
                return Err(Failure::invalid(format!("--tag: `{t}` is not NAME=VALUE")));
            };
            ov.tags.push((k.trim().to_string(), v.to_string()));
        }
        ov.ca_cert = l.ca_cert.as_deref().map(absolute).transpose()?;
        if let (Some(cert), Some(key)) = (&l.client_cert, &l.client_key) {
            ov.client_identity = Some((absolute(cert)?, absolute(key)?));
        }
        if l.http2 {
            ov.http = Some(pado_scenario::HttpVersion::Http2);
        }
        if let Some(h) = &l.http {
            ov.http = Some(pado_scenario::HttpVersion::parse(h).ok_or_else(|| {
                Failure::invalid(format!(
                    "--http: `{h}` is not an HTTP version: use 1.1, 2 or auto"
                ))
            })?);
        }
        if let Some(m) = l.max_streams {
            if m == 0 {
                return Err(Failure::invalid("--max-streams: must be at least 1"));
            }
            ov.max_streams = Some(m);
        }
        ov.connections = l.connections.as_deref().map(|c| match c {
            "per-iteration" => pado_scenario::ConnectionReuse::PerIteration,
            "per-request" => pado_scenario::ConnectionReuse::PerRequest,
            _ => pado_scenario::ConnectionReuse::PerVu,
        });
        if l.no_proxy {
            ov.proxy = Some("none".into());
        } else if let Some(p) = &l.proxy {
            if p.trim().is_empty() || p == "none" {
                return Err(Failure::invalid(
                    "--proxy: give a proxy URL (use --no-proxy to connect directly)",
                ));
            }
            ov.proxy = Some(p.clone());
        }
        if let Some(c) = &l.compression {
            let mut list = Vec::new();
            for name in c.split(',').filter(|n| !n.trim().is_empty()) {
                let coding = pado_scenario::Compression::parse(name).ok_or_else(|| {
                    Failure::invalid(format!(
                        "--compression: `{}` is not a coding pado decodes: use gzip, br, zstd or deflate",
                        name.trim()
                    ))
                })?;
                if !list.contains(&coding) {
                    list.push(coding);
                }
            }
            ov.compression = Some(list);
        }
        if let Some(m) = &l.max_body {
            let n = pado_base::units::parse_size(m)
                .map_err(|e| Failure::invalid(format!("--max-body: {e}")))?;
            if n == 0 {
                return Err(Failure::invalid("--max-body: must be more than 0"));
            }
            ov.max_body = Some(ByteSize(n));
        }
        if let Some(i) = &l.observe_interval {
            ov.observe_interval = Some(Dur(dur("observe-interval", i)?));
        }
        for h in &l.headers {
            ov.headers
                .push(parse_header(h).map_err(|e| Failure::invalid(format!("--header: {e}")))?);
        }
        let source = match (&l.scenario, &l.url) {
            (Some(_), Some(_)) => {
                return Err(Failure::invalid(
                    "give a scenario file or --url, not both (put the URL in the file's `target`)",
                ))
            }
            (None, None) => {
                return Err(Failure::invalid(
                    "nothing to run: give a scenario file (`pado run test.yaml`) or a URL (`pado run --url http://127.0.0.1:8080/ --vus 10 --duration 10s`)",
                ))
            }
            (Some(path), None) => {
                if l.method.is_some() || l.body.is_some() || l.body_file.is_some() {
                    return Err(Failure::invalid(
                        "-X/--method, --body and --body-file are for quick mode (--url); a scenario file says these per request",
                    ));
                }
                Source::File(path.clone())
            }
            (None, Some(url)) => Source::Url(QuickRequest {
                url: url.clone(),
                method: l.method.clone(),
                body: l.body.clone(),
                body_file: l.body_file.as_ref().map(|p| p.display().to_string()),
            }),
        };
        Ok(LoadSpec {
            source,
            overrides: ov,
            fit_to: None,
        })
    }

    fn from_run_args(a: &RunArgs) -> Result<LoadSpec, Failure> {
        let mut spec = LoadSpec::from_load_args(&a.load)?;
        let is_file = matches!(spec.source, Source::File(_));
        let ov = &mut spec.overrides;
        ov.name = a.name.clone();
        if let Some(t) = &a.think {
            ov.think = Some(Dur(dur("think", t)?));
        }
        ov.shape = shape(a, is_file)?;
        for t in &a.thresholds {
            // Parsed now for an early error naming the flag; the loaded scenario's
            // thresholds (the file's and these) are parsed again with it.
            let th = pado_scenario::thresholds::parse_cli(t)
                .map_err(|e| Failure::invalid(format!("--threshold `{t}`: {e}")))?;
            ov.thresholds.push((th.metric_key(), th.source));
        }
        spec.fit_to = a
            .fit_to
            .as_deref()
            .map(|v| positive_dur("fit-to", v))
            .transpose()?;
        Ok(spec)
    }
}

/// The load shape the flags give, if any (the rules are
/// [`pado_session::shape::load_shape`]'s).
fn shape(a: &RunArgs, is_file: bool) -> Result<Option<LoadShape>, Failure> {
    let duration = a
        .duration
        .as_deref()
        .map(|d| dur("duration", d).map(Dur))
        .transpose()?;
    // k6's `--stage`/`-s`, one per flag, is `--stages` joined.
    let joined = (!a.stage.is_empty()).then(|| a.stage.join(","));
    let flags = pado_session::shape::ShapeFlags {
        vus: a.vus,
        duration,
        rate: a.rate,
        stages: a.stages.as_deref().or(joined.as_deref()),
        step_ramp: a.step_ramp.as_deref(),
        iterations: a.iterations,
    };
    Ok(pado_session::shape::load_shape(&flags, is_file)?)
}

/// `pado find-capacity`'s flags, typed and checked before the first step runs.
pub(crate) struct CapacityConfig {
    /// What each step loads; every step sets its own rate and length on it.
    pub load: LoadSpec,
    /// The rates to try.
    pub plan: pado_analysis::capacity::SearchPlan,
    /// How long each step holds its rate.
    pub hold: Duration,
    /// The SLA every step is judged against.
    pub sla: Vec<pado_analysis::thresholds::Threshold>,
}

impl CapacityConfig {
    /// From the flags: the shared loading flags as `pado run` reads them, the SLA
    /// (the default one without `--sla`), the rates and the hold.
    pub(crate) fn from_args(f: &crate::args::FindCapacityArgs) -> Result<CapacityConfig, Failure> {
        use pado_analysis::capacity::{PlanError, SearchPlan, DEFAULT_SLA, MIN_HOLD};
        let exprs: Vec<&str> = if f.sla.is_empty() {
            DEFAULT_SLA.to_vec()
        } else {
            f.sla.iter().map(String::as_str).collect()
        };
        let mut sla = Vec::new();
        for e in exprs {
            sla.push(
                pado_scenario::thresholds::parse_cli(e)
                    .map_err(|err| Failure::invalid(format!("--sla `{e}`: {err}")))?,
            );
        }
        let plan = SearchPlan::new(f.start_rate, f.factor, f.max_rate, f.refine).map_err(|e| {
            let flag = match e {
                PlanError::Rate("start") => "--start-rate",
                PlanError::Rate(_) => "--max-rate",
                PlanError::Factor => "--factor",
                PlanError::StartAboveMax { .. } => "--start-rate/--max-rate",
            };
            Failure::invalid(format!("{flag}: {e}"))
        })?;
        let hold = dur("hold", &f.hold)?;
        if hold < MIN_HOLD {
            return Err(Failure::invalid(format!(
                "--hold: at least {}s",
                MIN_HOLD.as_secs()
            )));
        }
        Ok(CapacityConfig {
            load: LoadSpec::from_load_args(&f.load)?,
            plan,
            hold,
            sla,
        })
    }
}

#[cfg(test)]
mod tests;

/// A file flag as an absolute path (flags are relative to where pado runs; paths in
/// the scenario file, which the flags replace, are relative to the file).
fn absolute(p: &std::path::Path) -> Result<String, Failure> {
    std::path::absolute(p)
        .map(|a| a.display().to_string())
        .map_err(|e| Failure::invalid(format!("{}: {e}", p.display())))
}
