//! How long a merged timeline may be: what the segments' plans allow, so a corrupt or
//! hostile directory (a second at `t = 4000000000`, a segment that claims to have
//! started in 2099) is refused with its file, line and field instead of making the
//! merge write billions of empty seconds until the disk is full.
//!
//! A segment's seconds run from its second 0 to its planned end (`planned_s` in
//! `run.json`), then the graceful stop lets in-flight iterations finish (30 s unless
//! a scenario sets `graceful_stop`). [`PAST_PLAN_S`] is the room given after the
//! planned end for that and a margin; the same bound holds for where a segment's
//! second 0 falls on the merged timeline when the segments are aligned by their
//! wall-clock starts.

use std::path::Path;

use super::{align::Alignment, MergeError, Source};
use crate::result_dir::{ResultError, RUN_FILE, TIMELINE_FILE};

/// Seconds a segment's timeline may go on past its planned end: the graceful stop,
/// a teardown and a generous margin. A timeline an hour past its plan is not a run
/// of that plan.
pub(crate) const PAST_PLAN_S: f64 = 3600.0;

/// The longest plan a merge accepts when `run.json` gives none that can be used
/// (older directories record no `planned_s`): 31 days.
const NO_PLAN_S: f64 = 31.0 * 24.0 * 3600.0;

/// The test's planned length, seconds, as the segments record it: their `planned_s`
/// (the same for every segment of one test; the largest is taken), else the end of
/// their last executor stage, else the longest of them that finished.
fn planned(sources: &[Source]) -> f64 {
    let usable = |v: f64| v.is_finite() && v > 0.0;
    let recorded = sources
        .iter()
        .filter_map(|s| s.meta.planned_s)
        .filter(|v| usable(*v))
        .fold(0.0f64, f64::max);
    if recorded > 0.0 {
        return recorded.min(NO_PLAN_S);
    }
    let stages = sources
        .iter()
        .flat_map(|s| s.meta.stages.iter())
        .filter(|m| m.is_executor_stage() && usable(m.end_s))
        .map(|m| m.end_s)
        .fold(0.0f64, f64::max);
    if stages > 0.0 {
        return stages.min(NO_PLAN_S);
    }
    NO_PLAN_S
}

/// The number of seconds a merged timeline of `sources` may hold.
pub(crate) fn limit(sources: &[Source]) -> u32 {
    (planned(sources) + PAST_PLAN_S).ceil() as u32
}

/// Refuse sources whose seconds, placed on the merged timeline by `alignment`, go
/// past what the plan allows: the segment's start (its offset) or its last second.
pub(crate) fn check(sources: &[Source], alignment: &Alignment) -> Result<(), MergeError> {
    let limit = limit(sources);
    let planned = planned(sources);
    let allowed = format!(
        "the test was planned for {} s, and a segment's seconds may run {} s past that (the graceful stop and a margin)",
        planned.round() as u64,
        PAST_PLAN_S as u64
    );
    for (s, off) in sources.iter().zip(&alignment.offsets) {
        if *off >= limit {
            let file = s.path.join(RUN_FILE);
            return Err(MergeError::Result(ResultError::Format {
                line: line_of(&file, "\"started_at\""),
                path: file,
                message: format!(
                    "field `started_at`: {} is {} s after the earliest segment's start; segments of one test start together, and {allowed}",
                    s.meta.started_at,
                    off
                ),
            }));
        }
        if s.seconds.saturating_add(*off) > limit {
            let last_t = s.seconds.saturating_sub(1);
            let file = s.path.join(TIMELINE_FILE);
            return Err(MergeError::Result(ResultError::Format {
                line: last_line(&file),
                path: file,
                message: format!(
                    "field `t`: second {last_t}{} is past the end of the test: {allowed}",
                    if *off > 0 {
                        format!(
                            " (second {} of the merged run)",
                            u64::from(last_t) + u64::from(*off)
                        )
                    } else {
                        String::new()
                    }
                ),
            }));
        }
    }
    Ok(())
}

/// 1-based line of the first line of `file` holding `needle` (1 when unreadable): for
/// an error that names where the bad field is.
fn line_of(file: &Path, needle: &str) -> usize {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|t| t.lines().position(|l| l.contains(needle)))
        .map_or(1, |i| i + 1)
}

/// 1-based number of the last line that holds something (counted only when an error
/// names it: the usual path reads a timeline's end alone).
fn last_line(file: &Path) -> usize {
    use std::io::BufRead;
    let Ok(f) = std::fs::File::open(file) else {
        return 0;
    };
    let mut last = 0;
    let mut buf = Vec::new();
    let mut rd = std::io::BufReader::new(f);
    let mut no = 0;
    loop {
        buf.clear();
        match rd.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => return last,
            Ok(_) => {
                no += 1;
                if !buf.iter().all(u8::is_ascii_whitespace) {
                    last = no;
                }
            }
        }
    }
}
