//! Timing phases: the table of each phase's distribution and two stacked bars
//! showing where a request's time goes.

use std::collections::BTreeMap;

use maud::{html, Markup};
use pado_base::units::ms;
use pado_metrics::LatencySummary;

use super::cells::{table, td_ms, td_name};
use crate::summary::Summary;

/// The phases of the breakdown, with display names and colours.
const PHASES: [(&str, &str, &str); 7] = [
    ("http_req_blocked", "blocked", "#94a3b8"),
    ("http_req_dns", "dns", "#ec4899"),
    ("http_req_connecting", "connecting", "#f59e0b"),
    ("http_req_tls_handshaking", "tls", "#a855f7"),
    ("http_req_sending", "sending", "#06b6d4"),
    ("http_req_waiting", "waiting (ttfb)", "#2563eb"),
    ("http_req_receiving", "receiving", "#16a34a"),
];

/// The five figures of one distribution as cells.
fn dist_cells(l: &LatencySummary) -> Markup {
    html! { (td_ms(l.mean)) (td_ms(l.p50)) (td_ms(l.p95)) (td_ms(l.p99)) (td_ms(l.max)) }
}

/// One bar: each phase's share of the sum of the phases' means (or p95s).
fn stacked_bar(label: &str, phases: &BTreeMap<String, LatencySummary>, p95: bool) -> Markup {
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
    html! {
        div class="stack-label" { (label) " — " (ms(total)) " ms total" }
        div class="stack" id=(if p95 { "stack-p95" } else { "stack-mean" }) {
            @if total > 0.0 {
                @for (name, color, v) in &vals {
                    @if *v > 0.0 {
                        div style=(format!("width:{:.3}%;background:{color}", v * 100.0 / total))
                            title=(format!("{name}: {} ms", ms(*v))) {}
                    }
                }
            }
        }
    }
}

/// The "Timing phases" section.
pub(super) fn section(s: &Summary) -> Markup {
    let mut rows: Vec<Markup> = PHASES
        .iter()
        // `http_req_dns` is missing from runs recorded before pado timed it.
        .filter(|(k, _, _)| *k != "http_req_dns" || s.phases_ms.contains_key(*k))
        .map(|(k, name, _)| {
            let l = s.phases_ms.get(*k).copied().unwrap_or_default();
            html! { tr data-metric=(k) { (td_name(name)) (dist_cells(&l)) } }
        })
        .collect();
    rows.push(html! {
        tr data-metric="http_req_duration" {
            td class="name" { b { "duration" } }
            (dist_cells(&s.latency_ms))
        }
    });
    let heads = ["phase", "mean ms", "p50 ms", "p95 ms", "p99 ms", "max ms"];
    html! {
        h2 { "Timing phases" }
        div class="two" {
            div { (table("table-phases", &heads, &rows, "")) }
            div {
                (stacked_bar("mean", &s.phases_ms, false))
                (stacked_bar("p95 (each phase's own p95, not additive)", &s.phases_ms, true))
                div class="stack-legend" {
                    @for (_, name, color) in PHASES {
                        span { i style=(format!("background:{color}")) {} (name) }
                    }
                }
                div class="note" {
                    "blocked, connecting and tls come before the request is written; duration is sending + waiting + receiving in the closed model."
                }
            }
        }
    }
}
