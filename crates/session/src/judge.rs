//! The thresholds judged while a run goes, second by second: how many fail now
//! (for the progress line and the run's state) and whether an `abort_on_fail` one
//! stops the run. A coordinator of many generators judges the merged seconds with
//! the same judge.

use pado_analysis::thresholds::{self, Threshold};
use pado_analysis::TotalsSource;
use pado_metrics::{StepCatalog, Totals};

/// The thresholds judged while a run goes.
pub struct LiveJudge {
    all: Vec<Threshold>,
    abort: Vec<Threshold>,
    /// The plan's steps, which `scenario`, `method` and `group` tags select.
    steps: StepCatalog,
}

impl LiveJudge {
    /// Judges `thresholds` (the `abort_on_fail` ones can stop the run) on the
    /// series of the plan's `steps`.
    ///
    /// A threshold scoped to a stage or a window (`{stage:2}`) is judged when the
    /// run ends, over exactly its seconds, so it is left out here: the totals so far
    /// would judge it on the wrong seconds (the scenario file refuses
    /// `abort_on_fail` on one).
    pub fn new(thresholds: &[Threshold], steps: &StepCatalog) -> LiveJudge {
        let whole_run: Vec<Threshold> = thresholds
            .iter()
            .filter(|t| t.scope.is_none())
            .cloned()
            .collect();
        LiveJudge {
            steps: steps.clone(),
            abort: whole_run
                .iter()
                .filter(|t| t.abort_on_fail)
                .cloned()
                .collect(),
            all: whole_run,
        }
    }

    /// Judges `thresholds` for the progress line only: nothing stops the run (a
    /// segment's share, which the coordinator judges as part of the whole).
    pub fn without_abort(thresholds: &[Threshold], steps: &StepCatalog) -> LiveJudge {
        let mut judge = LiveJudge::new(thresholds, steps);
        judge.abort.clear();
        judge
    }

    /// After second `t` (0-based) with `totals` so far: how many thresholds fail
    /// now, and why to stop (the first `abort_on_fail` threshold that failed on a
    /// value), if one did.
    pub fn judge(&self, t: u32, totals: &Totals) -> (usize, Option<String>) {
        let src = TotalsSource::new(totals, (t + 1) as f64).with_steps(&self.steps);
        let failing = thresholds::evaluate(&self.all, &src)
            .iter()
            .filter(|x| !x.ok)
            .count();
        let stop = self
            .abort
            .iter()
            .zip(thresholds::evaluate(&self.abort, &src))
            .find(|(_, res)| !res.ok && res.value.is_some())
            .map(|(th, _)| {
                format!(
                    "threshold `{}: {}` failed at {}s (abort_on_fail)",
                    th.metric_key(),
                    th.source,
                    t + 1
                )
            });
        (failing, stop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pado_metrics::{Interval, Phases, RequestSample, SecondRecord, SeriesKey, SeriesStats};

    fn second(t: u32, ok: u64, failed: u64) -> SecondRecord {
        let mut r = SecondRecord::new(t);
        let mut s = SeriesStats::new(SeriesKey::named("get"));
        for i in 0..ok + failed {
            s.record(&RequestSample {
                status: if i < ok { 200 } else { 500 },
                failed: i >= ok,
                phases: Phases {
                    duration_us: 1000,
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        r.absorb(Interval {
            series: vec![s],
            ..Default::default()
        });
        r
    }

    fn threshold(src: &str, abort: bool) -> Threshold {
        let mut t = pado_scenario::thresholds::parse_cli(src).unwrap();
        t.abort_on_fail = abort;
        t
    }

    #[test]
    fn an_abort_threshold_failing_on_the_merged_seconds_stops_all() {
        let judge = LiveJudge::new(
            &[
                threshold("http_req_failed: rate < 0.1", true),
                threshold("p(95) < 0.5", false),
            ],
            &StepCatalog::default(),
        );
        let mut totals = Totals::default();
        // Two generators: one clean, one failing 30%; merged 15%: over 10%.
        let mut s = second(0, 100, 0);
        s.merge(second(0, 70, 30));
        totals.add_second(&s);
        let (failing, stop) = judge.judge(0, &totals);
        assert_eq!(failing, 2);
        assert_eq!(
            stop.as_deref(),
            Some("threshold `http_req_failed: rate < 0.1` failed at 1s (abort_on_fail)")
        );
        // Merged 5%: the same failing generator beside three clean ones does not stop.
        let mut totals = Totals::default();
        let mut s = second(0, 100, 0);
        for _ in 0..2 {
            s.merge(second(0, 100, 0));
        }
        s.merge(second(0, 70, 30));
        totals.add_second(&s);
        let (failing, stop) = judge.judge(0, &totals);
        assert_eq!((failing, stop), (1, None));
    }

    #[test]
    fn scoped_thresholds_wait_for_the_end_of_the_run() {
        // Failing now on the whole run's seconds, but judged only on its stage's
        // seconds when the run ends: neither counted as failing nor stopping.
        let mut scoped = threshold("http_req_failed{stage:2}: rate < 0.1", true);
        scoped.scope.as_mut().unwrap().window_s = Some((10.0, 20.0));
        let judge = LiveJudge::new(
            &[scoped, threshold("http_req_failed: rate < 0.5", false)],
            &StepCatalog::default(),
        );
        let mut totals = Totals::default();
        totals.add_second(&second(0, 70, 30));
        assert_eq!(judge.judge(0, &totals), (0, None));
        let mut all = Totals::default();
        all.add_second(&second(0, 0, 100));
        assert_eq!(judge.judge(0, &all), (1, None));
    }
}
