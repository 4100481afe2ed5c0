//! `pado experiment`: one knob swept over its values, the same test rerun at each.
//! For each value: `apply:` (a command or HTTP call with the value in), `ready:`
//! waited for, then the point's test (a capacity search under an SLA, exactly as
//! `pado find-capacity` runs it, or the scenario's own load with one figure
//! measured), each run a normal result directory under the point's; then the next
//! value. `restore:` runs at the end however the experiment ends (done, a failed
//! point, Ctrl-C or SIGTERM, an error). What was found is `experiment.json`
//! ([`record`]) in the experiment's own directory.
//!
//! The caller ([`Points`]) stops it (the CLI's signals), records each run in the
//! history with the label `knob=value`, and shows progress.

pub mod action;
pub mod ready;
pub mod record;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use pado_analysis::capacity::{Outcome, SearchPlan, DEFAULT_SLA, MAX_DROPPED};
use pado_analysis::thresholds::Threshold;
use pado_engine::StopState;
use pado_metrics::Phase;
use pado_scenario::experiment::{value_text, Experiment, OnFailure};

use crate::config::{Output, RunConfig};
use crate::find_capacity::{limit_at_break, limit_between, Search, StepResult, Steps};
use crate::prepare::{LoadSpec, Prepared, ScenarioText};
use crate::SessionError;
use record::{ActionRecord, ExperimentRecord, PointRecord, RunLink};

/// An experiment read and checked before anything is applied: a broken experiment
/// or scenario file is an error naming file, line and field, not a failed point.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The experiment's name (the file's `name:`, or its stem).
    pub name: String,
    /// The experiment as written.
    pub experiment: Experiment,
    /// The values, in order.
    pub values: Vec<f64>,
    /// What each point loads (the named scenario file, or the experiment's own).
    pub load: LoadSpec,
    /// The scenario, read once: every point runs the same reading.
    text: ScenarioText,
    /// The base URL relative action URLs join (the scenario's `target`).
    pub target: Option<String>,
    /// With `find_capacity:`, the search's settings.
    search: Option<SearchSettings>,
    /// Where each run keeps the record of fault windows its events open.
    pub fault_state_dir: Option<PathBuf>,
}

#[derive(Clone, Debug)]
struct SearchSettings {
    plan: SearchPlan,
    hold: Duration,
    sla: Vec<Threshold>,
}

/// The caller's part: stopping, recording each run, and showing progress.
pub trait Points {
    /// A run is about to start with `stop` as its stop state (Ctrl-C stops it).
    fn starting(&mut self, stop: &StopState);
    /// Whether the person running the experiment asked it to stop.
    fn stop_requested(&self) -> bool;
    /// A run finished in `dir` at the point labelled `label` (`knob`, `value`);
    /// `capacity_step` for a search's step. Its history id, when recorded.
    fn recorded(&mut self, dir: &Path, label: (&str, &str), capacity_step: bool) -> Option<i64>;
    /// A line of progress for the person watching.
    fn say(&mut self, line: &str);
}

impl Plan {
    /// Read the experiment file `path` (`target` replaces the scenario's target,
    /// as `--target` does) and check the scenario each point will run.
    pub fn read(path: &Path, target: Option<String>) -> Result<Plan, SessionError> {
        let loaded =
            pado_scenario::load_file(path).map_err(|e| SessionError::invalid(e.to_string()))?;
        let Some(x) = loaded.config.experiment.clone() else {
            return Err(SessionError::invalid(format!(
                "{}: no `experiment:` block (see docs/experiments.md)",
                loaded.file
            )));
        };
        let values = x.values.expand().unwrap_or_default();
        let scenario_path = match &x.scenario {
            Some(s) => loaded.base_dir.join(s),
            None => path.to_path_buf(),
        };
        let load = LoadSpec::file(scenario_path, target);
        let text = ScenarioText::read(&load)?;
        let scenario_target = match &text {
            ScenarioText::File { config, .. } => config.target.clone(),
            ScenarioText::Url(_) => None,
        };
        let name = loaded
            .config
            .name
            .clone()
            .or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "experiment".into());
        let search = match &x.find_capacity {
            Some(f) => {
                let exprs: Vec<String> = if f.sla.is_empty() {
                    DEFAULT_SLA.iter().map(|s| s.to_string()).collect()
                } else {
                    f.sla.clone()
                };
                let mut sla = Vec::new();
                for (i, e) in exprs.iter().enumerate() {
                    sla.push(pado_scenario::thresholds::parse_cli(e).map_err(|err| {
                        SessionError::invalid(format!(
                            "{}: experiment.find_capacity.sla[{i}]: `{e}`: {err}",
                            loaded.file
                        ))
                    })?);
                }
                let plan = SearchPlan::new(
                    f.start_rate.unwrap_or(50.0),
                    f.factor.unwrap_or(1.5),
                    f.max_rate.unwrap_or(100_000.0),
                    f.refine.unwrap_or(3),
                )
                .map_err(|e| {
                    SessionError::invalid(format!("{}: experiment.find_capacity: {e}", loaded.file))
                })?;
                Some(SearchSettings {
                    plan,
                    hold: f.hold.map_or(Duration::from_secs(10), |d| d.get()),
                    sla,
                })
            }
            None => None,
        };
        let plan = Plan {
            name,
            experiment: x,
            values,
            load,
            text,
            target: scenario_target,
            search,
            fault_state_dir: None,
        };
        // Each point prepares the scenario as its first run will: a file that cannot
        // run is refused before the first `apply:` changes anything.
        match plan.search_at(Path::new(".")) {
            Some(s) => {
                s.read()?;
            }
            None => {
                Prepared::from_read(&plan.text, &plan.load)?;
            }
        }
        Ok(plan)
    }

    /// What each point measures and its unit.
    pub fn metric(&self) -> (String, String) {
        match (&self.search, &self.experiment.fixed) {
            (Some(_), _) => ("capacity".into(), "iterations/s".into()),
            (None, f) => {
                let m = f
                    .as_ref()
                    .and_then(|f| f.metric.clone())
                    .unwrap_or_else(|| "p95".into());
                let unit = match m.as_str() {
                    "rps" => "req/s",
                    "error_rate" => "share",
                    _ => "ms",
                };
                (m, unit.into())
            }
        }
    }

    fn search_at(&self, out: &Path) -> Option<Search> {
        let s = self.search.as_ref()?;
        Some(Search {
            load: self.load.clone(),
            overwrite: false,
            plan: s.plan,
            hold: s.hold,
            sla: s.sla.clone(),
            max_dropped: MAX_DROPPED,
            out: out.to_path_buf(),
            fault_state_dir: self.fault_state_dir.clone(),
        })
    }
}

/// Runs the experiment into `out` (an empty directory): every point, then
/// `restore:` however the points ended, then `experiment.json`. An error of the
/// machine (a disk that is full) ends it, after `restore:`.
pub fn run(
    plan: &Plan,
    out: &Path,
    points: &mut dyn Points,
) -> Result<ExperimentRecord, SessionError> {
    let (metric, metric_unit) = plan.metric();
    let x = &plan.experiment;
    let mut rec = ExperimentRecord {
        format: record::FORMAT,
        name: plan.name.clone(),
        knob: x.knob.name.clone(),
        unit: x.knob.unit.clone(),
        mode: if plan.search.is_some() {
            "find_capacity"
        } else {
            "fixed"
        }
        .into(),
        metric,
        metric_unit,
        cost_per_unit: x.cost_per_unit,
        started_at: pado_base::stamp::utc_ms(SystemTime::now()),
        ..Default::default()
    };
    let swept = run_points(plan, out, points, &mut rec);
    rec.interrupted = points.stop_requested();
    if rec.interrupted && rec.stopped.is_none() && rec.points.len() < plan.values.len() {
        rec.stopped = Some("stopped by the person running it (Ctrl-C or SIGTERM)".into());
    }
    if let Some(r) = &x.restore {
        points.say("restoring");
        let first = plan.values.first().copied().unwrap_or(0.0);
        let o = action::perform(r, first, plan.target.as_deref());
        let _ = std::fs::write(out.join("restore.log"), log_text(&o));
        points.say(&format!("restore: {}: {}", o.what, o.result));
        rec.restore = Some(ActionRecord::from(&o));
    }
    rec.finished_at = pado_base::stamp::utc_ms(SystemTime::now());
    if let Err(e) = record::write_reports(out, &mut rec) {
        points.say(&format!("warning: {}: {e}", out.display()));
    }
    record::write(out, &rec)
        .map_err(|e| SessionError::io(format!("{}: {e}", out.join(record::FILE).display())))?;
    swept?;
    Ok(rec)
}

/// Every point in order, `experiment.json` rewritten after each (so a killed
/// experiment leaves what it had found).
fn run_points(
    plan: &Plan,
    out: &Path,
    points: &mut dyn Points,
    rec: &mut ExperimentRecord,
) -> Result<(), SessionError> {
    let x = &plan.experiment;
    for (i, &value) in plan.values.iter().enumerate() {
        if points.stop_requested() {
            break;
        }
        let text = value_text(value);
        let label = format!("{}={text}", x.knob.name);
        let rel = format!("point-{:02}-{}", i + 1, pado_base::names::file_safe(&text));
        let dir = out.join(&rel);
        std::fs::create_dir_all(&dir)
            .map_err(|e| SessionError::io(format!("{}: {e}", dir.display())))?;
        points.say(&format!(
            "point {} of {}: {label}",
            i + 1,
            plan.values.len()
        ));
        let mut p = PointRecord {
            value,
            label,
            dir: rel.clone(),
            ..Default::default()
        };
        let o = action::perform(&x.apply, value, plan.target.as_deref());
        let _ = std::fs::write(dir.join("apply.log"), log_text(&o));
        points.say(&format!("  apply: {}: {}", o.what, o.result));
        p.apply = Some(ActionRecord::from(&o));
        if !o.ok {
            p.error = Some(format!("apply failed: {} ({})", o.what, o.result));
        } else if let Some(r) = &x.ready {
            let t = Instant::now();
            match ready::wait(r, value, plan.target.as_deref(), &|| {
                points.stop_requested()
            }) {
                Ok(()) => p.ready_s = Some(t.elapsed().as_secs_f64()),
                Err(e) => p.error = Some(e.to_string()),
            }
        }
        if p.error.is_none() && !points.stop_requested() {
            match &plan.search_at(&dir) {
                Some(search) => capacity_point(plan, search, &dir, &rel, &mut p, points)?,
                None => fixed_point(plan, &dir, &rel, &mut p, points)?,
            }
        }
        if let Some(e) = &p.error {
            points.say(&format!("  point failed: {e}"));
        } else if let Some(m) = p.measured {
            points.say(&format!(
                "  {}: {}",
                rec.metric,
                pado_base::units::value(Some(m))
            ));
        }
        let failed = p.error.clone();
        rec.points.push(p);
        record::write(out, rec)
            .map_err(|e| SessionError::io(format!("{}: {e}", out.join(record::FILE).display())))?;
        if let (Some(e), OnFailure::Stop) = (failed, x.on_failure) {
            rec.stopped = Some(format!(
                "point {} ({}) failed and `on_failure: stop`: {e}",
                i + 1,
                rec.points[i].label
            ));
            break;
        }
    }
    Ok(())
}

/// The search at one point, each step recorded as `pado find-capacity` records it.
fn capacity_point(
    plan: &Plan,
    search: &Search,
    dir: &Path,
    rel: &str,
    p: &mut PointRecord,
    points: &mut dyn Points,
) -> Result<(), SessionError> {
    let (knob, value) = p.label.split_once('=').unwrap_or_default();
    let mut hooks = StepHooks {
        points,
        label: (knob.to_string(), value.to_string()),
        dir,
        rel,
        runs: Vec::new(),
    };
    let (steps, outcome) = search.run(&plan.text, &mut hooks)?;
    p.runs = hooks.runs;
    p.peak_rps = steps.iter().map(|s| s.rps).reduce(f64::max);
    p.verdict = limit_between(&steps)
        .or_else(|| capacity_verdict(&steps))
        .or_else(|| limit_at_break(&steps));
    p.measured = outcome.capacity();
    p.outcome = outcome_words(&outcome);
    if p.measured.is_none() && !matches!(outcome, Outcome::Interrupted { .. }) {
        p.error = Some(format!("no capacity found: {}", p.outcome));
    }
    Ok(())
}

/// The scenario's own load at one point, and the figure it measures.
fn fixed_point(
    plan: &Plan,
    dir: &Path,
    rel: &str,
    p: &mut PointRecord,
    points: &mut dyn Points,
) -> Result<(), SessionError> {
    let prepared = Prepared::from_read(&plan.text, &plan.load)?;
    let run_dir = dir.join("run");
    let output = Output {
        dir: Some(run_dir.clone()),
        overwrite: false,
        html: true,
        quiet: true,
        ..Default::default()
    };
    let mut cfg = RunConfig::new(prepared.compile()?, prepared.scenario(), output);
    cfg.ledger = Some(crate::open_faults::ledger_factory(
        plan.fault_state_dir.clone(),
    ));
    points.starting(&cfg.stop);
    let done = crate::run(cfg)?;
    let (knob, value) = p.label.split_once('=').unwrap_or_default();
    let id = points.recorded(&done.dir, (knob, value), false);
    p.runs.push(RunLink {
        dir: format!("{rel}/run"),
        run_id: id,
        ..Default::default()
    });
    let all = done.totals.overall();
    let q = |q: f64| all.phase(Phase::Duration).quantile_us(q) as f64 / 1000.0;
    let (metric, _) = plan.metric();
    p.measured = Some(match metric.as_str() {
        "p50" => q(0.50),
        "p90" => q(0.90),
        "p99" => q(0.99),
        "rps" => done.summary.rps,
        "error_rate" => done.summary.failed_rate,
        _ => q(0.95),
    });
    p.verdict = done
        .summary
        .bottlenecks
        .as_ref()
        .and_then(|b| b.limit.clone());
    p.outcome = if done.summary.interrupted {
        "interrupted".into()
    } else {
        format!("{} requests", done.summary.requests)
    };
    if let Some(e) = done.write_error {
        points.say(&format!("  warning: {e}"));
    }
    Ok(())
}

/// The search's steps, handed on to the caller and linked from the point.
struct StepHooks<'a> {
    points: &'a mut dyn Points,
    label: (String, String),
    dir: &'a Path,
    rel: &'a str,
    runs: Vec<RunLink>,
}

impl Steps for StepHooks<'_> {
    fn starting(&mut self, stop: &StopState) {
        self.points.starting(stop);
    }

    fn stop_requested(&self) -> bool {
        self.points.stop_requested()
    }

    fn finished(&mut self, s: &StepResult, write_error: Option<&SessionError>) {
        if let Some(e) = write_error {
            self.points
                .say(&format!("  warning: step at {:.1}/s: {e}", s.rate));
        }
        let id = self
            .points
            .recorded(&s.result_dir, (&self.label.0, &self.label.1), true);
        let name = s
            .result_dir
            .strip_prefix(self.dir)
            .map(|r| r.display().to_string())
            .unwrap_or_else(|_| s.result_dir.display().to_string());
        self.runs.push(RunLink {
            dir: format!("{}/{name}", self.rel),
            run_id: id,
            rate: Some(s.rate),
            held: Some(s.ok),
        });
        self.points.say(&format!(
            "  {:>9.1}/s  completed {:>9.1}/s  p95 {:>8.2} ms  {}",
            s.rate,
            s.rps,
            s.p95_ms,
            if s.ok {
                "ok".to_string()
            } else {
                format!("breaks: {}", s.failing.join("; "))
            }
        ));
    }
}

/// How a point's search ended, in words.
fn outcome_words(o: &Outcome) -> String {
    match *o {
        Outcome::Found { capacity, broke_at } => {
            format!("the SLA held at {capacity:.1}/s and broke at {broke_at:.1}/s")
        }
        Outcome::NoBreakUpToMax { max } => {
            format!("no break up to max_rate {max:.1}/s: the capacity is above it (raise max_rate)")
        }
        Outcome::FirstStepFailed { start } => {
            format!("the SLA already breaks at the start rate {start:.1}/s (start lower)")
        }
        Outcome::Interrupted { rate, .. } => format!("interrupted at {rate:.1}/s"),
    }
}

/// What was full where the SLA broke: the bottleneck table's verdict of the broken
/// steps from the lowest rate up, the first that names a component (a short step
/// far past the break may not show the saturation its table needs); else the
/// lowest broken step's (or, when none broke, the last step's) words for why none.
fn capacity_verdict(steps: &[StepResult]) -> Option<String> {
    let mut broken: Vec<&StepResult> = steps.iter().filter(|s| !s.ok).collect();
    broken.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    for s in &broken {
        if let Ok(h) = pado_analysis::attribution::headline::headline_of_run(&s.result_dir) {
            if h.component.is_some() {
                return Some(h.phrase);
            }
        }
    }
    broken
        .first()
        .copied()
        .or(steps.last())
        .map(|s| verdict_of(&s.result_dir))
}

/// The bottleneck table's verdict of the run in `dir`, in one line.
fn verdict_of(dir: &Path) -> String {
    match pado_analysis::attribution::headline::headline_of_run(dir) {
        Ok(h) if h.component.is_some() => h.phrase,
        Ok(h) => format!("{} ({})", h.phrase, h.evidence),
        Err(e) => format!("no verdict: {e}"),
    }
}

/// What an action's log file holds: what ran, how it ended, its output.
fn log_text(o: &action::ActionOutcome) -> String {
    format!("{}\n{}\n\n{}", o.what, o.result, o.output)
}
