//! Merge-and-report: the segments of a split test (from `pado merge`, the agents'
//! coordinator, `pado k8s run`) into one result directory with its reports, as
//! `pado report` would write them. The merge itself is `pado_results::merge`.

use std::path::{Path, PathBuf};

use pado_results::merge::{self, MergeError};
use pado_results::{ResultDir, StageMark};

use crate::reports::{write_loaded_reports, Written};
use crate::SessionError;

/// What to merge and what to write.
#[derive(Clone, Copy, Debug)]
pub struct MergeSpec<'a> {
    /// The segments' result directories.
    pub dirs: &'a [PathBuf],
    /// The merged result directory.
    pub out: &'a Path,
    /// Merge even when segments are missing or cut short.
    pub allow_partial: bool,
    /// Reuse a non-empty `out`.
    pub overwrite: bool,
    /// Write report.html.
    pub html: bool,
    /// Extra files beside the summary (`csv`, `junit`, `hdr`).
    pub exports: &'a [String],
    /// Named time windows with rows of their own in the stage table.
    pub windows: &'a [StageMark],
}

/// A merge error in the user's terms: directories that are not one test's
/// segments are bad input; a missing or cut-short segment is a failed test.
fn merge_error(e: MergeError) -> SessionError {
    match e {
        MergeError::Incomplete(_) | MergeError::Result(_) => SessionError::io(e),
        MergeError::NotASegment(_)
        | MergeError::DifferentTests { .. }
        | MergeError::DuplicateSegment { .. }
        | MergeError::BadStart { .. }
        | MergeError::NotARegularFile { .. } => SessionError::invalid(e.to_string()),
    }
}

/// Merge the segments into `spec.out` and write its reports. Problems of a partial
/// merge are said as warnings first; nothing is written when segments are missing
/// and a partial result was not asked for.
pub fn merge_and_report(spec: &MergeSpec<'_>) -> Result<Written, SessionError> {
    if spec.dirs.iter().any(|d| d == spec.out) {
        return Err(SessionError::invalid(format!(
            "--out {}: is one of the directories to merge; choose another",
            spec.out.display()
        )));
    }
    let plan = merge::plan(spec.dirs).map_err(merge_error)?;
    if !spec.allow_partial {
        plan.require_complete().map_err(merge_error)?;
    }
    for p in plan.problems() {
        crate::notice::warning(p);
    }
    let out = ResultDir::claim(spec.out, spec.overwrite)
        .map_err(|e| SessionError::invalid(e.to_string()))?;
    // The report folds the merged seconds as they are written, rather than reading
    // the merged timeline back: `pado report` on the directory gives the same. (On
    // a thread of its own it cost more CPU than it saved wall time on two cores.)
    let events = plan.events().map_err(merge_error)?;
    let mut meta = plan.meta();
    meta.stages.extend(spec.windows.iter().cloned());
    let mut fold = pado_report::RunFold::new(meta).with_events(events);
    let outcome = plan
        .write_each(&out, |rec| fold.add_second(rec))
        .map_err(merge_error)?;
    let read = pado_results::TimelineRead {
        seconds: outcome.seconds as usize,
        last_t: outcome.seconds.checked_sub(1),
        torn_line: None,
    };
    let run = pado_report::load_folded(&out, fold, &read).map_err(SessionError::io)?;
    write_loaded_reports(&out, &run, spec.html, spec.exports)
}
