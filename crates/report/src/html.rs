//! The HTML report (`report.html`): one self-contained file that works offline, with
//! charts over time (hand-written SVG drawn by a small inline script from an embedded
//! JSON block), the per-stage, per-step, per-tag, phase, check and threshold tables.
//!
//! Everything that comes from users or responses is escaped: text with [`esc`], the
//! chart data as JSON with every `<` written `\u003c` so nothing in it can close the
//! `<script>` element, parsed by `JSON.parse`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use pado_metrics::LatencySummary;
use serde::Serialize;

pub use crate::stages::{stage_stats, StageStats};
use crate::summary::{LoadedRun, StepSummary, Summary};
use pado_metrics::fmt::{bytes, ms, thousands};

/// Largest number of points of one chart series embedded in the page.
pub const MAX_POINTS: usize = 1000;

/// Error categories drawn as their own line; the rest are summed as `other`.
const MAX_ERROR_LINES: usize = 7;

const CSS: &str = include_str!("../assets/report.css");
const JS: &str = include_str!("../assets/report.js");

const PALETTE: [&str; 9] = [
    "#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d",
    "#475569",
];

/// Escape text for HTML content and quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON text made safe to sit inside `<script type="application/json">`: `<`, `>` and
/// `&` only occur inside JSON strings, where `\u003c`-style escapes mean the same, so
/// no `</script>` or `<!--` can appear. Also escapes U+2028/U+2029 for old parsers.
pub fn script_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

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

#[derive(Serialize)]
struct ChartData<'a> {
    duration: f64,
    stage_rows: usize,
    stages: Vec<StageBand<'a>>,
    charts: BTreeMap<String, Chart>,
}

#[derive(Serialize)]
struct StageBand<'a> {
    scenario: &'a str,
    label: &'a str,
    index: usize,
    start: f64,
    end: f64,
    row: usize,
}

#[derive(Serialize)]
struct Chart {
    unit: &'static str,
    /// Whether a log scale fits better (the page's checkbox starts in this state).
    log: bool,
    /// Counts: no fractional axis ticks.
    int: bool,
    /// Break a line where consecutive points are further apart than this (0: never).
    gap: f64,
    series: Vec<ChartSeries>,
}

#[derive(Serialize)]
struct ChartSeries {
    name: String,
    color: &'static str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    dash: bool,
    pts: Vec<[f64; 2]>,
}

fn round3(v: f64) -> f64 {
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

fn chart_data(run: &LoadedRun, observed: Vec<(String, Chart)>) -> ChartData<'_> {
    let secs = &run.points;
    let duration = run
        .meta
        .duration_s
        .max(secs.last().map(|r| r.t as f64 + 1.0).unwrap_or(0.0))
        .max(1.0);
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

    let x = |t: u32| t as f64;
    let vus: Vec<_> = secs.iter().map(|p| (x(p.t), p.vus as f64)).collect();
    let vus_max: Vec<_> = secs.iter().map(|p| (x(p.t), p.vus_max as f64)).collect();
    let reqs: Vec<_> = secs
        .iter()
        .map(|p| (x(p.t), p.all.requests as f64))
        .collect();
    let failed: Vec<_> = secs.iter().map(|p| (x(p.t), p.all.failed as f64)).collect();

    let (mut p50, mut p95, mut p99) = (Vec::new(), Vec::new(), Vec::new());
    let mut error_totals: BTreeMap<&str, (u64, u32)> = BTreeMap::new();
    for p in secs {
        if let Some(l) = &p.all.latency {
            let q = |us: u64| us as f64 / 1000.0;
            p50.push((x(p.t), q(l.p50_us)));
            p95.push((x(p.t), q(l.p95_us)));
            p99.push((x(p.t), q(l.p99_us)));
        }
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
    let has_other = cats.len() > MAX_ERROR_LINES;
    let mut error_series = Vec::new();
    for (i, &(cat, idx)) in shown.iter().enumerate() {
        let pts: Vec<_> = secs.iter().map(|p| (x(p.t), p.error(idx) as f64)).collect();
        error_series.push(chart_series(cat, PALETTE[i % PALETTE.len()], &pts));
    }
    if has_other {
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

    let mut vus_max_series = chart_series("vus_max", "#94a3b8", &vus_max);
    vus_max_series.dash = true;
    let mut charts = BTreeMap::new();
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
    charts.insert(
        "latency".to_string(),
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
        },
    );
    charts.insert(
        "errors".to_string(),
        Chart {
            unit: "errors/s",
            log: false,
            int: true,
            gap: 0.0,
            series: error_series,
        },
    );
    for (i, (_, chart)) in observed.into_iter().enumerate() {
        charts.insert(format!("obs-{i}"), chart);
    }
    if secs.iter().any(|p| p.generator.is_some()) {
        generator_charts(run, &mut charts);
    }
    ChartData {
        duration,
        stage_rows: rows.len(),
        stages,
        charts,
    }
}

/// The target's signals (see `pado_analysis::attribution::signals`), one chart
/// per endpoint and unit, in the order their titles are listed.
fn observed_charts(
    run: &LoadedRun,
    att: Option<&pado_analysis::attribution::Attribution>,
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
        .collect()
}

/// Seed 000's elimination table.
fn bottleneck_section(o: &mut String, b: &pado_analysis::attribution::Attribution) {
    use pado_analysis::attribution::Verdict;
    o.push_str("<h2>Bottlenecks</h2>\n");
    let _ = write!(
        o,
        "<p class=\"note\">State of each observed component at {} ({:.0}–{:.0} s)",
        esc(&b.window.label),
        b.window.start_s,
        b.window.end_s
    );
    if let Some(bl) = &b.baseline {
        let _ = write!(
            o,
            ", compared with {} ({:.0}–{:.0} s)",
            esc(&bl.label),
            bl.start_s,
            bl.end_s
        );
    }
    o.push_str(". <i>consequence</i>: saturated because it waits on the limit; <i>busy throughout</i>: as busy at low load, when the service kept up, so not what changed.</p>\n");
    if let Some(l) = &b.limit {
        let _ = writeln!(o, "<p id=\"bottleneck-limit\"><b>Limit:</b> {}</p>", esc(l));
    }
    let rows: Vec<String> = b
        .components
        .iter()
        .map(|c| {
            let (cls, text) = match c.verdict {
                Verdict::Yes => ("bad", "YES"),
                Verdict::Consequence => ("", "consequence"),
                Verdict::BusyThroughout => ("", "busy throughout"),
                Verdict::No => ("", "no"),
                Verdict::Unknown => ("", "?"),
            };
            format!(
                "<tr data-verdict=\"{}\">{}<td>{}</td><td>{}</td><td>{}</td><td class=\"{cls}\">{text}</td><td>{}</td></tr>",
                match c.verdict {
                    Verdict::Yes => "yes",
                    Verdict::Consequence => "consequence",
                    Verdict::BusyThroughout => "busy_throughout",
                    Verdict::No => "no",
                    Verdict::Unknown => "unknown",
                },
                td_name(&c.component),
                esc(&c.endpoint),
                esc(&c.state),
                esc(c.baseline.as_deref().unwrap_or("")),
                esc(&c.evidence)
            )
        })
        .collect();
    table(
        o,
        "table-bottlenecks",
        &[
            "component",
            "<endpoint",
            "<state",
            "<low load",
            "<bottleneck?",
            "<evidence",
        ],
        &rows,
        "no known metric families in the scraped endpoints",
    );
    let failing: Vec<&pado_analysis::attribution::EndpointStatus> =
        b.endpoints.iter().filter(|e| e.failed > 0).collect();
    if !failing.is_empty() {
        o.push_str("<ul class=\"plain warnings\" id=\"scrape-failures\">");
        for e in failing {
            let kinds: Vec<String> = e.errors.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
            let _ = write!(
                o,
                "<li>⚠ scrapes of <code>{}</code> ({}) failed {} of {} times: {}</li>",
                esc(&e.name),
                esc(&e.url),
                e.failed,
                e.scrapes,
                esc(&kinds.join(", "))
            );
        }
        o.push_str("</ul>\n");
    }
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

/// `12.3s`, `10m05s`, `4h00m00s`.
fn duration_text(s: f64) -> String {
    if s < 60.0 {
        return format!("{s:.1}s");
    }
    let t = s.round() as u64;
    let (h, m, sec) = (t / 3600, (t % 3600) / 60, t % 60);
    if h > 0 {
        format!("{h}h{m:02}m{sec:02}s")
    } else {
        format!("{m}m{sec:02}s")
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Cell with an integer: `data-value` holds it plain, the text has separators.
fn td_int(v: u64) -> String {
    format!("<td class=\"num\" data-value=\"{v}\">{}</td>", thousands(v))
}

/// Cell with milliseconds.
fn td_ms(v: f64) -> String {
    format!(
        "<td class=\"num\" data-value=\"{}\">{}</td>",
        round3(v),
        ms(v)
    )
}

/// Cell with a rate per second.
fn td_rate(v: f64) -> String {
    let text = if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    };
    format!("<td class=\"num\" data-value=\"{}\">{text}</td>", round3(v))
}

/// Cell with a percentage.
fn td_pct(v: f64, bad: bool) -> String {
    format!(
        "<td class=\"num{}\" data-value=\"{}\">{v:.2}%</td>",
        if bad { " bad" } else { "" },
        (v * 10_000.0).round() / 10_000.0
    )
}

fn td_name(s: &str) -> String {
    format!("<td class=\"name\">{}</td>", esc(s))
}

/// Samples of failed requests (the "why" behind the error counts), every field
/// escaped: URLs, bodies and check values come from the target.
fn failure_table(o: &mut String, s: &Summary) {
    if s.failures.is_empty() {
        return;
    }
    o.push_str("<h3>Why requests failed</h3>\n<p class=\"note\">A few failed requests per step and error category (all in failures.jsonl): the first bytes of the body, or the failing check and what it saw.</p>\n");
    let rows: Vec<String> = s
        .failures
        .iter()
        .map(|f| {
            let check = match (&f.check, &f.actual, &f.reason) {
                (Some(c), Some(a), _) => format!("{c}: {a}"),
                (_, _, Some(r)) => r.clone(),
                _ => String::new(),
            };
            format!(
                "<tr class=\"bad\">{}{}{}{}{}{}{}</tr>",
                td_name(&f.category),
                td_name(&f.step),
                td_name(&format!("{} {}", f.method, f.url)),
                td_int(u64::from(f.status)),
                td_name(&check),
                td_name(&f.body),
                td_int(u64::from(f.second)),
            )
        })
        .collect();
    table(
        o,
        "table-failures",
        &[
            "error",
            "<step",
            "<request",
            "status",
            "<check: saw",
            "<body (first bytes)",
            "second",
        ],
        &rows,
        "no samples",
    );
}

/// A table with stable id; `empty` is shown as a single row when there are no rows.
fn table(out: &mut String, id: &str, heads: &[&str], rows: &[String], empty: &str) {
    let _ = write!(
        out,
        "<div class=\"scroll\"><table id=\"{id}\" class=\"sortable\"><thead><tr>"
    );
    for (i, h) in heads.iter().enumerate() {
        // First column is a name, the others numbers unless marked with a leading '<'.
        let (class, text) = match h.strip_prefix('<') {
            Some(t) => ("", t),
            None if i == 0 => ("", *h),
            None => (" class=\"num\"", *h),
        };
        let _ = write!(out, "<th{class}>{}</th>", esc(text));
    }
    out.push_str("</tr></thead><tbody>");
    if rows.is_empty() {
        let _ = write!(
            out,
            "<tr class=\"empty\"><td colspan=\"{}\">{}</td></tr>",
            heads.len(),
            esc(empty)
        );
    }
    for r in rows {
        out.push_str(r);
    }
    out.push_str("</tbody></table></div>\n");
}

fn step_row(name: &str, s: &StepSummary) -> String {
    let l = &s.latency_ms;
    format!(
        "<tr>{}{}{}{}{}{}{}{}{}{}</tr>",
        td_name(name),
        td_int(s.requests),
        td_int(s.failed),
        td_pct(pct(s.failed, s.requests), s.failed > 0),
        td_rate(s.rps),
        td_ms(l.mean),
        td_ms(l.p50),
        td_ms(l.p95),
        td_ms(l.p99),
        td_ms(l.max),
    )
}

const STEP_HEADS: [&str; 10] = [
    "step", "requests", "failed", "error %", "req/s", "mean ms", "p50 ms", "p95 ms", "p99 ms",
    "max ms",
];

/// The phases of the breakdown, with display names and colours.
const PHASES: [(&str, &str, &str); 6] = [
    ("http_req_blocked", "blocked", "#94a3b8"),
    ("http_req_connecting", "connecting", "#f59e0b"),
    ("http_req_tls_handshaking", "tls", "#a855f7"),
    ("http_req_sending", "sending", "#06b6d4"),
    ("http_req_waiting", "waiting (ttfb)", "#2563eb"),
    ("http_req_receiving", "receiving", "#16a34a"),
];

fn stacked_bar(
    out: &mut String,
    label: &str,
    phases: &BTreeMap<String, LatencySummary>,
    p95: bool,
) {
    let vals: Vec<(&str, &str, f64)> = PHASES
        .iter()
        .map(|(k, name, color)| {
            let v = phases
                .get(*k)
                .map(|l| if p95 { l.p95 } else { l.mean })
                .unwrap_or(0.0);
            (*name, *color, v)
        })
        .collect();
    let total: f64 = vals.iter().map(|v| v.2).sum();
    let _ = write!(
        out,
        "<div class=\"stack-label\">{} — {} ms total</div><div class=\"stack\" id=\"stack-{}\">",
        esc(label),
        ms(total),
        if p95 { "p95" } else { "mean" }
    );
    if total > 0.0 {
        for (name, color, v) in &vals {
            if *v > 0.0 {
                let _ = write!(
                    out,
                    "<div style=\"width:{:.3}%;background:{color}\" title=\"{}: {} ms\"></div>",
                    v * 100.0 / total,
                    esc(name),
                    ms(*v)
                );
            }
        }
    }
    out.push_str("</div>\n");
}

/// A key figure; `small` is shown smaller after the value.
fn card(out: &mut String, key: &str, value: &str, small: &str, bad: bool) {
    let _ = write!(
        out,
        "<div class=\"card\"><div class=\"k\">{}</div><div class=\"v{}\">{}{}</div></div>",
        esc(key),
        if bad { " bad" } else { "" },
        esc(value),
        if small.is_empty() {
            String::new()
        } else {
            format!(" <small>{}</small>", esc(small))
        }
    );
}

/// The whole report page. Reads only the loaded result directory and its summary.
pub fn render_html(run: &LoadedRun, summary: &Summary) -> String {
    let meta = &run.meta;
    let s = summary;
    let observed = observed_charts(run, s.bottlenecks.as_ref());
    let observed_titles: Vec<String> = observed.iter().map(|o| o.0.clone()).collect();
    let data = chart_data(run, observed);
    let json = script_json(&serde_json::to_string(&data).unwrap_or_else(|_| "null".into()));
    let mut o = String::with_capacity(64 * 1024 + json.len());

    // Head.
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"pado {}\">\n<title>pado report · {}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n",
        esc(&meta.pado_version),
        esc(&s.name)
    );

    // Header.
    let (badge_class, badge_text) = if s.thresholds.is_empty() {
        ("none", "no thresholds")
    } else if s.thresholds_ok {
        ("pass", "PASS")
    } else {
        ("fail", "FAIL")
    };
    let _ = write!(
        o,
        "<header id=\"header\">\n<div class=\"title-row\"><h1 id=\"test-name\">{}</h1>\
         <span id=\"badge\" class=\"badge {badge_class}\" data-ok=\"{}\">{badge_text}</span>{}</div>\n",
        esc(&s.name),
        s.thresholds_ok,
        if s.interrupted {
            "<span id=\"badge-interrupted\" class=\"badge warn\">INTERRUPTED</span>"
        } else {
            ""
        }
    );
    if let Some(g) = s.generator.as_ref().filter(|g| g.saturated) {
        let _ = writeln!(
            o,
            "<div id=\"generator-banner\" class=\"banner\" role=\"alert\"><b>{}</b><br>{}</div>",
            esc(crate::summary::GENERATOR_SATURATED),
            esc(&g.message)
        );
    }
    let _ = writeln!(
        o,
        "<div class=\"sub\">started <time id=\"started-at\" datetime=\"{0}\">{0}</time> · duration <span id=\"duration\" data-value=\"{1}\">{2}</span> · peak {3}</div>",
        esc(&s.started_at),
        round3(s.duration_s),
        duration_text(s.duration_s),
        pado_metrics::fmt::vus(s.vus as f64)
    );
    if !s.scenarios.is_empty() {
        o.push_str("<ul class=\"plain\" id=\"scenarios\">");
        for sc in &s.scenarios {
            let _ = write!(
                o,
                "<li><b>{}</b> <code>{}</code> {} <span class=\"note\">({})</span></li>",
                esc(&sc.name),
                esc(&sc.executor),
                esc(&sc.description),
                if sc.open_model {
                    "open model"
                } else {
                    "closed model"
                }
            );
        }
        o.push_str("</ul>\n");
    }
    let _ = writeln!(
        o,
        "<div class=\"note\" id=\"latency-origin\">latency: {}</div>",
        esc(&s.latency_origin)
    );
    for n in &meta.notes {
        let _ = writeln!(o, "<div class=\"note\">{}</div>", esc(n));
    }
    if !s.warnings.is_empty() {
        o.push_str("<ul class=\"plain warnings\" id=\"warnings\">");
        for w in &s.warnings {
            let _ = write!(o, "<li>⚠ {}</li>", esc(w));
        }
        o.push_str("</ul>\n");
    }
    o.push_str("</header>\n");

    // The verdict, as the terminal summary ends: a few sentences (the generator's
    // finding is already the banner above).
    let verdict: Vec<&String> = s
        .verdict
        .iter()
        .filter(|v| !v.starts_with(crate::summary::GENERATOR_SATURATED))
        .collect();
    if !verdict.is_empty() {
        o.push_str("<section id=\"verdict\">\n<h2>Verdict</h2>\n<ul>");
        for v in verdict {
            let _ = write!(o, "<li>{}</li>", esc(v));
        }
        o.push_str("</ul>\n</section>\n");
    }

    // Key figures.
    o.push_str("<section class=\"cards\" id=\"key-figures\">");
    card(&mut o, "requests", &thousands(s.requests), "", false);
    card(
        &mut o,
        "failed",
        &thousands(s.failed),
        &format!("{:.2}%", s.failed_rate * 100.0),
        s.failed > 0,
    );
    card(&mut o, "req/s", &format!("{:.1}", s.rps), "", false);
    card(&mut o, "p50", &ms(s.latency_ms.p50), "ms", false);
    card(&mut o, "p95", &ms(s.latency_ms.p95), "ms", false);
    card(&mut o, "p99", &ms(s.latency_ms.p99), "ms", false);
    card(&mut o, "peak VUs", &s.vus.to_string(), "", false);
    card(
        &mut o,
        "iterations",
        &thousands(s.iterations),
        &if s.dropped_iterations > 0 {
            format!("{} dropped", thousands(s.dropped_iterations))
        } else {
            String::new()
        },
        s.dropped_iterations > 0,
    );
    card(&mut o, "data received", &bytes(s.data_received), "", false);
    o.push_str("</section>\n");

    // Charts.
    o.push_str("<h2>Over time</h2>\n<section class=\"charts\">\n");
    for (key, title) in [
        ("vus", "Virtual users (active and allocated)"),
        ("rps", "Requests and failures per second"),
        ("latency", "Latency per second (p50 / p95 / p99, ms)"),
        ("errors", "Errors per second by category"),
        (
            "generator_cpu",
            "Generator CPU (% of allowed cores; busiest worker; run-queue wait)",
        ),
        ("generator_lag", "Generator event-loop lag per second (ms)"),
    ] {
        if !data.charts.contains_key(key) {
            continue;
        }
        let log = match data.charts.get(key) {
            Some(c) if key == "latency" => format!(
                "<label><input type=\"checkbox\" class=\"log-scale\" data-chart=\"{key}\"{}> log scale</label>",
                if c.log { " checked" } else { "" }
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "<div class=\"chart\" id=\"chart-{key}\"><div class=\"chart-head\"><h3>{title}</h3>{log}</div><div class=\"legend\"></div><div class=\"chart-body\"></div></div>"
        );
    }
    o.push_str("</section>\n");
    if !observed_titles.is_empty() {
        o.push_str("<h2>Target metrics</h2>\n<p class=\"note\">Scraped from the target during the run, on the same time axis as the load.</p>\n<section class=\"charts\" id=\"target-charts\">\n");
        for (i, title) in observed_titles.iter().enumerate() {
            let _ = writeln!(
                o,
                "<div class=\"chart\" id=\"chart-obs-{i}\"><div class=\"chart-head\"><h3>{}</h3></div><div class=\"legend\"></div><div class=\"chart-body\"></div></div>",
                esc(title)
            );
        }
        o.push_str("</section>\n");
    }
    if let Some(b) = &s.bottlenecks {
        bottleneck_section(&mut o, b);
    }

    // Stages.
    let stages = &run.stages;
    o.push_str("<h2>Stages</h2>\n");
    let rows: Vec<String> = stages
        .iter()
        .map(|st| {
            let l = &st.latency_ms;
            format!(
                "<tr data-scenario=\"{}\" data-index=\"{}\">{}<td class=\"num\" data-value=\"{}\">{}</td>{}{}{}{}{}{}{}{}{}</tr>",
                esc(&st.scenario),
                st.index,
                td_name(&if stages.iter().any(|o| o.scenario != st.scenario) {
                    format!("{} · {}", st.scenario, st.label)
                } else {
                    st.label.clone()
                }),
                round3(st.start_s),
                esc(&format!(
                    "{}–{}",
                    duration_text(st.start_s),
                    duration_text(st.end_s)
                )),
                td_int(st.vus_peak as u64),
                td_int(st.requests),
                td_int(st.failed),
                td_pct(st.error_rate * 100.0, st.failed > 0),
                td_rate(st.rps),
                td_ms(l.mean),
                td_ms(l.p50),
                td_ms(l.p95),
                td_ms(l.p99),
            )
        })
        .collect();
    table(
        &mut o,
        "table-stages",
        &[
            "stage", "window", "peak VUs", "requests", "failed", "error %", "req/s", "mean ms",
            "p50 ms", "p95 ms", "p99 ms",
        ],
        &rows,
        "no stages (the executor has none)",
    );

    // Steps and tags.
    o.push_str("<h2>Steps</h2>\n");
    let rows: Vec<String> = s.steps.iter().map(|(n, st)| step_row(n, st)).collect();
    table(&mut o, "table-steps", &STEP_HEADS, &rows, "no requests");
    if !s.tagged.is_empty() {
        o.push_str("<h3>By tag</h3>\n");
        let rows: Vec<String> = s.tagged.iter().map(|(n, st)| step_row(n, st)).collect();
        let mut heads = STEP_HEADS;
        heads[0] = "step{tags}";
        table(&mut o, "table-tags", &heads, &rows, "no tagged requests");
    }
    if !s.flows.is_empty() {
        o.push_str("<h3>Flows</h3>\n");
        let rows: Vec<String> = s
            .flows
            .iter()
            .map(|(n, f)| {
                let l = &f.iteration_duration_ms;
                format!(
                    "<tr>{}{}{}{}{}{}{}</tr>",
                    td_name(n),
                    td_int(f.iterations),
                    td_ms(l.mean),
                    td_ms(l.p50),
                    td_ms(l.p95),
                    td_ms(l.p99),
                    td_ms(l.max)
                )
            })
            .collect();
        table(
            &mut o,
            "table-flows",
            &[
                "flow",
                "iterations",
                "mean ms",
                "p50 ms",
                "p95 ms",
                "p99 ms",
                "max ms",
            ],
            &rows,
            "no flows",
        );
    }

    // Timing phases.
    o.push_str("<h2>Timing phases</h2>\n<div class=\"two\"><div>\n");
    let mut rows: Vec<String> = PHASES
        .iter()
        .map(|(k, name, _)| {
            let l = s.phases_ms.get(*k).copied().unwrap_or_default();
            format!(
                "<tr data-metric=\"{k}\">{}{}{}{}{}{}</tr>",
                td_name(name),
                td_ms(l.mean),
                td_ms(l.p50),
                td_ms(l.p95),
                td_ms(l.p99),
                td_ms(l.max)
            )
        })
        .collect();
    let l = &s.latency_ms;
    rows.push(format!(
        "<tr data-metric=\"http_req_duration\"><td class=\"name\"><b>duration</b></td>{}{}{}{}{}</tr>",
        td_ms(l.mean),
        td_ms(l.p50),
        td_ms(l.p95),
        td_ms(l.p99),
        td_ms(l.max)
    ));
    table(
        &mut o,
        "table-phases",
        &["phase", "mean ms", "p50 ms", "p95 ms", "p99 ms", "max ms"],
        &rows,
        "",
    );
    o.push_str("</div><div>\n");
    stacked_bar(&mut o, "mean", &s.phases_ms, false);
    stacked_bar(
        &mut o,
        "p95 (each phase's own p95, not additive)",
        &s.phases_ms,
        true,
    );
    o.push_str("<div class=\"stack-legend\">");
    for (_, name, color) in PHASES {
        let _ = write!(o, "<span><i style=\"background:{color}\"></i>{name}</span>");
    }
    o.push_str("</div>\n<div class=\"note\">blocked, connecting and tls come before the request is written; duration is sending + waiting + receiving in the closed model.</div>\n</div></div>\n");

    // Status codes and errors.
    o.push_str("<h2>Responses and errors</h2>\n<div class=\"two\"><div>\n");
    let status_total: u64 = s.status.values().sum();
    let rows: Vec<String> = s
        .status
        .iter()
        .map(|(code, n)| {
            let bad = code.parse::<u16>().map(|c| c >= 400).unwrap_or(false);
            format!(
                "<tr>{}{}{}</tr>",
                td_name(code),
                td_int(*n),
                td_pct(pct(*n, status_total), bad)
            )
        })
        .collect();
    table(
        &mut o,
        "table-status",
        &["status", "responses", "share"],
        &rows,
        "no responses",
    );
    o.push_str("</div><div>\n");
    let rows: Vec<String> = s
        .errors
        .iter()
        .map(|(k, n)| {
            format!(
                "<tr>{}{}{}</tr>",
                td_name(k),
                td_int(*n),
                td_pct(pct(*n, s.requests), true)
            )
        })
        .collect();
    table(
        &mut o,
        "table-errors",
        &["error", "requests", "of all requests"],
        &rows,
        "no errors",
    );
    o.push_str("</div></div>\n");
    failure_table(&mut o, s);

    // Checks and thresholds.
    o.push_str("<h2>Checks</h2>\n");
    let rows: Vec<String> = s
        .checks
        .iter()
        .map(|(name, c)| {
            let total = c.passes + c.fails;
            format!(
                "<tr class=\"{}\">{}{}{}{}</tr>",
                if c.fails > 0 { "bad" } else { "ok" },
                td_name(name),
                td_int(c.passes),
                td_int(c.fails),
                td_pct(pct(c.passes, total), c.fails > 0)
            )
        })
        .collect();
    table(
        &mut o,
        "table-checks",
        &["check", "passes", "fails", "passed"],
        &rows,
        "no checks",
    );
    o.push_str("<h2>Thresholds</h2>\n");
    let rows: Vec<String> = s
        .thresholds
        .iter()
        .map(|t| {
            let (value_attr, value_text) = match t.value {
                Some(v) => (format!("{v}"), trim_num(v)),
                None => (String::new(), "no data".to_string()),
            };
            format!(
                "<tr class=\"{0}\" data-ok=\"{1}\">{2}<td><code>{3}</code></td><td class=\"num\" data-value=\"{4}\">{5}</td><td class=\"status {0}\">{6}</td></tr>",
                if t.ok { "ok" } else { "bad" },
                t.ok,
                td_name(&t.metric),
                esc(&t.expr),
                esc(&value_attr),
                esc(&value_text),
                if t.ok { "✓ pass" } else { "✗ fail" }
            )
        })
        .collect();
    table(
        &mut o,
        "table-thresholds",
        &["metric", "<expression", "actual", "<result"],
        &rows,
        "no thresholds",
    );

    // Metadata.
    o.push_str("<h2>Run</h2>\n<dl class=\"meta\" id=\"run-meta\">");
    let interrupted = if meta.interrupted { "yes" } else { "no" };
    let format = format!("{} v{}", meta.format, meta.version);
    let workers = if meta.cores_allowed > 0 {
        format!("{} ({} cores allowed)", meta.workers, meta.cores_allowed)
    } else {
        meta.workers.to_string()
    };
    let generator = s
        .generator
        .as_ref()
        .map(crate::text::generator_line)
        .unwrap_or_else(|| "not measured (older result directory)".into());
    let duration = format!("{:.3} s", meta.duration_s);
    let iterations = format!(
        "{} completed, {} interrupted, {} dropped, {} late",
        thousands(s.iterations),
        thousands(s.iterations_interrupted),
        thousands(s.dropped_iterations),
        thousands(s.late_iterations)
    );
    let vus = format!("{} active, {} allocated (peak)", s.vus, s.vus_max);
    let data_text = format!(
        "{} received, {} sent",
        bytes(s.data_received),
        bytes(s.data_sent)
    );
    for (k, v) in [
        ("name", meta.name.as_str()),
        ("pado version", meta.pado_version.as_str()),
        ("result format", format.as_str()),
        ("workers", workers.as_str()),
        ("started at", meta.started_at.as_str()),
        ("duration", duration.as_str()),
        ("interrupted", interrupted),
        ("iterations", iterations.as_str()),
        ("VUs", vus.as_str()),
        ("data", data_text.as_str()),
        ("generator", generator.as_str()),
    ] {
        let _ = write!(o, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
    }
    o.push_str("</dl>\n");
    let _ = writeln!(
        o,
        "<footer>generated by pado {} from the result directory · charts show at most {MAX_POINTS} points per series (LTTB downsampling)</footer>",
        esc(&meta.pado_version)
    );

    // Data and script.
    let _ = write!(
        o,
        "<script type=\"application/json\" id=\"data\">{json}</script>\n<script>\n{JS}</script>\n</body>\n</html>\n"
    );
    o
}

use pado_metrics::fmt::plain as trim_num;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::test_support::*;
    use crate::summary::build;
    use pado_metrics::{
        CheckCounts, ErrorKind, Phases, RequestSample, ResultDir, ScenarioMeta, SecondRecord,
        SeriesKey, SeriesStats, ThresholdSpec,
    };

    const XSS: &str = "<script>alert(1)</script>";
    const KOREAN: &str = "검색 \"엔진\" & <b>";

    fn between<'a>(s: &'a str, start: &str, end: &str) -> &'a str {
        let i = s.find(start).unwrap_or_else(|| panic!("no {start}")) + start.len();
        let j = s[i..]
            .find(end)
            .unwrap_or_else(|| panic!("no {end} after {start}"))
            + i;
        &s[i..j]
    }

    fn data_json(html: &str) -> serde_json::Value {
        let raw = between(
            html,
            "<script type=\"application/json\" id=\"data\">",
            "</script>",
        );
        serde_json::from_str(raw).expect("data block is JSON")
    }

    /// `data-value`s of the cells of the first row whose opening tag contains `marker`.
    fn row_values(html: &str, marker: &str) -> Vec<String> {
        let row = between(html, marker, "</tr>");
        row.split("data-value=\"")
            .skip(1)
            .map(|p| p[..p.find('"').unwrap()].to_string())
            .collect()
    }

    fn two_stage_run() -> LoadedRun {
        let mut m = meta(KOREAN, 10.0);
        m.stages = vec![
            stage(0, 0.0, 4.0, "ramp 0→8 VUs"),
            stage(1, 4.0, 10.0, "hold </script> 8"),
        ];
        m.scenarios = vec![ScenarioMeta {
            name: "default".into(),
            executor: "ramping-vus".into(),
            description: "0→8 VUs <fast>".into(),
            open_model: false,
        }];
        m.thresholds = vec![
            ThresholdSpec {
                metric: "http_req_duration".into(),
                expr: "p(95) < 2".into(),
                abort_on_fail: false,
            },
            ThresholdSpec {
                metric: "http_req_failed".into(),
                expr: "rate < 0.01".into(),
                abort_on_fail: false,
            },
        ];
        m.warnings = vec!["<img src=x onerror=alert(1)>".into()];
        let seconds = (0..10u32)
            .map(|t| {
                let mut r = if t < 4 {
                    second(
                        t,
                        t * 2,
                        vec![series(XSS, 9, 200, 1000), series(XSS, 1, 500, 1000)],
                    )
                } else {
                    let mut tagged = SeriesStats::new(SeriesKey {
                        name: KOREAN.into(),
                        tags: vec![("class".into(), "<rare>".into())],
                    });
                    for _ in 0..5 {
                        tagged.record(&sample(200, 9000));
                    }
                    second(t, 8, vec![series(KOREAN, 25, 200, 5000), tagged])
                };
                r.checks.insert(
                    format!("{XSS} status is 200"),
                    CheckCounts {
                        passes: 9,
                        fails: if t == 2 { 1 } else { 0 },
                    },
                );
                r
            })
            .collect();
        run(m, seconds)
    }

    #[test]
    fn escapes_everything_and_has_stable_ids() {
        let r = two_stage_run();
        let s = build(&r).unwrap();
        let html = render_html(&r, &s);
        for id in [
            "chart-vus",
            "chart-rps",
            "chart-latency",
            "chart-errors",
            "table-steps",
            "table-stages",
            "table-thresholds",
            "table-checks",
            "table-phases",
            "table-tags",
        ] {
            assert!(html.contains(&format!("id=\"{id}\"")), "missing #{id}");
        }
        assert!(!html.contains("<script>alert"));
        assert!(!html.contains("<img"));
        assert!(!html.contains("& <b>"));
        assert!(!html.contains("<rare>"));
        assert!(!html.contains("<fast>"));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("검색 &quot;엔진&quot; &amp; &lt;b&gt;"));
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));
        // Exactly two script elements: the data and the code.
        assert_eq!(html.matches("<script").count(), 2);
        assert_eq!(html.matches("</script>").count(), 2);
        assert!(!between(&html, "id=\"data\">", "</script>").contains('<'));
        let d = data_json(&html);
        assert_eq!(d["stages"][1]["label"], "hold </script> 8");
        assert_eq!(d["stage_rows"], 1);
        assert_eq!(d["duration"], 10.0);
        // Thresholds: p95 of 1..9 ms fails `< 2`, the failure rate of 4% fails too.
        assert!(html.contains("class=\"badge fail\""));
        assert_eq!(html.matches("data-ok=\"false\"").count(), 3);
        // Checks: 90 passes, 1 fail.
        let check = row_values(&html, "<tr class=\"bad\"><td class=\"name\">&lt;script");
        assert_eq!(check[..2], ["90".to_string(), "1".to_string()]);
        // Steps: the XSS step has 40 requests, 4 failed.
        let steps = between(&html, "id=\"table-steps\"", "</table>");
        let xss_row = row_values(
            steps,
            "<td class=\"name\">&lt;script&gt;alert(1)&lt;/script&gt;</td>",
        );
        assert_eq!(xss_row[..2], ["40".to_string(), "4".to_string()]);
    }

    #[test]
    fn the_verdict_is_listed_at_the_top_escaped() {
        let r = two_stage_run();
        let mut s = build(&r).unwrap();
        assert!(s.verdict[0].starts_with("SLA not met"), "{:?}", s.verdict);
        s.verdict.push("load <b>rose</b> & fell".into());
        let html = render_html(&r, &s);
        let at = html.find("id=\"verdict\"").expect("a verdict section");
        assert!(at < html.find("id=\"key-figures\"").unwrap());
        let list = between(&html, "id=\"verdict\">", "</section>");
        assert_eq!(list.matches("<li>").count(), s.verdict.len());
        assert!(list.contains("<li>SLA not met: http_req_duration: p(95) &lt; 2"));
        assert!(list.contains("load &lt;b&gt;rose&lt;/b&gt; &amp; fell"));
    }

    #[test]
    fn stage_table_matches_hand_computation() {
        let r = two_stage_run();
        let s = build(&r).unwrap();
        let html = render_html(&r, &s);
        // Stage 0: seconds 0..4, 10 requests each, 1 failed each, 1 ms.
        let v = row_values(&html, "<tr data-scenario=\"default\" data-index=\"0\">");
        // window start, peak VUs, requests, failed, error %, req/s, mean, p50, p95, p99
        assert_eq!(v[0], "0");
        assert_eq!(v[1], "6");
        assert_eq!(v[2], "40");
        assert_eq!(v[3], "4");
        assert_eq!(v[4], "10");
        assert_eq!(v[5], "10");
        let p95: f64 = v[8].parse().unwrap();
        assert!((p95 - 1.0).abs() < 0.01, "{p95}");
        // Stage 1: seconds 4..10, 30 requests each (25 at 5 ms, 5 at 9 ms).
        let v = row_values(&html, "<tr data-scenario=\"default\" data-index=\"1\">");
        assert_eq!(v[0], "4");
        assert_eq!(v[1], "8");
        assert_eq!(v[2], "180");
        assert_eq!(v[3], "0");
        assert_eq!(v[5], "30");
        let mean: f64 = v[6].parse().unwrap();
        assert!(
            (mean - (25.0 * 5.0 + 5.0 * 9.0) / 30.0).abs() < 0.02,
            "{mean}"
        );
        let p99: f64 = v[9].parse().unwrap();
        assert!((p99 - 9.0).abs() < 0.02, "{p99}");
        // The same figures from the public function.
        let st = stage_stats(&r);
        assert_eq!((st[0].requests, st[1].requests), (40, 180));
    }

    #[test]
    fn lttb_keeps_ends_length_and_spikes() {
        let mut pts: Vec<(f64, f64)> = (0..10_000).map(|i| (i as f64, 1.0)).collect();
        pts[5_000].1 = 100.0;
        pts[7_777].1 = -50.0;
        let out = lttb(&pts, 1000);
        assert_eq!(out.len(), 1000);
        assert_eq!(out[0], pts[0]);
        assert_eq!(out[999], pts[9_999]);
        assert!(out.contains(&(5000.0, 100.0)));
        assert!(out.contains(&(7777.0, -50.0)));
        assert!(out.windows(2).all(|w| w[0].0 < w[1].0));
        // Short inputs come back unchanged; tiny thresholds still keep the ends.
        assert_eq!(lttb(&pts[..10], 1000), pts[..10].to_vec());
        assert!(lttb(&[], 10).is_empty());
        let three = lttb(&pts, 0);
        assert_eq!(three.len(), 3);
        assert_eq!(three[1], (5000.0, 100.0));
        // A sine keeps its extremes.
        let sine: Vec<(f64, f64)> = (0..14_400)
            .map(|i| (i as f64, (i as f64 / 600.0).sin()))
            .collect();
        let out = lttb(&sine, 1000);
        let max = out.iter().map(|p| p.1).fold(f64::MIN, f64::max);
        assert!(max > 0.999);
    }

    #[test]
    fn empty_and_one_second_runs_render() {
        let r = run(meta("empty", 0.0), vec![]);
        let s = build(&r).unwrap();
        let html = render_html(&r, &s);
        let d = data_json(&html);
        assert_eq!(
            d["charts"]["latency"]["series"][0]["pts"],
            serde_json::json!([])
        );
        assert_eq!(d["charts"]["errors"]["series"], serde_json::json!([]));
        assert!(html.contains("no thresholds"));
        assert!(html.contains("no stages"));
        assert!(html.contains("class=\"badge none\""));

        let r = run(
            meta("one", 1.0),
            vec![second(0, 1, vec![series("a", 3, 200, 700)])],
        );
        let s = build(&r).unwrap();
        let d = data_json(&render_html(&r, &s));
        assert_eq!(
            d["charts"]["rps"]["series"][0]["pts"],
            serde_json::json!([[0.0, 3.0]])
        );
    }

    #[test]
    fn four_hour_run_is_downsampled() {
        // Most seconds empty (to keep the test light), VUs vary every second.
        let seconds: Vec<SecondRecord> = (0..14_400u32)
            .map(|t| {
                let s = if t % 97 == 0 {
                    vec![series(
                        "a",
                        2,
                        if t % 2 == 0 { 200 } else { 503 },
                        1000 + t as u64,
                    )]
                } else {
                    vec![]
                };
                second(t, (t % 300) + 1, s)
            })
            .collect();
        let r = run(meta("long", 14_400.0), seconds);
        let s = build(&r).unwrap();
        let html = render_html(&r, &s);
        let d = data_json(&html);
        for chart in ["vus", "rps", "latency", "errors"] {
            for s in d["charts"][chart]["series"].as_array().unwrap() {
                let n = s["pts"].as_array().unwrap().len();
                assert!(n <= MAX_POINTS, "{chart}: {n}");
            }
        }
        assert_eq!(
            d["charts"]["vus"]["series"][0]["pts"]
                .as_array()
                .unwrap()
                .len(),
            MAX_POINTS
        );
        assert!(html.len() < 400_000, "{}", html.len());
    }

    #[test]
    fn esc_and_script_json() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(esc(KOREAN), "검색 &quot;엔진&quot; &amp; &lt;b&gt;");
        let j = script_json(
            &serde_json::to_string(&serde_json::json!({"a": "</script><!--&"})).unwrap(),
        );
        assert!(!j.contains('<'));
        let back: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(back["a"], "</script><!--&");
    }

    /// Deterministic pseudo-random numbers for the demo run.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// Writes realistic result directories with `report.html` for a browser look:
    /// `PADO_REPORT_DEMO=/tmp/demo cargo test -p pado-report -- --ignored demo`.
    #[test]
    #[ignore]
    fn demo_report() {
        let base = std::path::PathBuf::from(
            std::env::var("PADO_REPORT_DEMO").unwrap_or_else(|_| "/tmp/pado-report-demo".into()),
        );
        let write = |name: &str, meta: pado_metrics::RunMeta, seconds: Vec<SecondRecord>| {
            let dir = ResultDir::create(base.join(name)).unwrap();
            dir.write_meta(&meta).unwrap();
            let mut w = dir.timeline_writer().unwrap();
            for s in &seconds {
                w.write(s).unwrap();
            }
            drop(w);
            let loaded = crate::summary::load(&dir).unwrap();
            let s = build(&loaded).unwrap();
            std::fs::write(dir.path().join("report.html"), render_html(&loaded, &s)).unwrap();
            std::fs::write(
                dir.path().join("timeline.csv"),
                crate::csv_export::timeline_csv(&loaded),
            )
            .unwrap();
            std::fs::write(dir.path().join("junit.xml"), crate::junit::junit_xml(&s)).unwrap();
        };

        // A 10-minute ramp/hold/ramp-down run with an incident at 5 minutes.
        let mut m = meta("checkout flow — 검색 \"엔진\" & <b>", 600.0);
        m.scenarios = vec![
            ScenarioMeta {
                name: "shoppers".into(),
                executor: "ramping-vus".into(),
                description: "0→50 VUs over 2m, hold 5m, down 3m".into(),
                open_model: false,
            },
            ScenarioMeta {
                name: "background".into(),
                executor: "constant-arrival-rate".into(),
                description: "20 iterations/s for 10m".into(),
                open_model: true,
            },
        ];
        m.stages = vec![
            mark("shoppers", 0, 0.0, 120.0, "ramp 0→50 VUs", 50.0),
            mark("shoppers", 1, 120.0, 420.0, "hold 50 VUs", 50.0),
            mark("shoppers", 2, 420.0, 600.0, "ramp 50→0 VUs", 0.0),
            mark("background", 0, 0.0, 600.0, "hold 20 req/s", 20.0),
        ];
        m.thresholds = vec![
            ThresholdSpec {
                metric: "http_req_duration".into(),
                expr: "p(95) < 200".into(),
                abort_on_fail: false,
            },
            ThresholdSpec {
                metric: "http_req_failed".into(),
                expr: "rate < 0.01".into(),
                abort_on_fail: false,
            },
            ThresholdSpec {
                metric: format!("http_req_duration{{step:{XSS}}}"),
                expr: "p(99) < 1000".into(),
                abort_on_fail: false,
            },
        ];
        m.warnings = vec!["generator CPU above 90% for 12 s: <img src=x onerror=alert(1)>".into()];
        m.notes = vec!["closed model for shoppers, open model for background".into()];
        let mut rng = Lcg(42);
        let mut seconds = Vec::new();
        for t in 0..600u32 {
            let vus = if t < 120 {
                t * 50 / 120
            } else if t < 420 {
                50
            } else {
                (600 - t) * 50 / 180
            };
            let incident = (300..330).contains(&t);
            let mut rec = SecondRecord::new(t);
            let mut login = SeriesStats::new(SeriesKey::named("login"));
            let mut xss = SeriesStats::new(SeriesKey::named(XSS));
            let mut search = SeriesStats::new(SeriesKey {
                name: KOREAN.into(),
                tags: vec![("class".into(), "common".into())],
            });
            let mut rare = SeriesStats::new(SeriesKey {
                name: KOREAN.into(),
                tags: vec![("class".into(), "rare".into())],
            });
            let n = vus * 6 + 20;
            let mut checks = (0u64, 0u64);
            for _ in 0..n {
                let u = rng.next();
                let base = 15_000.0 + vus as f64 * 900.0 * rng.next();
                let mut dur = (base * (1.0 + 3.0 * rng.next().powi(8))) as u64;
                if incident {
                    dur *= 4;
                }
                let mut sample = RequestSample {
                    status: 200,
                    phases: Phases {
                        duration_us: dur,
                        waiting_us: dur * 85 / 100,
                        sending_us: dur / 100,
                        receiving_us: dur * 14 / 100,
                        blocked_us: if rng.next() < 0.05 { 3000 } else { 5 },
                        connecting_us: if rng.next() < 0.05 { 1500 } else { 0 },
                        tls_us: if rng.next() < 0.05 { 4000 } else { 0 },
                    },
                    bytes_sent: 300,
                    bytes_received: 4000,
                    ..Default::default()
                };
                let e = rng.next();
                if incident && e < 0.15 {
                    sample.status = 503;
                    sample.failed = true;
                } else if incident && e < 0.2 {
                    sample = RequestSample {
                        error: Some(ErrorKind::Timeout),
                        failed: true,
                        ..sample
                    };
                    sample.phases.duration_us = 10_000_000;
                } else if e < 0.004 {
                    sample.status = 404;
                    sample.failed = true;
                }
                if sample.failed {
                    checks.1 += 1;
                } else {
                    checks.0 += 1;
                }
                if u < 0.1 {
                    login.record(&sample);
                } else if u < 0.4 {
                    xss.record(&sample);
                } else if u < 0.9 {
                    search.record(&sample);
                } else {
                    rare.record(&sample);
                }
            }
            rec.absorb(pado_metrics::Interval {
                vus,
                vus_max: 50 + 10,
                series: [login, xss, search, rare]
                    .into_iter()
                    .filter(|s| s.requests > 0)
                    .collect(),
                ..Default::default()
            });
            rec.checks.insert(
                "status is 200".into(),
                CheckCounts {
                    passes: checks.0,
                    fails: checks.1,
                },
            );
            rec.checks.insert(
                format!("{XSS} body has <id>"),
                CheckCounts {
                    passes: checks.0 + checks.1,
                    fails: 0,
                },
            );
            seconds.push(rec);
        }
        write("full", m, seconds);
        write("empty", meta("empty run", 0.0), vec![]);
        write(
            "one-second",
            meta("one second", 1.0),
            vec![second(0, 1, vec![series("only", 3, 200, 800)])],
        );
    }

    fn mark(
        scenario: &str,
        index: usize,
        start_s: f64,
        end_s: f64,
        label: &str,
        target: f64,
    ) -> pado_metrics::StageMark {
        pado_metrics::StageMark {
            scenario: scenario.into(),
            index,
            start_s,
            end_s,
            label: label.into(),
            target,
            from: Some(target),
        }
    }
}
