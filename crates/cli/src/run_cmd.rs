//! `pado run`: the run itself from a [`RunConfig`] (stage two's output, see
//! [`crate::config`]) through [`pado_session`], Ctrl-C handling, and the summary
//! printed.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use pado_dashboard::Dashboard;
use pado_engine::{ABORT, STOPPING};
use pado_session::Finished;

use crate::config::RunConfig;
use crate::exit::{self, Failure};
use crate::out::{out, outln};
use crate::progress::Progress;

/// The run that Ctrl-C stops (one at a time; `find-capacity` runs several in turn).
static CURRENT_RUN: Mutex<Option<(Arc<AtomicU8>, bool)>> = Mutex::new(None);
/// Make Ctrl-C (or SIGTERM, SIGHUP) stop `stop`'s run (the handler is installed once
/// per process): the first request stops gracefully, a second distinct one (see
/// [`crate::signals`]: the same signal delivered twice is one) exits at once.
pub(crate) fn watch_ctrl_c(stop: Arc<AtomicU8>, quiet: bool) {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    *pado_base::lock(&CURRENT_RUN) = Some((stop, quiet));
    INSTALL.call_once(|| {
        let _ = crate::signals::install(|n| {
            let current = pado_base::lock(&CURRENT_RUN).clone();
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

/// `pado run`: run, print the summary, exit code from the thresholds.
pub(crate) fn run(cfg: &RunConfig, history: &crate::history_cmd::Recorder) -> Result<i32, Failure> {
    if cfg.once {
        return crate::debugging::run_once(cfg);
    }
    let (done, page) = execute_live(cfg)?;
    let code = report_run(cfg, history, done);
    // The page stays up as asked once the summary is out (the result is written).
    if let (Some(spec), Some(page)) = (&cfg.dashboard, &page) {
        spec.linger(page);
    }
    code
}

/// Print a finished run's summary and record it: the exit code.
fn report_run(
    cfg: &RunConfig,
    history: &crate::history_cmd::Recorder,
    mut done: Finished,
) -> Result<i32, Failure> {
    // A k6 script's `handleSummary` replaces the summary when it returns `stdout`.
    let script = cfg.scenario.script.as_ref();
    if script.is_some() {
        crate::script_summary::chosen_trend_stats(&mut done.summary, &done.dir, &cfg.k6_summary);
    }
    let replaced =
        script.and_then(|s| crate::script_summary::handle_summary(s, &done.dir, &cfg.k6_summary));
    // The summary is the command's output; --quiet only silences progress.
    let color = crate::out::color();
    match &replaced {
        Some(text) => out!("{}", String::from_utf8_lossy(text)),
        None => out!(
            "{}",
            pado_report::render(&done.summary, pado_report::TextOptions { color })
        ),
    }
    if let Some(seg) = &cfg.split.segment {
        if !done.summary.thresholds.is_empty() {
            outln!(
                "  thresholds are judged on the merged result (`pado merge`): {} of the test is not the test, so its exit code ignores them",
                seg.label()
            );
        }
    }
    // What follows the summary goes to stderr when `handleSummary` wrote stdout
    // (whatever reads that output gets exactly what the script returned).
    let line = |l: &str| {
        if replaced.is_some() {
            eprintln!("{l}");
        } else {
            outln!("{l}");
        }
    };
    for l in crate::live_outputs::lines(&done.summary.outputs) {
        line(&l);
    }
    if let Some(r) = &done.summary.raw_output {
        line(&crate::live_outputs::raw_line(r));
    }
    line(&format!("  results: {}", done.dir.display()));
    // A segment's share is not the test: its merge is recorded.
    if cfg.split.segment.is_none() {
        if let Some(id) = history.record(&done.dir, pado_history::Kind::Run) {
            line(&format!("  history: run {id} (`pado history`; `pado compare last~1 last` compares it with the one before)"));
        }
    }
    if let Some(e) = done.write_error {
        return Err(e.into());
    }
    if let (Some(s), Some(end)) = (script, &done.script_end) {
        return Ok(crate::script_summary::report_end(s, end));
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

/// Run and write the result directory, printing nothing but progress, with the
/// live page when the configuration asks for one: it is told the run ended and
/// handed back to be kept up as long as asked.
fn execute_live(cfg: &RunConfig) -> Result<(Finished, Option<Dashboard>), Failure> {
    let prep = &cfg.scenario;
    let split = &cfg.split;
    let plan = prep.compile()?;
    // A baseline that names no run is said before anything is sent.
    let live = match &cfg.dashboard {
        Some(spec) => Some((
            spec,
            spec.find_baseline(&plan.name)?,
            pado_dashboard::RunInfo {
                run_id: cfg
                    .output
                    .dir
                    .as_deref()
                    .and_then(|d| d.file_name())
                    .map(|n| n.to_string_lossy().into_owned()),
                ..pado_dashboard::RunInfo::from_plan(&plan, &prep.thresholds)
            },
        )),
        None => None,
    };
    let setup_vars = split
        .setup_vars
        .as_deref()
        .map(|v| pado_session::split::seed_vars(cfg.setup_vars_file.as_deref(), v, &plan))
        .transpose()?;
    // Ctrl-C: first stops gracefully, second exits at once. While waiting for an
    // agreed start it ends the wait: nothing sent, no result directory.
    let stop = Arc::new(AtomicU8::new(0));
    // (Quiet while waiting: the handler's "in-flight requests finish" would be
    // wrong before anything was sent; the wait says what happened instead.)
    watch_ctrl_c(stop.clone(), cfg.output.quiet || split.start_at.is_some());
    let start_at = split
        .start_at
        .map(|at| pado_session::split::wait_for_start(at, &stop, cfg.output.quiet).map(|i| (at, i)))
        .transpose()?;
    watch_ctrl_c(stop.clone(), cfg.output.quiet);
    let scenario = pado_session::Scenario {
        config: prep.config.clone(),
        file: prep.file.clone(),
        thresholds: prep.thresholds.clone(),
        notes: prep.notes.clone(),
    };
    let session = pado_session::RunConfig {
        workers: cfg.workers,
        observer: cfg.http_debug.map(|l| {
            Arc::new(crate::debugging::HttpDebug::new(l)) as Arc<dyn pado_engine::trace::Observer>
        }),
        soak: cfg.soak,
        share: pado_session::Share {
            segment: split.segment.clone(),
            plan_id: split.plan_id.clone(),
            start_at,
            setup_vars,
        },
        outputs: cfg.outputs.clone(),
        raw: cfg.raw.clone(),
        stop,
        watcher: Some(Box::new(Progress::new(cfg.output.quiet, 0.0, Vec::new()))),
        ledger: Some(Box::new(|name, started_at, dir, target| {
            crate::open_faults::RunLedger::new(
                name,
                started_at,
                dir,
                target,
                crate::open_faults::state_dir(),
            )
        })),
        ..pado_session::RunConfig::new(plan, scenario, cfg.output.clone())
    };
    let running = pado_session::Session::start(session)?;
    if let Some(path) = &split.control_socket {
        if let Err(e) = crate::control_socket::serve(path, running.handle()) {
            eprintln!(
                "warning: --control-socket {}: {e}: this run's load cannot be changed while it runs",
                path.display()
            );
        }
    }
    let page = match live {
        None => None,
        Some((spec, baseline, info)) => match spec.start(running.live(), info, baseline) {
            Ok(p) => Some(p),
            Err(e) => {
                // The run started but its page could not: stop it, keep its result.
                let _ = running.handle().stop();
                let _ = running.wait();
                return Err(e);
            }
        },
    };
    let done = running.wait();
    if let Some(path) = &split.control_socket {
        let _ = std::fs::remove_file(path);
    }
    let done = done?;
    if let Some(p) = &page {
        p.finished(&done.dir);
    }
    Ok((done, page))
}
