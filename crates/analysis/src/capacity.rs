//! The decisions of `pado find-capacity`'s breakpoint search, apart from running
//! anything: step the arrival rate up by a factor (the last step exactly at the
//! maximum), stop at the first rate that breaks the SLA, bisect between the last
//! rate that held and the first that broke, and say which of four things happened.
//! Only [`Outcome::Found`] is a capacity; the others say why there is none, so that
//! the command never calls "the highest rate tried" a breakpoint.
//!
//! The caller supplies "try this rate" as a closure (the CLI runs a full load test
//! per step); tests supply a planted capacity.

use serde::Serialize;

/// What the search may try: validated by [`SearchPlan::new`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SearchPlan {
    start: f64,
    factor: f64,
    max: f64,
    refine: u32,
}

/// Why a search plan cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// The start or maximum rate is not a positive finite number.
    #[error("the {0} rate must be a finite number above 0")]
    Rate(&'static str),
    /// The step factor would not increase the rate.
    #[error("the step factor must be a finite number above 1")]
    Factor,
    /// Nothing between the start and the maximum to try.
    #[error("the start rate ({start}/s) is above the maximum rate ({max}/s)")]
    StartAboveMax {
        /// Start rate.
        start: f64,
        /// Maximum rate.
        max: f64,
    },
}

impl SearchPlan {
    /// Rates from `start`, ×`factor` per step, never above `max`, then `refine`
    /// bisection rounds after the first break.
    pub fn new(start: f64, factor: f64, max: f64, refine: u32) -> Result<Self, PlanError> {
        if !(start.is_finite() && start > 0.0) {
            return Err(PlanError::Rate("start"));
        }
        if !(max.is_finite() && max > 0.0) {
            return Err(PlanError::Rate("maximum"));
        }
        if !(factor.is_finite() && factor > 1.0) {
            return Err(PlanError::Factor);
        }
        if start > max {
            return Err(PlanError::StartAboveMax { start, max });
        }
        Ok(SearchPlan {
            start,
            factor,
            max,
            refine,
        })
    }
}

/// How one tried rate went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepVerdict {
    /// The SLA held.
    Held,
    /// The SLA broke.
    Broke,
    /// The step was stopped before its end (Ctrl-C, an aborting threshold), or the
    /// search was asked to stop: it says nothing about the rate.
    Interrupted,
}

/// How the search ended.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// The SLA held at `capacity` and broke at `broke_at` (the closest pair the
    /// refinement reached): a capacity.
    Found {
        /// Highest rate that held.
        capacity: f64,
        /// Lowest rate that broke.
        broke_at: f64,
    },
    /// Every rate up to and including `max` held: the capacity is above `max`.
    NoBreakUpToMax {
        /// The maximum rate, which held.
        max: f64,
    },
    /// The search stopped during step `step` (1-based), at `rate`.
    Interrupted {
        /// The step that was stopped.
        step: usize,
        /// Its rate.
        rate: f64,
        /// The highest rate that held before, if any (not a capacity).
        highest_held: Option<f64>,
        /// The lowest rate that broke before, if any (then the capacity lies between
        /// the two, less refined than asked).
        lowest_broken: Option<f64>,
    },
    /// The very first rate broke the SLA: start lower.
    FirstStepFailed {
        /// The start rate.
        start: f64,
    },
}

impl Outcome {
    /// The capacity, only when one was found.
    pub fn capacity(&self) -> Option<f64> {
        match self {
            Outcome::Found { capacity, .. } => Some(*capacity),
            _ => None,
        }
    }
}

/// Run the search: `try_rate(step, rate)` runs step `step` (1-based) at `rate` and
/// says how it went; its error ends the search.
pub fn search<E>(
    plan: &SearchPlan,
    mut try_rate: impl FnMut(usize, f64) -> Result<StepVerdict, E>,
) -> Result<Outcome, E> {
    let mut step = 0;
    let mut rate = plan.start;
    let mut held: Option<f64> = None;
    let broke = loop {
        step += 1;
        match try_rate(step, rate)? {
            StepVerdict::Interrupted => {
                return Ok(Outcome::Interrupted {
                    step,
                    rate,
                    highest_held: held,
                    lowest_broken: None,
                })
            }
            StepVerdict::Broke if held.is_none() => {
                return Ok(Outcome::FirstStepFailed { start: plan.start })
            }
            StepVerdict::Broke => break rate,
            StepVerdict::Held => {
                held = Some(rate);
                if rate >= plan.max {
                    return Ok(Outcome::NoBreakUpToMax { max: plan.max });
                }
                rate = (rate * plan.factor).min(plan.max);
            }
        }
    };
    let (mut lo, mut hi) = (held.unwrap_or(plan.start), broke);
    for _ in 0..plan.refine {
        step += 1;
        let mid = (lo + hi) / 2.0;
        match try_rate(step, mid)? {
            StepVerdict::Interrupted => {
                return Ok(Outcome::Interrupted {
                    step,
                    rate: mid,
                    highest_held: Some(lo),
                    lowest_broken: Some(hi),
                })
            }
            StepVerdict::Held => lo = mid,
            StepVerdict::Broke => hi = mid,
        }
    }
    Ok(Outcome::Found {
        capacity: lo,
        broke_at: hi,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    /// Search against a planted capacity, recording the rates tried; `stop_at`
    /// interrupts that step.
    fn against(
        plan: SearchPlan,
        capacity: f64,
        stop_at: Option<usize>,
    ) -> (Outcome, Vec<(usize, f64)>) {
        let mut tried = Vec::new();
        let out = search(&plan, |step, rate| {
            tried.push((step, rate));
            Ok::<_, Infallible>(if Some(step) == stop_at {
                StepVerdict::Interrupted
            } else if rate <= capacity {
                StepVerdict::Held
            } else {
                StepVerdict::Broke
            })
        })
        .unwrap();
        (out, tried)
    }

    #[test]
    fn finds_a_planted_capacity_by_stepping_then_bisecting() {
        let plan = SearchPlan::new(100.0, 2.0, 10_000.0, 4).unwrap();
        let (out, tried) = against(plan, 300.0, None);
        let rates: Vec<f64> = tried.iter().map(|t| t.1).collect();
        // 100, 200 hold; 400 breaks; then 300 (holds), 350, 325, 312.5 (break).
        assert_eq!(rates, [100.0, 200.0, 400.0, 300.0, 350.0, 325.0, 312.5]);
        assert_eq!(
            out,
            Outcome::Found {
                capacity: 300.0,
                broke_at: 312.5
            }
        );
        assert_eq!(out.capacity(), Some(300.0));
        assert_eq!(tried.last().unwrap().0, 7);
    }

    #[test]
    fn everything_holding_up_to_the_maximum_is_no_capacity() {
        // 100, 150, then the maximum itself (not 225): the claim "above 200" is
        // only true once 200 was tried.
        let plan = SearchPlan::new(100.0, 1.5, 200.0, 3).unwrap();
        let (out, tried) = against(plan, 1e9, None);
        assert_eq!(
            tried.iter().map(|t| t.1).collect::<Vec<_>>(),
            [100.0, 150.0, 200.0]
        );
        assert_eq!(out, Outcome::NoBreakUpToMax { max: 200.0 });
        assert_eq!(out.capacity(), None);
        // A break at the maximum itself is a capacity, not "no break".
        let (out, _) = against(plan, 180.0, None);
        assert!(
            matches!(out, Outcome::Found { broke_at, .. } if broke_at <= 200.0),
            "{out:?}"
        );
    }

    #[test]
    fn a_first_step_that_breaks_is_no_capacity() {
        let plan = SearchPlan::new(100.0, 1.5, 1000.0, 3).unwrap();
        let (out, tried) = against(plan, 50.0, None);
        assert_eq!(out, Outcome::FirstStepFailed { start: 100.0 });
        assert_eq!(tried.len(), 1);
    }

    #[test]
    fn an_interrupted_search_reports_what_held_so_far_and_no_capacity() {
        let plan = SearchPlan::new(100.0, 2.0, 10_000.0, 3).unwrap();
        // Stopped while stepping up: no break seen yet.
        let (out, tried) = against(plan, 1000.0, Some(3));
        assert_eq!(
            out,
            Outcome::Interrupted {
                step: 3,
                rate: 400.0,
                highest_held: Some(200.0),
                lowest_broken: None
            }
        );
        assert_eq!(tried.len(), 3);
        assert_eq!(out.capacity(), None);
        // Stopped on the first step: nothing held.
        let (out, _) = against(plan, 1000.0, Some(1));
        assert!(
            matches!(
                out,
                Outcome::Interrupted {
                    highest_held: None,
                    step: 1,
                    ..
                }
            ),
            "{out:?}"
        );
        // Stopped while refining: the bracket so far.
        let (out, _) = against(plan, 300.0, Some(5));
        assert_eq!(
            out,
            Outcome::Interrupted {
                step: 5,
                rate: 350.0,
                highest_held: Some(300.0),
                lowest_broken: Some(400.0)
            }
        );
    }

    #[test]
    fn errors_end_the_search_and_bad_plans_are_refused() {
        let plan = SearchPlan::new(10.0, 2.0, 100.0, 1).unwrap();
        let r = search(&plan, |step, _| {
            if step == 2 {
                Err("boom")
            } else {
                Ok(StepVerdict::Held)
            }
        });
        assert_eq!(r, Err("boom"));
        assert_eq!(
            SearchPlan::new(0.0, 2.0, 10.0, 1),
            Err(PlanError::Rate("start"))
        );
        assert_eq!(
            SearchPlan::new(1.0, 2.0, f64::INFINITY, 1),
            Err(PlanError::Rate("maximum"))
        );
        assert_eq!(SearchPlan::new(1.0, 1.0, 10.0, 1), Err(PlanError::Factor));
        assert!(matches!(
            SearchPlan::new(20.0, 2.0, 10.0, 1),
            Err(PlanError::StartAboveMax { .. })
        ));
        // The start equal to the maximum: one step.
        let plan = SearchPlan::new(10.0, 2.0, 10.0, 1).unwrap();
        let (out, tried) = against(plan, 100.0, None);
        assert_eq!(
            (out, tried.len()),
            (Outcome::NoBreakUpToMax { max: 10.0 }, 1)
        );
    }
}
