//! A run from its configuration to a written result directory: prepared (warnings,
//! the directory, its metadata), started on a thread of its own with everything
//! that runs beside the load, and finished (outputs flushed, side threads ended,
//! the metadata patched, the reports written). [`Session::handle`] watches and
//! steers it meanwhile.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

use pado_engine::{RunOptions, RunPlan, RunReport};
use pado_metrics::{StepCatalog, Totals};
use pado_results::{ResultDir, RunMeta};

use crate::config::{Outline, RunConfig, Share};
use crate::control::RunHandle;
use crate::fanout::Fanout;
use crate::judge::LiveJudge;
use crate::meta;
use crate::reports::{write_reports, Written};
use crate::side_threads::{EventsSetup, SideThreads};
use crate::SessionError;

/// A finished run.
pub struct Finished {
    /// The summary (also in `summary.json`).
    pub summary: pado_report::Summary,
    /// The result directory.
    pub dir: PathBuf,
    /// Everything measured, summed (as `timeline.jsonl` holds it per second).
    pub totals: Totals,
    /// The plan's steps, which thresholds' `scenario`, `method` and `group` tags
    /// select in `totals`.
    pub steps: StepCatalog,
    /// A result file (summary.json, report.html, exports) that could not be
    /// written: the summary is still good to print, then this is the run's error.
    pub write_error: Option<SessionError>,
    /// A k6 script's own end when it did not end well (an exception in `setup()`
    /// or `teardown()`, `exec.test.abort()`): k6's exit code for it.
    pub script_end: Option<pado_engine::script_state::ScriptEnd>,
}

/// A running session.
pub struct Session {
    handle: RunHandle,
    observed: crate::observed_feed::ObservedFeed,
    failures: crate::live::LiveFailures,
    thread: JoinHandle<Result<Finished, SessionError>>,
}

/// Run `cfg` to its end and write its result directory.
pub fn run(cfg: RunConfig) -> Result<Finished, SessionError> {
    Session::start(cfg)?.wait()
}

/// What the run's thread needs after the load.
struct After {
    dir: ResultDir,
    meta: RunMeta,
    plan: Arc<RunPlan>,
    share: Share,
    output: crate::config::Output,
    raw: Option<pado_outputs::raw::RawWriter>,
    outputs: Option<Arc<pado_outputs::Outputs>>,
    side: SideThreads,
    handle: RunHandle,
    write_error: Arc<OnceLock<String>>,
}

impl Session {
    /// Prepare the run (an error here leaves no load sent) and start it on a
    /// thread of its own.
    pub fn start(cfg: RunConfig) -> Result<Session, SessionError> {
        let RunConfig {
            mut plan,
            scenario,
            output,
            workers,
            observer,
            soak,
            share,
            outputs: output_specs,
            raw: raw_spec,
            stop,
            mut watcher,
            ledger,
        } = cfg;
        let warnings = crate::warnings::prepare(&mut plan, &scenario, &share);
        let plan = Arc::new(plan);
        for w in &warnings {
            crate::notice::warning(w);
        }
        if observer.is_some() {
            crate::notice::line("warning: --http-debug prints every request: the run is slowed and its figures are not a measurement");
        }
        let load_origins: Vec<String> = plan.origins.iter().map(|o| o.label.clone()).collect();
        let observe =
            crate::observing::observe_config(&scenario.config, &scenario.file, &load_origins)?;
        let dir = crate::dirs::result_dir(output.dir.as_deref(), output.overwrite, &plan.name)?;
        let workers = workers.unwrap_or_else(pado_engine::default_workers);
        let meta = meta::initial(&plan, &scenario, &share, workers, soak, warnings);
        dir.write_meta(&meta).map_err(SessionError::io)?;
        let timeline = dir.timeline_writer().map_err(SessionError::io)?;
        let handle = RunHandle::new(
            plan.clone(),
            stop.clone(),
            meta.stages.clone(),
            share.segment.clone(),
        );
        if let Some(w) = watcher.as_mut() {
            w.begin(&outline(&meta, &scenario.thresholds));
        }
        // A segment's share is not the test: its abort_on_fail thresholds are
        // judged by the coordinator on the merged seconds, never on the share alone.
        let judge = if share.segment.is_some() {
            LiveJudge::without_abort(&scenario.thresholds, &plan.steps)
        } else {
            LiveJudge::new(&scenario.thresholds, &plan.steps)
        };
        let outputs = start_outputs(&output_specs, &plan, &dir, &share)?;
        let (raw, raw_link) = start_raw(raw_spec.as_ref(), &plan)?;
        let write_error = Arc::new(OnceLock::new());
        let failures = crate::live::LiveFailures::default();
        let fanout = Fanout {
            failures: failures.clone(),
            outputs: outputs.clone(),
            timeline,
            judge,
            handle: handle.clone(),
            watcher,
            write_error: write_error.clone(),
        };
        let side = SideThreads::default();
        let events = events_setup(&scenario, &share, &meta, &dir, ledger)?;
        let observe = match observe {
            Some(c) => Some((
                c,
                pado_results::ObserveWriter::create(dir.path()).map_err(SessionError::io)?,
            )),
            None => None,
        };
        let observed = crate::observed_feed::ObservedFeed::default();
        let on_start = side.on_start(observe, events, handle.clone(), observed.clone());
        let opts = RunOptions {
            workers,
            stop,
            on_start: Some(on_start),
            observer,
            start_at: share.start_at.map(|(_, i)| i),
            setup_vars: share.setup_vars.clone(),
            skip_teardown: share.segment.as_ref().is_some_and(|s| s.index() > 0),
            raw: raw_link,
            control: Some(handle.load_control()),
        };
        let after = After {
            dir,
            meta,
            plan: plan.clone(),
            share,
            output,
            raw,
            outputs,
            side,
            handle: handle.clone(),
            write_error,
        };
        let thread = std::thread::Builder::new()
            .name("pado-session".into())
            .spawn(move || {
                let report = pado_engine::run(plan, opts, fanout.into_sink());
                after.handle.ended();
                finish(after, report)
            })
            .map_err(SessionError::io)?;
        Ok(Session {
            handle,
            observed,
            failures,
            thread,
        })
    }

    /// The handle to watch and steer the run.
    pub fn handle(&self) -> RunHandle {
        self.handle.clone()
    }

    /// The run as a live view (the dashboard) watches and steers it, with the
    /// target's metrics as they are scraped.
    pub fn live(&self) -> Arc<dyn crate::LiveRun> {
        Arc::new(crate::live::LocalRun {
            handle: self.handle.clone(),
            observed: self.observed.clone(),
            failures: self.failures.clone(),
        })
    }

    /// Wait for the run to end and its result directory to be written.
    pub fn wait(self) -> Result<Finished, SessionError> {
        self.thread
            .join()
            .unwrap_or_else(|_| Err(SessionError::Io("the run's thread panicked".into())))
    }
}

/// What the progress line needs to know before second 0.
fn outline(meta: &RunMeta, thresholds: &[pado_analysis::thresholds::Threshold]) -> Outline {
    let vu_ceiling = match pado_report::summary::VuPool::of(&meta.scenarios, 0) {
        pado_report::summary::VuPool::Max(n) => Some(n),
        _ => None,
    };
    Outline {
        planned_s: meta.planned_s.unwrap_or_default(),
        stages: meta.stages.clone(),
        vu_ceiling,
        has_thresholds: !thresholds.is_empty(),
    }
}

/// Live outputs: each closed second is handed over without waiting.
fn start_outputs(
    specs: &[pado_outputs::OutputSpec],
    plan: &RunPlan,
    dir: &ResultDir,
    share: &Share,
) -> Result<Option<Arc<pado_outputs::Outputs>>, SessionError> {
    if specs.is_empty() {
        return Ok(None);
    }
    let labels = crate::output_labels::labels(
        plan,
        dir.path(),
        share
            .segment
            .as_ref()
            .map(|s| format!("{}/{}", s.index(), s.count())),
    );
    pado_outputs::Outputs::start(specs, &labels)
        .map(|o| Some(Arc::new(o)))
        .map_err(|e| SessionError::invalid(format!("output {e}")))
}

/// Raw per-request lines: a writer thread fed by the workers, never waited for.
fn start_raw(
    spec: Option<&pado_outputs::raw::RawSpec>,
    plan: &RunPlan,
) -> Result<
    (
        Option<pado_outputs::raw::RawWriter>,
        Option<pado_metrics::raw::RawLink>,
    ),
    SessionError,
> {
    let Some(spec) = spec else {
        return Ok((None, None));
    };
    let steps = plan.series.iter().map(|k| k.name.clone()).collect();
    let secrets = plan.secrets.clone();
    let (w, link) = pado_outputs::raw::RawWriter::start(
        spec,
        steps,
        Box::new(move |url: &[u8]| secrets.text(url)),
    )
    .map_err(|e| SessionError::invalid(format!("output {e}")))?;
    Ok((Some(w), Some(link)))
}

/// The scenario's events (`events:`), which a split test runs in segment 0 only.
fn events_setup(
    scenario: &crate::config::Scenario,
    share: &Share,
    meta: &RunMeta,
    dir: &ResultDir,
    ledger: Option<crate::config::LedgerFactory>,
) -> Result<Option<EventsSetup>, SessionError> {
    if share.segment.as_ref().is_some_and(|s| s.index() > 0) {
        return Ok(None);
    }
    let plan = pado_engine::events::compile_events(&scenario.config, &meta.stages)
        .map_err(|e| SessionError::invalid(format!("{}: {e}", scenario.file)))?;
    if plan.is_empty() {
        return Ok(None);
    }
    let writer =
        pado_results::events::EventsWriter::create(dir.path()).map_err(SessionError::io)?;
    // Open fault windows on record, so that a pado killed with one open leaves
    // what the next pado needs to undo it.
    let ledger = ledger.map(|f| {
        f(
            &meta.name,
            &meta.started_at,
            dir.path(),
            plan.target.clone(),
        )
    });
    Ok(Some(EventsSetup {
        plan,
        writer,
        ledger,
    }))
}

/// After the load: flush what runs beside it, patch the metadata, record the
/// changes of the load, write the failures and the reports.
fn finish(mut a: After, report: RunReport) -> Result<Finished, SessionError> {
    if let Some(w) = a.raw.take() {
        let r = w.finish();
        if let Some(w) = r.warning() {
            meta::warn(&mut a.meta, w);
        }
        a.meta.raw_output = Some(r);
    }
    if let Some(o) = a.outputs.as_deref() {
        // The flush fits in what is left of the planned end plus the graceful stop,
        // so outputs never make a run end later than it promised.
        // Holds and skips moved the plan's end.
        let late_by = a
            .handle
            .real_planned()
            .saturating_sub(a.plan.planned_duration());
        let early_by = a
            .plan
            .planned_duration()
            .saturating_sub(a.handle.real_planned());
        let hard_end = a
            .plan
            .scenarios
            .iter()
            .map(|s| s.start_time + s.executor.duration() + s.graceful_stop)
            .max()
            .unwrap_or_default()
            .saturating_add(late_by)
            .saturating_sub(early_by);
        let flush = pado_outputs::FLUSH_TIMEOUT.min(hard_end.saturating_sub(report.elapsed));
        for r in o.finish(flush) {
            if let Some(w) = r.warning() {
                meta::warn(&mut a.meta, w);
            }
            a.meta.outputs.push(r);
        }
    }
    let side = a.side.finish();
    if let Some(e) = side.scrape_error {
        meta::warn(&mut a.meta, format!("observe: {e}"));
    }
    if let Some(d) = &side.events {
        for f in d.failures.iter().filter(|f| f.contains("not required")) {
            meta::warn(&mut a.meta, f.clone());
        }
        if let Some(e) = &d.write_error {
            meta::warn(&mut a.meta, format!("events: {e}"));
        }
    }
    meta::patch(&mut a.meta, &report, &a.share, a.handle.abort_reason());
    // A held or skipped plan ran its stages at other times than planned: the
    // result says when they really ran, so that reports line up with the seconds.
    a.meta.stages = a.handle.real_stages();
    if a.meta.planned_s.is_some() {
        a.meta.planned_s = Some(a.handle.real_planned().as_secs_f64());
    }
    if let Some(e) = a.write_error.get() {
        a.meta
            .warnings
            .push(format!("writing the timeline failed: {e}"));
    }
    for change in a.handle.changes() {
        pado_results::events::append_event(a.dir.path(), &change).map_err(SessionError::io)?;
    }
    a.dir.write_meta(&a.meta).map_err(SessionError::io)?;
    if !report.totals.failures.is_empty() {
        a.dir
            .write_failures(&report.totals.failures)
            .map_err(SessionError::io)?;
    }
    let Written {
        summary,
        write_error,
    } = write_reports(&a.dir, a.output.html, &a.output.exports, &a.output.windows)?;
    Ok(Finished {
        summary,
        write_error,
        dir: a.dir.path().to_path_buf(),
        totals: report.totals,
        steps: a.meta.steps,
        script_end: report.script_end,
    })
}

#[cfg(test)]
mod tests;
