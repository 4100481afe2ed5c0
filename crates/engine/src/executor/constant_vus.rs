//! `constant-vus`: a fixed number of VUs loop iterations for a duration.

use std::time::Duration;

use pado_base::units::duration_compact as format_duration;
use pado_scenario::ExecutorKind;

use super::{ClosedSchedule, Executor, Schedule, StageWindow};

/// A fixed number of VUs for a fixed time.
#[derive(Clone, Debug, PartialEq)]
pub struct ConstantVus {
    /// VUs.
    pub vus: u32,
    /// How long.
    pub duration: Duration,
}

impl Executor for ConstantVus {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::ConstantVus
    }
    fn describe(&self) -> String {
        format!(
            "{} for {}",
            pado_base::units::vus(f64::from(self.vus)),
            format_duration(self.duration)
        )
    }
    fn duration(&self) -> Duration {
        self.duration
    }
    fn max_vus(&self) -> u32 {
        self.vus
    }
    fn stages(&self) -> Vec<StageWindow> {
        vec![StageWindow::hold(self.duration, self.vus as f64, "VUs")]
    }
    fn schedule(&self) -> Schedule {
        Schedule::Closed(ClosedSchedule::all_along(self.vus, self.duration, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_vu_runs_the_whole_time() {
        let e = ConstantVus {
            vus: 3,
            duration: Duration::from_secs(10),
        };
        let Schedule::Closed(c) = e.schedule() else {
            panic!()
        };
        assert_eq!(c.vus.len(), 3);
        assert!(c.vus.iter().all(|w| w[0].end == Duration::from_secs(10)));
        assert_eq!(e.describe(), "3 VUs for 10s");
    }
}
