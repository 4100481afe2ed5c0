//! The comparison as a self-contained HTML page (the same table, for sharing), built
//! with maud so run labels, metric and scope names and limits are escaped.

use maud::{html, Markup, PreEscaped, DOCTYPE};
use pado_base::units::value as fmt_v;

use super::{legend, CompareRow, Comparison, Verdict};

/// The page's stylesheet: pado's own text.
const CSS: &str = "
body{font:14px/1.45 system-ui,sans-serif;margin:24px 32px;color:#1e293b}
table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #e2e8f0;text-align:right}
td.name,th.name{text-align:left}.better{color:#15803d}.worse{color:#b91c1c}.noise{color:#64748b}tr.scope td{font-weight:600;text-align:left;padding-top:14px}
";

/// A change in percent, signed (`+12.5%`), `-` when there is none.
fn change_text(ch: Option<f64>) -> String {
    ch.map_or("-".to_string(), |x| format!("{x:+.1}%"))
}

/// One metric: values per run, then change and verdict per candidate.
fn row(r: &CompareRow) -> Markup {
    html! {
        tr {
            td class="name" { (r.metric) }
            @for v in &r.values { td { (fmt_v(*v)) } }
            @for (ch, vd) in r.changes.iter().zip(&r.verdicts) {
                td { (change_text(*ch)) }
                td class=(match vd {
                    Verdict::Better => "better",
                    Verdict::Worse => "worse",
                    _ => "noise",
                }) { (vd.mark()) }
            }
        }
    }
}

/// The rows in runs of the same scope, in order.
fn by_scope(rows: &[CompareRow]) -> Vec<(&str, Vec<&CompareRow>)> {
    let mut groups: Vec<(&str, Vec<&CompareRow>)> = Vec::new();
    for r in rows {
        match groups.last_mut() {
            Some((scope, list)) if *scope == r.scope => list.push(r),
            _ => groups.push((&r.scope, vec![r])),
        }
    }
    groups
}

/// The table, with a heading row for each scope.
fn table(c: &Comparison) -> Markup {
    html! {
        table id="table-compare" {
            thead { tr {
                th class="name" { "metric" }
                @for r in &c.runs { th { (r) } }
                @for r in c.runs.iter().skip(1) { th { "change (" (r) ")" } th { "verdict" } }
            } }
            tbody {
                @for (scope, rows) in by_scope(&c.rows) {
                    tr class="scope" { td colspan=(1 + c.runs.len() * 3) { (scope) } }
                    @for r in rows { (row(r)) }
                }
            }
        }
    }
}

/// The comparison as a self-contained HTML page (same table, for sharing).
pub fn render_compare_html(c: &Comparison) -> String {
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { "pado compare" }
                style { (PreEscaped(CSS)) }
            }
            body {
                h1 { "pado compare" }
                ol {
                    @for (i, r) in c.runs.iter().enumerate() {
                        li {
                            (r)
                            @if i == 0 { " (baseline)" }
                            @if let Some(l) = c.limits.get(i).and_then(|l| l.as_ref()) {
                                " — limit: " (l)
                            }
                            @if let Some(k) = c.soak.get(i).and_then(|k| k.as_ref()) {
                                " — soak: " (k)
                            }
                        }
                    }
                }
                @for w in &c.warnings { p class="worse" { (w) } }
                (table(c))
                @for (mark, meaning) in legend(c) { p { (mark) ": " (meaning) } }
                p { "significance: " (c.method) }
                p id="noise-between-runs" { "noise between runs: " (c.noise_between_runs) }
            }
        }
    };
    let mut out = page.into_string();
    out.push('\n');
    out
}
