//! `externally-controlled` (k6's name): a scenario with no fixed plan. Up to
//! `max_vus` VUs may run for `duration`; `vus` of them run from the start, and
//! the number is steered while the test runs (the dashboard, its JSON API, a
//! library caller), at once or ramped. With no change it holds `vus`. The run is
//! bounded by `duration` like any other.

use std::time::Duration;

use pado_base::units::duration_compact as format_duration;
use pado_scenario::ExecutorKind;

use super::{ClosedSchedule, Executor, Schedule, StageWindow};

/// VUs steered from outside, within a ceiling, for a fixed time.
#[derive(Clone, Debug, PartialEq)]
pub struct ExternallyControlled {
    /// VUs running until someone sets another number.
    pub vus: u32,
    /// Most VUs that may be set.
    pub max_vus: u32,
    /// How long the scenario lasts.
    pub duration: Duration,
}

impl Executor for ExternallyControlled {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::ExternallyControlled
    }
    fn describe(&self) -> String {
        format!(
            "steered from outside: {} to start, at most {}, for {}",
            pado_base::units::vus(f64::from(self.vus)),
            self.max_vus,
            format_duration(self.duration)
        )
    }
    fn duration(&self) -> Duration {
        self.duration
    }
    fn max_vus(&self) -> u32 {
        self.max_vus
    }
    fn stages(&self) -> Vec<StageWindow> {
        vec![StageWindow::hold(self.duration, self.vus as f64, "VUs")]
    }
    fn schedule(&self) -> Schedule {
        // Every VU may run the whole time; the steered cap says how many do.
        Schedule::Closed(ClosedSchedule::all_along(self.max_vus, self.duration, None))
    }
    fn steered_start(&self) -> Option<u64> {
        Some(u64::from(self.vus))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_vu_may_run_and_the_start_level_is_the_steered_one() {
        let e = ExternallyControlled {
            vus: 2,
            max_vus: 10,
            duration: Duration::from_secs(30),
        };
        let Schedule::Closed(c) = e.schedule() else {
            panic!()
        };
        assert_eq!(c.vus.len(), 10);
        assert_eq!(e.steered_start(), Some(2));
        assert_eq!(e.max_vus(), 10);
        assert_eq!(e.stages()[0].label(), "hold 2 VUs");
    }
}
