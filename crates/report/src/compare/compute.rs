//! Computing the comparison: per metric and scope, each run's value and per-second
//! samples, the change against the baseline and the verdict of the rank test.

use pado_analysis::noise::{mann_whitney, METHOD};
use pado_base::units::us_to_ms as ms;

use super::shape::{limits_of, shape_warnings};
use super::{CompareRow, Comparison, NoiseFloor, Side, Verdict};
use crate::summary::Summary;
use crate::timeline::{PointStats, SecondPoint};

pub(super) type Sampler<'a> = Box<dyn Fn(&Side<'_>) -> (Option<f64>, Vec<f64>) + 'a>;

pub(super) fn full_seconds<'r>(s: &'r Side<'_>) -> impl Iterator<Item = &'r SecondPoint> {
    let full = s.run.meta.duration_s.floor().max(1.0) as u32;
    s.run.points.iter().filter(move |p| p.t < full)
}

pub(super) fn row(
    scope: &str,
    metric: &str,
    higher_is_better: bool,
    sides: &[Side<'_>],
    f: Sampler<'_>,
) -> CompareRow {
    let data: Vec<(Option<f64>, Vec<f64>)> = sides.iter().map(&f).collect();
    let base = &data[0];
    let mut changes = Vec::new();
    let mut verdicts = Vec::new();
    let mut p_values = Vec::new();
    for d in &data[1..] {
        let change = match (base.0, d.0) {
            (Some(a), Some(b)) if a != 0.0 && a.is_finite() && b.is_finite() => {
                Some((b - a) / a * 100.0)
            }
            _ => None,
        };
        changes.push(change);
        let (verdict, p) = judge(base, d, higher_is_better);
        verdicts.push(verdict);
        p_values.push(p);
    }
    CompareRow {
        scope: scope.to_string(),
        metric: metric.to_string(),
        values: data.iter().map(|d| d.0).collect(),
        changes,
        verdicts,
        p_values,
        floor: None,
    }
}

/// The verdict on one row for one candidate: the rank test on the per-second
/// samples decides significance *and* direction; the overall figures must agree
/// with that direction to make it better or worse.
fn judge(
    base: &(Option<f64>, Vec<f64>),
    cand: &(Option<f64>, Vec<f64>),
    higher_is_better: bool,
) -> (Verdict, Option<f64>) {
    let (Some(a), Some(b)) = (base.0, cand.0) else {
        return (Verdict::NotTested, None);
    };
    if !(a.is_finite() && b.is_finite()) {
        return (Verdict::NotTested, None);
    }
    let test = mann_whitney(&base.1, &cand.1);
    if test.n.0 == 0 || test.n.1 == 0 {
        return (Verdict::NotTested, None);
    }
    if !test.judged {
        return (Verdict::TooFewSeconds, None);
    }
    let p = Some(test.p_value);
    if !test.significant {
        // The baseline's whole per-second range: an overall change beyond it is not
        // noise, even when most seconds did not move.
        let finite = base.1.iter().copied().filter(|v| v.is_finite());
        let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        let beyond = (b - a).abs() > (hi - lo) && b != a;
        return (
            if beyond {
                Verdict::FewSeconds
            } else {
                Verdict::WithinNoise
            },
            p,
        );
    }
    let Some(up) = test.candidate_higher() else {
        return (Verdict::WithinNoise, p);
    };
    if b != a && (b > a) != up {
        return (Verdict::Mixed, p);
    }
    (
        if up == higher_is_better {
            Verdict::Better
        } else {
            Verdict::Worse
        },
        p,
    )
}

/// Per-second samples of one row of a point (all, or one step).
fn samples(
    s: &Side<'_>,
    pick: impl Fn(&SecondPoint) -> Option<PointStats>,
    val: impl Fn(&PointStats) -> Option<f64>,
) -> Vec<f64> {
    full_seconds(s)
        .filter_map(|p| pick(p).as_ref().and_then(&val))
        .collect()
}

/// Compare runs against the first with the default floor (`--min-change` 5%, no
/// earlier runs): see [`compare_with`].
pub fn compare(sides: &[Side<'_>]) -> Comparison {
    compare_with(sides, &NoiseFloor::default())
}

/// Compare runs against the first: one row per metric and scope, each with its
/// values, changes and verdicts; a verdict of better or worse needs the change to
/// reach the row's floor (`floor`). The data only; the renderers present it.
pub fn compare_with(sides: &[Side<'_>], floor: &NoiseFloor) -> Comparison {
    let mut rows = Vec::new();
    if sides.len() >= 2 {
        rows.extend(throughput_rows(sides));
        rows.extend(latency_rows(sides));
        rows.extend(ttfb_rows(sides));
        rows.extend(step_rows(sides));
        rows.extend(super::llm::rows(sides));
        rows.extend(stage_rows(sides));
        rows.extend(event_rows(sides));
        rows.extend(super::soak::rows(sides));
    }
    super::floor::apply(&mut rows, floor);
    super::percentile_interval::apply(&mut rows, sides);
    super::llm::hold_back_overlapping(&mut rows, sides);
    Comparison {
        runs: sides.iter().map(|s| s.label.clone()).collect(),
        method: METHOD.into(),
        min_change_pct: floor.min_change_pct,
        noise_between_runs: floor.describe(&rows),
        rows,
        limits: limits_of(sides),
        soak: super::soak::verdicts(sides),
        warnings: if sides.len() >= 2 {
            shape_warnings(sides)
        } else {
            Vec::new()
        },
    }
}

/// Each event that every run had (by name): its impact side by side, as single
/// values (not tested against per-second noise).
fn event_rows(sides: &[Side<'_>]) -> Vec<CompareRow> {
    use pado_analysis::events::EventImpact;
    type Figure = fn(&EventImpact) -> Option<f64>;
    let figures: [(&str, bool, Figure); 6] = [
        ("error % before", false, |e| {
            (e.before.requests > 0).then_some(e.before.error_rate * 100.0)
        }),
        ("error % during", false, |e| {
            e.during
                .as_ref()
                .filter(|d| d.requests > 0)
                .map(|d| d.error_rate * 100.0)
        }),
        ("p95 ms during", false, |e| {
            e.during.as_ref().and_then(|d| d.p95_ms)
        }),
        ("time to first error s", true, |e| e.time_to_first_error_s),
        ("time to recovery s", false, |e| e.time_to_recovery_s),
        ("failed requests", false, |e| Some(e.failed_requests as f64)),
    ];
    let mut rows = Vec::new();
    for e in &sides[0].summary.events {
        let found = |s: &Side<'_>| s.summary.events.iter().find(|x| x.name == e.name).cloned();
        if !sides.iter().all(|s| found(s).is_some()) {
            continue;
        }
        for (metric, higher_is_better, f) in figures {
            rows.push(row(
                &format!("event {}", e.name),
                metric,
                higher_is_better,
                sides,
                Box::new(move |s: &Side<'_>| (found(s).as_ref().and_then(f), Vec::new())),
            ));
        }
    }
    rows
}

/// The whole run's per-second values.
fn all(p: &SecondPoint) -> Option<PointStats> {
    Some(p.all)
}

/// Requests per second, its stability percentiles and the error rate.
fn throughput_rows(sides: &[Side<'_>]) -> Vec<CompareRow> {
    let rps = |ps: &PointStats| Some(ps.requests as f64);
    let err = |ps: &PointStats| (ps.requests > 0).then(|| ps.failed as f64 / ps.requests as f64);
    type Total = fn(&Summary) -> f64;
    let totals: [(&str, Total); 4] = [
        ("req/s (mean)", |s| s.rps),
        ("req/s reached in 50% of seconds", |s| s.stability.rps_p50),
        ("req/s reached in 95% of seconds", |s| s.stability.rps_p95),
        ("req/s reached in 99% of seconds", |s| s.stability.rps_p99),
    ];
    let mut rows: Vec<CompareRow> = totals
        .into_iter()
        .map(|(name, total)| {
            row(
                "overall",
                name,
                true,
                sides,
                Box::new(move |s| (Some(total(s.summary)), samples(s, all, rps))),
            )
        })
        .collect();
    rows.push(row(
        "overall",
        "error rate %",
        false,
        sides,
        Box::new(move |s| (Some(s.summary.failed_rate * 100.0), samples(s, all, err))),
    ));
    rows
}

/// Latency percentiles, tested on the per-second percentiles, and the maximum.
fn latency_rows(sides: &[Side<'_>]) -> Vec<CompareRow> {
    type Q = fn(&crate::timeline::PointLatency) -> u64;
    type Total = fn(&Summary) -> f64;
    let quantiles: [(&str, Total, Q); 3] = [
        ("latency p50 ms", |s| s.latency_ms.p50, |l| l.p50_us),
        ("latency p95 ms", |s| s.latency_ms.p95, |l| l.p95_us),
        ("latency p99 ms", |s| s.latency_ms.p99, |l| l.p99_us),
    ];
    let mut rows: Vec<CompareRow> = quantiles
        .into_iter()
        .map(|(name, total, per_second)| {
            row(
                "overall",
                name,
                false,
                sides,
                Box::new(move |s| {
                    (
                        Some(total(s.summary)),
                        samples(s, all, |ps| ps.latency.map(|l| ms(per_second(&l)))),
                    )
                }),
            )
        })
        .collect();
    // The maximum is one request of the whole run: a single value with no spread
    // to test against, shown without a mark.
    rows.push(row(
        "overall",
        "latency max ms",
        false,
        sides,
        Box::new(move |s| (Some(s.summary.latency_ms.max), Vec::new())),
    ));
    rows
}

/// TTFB: the run's percentiles, tested on the per-second mean TTFB (what the
/// timeline keeps per second), and how much the mean moved from second to second.
fn ttfb_rows(sides: &[Side<'_>]) -> Vec<CompareRow> {
    type Ttfb = fn(&pado_metrics::LatencySummary) -> f64;
    let ttfb: [(&str, Ttfb); 4] = [
        ("ttfb mean ms", |l| l.mean),
        ("ttfb p50 ms", |l| l.p50),
        ("ttfb p95 ms", |l| l.p95),
        ("ttfb p99 ms", |l| l.p99),
    ];
    let mut rows: Vec<CompareRow> = ttfb
        .into_iter()
        .map(|(name, pick)| {
            row(
                "overall",
                name,
                false,
                sides,
                Box::new(move |s| {
                    let v = s.summary.phases_ms.get("http_req_waiting").map(pick);
                    (v, samples(s, all, |ps| ps.ttfb_mean_us.map(|u| u / 1000.0)))
                }),
            )
        })
        .collect();
    rows.push(row(
        "overall",
        "ttfb mean abs change ms",
        false,
        sides,
        Box::new(move |s| {
            (
                Some(s.summary.stability.ttfb_mean_abs_change_ms),
                Vec::new(),
            )
        }),
    ));
    rows
}

/// The two rows a step and a stage are compared on: req/s (higher is better) and
/// p95 ms (lower is better), each from the part's total (`rps`, `p95`) and from
/// its per-second points. `make` builds one row from a metric name, its
/// direction, the per-second figure and the total.
fn rate_and_p95<T>(
    make: impl Fn(&str, bool, fn(&PointStats) -> Option<f64>, fn(&T) -> f64) -> CompareRow,
    rps: fn(&T) -> f64,
    p95: fn(&T) -> f64,
) -> [CompareRow; 2] {
    [
        make("req/s", true, |ps| Some(ps.requests as f64), rps),
        make("p95 ms", false, |ps| ps.latency.map(|l| ms(l.p95_us)), p95),
    ]
}

/// The req/s and p95 rows of one part of the run (a step, a stage) under `scope`:
/// `measure` reads, on one side, the part's total (by the given field) and its
/// per-second samples (by the given reading of a second). One shape for every part,
/// so steps and stages are compared alike.
fn part_rows<T>(
    scope: &str,
    sides: &[Side<'_>],
    rps: fn(&T) -> f64,
    p95: fn(&T) -> f64,
    measure: impl Fn(&Side<'_>, fn(&PointStats) -> Option<f64>, fn(&T) -> f64) -> (Option<f64>, Vec<f64>)
        + Copy,
) -> [CompareRow; 2] {
    let make =
        |metric: &str, higher: bool, f: fn(&PointStats) -> Option<f64>, total: fn(&T) -> f64| {
            row(
                scope,
                metric,
                higher,
                sides,
                Box::new(move |s| measure(s, f, total)),
            )
        };
    rate_and_p95(make, rps, p95)
}

/// Per step (names present in the baseline): req/s and p95.
fn step_rows(sides: &[Side<'_>]) -> Vec<CompareRow> {
    let mut rows = Vec::new();
    for name in sides[0].summary.steps.keys() {
        rows.extend(part_rows::<crate::summary::StepSummary>(
            &format!("step {name}"),
            sides,
            |t| t.rps,
            |t| t.latency_ms.p95,
            |s, f, total| {
                let idx = s.run.step_names.iter().position(|n| n == name);
                let value = s.summary.steps.get(name).map(total);
                let smp = match idx {
                    Some(i) => samples(s, |p| p.step(i as u32).copied(), f),
                    None => Vec::new(),
                };
                (value, smp)
            },
        ));
    }
    rows
}

/// Per stage, matched by label: req/s and p95 over the stage's seconds.
fn stage_rows(sides: &[Side<'_>]) -> Vec<CompareRow> {
    let mut rows = Vec::new();
    for st in &sides[0].summary.stages {
        let label = &st.label;
        rows.extend(part_rows::<crate::stages::StageStats>(
            &format!("stage {label}"),
            sides,
            |w| w.rps,
            |w| w.latency_ms.p95,
            |s, f, total| {
                let Some(w) = s.summary.stages.iter().find(|x| x.label == *label) else {
                    return (None, Vec::new());
                };
                let smp = s
                    .run
                    .points
                    .iter()
                    .filter(|p| crate::stages::second_in_window(p.t, w.start_s, w.end_s))
                    .filter_map(|p| f(&p.all))
                    .collect();
                (Some(total(w)), smp)
            },
        ));
    }
    rows
}
