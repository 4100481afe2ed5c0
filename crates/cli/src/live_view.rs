//! What a run shows and decides while it goes, second by second: the progress line
//! and the `abort_on_fail` thresholds. One run judges its own seconds
//! ([`LiveJudge`], from `run_cmd`'s sink); a coordinator of many generators
//! (`pado run --generators`, `pado k8s run`) judges the seconds of the whole test
//! ([`LiveView`]) and stops every generator when an `abort_on_fail` threshold
//! fails on the merged data.

use pado_analysis::thresholds::{self, Threshold};
use pado_analysis::TotalsSource;
use pado_fleet::coordinate::{Control, Notice};
use pado_metrics::{StepCatalog, Totals};
use pado_results::merge::live::LiveSecond;
use pado_results::StageMark;

use crate::progress::{generator_pressure, Progress};

/// The thresholds judged while a run goes.
pub(crate) struct LiveJudge {
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
    pub(crate) fn new(thresholds: &[Threshold], steps: &StepCatalog) -> LiveJudge {
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
    pub(crate) fn without_abort(thresholds: &[Threshold], steps: &StepCatalog) -> LiveJudge {
        let mut judge = LiveJudge::new(thresholds, steps);
        judge.abort.clear();
        judge
    }

    /// After second `t` (0-based) with `totals` so far: how many thresholds fail
    /// now, and why to stop (the first `abort_on_fail` threshold that failed on a
    /// value), if one did.
    pub(crate) fn judge(&self, t: u32, totals: &Totals) -> (usize, Option<String>) {
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

/// The live view of a test on many generators.
pub(crate) struct LiveView {
    progress: Progress,
    judge: LiveJudge,
    /// Each generator as people read it (`generator 1/4 (http://10.0.0.5:7070)`).
    names: Vec<String>,
    quiet: bool,
}

impl LiveView {
    /// A view of a test planned to take `total_s` seconds with these stages and
    /// thresholds, on generators named `names` (in segment order).
    pub(crate) fn new(
        quiet: bool,
        total_s: f64,
        stages: Vec<StageMark>,
        thresholds: &[Threshold],
        steps: &StepCatalog,
        names: Vec<String>,
    ) -> LiveView {
        let mut progress = Progress::new(quiet, total_s, stages);
        progress.has_thresholds = !thresholds.is_empty();
        LiveView {
            progress,
            judge: LiveJudge::new(thresholds, steps),
            names,
            quiet,
        }
    }

    /// One second of the whole test: the progress line, and whether to stop every
    /// generator.
    pub(crate) fn second(&mut self, s: &LiveSecond, totals: &Totals) -> Control {
        let (failing, stop) = self.judge.judge(s.second.t, totals);
        let pressure = s
            .generators
            .iter()
            .enumerate()
            .filter_map(|(g, fig)| {
                let why = generator_pressure(fig.as_ref()?)?;
                Some(format!("generator {}: {why}", self.short_name(g)))
            })
            .collect();
        self.progress.second_of_many(
            &s.second,
            totals,
            failing,
            pressure,
            (s.reporting, self.names.len()),
        );
        match stop {
            Some(why) => Control::StopAll(why),
            None => Control::Continue,
        }
    }

    fn short_name(&self, g: usize) -> String {
        format!("{g}/{}", self.names.len())
    }

    /// Something the live loop says, on a line of its own.
    pub(crate) fn notice(&mut self, n: &Notice) {
        let line = match n {
            Notice::LeftOut(g, why) => format!(
                "warning: {} is left out of the live view: {why}",
                self.names.get(*g).cloned().unwrap_or_default()
            ),
            Notice::Stopping(why) => format!("{why}: stopping every generator"),
            Notice::StopFailed(g, why) => format!(
                "warning: {} did not take the stop: {why}",
                self.names.get(*g).cloned().unwrap_or_default()
            ),
        };
        // A stop is said even with --quiet: it changes the result.
        if !self.quiet || matches!(n, Notice::Stopping(_)) {
            self.progress.finish();
            eprintln!("{line}");
        }
    }

    /// Ends the progress line.
    pub(crate) fn finish(&mut self) {
        self.progress.finish();
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
