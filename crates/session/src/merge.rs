//! Merge-and-report: the segments of a split test (from `pado merge`, the agents'
//! coordinator, `pado k8s run`) into one result directory with its reports, as
//! `pado report` would write them. The merge itself is `pado_results::merge`.

use std::path::{Path, PathBuf};

use pado_results::events::{EventRecord, EventsWriter, EVENTS_FILE};
use pado_results::merge::{self, MergeError};
use pado_results::{ResultDir, StageMark};

use crate::control::CONTROL_KIND;

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
    /// The changes of the load a coordinator made while the test ran, once each in
    /// the whole test's numbers ([`crate::DistributedRun::changes`]): they replace
    /// the generators' `control` events, each of which is one generator's copy of
    /// a change in its segment's numbers. `None` (`pado merge` of directories):
    /// the events are segment 0's, as they are.
    pub control: Option<&'a [EventRecord]>,
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
    let mut events = plan.events().map_err(merge_error)?;
    if let Some(control) = spec.control {
        events = with_control(events, control);
    }
    let mut meta = plan.meta();
    meta.stages.extend(spec.windows.iter().cloned());
    let mut fold = pado_report::RunFold::new(meta).with_events(events.clone());
    let outcome = plan
        .write_each(&out, |rec| fold.add_second(rec))
        .map_err(merge_error)?;
    if spec.control.is_some() {
        write_events(out.path(), &events).map_err(SessionError::io)?;
    }
    let read = pado_results::TimelineRead {
        seconds: outcome.seconds as usize,
        last_t: outcome.seconds.checked_sub(1),
        torn_line: None,
    };
    let run = pado_report::load_folded(&out, fold, &read).map_err(SessionError::io)?;
    write_loaded_reports(&out, &run, spec.html, spec.exports)
}

/// The generators' events without their `control` copies, with the coordinator's
/// changes in their place, in order of time.
pub fn with_control(events: Vec<EventRecord>, control: &[EventRecord]) -> Vec<EventRecord> {
    let mut out: Vec<EventRecord> = events
        .into_iter()
        .filter(|e| e.kind != CONTROL_KIND)
        .chain(control.iter().cloned())
        .collect();
    out.sort_by_key(|e| e.planned_ms);
    out
}

/// `events.jsonl` of the merged directory as `events` (none: no file).
fn write_events(dir: &Path, events: &[EventRecord]) -> Result<(), pado_results::ResultError> {
    if events.is_empty() {
        let path = dir.join(EVENTS_FILE);
        return match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(pado_results::ResultError::Io { path, source: e })
            }
            _ => Ok(()),
        };
    }
    let mut w = EventsWriter::create(dir)?;
    for e in events {
        w.write(e)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, name: &str, ms: u64) -> EventRecord {
        EventRecord {
            name: name.into(),
            kind: kind.into(),
            planned_ms: ms,
            started_ms: Some(ms),
            window_end_ms: None,
            required: false,
            mark: Some(name.into()),
            action: None,
            undo: None,
            expect: Default::default(),
            left_open: None,
        }
    }

    #[test]
    fn the_coordinator_s_changes_replace_the_generators_copies_once_each() {
        // Segment 0's events: a planned mark and its copy of one change, in its
        // segment's numbers.
        let generators = vec![
            event("mark", "배포", 5000),
            event(CONTROL_KIND, "active VUs 5 → 3", 3004),
        ];
        let coordinator = [event(CONTROL_KIND, "active VUs 10 → 6", 3000)];
        let merged = with_control(generators.clone(), &coordinator);
        let names: Vec<(&str, u64)> = merged
            .iter()
            .map(|e| (e.name.as_str(), e.planned_ms))
            .collect();
        assert_eq!(names, vec![("active VUs 10 → 6", 3000), ("배포", 5000)]);
        // No change made: the copies go, the planned events stay.
        let none = with_control(generators, &[]);
        assert_eq!(none.len(), 1);
        assert_eq!(none[0].name, "배포");
    }
}
