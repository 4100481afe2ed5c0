//! `constant-arrival-rate`: iterations start at a fixed rate whatever the target does
//! (open model), so a slow target shows up as latency and dropped iterations instead of
//! silently lowering the load.

use std::time::Duration;

use pado_base::units::duration_compact as format_duration;
use pado_scenario::{ExecutorKind, Scenario};

use super::{open_pool, Executor, OpenSchedule, RateSegment, Schedule, StageWindow};

/// A fixed iteration rate.
#[derive(Clone, Debug, PartialEq)]
pub struct ConstantArrivalRate {
    /// Iterations per second.
    pub per_s: f64,
    /// How long.
    pub duration: Duration,
    /// VUs created up front.
    pub pre_allocated_vus: u32,
    /// Pool limit.
    pub max_vus: u32,
}

impl ConstantArrivalRate {
    /// From a validated scenario.
    pub fn from_scenario(s: &Scenario) -> Self {
        let unit = s
            .time_unit
            .map(|d| d.get())
            .unwrap_or(Duration::from_secs(1));
        let per_s = s.rate.unwrap_or(1.0) / unit.as_secs_f64();
        let (pre, max) = open_pool(s.pre_allocated_vus, s.max_vus, per_s);
        ConstantArrivalRate {
            per_s,
            duration: s.duration.map(|d| d.get()).unwrap_or_default(),
            pre_allocated_vus: pre,
            max_vus: max,
        }
    }
}

impl Executor for ConstantArrivalRate {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::ConstantArrivalRate
    }
    fn describe(&self) -> String {
        format!(
            "{} iterations/s for {} (VU pool {}..{})",
            trim_float(self.per_s),
            format_duration(self.duration),
            self.pre_allocated_vus,
            self.max_vus
        )
    }
    fn duration(&self) -> Duration {
        self.duration
    }
    fn max_vus(&self) -> u32 {
        self.max_vus
    }
    fn stages(&self) -> Vec<StageWindow> {
        vec![StageWindow::hold(self.duration, self.per_s, "it/s")]
    }
    fn schedule(&self) -> Schedule {
        Schedule::Open(OpenSchedule {
            segments: vec![RateSegment {
                start: Duration::ZERO,
                duration: self.duration,
                from_per_s: self.per_s,
                to_per_s: self.per_s,
            }],
            pre_allocated_vus: self.pre_allocated_vus,
            max_vus: self.max_vus,
            segment: None,
        })
    }
}

pub(crate) fn trim_float(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{v:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_unit_scales_the_rate() {
        let cfg = pado_scenario::parse_str(
            "target: http://h\nscenarios:\n  a:\n    executor: constant-arrival-rate\n    rate: 30\n    time_unit: 1m\n    duration: 2m\n    flow: [{request: /}]\n",
            "t",
        )
        .unwrap();
        let e = ConstantArrivalRate::from_scenario(&cfg.scenarios[0].1);
        assert!((e.per_s - 0.5).abs() < 1e-12);
        let Schedule::Open(o) = e.schedule() else {
            panic!()
        };
        assert_eq!(o.total(), 60);
        assert_eq!(o.arrivals().count(), 60);
    }
}
