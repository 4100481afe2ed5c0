//! The experiment as a self-contained HTML page: the measured points against the
//! knob on an inline SVG chart (no script, the style of `pado trend`'s page) with
//! the fitted curve and the next step's prediction, then the table, the fit and its
//! checks. Built with maud, so the knob's name, labels and verdicts are escaped.

use maud::{html, Markup, PreEscaped, DOCTYPE};
use pado_base::units::{plain, value as fmt_v};

use super::{analyse, fit_line, limit_lines, prediction_line, ExperimentAnalysis, ExperimentTable};

/// The page's stylesheet, as `pado trend`'s page.
const CSS: &str = "
body{font:14px/1.45 system-ui,sans-serif;margin:24px 32px;color:#1e293b}
table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #e2e8f0;text-align:right}
td.name,th.name{text-align:left}.worse{color:#b91c1c}.noise{color:#64748b}
svg{background:#f8fafc;border:1px solid #e2e8f0}
";

const W: f64 = 720.0;
const H: f64 = 300.0;
const PAD: f64 = 48.0;

/// Samples of the fitted curve drawn between the chart's ends.
const CURVE_SAMPLES: usize = 64;

/// The chart: each measured point, the fitted curve over the knob's range (and the
/// next step), the next step's prediction as a hollow point.
fn chart(t: &ExperimentTable, a: &ExperimentAnalysis) -> Markup {
    let measured: Vec<(f64, f64, &str)> = t
        .points
        .iter()
        .filter(|r| r.value.is_finite())
        .filter_map(|r| {
            r.measured
                .filter(|m| m.is_finite())
                .map(|m| (r.value, m, r.verdict.as_str()))
        })
        .collect();
    let next = a.next.filter(|n| n.predicted.is_finite());
    let xs = t
        .points
        .iter()
        .map(|r| r.value)
        .chain(next.map(|n| n.value))
        .filter(|x| x.is_finite());
    let (x_lo, x_hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    let (x_lo, x_hi) = if x_lo.is_finite() && x_hi > x_lo {
        (x_lo.min(0.0), x_hi)
    } else {
        (0.0, x_hi.max(1.0))
    };
    let curve: Vec<(f64, f64)> = match a.fit {
        Some(f) => (0..=CURVE_SAMPLES)
            .map(|i| {
                let x = x_lo + (x_hi - x_lo) * i as f64 / CURVE_SAMPLES as f64;
                (x, f.predict(x))
            })
            .collect(),
        None => Vec::new(),
    };
    let y_hi = measured
        .iter()
        .map(|p| p.1)
        .chain(curve.iter().map(|p| p.1))
        .chain(next.map(|n| n.predicted))
        .fold(0.0_f64, f64::max)
        .max(f64::MIN_POSITIVE)
        * 1.1;
    let x = |v: f64| PAD + (W - 2.0 * PAD) * (v - x_lo) / (x_hi - x_lo);
    let y = |v: f64| H - PAD - (H - 2.0 * PAD) * v / y_hi;
    let path: String = curve
        .iter()
        .enumerate()
        .map(|(k, (cx, cy))| {
            format!(
                "{}{:.1},{:.1}",
                if k == 0 { "M" } else { " L" },
                x(*cx),
                y(*cy)
            )
        })
        .collect();
    html! {
        svg id="experiment-chart" width=(W) height=(H) viewBox=(format!("0 0 {W} {H}")) role="img" {
            title { (t.metric) " against " (t.knob) }
            line x1=(PAD) y1=(H - PAD) x2=(W - PAD) y2=(H - PAD) stroke="#94a3b8" {}
            line x1=(PAD) y1=(PAD) x2=(PAD) y2=(H - PAD) stroke="#94a3b8" {}
            text x=(4) y=(PAD) font-size="11" { (fmt_v(Some(y_hi))) }
            text x=(4) y=(H - PAD) font-size="11" { "0" }
            text x=(W / 2.0) y=(H - 8.0) font-size="12" text-anchor="middle" { (t.knob) }
            @if !path.is_empty() {
                path id="experiment-fit" d=(path) fill="none" stroke="#64748b" stroke-width="1.5" stroke-dasharray="5 4" {}
            }
            @for (vx, vy, verdict) in &measured {
                circle class="measured" cx=(format!("{:.1}", x(*vx))) cy=(format!("{:.1}", y(*vy))) r="5" fill="#2563eb" {
                    title { (t.value_label(*vx)) ": " (fmt_v(Some(*vy))) " · " (verdict) }
                }
                text x=(format!("{:.1}", x(*vx))) y=(H - PAD + 16.0) font-size="11" text-anchor="middle" { (plain(*vx)) }
            }
            @if let Some(n) = next {
                circle class="predicted" cx=(format!("{:.1}", x(n.value))) cy=(format!("{:.1}", y(n.predicted))) r="5" fill="none" stroke="#2563eb" stroke-width="2" {
                    title { "predicted at " (t.value_label(n.value)) ": " (fmt_v(Some(n.predicted))) }
                }
            }
        }
    }
}

/// The table of points.
fn table(t: &ExperimentTable, a: &ExperimentAnalysis) -> Markup {
    let per_cost = !a.per_cost.is_empty();
    html! {
        table id="table-experiment" {
            thead {
                tr {
                    th class="name" { (t.knob) }
                    th { (t.metric) }
                    @if per_cost { th { "per cost" } }
                    th class="name" { "limit" }
                    th class="name" { "run" }
                }
            }
            tbody {
                @for r in &t.points {
                    tr {
                        td class="name" { (t.value_label(r.value)) }
                        td { (fmt_v(r.measured)) }
                        @if per_cost {
                            td { (fmt_v(a.per_cost.iter().find(|c| c.value == r.value).map(|c| c.per_cost))) }
                        }
                        @match &r.error {
                            Some(e) => td class="name worse" { "failed: " (e) },
                            None => td class="name" { (r.verdict) },
                        }
                        td class="name" { (r.run_id.as_deref().unwrap_or("-")) }
                    }
                }
            }
        }
    }
}

/// The experiment as a self-contained HTML page.
pub fn html(t: &ExperimentTable) -> String {
    let a = analyse(t);
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { "pado experiment: " (t.knob) }
                style { (PreEscaped(CSS)) }
            }
            body {
                h1 { (t.metric) " against " (t.knob) }
                (chart(t, &a))
                (table(t, &a))
                @if let Some(f) = &a.fit {
                    p id="experiment-fit-line" { (fit_line(t, f)) }
                }
                @if let Some(n) = &a.fit_note {
                    p class="noise" id="experiment-fit-note" { (n) }
                }
                @if !a.predictions.is_empty() {
                    h2 { "Predictions, each from the points before it" }
                    ul id="experiment-predictions" {
                        @for c in &a.predictions {
                            li { (prediction_line(t, c)) }
                        }
                    }
                }
                @for l in limit_lines(t, &a) {
                    p class="limit" { (l) }
                }
            }
        }
    }
    .into_string()
}
