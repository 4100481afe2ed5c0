//! `ramping-vus`: the VU count follows stages (linear ramps and holds), or an
//! nGrinder-style step ramp ("start at 10, add 20 every 10 s up to 130").

use std::time::Duration;

use pado_base::units::duration_compact as format_duration;
use pado_scenario::{ExecutorKind, Scenario};

use super::{
    describe_stages, stage_windows, ClosedSchedule, Executor, Schedule, StageWindow, Window,
    DEFAULT_GRACEFUL_STOP,
};

/// VUs following stages.
#[derive(Clone, Debug, PartialEq)]
pub struct RampingVus {
    /// VUs at the start.
    pub start_vus: u32,
    /// (duration, target VUs); a zero duration is an instant jump.
    pub stages: Vec<(Duration, f64)>,
    /// Time an iteration gets to finish when its VU is ramped down.
    pub graceful_ramp_down: Duration,
    /// Written as a step ramp (for the description).
    pub step_text: Option<String>,
}

impl RampingVus {
    /// From a validated scenario.
    pub fn from_scenario(s: &Scenario) -> Self {
        let grd = s
            .graceful_ramp_down
            .map(|d| d.get())
            .unwrap_or(DEFAULT_GRACEFUL_STOP);
        if let Some(r) = &s.steps {
            let mut stages = Vec::new();
            let mut level = r.start;
            let mut total = Duration::ZERO;
            loop {
                stages.push((Duration::ZERO, level as f64));
                stages.push((r.every.get(), level as f64));
                total += r.every.get();
                if level >= r.max {
                    break;
                }
                level = (level + r.add).min(r.max);
            }
            if let Some(d) = s.duration.map(|d| d.get()) {
                if d > total {
                    if let Some(last) = stages.last_mut() {
                        last.0 += d - total;
                    }
                } else {
                    // Cut the ramp at the requested duration.
                    let mut left = d;
                    let mut cut = Vec::new();
                    for (sd, t) in stages {
                        if left.is_zero() && !sd.is_zero() {
                            break;
                        }
                        let take = sd.min(left);
                        left -= take;
                        cut.push((take, t));
                    }
                    stages = cut;
                }
            }
            return RampingVus {
                start_vus: r.start,
                stages,
                graceful_ramp_down: grd,
                step_text: Some(format!(
                    "step ramp: start {}, +{} every {}, up to {}",
                    pado_base::units::vus(f64::from(r.start)),
                    r.add,
                    format_duration(r.every.get()),
                    r.max
                )),
            };
        }
        RampingVus {
            start_vus: s.start_vus.unwrap_or(0),
            stages: s
                .stages
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|st| (st.duration.get(), st.target))
                .collect(),
            graceful_ramp_down: grd,
            step_text: None,
        }
    }
}

impl Executor for RampingVus {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::RampingVus
    }
    fn describe(&self) -> String {
        match &self.step_text {
            Some(t) => t.clone(),
            None => format!(
                "stages from {}: {}",
                pado_base::units::vus(f64::from(self.start_vus)),
                describe_stages(&self.stages)
            ),
        }
    }
    fn duration(&self) -> Duration {
        self.stages.iter().map(|s| s.0).sum()
    }
    fn max_vus(&self) -> u32 {
        self.stages
            .iter()
            .map(|s| s.1 as u32)
            .chain(std::iter::once(self.start_vus))
            .max()
            .unwrap_or(0)
    }
    fn stages(&self) -> Vec<StageWindow> {
        // Instant jumps are not stages of their own for reports.
        stage_windows(self.start_vus as f64, &self.stages, "VUs")
            .into_iter()
            .filter(|w| w.end > w.start)
            .map(|mut w| {
                if self.step_text.is_some() {
                    w.from = w.to;
                }
                w
            })
            .collect()
    }
    fn schedule(&self) -> Schedule {
        Schedule::Closed(ClosedSchedule {
            vus: vu_windows(self.start_vus, &self.stages),
            iterations_per_vu: None,
            shared_iterations: None,
            graceful_ramp_down: self.graceful_ramp_down,
            segment: None,
        })
    }
}

/// Active windows of each VU for a piecewise-linear VU count: VU `k` is active while
/// the level is above `k`, so ramps start VUs in order and stop the highest first.
pub fn vu_windows(start_vus: u32, stages: &[(Duration, f64)]) -> Vec<Vec<Window>> {
    let max = stages
        .iter()
        .map(|s| s.1.round() as u32)
        .chain(std::iter::once(start_vus))
        .max()
        .unwrap_or(0) as usize;
    let mut windows: Vec<Vec<Window>> = vec![Vec::new(); max];
    let mut open: Vec<Option<Duration>> = vec![None; max];
    for o in open.iter_mut().take(start_vus as usize) {
        *o = Some(Duration::ZERO);
    }
    let mut t0 = Duration::ZERO;
    let mut a = start_vus as f64;
    for &(d, target) in stages {
        let b = target.round();
        let len = d.as_secs_f64();
        if b > a {
            for (k, slot) in open
                .iter_mut()
                .enumerate()
                .take(b as usize)
                .skip(a as usize)
            {
                let at = if len == 0.0 {
                    t0
                } else {
                    t0 + Duration::from_secs_f64((k as f64 - a) / (b - a) * len)
                };
                if slot.is_none() {
                    *slot = Some(at);
                }
            }
        } else if b < a {
            for k in ((b as usize)..(a as usize)).rev() {
                let at = if len == 0.0 {
                    t0
                } else {
                    t0 + Duration::from_secs_f64((a - k as f64) / (a - b) * len)
                };
                if let Some(s) = open[k].take() {
                    if at > s {
                        windows[k].push(Window { start: s, end: at });
                    }
                }
            }
        }
        t0 += d;
        a = b;
    }
    for (k, o) in open.iter_mut().enumerate() {
        if let Some(s) = o.take() {
            if t0 > s {
                windows[k].push(Window { start: s, end: t0 });
            }
        }
    }
    windows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn ramp_up_hold_down() {
        let w = vu_windows(0, &[(s(10), 10.0), (s(10), 10.0), (s(10), 0.0)]);
        assert_eq!(w.len(), 10);
        // VU 0 starts at once and stops last; VU 9 starts at 9 s and stops first.
        assert_eq!(
            w[0],
            vec![Window {
                start: s(0),
                end: s(30)
            }]
        );
        assert_eq!(
            w[9],
            vec![Window {
                start: s(9),
                end: s(21)
            }]
        );
        // Active count at t = 5 s is 5 (VUs 0..=4), at 25 s it is 5 again.
        let active = |t: Duration| {
            w.iter()
                .filter(|ws| ws.iter().any(|x| x.start <= t && t < x.end))
                .count()
        };
        assert_eq!(active(Duration::from_millis(4500)), 5);
        assert_eq!(active(s(15)), 10);
        assert_eq!(active(Duration::from_millis(25_500)), 5);
        assert_eq!(active(s(30)), 0);
    }

    #[test]
    fn a_vu_can_come_back() {
        let w = vu_windows(2, &[(s(0), 0.0), (s(5), 0.0), (s(0), 2.0), (s(5), 2.0)]);
        assert_eq!(
            w[0],
            vec![Window {
                start: s(5),
                end: s(10)
            }]
        );
        assert_eq!(w[1].len(), 1);
    }

    #[test]
    fn step_ramp_like_ngrinder() {
        let sc: Scenario = serde_yaml_like();
        let e = RampingVus::from_scenario(&sc);
        assert_eq!(e.max_vus(), 130);
        assert_eq!(e.duration(), s(70));
        let Schedule::Closed(c) = e.schedule() else {
            panic!()
        };
        let active = |t: Duration| {
            c.vus
                .iter()
                .filter(|ws| ws.iter().any(|x| x.start <= t && t < x.end))
                .count()
        };
        assert_eq!(active(s(1)), 10);
        assert_eq!(active(s(11)), 30);
        assert_eq!(active(s(65)), 130);
        assert_eq!(e.stages().len(), 7);
        assert_eq!(e.stages()[1].label(), "hold 30 VUs");
    }

    fn serde_yaml_like() -> Scenario {
        let cfg = pado_scenario::parse_str(
            "target: http://h\nscenarios:\n  a:\n    executor: ramping-vus\n    steps: { start: 10, add: 20, every: 10s, max: 130 }\n    flow: [{request: /}]\n",
            "t",
        )
        .unwrap();
        cfg.scenarios[0].1.clone()
    }
}
