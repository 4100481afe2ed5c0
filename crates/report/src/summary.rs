//! The end-of-run summary: built from a result directory only (so `pado report` on a
//! directory from another machine gives the same answer), serialised as
//! `summary.json` with the contract keys of the architecture guide.

use std::collections::BTreeMap;

use pado_analysis::thresholds::{self, ThresholdResult};
use pado_analysis::TotalsSource;
use pado_metrics::{LatencySummary, Phase, ResultDir, ResultError, RunMeta, ScenarioMeta, Totals};
use serde::{Deserialize, Serialize};

use crate::stages::StageStats;
use crate::timeline::{RunFold, SecondPoint};

/// Why a summary could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The result directory could not be read.
    #[error(transparent)]
    Result(#[from] ResultError),
    /// A threshold stored in run.json does not parse (edited by hand?).
    #[error("run.json: threshold `{metric}: {expr}`: {message}")]
    Threshold {
        /// Metric key.
        metric: String,
        /// Expression.
        expr: String,
        /// Why.
        message: String,
    },
}

use pado_metrics::fmt::size_exact as size_words;

/// Per-step figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepSummary {
    /// Requests.
    pub requests: u64,
    /// Failed requests.
    pub failed: u64,
    /// Requests per second over the run.
    pub rps: f64,
    /// Failures by category.
    pub errors: BTreeMap<String, u64>,
    /// `http_req_duration` in ms.
    pub latency_ms: LatencySummary,
    /// `http_req_waiting` (time to first byte) in ms.
    pub waiting_ms: LatencySummary,
}

/// Pass/fail counts of a check.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckSummary {
    /// Passes.
    pub passes: u64,
    /// Fails.
    pub fails: u64,
}

/// Iterations of one named flow.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowSummary {
    /// Completed iterations.
    pub iterations: u64,
    /// Their duration in ms.
    pub iteration_duration_ms: LatencySummary,
}

/// The summary (`summary.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Test name.
    pub name: String,
    /// RFC 3339 start.
    pub started_at: String,
    /// Length in seconds.
    pub duration_s: f64,
    /// Requests completed (`http_reqs`).
    pub requests: u64,
    /// Failed requests.
    pub failed: u64,
    /// `failed / requests` (`http_req_failed`).
    pub failed_rate: f64,
    /// Requests per second.
    pub rps: f64,
    /// Failures by category: `http_<code>`, transport kinds, `check_failed`.
    pub errors: BTreeMap<String, u64>,
    /// Requests sent again on a new connection because the server had closed the
    /// kept-alive one before answering (not failures; see `docs/result-format.md`).
    #[serde(default)]
    pub reconnects: u64,
    /// Responses by status code.
    pub status: BTreeMap<String, u64>,
    /// `http_req_duration` in ms.
    pub latency_ms: LatencySummary,
    /// How latency was timed.
    pub latency_origin: String,
    /// Other timing phases in ms, by k6 metric name.
    pub phases_ms: BTreeMap<String, LatencySummary>,
    /// Bytes written.
    pub data_sent: u64,
    /// Bytes read.
    pub data_received: u64,
    /// Completed iterations.
    pub iterations: u64,
    /// Iterations cut off.
    pub iterations_interrupted: u64,
    /// Open model: iterations that could not start.
    pub dropped_iterations: u64,
    /// Open model: iterations that started late.
    pub late_iterations: u64,
    /// `iteration_duration` in ms.
    pub iteration_duration_ms: LatencySummary,
    /// Iterations and `iteration_duration` (ms) per named flow (`scenario/flow`).
    pub flows: BTreeMap<String, FlowSummary>,
    /// Highest active VUs.
    pub vus: u32,
    /// Highest allocated VUs.
    pub vus_max: u32,
    /// Per stage window (requests, req/s, latency, error rate): the "100 VU segment
    /// vs 200 VU segment" table users build by hand.
    #[serde(default)]
    pub stages: Vec<crate::stages::StageStats>,
    /// Throughput percentiles over seconds and TTFB variability.
    #[serde(default)]
    pub stability: crate::stability::Stability,
    /// Saturation analysis: runs with at least three load levels over ten full
    /// seconds or more while the load rose or held; `None` otherwise, and when the
    /// generator was saturated (the figures would describe pado, not the target).
    #[serde(default)]
    pub saturation: Option<pado_analysis::saturation::Saturation>,
    /// Trend of the per-second mean latency in the steady-load period that says the
    /// most (the notable drift with the largest change, else the longest period);
    /// `None` when no period of steady load lasted long enough (30 s after a 5 s
    /// warm-up). Ramps are never measured: latency rising with the load is not drift.
    #[serde(default)]
    pub drift: Option<pado_analysis::drift::PeriodDrift>,
    /// Drift in every steady-load period long enough to measure, in time order.
    #[serde(default)]
    pub drift_periods: Vec<pado_analysis::drift::PeriodDrift>,
    /// Which component limited the run, from the target's scraped metrics
    /// (absent when nothing was observed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottlenecks: Option<pado_analysis::attribution::Attribution>,
    /// Generator self-check: whether pado itself was saturated or starved (CPU,
    /// run-queue wait, event-loop lag, late starts), with the figures and a sentence
    /// saying by how much. `None` for result directories without generator figures.
    #[serde(default)]
    pub generator: Option<pado_analysis::self_check::GeneratorCheck>,
    /// A short plain-language verdict.
    #[serde(default)]
    pub verdict: Vec<String>,
    /// Per step.
    pub steps: BTreeMap<String, StepSummary>,
    /// Per step and tag set (`search{class=rare}`), for requests that carry tags.
    pub tagged: BTreeMap<String, StepSummary>,
    /// Checks by name.
    pub checks: BTreeMap<String, CheckSummary>,
    /// Threshold results in the order they were given.
    pub thresholds: Vec<ThresholdResult>,
    /// Whether all thresholds passed (true when there are none).
    pub thresholds_ok: bool,
    /// Stopped early.
    pub interrupted: bool,
    /// Scenarios as run.
    pub scenarios: Vec<ScenarioMeta>,
    /// Warnings to show the user.
    pub warnings: Vec<String>,
    /// Samples of failed requests (`failures.jsonl`): at most three per step and
    /// error category, with the URL, status, first bytes of the body and the failing
    /// check with what it saw; the "why" behind [`Summary::errors`].
    #[serde(default)]
    pub failures: Vec<pado_metrics::FailureSample>,
}

/// Everything read from a result directory, in memory bounded by the number of series
/// and stages plus about a hundred bytes per step and second (no histograms per second).
pub struct LoadedRun {
    /// run.json.
    pub meta: RunMeta,
    /// The run summed (full histograms of every series).
    pub totals: Totals,
    /// One compact point per line of timeline.jsonl, in file order: what the charts
    /// and the CSV export read.
    pub points: Vec<SecondPoint>,
    /// One row per stage of `meta.stages`, in that order.
    pub stages: Vec<StageStats>,
    /// Step names the points refer to by index ([`SecondPoint::steps`]), in order of
    /// first appearance.
    pub step_names: Vec<String>,
    /// Failure categories the points refer to by index ([`SecondPoint::errors`]).
    pub error_names: Vec<String>,
    /// The target's metrics scraped during the run (`observe.jsonl`), only the
    /// families the attribution and the charts read.
    pub observations: pado_metrics::Observations,
    /// Every event-loop probe wake-up of the run, all workers merged: the run's lag
    /// percentiles for the generator self-check.
    pub generator_lag: pado_metrics::LagHistogram,
}

/// Read a result directory, streaming its timeline (one second decoded at a time).
pub fn load(dir: &ResultDir) -> Result<LoadedRun, ReportError> {
    load_with_windows(dir, &[])
}

/// Read a result directory with extra, user-named time windows that get their own
/// rows in the stage table (e.g. `peak=30s..60s`), beside the executor's stages.
pub fn load_with_windows(
    dir: &ResultDir,
    windows: &[pado_metrics::StageMark],
) -> Result<LoadedRun, ReportError> {
    let mut meta = dir.read_meta()?;
    meta.stages.extend(windows.iter().cloned());
    let mut fold = RunFold::new(meta);
    let read = dir.for_each_second(|rec| {
        fold.add_second(rec);
        Ok(())
    })?;
    let mut run = fold.finish();
    recover_unfinished(&mut run.meta, &read);
    run.observations =
        pado_metrics::read_observations(dir.path(), &pado_analysis::attribution::wanted)?;
    run.totals.failures = dir.read_failures()?;
    Ok(run)
}

/// Make the figures of a run that pado did not finish writing honest.
///
/// `run.json` is written when the run starts with `duration_s: 0` and rewritten with
/// the real length when it ends; a 0 that stayed means pado was killed or crashed.
/// Every rate is "per second of the run", so the length becomes the seconds the
/// timeline holds (each of them complete: a second is written only once every worker
/// has reported past it), and the run is marked interrupted with a warning saying so.
/// A half-written last timeline line (left out by the reader) is said too.
fn recover_unfinished(meta: &mut RunMeta, read: &pado_metrics::TimelineRead) {
    let mut said = Vec::new();
    if meta.duration_s <= 0.0 {
        let seconds = read.last_t.map_or(0, |t| t.saturating_add(1));
        meta.duration_s = f64::from(seconds);
        meta.interrupted = true;
        said.push(format!(
            "the run was cut short at {seconds} s (pado did not finish writing it: killed or crashed); figures cover the seconds that were written"
        ));
    }
    if let Some(line) = read.torn_line {
        said.push(format!(
            "timeline.jsonl line {line} was only half written and is left out (the second it held is missing from the figures)"
        ));
    }
    // First: every figure below depends on it.
    meta.warnings.splice(0..0, said);
}

/// Build the summary of a loaded run.
pub fn build(run: &LoadedRun) -> Result<Summary, ReportError> {
    let meta = &run.meta;
    let totals = &run.totals;
    let dur = meta.duration_s.max(1e-9);
    let all = totals.overall();
    let mut parsed = Vec::new();
    for t in &meta.thresholds {
        let th = thresholds::parse_object(&t.metric, &t.expr, t.abort_on_fail).map_err(|e| {
            ReportError::Threshold {
                metric: t.metric.clone(),
                expr: t.expr.clone(),
                message: e.to_string(),
            }
        })?;
        parsed.push(th);
    }
    let results = thresholds::evaluate(&parsed, &TotalsSource::new(totals, dur));
    let mut phases_ms = BTreeMap::new();
    for p in Phase::ALL {
        if p != Phase::Duration {
            phases_ms.insert(p.metric_name().to_string(), all.phase(p).summary());
        }
    }
    let step_summary = |s: &pado_metrics::SeriesStats| StepSummary {
        requests: s.requests,
        failed: s.failed,
        rps: s.requests as f64 / dur,
        errors: s.error_breakdown(),
        latency_ms: s.phase(Phase::Duration).summary(),
        waiting_ms: s.phase(Phase::Waiting).summary(),
    };
    let steps = totals
        .by_name()
        .into_iter()
        .map(|(name, s)| (name, step_summary(&s)))
        .collect();
    let mut tagged = BTreeMap::new();
    let mut warnings = meta.warnings.clone();
    for s in totals.series.iter().filter(|s| !s.key.tags.is_empty()) {
        let tags: Vec<String> = s.key.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        tagged.insert(
            format!("{}{{{}}}", s.key.name, tags.join(",")),
            step_summary(s),
        );
        if s.key.tags.iter().any(|(_, v)| v == "~other") {
            let w = format!(
                "step `{}` produced more distinct tag values than the cap; the rest are counted under `~other` (tag with something of bounded variety, e.g. a class, not an id)",
                s.key.name
            );
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
    }
    for (name, s) in totals.by_name() {
        if s.body_cut > 0 {
            let cap = meta
                .max_body
                .map_or_else(|| "4 MiB".to_string(), size_words);
            warnings.push(format!(
                "{} responses of step `{name}` were longer than max_body ({cap}): checks and extraction saw only the first {cap}; raise max_body (`defaults: {{ max_body: 16MiB }}` or `--max-body 16MiB`)",
                s.body_cut
            ));
        }
    }
    if let Some(reason) = totals
        .failures
        .iter()
        .filter(|f| f.category == "tls")
        .find_map(|f| f.reason.as_deref())
    {
        let n = all.error_breakdown().get("tls").copied().unwrap_or(0);
        warnings.push(format!(
            "{n} requests failed in the TLS handshake: {reason}. For a test certificate, add `--insecure` (or `defaults: {{ insecure: true }}` in the file)"
        ));
    }
    if all.reconnects > 0 {
        warnings.push(format!(
            "{} requests ({:.1}%) found their kept-alive connection already closed by the server and were sent again on a new connection (not failures; the time shows as connecting): the server closes connections without `Connection: close`",
            all.reconnects,
            all.reconnects as f64 * 100.0 / all.requests.max(1) as f64
        ));
    }
    let sc = totals.all_scenarios();
    let any_open = meta.scenarios.iter().any(|s| s.open_model);
    let any_closed = meta.scenarios.iter().any(|s| !s.open_model);
    let latency_origin = match (any_open, any_closed) {
        (true, false) => "open model: from each iteration's scheduled start (first request), so a stalled target or a behind-schedule generator shows in the percentiles (no coordinated omission)",
        (false, _) => "closed model: from just before the request is written to the last response byte (as k6 and wrk); connection setup is reported separately",
        (true, true) => "mixed: open-model scenarios from the scheduled start, closed-model scenarios from the request write",
    };
    let mut summary = Summary {
        name: meta.name.clone(),
        started_at: meta.started_at.clone(),
        duration_s: meta.duration_s,
        requests: all.requests,
        failed: all.failed,
        failed_rate: if all.requests > 0 {
            all.failed as f64 / all.requests as f64
        } else {
            0.0
        },
        rps: all.requests as f64 / dur,
        errors: all.error_breakdown(),
        reconnects: all.reconnects,
        status: all
            .status_sorted()
            .into_iter()
            .map(|(c, n)| (c.to_string(), n))
            .collect(),
        latency_ms: all.phase(Phase::Duration).summary(),
        latency_origin: latency_origin.to_string(),
        phases_ms,
        data_sent: all.bytes_sent,
        data_received: all.bytes_received,
        iterations: sc.iterations,
        iterations_interrupted: sc.interrupted,
        dropped_iterations: sc.dropped,
        late_iterations: sc.late,
        iteration_duration_ms: sc.iteration_duration.summary(),
        flows: totals
            .flows
            .iter()
            .map(|f| {
                (
                    f.name.clone(),
                    FlowSummary {
                        iterations: f.iterations,
                        iteration_duration_ms: f.iteration_duration.summary(),
                    },
                )
            })
            .collect(),
        vus: totals.vus_peak,
        vus_max: totals.vus_max_peak,
        stages: run.stages.clone(),
        stability: crate::stability::stability(&run.points, meta.duration_s),
        saturation: None,
        bottlenecks: None,
        drift: None,
        drift_periods: drift_periods(run),
        generator: generator_check(run, any_open),
        verdict: Vec::new(),
        steps,
        tagged,
        checks: totals
            .checks
            .iter()
            .map(|(k, c)| {
                (
                    k.clone(),
                    CheckSummary {
                        passes: c.passes,
                        fails: c.fails,
                    },
                )
            })
            .collect(),
        thresholds_ok: results.iter().all(|r| r.ok),
        thresholds: results,
        interrupted: meta.interrupted,
        scenarios: meta.scenarios.clone(),
        warnings,
        failures: totals.failures.clone(),
    };
    summary.drift = pado_analysis::drift::headline(&summary.drift_periods).cloned();
    let generator_saturated = summary.generator.as_ref().is_some_and(|g| g.saturated);
    if !generator_saturated {
        // A saturated pado caps the load it sends: a knee would be pado's.
        summary.saturation = saturation_of(run);
    }
    summary.bottlenecks =
        bottlenecks_of(run, summary.saturation.as_ref(), summary.generator.as_ref());
    summary.verdict = verdict(&summary);
    if let Some(g) = summary.generator.as_ref().filter(|g| g.saturated) {
        // First and loud, and only here (the terminal shows it on top, the HTML report
        // in a banner): every other figure of the run is suspect.
        let loud = format!("{GENERATOR_SATURATED}: {}", g.message);
        summary.verdict.insert(0, loud);
    }
    Ok(summary)
}

/// The elimination table: the target's metrics read over the saturation window.
pub fn bottlenecks_of(
    run: &LoadedRun,
    sat: Option<&pado_analysis::saturation::Saturation>,
    generator: Option<&pado_analysis::self_check::GeneratorCheck>,
) -> Option<pado_analysis::attribution::Attribution> {
    use pado_analysis::attribution;
    if run.observations.is_empty() {
        return None;
    }
    let (window, baseline, saturated) = attribution::windows(&load_samples(run), sat)?;
    Some(attribution::attribute(
        &run.observations,
        window,
        baseline,
        saturated,
        generator
            .map(attribution::generator_component)
            .into_iter()
            .collect(),
    ))
}

/// How the self-check's finding starts, in the verdict, the warnings and the terminal
/// summary: one fixed phrase that scripts and people can look for.
pub const GENERATOR_SATURATED: &str =
    "GENERATOR SATURATED (these results measure pado, not the target)";

/// The generator self-check over the run's per-second generator figures.
fn generator_check(
    run: &LoadedRun,
    any_open: bool,
) -> Option<pado_analysis::self_check::GeneratorCheck> {
    use pado_analysis::self_check::{check, GenSecond, RunFigures};
    let seconds: Vec<GenSecond> = run.points.iter().filter_map(|p| p.generator).collect();
    let sc = run.totals.all_scenarios();
    let lag = &run.generator_lag;
    check(
        &seconds,
        &RunFigures {
            cores_allowed: run.meta.cores_allowed,
            workers: run.meta.workers,
            lag_p99_ms: lag.quantile_us(0.99) as f64 / 1000.0,
            lag_max_ms: lag.max_us as f64 / 1000.0,
            open_model: any_open,
            iterations_started: sc.iterations + sc.interrupted,
            late_iterations: sc.late,
            dropped_iterations: sc.dropped,
        },
    )
}

/// The load samples of a run for the saturation analysis: active VUs, requests and
/// p95 of each second.
fn saturation_of(run: &LoadedRun) -> Option<pado_analysis::saturation::Saturation> {
    pado_analysis::saturation::analyse(&load_samples(run), run.meta.duration_s)
}

/// Latency drift within each period of steady load (run.json's hold stages, or runs
/// of seconds at one VU count when the run has no stages).
fn drift_periods(run: &LoadedRun) -> Vec<pado_analysis::drift::PeriodDrift> {
    use pado_analysis::drift;
    let loads: Vec<(u32, f64)> = run.points.iter().map(|p| (p.t, p.vus as f64)).collect();
    if loads.is_empty() {
        return Vec::new();
    }
    let periods = drift::steady_periods(&run.meta.stages, &loads, run.meta.duration_s);
    let latency: Vec<(f64, f64)> = run
        .points
        .iter()
        .filter_map(|p| p.all.latency.map(|l| (p.t as f64, l.mean_us / 1000.0)))
        .collect();
    drift::drift_in_periods(&periods, &latency)
}

fn load_samples(run: &LoadedRun) -> Vec<pado_analysis::saturation::LoadSample> {
    run.points
        .iter()
        .map(|p| pado_analysis::saturation::LoadSample {
            t: p.t,
            load: p.vus as f64,
            rps: p.all.requests as f64,
            p95_ms: p.all.latency.map(|l| l.p95_us as f64 / 1000.0),
        })
        .collect()
}

/// A few plain sentences: was the SLA met, at what load, what limited it, what next.
fn verdict(s: &Summary) -> Vec<String> {
    let mut out = Vec::new();
    let failing: Vec<String> = s
        .thresholds
        .iter()
        .filter(|t| !t.ok)
        .map(|t| format!("{}: {}", t.metric, t.expr))
        .collect();
    if s.thresholds.is_empty() {
        out.push("no thresholds were set: add an SLA (e.g. `--threshold 'p(95) < 200'`) to get a pass/fail verdict".into());
    } else if failing.is_empty() {
        let passed = match s.thresholds.len() {
            1 => "the threshold passed".to_string(),
            n => format!("all {n} thresholds passed"),
        };
        out.push(format!(
            "SLA met: {passed} at up to {} and {:.0} req/s",
            pado_metrics::fmt::vus(s.vus_max as f64),
            s.rps
        ));
    } else {
        out.push(format!("SLA not met: {}", failing.join("; ")));
    }
    if s.failed_rate > 0.0 {
        if let Some((k, n)) = s.errors.iter().max_by_key(|(_, n)| **n) {
            out.push(format!(
                "{:.2}% of requests failed, most as `{k}` ({n})",
                s.failed_rate * 100.0
            ));
        }
    }
    if s.dropped_iterations > 0 {
        out.push(dropped_sentence(s));
    }
    if let Some(d) = s.drift.as_ref().filter(|d| d.drift.notable) {
        out.push(format!(
            "under steady load ({}, {:.0}–{:.0} s), mean latency drifted {:+.0} ms per hour ({:+.0}% over the period, p = {:.3}): a soak signal; watch memory, pools and GC over time",
            d.period.label,
            d.period.start_s,
            d.period.end_s,
            d.drift.slope_per_hour,
            d.drift.relative_change * 100.0,
            d.drift.p_value
        ));
    }
    use pado_analysis::saturation::Outcome;
    match &s.saturation {
        Some(sat) if sat.outcome == Outcome::Knee => {
            out.push(format!(
                "throughput stopped keeping up with the load at about {} (best {:.0} req/s){}; {}",
                pado_metrics::fmt::vus(sat.throughput_knee_load),
                sat.max_rps,
                if sat.throughput_falls {
                    " and fell beyond it (queueing avalanche)"
                } else {
                    ""
                },
                match sat.latency_knee_load {
                    Some(l) => format!("p95 turned upward at about {}", pado_metrics::fmt::vus(l)),
                    None => "p95 rose beyond it".into(),
                }
            ));
            if let Some(r) = sat.recovery_s {
                out.push(format!("after the load fell, p95 was back near its low-load value in {r:.0} s"));
            }
            match s.bottlenecks.as_ref().and_then(|b| b.limit.as_ref()) {
                Some(l) => out.push(format!(
                    "the limit at that load: {l} (see the bottleneck table); fix it and compare a new run with `pado compare`"
                )),
                None if s.bottlenecks.is_some() => out.push("no observed component was saturated at that load: the limit is in something not scraped (add node_exporter or the database's exporter to `observe:`)".into()),
                None => out.push("next: find what limits the service at that load (CPU, worker or connection pools, GC; `observe:` the service's metrics and pado names it) and compare a fixed run with `pado compare`".into()),
            }
        }
        Some(sat) => out.push(format!(
            "no saturation reached: throughput kept up with the load up to {} ({:.0} req/s) and latency held; the limit is above this test's load, ramp higher to find it",
            pado_metrics::fmt::vus(sat.throughput_knee_load), sat.max_rps
        )),
        None => {}
    }
    let knee_found = s
        .saturation
        .as_ref()
        .is_some_and(|sat| sat.outcome == Outcome::Knee);
    if let Some(b) = s.bottlenecks.as_ref().filter(|_| !knee_found) {
        if let Some(l) = &b.limit {
            out.push(format!("at peak load, already at its limit: {l}"));
        }
    }
    out
}

/// Dropped iterations in the words users need: what share of the planned arrivals
/// never went out, why, and the knob that fixes it. Without it a run that sent 40%
/// of its load can read as a pass.
pub fn dropped_sentence(s: &Summary) -> String {
    dropped_words(
        s.dropped_iterations,
        s.iterations + s.iterations_interrupted,
        s.vus_max,
    )
}

/// `dropped` of `dropped + started` planned arrivals never sent, with a pool of at
/// most `pool` VUs (shared by the summary and the live progress line).
pub fn dropped_words(dropped: u64, started: u64, pool: u32) -> String {
    let planned = (dropped + started).max(1) as f64;
    let pct = dropped as f64 * 100.0 / planned;
    let share = if pct >= 1.0 {
        format!("{pct:.0}%")
    } else {
        format!("{pct:.1}%")
    };
    format!(
        "{share} of the planned arrivals ({} of {}) were never sent: the VU pool (max {pool}) was exhausted; raise --max-vus (or max_vus in the file)",
        pado_metrics::fmt::thousands(dropped),
        pado_metrics::fmt::thousands(dropped + started),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::render_html;
    use crate::stages::test_support::*;
    use crate::text::{render, TextOptions};

    fn tmpdir(name: &str) -> ResultDir {
        let d = std::env::temp_dir().join(format!("pado-summary-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        ResultDir::create(d).unwrap()
    }

    /// `seconds` seconds of 100 requests each, then (if `torn`) the first half of one
    /// more line, as a writer killed mid-line leaves it.
    fn write_killed(dir: &ResultDir, m: &RunMeta, seconds: u32, torn: bool) {
        dir.write_meta(m).unwrap();
        let mut w = dir.timeline_writer().unwrap();
        for t in 0..seconds {
            w.write(&second(t, 4, vec![series("a", 100, 200, 2_000)]))
                .unwrap();
        }
        drop(w);
        if torn {
            let other = tmpdir("killed-extra");
            let mut w = other.timeline_writer().unwrap();
            w.write(&second(seconds, 4, vec![series("a", 100, 200, 2_000)]))
                .unwrap();
            drop(w);
            let line = std::fs::read_to_string(other.path().join("timeline.jsonl")).unwrap();
            let _ = std::fs::remove_dir_all(other.path());
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(dir.path().join("timeline.jsonl"))
                .unwrap();
            std::io::Write::write_all(&mut f, &line.as_bytes()[..line.len() / 2]).unwrap();
        }
    }

    /// A run whose pado was killed: run.json still says `duration_s: 0` (as written at
    /// the start), the last line is torn. Rates are over the seconds written, the run
    /// is marked interrupted and the summary says why.
    #[test]
    fn a_killed_run_is_summarised_over_the_seconds_written() {
        let dir = tmpdir("killed");
        write_killed(&dir, &meta("killed", 0.0), 12, true);
        let r = load(&dir).unwrap();
        assert_eq!(r.points.len(), 12);
        assert_eq!(r.meta.duration_s, 12.0);
        let s = build(&r).unwrap();
        assert_eq!(s.requests, 1_200);
        assert!((s.rps - 100.0).abs() < 1e-9, "{}", s.rps);
        assert!((s.steps["a"].rps - 100.0).abs() < 1e-9);
        assert_eq!(s.duration_s, 12.0);
        assert!(s.interrupted);
        assert!(
            s.warnings[0].starts_with(
                "the run was cut short at 12 s (pado did not finish writing it: killed or crashed)"
            ),
            "{:?}",
            s.warnings
        );
        assert!(
            s.warnings[1].contains("line 13 was only half written"),
            "{:?}",
            s.warnings
        );
        // All 12 seconds are complete: the stability figures use every one of them.
        assert_eq!(s.stability.rps_p50, 100.0);
        let text = render(&s, TextOptions { color: false });
        assert!(text.contains("cut short at 12 s"), "{text}");

        // Killed before the first second closed: nothing to rate, no division by 0.
        write_killed(&dir, &meta("killed", 0.0), 0, true);
        let s = build(&load(&dir).unwrap()).unwrap();
        assert_eq!((s.requests, s.rps, s.duration_s), (0, 0.0, 0.0));
        assert!(
            s.warnings[0].contains("cut short at 0 s"),
            "{:?}",
            s.warnings
        );

        // A finished run keeps its length; a torn last line is still said.
        write_killed(&dir, &meta("done", 12.5), 12, true);
        let s = build(&load(&dir).unwrap()).unwrap();
        assert_eq!(s.duration_s, 12.5);
        assert!(!s.interrupted);
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert!(s.warnings[0].contains("line 13"), "{:?}", s.warnings);
        write_killed(&dir, &meta("done", 12.5), 12, false);
        assert!(build(&load(&dir).unwrap()).unwrap().warnings.is_empty());
        let _ = std::fs::remove_dir_all(dir.path());
    }

    /// Ten seconds on two workers: worker 0 at `busy0`, its loop's tail `lag_us` late;
    /// worker 1 idle.
    fn gen_run(busy0: f64, wait: f64, lag_us: u64) -> LoadedRun {
        let seconds = (0..10)
            .map(|t| {
                let rec = second(t, 4, vec![series("a", 100, 200, 2_000)]);
                let rec = with_generator(rec, busy0, wait, lag_us);
                with_generator(rec, 0.1, wait, 1_000)
            })
            .collect();
        let mut m = meta("gen", 10.0);
        m.cores_allowed = 2;
        run(m, seconds)
    }

    #[test]
    fn a_saturated_generator_is_the_first_thing_said_everywhere() {
        let r = gen_run(0.99, 0.01, 30_000);
        let s = build(&r).unwrap();
        let g = s.generator.as_ref().unwrap();
        assert!(g.saturated, "{g:?}");
        assert_eq!(g.busy_seconds, 10);
        assert!((g.cpu_cores_mean - 1.09).abs() < 1e-6, "{g:?}");
        assert!((g.cpu_share_mean - 0.545).abs() < 1e-6, "{g:?}");
        // 20 of 180 wake-ups a second were 30 ms late: above the 99th percentile.
        assert_eq!(g.lag_p99_ms, 30.0);
        assert!(
            s.verdict[0].starts_with(GENERATOR_SATURATED),
            "{:?}",
            s.verdict
        );
        // Said once: not again among the warnings.
        assert!(
            !s.warnings.iter().any(|w| w.contains(GENERATOR_SATURATED)),
            "{:?}",
            s.warnings
        );
        assert!(s.verdict[0].contains("for 10 of 10 s"), "{}", s.verdict[0]);

        let text = render(&s, TextOptions { color: false });
        assert_eq!(text.matches("GENERATOR SATURATED").count(), 1, "{text}");
        let bang = text.find("!! GENERATOR SATURATED").expect(&text);
        assert!(bang < text.find("http_reqs").unwrap(), "{text}");
        assert!(text.contains("generator: cpu 1.1/2 cores"), "{text}");
        assert!(text.contains("— SATURATED"), "{text}");

        let html = render_html(&r, &s);
        let banner = html.find("id=\"generator-banner\"").expect("banner");
        assert!(banner < html.find("id=\"key-figures\"").unwrap());
        for chart in ["chart-generator_cpu", "chart-generator_lag"] {
            assert!(html.contains(chart), "{chart}");
        }
        // Same time axis as the other charts: one point per second, x = t.
        let data = html.split("id=\"data\">").nth(1).unwrap();
        let data: serde_json::Value =
            serde_json::from_str(data.split("</script>").next().unwrap()).unwrap();
        let cpu = &data["charts"]["generator_cpu"]["series"][0]["pts"];
        assert_eq!(cpu[0], serde_json::json!([0.0, 54.5]), "{cpu}");
        assert_eq!(cpu.as_array().unwrap().len(), 10);
        let lag = &data["charts"]["generator_lag"]["series"][0]["pts"];
        assert_eq!(lag[9], serde_json::json!([9.0, 30.0]), "{lag}");
    }

    /// A ramp 10→100 VUs in steps against a planted limit of 300 req/s (latency up
    /// past it): a knee at 30 VUs when pado was idle, nothing when pado was the one
    /// saturated.
    fn knee_run(busy: f64) -> LoadedRun {
        let seconds = (0..40)
            .map(|t| {
                let vus = 10 * (t / 4 + 1);
                let rps = (vus as u64 * 10).min(300);
                let lat = if vus <= 30 {
                    2_000
                } else {
                    2_000 * vus as u64 / 10
                };
                let rec = second(t, vus, vec![series("a", rps, 200, lat)]);
                with_generator(with_generator(rec, busy, 0.01, 1_000), 0.1, 0.01, 1_000)
            })
            .collect();
        let mut m = meta("knee", 40.0);
        m.cores_allowed = 2;
        run(m, seconds)
    }

    #[test]
    fn a_saturated_generator_gets_no_knee_claims() {
        let idle = build(&knee_run(0.3)).unwrap();
        let sat = idle.saturation.as_ref().expect("analysed");
        assert_eq!(
            sat.outcome,
            pado_analysis::saturation::Outcome::Knee,
            "{sat:?}"
        );
        assert_eq!(sat.throughput_knee_load, 30.0, "{sat:?}");
        assert!(idle
            .verdict
            .iter()
            .any(|v| v.contains("stopped keeping up")));
        let busy = build(&knee_run(0.99)).unwrap();
        assert!(busy.generator.as_ref().unwrap().saturated);
        assert_eq!(busy.saturation, None);
        let text = render(&busy, TextOptions { color: false });
        for claim in [
            "stopped keeping up",
            "scalability (USL",
            "no saturation reached",
        ] {
            assert!(!text.contains(claim), "{claim} in {text}");
        }
    }

    /// Ramp to 20 VUs, hold 40 s, ramp to 150, hold 40 s: latency 15 ms at 20 VUs and
    /// 200 ms at 150 (it rises with the load), plus `leak_ms_per_s` in the second hold.
    fn ramp_hold_run(leak_ms_per_s: f64) -> LoadedRun {
        let mut m = meta("soak", 100.0);
        let mark = |index, start_s, end_s, from: f64, to: f64| pado_metrics::StageMark {
            scenario: "default".into(),
            index,
            start_s,
            end_s,
            label: if from == to {
                format!("hold {to} VUs")
            } else {
                format!("ramp {from}→{to} VUs")
            },
            target: to,
            from: Some(from),
        };
        m.stages = vec![
            mark(0, 0.0, 10.0, 0.0, 20.0),
            mark(1, 10.0, 50.0, 20.0, 20.0),
            mark(2, 50.0, 60.0, 20.0, 150.0),
            mark(3, 60.0, 100.0, 150.0, 150.0),
        ];
        let seconds = (0..100u32)
            .map(|t| {
                let (vus, ms) = match t {
                    0..=9 => (2 * (t + 1), 5.0 + t as f64),
                    10..=49 => (20, 15.0),
                    50..=59 => (20 + 13 * (t - 49), 15.0 + 18.5 * (t - 49) as f64),
                    _ => (150, 200.0 + leak_ms_per_s * (t - 60) as f64),
                };
                // Two requests either side of the second's latency: a little spread.
                let us = (ms * 1000.0) as u64;
                second(
                    t,
                    vus,
                    vec![series("a", 20, 200, us * (100 + (t as u64 % 7)) / 103)],
                )
            })
            .collect();
        run(m, seconds)
    }

    #[test]
    fn latency_rising_with_the_load_is_not_drift() {
        let s = build(&ramp_hold_run(0.0)).unwrap();
        assert_eq!(s.drift_periods.len(), 2, "{:?}", s.drift_periods);
        assert!(
            s.drift_periods.iter().all(|d| !d.drift.notable),
            "{:?}",
            s.drift_periods
        );
        assert!(
            !s.verdict.iter().any(|v| v.contains("drift")),
            "{:?}",
            s.verdict
        );
        let text = render(&s, TextOptions { color: false });
        assert!(text.contains("drift method: least-squares"), "{text}");
    }

    #[test]
    fn latency_growing_under_steady_load_is_drift_near_the_planted_slope() {
        // 2 ms more every second at 150 VUs: 7,200 ms per hour.
        let s = build(&ramp_hold_run(2.0)).unwrap();
        let d = s.drift.as_ref().expect("drift");
        assert_eq!(d.period.label, "hold 150 VUs");
        assert!(d.drift.notable, "{d:?}");
        assert!((d.drift.slope_per_hour / 7200.0 - 1.0).abs() < 0.1, "{d:?}");
        let line = s
            .verdict
            .iter()
            .find(|v| v.contains("drifted"))
            .expect("verdict");
        assert!(
            line.contains("under steady load (hold 150 VUs, 60–100 s)"),
            "{line}"
        );
    }

    #[test]
    fn dropped_arrivals_are_named_with_the_knob() {
        let mut m = meta("open", 10.0);
        m.scenarios = vec![pado_metrics::ScenarioMeta {
            name: "default".into(),
            executor: "constant-arrival-rate".into(),
            description: "100 it/s".into(),
            open_model: true,
        }];
        let seconds: Vec<_> = (0..10)
            .map(|t| {
                let mut rec = second(t, 5, vec![series("a", 42, 200, 1_000)]);
                let mut sc = pado_metrics::ScenarioStats::new("default");
                sc.iterations = 42;
                sc.dropped = if t < 9 { 58 } else { 0 };
                rec.absorb(pado_metrics::Interval {
                    scenarios: vec![sc],
                    ..Default::default()
                });
                rec
            })
            .collect();
        let s = build(&run(m.clone(), seconds)).unwrap();
        // 522 of 942 planned arrivals: 55%.
        let line = s
            .verdict
            .iter()
            .find(|v| v.contains("never sent"))
            .expect("dropped line");
        assert_eq!(
            line,
            "55% of the planned arrivals (522 of 942) were never sent: the VU pool (max 7) was exhausted; raise --max-vus (or max_vus in the file)"
        );
        let none: Vec<_> = (0..10)
            .map(|t| second(t, 5, vec![series("a", 42, 200, 1_000)]))
            .collect();
        let s = build(&run(m, none)).unwrap();
        assert!(
            !s.verdict.iter().any(|v| v.contains("never sent")),
            "{:?}",
            s.verdict
        );
    }

    #[test]
    fn an_idle_generator_gets_one_quiet_line() {
        let r = gen_run(0.3, 0.02, 2_000);
        let s = build(&r).unwrap();
        let g = s.generator.as_ref().unwrap();
        assert!(!g.saturated, "{g:?}");
        assert!(!s.verdict.iter().any(|v| v.contains("GENERATOR")));
        assert!(!s.warnings.iter().any(|v| v.contains("GENERATOR")));
        let text = render(&s, TextOptions { color: false });
        assert!(!text.contains("!!"), "{text}");
        assert!(
            text.contains("generator: cpu 0.4/2 cores (peak 0.4, busiest worker 30%), run-queue wait 2%, lag p99 2.00 ms (max 2.00 ms)\n"),
            "{text}"
        );
        let html = render_html(&r, &s);
        assert!(!html.contains("id=\"generator-banner\""));
        assert!(html.contains("chart-generator_cpu"));
    }

    #[test]
    fn runs_without_generator_figures_say_nothing_about_it() {
        let r = run(
            meta("old", 2.0),
            vec![second(0, 1, vec![series("a", 5, 200, 100)])],
        );
        let s = build(&r).unwrap();
        assert!(s.generator.is_none());
        let text = render(&s, TextOptions { color: false });
        assert!(!text.contains("generator:"), "{text}");
        let html = render_html(&r, &s);
        assert!(!html.contains("chart-generator_cpu"));
        assert!(html.contains("not measured"));
    }
}
