//! `pado run`: the run itself from a [`RunConfig`] (stage two's output, see
//! [`crate::config`]), Ctrl-C handling, and the result directory with its summary.

use pado_scenario::start_at::utc_ms;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use pado_engine::{RunOptions, ABORT, STOPPING};
use pado_metrics::{ClaimError, ResultDir, RunMeta, ScenarioMeta, ThresholdSpec, FORMAT_VERSION};

use crate::config::{Output, RunConfig};
use crate::exit::{self, Failure};
use crate::out::{out, outln};
use crate::progress::Progress;

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

/// A new, empty `pado-results/<UTC time>-<name>` directory for commands that put
/// more than one run's files under one folder (`demo`, `find-capacity`); never one
/// that another run made.
pub(crate) fn new_out_dir(name: &str) -> Result<PathBuf, Failure> {
    Ok(
        ResultDir::create_unique(Path::new(RESULTS_PARENT), &out_stem(name))
            .map_err(Failure::other)?
            .path()
            .to_path_buf(),
    )
}

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
pub(crate) fn user_out_dir(p: &Path, overwrite: bool) -> Result<PathBuf, Failure> {
    ResultDir::claim(p, overwrite).map_err(|e| match e {
        ClaimError::Io(_) => Failure::other(e),
        _ => Failure::invalid(e.to_string()),
    })?;
    Ok(p.to_path_buf())
}

/// The directory a run writes: the one given with `--out` (new, empty, or
/// `--overwrite`), or a new one under `pado-results/`. Locked for the run.
fn result_dir(o: &Output, name: &str) -> Result<ResultDir, Failure> {
    let dir = match &o.dir {
        Some(p) => ResultDir::claim(p, o.overwrite),
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
/// Make Ctrl-C (or SIGTERM, SIGHUP) stop `stop`'s run (the handler is installed once
/// per process): the first request stops gracefully, a second distinct one (see
/// [`crate::signals`]: the same signal delivered twice is one) exits at once.
pub(crate) fn watch_ctrl_c(stop: Arc<AtomicU8>, quiet: bool) {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    *CURRENT_RUN.lock().unwrap_or_else(|p| p.into_inner()) = Some((stop, quiet));
    INSTALL.call_once(|| {
        let _ = crate::signals::install(|n| {
            let current = CURRENT_RUN
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            let Some((stop, quiet)) = current else {
                std::process::exit(exit::INTERRUPTED);
            };
            if n == 1 {
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
pub(crate) fn interrupted_by_user() -> bool {
    crate::signals::requests() > 0
}

/// A finished run: its summary and where its result directory is.
pub(crate) struct Executed {
    /// The summary (also in `summary.json`).
    pub summary: pado_report::Summary,
    /// The result directory.
    pub dir: PathBuf,
    /// Everything measured, summed (as `timeline.jsonl` holds it per second).
    pub totals: pado_metrics::Totals,
    /// The plan's steps, which thresholds' `scenario`, `method` and `group` tags
    /// select in `totals`.
    pub steps: pado_metrics::StepCatalog,
    /// A result file (summary.json, report.html, exports) that could not be written:
    /// the summary is still good to print, then this is the run's error (exit 1).
    pub write_error: Option<Failure>,
}

/// `pado run`: run, print the summary, exit code from the thresholds.
pub(crate) fn run(cfg: &RunConfig, history: &crate::history_cmd::Recorder) -> Result<i32, Failure> {
    if cfg.once {
        return crate::debugging::run_once(cfg);
    }
    let done = execute(cfg)?;
    // The summary is the command's output; --quiet only silences progress.
    let color = crate::out::color();
    out!(
        "{}",
        pado_report::render(&done.summary, pado_report::TextOptions { color })
    );
    if let Some(seg) = &cfg.split.segment {
        if !done.summary.thresholds.is_empty() {
            outln!(
                "  thresholds are judged on the merged result (`pado merge`): {} of the test is not the test, so its exit code ignores them",
                seg.label()
            );
        }
    }
    for l in crate::live_outputs::lines(&done.summary.outputs) {
        outln!("{l}");
    }
    if let Some(r) = &done.summary.raw_output {
        outln!("{}", crate::live_outputs::raw_line(r));
    }
    outln!("  results: {}", done.dir.display());
    // A segment's share is not the test: its merge is recorded.
    if cfg.split.segment.is_none() {
        if let Some(id) = history.record(&done.dir, pado_history::Kind::Run) {
            outln!("  history: run {id} (`pado history`; `pado compare last~1 last` compares it with the one before)");
        }
    }
    if let Some(e) = done.write_error {
        return Err(e);
    }
    if cfg.split.segment.is_some() {
        return Ok(exit::OK);
    }
    Ok(if done.summary.passed() {
        exit::OK
    } else {
        exit::THRESHOLD_FAILED
    })
}

/// Run and write the result directory, printing nothing but progress (for
/// `pado run` and for commands that run several tests, like `find-capacity`).
pub(crate) fn execute(cfg: &RunConfig) -> Result<Executed, Failure> {
    let prep = &cfg.scenario;
    let out = &cfg.output;
    let mut plan = prep.compile()?;
    let split = &cfg.split;
    let mut warnings = Vec::new();
    if let Some(seg) = &split.segment {
        for name in plan.apply_segment(seg) {
            warnings.push(format!(
                "scenario `{name}` has fewer VUs or arrivals than segments: {} gets none of them and sends nothing for it",
                seg.label()
            ));
        }
    }
    let setup_vars = split
        .setup_vars
        .as_deref()
        .map(|v| crate::split::seed_vars(cfg.setup_vars_file.as_ref(), v, &plan))
        .transpose()?;
    let plan = Arc::new(plan);
    warnings.extend(prep.notes.iter().cloned());
    warnings.extend(plan.warnings.clone());
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
    let debug = cfg.http_debug;
    if debug.is_some() {
        eprintln!("warning: --http-debug prints every request: the run is slowed and its figures are not a measurement");
    }
    let load_origins: Vec<String> = plan.origins.iter().map(|o| o.label.clone()).collect();
    let observe = crate::observing::observe_config(&prep.config, &prep.file, &load_origins)?;
    // Ctrl-C: first stops gracefully, second exits at once. While waiting for an
    // agreed start it ends the wait: nothing sent, no result directory.
    let stop = Arc::new(AtomicU8::new(0));
    // (Quiet while waiting: the handler's "in-flight requests finish" would be
    // wrong before anything was sent; the wait says what happened instead.)
    watch_ctrl_c(stop.clone(), out.quiet || split.start_at.is_some());
    let start_at = split
        .start_at
        .map(|at| crate::split::wait_for_start(at, &stop, out.quiet))
        .transpose()?;
    watch_ctrl_c(stop.clone(), out.quiet);
    let dir = result_dir(out, &plan.name)?;
    let total_s = plan.planned_duration().as_secs_f64();
    let mut meta = RunMeta {
        format: "pado-result".into(),
        version: FORMAT_VERSION,
        name: plan.name.clone(),
        pado_version: env!("CARGO_PKG_VERSION").into(),
        started_at: utc_ms(std::time::SystemTime::now()),
        duration_s: 0.0,
        interrupted: false,
        workers: cfg.workers.unwrap_or_else(pado_engine::default_workers),
        cores_allowed: pado_engine::allowed_cores(),
        scenarios: plan
            .scenarios
            .iter()
            .map(|s| ScenarioMeta {
                name: s.name.clone(),
                executor: s.executor.kind().as_str().into(),
                description: s.executor.describe(),
                open_model: s.executor.kind().is_open_model(),
                max_vus: s
                    .executor
                    .kind()
                    .is_open_model()
                    .then(|| s.executor.max_vus()),
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
                window_s: t
                    .scope
                    .as_ref()
                    .and_then(|s| s.window_s)
                    .map(|(a, b)| [a, b]),
            })
            .collect(),
        notes: split
            .segment
            .iter()
            .map(|s| {
                format!(
                    "{} of the test (plan {})",
                    s.label(),
                    split.plan_id.as_deref().unwrap_or("")
                )
            })
            .collect(),
        warnings: warnings.clone(),
        max_body: Some(plan.max_body as u64),
        segment: split
            .segment
            .as_ref()
            .map(|s| pado_metrics::result_dir::SegmentMeta {
                index: s.index(),
                count: s.count(),
                weights: s.weights().to_vec(),
                plan_id: split.plan_id.clone().unwrap_or_default(),
                start_at: split.start_at.map(utc_ms),
                start_skew_ms: None,
                ran_setup: false,
            }),
        merged_from: Vec::new(),
        outputs: Vec::new(),
        raw_output: None,
        soak: pado_metrics::SoakMode::of(cfg.soak, total_s),
        planned_s: Some(total_s),
        steps: plan.steps.clone(),
    };
    dir.write_meta(&meta).map_err(Failure::other)?;
    let mut timeline = dir.timeline_writer().map_err(Failure::other)?;

    let mut prog = Progress::new(out.quiet, total_s, meta.stages.clone());
    if let pado_report::summary::VuPool::Max(n) =
        pado_report::summary::VuPool::of(&meta.scenarios, 0)
    {
        prog.vu_ceiling = Some(n);
    }
    prog.has_thresholds = !prep.thresholds.is_empty();
    let progress = Arc::new(Mutex::new(prog));
    // A segment's share is not the test: its abort_on_fail thresholds are judged
    // by the coordinator on the merged seconds (`pado run --generators`, `pado k8s
    // run`), never on the share alone.
    let judge = if split.segment.is_some() {
        crate::live_view::LiveJudge::without_abort(&prep.thresholds, &plan.steps)
    } else {
        crate::live_view::LiveJudge::new(&prep.thresholds, &plan.steps)
    };
    // Live outputs: each closed second is handed over without waiting.
    let outputs = Arc::new(if cfg.outputs.is_empty() {
        None
    } else {
        let labels = crate::live_outputs::labels(
            &plan,
            dir.path(),
            split
                .segment
                .as_ref()
                .map(|s| format!("{}/{}", s.index(), s.count())),
        );
        Some(
            pado_outputs::Outputs::start(&cfg.outputs, &labels)
                .map_err(|e| Failure::invalid(format!("output {e}")))?,
        )
    });
    // Raw per-request lines: a writer thread fed by the workers, never waited for.
    let (raw_writer, raw_link) = match &cfg.raw {
        None => (None, None),
        Some(spec) => {
            let steps = plan.series.iter().map(|k| k.name.clone()).collect();
            let secrets = plan.secrets.clone();
            let (w, link) = pado_outputs::raw::RawWriter::start(
                spec,
                steps,
                Box::new(move |url: &[u8]| secrets.text(url)),
            )
            .map_err(|e| Failure::invalid(format!("output {e}")))?;
            (Some(w), Some(link))
        }
    };
    let write_error: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let abort_reason: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let sink = {
        let progress = progress.clone();
        let stop = stop.clone();
        let write_error = write_error.clone();
        let abort_reason = abort_reason.clone();
        let outputs = outputs.clone();
        Box::new(
            move |r: &pado_metrics::SecondRecord, totals: &pado_metrics::Totals| {
                if let Some(o) = outputs.as_ref() {
                    o.send(r);
                }
                if let Err(e) = timeline.write(r) {
                    let mut w = write_error.lock().unwrap_or_else(|p| p.into_inner());
                    if w.is_none() {
                        *w = Some(e.to_string());
                    }
                }
                let (failing, stop_now) = judge.judge(r.t, totals);
                if let Some(why) = stop_now {
                    let mut ar = abort_reason.lock().unwrap_or_else(|p| p.into_inner());
                    if ar.is_none() {
                        *ar = Some(format!("{why}: stopping"));
                        stop.store(STOPPING, Ordering::SeqCst);
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
    // Events (`events:`) run on the same clock, each on a thread of its own; a
    // split test runs them in segment 0 only.
    let events = match &split.segment {
        Some(seg) if seg.index() > 0 => pado_engine::events::EventPlan::default(),
        _ => pado_engine::events::compile_events(&prep.config, &meta.stages)
            .map_err(|e| Failure::invalid(format!("{}: {e}", prep.file)))?,
    };
    let event_runner: Arc<Mutex<Option<pado_engine::events::EventRunner>>> =
        Arc::new(Mutex::new(None));
    let start_events: Option<Box<dyn FnOnce(std::time::Instant) + Send>> = if events.is_empty() {
        None
    } else {
        let writer =
            pado_metrics::events::EventsWriter::create(dir.path()).map_err(Failure::other)?;
        // Open fault windows on record, so that a pado killed with one open leaves
        // what the next pado needs to undo it.
        let ledger = crate::open_faults::RunLedger::new(
            &meta.name,
            &meta.started_at,
            dir.path(),
            events.target.clone(),
            crate::open_faults::state_dir(),
        );
        let slot = event_runner.clone();
        let stop = stop.clone();
        let abort_reason = abort_reason.clone();
        Some(Box::new(move |t0| {
            let on_failure = Box::new(move |msg: &str| {
                let mut ar = abort_reason.lock().unwrap_or_else(|p| p.into_inner());
                if ar.is_none() {
                    *ar = Some(format!("{msg}: stopping"));
                    stop.store(STOPPING, Ordering::SeqCst);
                }
            });
            let runner = pado_engine::events::EventRunner::start(
                events,
                t0,
                writer,
                on_failure,
                Some(ledger as Arc<dyn pado_engine::events::WindowLedger>),
            );
            *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(runner);
        }))
    };
    let start_scraper: Option<Box<dyn FnOnce(std::time::Instant) + Send>> = match observe {
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
    let on_start: Option<Box<dyn FnOnce(std::time::Instant) + Send>> =
        match (start_scraper, start_events) {
            (None, None) => None,
            (a, b) => Some(Box::new(move |t0| {
                if let Some(a) = a {
                    a(t0);
                }
                if let Some(b) = b {
                    b(t0);
                }
            })),
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
            start_at,
            setup_vars,
            skip_teardown: split.segment.as_ref().is_some_and(|s| s.index() > 0),
            raw: raw_link,
        },
        sink,
    );
    if let Some(w) = raw_writer {
        let r = w.finish();
        if let Some(w) = r.warning() {
            eprintln!("warning: {w}");
            meta.warnings.push(w);
        }
        meta.raw_output = Some(r);
    }
    if let Some(o) = outputs.as_ref() {
        // The flush fits in what is left of the planned end plus the graceful stop,
        // so outputs never make a run end later than it promised.
        let hard_end = plan
            .scenarios
            .iter()
            .map(|s| s.start_time + s.executor.duration() + s.graceful_stop)
            .max()
            .unwrap_or_default();
        let flush = pado_outputs::FLUSH_TIMEOUT.min(hard_end.saturating_sub(report.elapsed));
        for r in o.finish(flush) {
            if let Some(w) = r.warning() {
                eprintln!("warning: {w}");
                meta.warnings.push(w);
            }
            meta.outputs.push(r);
        }
    }
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
    // Open fault windows are undone now, events not yet due are skipped.
    let events_done = event_runner
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .map(|r| r.finish());
    progress.lock().unwrap_or_else(|p| p.into_inner()).finish();
    if let Some(d) = &events_done {
        for f in d.failures.iter().filter(|f| f.contains("not required")) {
            eprintln!("warning: {f}");
            meta.warnings.push(f.clone());
        }
        if let Some(e) = &d.write_error {
            eprintln!("warning: events: {e}");
            meta.warnings.push(format!("events: {e}"));
        }
    }

    meta.started_at = utc_ms(report.started_at);
    meta.duration_s = report.elapsed.as_secs_f64().max(0.001);
    meta.interrupted = report.interrupted;
    let skew_ms = report.start_skew.map(|d| d.as_secs_f64() * 1000.0);
    match meta.segment.as_mut() {
        Some(seg) => {
            seg.start_skew_ms = skew_ms;
            seg.ran_setup = report.ran_setup;
        }
        None => {
            if let (Some(at), Some(ms)) = (split.start_at, skew_ms) {
                meta.notes.push(format!(
                    "agreed start (--start-at) {}: second 0 began {ms:.1} ms after it",
                    utc_ms(at)
                ));
            }
        }
    }
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
    let (summary, write_error) = crate::write_reports(&dir, out.html, &out.exports, &out.windows)?;
    Ok(Executed {
        summary,
        write_error,
        dir: dir.path().to_path_buf(),
        totals: report.totals,
        steps: meta.steps,
    })
}
