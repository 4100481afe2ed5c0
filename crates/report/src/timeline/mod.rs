//! The compact per-second view of a run that the charts and the CSV export read, and
//! the single pass over the timeline that builds it along with the totals and the
//! stage figures.
//!
//! A second of `timeline.jsonl` decodes to seven HDR histograms per series (tens of KB
//! each); keeping those for a 4-hour run takes gigabytes. [`RunFold`] takes the
//! seconds one at a time, folds them into the run's [`Totals`] and one accumulator per
//! stage (memory bounded by the number of series and stages), and keeps per second
//! only a [`SecondPoint`]: counts and a handful of duration percentiles, about a
//! hundred bytes per step.

use std::collections::BTreeMap;

use pado_analysis::self_check::GenSecond;
use pado_metrics::{
    ErrorKind, GeneratorSecond, LagHistogram, LatencyHistogram, Phase, SecondRecord, SeriesKey,
    SeriesStats, Totals,
};
use pado_results::RunMeta;

use crate::stages::{second_in_window, StageAcc, StageStats};
use crate::summary::LoadedRun;

mod llm;
pub use llm::LlmPoint;

/// `http_req_duration` of one row of one second, in µs as the histograms hold them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PointLatency {
    /// Median.
    pub p50_us: u64,
    /// 90th percentile.
    pub p90_us: u64,
    /// 95th percentile.
    pub p95_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// Largest value (highest equivalent value).
    pub max_us: u64,
    /// Arithmetic mean.
    pub mean_us: f64,
}

impl PointLatency {
    /// The figures of `h`; `None` when it is empty.
    pub fn of(h: &LatencyHistogram) -> Option<Self> {
        (!h.is_empty()).then(|| {
            // One walk for the four (a walk per quantile was a fifth of a merge's
            // report fold).
            let [p50_us, p90_us, p95_us, p99_us] = h.quantiles_us([0.50, 0.90, 0.95, 0.99]);
            PointLatency {
                p50_us,
                p90_us,
                p95_us,
                p99_us,
                max_us: h.max_us(),
                mean_us: h.mean_us(),
            }
        })
    }
}

/// Counts and duration figures of one row (all series, or one step) of one second.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PointStats {
    /// Requests completed.
    pub requests: u64,
    /// Failed requests.
    pub failed: u64,
    /// Bytes written.
    pub bytes_sent: u64,
    /// Bytes read.
    pub bytes_received: u64,
    /// `http_req_duration`; `None` when nothing was timed.
    pub latency: Option<PointLatency>,
    /// Mean time to first byte (`http_req_waiting`) in µs; `None` when nothing was timed.
    pub ttfb_mean_us: Option<f64>,
}

impl PointStats {
    /// Counts and duration figures of one series.
    fn of(s: &SeriesStats) -> Self {
        PointStats {
            requests: s.requests,
            failed: s.failed,
            bytes_sent: s.bytes_sent,
            bytes_received: s.bytes_received,
            latency: PointLatency::of(s.phase(Phase::Duration)),
            ttfb_mean_us: {
                let w = s.phase(Phase::Waiting);
                (!w.is_empty()).then(|| w.mean_us())
            },
        }
    }
}

/// What the charts and the CSV export keep of one second of the timeline.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SecondPoint {
    /// Second of the run.
    pub t: u32,
    /// Active VUs.
    pub vus: u32,
    /// Allocated VUs.
    pub vus_max: u32,
    /// Open model: arrivals that started an iteration in this second (0 in result
    /// directories written before pado counted them) and arrivals dropped; their
    /// sum is the load the second offered.
    pub arrivals_started: u64,
    /// Open model: arrivals dropped in this second (no VU was free).
    pub arrivals_dropped: u64,
    /// All series of the second.
    pub all: PointStats,
    /// Per step with a series in this second (series of the same name merged,
    /// whatever their tags), in name order: index into [`LoadedRun::step_names`].
    pub steps: Box<[(u32, PointStats)]>,
    /// Failures by category (`http_<code>`, transport kinds, `check_failed`) summed
    /// over the series of the second that had failed requests: index into
    /// [`LoadedRun::error_names`], count.
    pub errors: Box<[(u32, u64)]>,
    /// The generator's own CPU, run-queue wait and event-loop lag in this second, for
    /// the self-check and its chart; `None` in result directories written before pado
    /// measured itself.
    pub generator: Option<GenSecond>,
    /// Event streams and LLM figures of all `sse:` steps in this second; `None`
    /// when no stream ended in it (boxed: most runs have none).
    pub llm: Option<Box<LlmPoint>>,
    /// The same per `sse:` step with a stream ended in this second, in name order:
    /// index into [`LoadedRun::step_names`].
    pub llm_steps: Box<[(u32, LlmPoint)]>,
}

/// The self-check's view of one second's generator figures.
pub fn gen_second(t: u32, g: &GeneratorSecond) -> GenSecond {
    GenSecond {
        t,
        span_s: g.span_s(),
        cores: g.cores(),
        busy_max: g.busy_max,
        wait_share: g.wait_share(),
        wait_max: g.wait_max,
        lag_p99_ms: g.lag_p99_us as f64 / 1000.0,
        lag_max_ms: g.lag.max_us as f64 / 1000.0,
        rss_bytes: g.rss_bytes,
    }
}

impl SecondPoint {
    /// Stats of step `idx` (index into [`LoadedRun::step_names`]) in this second, if
    /// it had requests.
    pub fn step(&self, idx: u32) -> Option<&PointStats> {
        self.steps.iter().find(|s| s.0 == idx).map(|s| &s.1)
    }

    /// Event-stream figures of step `idx` in this second, if it ended a stream.
    pub fn llm_step(&self, idx: u32) -> Option<&LlmPoint> {
        self.llm_steps.iter().find(|s| s.0 == idx).map(|s| &s.1)
    }

    /// Failures of category `idx` (index into [`LoadedRun::error_names`]).
    pub fn error(&self, idx: u32) -> u64 {
        self.errors
            .iter()
            .find(|e| e.0 == idx)
            .map(|e| e.1)
            .unwrap_or(0)
    }
}

/// Names given small numbers in order of first appearance.
#[derive(Default)]
struct Interner {
    names: Vec<String>,
    index: BTreeMap<String, u32>,
}

impl Interner {
    fn get(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }
}

/// Counts and the `http_req_duration` histogram of some series over some seconds:
/// everything the per-second rows and the stage table read, without the six other
/// phase histograms a [`SeriesStats`] carries.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tally {
    requests: u64,
    failed: u64,
    check_failed: u64,
    bytes_sent: u64,
    bytes_received: u64,
    /// Responses by status code, sorted by code.
    status: Vec<(u16, u64)>,
    /// Statuses of 400 or more the steps expected (not failures).
    expected_status: Vec<(u16, u64)>,
    errors: [u64; ErrorKind::ALL.len()],
    duration: LatencyHistogram,
    /// Sum and count of time to first byte (µs), for its mean.
    ttfb_sum_us: f64,
    ttfb_n: u64,
}

/// A status code and how many responses had it.
type StatusCount = (u16, u64);

impl Tally {
    fn add_counts(
        &mut self,
        (requests, failed, check_failed): (u64, u64, u64),
        (bytes_sent, bytes_received): (u64, u64),
        (status, expected): (&[StatusCount], &[StatusCount]),
        errors: &[u64],
        duration: &LatencyHistogram,
    ) {
        self.requests += requests;
        self.failed += failed;
        self.check_failed += check_failed;
        self.bytes_sent += bytes_sent;
        self.bytes_received += bytes_received;
        for &(code, n) in status {
            match self.status.binary_search_by_key(&code, |e| e.0) {
                Ok(i) => self.status[i].1 += n,
                Err(i) => self.status.insert(i, (code, n)),
            }
        }
        for &(code, n) in expected {
            match self.expected_status.binary_search_by_key(&code, |e| e.0) {
                Ok(i) => self.expected_status[i].1 += n,
                Err(i) => self.expected_status.insert(i, (code, n)),
            }
        }
        for (a, b) in self.errors.iter_mut().zip(errors) {
            *a += b;
        }
        self.duration.add(duration);
    }

    /// Add a series' counts and duration histogram.
    pub(crate) fn add_series(&mut self, s: &SeriesStats) {
        let w = s.phase(Phase::Waiting);
        if !w.is_empty() {
            self.ttfb_sum_us += w.mean_us() * w.count() as f64;
            self.ttfb_n += w.count();
        }
        self.add_counts(
            (s.requests, s.failed, s.check_failed),
            (s.bytes_sent, s.bytes_received),
            (&s.status, &s.expected_status),
            &s.errors,
            s.phase(Phase::Duration),
        );
    }

    /// Add another tally.
    pub(crate) fn add(&mut self, o: &Tally) {
        self.ttfb_sum_us += o.ttfb_sum_us;
        self.ttfb_n += o.ttfb_n;
        self.add_counts(
            (o.requests, o.failed, o.check_failed),
            (o.bytes_sent, o.bytes_received),
            (&o.status, &o.expected_status),
            &o.errors,
            &o.duration,
        );
    }

    /// As a series named `all` (only the duration histogram filled), for
    /// [`SeriesStats::error_breakdown`] and the latency summary.
    pub(crate) fn into_series(self) -> SeriesStats {
        let mut s = SeriesStats::new(SeriesKey::named("all"));
        s.requests = self.requests;
        s.failed = self.failed;
        s.check_failed = self.check_failed;
        s.bytes_sent = self.bytes_sent;
        s.bytes_received = self.bytes_received;
        s.status = self.status;
        s.expected_status = self.expected_status;
        s.errors = self.errors;
        s.hist[Phase::Duration as usize] = self.duration;
        s
    }

    fn point(&self) -> PointStats {
        PointStats {
            requests: self.requests,
            failed: self.failed,
            bytes_sent: self.bytes_sent,
            bytes_received: self.bytes_received,
            latency: PointLatency::of(&self.duration),
            ttfb_mean_us: (self.ttfb_n > 0).then(|| self.ttfb_sum_us / self.ttfb_n as f64),
        }
    }
}

/// Label of the stage-table row for the seconds after the last stage: requests that
/// finished during the graceful stop (and teardown).
pub const GRACEFUL_STOP_ROW: &str = "after the last stage (graceful stop)";

/// One pass over a run's timeline: feed it the seconds in file order with
/// [`RunFold::add_second`], then [`RunFold::finish`] gives the [`LoadedRun`]. Holds
/// the run's totals, one accumulator per stage and a [`SecondPoint`] per second seen.
pub struct RunFold {
    meta: RunMeta,
    totals: Totals,
    stages: Vec<StageAcc>,
    /// Seconds after the executor stages' last window (the graceful stop's tail,
    /// teardown): their own row, so the rows add up to the run's requests while each
    /// stage's rate stays that of its window.
    tail: StageAcc,
    /// End of the executor stages' last window, seconds (0 without stages).
    stages_end: f64,
    points: Vec<SecondPoint>,
    steps: Interner,
    errors: Interner,
    generator_lag: LagHistogram,
    /// The run's events (`events.jsonl`), judged on the same seconds.
    events: pado_analysis::events::EventFold,
    /// The seconds of each stage or window a threshold is scoped to, and those
    /// thresholds with their position in `meta.thresholds`.
    windows: pado_analysis::scoped::WindowFold,
    scoped: Vec<(usize, pado_analysis::thresholds::Threshold)>,
}

impl RunFold {
    /// Start folding a run described by `meta` (its stage windows decide which
    /// seconds each stage row sums).
    pub fn new(meta: RunMeta) -> Self {
        // A threshold that does not parse is said by the summary's build.
        let scoped: Vec<(usize, pado_analysis::thresholds::Threshold)> = meta
            .thresholds
            .iter()
            .enumerate()
            .filter_map(|(i, spec)| Some((i, crate::summary::parse_spec(spec).ok()?)))
            .filter(|(_, t)| t.scope.is_some())
            .collect();
        let windows = pado_analysis::scoped::WindowFold::new(
            scoped
                .iter()
                .filter_map(|(_, t)| t.scope.as_ref()?.window_s),
        );
        RunFold {
            windows,
            scoped,
            stages: meta.stages.iter().map(|_| StageAcc::default()).collect(),
            tail: StageAcc::default(),
            stages_end: meta
                .stages
                .iter()
                .filter(|st| st.is_executor_stage())
                .map(|st| st.end_s)
                .fold(0.0, f64::max),
            meta,
            totals: Totals::default(),
            points: Vec::new(),
            steps: Interner::default(),
            errors: Interner::default(),
            generator_lag: LagHistogram::default(),
            events: pado_analysis::events::EventFold::new(Vec::new()),
        }
    }

    /// Judge these events (`events.jsonl`) on the seconds folded from now on.
    pub fn with_events(mut self, events: Vec<pado_results::events::EventRecord>) -> Self {
        self.events =
            pado_analysis::events::EventFold::new(events).with_steps(self.meta.steps.clone());
        self
    }

    /// Fold one second in.
    pub fn add_second(&mut self, mut rec: SecondRecord) {
        let mut by_name: Vec<&SeriesStats> = rec.series.iter().collect();
        by_name.sort_by(|a, b| a.key.name.cmp(&b.key.name));
        let mut all = Tally::default();
        let mut steps = Vec::new();
        let mut errors: BTreeMap<String, u64> = BTreeMap::new();
        let mut llm_all = llm::LlmSecond::default();
        let mut llm_steps = Vec::new();
        for group in by_name.chunk_by(|a, b| a.key.name == b.key.name) {
            let mut llm_step = llm::LlmSecond::default();
            for e in group.iter().filter_map(|s| s.sse.as_deref()) {
                llm_step.add(e);
                llm_all.add(e);
            }
            if let Some(p) = llm_step.point() {
                llm_steps.push((self.steps.get(&group[0].key.name), p));
            }
            let stats = if let [only] = group {
                PointStats::of(only)
            } else {
                let mut step = Tally::default();
                for s in group {
                    step.add_series(s);
                }
                step.point()
            };
            steps.push((self.steps.get(&group[0].key.name), stats));
            for s in group {
                all.add_series(s);
                if s.failed > 0 {
                    for (k, n) in s.error_breakdown() {
                        *errors.entry(k).or_insert(0) += n;
                    }
                }
            }
        }

        for (acc, st) in self.stages.iter_mut().zip(&self.meta.stages) {
            if second_in_window(rec.t, st.start_s, st.end_s) {
                acc.add(rec.vus, &all);
            }
        }
        if self.stages_end > 0.0 && second_in_window(rec.t, self.stages_end, f64::INFINITY) {
            self.tail.add(rec.vus, &all);
        }

        let errors: Vec<(u32, u64)> = errors
            .into_iter()
            .map(|(k, n)| (self.errors.get(&k), n))
            .collect();
        if let Some(g) = &rec.generator {
            self.generator_lag.merge(&g.lag);
        }
        self.events.add_second(&rec);
        if !self.windows.is_empty() {
            self.windows.add_second(&rec);
        }
        let (arrivals_started, arrivals_dropped) =
            rec.scenarios.iter().fold((0u64, 0u64), |(s, d), sc| {
                (s.saturating_add(sc.started), d.saturating_add(sc.dropped))
            });
        self.points.push(SecondPoint {
            t: rec.t,
            vus: rec.vus,
            vus_max: rec.vus_max,
            arrivals_started,
            arrivals_dropped,
            all: all.point(),
            steps: steps.into_boxed_slice(),
            errors: errors.into_boxed_slice(),
            generator: rec.generator.as_ref().map(|g| gen_second(rec.t, g)),
            llm: llm_all.point().map(Box::new),
            llm_steps: llm_steps.into_boxed_slice(),
        });

        // Totals: everything but the series through `Totals::add_second`; the series
        // moved in (no copy of their histograms) or merged, as it would merge them.
        let series = std::mem::take(&mut rec.series);
        self.totals.add_second(&rec);
        for s in series {
            match self.totals.series.binary_search_by(|x| x.key.cmp(&s.key)) {
                Ok(i) => self.totals.series[i].merge(&s),
                Err(i) => self.totals.series.insert(i, s),
            }
        }
    }

    /// The loaded run.
    pub fn finish(mut self) -> LoadedRun {
        self.points.shrink_to_fit();
        let mut stages: Vec<StageStats> = self
            .stages
            .into_iter()
            .zip(&self.meta.stages)
            .map(|(acc, st)| acc.finish(st))
            .collect();
        if self.tail.seconds() > 0 {
            let last_t = self.points.last().map_or(0, |p| p.t);
            let mark = pado_results::StageMark {
                index: stages.len(),
                start_s: self.stages_end,
                end_s: f64::from(last_t.saturating_add(1)).max(self.stages_end),
                label: GRACEFUL_STOP_ROW.to_string(),
                ..Default::default()
            };
            stages.push(self.tail.finish(&mark));
        }
        LoadedRun {
            totals: self.totals,
            points: self.points,
            stages,
            step_names: self.steps.names,
            error_names: self.errors.names,
            observations: Default::default(),
            generator_lag: self.generator_lag,
            generators: None,
            events: self.events.finish(),
            scoped: self
                .scoped
                .iter()
                .map(|(i, t)| (*i, self.windows.evaluate(t, &self.meta.steps)))
                .collect(),
            meta: self.meta,
            in_progress: false,
        }
    }
}

impl LoadedRun {
    /// A run folded from seconds already in memory (tests, merges).
    pub fn from_seconds(
        meta: RunMeta,
        seconds: impl IntoIterator<Item = SecondRecord>,
    ) -> LoadedRun {
        let mut f = RunFold::new(meta);
        for s in seconds {
            f.add_second(s);
        }
        f.finish()
    }

    /// Estimated heap bytes of the per-second data ([`LoadedRun::points`] and what
    /// they point to, and the name tables): the part of a loaded run that grows with
    /// the length of the run. The rest ([`LoadedRun::totals`], [`LoadedRun::stages`])
    /// is bounded by the number of series and stages. Counts two words of allocator
    /// overhead per allocation.
    pub fn timeline_heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let alloc = |bytes: usize| if bytes == 0 { 0 } else { bytes + 16 };
        let points = alloc(self.points.capacity() * size_of::<SecondPoint>())
            + self
                .points
                .iter()
                .map(|p| {
                    alloc(std::mem::size_of_val(&*p.steps))
                        + alloc(std::mem::size_of_val(&*p.errors))
                })
                .sum::<usize>();
        let names = |v: &Vec<String>| {
            v.capacity() * size_of::<String>() + v.iter().map(|s| s.capacity()).sum::<usize>()
        };
        points + names(&self.step_names) + names(&self.error_names)
    }
}

#[cfg(test)]
mod tests;
