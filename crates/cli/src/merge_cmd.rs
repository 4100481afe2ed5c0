//! `pado merge`: the segments of a split test into one result directory, then the
//! same reports and exit code as `pado report` on it. Wiring only: the merge is
//! `pado_results::merge`, the reports `pado_report`.

use std::path::{Path, PathBuf};

use pado_results::merge::{self, MergeError};
use pado_results::ResultDir;

use crate::exit;

/// The flags of `pado merge`.
pub(crate) struct MergeArgs<'a> {
    pub dirs: &'a [PathBuf],
    pub out: &'a Path,
    pub allow_partial: bool,
    pub overwrite: bool,
    pub html: bool,
    pub quiet: bool,
    /// Extra files to write beside the summary (`csv`, `junit`, `hdr`), as `pado run
    /// --export` writes them.
    pub exports: &'a [String],
    /// Named time windows with rows of their own in the stage table.
    pub windows: &'a [pado_results::StageMark],
    /// Where the merged run is recorded.
    pub history: &'a crate::history_cmd::Recorder,
}

/// Exit code for a merge error: directories that are not one test's segments are
/// bad input (2); a missing or cut-short segment is a failed test (1).
fn failure(e: MergeError) -> exit::Failure {
    match e {
        MergeError::Incomplete(_) | MergeError::Result(_) => exit::Failure::other(e),
        MergeError::NotASegment(_)
        | MergeError::DifferentTests { .. }
        | MergeError::DuplicateSegment { .. }
        | MergeError::BadStart { .. }
        | MergeError::NotARegularFile { .. } => exit::Failure::invalid(e.to_string()),
    }
}

/// Merge, write the reports, print the summary; exit 99 when a threshold failed on
/// the merged data.
pub(crate) fn merge(a: &MergeArgs<'_>) -> Result<i32, exit::Failure> {
    if a.dirs.iter().any(|d| d == a.out) {
        return Err(exit::Failure::invalid(format!(
            "--out {}: is one of the directories to merge; choose another",
            a.out.display()
        )));
    }
    let plan = merge::plan(a.dirs).map_err(failure)?;
    if !a.allow_partial {
        // Nothing is written: a partial result must be asked for.
        plan.require_complete().map_err(failure)?;
    }
    for p in plan.problems() {
        eprintln!("warning: {p}");
    }
    let out =
        ResultDir::claim(a.out, a.overwrite).map_err(|e| exit::Failure::invalid(e.to_string()))?;
    // The report folds the merged seconds as they are written, rather than reading
    // the merged timeline back: `pado report` on the directory gives the same. (On
    // a thread of its own it cost more CPU than it saved wall time on two cores.)
    let events = plan.events().map_err(failure)?;
    let mut meta = plan.meta();
    meta.stages.extend(a.windows.iter().cloned());
    let mut fold = pado_report::RunFold::new(meta).with_events(events);
    let outcome = plan
        .write_each(&out, |rec| fold.add_second(rec))
        .map_err(failure)?;
    let read = pado_results::TimelineRead {
        seconds: outcome.seconds as usize,
        last_t: outcome.seconds.checked_sub(1),
        torn_line: None,
    };
    let run = pado_report::load_folded(&out, fold, &read).map_err(exit::Failure::other)?;
    let written = crate::write_loaded_reports(&out, &run, a.html, a.exports)?;
    let code = crate::print_and_judge(written, a.quiet);
    if let Some(id) = a.history.record(out.path(), pado_history::Kind::Merge) {
        if !a.quiet {
            crate::out::outln!("  history: run {id}");
        }
    }
    code
}
