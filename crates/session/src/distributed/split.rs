//! A change of the whole test's load as each generator's share of it, split by
//! segment exactly as planned load is (`pado_engine::executor::segment`):
//!
//! - closed model: a generator's VUs are numbered by their rank within its
//!   segment, and segment `i` runs the whole test's VUs the stripe gives it, in
//!   order. The whole test's first `V` VUs are therefore, on segment `i`, its first
//!   `count_before(V)`: that is the cap it gets, and the caps add up to `V`. A
//!   ramp keeps that at every moment: each generator follows the whole test's
//!   ramp and caps its VUs at `count_before` of the whole test's VUs then
//!   ([`segment_vus_at`]), rather than ramping its own share linearly (whose
//!   roundings would add up to a VU more or less per generator mid-ramp);
//! - open model: each segment runs the arrivals the stripe gives it, so one factor
//!   on every segment multiplies the whole schedule by it. A rate in arrivals a
//!   second becomes the factor over the whole plan's rate at that moment (a
//!   segment's own rate over one second is its share rounded, which would make
//!   the generators' factors differ);
//! - pause, resume, stop, skipping a stage and a hold reach every generator as
//!   they are.

use std::time::Duration;

use pado_engine::executor::segment::Segment;
use pado_engine::{Ramp, RunPlan, MAX_RATE_FACTOR};

use crate::{ControlCommand, ControlError};

/// `cmd` for the whole test as each segment's command, in segment order.
/// `planned_rate` is the whole plan's arrivals a second at this moment (asked only
/// for `set_rate`); `current_vus` the whole test's VUs now (asked only for a
/// ramped `set_vus`: where the ramp starts).
pub fn split_command(
    cmd: &ControlCommand,
    segments: &[Segment],
    plan: &RunPlan,
    planned_rate: impl FnOnce() -> f64,
    current_vus: impl FnOnce() -> u64,
) -> Result<Vec<ControlCommand>, ControlError> {
    let same = || vec![cmd.clone(); segments.len()];
    match *cmd {
        ControlCommand::SetVus { vus, ramp_s } => {
            let max = closed_max_vus(plan).ok_or_else(|| {
                ControlError::NotApplicable(
                    "the test has no closed-model scenario (VUs are set by its arrival rate)"
                        .into(),
                )
            })?;
            if vus > max {
                return Err(ControlError::AboveMax { asked: vus, max });
            }
            // A ramp: every generator follows the whole test's ramp and runs its
            // share of each moment's VUs (see [`segment_vus_at`]); at once, its
            // share of the target.
            let ramped = ramp_s > 0.0 && ramp_s.is_finite();
            let from = if ramped { current_vus() } else { 0 };
            Ok(segments
                .iter()
                .map(|s| {
                    if ramped {
                        ControlCommand::SetSegmentVus {
                            vus: s.count_before(vus),
                            ramp_s,
                            test_from: from.min(max),
                            test_to: vus,
                        }
                    } else {
                        ControlCommand::SetVus {
                            vus: s.count_before(vus),
                            ramp_s,
                        }
                    }
                })
                .collect())
        }
        ControlCommand::SetRate { per_s, ramp_s } => {
            if !per_s.is_finite() || per_s < 0.0 {
                return Err(ControlError::BadRate(per_s));
            }
            if !has_open_model(plan) {
                return Err(ControlError::NotApplicable(
                    "the test has no open-model scenario (its load is set by VUs)".into(),
                ));
            }
            let planned = planned_rate();
            if planned <= 0.0 {
                return Err(ControlError::NotApplicable(
                    "no arrivals are planned at this moment: set a factor instead".into(),
                ));
            }
            let factor = (per_s / planned).min(MAX_RATE_FACTOR);
            Ok(vec![
                ControlCommand::SetRateFactor { factor, ramp_s };
                segments.len()
            ])
        }
        ControlCommand::SetRateFactor { factor, .. } => {
            if !factor.is_finite() || !(0.0..=MAX_RATE_FACTOR).contains(&factor) {
                return Err(ControlError::BadRate(factor));
            }
            Ok(same())
        }
        ControlCommand::SetSegmentVus { .. } => Err(ControlError::NotApplicable(
            "set_segment_vus is what a coordinator sends its generators: ask for set_vus".into(),
        )),
        ControlCommand::Pause
        | ControlCommand::Resume
        | ControlCommand::Stop
        | ControlCommand::NextStage
        | ControlCommand::Hold { .. } => Ok(same()),
    }
}

/// The most VUs of any closed-model scenario of the whole test, if it has one.
pub fn closed_max_vus(plan: &RunPlan) -> Option<u64> {
    plan.scenarios
        .iter()
        .filter(|s| !s.executor.kind().is_open_model())
        .map(|s| u64::from(s.executor.max_vus()))
        .max()
}

fn has_open_model(plan: &RunPlan) -> bool {
    plan.scenarios
        .iter()
        .any(|s| s.executor.kind().is_open_model())
}

/// Arrivals a second the whole plan has at plan time `at` (its clock: holds and
/// skips taken into account), over every open-model scenario: what a rate asked
/// for is a factor of, as a single run's handle reckons it.
pub fn planned_rate_at(plan: &RunPlan, at: Duration) -> f64 {
    crate::plan_now::planned_rate(plan, at)
}

/// The whole test's VUs `elapsed` into a ramp from `from` to `to` over `length`,
/// rounded as a single run's ramp rounds them ([`Ramp::vus_at`]).
pub fn test_vus_at(from: u64, to: u64, length: Duration, elapsed: Duration) -> u64 {
    let start = std::time::Instant::now();
    Ramp {
        from: from as f64,
        to: to as f64,
        start,
        length,
    }
    .vus_at(start + elapsed)
}

/// Segment `segment`'s VUs `elapsed` into the whole test's ramp from `from` to
/// `to` over `length`: its VUs among the whole test's first [`test_vus_at`], so
/// the segments' VUs add up to the whole test's at every moment.
pub fn segment_vus_at(
    segment: &Segment,
    from: u64,
    to: u64,
    length: Duration,
    elapsed: Duration,
) -> u64 {
    segment.count_before(test_vus_at(from, to, length, elapsed))
}
