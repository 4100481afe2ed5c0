//! What the plan says at a moment of a steered run: the stage running (on the
//! plan's clock, which holds and skips move), the VUs and arrivals it plans
//! there, where a skip goes, and the stage marks on the real clock for the result
//! directory, so that reports of a held or skipped run line up with its seconds.

use std::time::Duration;

use pado_engine::executor::Schedule;
use pado_engine::{ClockMap, RunPlan};
use pado_results::StageMark;

/// The stage mark running at plan time `at` (the earliest-ending one when several
/// scenarios run side by side).
pub(crate) fn stage_at(stages: &[StageMark], at: Duration) -> Option<&StageMark> {
    let t = at.as_secs_f64();
    stages
        .iter()
        .filter(|m| m.start_s <= t && t < m.end_s)
        .min_by(|a, b| a.end_s.total_cmp(&b.end_s))
}

/// Where `next_stage` at plan time `at` goes: the end of the stage running, when
/// another stage follows it. The error says why there is nowhere to go.
pub(crate) fn next_stage_start(stages: &[StageMark], at: Duration) -> Result<Duration, String> {
    if stages.is_empty() {
        return Err(
            "the plan has no stages to skip (its executor runs iterations, not a timetable)".into(),
        );
    }
    let Some(m) = stage_at(stages, at) else {
        return Err("no stage is running at this moment of the plan".into());
    };
    let later = stages.iter().any(|o| o.end_s > m.end_s + 1e-9);
    if !later {
        return Err(format!(
            "`{}` is the last stage: there is no next one (`stop` ends the run)",
            m.label
        ));
    }
    Ok(Duration::from_secs_f64(m.end_s))
}

/// Closed-model VUs the plan has active at plan time `at`, the most over its
/// closed scenarios (an externally controlled one: its starting VUs).
pub(crate) fn planned_vus(plan: &RunPlan, at: Duration) -> u64 {
    plan.scenarios
        .iter()
        .filter(|s| !s.executor.kind().is_open_model())
        .map(|s| {
            if let Some(v) = s.executor.steered_start() {
                return v;
            }
            let Schedule::Closed(c) = s.executor.schedule() else {
                return 0;
            };
            let t = at.saturating_sub(s.start_time);
            if at < s.start_time {
                return 0;
            }
            c.vus
                .iter()
                .filter(|ws| ws.iter().any(|w| w.start <= t && t < w.end))
                .count() as u64
        })
        .max()
        .unwrap_or(0)
}

/// Arrivals a second the plan has at plan time `at`, over every open scenario.
pub(crate) fn planned_rate(plan: &RunPlan, at: Duration) -> f64 {
    plan.scenarios
        .iter()
        .filter_map(|s| match s.executor.schedule() {
            Schedule::Open(o) if at >= s.start_time => {
                let whole = o.rate_at(at - s.start_time);
                Some(match &o.segment {
                    Some(p) => whole * p.segment.share(),
                    None => whole,
                })
            }
            _ => None,
        })
        .sum()
}

/// The stage marks (plan times) on the real clock of a run whose plan was held or
/// skipped: each stage from when the plan reached its start to when it reached its
/// end. A stage skipped whole is left out (it never ran).
pub(crate) fn real_marks(marks: &[StageMark], clock: &ClockMap) -> Vec<StageMark> {
    if clock.is_identity() {
        return marks.to_vec();
    }
    let real = |s: f64| {
        clock
            .real_at(Duration::from_secs_f64(s.max(0.0)))
            .as_secs_f64()
    };
    marks
        .iter()
        .filter_map(|m| {
            let (start_s, end_s) = (real(m.start_s), real(m.end_s));
            (end_s > start_s).then(|| StageMark {
                start_s: round_ms(start_s),
                end_s: round_ms(end_s),
                ..m.clone()
            })
        })
        .collect()
}

fn round_ms(s: f64) -> f64 {
    (s * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(index: usize, start_s: f64, end_s: f64, label: &str) -> StageMark {
        StageMark {
            scenario: "s".into(),
            index,
            start_s,
            end_s,
            label: label.into(),
            target: 1.0,
            from: Some(1.0),
        }
    }

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn a_skip_goes_to_the_end_of_the_stage_running_and_not_past_the_last() {
        let marks = [
            mark(0, 0.0, 2.0, "hold 1 VU"),
            mark(1, 2.0, 4.0, "hold 3 VUs"),
        ];
        assert_eq!(next_stage_start(&marks, secs(0.5)), Ok(secs(2.0)));
        let e = next_stage_start(&marks, secs(2.5)).unwrap_err();
        assert!(e.contains("`hold 3 VUs` is the last stage"), "{e}");
        assert!(next_stage_start(&[], secs(1.0))
            .unwrap_err()
            .contains("no stages"));
    }

    #[test]
    fn marks_of_a_held_run_move_to_the_real_clock() {
        let marks = [mark(0, 0.0, 2.0, "a"), mark(1, 2.0, 4.0, "b")];
        let mut clock = ClockMap::default();
        clock.hold(secs(1.0), secs(2.0)).unwrap();
        let real = real_marks(&marks, &clock);
        assert_eq!((real[0].start_s, real[0].end_s), (0.0, 4.0));
        assert_eq!((real[1].start_s, real[1].end_s), (4.0, 6.0));
        // A stage skipped whole is left out; the one skipped into starts at the skip.
        let marks = [
            mark(0, 0.0, 2.0, "a"),
            mark(1, 2.0, 4.0, "b"),
            mark(2, 4.0, 6.0, "c"),
        ];
        let mut clock = ClockMap::default();
        clock.skip_to(secs(1.0), secs(4.0)).unwrap();
        let real = real_marks(&marks, &clock);
        let labels: Vec<_> = real
            .iter()
            .map(|m| (m.label.as_str(), m.start_s, m.end_s))
            .collect();
        assert_eq!(labels, [("a", 0.0, 1.0), ("c", 1.0, 3.0)]);
    }
}
