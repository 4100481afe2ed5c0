//! Fault windows a killed run left open, the command line's part: the recovery
//! before a run and `pado events undo-open`, printed. The ledger and the recovery
//! themselves (which records, whose process is gone, running the undo, recording
//! it in the killed run's `events.jsonl`) are [`pado_session::open_faults`]'s.

use pado_session::open_faults::recover;
pub(crate) use pado_session::open_faults::{state_dir, RunLedger};

use crate::out::outln;

/// Before a run: the windows killed runs left open are undone first (their fault
/// would skew this run too), said on stderr. `run` false (a job's run on an agent,
/// which refuses commands) only says what was found.
pub(crate) fn recover_before_run(run: bool) {
    let Some(dir) = state_dir() else {
        return;
    };
    for l in recover(&dir, "pado run", run).lines {
        eprintln!("{l}");
    }
}

/// `pado events undo-open`: the same recovery on its own; exit 1 when an undo
/// failed, could not run, or a record was left alone as unsafe.
pub(crate) fn undo_open_cmd() -> Result<i32, crate::exit::Failure> {
    let Some(dir) = state_dir() else {
        return Err(crate::exit::Failure::invalid(
            "neither XDG_STATE_HOME nor HOME is set: there is no state directory to look in",
        ));
    };
    let r = recover(&dir, "pado events undo-open", true);
    for l in &r.lines {
        outln!("{l}");
    }
    if r.lines.is_empty() {
        outln!(
            "no fault window left open by a killed run (looked in {})",
            dir.display()
        );
    }
    Ok(if r.failed + r.refused > 0 {
        crate::exit::ERROR
    } else {
        crate::exit::OK
    })
}
