//! The load an open-model run offers, second by second: the arrivals it
//! scheduled (started or dropped), counted where they happened. The bottleneck
//! table of an all-open-model run splits low and peak load by it, in the report
//! and in the dashboard's live hint alike.
//!
//! Why not active VUs, as for a closed model: in an open model the VUs are a
//! consequence of the target's latency (they pile up as it slows), not the load
//! offered. A constant rate past capacity starts with few VUs; split by VUs, its
//! first seconds would read as "low load, when the service kept up", so whatever
//! was full from the start (the real limit) would be called busy throughout, and
//! what filled up after it (threads waiting on it) the limit.
//!
//! Why counted and not planned: a run steered while it goes (a rate set from the
//! dashboard, a pause, a held or skipped stage, each generator's share of a
//! distributed run) offers what its arrivals were, not what its stages said. The
//! stages' plan ([`PlannedRate`]) is kept for result directories written before
//! pado counted started arrivals.

use pado_results::StageMark;

/// How the load of an all-open-model run's seconds is read: counted arrivals,
/// or (for older result directories) the stages' plan.
#[derive(Clone, Debug, PartialEq)]
pub enum OfferedLoad {
    /// Each second's arrivals, started or dropped, as the run counted them.
    Counted,
    /// The rate the stages plan, for result directories that did not count
    /// started arrivals.
    Planned(PlannedRate),
}

impl OfferedLoad {
    /// The way to read a run: counted when any second counted a started arrival
    /// (`counted`), else the plan of `stages`; `None` when neither can say.
    pub fn choose(counted: bool, stages: &[StageMark]) -> Option<OfferedLoad> {
        if counted {
            Some(OfferedLoad::Counted)
        } else {
            PlannedRate::of_stages(stages).map(OfferedLoad::Planned)
        }
    }

    /// The load of second `t`, whose arrivals (started and dropped) were
    /// `arrivals`.
    pub fn of_second(&self, t: u32, arrivals: u64) -> f64 {
        match self {
            OfferedLoad::Counted => arrivals as f64,
            OfferedLoad::Planned(rate) => rate.of_second(t),
        }
    }
}

/// The arrival rate an open-model run's stages plan (iterations per second,
/// summed over its scenarios).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlannedRate {
    /// The stages that say their level (`from` recorded), in any order.
    stages: Vec<StageMark>,
}

impl PlannedRate {
    /// The planned rate of a run whose every scenario is an open model, from its
    /// stages. `None` when no stage says its starting level (user windows, files
    /// written before pado recorded it): then the rate cannot be known.
    pub fn of_stages(stages: &[StageMark]) -> Option<PlannedRate> {
        let stages: Vec<StageMark> = stages
            .iter()
            .filter(|m| m.from.is_some())
            .cloned()
            .collect();
        (!stages.is_empty()).then_some(PlannedRate { stages })
    }

    /// The rate planned at `at` seconds: each stage's level moves in a straight
    /// line from `from` to `target`; outside every stage a scenario offers nothing.
    pub fn at(&self, at: f64) -> f64 {
        self.stages
            .iter()
            .filter(|m| m.start_s <= at && at < m.end_s)
            .map(|m| {
                let from = m.from.unwrap_or(m.target);
                let span = m.end_s - m.start_s;
                let done = if span > 0.0 {
                    (at - m.start_s) / span
                } else {
                    1.0
                };
                from + (m.target - from) * done
            })
            .sum()
    }

    /// The rate of second `t` (which covers `[t, t + 1)`): at its middle, the
    /// rule every window of a run is cut by.
    pub fn of_second(&self, t: u32) -> f64 {
        self.at(f64::from(t) + 0.5)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(
        scenario: &str,
        start_s: f64,
        end_s: f64,
        from: Option<f64>,
        target: f64,
    ) -> StageMark {
        StageMark {
            scenario: scenario.into(),
            index: 0,
            start_s,
            end_s,
            label: String::new(),
            target,
            from,
        }
    }

    #[test]
    fn a_ramp_moves_in_a_straight_line_and_scenarios_add_up() {
        let r = PlannedRate::of_stages(&[
            stage("a", 0.0, 10.0, Some(0.0), 100.0),
            stage("a", 10.0, 20.0, Some(100.0), 100.0),
            stage("b", 5.0, 15.0, Some(50.0), 50.0),
        ])
        .unwrap();
        assert_eq!(r.of_second(0), 5.0);
        assert_eq!(r.of_second(4), 45.0);
        assert_eq!(r.of_second(5), 55.0 + 50.0);
        assert_eq!(r.of_second(12), 150.0);
        assert_eq!(r.of_second(19), 100.0);
        assert_eq!(r.of_second(20), 0.0, "past every stage nothing is offered");
    }

    /// A run that counted its arrivals is read by them (a rate changed by hand, a
    /// pause: whatever the plan said); one that did not, by its stages' plan.
    #[test]
    fn counted_arrivals_win_over_the_plan_and_the_plan_stands_in_for_old_runs() {
        let stages = [stage("a", 0.0, 10.0, Some(20.0), 20.0)];
        let counted = OfferedLoad::choose(true, &stages).unwrap();
        assert_eq!(counted, OfferedLoad::Counted);
        assert_eq!(counted.of_second(3, 60), 60.0, "set to 60/s by hand");
        assert_eq!(counted.of_second(4, 0), 0.0, "paused");
        let planned = OfferedLoad::choose(false, &stages).unwrap();
        assert_eq!(planned.of_second(3, 60), 20.0, "an old run: the plan");
        assert_eq!(OfferedLoad::choose(false, &[]), None);
        assert_eq!(
            OfferedLoad::choose(true, &[]),
            Some(OfferedLoad::Counted),
            "counted arrivals need no stages"
        );
    }

    #[test]
    fn stages_that_do_not_say_their_level_give_no_rate() {
        assert_eq!(
            PlannedRate::of_stages(&[stage("a", 0.0, 10.0, None, 100.0)]),
            None
        );
        assert_eq!(PlannedRate::of_stages(&[]), None);
    }
}
