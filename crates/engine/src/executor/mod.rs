//! Load models. Each executor is a validated configuration with a pure `schedule()`
//! (when each VU is active, or when each iteration should start), testable without a
//! network or a clock, as k6 splits `plan()` from `run()`. The runtime turns any
//! schedule into work; it never asks which executor produced it.

mod constant_arrival_rate;
mod constant_vus;
mod externally_controlled;
mod per_vu_iterations;
mod ramping_arrival_rate;
mod ramping_vus;
pub mod segment;
mod shared_iterations;

use std::time::Duration;

use pado_base::units::duration_compact as format_duration;
use pado_scenario::{ExecutorKind, Scenario};

pub use constant_arrival_rate::ConstantArrivalRate;
pub use constant_vus::ConstantVus;
pub use externally_controlled::ExternallyControlled;
pub use per_vu_iterations::PerVuIterations;
pub use ramping_arrival_rate::RampingArrivalRate;
pub use ramping_vus::{vu_windows, RampingVus};
pub use shared_iterations::{IterationPool, SharedIterations};

/// Default time in-flight iterations get at the end of a scenario (k6's gracefulStop).
pub const DEFAULT_GRACEFUL_STOP: Duration = Duration::from_secs(30);

/// A time window of an executor, for reports: offsets from the scenario start.
#[derive(Clone, Debug, PartialEq)]
pub struct StageWindow {
    /// Start.
    pub start: Duration,
    /// End.
    pub end: Duration,
    /// Level at the start (VUs or iterations/s).
    pub from: f64,
    /// Level at the end.
    pub to: f64,
    /// `VUs` or `it/s`.
    pub unit: &'static str,
}

impl StageWindow {
    /// One level held from the start to `end`: the whole plan of an executor that
    /// keeps a constant load (so many VUs, so many iterations/s), said once.
    pub fn hold(end: Duration, level: f64, unit: &'static str) -> StageWindow {
        StageWindow {
            start: Duration::ZERO,
            end,
            from: level,
            to: level,
            unit,
        }
    }

    /// `ramp 0→100 VUs` / `hold 100 VUs`.
    pub fn label(&self) -> String {
        if (self.from - self.to).abs() < 1e-9 {
            // "hold 1 VU", "hold 2 VUs".
            let unit = match self.unit {
                "VUs" if self.to == 1.0 => "VU",
                u => u,
            };
            format!("hold {} {unit}", pado_base::units::level(self.to))
        } else {
            format!(
                "ramp {}→{} {}",
                pado_base::units::level(self.from),
                pado_base::units::level(self.to),
                self.unit
            )
        }
    }
}

/// When one VU is active: it starts iterations in `[start, end)` (scenario offsets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Start of activity.
    pub start: Duration,
    /// No new iteration starts at or after this.
    pub end: Duration,
}

/// Closed model: each VU loops iterations while one of its windows is open.
#[derive(Clone, Debug, PartialEq)]
pub struct ClosedSchedule {
    /// Windows per VU (index = VU number within the scenario).
    pub vus: Vec<Vec<Window>>,
    /// Per-VU iteration limit (per-vu-iterations).
    pub iterations_per_vu: Option<u64>,
    /// Iterations all VUs of the schedule take from (shared-iterations): a VU stops
    /// when the pool is empty.
    pub shared_iterations: Option<IterationPool>,
    /// Extra time an iteration gets after its VU's window closes before it is cut.
    pub graceful_ramp_down: Duration,
    /// For a segment of a split test ([`segment::split`]): where these VUs sit in the
    /// whole test. `None`: this is the whole schedule.
    pub segment: Option<segment::SegmentPart>,
}

impl ClosedSchedule {
    /// `vus` VUs all active from the start to `end` (`constant-vus`,
    /// `per-vu-iterations`), each at most `iterations_per_vu` iterations.
    pub fn all_along(vus: u32, end: Duration, iterations_per_vu: Option<u64>) -> Self {
        ClosedSchedule {
            vus: (0..vus)
                .map(|_| {
                    vec![Window {
                        start: Duration::ZERO,
                        end,
                    }]
                })
                .collect(),
            iterations_per_vu,
            shared_iterations: None,
            graceful_ramp_down: Duration::ZERO,
            segment: None,
        }
    }

    /// VU `n` of this schedule's index among the whole test's VUs of the scenario.
    pub fn global_index(&self, n: u64) -> u64 {
        self.segment.as_ref().map_or(n, |p| p.segment.position(n))
    }

    /// How many VU ids the whole scenario numbers (its VUs, all segments together).
    pub fn id_space(&self) -> u64 {
        self.segment
            .as_ref()
            .map_or(self.vus.len() as u64, |p| p.id_space)
    }
}

/// A piece of an open-model schedule where the rate changes linearly.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateSegment {
    /// Offset from the scenario start.
    pub start: Duration,
    /// Length.
    pub duration: Duration,
    /// Iterations per second at the start.
    pub from_per_s: f64,
    /// Iterations per second at the end.
    pub to_per_s: f64,
}

/// Open model: iterations start at scheduled times, on VUs from a pool.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenSchedule {
    /// Rate over time.
    pub segments: Vec<RateSegment>,
    /// VUs created before the start.
    pub pre_allocated_vus: u32,
    /// Most VUs the pool may grow to.
    pub max_vus: u32,
    /// For a segment of a split test ([`segment::split`]): only the arrivals the stripe
    /// gives it are this schedule's, and its pool's VU ids are its stripe positions.
    /// `None`: this is the whole schedule.
    pub segment: Option<segment::SegmentPart>,
}

/// Either kind of schedule.
#[derive(Clone, Debug, PartialEq)]
pub enum Schedule {
    /// VUs in loops.
    Closed(ClosedSchedule),
    /// Iterations on a timetable.
    Open(OpenSchedule),
}

/// One load model.
pub trait Executor: Send + Sync + std::fmt::Debug {
    /// The k6 name.
    fn kind(&self) -> ExecutorKind;
    /// Parameters in words, for the summary: `64 VUs for 10s`.
    fn describe(&self) -> String;
    /// The planned length (without the graceful stop).
    fn duration(&self) -> Duration;
    /// Most VUs it can use at once.
    fn max_vus(&self) -> u32;
    /// How many VU ids the whole test's scenario numbers: [`Executor::max_vus`] for a
    /// whole run, more than this generator's VUs for a segment (ids are global).
    fn id_space(&self) -> u64 {
        self.max_vus() as u64
    }
    /// Stages for reports (one window for flat executors). None by default: an
    /// executor bounded by a count of iterations has no load level to draw.
    fn stages(&self) -> Vec<StageWindow> {
        Vec::new()
    }
    /// The schedule: pure, deterministic.
    fn schedule(&self) -> Schedule;
    /// For a scenario steered from outside (`externally-controlled`): the VUs that
    /// run until someone sets another number (this generator's share for a
    /// segment). `None`: the schedule alone says which VUs run.
    fn steered_start(&self) -> Option<u64> {
        None
    }
}

/// The `Executor` methods an iteration-bounded executor (`vus` and `max_duration`
/// fields) shares with the other one: its length is its time limit, its VUs are
/// all there from the start.
macro_rules! iterations_within_limit {
    () => {
        fn duration(&self) -> Duration {
            self.max_duration
        }
        fn max_vus(&self) -> u32 {
            self.vus
        }
    };
}
pub(crate) use iterations_within_limit;

/// `1 iteration`, `5 iterations`: the count of an executor bounded by iterations,
/// as its summary line says it.
pub(crate) fn iterations_words(count: u64) -> String {
    format!("{count} iteration{}", if count == 1 { "" } else { "s" })
}

/// `PLAN (at most 1m)`: an iteration-bounded plan with the time limit that cuts it
/// short, so that both such executors say their limit the same way.
pub(crate) fn within_limit(plan: String, max_duration: Duration) -> String {
    format!(
        "{plan} (at most {})",
        pado_base::units::duration_compact(max_duration)
    )
}

/// Build the executor a scenario asks for. The scenario is already validated.
pub fn from_scenario(s: &Scenario) -> Box<dyn Executor> {
    match s.executor {
        ExecutorKind::ConstantVus => Box::new(ConstantVus {
            vus: s.vus.unwrap_or(1),
            duration: s.duration.map(|d| d.get()).unwrap_or_default(),
        }),
        ExecutorKind::RampingVus => Box::new(RampingVus::from_scenario(s)),
        ExecutorKind::ConstantArrivalRate => Box::new(ConstantArrivalRate::from_scenario(s)),
        ExecutorKind::RampingArrivalRate => Box::new(RampingArrivalRate::from_scenario(s)),
        ExecutorKind::ExternallyControlled => Box::new(ExternallyControlled {
            vus: s.vus.unwrap_or(0),
            max_vus: s.max_vus.unwrap_or(1),
            duration: s.duration.map(|d| d.get()).unwrap_or_default(),
        }),
        ExecutorKind::PerVuIterations => Box::new(PerVuIterations {
            vus: s.vus.unwrap_or(1),
            iterations: s.iterations.unwrap_or(1),
            max_duration: s
                .max_duration
                .map(|d| d.get())
                .unwrap_or(Duration::from_secs(600)),
        }),
        ExecutorKind::SharedIterations => Box::new(SharedIterations::new(
            s.vus.unwrap_or(1),
            s.iterations.unwrap_or(1),
            s.max_duration
                .map(|d| d.get())
                .unwrap_or(Duration::from_secs(600)),
        )),
    }
}

/// Pool defaults for the open model: what k6 makes users spell out, chosen so a
/// stalling target can still be measured (enough VUs to keep the schedule for a few
/// seconds of stall) without creating thousands of idle connections up front.
pub fn open_pool(pre: Option<u32>, max: Option<u32>, peak_per_s: f64) -> (u32, u32) {
    let max = max.unwrap_or_else(|| ((peak_per_s * 5.0).ceil() as u32).clamp(100, 10_000));
    let pre = pre
        .unwrap_or_else(|| ((peak_per_s * 0.05).ceil() as u32).clamp(1, 100))
        .min(max);
    (pre, max)
}

/// Iteration start offsets of an open schedule, in order: the k-th iteration starts
/// when the cumulative scheduled count reaches k (k = 0, 1, ...). Exact for linear
/// rate changes; the count over a span equals the integral of the rate.
#[derive(Clone, Debug)]
pub struct Arrivals<'a> {
    segs: &'a [RateSegment],
    /// Only this segment's arrivals (`None`: all).
    part: Option<&'a segment::Segment>,
    seg: usize,
    /// Cumulative count at the start of the current segment.
    base: f64,
    k: u64,
}

impl OpenSchedule {
    /// Iterate the scheduled start times.
    pub fn arrivals(&self) -> Arrivals<'_> {
        Arrivals {
            segs: &self.segments,
            part: self.segment.as_ref().map(|p| &p.segment),
            seg: 0,
            base: 0.0,
            k: 0,
        }
    }

    /// Total iterations scheduled (this segment's, for a segment).
    pub fn total(&self) -> u64 {
        let whole = self.whole_total();
        match &self.segment {
            Some(p) => p.segment.count_before(whole),
            None => whole,
        }
    }

    /// Pool VU `m`'s index in the whole scenario's id space (its stripe position for
    /// a segment), so that VU ids never repeat across segments.
    pub fn vu_index(&self, m: u64) -> u64 {
        self.segment.as_ref().map_or(m, |p| p.segment.position(m))
    }

    /// How many VU ids the whole scenario numbers.
    pub fn id_space(&self) -> u64 {
        self.segment
            .as_ref()
            .map_or(self.max_vus as u64, |p| p.id_space)
    }

    /// Iterations of the whole schedule, all segments together.
    pub fn whole_total(&self) -> u64 {
        let n: f64 = self
            .segments
            .iter()
            .map(|s| (s.from_per_s + s.to_per_s) / 2.0 * s.duration.as_secs_f64())
            .sum();
        (n - 1e-9).ceil().max(0.0) as u64
    }

    /// The whole schedule's rate (iterations per second) at offset `t`: what a
    /// hold of the plan at `t` keeps going. 0 past the end.
    pub fn rate_at(&self, t: Duration) -> f64 {
        self.segments
            .iter()
            .find(|s| s.start <= t && t < s.start + s.duration)
            .map_or(0.0, |s| {
                let len = s.duration.as_secs_f64();
                let done = (t - s.start).as_secs_f64();
                if len <= 0.0 {
                    s.to_per_s
                } else {
                    s.from_per_s + (s.to_per_s - s.from_per_s) * done / len
                }
            })
    }

    /// End of the last segment.
    pub fn end(&self) -> Duration {
        self.segments
            .last()
            .map(|s| s.start + s.duration)
            .unwrap_or_default()
    }
}

impl Iterator for Arrivals<'_> {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        loop {
            let k = self.k;
            let t = self.next_whole()?;
            if self.part.is_none_or(|p| p.contains(k)) {
                return Some(t);
            }
        }
    }
}

impl Arrivals<'_> {
    /// The next arrival of the whole schedule.
    fn next_whole(&mut self) -> Option<Duration> {
        loop {
            let s = self.segs.get(self.seg)?;
            let t_len = s.duration.as_secs_f64();
            let (a, b) = (s.from_per_s, s.to_per_s);
            let seg_count = (a + b) / 2.0 * t_len;
            let want = self.k as f64 - self.base;
            if want < seg_count - 1e-9 {
                // Solve a*t + (b-a)/(2T) * t^2 = want for t in [0, T].
                let t = if (b - a).abs() < 1e-12 || t_len == 0.0 {
                    if a > 0.0 {
                        want / a
                    } else {
                        0.0
                    }
                } else {
                    let c = (b - a) / t_len;
                    let disc = (a * a + 2.0 * c * want).max(0.0);
                    (-a + disc.sqrt()) / c
                };
                self.k += 1;
                let t = t.clamp(0.0, t_len);
                return Some(s.start + Duration::from_secs_f64(t));
            }
            self.base += seg_count;
            self.seg += 1;
        }
    }
}

/// Shared helper: the stage windows of a list of stages starting at `from`.
pub(crate) fn stage_windows(
    start_level: f64,
    stages: &[(Duration, f64)],
    unit: &'static str,
) -> Vec<StageWindow> {
    let mut out = Vec::new();
    let mut t = Duration::ZERO;
    let mut level = start_level;
    for &(d, target) in stages {
        out.push(StageWindow {
            start: t,
            end: t + d,
            from: level,
            to: target,
            unit,
        });
        t += d;
        level = target;
    }
    out
}

/// `30s→100, 1m→100` style description of stages.
pub(crate) fn describe_stages(stages: &[(Duration, f64)]) -> String {
    stages
        .iter()
        .map(|(d, t)| format!("{}→{}", format_duration(*d), pado_base::units::level(*t)))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sched(segs: Vec<RateSegment>) -> OpenSchedule {
        OpenSchedule {
            segments: segs,
            pre_allocated_vus: 1,
            max_vus: 1,
            segment: None,
        }
    }

    #[test]
    fn constant_rate_arrivals_are_evenly_spaced_and_exact_in_count() {
        let s = sched(vec![RateSegment {
            start: Duration::ZERO,
            duration: Duration::from_secs(15),
            from_per_s: 200.0,
            to_per_s: 200.0,
        }]);
        let a: Vec<Duration> = s.arrivals().collect();
        assert_eq!(a.len(), 3000);
        assert_eq!(s.total(), 3000);
        assert_eq!(a[0], Duration::ZERO);
        assert_eq!(a[1], Duration::from_millis(5));
        assert!(a[2999] < Duration::from_secs(15));
    }

    /// 0 -> 100/s over 10 s, then 100/s for 5 s.
    fn ramp_to_100_then_hold() -> OpenSchedule {
        sched(vec![
            RateSegment {
                start: Duration::ZERO,
                duration: Duration::from_secs(10),
                from_per_s: 0.0,
                to_per_s: 100.0,
            },
            RateSegment {
                start: Duration::from_secs(10),
                duration: Duration::from_secs(5),
                from_per_s: 100.0,
                to_per_s: 100.0,
            },
        ])
    }

    #[test]
    fn linear_ramp_count_is_the_integral() {
        // 0 -> 100/s over 10 s: 500 iterations, denser at the end.
        let s = ramp_to_100_then_hold();
        let a: Vec<Duration> = s.arrivals().collect();
        assert_eq!(a.len(), 1000);
        let first_half = a.iter().filter(|t| t.as_secs_f64() < 5.0).count();
        assert!((first_half as i64 - 125).abs() <= 1, "{first_half}");
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
        let in_hold = a.iter().filter(|t| t.as_secs_f64() >= 10.0).count();
        assert!((in_hold as i64 - 500).abs() <= 1, "{in_hold}");
    }

    #[test]
    fn the_rate_at_a_moment_is_that_of_its_segment() {
        let s = ramp_to_100_then_hold();
        assert_eq!(s.rate_at(Duration::from_millis(2500)), 25.0);
        assert_eq!(s.rate_at(Duration::from_secs(12)), 100.0);
        assert_eq!(s.rate_at(Duration::from_secs(15)), 0.0);
    }

    #[test]
    fn pool_defaults() {
        assert_eq!(open_pool(None, None, 200.0), (10, 1000));
        assert_eq!(open_pool(Some(5), Some(3), 1.0), (3, 3));
        assert_eq!(open_pool(None, None, 1.0), (1, 100));
    }
}
