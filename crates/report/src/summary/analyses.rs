//! The analyses the summary carries, each over the loaded run: the generator
//! self-check, saturation, drift in steady-load periods and the bottleneck table.

use super::LoadedRun;

/// The elimination table: the target's metrics read over the saturation window.
pub fn bottlenecks_of(
    run: &LoadedRun,
    sat: Option<&pado_analysis::saturation::Saturation>,
    generator: Option<&pado_analysis::self_check::GeneratorCheck>,
) -> Option<pado_analysis::attribution::Attribution> {
    use pado_analysis::attribution;
    // In an open model the load is the arrival rate offered, and the knee (found
    // against active VUs) does not apply to it: the windows come from the rate.
    let (samples, sat) = match offered_load_samples(run) {
        Some(offered) => (offered, None),
        None => (load_samples(run), sat),
    };
    // The live hint (the dashboard) reads the same table over the seconds so far.
    attribution::live::table(
        &samples,
        sat,
        &run.observations,
        generator
            .map(attribution::generator_component)
            .into_iter()
            .collect(),
    )
}

/// The generator self-check over the run's per-second generator figures.
pub(super) fn generator_check(
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
            latency_p50_ms: latency_p50(run),
            open_model: any_open,
            iterations_started: sc.iterations + sc.interrupted,
            late_iterations: sc.late,
            dropped_iterations: sc.dropped,
        },
    )
}

/// The run's median request latency (ms), what the self-check weighs pado's lag
/// against; `None` when nothing completed.
fn latency_p50(run: &LoadedRun) -> Option<f64> {
    let d = run.totals.overall();
    let d = d.phase(pado_metrics::Phase::Duration);
    (!d.is_empty()).then(|| d.summary().p50)
}

/// The load samples of a run for the saturation analysis: active VUs, requests and
/// p95 of each second.
pub(super) fn saturation_of(run: &LoadedRun) -> Option<pado_analysis::saturation::Saturation> {
    pado_analysis::saturation::analyse(&load_samples(run), run.meta.duration_s)
}

/// The periods of steady load (run.json's hold stages, or runs of seconds at one VU
/// count when the run has no stages) and the latency drift within each.
pub(super) fn drift_periods(
    run: &LoadedRun,
) -> (
    Vec<pado_analysis::drift::SteadyPeriod>,
    Vec<pado_analysis::drift::PeriodDrift>,
) {
    use pado_analysis::drift;
    let loads: Vec<(u32, f64)> = run.points.iter().map(|p| (p.t, p.vus as f64)).collect();
    if loads.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let periods = drift::steady_periods_with_changes(
        &run.meta.stages,
        &manual_changes(run),
        &loads,
        run.meta.duration_s,
    );
    let latency: Vec<(f64, f64)> = run
        .points
        .iter()
        .filter_map(|p| p.all.latency.map(|l| (p.t as f64, l.mean_us / 1000.0)))
        .collect();
    let drifts = drift::drift_in_periods(&periods, &latency);
    (periods, drifts)
}

/// The changes of the load made by hand while the run went (`control` events:
/// from a dashboard, its JSON API, a library caller), as level boundaries. After
/// `paused` and `stopped` (the names the session gives those changes) the load is
/// not steady. A hold or a skip of the plan is not a change of level of its own:
/// the stages on record already ran where the moved plan put them.
pub(super) fn manual_changes(run: &LoadedRun) -> Vec<pado_analysis::drift::ManualChange> {
    let moves_plan =
        |name: &str| name.starts_with("held the plan") || name.starts_with("skipped to the next");
    let mut out: Vec<_> = run
        .events
        .iter()
        .filter(|e| e.kind == "control" && !moves_plan(&e.name))
        .map(|e| pado_analysis::drift::ManualChange {
            label: e.name.clone(),
            start_s: e.start_s,
            end_s: e.end_s.unwrap_or(e.start_s),
            steady_after: !matches!(e.name.as_str(), "paused" | "stopped"),
        })
        .collect();
    out.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    out
}

/// The soak analysis, kept when the run is a soak or something drifted; and whether
/// it passes: only a `--soak` run is judged, and it fails on any verdict but stable
/// or when there was nothing steady to judge (unless the run is still going).
pub(super) fn soak_of(
    run: &LoadedRun,
    periods: &[pado_analysis::drift::SteadyPeriod],
    latency: &[pado_analysis::drift::PeriodDrift],
) -> (Option<pado_analysis::soak::Soak>, bool) {
    use pado_analysis::soak::{analyse, Verdict};
    let own: Vec<(f64, f64)> = run
        .points
        .iter()
        .filter_map(|p| {
            let rss = p.generator.as_ref()?.rss_bytes?;
            Some((p.t as f64, rss as f64))
        })
        .collect();
    let soak = analyse(periods, latency, &run.observations, &own);
    let mode = run.meta.soak;
    let ok = match (mode, &soak) {
        (Some(pado_results::SoakMode::Requested), Some(s)) => s.verdict == Verdict::Stable,
        // Too early to judge a run still going; too late for one that ended.
        (Some(pado_results::SoakMode::Requested), None) => run.in_progress,
        _ => true,
    };
    let keep = mode.is_some() || soak.as_ref().is_some_and(|s| s.verdict != Verdict::Stable);
    (soak.filter(|_| keep), ok)
}

/// Per second of a run whose every scenario is an open model: the arrival rate
/// it offered (`pado_analysis::offered_load`, whose documentation says why not
/// active VUs, and why counted arrivals rather than the plan), requests and p95.
/// `None` for a closed or mixed run, or an older one whose stages do not say the
/// level (user windows).
pub(super) fn offered_load_samples(
    run: &LoadedRun,
) -> Option<Vec<pado_analysis::saturation::LoadSample>> {
    let meta = &run.meta;
    if meta.scenarios.is_empty() || !meta.scenarios.iter().all(|s| s.open_model) {
        return None;
    }
    let counted = run.points.iter().any(|p| p.arrivals_started > 0);
    let load = pado_analysis::offered_load::OfferedLoad::choose(counted, &meta.stages)?;
    Some(samples_by(run, |p| {
        load.of_second(p.t, p.arrivals_started.saturating_add(p.arrivals_dropped))
    }))
}

/// Per second: active VUs, requests and p95, what saturation and attribution read.
pub(super) fn load_samples(run: &LoadedRun) -> Vec<pado_analysis::saturation::LoadSample> {
    samples_by(run, |p| f64::from(p.vus))
}

/// Each second's requests and p95 with the load level `load` gives it.
fn samples_by(
    run: &LoadedRun,
    load: impl Fn(&crate::SecondPoint) -> f64,
) -> Vec<pado_analysis::saturation::LoadSample> {
    run.points
        .iter()
        .map(|p| pado_analysis::saturation::LoadSample {
            t: p.t,
            load: load(p),
            rps: p.all.requests as f64,
            p95_ms: p.all.latency.map(|l| l.p95_us as f64 / 1000.0),
        })
        .collect()
}
