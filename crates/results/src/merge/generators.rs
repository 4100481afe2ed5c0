//! `generators.json`: one entry per generator of a merged result, computed from its
//! own seconds, so reports can show each generator's share, throughput, latency and
//! self-check from the merged directory alone.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};

use serde::{Deserialize, Serialize};

use crate::result_dir::EncodedSecond;
use crate::result_dir::{ResultDir, ResultError};
use pado_metrics::latency::HistogramDecoder;
use pado_metrics::{GeneratorSecond, LagHistogram, LatencyHistogram, LatencySummary, SecondRecord};

/// File name of the per-generator breakdown in a merged result directory.
pub const GENERATORS_FILE: &str = "generators.json";

/// What `generators.json` holds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorsFile {
    /// One entry per generator merged, in segment order.
    pub generators: Vec<GeneratorFigures>,
    /// Why the merge is not the whole test (missing segments, segments that ended
    /// early), one sentence each; empty for a complete merge.
    #[serde(default)]
    pub partial: Vec<String>,
}

/// One generator's own figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorFigures {
    /// Its segment index (0-based).
    pub index: u32,
    /// Segments of the test.
    pub count: u32,
    /// Its share of the load (its weight over the sum of weights, 0..=1).
    pub share: f64,
    /// The directory it was merged from, as given.
    pub source: String,
    /// Where its second 0 fell on the merged timeline (whole seconds).
    pub offset_s: u32,
    /// How far its start was from the agreed start (`--start-at`), or from the
    /// earliest generator's start without one, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_skew_ms: Option<f64>,
    /// Its wall-clock length, seconds (the seconds of its timeline when it was killed).
    pub duration_s: f64,
    /// Whether it stopped early (interrupted, killed, or its timeline ends before
    /// the planned end).
    pub ended_early: bool,
    /// Worker threads.
    pub workers: usize,
    /// Cores it was allowed to use (0: unknown).
    pub cores_allowed: usize,
    /// Requests it completed.
    pub requests: u64,
    /// Of them, failed.
    pub failed: u64,
    /// Its `http_req_duration`, ms (exact, from its own histograms).
    pub latency_ms: LatencySummary,
    /// Whether any of its scenarios is open-model (late starts count there).
    pub open_model: bool,
    /// Iterations started (completed or interrupted).
    pub iterations_started: u64,
    /// Open model: iterations started late.
    pub late_iterations: u64,
    /// Open model: iterations dropped.
    pub dropped_iterations: u64,
    /// Event-loop lag p99 over all its wake-ups, ms.
    pub lag_p99_ms: f64,
    /// Its latest event-loop wake-up, ms.
    pub lag_max_ms: f64,
    /// Its own per-second CPU, run-queue wait and lag, on the merged timeline's `t`:
    /// what its self-check reads.
    #[serde(default)]
    pub seconds: Vec<GeneratorSecondFigures>,
}

/// One generator's own figures for one second (a timeline `generator` object
/// without its lag histogram).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorSecondFigures {
    /// Second of the merged timeline.
    pub t: u32,
    /// Workers that reported.
    pub workers: u32,
    /// Sum of the workers' spans, ns.
    pub wall_ns: u64,
    /// Longest worker span, ns.
    pub span_ns: u64,
    /// CPU of all workers, ns.
    pub cpu_ns: u64,
    /// Run-queue wait, ns, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ns: Option<u64>,
    /// Busiest worker's CPU share.
    pub busy_max: f64,
    /// Longest-waiting worker's share, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_max: Option<f64>,
    /// Worst worker's lag p99, µs.
    pub lag_p99_us: u64,
    /// Latest wake-up, µs.
    pub lag_max_us: u64,
    /// The generator's resident memory, bytes; absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
}

impl GeneratorSecondFigures {
    fn of(t: u32, g: &GeneratorSecond) -> Self {
        GeneratorSecondFigures {
            t,
            workers: g.workers,
            wall_ns: g.wall_ns,
            span_ns: g.span_ns,
            cpu_ns: g.cpu_ns,
            wait_ns: g.wait_ns,
            busy_max: g.busy_max,
            wait_max: g.wait_max,
            lag_p99_us: g.lag_p99_us,
            lag_max_us: g.lag.max_us,
            rss_bytes: g.rss_bytes,
        }
    }

    /// Back to a [`GeneratorSecond`] (with an empty lag histogram whose largest
    /// sample is kept), for the code that reads timeline seconds.
    pub fn to_second(&self) -> GeneratorSecond {
        GeneratorSecond {
            workers: self.workers,
            wall_ns: self.wall_ns,
            span_ns: self.span_ns,
            cpu_ns: self.cpu_ns,
            wait_ns: self.wait_ns,
            busy_max: self.busy_max,
            wait_max: self.wait_max,
            lag_p99_us: self.lag_p99_us,
            lag: LagHistogram {
                max_us: self.lag_max_us,
                ..Default::default()
            },
            rss_bytes: self.rss_bytes,
        }
    }
}

/// Sums one generator's seconds as the merge streams them: a duration histogram,
/// a few counters and its per-second generator figures (about 80 bytes a second).
#[derive(Default)]
pub(crate) struct Tally {
    pub figures: GeneratorFigures,
    duration: LatencyHistogram,
    lag: LagHistogram,
    /// Active and allocated VUs of its last second added.
    last_vus: Option<(u32, u32)>,
}

impl Tally {
    pub(crate) fn new(figures: GeneratorFigures) -> Self {
        Tally {
            figures,
            ..Default::default()
        }
    }

    /// Add one of its seconds into the merged second `acc` (`t` on the merged
    /// timeline) and fold its own figures in.
    pub(crate) fn add(
        &mut self,
        t: u32,
        acc: &mut SecondRecord,
        sec: EncodedSecond,
        dec: &mut HistogramDecoder,
    ) -> Result<(), String> {
        let own = sec.add_to(acc, dec, &mut self.duration)?;
        self.last_vus = Some(own.vus);
        let f = &mut self.figures;
        f.requests = f.requests.saturating_add(own.requests);
        f.failed = f.failed.saturating_add(own.failed);
        f.iterations_started = f.iterations_started.saturating_add(own.iterations_started);
        f.late_iterations = f.late_iterations.saturating_add(own.late);
        f.dropped_iterations = f.dropped_iterations.saturating_add(own.dropped);
        if let Some(g) = &own.generator {
            self.lag.merge(&g.lag);
            f.seconds.push(GeneratorSecondFigures::of(t, g));
        }
        Ok(())
    }

    /// A second of the merged timeline this generator did not write, while its run
    /// was still going (it wrote seconds before and after): its VUs did not stop, so
    /// the second keeps its last counts instead of dropping its share of the load to
    /// 0 on a VU chart, as a single run's aggregator does for a second no worker
    /// reported.
    pub(crate) fn carry_vus(&self, acc: &mut SecondRecord) {
        if let Some((vus, vus_max)) = self.last_vus {
            acc.vus = acc.vus.saturating_add(vus);
            acc.vus_max = acc.vus_max.saturating_add(vus_max);
        }
    }

    pub(crate) fn finish(mut self) -> GeneratorFigures {
        self.figures.latency_ms = self.duration.summary();
        self.figures.lag_p99_ms = self.lag.quantile_us(0.99) as f64 / 1000.0;
        self.figures.lag_max_ms = self.lag.max_us as f64 / 1000.0;
        self.figures
    }
}

impl ResultDir {
    /// Write `generators.json` (compact: it holds a line of figures per generator
    /// and second).
    pub fn write_generators(&self, g: &GeneratorsFile) -> Result<(), ResultError> {
        let p = self.path().join(GENERATORS_FILE);
        let io = |e: std::io::Error| ResultError::Io {
            path: p.clone(),
            source: e,
        };
        let mut w = BufWriter::new(File::create(&p).map_err(io)?);
        serde_json::to_writer(&mut w, g).map_err(|e| ResultError::Format {
            path: p.clone(),
            line: 1,
            message: e.to_string(),
        })?;
        w.write_all(b"\n").map_err(io)?;
        w.flush().map_err(io)
    }

    /// Read `generators.json`; `None` for a run of one generator (no such file).
    pub fn read_generators(&self) -> Result<Option<GeneratorsFile>, ResultError> {
        let p = self.path().join(GENERATORS_FILE);
        let f = match File::open(&p) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(ResultError::Io { path: p, source: e }),
        };
        serde_json::from_reader(BufReader::new(f))
            .map(Some)
            .map_err(|e| ResultError::Format {
                path: p.clone(),
                line: e.line(),
                message: e.to_string(),
            })
    }
}

/// Share of segment `index` under `weights` (all equal when the weights are absent).
pub(crate) fn share(index: u32, count: u32, weights: &[u32]) -> f64 {
    let sum: u64 = weights.iter().map(|w| u64::from(*w)).sum();
    match weights.get(index as usize) {
        Some(w) if sum > 0 => f64::from(*w) / sum as f64,
        _ => 1.0 / f64::from(count.max(1)),
    }
}
