//! The trend as a self-contained HTML page: an inline SVG line chart (no script)
//! and the table of runs, built with maud so names and labels are escaped.

use maud::{html, Markup, PreEscaped, DOCTYPE};
use pado_base::units::value as fmt_v;

use super::{verdict_line, Trend, TrendVerdict};

/// The page's stylesheet, as `pado compare`'s page.
const CSS: &str = "
body{font:14px/1.45 system-ui,sans-serif;margin:24px 32px;color:#1e293b}
table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #e2e8f0;text-align:right}
td.name,th.name{text-align:left}.better{color:#15803d}.worse{color:#b91c1c}.noise{color:#64748b}
svg{background:#f8fafc;border:1px solid #e2e8f0}
";

const W: f64 = 720.0;
const H: f64 = 260.0;
const PAD: f64 = 40.0;

/// The chart: one point per run with a value, the baseline's median as a line.
fn chart(t: &Trend) -> Markup {
    let vals: Vec<(usize, f64)> = t
        .points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.value.map(|v| (i, v)))
        .collect();
    let hi = vals
        .iter()
        .map(|(_, v)| *v)
        .chain(t.baseline_value)
        .fold(0.0_f64, f64::max)
        .max(f64::MIN_POSITIVE)
        * 1.1;
    let n = t.points.len().max(2) as f64 - 1.0;
    let x = |i: usize| PAD + (W - 2.0 * PAD) * i as f64 / n;
    let y = |v: f64| H - PAD - (H - 2.0 * PAD) * v / hi;
    let path: String = vals
        .iter()
        .enumerate()
        .map(|(k, (i, v))| {
            format!(
                "{}{:.1},{:.1}",
                if k == 0 { "M" } else { " L" },
                x(*i),
                y(*v)
            )
        })
        .collect();
    html! {
        svg id="trend-chart" width=(W) height=(H) viewBox=(format!("0 0 {W} {H}")) role="img" {
            line x1=(PAD) y1=(H - PAD) x2=(W - PAD) y2=(H - PAD) stroke="#94a3b8" {}
            text x=(4) y=(PAD) font-size="11" { (fmt_v(Some(hi))) }
            text x=(4) y=(H - PAD) font-size="11" { "0" }
            @if let Some(b) = t.baseline_value {
                line x1=(PAD) y1=(y(b)) x2=(W - PAD) y2=(y(b)) stroke="#64748b" stroke-dasharray="4 4" {}
            }
            path d=(path) fill="none" stroke="#2563eb" stroke-width="2" {}
            @for (i, v) in &vals {
                @let p = &t.points[*i];
                circle cx=(x(*i)) cy=(y(*v)) r="4"
                    fill=(if *i + 1 == t.points.len() && t.verdict == TrendVerdict::Regression { "#b91c1c" } else { "#2563eb" }) {
                    title { "run " (p.id) " · " (p.started_at) " · " (fmt_v(Some(*v))) " " (p.labels) }
                }
                text x=(x(*i)) y=(H - PAD + 16.0) font-size="11" text-anchor="middle" { (p.id) }
            }
        }
    }
}

/// The trend as a self-contained HTML page.
pub fn render_trend_html(t: &Trend) -> String {
    let scope = t
        .step
        .as_deref()
        .map(|s| format!(" · step {s}"))
        .unwrap_or_default();
    let class = match t.verdict {
        TrendVerdict::Regression => "worse",
        TrendVerdict::Improvement => "better",
        _ => "noise",
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { "pado trend: " (t.name) }
                style { (PreEscaped(CSS)) }
            }
            body {
                h1 { (t.name) }
                p { (t.metric.label()) (scope) }
                (chart(t))
                p class=(class) id="trend-verdict" { (verdict_line(t)) }
                p class="noise" { "Judged on " (t.basis) }
                p class="noise" id="trend-noise-between-runs" { "Noise between runs: " (t.floor.describe()) }
                table id="table-trend" {
                    thead { tr { th { "run" } th class="name" { "started" } th { (t.metric.label()) } th class="name" { "labels" } th class="name" { "" } } }
                    tbody {
                        @for p in &t.points {
                            tr {
                                td { (p.id) }
                                td class="name" { (p.started_at) }
                                td { (fmt_v(p.value)) }
                                td class="name" { (p.labels) }
                                td class="name" {
                                    @if t.baseline_ids.contains(&p.id) { "baseline " }
                                    @if p.dir_gone { "directory gone" }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    .into_string()
}
