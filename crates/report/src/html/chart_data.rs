//! The data behind the page's charts: every series over time, downsampled with
//! [`lttb`] to at most [`MAX_POINTS`] points, serialized as one JSON block the inline
//! script draws from. Computing only; the markup around the charts is in
//! [`super::charts`].

use std::collections::BTreeMap;

use pado_base::units::us_to_ms;
use serde::Serialize;

use crate::summary::LoadedRun;

/// Largest number of points of one chart series embedded in the page.
pub const MAX_POINTS: usize = 1000;

/// Error categories drawn as their own line; the rest are summed as `other`.
const MAX_ERROR_LINES: usize = 7;

const PALETTE: [&str; 9] = [
    "#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d",
    "#475569",
];

/// Largest-Triangle-Three-Buckets downsampling of `(x, y)` points sorted by x: keeps
/// the first and last point and, from each of `threshold - 2` buckets in between, the
/// point forming the largest triangle with the previously kept point and the next
/// bucket's average, so spikes survive. Returns the input when it has at most
/// `threshold` points; a `threshold` below 3 is taken as 3.
pub fn lttb(data: &[(f64, f64)], threshold: usize) -> Vec<(f64, f64)> {
    let n = data.len();
    let threshold = threshold.max(3);
    if n <= threshold {
        return data.to_vec();
    }
    let every = (n - 2) as f64 / (threshold - 2) as f64;
    let mut out = Vec::with_capacity(threshold);
    out.push(data[0]);
    let mut a = 0usize;
    for i in 0..threshold - 2 {
        let start = (i as f64 * every) as usize + 1;
        let end = (((i + 1) as f64 * every) as usize + 1).min(n - 1);
        let next_start = end;
        let next_end = (((i + 2) as f64 * every) as usize + 1).min(n);
        let (ax, ay) = data[a];
        let (cx, cy) = if next_start < next_end {
            let k = (next_end - next_start) as f64;
            let (sx, sy) = data[next_start..next_end]
                .iter()
                .fold((0.0, 0.0), |(sx, sy), &(x, y)| (sx + x, sy + y));
            (sx / k, sy / k)
        } else {
            data[n - 1]
        };
        let mut best = start;
        let mut best_area = -1.0;
        for (j, &(bx, by)) in data.iter().enumerate().take(end.max(start + 1)).skip(start) {
            let area = ((ax - cx) * (by - ay) - (ax - bx) * (cy - ay)).abs();
            if area > best_area {
                best_area = area;
                best = j;
            }
        }
        out.push(data[best]);
        a = best;
    }
    out.push(data[n - 1]);
    out
}

/// The JSON block: time axis length, stage bands and charts by id.
#[derive(Serialize)]
pub(super) struct ChartData<'a> {
    duration: f64,
    stage_rows: usize,
    stages: Vec<StageBand<'a>>,
    /// The run's events: fault windows shaded, points drawn as lines.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    events: Vec<EventBand<'a>>,
    pub(super) charts: BTreeMap<String, Chart>,
}

/// An event on the time axis: a window (`end` set) or a point.
#[derive(Serialize)]
struct EventBand<'a> {
    name: &'a str,
    start: f64,
    end: Option<f64>,
    ok: bool,
    /// A change of the load made while the run went (a `control` event: VUs or a
    /// rate set by hand, a ramp, a pause, a hold or skip of the plan), drawn apart
    /// from the scenario's fault events.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    control: bool,
}

/// A stage as a band on the time axis.
#[derive(Serialize)]
struct StageBand<'a> {
    scenario: &'a str,
    label: &'a str,
    index: usize,
    start: f64,
    end: f64,
    row: usize,
}

/// One chart: its unit, axis hints and series.
#[derive(Serialize)]
pub(super) struct Chart {
    unit: &'static str,
    /// Whether a log scale fits better (the page's checkbox starts in this state).
    pub(super) log: bool,
    /// Counts: no fractional axis ticks.
    int: bool,
    /// Break a line where consecutive points are further apart than this (0: never).
    gap: f64,
    series: Vec<ChartSeries>,
}

/// One line of a chart.
#[derive(Serialize)]
pub(super) struct ChartSeries {
    name: String,
    color: &'static str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    dash: bool,
    pts: Vec<[f64; 2]>,
}

/// Three decimals: enough for milliseconds, small in the page.
pub(super) fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

fn chart_series(name: impl Into<String>, color: &'static str, pts: &[(f64, f64)]) -> ChartSeries {
    ChartSeries {
        name: name.into(),
        color,
        dash: false,
        pts: lttb(pts, MAX_POINTS)
            .into_iter()
            .map(|(x, y)| [x, round3(y)])
            .collect(),
    }
}

/// Largest x distance between consecutive kept points of a dense series of `n`
/// points after [`lttb`], plus slack: a wider distance is a real gap.
fn gap_for(n: usize) -> f64 {
    if n <= MAX_POINTS {
        1.5
    } else {
        2.0 * (n - 2) as f64 / (MAX_POINTS - 2) as f64 + 1.5
    }
}

/// Everything the page's script draws, from the loaded run: the stage bands on the
/// time axis and every chart's series, keyed by the id its container carries.
pub(super) fn chart_data(run: &LoadedRun, observed: Vec<(String, Chart)>) -> ChartData<'_> {
    let secs = &run.points;
    let duration = run
        .meta
        .duration_s
        .max(secs.last().map(|r| r.t as f64 + 1.0).unwrap_or(0.0))
        .max(1.0);
    let (stages, stage_rows) = stage_bands(run);
    let mut charts = BTreeMap::new();
    load_charts(run, &mut charts);
    charts.insert("latency".to_string(), latency_chart(run));
    charts.insert(
        "errors".to_string(),
        Chart {
            unit: "errors/s",
            log: false,
            int: true,
            gap: 0.0,
            series: error_series(run),
        },
    );
    for (i, (_, chart)) in observed.into_iter().enumerate() {
        charts.insert(format!("obs-{i}"), chart);
    }
    if secs.iter().any(|p| p.generator.is_some()) {
        generator_charts(run, &mut charts);
    }
    if secs.iter().any(|p| p.llm.is_some()) {
        llm_charts(run, &mut charts);
    }
    let events = run
        .events
        .iter()
        .map(|e| EventBand {
            name: &e.name,
            start: round3(e.start_s),
            end: e.end_s.map(round3),
            ok: e.ok(),
            control: e.kind == "control",
        })
        .collect();
    ChartData {
        duration,
        stage_rows,
        stages,
        events,
        charts,
    }
}

/// The stages as bands on the time axis, one row per scenario (in order of first
/// appearance), and how many rows that makes.
fn stage_bands(run: &LoadedRun) -> (Vec<StageBand<'_>>, usize) {
    let mut rows: Vec<&str> = Vec::new();
    let stages = run
        .meta
        .stages
        .iter()
        .map(|s| {
            let row = match rows.iter().position(|r| *r == s.scenario) {
                Some(i) => i,
                None => {
                    rows.push(&s.scenario);
                    rows.len() - 1
                }
            };
            StageBand {
                scenario: &s.scenario,
                label: &s.label,
                index: s.index,
                start: s.start_s,
                end: s.end_s,
                row,
            }
        })
        .collect();
    (stages, rows.len())
}

/// The load applied: active and allocated VUs, requests and failures per second.
fn load_charts(run: &LoadedRun, charts: &mut BTreeMap<String, Chart>) {
    let secs = &run.points;
    let x = |t: u32| t as f64;
    let vus: Vec<_> = secs.iter().map(|p| (x(p.t), p.vus as f64)).collect();
    let vus_max: Vec<_> = secs.iter().map(|p| (x(p.t), p.vus_max as f64)).collect();
    let reqs: Vec<_> = secs
        .iter()
        .map(|p| (x(p.t), p.all.requests as f64))
        .collect();
    let failed: Vec<_> = secs.iter().map(|p| (x(p.t), p.all.failed as f64)).collect();
    let mut vus_max_series = chart_series("vus_max", "#94a3b8", &vus_max);
    vus_max_series.dash = true;
    charts.insert(
        "vus".to_string(),
        Chart {
            unit: "VUs",
            log: false,
            int: true,
            gap: 0.0,
            series: vec![chart_series("vus", PALETTE[0], &vus), vus_max_series],
        },
    );
    charts.insert(
        "rps".to_string(),
        Chart {
            unit: "req/s",
            log: false,
            int: true,
            gap: 0.0,
            series: vec![
                chart_series("requests/s", PALETTE[0], &reqs),
                chart_series("failed/s", PALETTE[1], &failed),
            ],
        },
    );
}

/// p50 / p95 / p99 per second, on a log scale when the peaks would flatten the rest.
fn latency_chart(run: &LoadedRun) -> Chart {
    let (mut p50, mut p95, mut p99) = (Vec::new(), Vec::new(), Vec::new());
    for p in &run.points {
        if let Some(l) = &p.all.latency {
            let t = p.t as f64;
            p50.push((t, us_to_ms(l.p50_us)));
            p95.push((t, us_to_ms(l.p95_us)));
            p99.push((t, us_to_ms(l.p99_us)));
        }
    }
    Chart {
        unit: "ms",
        log: wide_range(&p50, &p99),
        int: false,
        gap: gap_for(p50.len()),
        series: vec![
            chart_series("p50", PALETTE[2], &p50),
            chart_series("p95", PALETTE[3], &p95),
            chart_series("p99", PALETTE[1], &p99),
        ],
    }
}

/// Two percentiles of one LLM figure per second, on a log scale when the peaks
/// would flatten the rest.
fn llm_percentiles(
    run: &LoadedRun,
    pick: fn(&crate::timeline::LlmPoint) -> Option<crate::timeline::PointLatency>,
    (lo_name, lo): (&str, fn(&crate::timeline::PointLatency) -> u64),
    (hi_name, hi): (&str, fn(&crate::timeline::PointLatency) -> u64),
) -> Chart {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for p in &run.points {
        if let Some(l) = p.llm.as_deref().and_then(pick) {
            let t = p.t as f64;
            a.push((t, us_to_ms(lo(&l))));
            b.push((t, us_to_ms(hi(&l))));
        }
    }
    Chart {
        unit: "ms",
        log: wide_range(&a, &b),
        int: false,
        gap: gap_for(a.len()),
        series: vec![
            chart_series(lo_name, PALETTE[2], &a),
            chart_series(hi_name, PALETTE[1], &b),
        ],
    }
}

/// The LLM streams' charts: TTFT p50 / p95, ITL p50 / p99 and the output tokens
/// per second of all streams (a second without a stream ended counts none).
fn llm_charts(run: &LoadedRun, charts: &mut BTreeMap<String, Chart>) {
    charts.insert(
        "llm_ttft".to_string(),
        llm_percentiles(
            run,
            |l| l.ttft,
            ("p50", |q| q.p50_us),
            ("p95", |q| q.p95_us),
        ),
    );
    charts.insert(
        "llm_itl".to_string(),
        llm_percentiles(run, |l| l.itl, ("p50", |q| q.p50_us), ("p99", |q| q.p99_us)),
    );
    let tokens: Vec<_> = run
        .points
        .iter()
        .map(|p| (p.t as f64, p.llm.as_deref().map_or(0, |l| l.tokens) as f64))
        .collect();
    charts.insert(
        "llm_tokens".to_string(),
        Chart {
            unit: "tokens/s",
            log: false,
            int: true,
            gap: 0.0,
            series: vec![chart_series("output tokens/s", PALETTE[0], &tokens)],
        },
    );
}

/// Errors per second: the [`MAX_ERROR_LINES`] most frequent categories as their own
/// lines, the rest summed as `other`.
fn error_series(run: &LoadedRun) -> Vec<ChartSeries> {
    let secs = &run.points;
    let x = |t: u32| t as f64;
    let mut error_totals: BTreeMap<&str, (u64, u32)> = BTreeMap::new();
    for p in secs {
        for &(i, n) in p.errors.iter() {
            error_totals
                .entry(run.error_names[i as usize].as_str())
                .or_insert((0, i))
                .0 += n;
        }
    }
    let mut cats: Vec<(&str, u64, u32)> =
        error_totals.iter().map(|(k, &(n, i))| (*k, n, i)).collect();
    cats.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let shown: Vec<(&str, u32)> = cats
        .iter()
        .take(MAX_ERROR_LINES)
        .map(|c| (c.0, c.2))
        .collect();
    let mut error_series = Vec::new();
    for (i, &(cat, idx)) in shown.iter().enumerate() {
        let pts: Vec<_> = secs.iter().map(|p| (x(p.t), p.error(idx) as f64)).collect();
        error_series.push(chart_series(cat, PALETTE[i % PALETTE.len()], &pts));
    }
    if cats.len() > MAX_ERROR_LINES {
        let pts: Vec<_> = secs
            .iter()
            .map(|p| {
                let other: u64 = p
                    .errors
                    .iter()
                    .filter(|(k, _)| !shown.iter().any(|s| s.1 == *k))
                    .map(|(_, n)| n)
                    .sum();
                (x(p.t), other as f64)
            })
            .collect();
        error_series.push(chart_series("other", PALETTE[8], &pts));
    }
    error_series
}

/// The target's signals (see `pado_analysis::attribution::signals`), one chart
/// per endpoint and unit, in the order their titles are listed.
pub(super) fn observed_charts(
    run: &LoadedRun,
    att: Option<&pado_analysis::attribution::Attribution>,
    soak: Option<&pado_analysis::soak::Soak>,
) -> Vec<(String, Chart)> {
    use pado_analysis::attribution::signals::{signals, Unit};
    let sigs = signals(&run.observations, att);
    let mut groups: Vec<(
        (String, Unit),
        Vec<&pado_analysis::attribution::signals::Signal>,
    )> = Vec::new();
    for s in &sigs {
        let key = (s.endpoint.clone(), s.unit);
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(s),
            None => groups.push((key, vec![s])),
        }
    }
    groups
        .into_iter()
        .map(|((ep, unit), list)| {
            let (title, unit_s, int) = match unit {
                Unit::Percent => (format!("{ep}: CPU and GC (% busy)"), "%", false),
                Unit::Count => (format!("{ep}: pools, threads and queues"), "count", false),
                Unit::PerSecond => (format!("{ep}: operations per second"), "/s", false),
            };
            let series = list
                .iter()
                .enumerate()
                .map(|(i, s)| chart_series(s.name.clone(), PALETTE[i % PALETTE.len()], &s.points))
                .collect();
            (
                title,
                Chart {
                    unit: unit_s,
                    log: false,
                    int,
                    gap: 0.0,
                    series,
                },
            )
        })
        .chain(soak.and_then(|k| memory_chart(run, k)))
        .collect()
}

/// A soak's memory over time in MiB: every memory series the soak analysis judged,
/// and pado's own, on one chart (a leak is a line that keeps climbing).
fn memory_chart(run: &LoadedRun, k: &pado_analysis::soak::Soak) -> Option<(String, Chart)> {
    use pado_analysis::soak::Resource;
    use pado_base::units::MIB;
    let mut series: Vec<ChartSeries> = Vec::new();
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for r in k
        .resources
        .iter()
        .filter(|r| r.resource == Resource::Memory)
    {
        if seen.contains(&(r.endpoint.as_str(), r.series.as_str())) {
            continue;
        }
        seen.push((r.endpoint.as_str(), r.series.as_str()));
        let Some(s) =
            run.observations.series.iter().find(|s| {
                s.endpoint == r.endpoint && pado_analysis::soak::series_name(s) == r.series
            })
        else {
            continue;
        };
        let pts: Vec<(f64, f64)> = s.points.iter().map(|&(t, v)| (t, v / MIB)).collect();
        let color = PALETTE[series.len() % PALETTE.len()];
        series.push(chart_series(
            format!("{} ({})", r.series, r.endpoint),
            color,
            &pts,
        ));
    }
    let own: Vec<(f64, f64)> = run
        .points
        .iter()
        .filter_map(|p| Some((p.t as f64, p.generator.as_ref()?.rss_bytes? as f64 / MIB)))
        .collect();
    if !own.is_empty() {
        let color = PALETTE[series.len() % PALETTE.len()];
        series.push(chart_series("pado (the load generator)", color, &own));
    }
    (!series.is_empty()).then(|| {
        (
            "memory under the soak (MiB)".to_string(),
            Chart {
                unit: "MiB",
                log: false,
                int: false,
                gap: 0.0,
                series,
            },
        )
    })
}

/// The generator's own charts, on the same time axis as the others: its CPU as a share
/// of the cores it was allowed (all workers, and the busiest one) with its run-queue
/// wait, and its event-loop lag. What tells a slow target from a saturated pado.
fn generator_charts(run: &LoadedRun, charts: &mut BTreeMap<String, Chart>) {
    let cores = if run.meta.cores_allowed > 0 {
        run.meta.cores_allowed
    } else {
        run.meta.workers.max(1)
    } as f64;
    let (mut cpu, mut busiest, mut wait, mut p99, mut max) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for p in &run.points {
        let Some(g) = &p.generator else { continue };
        // The run's last flush covers a few ms: its shares are noise.
        if g.span_s < pado_analysis::self_check::MIN_SPAN_S {
            continue;
        }
        let t = p.t as f64;
        cpu.push((t, (g.cores / cores * 100.0).min(100.0)));
        busiest.push((t, (g.busy_max * 100.0).min(100.0)));
        if let Some(w) = g.wait_share {
            wait.push((t, w * 100.0));
        }
        p99.push((t, g.lag_p99_ms));
        max.push((t, g.lag_max_ms));
    }
    let mut series = vec![
        chart_series("cpu, all workers", PALETTE[0], &cpu),
        chart_series("busiest worker", PALETTE[1], &busiest),
    ];
    if !wait.is_empty() {
        let mut w = chart_series("run-queue wait", PALETTE[3], &wait);
        w.dash = true;
        series.push(w);
    }
    charts.insert(
        "generator_cpu".to_string(),
        Chart {
            unit: "%",
            log: false,
            int: false,
            gap: gap_for(cpu.len()),
            series,
        },
    );
    let mut max_series = chart_series("max", "#94a3b8", &max);
    max_series.dash = true;
    charts.insert(
        "generator_lag".to_string(),
        Chart {
            unit: "ms",
            log: false,
            int: false,
            gap: gap_for(p99.len()),
            series: vec![
                chart_series("p99 (worst worker)", PALETTE[2], &p99),
                max_series,
            ],
        },
    );
}

/// Whether the per-second p99 peaks more than 50 times above the median p50: a linear
/// axis would then flatten everything but the peak.
fn wide_range(p50: &[(f64, f64)], p99: &[(f64, f64)]) -> bool {
    let mut v: Vec<f64> = p50.iter().map(|p| p.1).collect();
    if v.is_empty() {
        return false;
    }
    v.sort_by(f64::total_cmp);
    let median = v[v.len() / 2];
    let peak = p99.iter().map(|p| p.1).fold(0.0, f64::max);
    median > 0.0 && peak / median > 50.0
}
