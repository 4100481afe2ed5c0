//! The per-generator breakdown of a merged result: each generator's figures from
//! `generators.json`, and its own self-check over its own per-second figures (one
//! saturated generator among eight is hidden in the sums).

use pado_analysis::self_check::{check, GenSecond, RunFigures};
use pado_results::merge::GeneratorFigures;

use super::{GeneratorSummary, LoadedRun};
use crate::timeline::gen_second;

/// One row per generator of a merged result; empty for a run of one generator.
pub(super) fn breakdown(run: &LoadedRun) -> Vec<GeneratorSummary> {
    let Some(g) = &run.generators else {
        return Vec::new();
    };
    g.generators.iter().map(row).collect()
}

fn row(g: &GeneratorFigures) -> GeneratorSummary {
    let seconds: Vec<GenSecond> = g
        .seconds
        .iter()
        .map(|s| gen_second(s.t, &s.to_second()))
        .collect();
    let self_check = check(
        &seconds,
        &RunFigures {
            cores_allowed: g.cores_allowed,
            workers: g.workers,
            lag_p99_ms: g.lag_p99_ms,
            lag_max_ms: g.lag_max_ms,
            latency_p50_ms: (g.requests > 0).then_some(g.latency_ms.p50),
            open_model: g.open_model,
            iterations_started: g.iterations_started,
            late_iterations: g.late_iterations,
            dropped_iterations: g.dropped_iterations,
        },
    );
    GeneratorSummary {
        segment: format!("{}/{}", g.index, g.count),
        share: g.share,
        source: g.source.clone(),
        requests: g.requests,
        rps: g.requests as f64 / g.duration_s.max(1e-9),
        failed: g.failed,
        latency_ms: g.latency_ms,
        start_skew_ms: g.start_skew_ms,
        ended_early: g.ended_early,
        self_check,
    }
}
