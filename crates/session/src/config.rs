//! What a run needs to start, typed and checked: the compiled scenario, where its
//! results go, how it runs, its share of a split test, and who watches it. The CLI
//! builds one from its flags; a library caller (a test, the dashboard) builds one
//! directly.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use pado_analysis::thresholds::Threshold;
use pado_engine::events::WindowLedger;
use pado_engine::executor::segment::Segment;
use pado_engine::trace::Observer;
use pado_engine::{RunPlan, StopState};
use pado_metrics::{SecondRecord, Totals};
use pado_results::StageMark;

/// Most worker threads a run may ask for: far more than cores on any machine, few
/// enough that starting them cannot fail.
pub const MAX_WORKERS: usize = 1024;

/// `workers` worker threads, if a run may have that many (`--workers`): from 1 to
/// [`MAX_WORKERS`]; the refusal says how many cores this machine allows.
pub fn check_workers(workers: usize) -> Result<(), crate::SessionError> {
    if (1..=MAX_WORKERS).contains(&workers) {
        return Ok(());
    }
    Err(crate::SessionError::Invalid(format!(
        "--workers {workers}: give 1 to {MAX_WORKERS} (one per core is best; this machine allows {})",
        pado_engine::allowed_cores()
    )))
}

/// Where a run's results go and what is written besides `summary.json`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Output {
    /// `--out`; `None`: a new directory under `pado-results/`.
    pub dir: Option<PathBuf>,
    /// Reuse a non-empty `--out` directory.
    pub overwrite: bool,
    /// Write report.html.
    pub html: bool,
    /// Machine outputs (`csv`, `junit`, `hdr`).
    pub exports: Vec<String>,
    /// Named time windows for the stage table.
    pub windows: Vec<StageMark>,
    /// No live progress.
    pub quiet: bool,
}

/// The scenario a run loads, as written: what the run reads beside its compiled
/// plan.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The scenario as written (events, observe endpoints, target).
    pub config: pado_scenario::Config,
    /// The file it came from, as messages name it.
    pub file: String,
    /// Its thresholds (the file's and the flags').
    pub thresholds: Vec<Threshold>,
    /// Notes from loading it, said as warnings when the run starts.
    pub notes: Vec<String>,
}

/// A run's part of a split test (`--segment`, `--start-at`, `--setup-vars`); the
/// default is the whole test, started now.
#[derive(Clone, Debug, Default)]
pub struct Share {
    /// Which share of the load this run sends.
    pub segment: Option<Segment>,
    /// The plan's fingerprint, which a merge checks every segment agrees on.
    pub plan_id: Option<String>,
    /// The agreed start: its wall-clock time and this machine's instant for it
    /// (already waited for, up to its lead, by the caller).
    pub start_at: Option<(SystemTime, Instant)>,
    /// The global setup's variables from elsewhere, one entry per plan variable.
    pub setup_vars: Option<Vec<Option<Vec<u8>>>>,
}

/// Records the fault windows a run's events open, so that a later pado can undo
/// one a killed run left open: made once the result directory exists, from the
/// run's name, its start (RFC 3339) and directory, and the events' target.
pub type LedgerFactory =
    Box<dyn FnOnce(&str, &str, &Path, Option<String>) -> Arc<dyn WindowLedger> + Send>;

/// What a run looks like before it starts, for whoever draws its progress.
#[derive(Clone, Debug, PartialEq)]
pub struct Outline {
    /// Planned length, s.
    pub planned_s: f64,
    /// The stages of its scenarios.
    pub stages: Vec<StageMark>,
    /// The open-model VU ceiling (`max_vus`), when the plan has one.
    pub vu_ceiling: Option<u32>,
    /// Whether it has thresholds to show the state of.
    pub has_thresholds: bool,
}

/// Someone who watches a run second by second on the aggregator's thread (the
/// CLI's progress line): it must return quickly, since the next second waits.
pub trait Watcher: Send {
    /// Once, before second 0.
    fn begin(&mut self, outline: &Outline);
    /// Each closed second, with the totals so far and how many thresholds fail.
    fn second(&mut self, r: &SecondRecord, totals: &Totals, thresholds_failing: usize);
    /// Once, when the load has ended (before the reports are written).
    fn finish(&mut self);
}

/// A run, ready to start.
pub struct RunConfig {
    /// The compiled plan (a split test's segment is applied by the session).
    pub plan: RunPlan,
    /// The scenario it was compiled from.
    pub scenario: Scenario,
    /// Where results go.
    pub output: Output,
    /// Worker threads (`None`: the cores available).
    pub workers: Option<usize>,
    /// Sees every exchange (`--http-debug`): the figures are then no measurement.
    pub observer: Option<Arc<dyn Observer>>,
    /// Judge the soak verdict (`--soak`).
    pub soak: bool,
    /// The run's share of a split test.
    pub share: Share,
    /// Live outputs: the file's `outputs:` and `--output` flags.
    pub outputs: Vec<pado_outputs::OutputSpec>,
    /// The raw per-request file, if asked.
    pub raw: Option<pado_outputs::raw::RawSpec>,
    /// The stop state Ctrl-C sets (shared with the caller's signal handler); the
    /// run's handle sets it too.
    pub stop: StopState,
    /// The progress line, if any.
    pub watcher: Option<Box<dyn Watcher>>,
    /// The fault-window ledger for the scenario's events, if any.
    pub ledger: Option<LedgerFactory>,
}

impl RunConfig {
    /// A run of `plan` (compiled from `scenario`) writing to `output`: the whole
    /// test, default workers, nobody watching.
    pub fn new(plan: RunPlan, scenario: Scenario, output: Output) -> RunConfig {
        RunConfig {
            plan,
            scenario,
            output,
            workers: None,
            observer: None,
            soak: false,
            share: Share::default(),
            outputs: Vec::new(),
            raw: None,
            stop: StopState::default(),
            watcher: None,
            ledger: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_from_one_to_the_most_are_allowed_and_no_other() {
        assert!(check_workers(1).is_ok() && check_workers(MAX_WORKERS).is_ok());
        for w in [0, MAX_WORKERS + 1] {
            let e = check_workers(w).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("--workers {w}: give 1 to 1024")),
                "{e}"
            );
        }
    }
}
