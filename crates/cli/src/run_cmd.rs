//! `pado run`: flags and file into a validated configuration, the run itself, and the
//! result directory with its summary.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use pado_analysis::thresholds::{self, Threshold};
use pado_analysis::TotalsSource;
use pado_engine::{compile, RunOptions, ABORT, STOPPING};
use pado_metrics::{ClaimError, ResultDir, RunMeta, ScenarioMeta, ThresholdSpec, FORMAT_VERSION};
use pado_scenario::line_index::LineIndex;
use pado_scenario::quick::{parse_header, parse_stages, parse_step_ramp};
use pado_scenario::{
    apply_overrides, load_file_with_target, parse_duration, quick_config, validate, Config, Dur,
    LoadShape, Overrides, QuickRequest,
};

use crate::args::RunArgs;
use crate::exit::{self, Failure};
use crate::out::{out, outln};
use crate::progress::Progress;

/// A configuration ready to run, with where it came from.
pub struct Prepared {
    /// The configuration.
    pub config: Config,
    /// File name for messages (`<command line>` in quick mode).
    pub file: String,
    /// Directory relative paths resolve against.
    pub base_dir: PathBuf,
    /// Parsed thresholds.
    pub thresholds: Vec<Threshold>,
    /// Where each field of the file sits (empty in quick mode).
    pub lines: LineIndex,
}

impl Prepared {
    /// `file:line:column` of a field, as messages start.
    fn at(&self, field: &str) -> String {
        match self.lines.locate(field) {
            Some((l, c)) => format!("{}:{l}:{c}", self.file),
            None => self.file.clone(),
        }
    }

    /// Compile the configuration: an error names the line of its field (a feed that
    /// cannot be read, a column it lacks, an unset environment variable). Then every
    /// threshold's tag selector is checked against the steps, scenarios, checks and
    /// tags that exist, so `{step:serch}` is an error now and not a threshold that
    /// silently has no data.
    pub fn compile(&self) -> Result<pado_engine::RunPlan, Failure> {
        let plan = compile(&self.config, &self.base_dir).map_err(|e| {
            let mut m = format!("{}: {e}", self.at(&e.field()));
            if let Some(h) = e.hint() {
                m.push_str(&format!("\n  hint: {h}"));
            }
            Failure::invalid(m)
        })?;
        let problems = self.selector_problems(&plan);
        if problems.is_empty() {
            Ok(plan)
        } else {
            Err(Failure::invalid(problems.join("\n")))
        }
    }

    fn selector_problems(&self, plan: &pado_engine::RunPlan) -> Vec<String> {
        let steps: Vec<&str> = plan.series.iter().map(|k| k.name.as_str()).collect();
        let scenarios: Vec<&str> = self
            .config
            .scenarios
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        let checks: Vec<&str> = plan.checks.iter().map(String::as_str).collect();
        let mut user_tags: Vec<&str> = Vec::new();
        fn step_tags<'c>(steps: &'c [pado_scenario::Step], out: &mut Vec<&'c str>) {
            for st in steps {
                out.extend(st.tags.keys().map(String::as_str));
                if let Some(inner) = &st.steps {
                    step_tags(inner, out);
                }
            }
        }
        let c = &self.config;
        step_tags(&c.setup, &mut user_tags);
        step_tags(&c.teardown, &mut user_tags);
        for (_, s) in &c.scenarios {
            for f in [&s.flow, &s.setup_per_vu, &s.teardown_per_vu] {
                step_tags(f, &mut user_tags);
            }
            for m in &s.mix {
                user_tags.extend(m.tags.keys().map(String::as_str));
                if let Some(f) = &m.flow {
                    step_tags(f, &mut user_tags);
                }
            }
        }
        user_tags.sort_unstable();
        user_tags.dedup();
        let mut out = Vec::new();
        for t in &self.thresholds {
            let field = format!("thresholds.{}", t.metric_key());
            for (k, v) in &t.tags {
                let known: Option<&[&str]> = match k.as_str() {
                    "step" | "name" => Some(&steps),
                    "scenario" => Some(&scenarios),
                    "check" => Some(&checks),
                    _ if user_tags.contains(&k.as_str()) => None,
                    _ => {
                        let mut names = vec!["step", "name", "scenario", "check"];
                        names.extend(user_tags.iter().copied());
                        let guess =
                            pado_scenario::structure::did_you_mean(k, names.iter().copied())
                                .map(|g| format!("did you mean `{g}`? "))
                                .unwrap_or_default();
                        out.push(format!(
                            "{}: {field}: `{k}` is not a tag pado sets or a step of this file tags with\n  hint: {guess}selectors are `step`, `name`, `scenario`, `check`{}",
                            self.at(&field),
                            if user_tags.is_empty() {
                                String::new()
                            } else {
                                format!(" and your steps' tags: {}", user_tags.join(", "))
                            }
                        ));
                        continue;
                    }
                };
                if let Some(known) = known {
                    if !known.contains(&v.as_str()) {
                        let hint = match pado_scenario::structure::did_you_mean(
                            v,
                            known.iter().copied(),
                        ) {
                            Some(g) => format!("did you mean `{g}`?"),
                            None => format!("{k}s here: {}", known.join(", ")),
                        };
                        out.push(format!(
                            "{}: {field}: no {k} is named `{v}`: the threshold would have no data\n  hint: {hint}",
                            self.at(&field)
                        ));
                    }
                }
            }
        }
        out
    }
}

fn dur(flag: &str, v: &str) -> Result<Dur, Failure> {
    parse_duration(v)
        .map(Dur)
        .map_err(|e| Failure::invalid(format!("--{flag}: {e}")))
}

/// Stage two of argument handling: flags and file into a validated configuration.
pub fn prepare(a: &RunArgs) -> Result<Prepared, Failure> {
    if let Some(w) = a.workers.filter(|w| !(1..=MAX_WORKERS).contains(w)) {
        return Err(Failure::invalid(format!(
            "--workers {w}: give 1 to {MAX_WORKERS} (one per core is best; this machine allows {})",
            pado_engine::allowed_cores()
        )));
    }
    let mut ov = Overrides {
        insecure: a.insecure,
        no_follow_redirects: a.no_follow_redirects,
        name: a.name.clone(),
        max_vus: a.max_vus,
        target: a.target.clone(),
        ..Default::default()
    };
    if let Some(t) = &a.timeout {
        let d = dur("timeout", t)?;
        if d.get().is_zero() {
            return Err(Failure::invalid("--timeout: must be more than 0"));
        }
        ov.timeout = Some(d);
    }
    if let Some(t) = &a.think {
        ov.think = Some(dur("think", t)?);
    }
    if let Some(m) = &a.max_body {
        let n = pado_scenario::parse_size(m)
            .map_err(|e| Failure::invalid(format!("--max-body: {e}")))?;
        if n == 0 {
            return Err(Failure::invalid("--max-body: must be more than 0"));
        }
        ov.max_body = Some(pado_scenario::ByteSize(n));
    }
    ov.observe = a.observe.clone();
    if let Some(i) = &a.observe_interval {
        ov.observe_interval = Some(dur("observe-interval", i)?);
    }
    for h in &a.headers {
        ov.headers
            .push(parse_header(h).map_err(|e| Failure::invalid(format!("--header: {e}")))?);
    }
    let duration = a
        .duration
        .as_deref()
        .map(|d| dur("duration", d))
        .transpose()?;
    if let Some(r) = a.rate.filter(|r| !(r.is_finite() && *r > 0.0)) {
        return Err(Failure::invalid(format!("--rate {r}: must be more than 0")));
    }
    if a.vus == Some(0) {
        return Err(Failure::invalid("--vus: must be at least 1"));
    }
    // On a scenario file, one lone parameter adjusts the file's own load model; a
    // complete shape (--vus with --duration, --rate with --duration, --stages, ...)
    // replaces it. Quick mode has no model of its own: defaults fill the shape.
    let lone = [a.vus.is_some(), duration.is_some(), a.rate.is_some()]
        .iter()
        .filter(|x| **x)
        .count()
        == 1;
    if a.scenario.is_some()
        && lone
        && a.stages.is_none()
        && a.step_ramp.is_none()
        && a.iterations.is_none()
    {
        ov.shape = Some(LoadShape::Adjust {
            vus: a.vus,
            duration,
            rate: a.rate,
        });
    } else if let Some(r) = a.rate {
        ov.shape = Some(LoadShape::Rate {
            rate: r,
            duration: duration.unwrap_or(Dur::from_secs(10)),
        });
    } else if let Some(s) = &a.stages {
        if duration.is_some() {
            return Err(Failure::invalid(
                "--duration does not go with --stages: the stages set the length",
            ));
        }
        ov.shape = Some(LoadShape::Stages(
            parse_stages(s).map_err(|e| Failure::invalid(format!("--stages: {e}")))?,
        ));
    } else if let Some(s) = &a.step_ramp {
        ov.shape = Some(LoadShape::StepRamp(
            parse_step_ramp(s).map_err(|e| Failure::invalid(format!("--step-ramp: {e}")))?,
            duration,
        ));
    } else if let Some(n) = a.iterations {
        if n == 0 {
            return Err(Failure::invalid("--iterations: must be at least 1"));
        }
        ov.shape = Some(LoadShape::Iterations {
            vus: a.vus.unwrap_or(1),
            iterations: n,
        });
    } else if a.vus.is_some() || duration.is_some() {
        let vus = a.vus.unwrap_or(10);
        ov.shape = Some(LoadShape::Vus {
            vus,
            duration: duration.unwrap_or(Dur::from_secs(10)),
        });
    }
    let mut cli_thresholds = Vec::new();
    for t in &a.thresholds {
        let th = thresholds::parse_cli(t)
            .map_err(|e| Failure::invalid(format!("--threshold `{t}`: {e}")))?;
        ov.thresholds.push((th.metric_key(), th.source.clone()));
        cli_thresholds.push(th);
    }

    let (mut config, file, base_dir, lines) = match (&a.scenario, &a.url) {
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
            let loaded = load_file_with_target(path, a.target.as_deref()).map_err(|e| match e {
                pado_scenario::ScenarioError::Read { .. } => Failure {
                    code: exit::INVALID,
                    message: e.to_string(),
                },
                _ => Failure::invalid(e.to_string()),
            })?;
            (loaded.config, loaded.file, loaded.base_dir, Some(loaded.lines))
        }
        (None, Some(url)) => {
            let q = QuickRequest {
                url: url.clone(),
                method: a.method.clone(),
                body: a.body.clone(),
                body_file: a
                    .body_file
                    .as_ref()
                    .map(|p| p.display().to_string()),
            };
            (
                quick_config(&q, &ov),
                "<command line>".to_string(),
                PathBuf::from("."),
                None,
            )
        }
    };
    if let (Some(len), Some(want)) = (pado_scenario::planned_length(&config), a.fit_to) {
        if !len.is_zero() {
            pado_scenario::scale_timeline(&mut config, want.as_secs_f64() / len.as_secs_f64());
        }
    }
    if a.scenario.is_some() {
        if a.method.is_some() || a.body.is_some() || a.body_file.is_some() {
            return Err(Failure::invalid(
                "-X/--method, --body and --body-file are for quick mode (--url); a scenario file says these per request",
            ));
        }
        apply_overrides(&mut config, &ov).map_err(Failure::invalid)?;
    }
    validate(&config, &file).map_err(|e| Failure::invalid(e.to_string()))?;

    // Flag thresholds were added to the config by the overrides; parsing them above
    // only gave an early, flag-named error.
    drop(cli_thresholds);
    let lines = lines.unwrap_or_default();
    let parsed = pado_scenario::thresholds::from_config(&config, &file, &lines).map_err(|e| {
        Failure::invalid(
            e.diagnostics()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n"),
        )
    })?;
    Ok(Prepared {
        config,
        file,
        base_dir,
        thresholds: parsed,
        lines,
    })
}

fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches('-').to_string();
    if s.is_empty() {
        "run".into()
    } else {
        s.chars().take(60).collect()
    }
}

fn rfc3339(t: std::time::SystemTime) -> String {
    let dt = time::OffsetDateTime::from(t);
    dt.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// A new, empty `pado-results/<UTC time>-<name>` directory for commands that put
/// more than one run's files under one folder (`demo`, `find-capacity`); never one
/// that another run made.
pub fn new_out_dir(name: &str) -> Result<PathBuf, Failure> {
    Ok(
        ResultDir::create_unique(Path::new(RESULTS_PARENT), &out_stem(name))
            .map_err(Failure::other)?
            .path()
            .to_path_buf(),
    )
}

/// Most worker threads a run may ask for: far more than cores on any machine, few
/// enough that starting them cannot fail.
const MAX_WORKERS: usize = 1024;

/// Where default result directories go, relative to the working directory.
const RESULTS_PARENT: &str = "pado-results";

/// A default result directory's name: UTC time to the millisecond, then the test's
/// name (`20261123T020304.567Z-board`), so that a listing sorts by start time.
fn out_stem(name: &str) -> String {
    let dt = time::OffsetDateTime::now_utc();
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}.{:03}Z-{}",
        dt.year(),
        dt.month() as u8,
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second(),
        dt.millisecond(),
        sanitize(name)
    )
}

/// A directory the user named for a command that writes several runs under it:
/// refused when it holds files, unless `overwrite`.
pub fn user_out_dir(p: &Path, overwrite: bool) -> Result<PathBuf, Failure> {
    ResultDir::claim(p, overwrite).map_err(|e| match e {
        ClaimError::Io(_) => Failure::other(e),
        _ => Failure::invalid(e.to_string()),
    })?;
    Ok(p.to_path_buf())
}

/// The directory a run writes: the one given with `--out` (new, empty, or
/// `--overwrite`), or a new one under `pado-results/`. Locked for the run.
fn result_dir(a: &RunArgs, name: &str) -> Result<ResultDir, Failure> {
    let dir = match &a.out {
        Some(p) => ResultDir::claim(p, a.overwrite),
        None => ResultDir::create_unique(Path::new(RESULTS_PARENT), &out_stem(name)),
    };
    dir.map_err(|e| match e {
        ClaimError::Io(_) => Failure::other(e),
        _ => Failure::invalid(e.to_string()),
    })
}

/// `pado run`.
/// The run that Ctrl-C stops (one at a time; `find-capacity` runs several in turn).
static CURRENT_RUN: Mutex<Option<(Arc<AtomicU8>, bool)>> = Mutex::new(None);
/// Ctrl-C presses so far: the first stops gracefully, the second exits.
static PRESSES: AtomicU8 = AtomicU8::new(0);

/// Make Ctrl-C stop `stop`'s run (the handler is installed once per process).
pub fn watch_ctrl_c(stop: Arc<AtomicU8>, quiet: bool) {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    *CURRENT_RUN.lock().unwrap_or_else(|p| p.into_inner()) = Some((stop, quiet));
    INSTALL.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            let n = PRESSES.fetch_add(1, Ordering::SeqCst);
            let current = CURRENT_RUN
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            let Some((stop, quiet)) = current else {
                std::process::exit(exit::INTERRUPTED);
            };
            if n == 0 {
                if !quiet {
                    eprintln!(
                        "\nstopping: in-flight requests finish (Ctrl-C again to quit at once)"
                    );
                }
                stop.store(STOPPING, Ordering::SeqCst);
            } else {
                stop.store(ABORT, Ordering::SeqCst);
                std::process::exit(exit::INTERRUPTED);
            }
        });
    });
}

/// Whether Ctrl-C was pressed during this process (a search stops trying rates).
pub fn interrupted_by_user() -> bool {
    PRESSES.load(Ordering::SeqCst) > 0
}

/// A finished run: its summary and where its result directory is.
pub struct Executed {
    /// The summary (also in `summary.json`).
    pub summary: pado_report::Summary,
    /// The result directory.
    pub dir: PathBuf,
    /// Everything measured, summed (as `timeline.jsonl` holds it per second).
    pub totals: pado_metrics::Totals,
    /// A result file (summary.json, report.html, exports) that could not be written:
    /// the summary is still good to print, then this is the run's error (exit 1).
    pub write_error: Option<Failure>,
}

/// `pado run`: run, print the summary, exit code from the thresholds.
pub fn run(a: &RunArgs) -> Result<i32, Failure> {
    if a.once {
        return crate::debugging::run_once(a);
    }
    let done = execute(a)?;
    // The summary is the command's output; --quiet only silences progress.
    let color = crate::out::color();
    out!(
        "{}",
        pado_report::render(&done.summary, pado_report::TextOptions { color })
    );
    outln!("  results: {}", done.dir.display());
    if let Some(e) = done.write_error {
        return Err(e);
    }
    Ok(if done.summary.thresholds_ok {
        exit::OK
    } else {
        exit::THRESHOLD_FAILED
    })
}

/// Run and write the result directory, printing nothing but progress (for
/// `pado run` and for commands that run several tests, like `find-capacity`).
pub fn execute(a: &RunArgs) -> Result<Executed, Failure> {
    crate::parse_windows(&a.windows)?;
    let prep = prepare(a)?;
    let plan = prep.compile()?;
    let plan = Arc::new(plan);
    let mut warnings = plan.warnings.clone();
    for o in &plan.origins {
        if o.addrs.is_empty() {
            // A host from the environment is named by the template, not its value.
            let from_env = prep.config.target_template.as_ref().filter(|_| {
                prep.config
                    .target
                    .as_deref()
                    .and_then(|t| url::Url::parse(t).ok())
                    .and_then(|u| u.host_str().map(|h| h == o.host))
                    .unwrap_or(false)
            });
            let host = match from_env {
                Some(t) => format!("of target `{t}`"),
                None => format!("`{}`", o.host),
            };
            warnings.push(format!(
                "host {host} did not resolve: its requests will fail with `dns` errors"
            ));
        }
    }
    warnings.extend(plan.warnings());
    let lim = pado_engine::limits::raise_nofile(plan.max_vus());
    if let Some(w) = lim.warning() {
        warnings.push(w);
    }
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let debug = crate::debugging::DebugLevel::from_flag(a.http_debug.as_deref());
    if debug.is_some() {
        eprintln!("warning: --http-debug prints every request: the run is slowed and its figures are not a measurement");
    }
    let load_origins: Vec<String> = plan.origins.iter().map(|o| o.label.clone()).collect();
    let observe = crate::observing::observe_config(&prep.config, &prep.file, &load_origins)?;
    let dir = result_dir(a, &plan.name)?;
    let mut meta = RunMeta {
        format: "pado-result".into(),
        version: FORMAT_VERSION,
        name: plan.name.clone(),
        pado_version: env!("CARGO_PKG_VERSION").into(),
        started_at: rfc3339(std::time::SystemTime::now()),
        duration_s: 0.0,
        interrupted: false,
        workers: a.workers.unwrap_or_else(pado_engine::default_workers),
        cores_allowed: pado_engine::allowed_cores(),
        scenarios: plan
            .scenarios
            .iter()
            .map(|s| ScenarioMeta {
                name: s.name.clone(),
                executor: s.executor.kind().as_str().into(),
                description: s.executor.describe(),
                open_model: s.executor.kind().is_open_model(),
            })
            .collect(),
        stages: plan.stage_marks(),
        thresholds: prep
            .thresholds
            .iter()
            .map(|t| ThresholdSpec {
                metric: t.metric_key(),
                expr: t.source.clone(),
                abort_on_fail: t.abort_on_fail,
            })
            .collect(),
        notes: Vec::new(),
        warnings: warnings.clone(),
        max_body: Some(plan.max_body as u64),
    };
    dir.write_meta(&meta).map_err(Failure::other)?;
    let mut timeline = dir.timeline_writer().map_err(Failure::other)?;

    // Ctrl-C: first stops gracefully, second exits at once.
    let stop = Arc::new(AtomicU8::new(0));
    watch_ctrl_c(stop.clone(), a.quiet);

    let total_s = plan.planned_duration().as_secs_f64();
    let mut prog = Progress::new(a.quiet, total_s, meta.stages.clone());
    prog.has_thresholds = !prep.thresholds.is_empty();
    let progress = Arc::new(Mutex::new(prog));
    let abort_thresholds: Vec<Threshold> = prep
        .thresholds
        .iter()
        .filter(|t| t.abort_on_fail)
        .cloned()
        .collect();
    let all_thresholds = prep.thresholds.clone();
    let write_error: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let abort_reason: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let sink = {
        let progress = progress.clone();
        let stop = stop.clone();
        let write_error = write_error.clone();
        let abort_reason = abort_reason.clone();
        Box::new(
            move |r: &pado_metrics::SecondRecord, totals: &pado_metrics::Totals| {
                if let Err(e) = timeline.write(r) {
                    let mut w = write_error.lock().unwrap_or_else(|p| p.into_inner());
                    if w.is_none() {
                        *w = Some(e.to_string());
                    }
                }
                let secs = (r.t + 1) as f64;
                let src = TotalsSource::new(totals, secs);
                let failing = thresholds::evaluate(&all_thresholds, &src)
                    .iter()
                    .filter(|x| !x.ok)
                    .count();
                if !abort_thresholds.is_empty() {
                    for (t, res) in abort_thresholds
                        .iter()
                        .zip(thresholds::evaluate(&abort_thresholds, &src))
                    {
                        if !res.ok && res.value.is_some() {
                            let mut ar = abort_reason.lock().unwrap_or_else(|p| p.into_inner());
                            if ar.is_none() {
                                *ar = Some(format!(
                                    "threshold `{}: {}` failed at {}s (abort_on_fail): stopping",
                                    t.metric_key(),
                                    t.source,
                                    r.t + 1
                                ));
                                stop.store(STOPPING, Ordering::SeqCst);
                            }
                        }
                    }
                }
                progress
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .second(r, totals, failing);
            },
        )
    };
    // The scrape loop starts on the load's clock (second 0) and ends after the
    // load with one last scrape.
    let scraper: Arc<Mutex<Option<pado_observe::Scraper>>> = Arc::new(Mutex::new(None));
    let observe_error: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let on_start: Option<Box<dyn FnOnce(std::time::Instant) + Send>> = match observe {
        None => None,
        Some(cfg) => {
            let writer = pado_metrics::ObserveWriter::create(dir.path()).map_err(Failure::other)?;
            let slot = scraper.clone();
            let err = observe_error.clone();
            Some(Box::new(move |t0| {
                match pado_observe::Scraper::start(cfg, t0, writer) {
                    Ok(s) => *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(s),
                    Err(e) => {
                        *err.lock().unwrap_or_else(|p| p.into_inner()) =
                            Some(format!("could not start scraping: {e}"))
                    }
                }
            }))
        }
    };
    let report = pado_engine::run(
        plan.clone(),
        RunOptions {
            workers: meta.workers,
            stop: stop.clone(),
            on_start,
            observer: debug.map(|l| {
                Arc::new(crate::debugging::HttpDebug::new(l))
                    as Arc<dyn pado_engine::trace::Observer>
            }),
        },
        sink,
    );
    let scraped = scraper
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .map(|s| s.finish());
    if let Some(e) = observe_error
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .or_else(|| scraped.and_then(|t| t.write_error))
    {
        eprintln!("warning: observe: {e}");
        meta.warnings.push(format!("observe: {e}"));
    }
    progress.lock().unwrap_or_else(|p| p.into_inner()).finish();

    meta.started_at = rfc3339(report.started_at);
    meta.duration_s = report.elapsed.as_secs_f64().max(0.001);
    meta.interrupted = report.interrupted;
    if let Some(r) = abort_reason
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    {
        eprintln!("{r}");
        meta.warnings.push(r);
        meta.interrupted = true;
    }
    if let Some(e) = write_error.lock().unwrap_or_else(|p| p.into_inner()).take() {
        meta.warnings
            .push(format!("writing the timeline failed: {e}"));
    }
    dir.write_meta(&meta).map_err(Failure::other)?;
    if !report.totals.failures.is_empty() {
        dir.write_failures(&report.totals.failures)
            .map_err(Failure::other)?;
    }
    let (summary, write_error) = crate::write_reports(&dir, !a.no_html, &a.exports, &a.windows)?;
    Ok(Executed {
        summary,
        write_error,
        dir: dir.path().to_path_buf(),
        totals: report.totals,
    })
}
