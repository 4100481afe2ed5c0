//! `per-vu-iterations`: each VU runs a fixed number of iterations (bounded by a
//! maximum duration), useful for data seeding and smoke tests.

use std::time::Duration;

use pado_scenario::ExecutorKind;

use super::{
    iterations_within_limit, iterations_words, within_limit, ClosedSchedule, Executor, Schedule,
};

/// N iterations on each of V VUs.
#[derive(Clone, Debug, PartialEq)]
pub struct PerVuIterations {
    /// VUs.
    pub vus: u32,
    /// Iterations per VU.
    pub iterations: u64,
    /// Time limit.
    pub max_duration: Duration,
}

impl Executor for PerVuIterations {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::PerVuIterations
    }
    fn describe(&self) -> String {
        within_limit(
            format!(
                "{} × {}",
                pado_base::units::vus(f64::from(self.vus)),
                iterations_words(self.iterations)
            ),
            self.max_duration,
        )
    }
    iterations_within_limit!();
    fn schedule(&self) -> Schedule {
        Schedule::Closed(ClosedSchedule::all_along(
            self.vus,
            self.max_duration,
            Some(self.iterations),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_iterations_per_vu() {
        let e = PerVuIterations {
            vus: 2,
            iterations: 5,
            max_duration: Duration::from_secs(60),
        };
        let Schedule::Closed(c) = e.schedule() else {
            panic!()
        };
        assert_eq!(c.iterations_per_vu, Some(5));
        assert_eq!(c.vus.len(), 2);
        assert_eq!(e.describe(), "2 VUs × 5 iterations (at most 1m)");
        assert!(e.stages().is_empty(), "no load level to draw");
    }
}
