//! The decisions of `pado find-capacity`'s breakpoint search, apart from running
//! anything: step the arrival rate up by a factor (the last step exactly at the
//! maximum), stop at the first rate that breaks the SLA, bisect between the last
//! rate that held and the first that broke, and say which of four things happened.
//! Only [`Outcome::Found`] is a capacity; the others say why there is none, so that
//! the command never calls "the highest rate tried" a breakpoint.
//!
//! The caller supplies "try this rate" as a closure (the CLI runs a full load test
//! per step); tests supply a planted capacity. How one step is judged against the
//! SLA ([`judge`], [`StepJudgement::verdict`]), the default SLA and the shortest
//! hold are decided here too, so that the CLI only runs steps and prints.

use std::time::Duration;

use serde::Serialize;

use crate::thresholds::ThresholdResult;

/// The SLA a search holds every step to when the user gives none: the latency and
/// error budget most HTTP services are held to.
pub const DEFAULT_SLA: [&str; 2] = ["p(95) < 200", "http_req_failed: rate < 0.01"];

/// Largest share of scheduled iterations a step may drop (not start for want of a
/// VU) and still hold: past it, the rate asked for was not the rate sent.
pub const MAX_DROPPED: f64 = 0.01;

/// Shortest hold per step: a step's completed rate is counted over its full
/// seconds, so a shorter one would measure nothing.
pub const MIN_HOLD: Duration = Duration::from_secs(1);

/// What a step scheduled, as the engine counted it, for the dropped share.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepCounts {
    /// Iterations that ran to their end.
    pub iterations: u64,
    /// Iterations not started (no free VU in the open model).
    pub dropped: u64,
    /// Iterations cut off at the end of the graceful stop.
    pub interrupted: u64,
}

/// How one step measured against the SLA.
#[derive(Clone, Debug, PartialEq)]
pub struct StepJudgement {
    /// Dropped share of scheduled iterations (0..1).
    pub dropped: f64,
    /// The SLA parts that failed (`metric: expression`), then the dropped share when
    /// it was over the limit; empty when the step held.
    pub failing: Vec<String>,
}

impl StepJudgement {
    /// Whether the SLA held.
    pub fn held(&self) -> bool {
        self.failing.is_empty()
    }

    /// The step's verdict for [`search`]: a step that was stopped early (or during
    /// which the search was asked to stop) says nothing about its rate, whatever it
    /// measured.
    pub fn verdict(&self, interrupted: bool) -> StepVerdict {
        if interrupted {
            StepVerdict::Interrupted
        } else if self.held() {
            StepVerdict::Held
        } else {
            StepVerdict::Broke
        }
    }
}

/// Judge a step from its SLA results (evaluated over the step's own totals) and
/// what it scheduled: it breaks when any SLA part fails or when it dropped more
/// than `max_dropped` of its iterations.
pub fn judge(sla: &[ThresholdResult], counts: StepCounts, max_dropped: f64) -> StepJudgement {
    let scheduled = (counts.iterations + counts.dropped + counts.interrupted).max(1) as f64;
    let dropped = counts.dropped as f64 / scheduled;
    let mut failing: Vec<String> = sla
        .iter()
        .filter(|r| !r.ok)
        .map(|r| format!("{}: {}", r.metric, r.expr))
        .collect();
    if dropped > max_dropped {
        failing.push(format!("dropped {:.1}% of iterations", dropped * 100.0));
    }
    StepJudgement { dropped, failing }
}

/// The lowest rate of the steps (rate, whether pado itself was saturated or
/// starved) at which pado was: from there on a break or a plateau may be pado's,
/// not the target's. `None` when it never was.
pub fn lowest_saturated_rate(steps: impl IntoIterator<Item = (f64, bool)>) -> Option<f64> {
    steps
        .into_iter()
        .filter(|(_, saturated)| *saturated)
        .map(|(rate, _)| rate)
        .fold(None, |a: Option<f64>, r| Some(a.map_or(r, |a| a.min(r))))
}

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
    /// The first rate tried (iterations per second): the one a scenario is checked
    /// at before the search, and the one messages name.
    pub fn start(&self) -> f64 {
        self.start
    }

    /// What each step multiplies the rate by until the first break.
    pub fn factor(&self) -> f64 {
        self.factor
    }

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

    fn result(metric: &str, expr: &str, ok: bool) -> ThresholdResult {
        ThresholdResult {
            expr: expr.into(),
            metric: metric.into(),
            ok,
            value: Some(1.0),
            window_s: None,
        }
    }

    #[test]
    fn a_step_breaks_on_a_failed_sla_part_or_too_many_dropped_iterations() {
        let counts = StepCounts {
            iterations: 99,
            dropped: 1,
            interrupted: 0,
        };
        let ok = [result("http_req_duration", "p(95) < 200", true)];
        let held = judge(&ok, counts, MAX_DROPPED);
        assert!(held.held(), "{held:?}");
        assert_eq!(held.dropped, 0.01);
        assert_eq!(held.verdict(false), StepVerdict::Held);

        let failed = [
            result("http_req_duration", "p(95) < 200", true),
            result("http_req_failed", "rate < 0.01", false),
        ];
        let broke = judge(&failed, counts, MAX_DROPPED);
        assert_eq!(broke.failing, ["http_req_failed: rate < 0.01"]);
        assert_eq!(broke.verdict(false), StepVerdict::Broke);

        // Over the dropped limit: a break even with every SLA part holding.
        let dropping = StepCounts {
            iterations: 90,
            dropped: 10,
            interrupted: 0,
        };
        let j = judge(&ok, dropping, MAX_DROPPED);
        assert_eq!(j.failing, ["dropped 10.0% of iterations"]);
        assert_eq!(j.verdict(false), StepVerdict::Broke);

        // Nothing scheduled: no division by zero, nothing dropped.
        assert_eq!(judge(&ok, StepCounts::default(), MAX_DROPPED).dropped, 0.0);
    }

    #[test]
    fn an_interrupted_step_is_interrupted_whatever_it_measured() {
        let counts = StepCounts {
            iterations: 10,
            ..Default::default()
        };
        let held = judge(&[], counts, MAX_DROPPED);
        let broke = judge(&[result("m", "e", false)], counts, MAX_DROPPED);
        assert_eq!(held.verdict(true), StepVerdict::Interrupted);
        assert_eq!(broke.verdict(true), StepVerdict::Interrupted);
    }

    #[test]
    fn the_lowest_saturated_rate_is_found_in_any_order() {
        assert_eq!(
            lowest_saturated_rate([(100.0, false), (150.0, false)]),
            None
        );
        assert_eq!(
            lowest_saturated_rate([(100.0, false), (225.0, true), (150.0, true)]),
            Some(150.0)
        );
    }

    #[test]
    fn the_default_sla_parses() {
        for e in DEFAULT_SLA {
            crate::thresholds::parse_cli(e).unwrap();
        }
    }
}
