//! Reading a result directory into a [`LoadedRun`]: the timeline streamed once, and
//! the figures of a run pado did not finish writing made honest.

use pado_results::{ResultDir, RunMeta};

use super::{LoadedRun, ReportError};
use crate::timeline::RunFold;

/// Read a result directory, streaming its timeline (one second decoded at a time).
pub fn load(dir: &ResultDir) -> Result<LoadedRun, ReportError> {
    load_with_windows(dir, &[])
}

/// Read a result directory with extra, user-named time windows that get their own
/// rows in the stage table (e.g. `peak=30s..60s`), beside the executor's stages.
pub fn load_with_windows(
    dir: &ResultDir,
    windows: &[pado_results::StageMark],
) -> Result<LoadedRun, ReportError> {
    // Asked before run.json is read: a run that ends in between has rewritten it
    // with its real length, and reads as finished.
    let in_progress = dir.being_written();
    let mut meta = dir.read_meta()?;
    meta.stages.extend(windows.iter().cloned());
    let events = pado_results::events::read_events(dir.path())?;
    if !in_progress {
        // A window still on record once its run is over was never undone by it.
        let open = pado_results::open_faults::read_open_faults(dir.path())?;
        meta.warnings.extend(left_open_warnings(&open, &events));
    }
    let mut fold = RunFold::new(meta).with_events(events);
    let read = dir.for_each_second(|rec| {
        fold.add_second(rec);
        Ok(())
    })?;
    let mut run = fold.finish();
    run.in_progress = in_progress && run.meta.duration_s <= 0.0;
    recover_unfinished(&mut run.meta, &read, run.in_progress);
    read_the_rest(dir, run)
}

/// A run whose seconds were folded as they were written into `dir` (by a merge:
/// `fold` made from the run.json it writes, `read` what it wrote), completed from the
/// directory's other files: what [`load_with_windows`] gives, without reading the
/// timeline back. The fold's stages are kept, so windows it was made with (which
/// run.json does not hold) keep their rows in the stage table.
pub fn load_folded(
    dir: &ResultDir,
    fold: RunFold,
    read: &pado_results::TimelineRead,
) -> Result<LoadedRun, ReportError> {
    let mut run = fold.finish();
    // The run.json written last (its real length), with the fold's stages.
    let stages = std::mem::take(&mut run.meta.stages);
    run.meta = dir.read_meta()?;
    run.meta.stages = stages;
    recover_unfinished(&mut run.meta, read, false);
    read_the_rest(dir, run)
}

/// What a run that died with fault windows open left behind, in words: each window
/// still on record (its undo never ran), and each one a later pado undid
/// (`left_open` in `events.jsonl`), with when and how that went.
pub(crate) fn left_open_warnings(
    open: &[pado_results::open_faults::OpenWindow],
    events: &[pado_results::events::EventRecord],
) -> Vec<String> {
    let mut out = Vec::new();
    for w in open {
        out.push(format!(
            "event `{}`: its fault window was still open when the run died ({:.1} s into the run, at {}): its undo never ran, so the fault stayed in place; the next `pado run` or `pado events undo-open` by the same user runs it",
            w.name,
            w.started_ms as f64 / 1000.0,
            w.opened_at
        ));
    }
    for e in events {
        let Some(l) = &e.left_open else { continue };
        let how = match e.undo.as_ref().map(|u| u.outcome) {
            Some(pado_results::events::Outcome::Ok) => "it succeeded".to_string(),
            Some(o) => format!(
                "it did not succeed ({}): check the target",
                serde_json::to_value(o)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default()
            ),
            None => "with no outcome recorded".into(),
        };
        out.push(format!(
            "event `{}`: its fault window was left open by a killed run (opened {:.1} s into the run); a later `{}` ran its undo at {}, and {how}",
            e.name,
            e.start_s(),
            l.undone_by,
            l.undone_at
        ));
    }
    out
}

/// The target's metrics, the failure samples and the generators of a loaded timeline.
fn read_the_rest(dir: &ResultDir, mut run: LoadedRun) -> Result<LoadedRun, ReportError> {
    run.observations = pado_results::read_observations(dir.path(), &|name: &str| {
        pado_analysis::attribution::wanted(name) || pado_analysis::soak::wanted(name)
    })?;
    run.totals.failures = dir.read_failures()?;
    run.generators = dir.read_generators()?;
    Ok(run)
}

/// Make the figures of a run that pado did not finish writing honest.
///
/// `run.json` is written when the run starts with `duration_s: 0` and rewritten with
/// the real length when it ends; a 0 that stayed means pado was killed or crashed.
/// Every rate is "per second of the run", so the length becomes the seconds the
/// timeline holds (each of them complete: a second is written only once every worker
/// has reported past it), and the run is marked interrupted with a warning saying so.
/// A half-written last timeline line (left out by the reader) is said too. A run
/// still writing the directory (`in_progress`) is not cut short: its length is the
/// seconds so far, and the warning says it is still going.
fn recover_unfinished(meta: &mut RunMeta, read: &pado_results::TimelineRead, in_progress: bool) {
    let mut said = Vec::new();
    if meta.duration_s <= 0.0 && in_progress {
        let seconds = read.last_t.map_or(0, |t| t.saturating_add(1));
        meta.duration_s = f64::from(seconds);
        said.push(match meta.planned_s {
            Some(p) => format!(
                "the run is still going: these figures cover its first {} of {} planned; `pado report` again when it ends for the final result",
                pado_base::units::duration(f64::from(seconds)),
                pado_base::units::duration(p)
            ),
            None => format!(
                "the run is still going: these figures cover its first {}; `pado report` again when it ends for the final result",
                pado_base::units::duration(f64::from(seconds))
            ),
        });
    } else if meta.duration_s <= 0.0 {
        let seconds = read.last_t.map_or(0, |t| t.saturating_add(1));
        meta.duration_s = f64::from(seconds);
        meta.interrupted = true;
        said.push(format!(
            "the run was cut short at {seconds} s (pado did not finish writing it: killed or crashed); figures cover the seconds that were written"
        ));
    }
    // A run still going may be writing its last line as it is read: not a loss.
    if let Some(line) = read.torn_line.filter(|_| !in_progress) {
        said.push(format!(
            "timeline.jsonl line {line} was only half written and is left out (the second it held is missing from the figures)"
        ));
    }
    // First: every figure below depends on it.
    meta.warnings.splice(0..0, said);
}
