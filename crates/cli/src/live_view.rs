//! What a coordinator of many generators (`pado run --generators`, `pado k8s run`)
//! shows while the test goes: the progress line of the whole test ([`LiveView`]),
//! and every generator stopped when an `abort_on_fail` threshold fails on the merged
//! data (judged by [`pado_session::LiveJudge`], as one run judges its own seconds).
//! With a dashboard, each merged second also goes to the run's
//! [`pado_session::DistributedRun`], which the dashboard watches and steers, and
//! so does each scrape of the target the coordinator follows (its charts of the
//! target and its live bottleneck hint).

use pado_analysis::thresholds::Threshold;
use pado_fleet::coordinate::{Control, Notice};
use pado_metrics::{StepCatalog, Totals};
use pado_results::merge::live::LiveSecond;
use pado_results::StageMark;
use pado_session::{DistributedRun, GeneratorTick, LiveJudge, LiveRun};

use crate::progress::{generator_pressure, Progress};

/// Why every generator is stopped when the dashboard asked for it.
const STOPPED_FROM_THE_DASHBOARD: &str = "stopped from the dashboard";

/// The live view of a test on many generators.
pub(crate) struct LiveView {
    progress: Progress,
    judge: LiveJudge,
    /// Each generator as people read it (`generator 1/4 (http://10.0.0.5:7070)`).
    names: Vec<String>,
    quiet: bool,
    /// The run a dashboard watches, fed every merged second.
    steered: Option<std::sync::Arc<DistributedRun>>,
    /// A page shows the target's metrics: the scraping generator's scrapes are
    /// followed and handed to `steered`.
    scrapes: bool,
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
            steered: None,
            scrapes: false,
        }
    }

    /// Hand every merged second, and the end of the live view, to `run` too.
    pub(crate) fn feeding(mut self, run: std::sync::Arc<DistributedRun>) -> LiveView {
        self.steered = Some(run);
        self
    }

    /// One second of the whole test: the progress line, and whether to stop every
    /// generator.
    pub(crate) fn second(&mut self, s: &LiveSecond, totals: &Totals) -> Control {
        let (failing, mut stop) = self.judge.judge(s.second.t, totals);
        // A stop asked for on the dashboard stops the test as Ctrl-C does: every
        // generator told, the results collected at once, merged as partial.
        if stop.is_none() && self.steered.as_ref().is_some_and(|r| r.state().stopping) {
            stop = Some(STOPPED_FROM_THE_DASHBOARD.to_string());
        }
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
        if let Some(run) = &self.steered {
            run.second(&s.second, &ticks(s), failing);
        }
        match stop {
            Some(why) => Control::StopAll(why),
            None => Control::Continue,
        }
    }

    /// The target's scrapes are wanted when `page` says so (a dashboard shows
    /// them): without one, the scraping generator is not asked for them.
    pub(crate) fn showing_scrapes(mut self, page: bool) -> LiveView {
        self.scrapes = page;
        self
    }

    /// Whether the target's scrapes are wanted: for the run a dashboard watches.
    pub(crate) fn wants_scrapes(&self) -> bool {
        self.scrapes && self.steered.is_some()
    }

    /// One scrape of the target by the scraping generator: to the watched run.
    pub(crate) fn scrape(&mut self, endpoint: &str, s: &pado_metrics::ScrapeOutcome) {
        if let Some(run) = &self.steered {
            run.scrape(endpoint, s);
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
            Notice::Observed(why) => format!("warning: {why}"),
        };
        if let Some(run) = &self.steered {
            match n {
                Notice::LeftOut(g, _) => run.left_out(*g),
                Notice::Stopping(_) => run.stopping(),
                Notice::StopFailed(..) | Notice::Observed(_) => {}
            }
        }
        // A stop is said even with --quiet: it changes the result.
        if !self.quiet || matches!(n, Notice::Stopping(_)) {
            self.progress.finish();
            eprintln!("{line}");
        }
    }

    /// Ends the progress line (and the dashboard's live view).
    pub(crate) fn finish(&mut self) {
        self.progress.finish();
        if let Some(run) = &self.steered {
            run.ended();
        }
    }
}

/// Each generator's part of a merged second: its requests, and its CPU in percent
/// of one core (its workers' CPU time over its longest worker's span).
pub(crate) fn ticks(s: &LiveSecond) -> Vec<Option<GeneratorTick>> {
    s.requests
        .iter()
        .enumerate()
        .map(|(g, req)| {
            let requests = (*req)?;
            let cpu_pct = s
                .generators
                .get(g)
                .and_then(Option::as_ref)
                .filter(|f| f.span_ns > 0)
                .map(|f| f.cpu_ns as f64 / f.span_ns as f64 * 100.0);
            Some(GeneratorTick { requests, cpu_pct })
        })
        .collect()
}

/// The live page of a test on many generators, when `--dashboard` asked for one:
/// it watches and steers `run` (marked distributed, so the page shows the
/// generators), and compares with `--baseline`'s run.
pub(crate) fn page(
    spec: Option<&crate::dashboard_cmd::DashboardSpec>,
    plan: &pado_engine::RunPlan,
    thresholds: &[Threshold],
    run: &std::sync::Arc<DistributedRun>,
) -> Result<Option<pado_dashboard::Dashboard>, crate::exit::Failure> {
    let Some(spec) = spec else {
        return Ok(None);
    };
    let baseline = spec.find_baseline(&plan.name)?;
    let mut info = pado_dashboard::RunInfo::from_plan(plan, thresholds);
    info.distributed = true;
    spec.start(run.clone(), info, baseline).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pado_metrics::{GeneratorSecond, SecondRecord};

    #[test]
    fn each_generator_s_share_is_its_requests_and_its_cpu_over_its_span() {
        let s = LiveSecond {
            second: SecondRecord::new(3),
            generators: vec![
                Some(GeneratorSecond {
                    cpu_ns: 1_500_000_000,
                    span_ns: 1_000_000_000,
                    ..Default::default()
                }),
                // A generator that measured no span: no CPU figure, never a division by 0.
                Some(GeneratorSecond::default()),
                None,
            ],
            requests: vec![Some(120), Some(80), None],
            reporting: 2,
        };
        assert_eq!(
            ticks(&s),
            vec![
                Some(GeneratorTick {
                    requests: 120,
                    cpu_pct: Some(150.0)
                }),
                Some(GeneratorTick {
                    requests: 80,
                    cpu_pct: None
                }),
                None,
            ]
        );
    }

    /// A distributed run of one closed-model scenario on one generator that takes
    /// every change.
    fn steered() -> std::sync::Arc<DistributedRun> {
        let yaml = "name: t\ntarget: http://127.0.0.1:9\nscenarios:\n  s:\n    executor: constant-vus\n    vus: 2\n    duration: 10s\n    flow:\n      - request: /\n";
        let config = pado_scenario::parse_str(yaml, "t.yaml").unwrap();
        let plan = pado_engine::compile(&config, std::path::Path::new(".")).unwrap();
        let segment = pado_engine::executor::segment::Segment::new(0, 1, None).unwrap();
        std::sync::Arc::new(DistributedRun::new(
            std::sync::Arc::new(plan),
            vec![pado_session::Generator {
                name: "g".into(),
                segment,
            }],
            std::sync::Arc::new(|_, _| Ok(())),
        ))
    }

    fn second(t: u32) -> LiveSecond {
        LiveSecond {
            second: SecondRecord::new(t),
            generators: vec![None],
            requests: vec![Some(1)],
            reporting: 1,
        }
    }

    #[test]
    fn a_stop_asked_on_the_dashboard_stops_every_generator_and_a_pause_does_not() {
        let run = steered();
        let mut view = LiveView::new(
            true,
            10.0,
            Vec::new(),
            &[],
            &pado_metrics::StepCatalog::default(),
            vec!["g".into()],
        )
        .feeding(run.clone());
        let totals = Totals::default();
        assert_eq!(view.second(&second(0), &totals), Control::Continue);
        pado_session::LiveRun::apply(&*run, &pado_session::ControlCommand::Pause).unwrap();
        assert_eq!(view.second(&second(1), &totals), Control::Continue);
        pado_session::LiveRun::apply(&*run, &pado_session::ControlCommand::Stop).unwrap();
        assert_eq!(
            view.second(&second(2), &totals),
            Control::StopAll(STOPPED_FROM_THE_DASHBOARD.into())
        );
        view.finish();
        assert!(pado_session::LiveRun::state(&*run).ended);
    }
}
