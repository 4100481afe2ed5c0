//! `pado experiment FILE`: the experiment read and checked, its directory made, then
//! the points run ([`pado_session::experiment`]); this module stops it on Ctrl-C or
//! SIGTERM (the restore still runs), records each run in the history with the label
//! `knob=value`, and prints the progress and the table.

use std::path::Path;
use std::sync::Arc;

use pado_engine::StopState;
use pado_session::experiment::{self, record, Plan, Points};

use crate::exit::{self, Failure};
use crate::out::outln;

/// The command line's part in an experiment.
struct Shown<'a> {
    history: &'a crate::history_cmd::Recorder,
    quiet: bool,
}

impl Points for Shown<'_> {
    fn starting(&mut self, stop: &StopState) {
        crate::run_cmd::watch_ctrl_c(stop.clone(), true);
    }

    fn stop_requested(&self) -> bool {
        crate::run_cmd::interrupted_by_user()
    }

    fn recorded(&mut self, dir: &Path, label: (&str, &str), capacity_step: bool) -> Option<i64> {
        let kind = if capacity_step {
            pado_history::Kind::CapacityStep
        } else {
            pado_history::Kind::Run
        };
        self.history.with_label(label.0, label.1).record(dir, kind)
    }

    fn say(&mut self, line: &str) {
        if !self.quiet {
            eprintln!("{}", pado_base::text::terminal_safe_line(line));
        }
    }
}

/// `pado experiment`.
pub(crate) fn run(a: &crate::args::ExperimentArgs) -> Result<i32, Failure> {
    let history = crate::history_cmd::Recorder::from_args(&a.history)?;
    crate::open_faults::recover_before_run(true);
    let mut plan = Plan::read(&a.file, a.target.clone())?;
    plan.fault_state_dir = crate::open_faults::state_dir();
    let out = match &a.out {
        Some(p) => pado_session::user_out_dir(p, a.overwrite)?,
        None => pado_session::new_out_dir(&format!("{}-experiment", plan.name))?,
    };
    // Signals from here on are requests to stop (the restore runs), not an exit:
    // between runs they land on this state, during a run on the run's own.
    crate::run_cmd::watch_ctrl_c(Arc::default(), true);
    let quiet = a.quiet || a.json;
    if !quiet {
        eprintln!(
            "experiment {}: {} over {} value{} ({})",
            plan.name,
            plan.experiment.knob.name,
            plan.values.len(),
            if plan.values.len() == 1 { "" } else { "s" },
            plan.metric().0
        );
    }
    let rec = experiment::run(
        &plan,
        &out,
        &mut Shown {
            history: &history,
            quiet,
        },
    )?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&rec).unwrap_or_default());
    } else {
        print_table(&out)?;
        outln!("experiment's results: {}", out.display());
    }
    let failed = rec.points.iter().any(|p| p.error.is_some());
    Ok(if rec.interrupted {
        exit::INTERRUPTED
    } else if failed || rec.restore.as_ref().is_some_and(|r| !r.ok) {
        exit::THRESHOLD_FAILED
    } else {
        exit::OK
    })
}

/// Prints an experiment directory's table (its `experiment.json`, presented again:
/// `pado report DIR` on an experiment's directory).
pub(crate) fn print_table(dir: &Path) -> Result<i32, Failure> {
    let rec = record::read(dir).map_err(|e| match e {
        record::RecordError::Missing(_) => Failure::invalid(e.to_string()),
        record::RecordError::Bad { .. } => Failure::other(e),
    })?;
    crate::out::out!("{}", pado_report::experiment::text(&rec.table()));
    if let Some(s) = &rec.stopped {
        outln!("stopped early: {s}");
    }
    if let Some(r) = &rec.restore {
        outln!(
            "restore: {}: {}{}",
            r.what,
            r.result,
            if r.ok {
                ""
            } else {
                " (FAILED: check the system by hand)"
            }
        );
    }
    Ok(exit::OK)
}

/// `arg` as the runs it stands for: an experiment's directory is its points' runs
/// in knob order (a search's highest step that held, a fixed load's run); anything
/// else is itself.
pub(crate) fn as_points(arg: &Path) -> Vec<std::path::PathBuf> {
    if !record::is_experiment_dir(arg) {
        return vec![arg.to_path_buf()];
    }
    match record::read(arg) {
        Ok(r) => r.point_runs(arg).into_iter().map(|(_, d)| d).collect(),
        // The compare itself then says what is wrong with the directory.
        Err(_) => vec![arg.to_path_buf()],
    }
}

/// For `pado trend DIR` on an experiment's directory: the trend's name and the
/// points' runs in knob order, each with its `knob=value` label; `None` when `arg`
/// is not an experiment's directory (it is a test's name).
pub(crate) fn trend_dirs(arg: &Path) -> Result<Option<TrendDirs>, Failure> {
    if !record::is_experiment_dir(arg) {
        return Ok(None);
    }
    let r = record::read(arg).map_err(Failure::other)?;
    let dirs = r
        .point_runs(arg)
        .into_iter()
        .map(|(v, d)| {
            (
                (r.knob.clone(), pado_scenario::experiment::value_text(v)),
                d,
            )
        })
        .collect();
    Ok(Some((format!("{} (experiment)", r.name), dirs)))
}

/// A trend's name and its runs, each with its label.
pub(crate) type TrendDirs = (String, Vec<((String, String), std::path::PathBuf)>);
