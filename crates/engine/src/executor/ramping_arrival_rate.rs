//! `ramping-arrival-rate`: the iteration rate follows stages (open model), the shape
//! of a stress test that walks past the target's limit.

use std::time::Duration;

use pado_scenario::{ExecutorKind, Scenario};

use super::constant_arrival_rate::trim_float;
use super::{
    describe_stages, open_pool, stage_windows, Executor, OpenSchedule, RateSegment, Schedule,
    StageWindow,
};

/// A rate following stages.
#[derive(Clone, Debug, PartialEq)]
pub struct RampingArrivalRate {
    /// Iterations per second at the start.
    pub start_per_s: f64,
    /// (duration, iterations per second at its end).
    pub stages: Vec<(Duration, f64)>,
    /// VUs created up front.
    pub pre_allocated_vus: u32,
    /// Pool limit.
    pub max_vus: u32,
}

impl RampingArrivalRate {
    /// From a validated scenario.
    pub fn from_scenario(s: &Scenario) -> Self {
        let unit = s
            .time_unit
            .map(|d| d.get())
            .unwrap_or(Duration::from_secs(1))
            .as_secs_f64();
        let stages: Vec<(Duration, f64)> = s
            .stages
            .as_deref()
            .unwrap_or_default()
            .iter()
            .map(|st| (st.duration.get(), st.target / unit))
            .collect();
        let start = s.start_rate.unwrap_or(0.0) / unit;
        let peak = stages.iter().map(|s| s.1).fold(start, f64::max);
        let (pre, max) = open_pool(s.pre_allocated_vus, s.max_vus, peak);
        RampingArrivalRate {
            start_per_s: start,
            stages,
            pre_allocated_vus: pre,
            max_vus: max,
        }
    }
}

impl Executor for RampingArrivalRate {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::RampingArrivalRate
    }
    fn describe(&self) -> String {
        format!(
            "rate from {}/s: {} (VU pool {}..{})",
            trim_float(self.start_per_s),
            describe_stages(&self.stages),
            self.pre_allocated_vus,
            self.max_vus
        )
    }
    fn duration(&self) -> Duration {
        self.stages.iter().map(|s| s.0).sum()
    }
    fn max_vus(&self) -> u32 {
        self.max_vus
    }
    fn stages(&self) -> Vec<StageWindow> {
        stage_windows(self.start_per_s, &self.stages, "it/s")
            .into_iter()
            .filter(|w| w.end > w.start)
            .collect()
    }
    fn schedule(&self) -> Schedule {
        let mut segs = Vec::new();
        let mut t = Duration::ZERO;
        let mut from = self.start_per_s;
        for &(d, to) in &self.stages {
            if !d.is_zero() {
                segs.push(RateSegment {
                    start: t,
                    duration: d,
                    from_per_s: from,
                    to_per_s: to,
                });
            }
            t += d;
            from = to;
        }
        Schedule::Open(OpenSchedule {
            segments: segs,
            pre_allocated_vus: self.pre_allocated_vus,
            max_vus: self.max_vus,
            segment: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_become_linear_segments() {
        let e = RampingArrivalRate {
            start_per_s: 0.0,
            stages: vec![
                (Duration::from_secs(10), 100.0),
                (Duration::from_secs(10), 100.0),
                (Duration::from_secs(10), 0.0),
            ],
            pre_allocated_vus: 1,
            max_vus: 10,
        };
        let Schedule::Open(o) = e.schedule() else {
            panic!()
        };
        assert_eq!(o.segments.len(), 3);
        assert_eq!(o.total(), 2000);
        assert_eq!(o.arrivals().count(), 2000);
        assert_eq!(e.stages()[0].label(), "ramp 0→100 it/s");
    }
}
