//! A change of the whole test's load as each generator's share of it, split by
//! segment exactly as planned load is (`pado_engine::executor::segment`):
//!
//! - closed model: a generator's VUs are numbered by their rank within its
//!   segment, and segment `i` runs the whole test's VUs the stripe gives it, in
//!   order. The whole test's first `V` VUs are therefore, on segment `i`, its first
//!   `count_before(V)`: that is the cap it gets, and the caps add up to `V`;
//! - open model: each segment runs the arrivals the stripe gives it, so one factor
//!   on every segment multiplies the whole schedule by it. A rate in arrivals a
//!   second becomes the factor over the whole plan's rate at that moment (a
//!   segment's own rate over one second is its share rounded, which would make
//!   the generators' factors differ);
//! - pause, resume, stop, skipping a stage and a hold reach every generator as
//!   they are.

use std::time::Duration;

use pado_engine::executor::segment::Segment;
use pado_engine::{RunPlan, MAX_RATE_FACTOR};

use crate::{ControlCommand, ControlError};

/// `cmd` for the whole test as each segment's command, in segment order.
/// `planned_rate` is the whole plan's arrivals a second at this moment (asked only
/// for `set_rate`).
pub fn split_command(
    cmd: &ControlCommand,
    segments: &[Segment],
    plan: &RunPlan,
    planned_rate: impl FnOnce() -> f64,
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
            Ok(segments
                .iter()
                .map(|s| ControlCommand::SetVus {
                    vus: s.count_before(vus),
                    ramp_s,
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
