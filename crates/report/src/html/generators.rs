//! A merged result's generators: one row each with its segment and share,
//! throughput, errors, latency, start skew and its own self-check. Absent for a run
//! of one generator.

use maud::{html, Markup};
use pado_base::units::{ms, percent, thousands};

use crate::summary::Summary;

/// The per-generator section.
pub(super) fn section(s: &Summary) -> Markup {
    html! {
        @if !s.generators.is_empty() {
            section id="generators" {
                h2 { "Generators" }
                table {
                    thead { tr {
                        th { "segment" } th { "share" } th { "requests" } th { "req/s" }
                        th { "errors" } th { "p50 ms" } th { "p95 ms" } th { "p99 ms" }
                        th { "start skew ms" } th { "self-check" } th { "source" }
                    } }
                    tbody {
                        @for g in &s.generators {
                            tr class="generator" data-segment=(g.segment) {
                                td { (g.segment) @if g.ended_early { " " span class="badge warn" { "ended early" } } }
                                td data-value=(g.share) { (percent(g.share)) }
                                td data-value=(g.requests) { (thousands(g.requests)) }
                                td data-value=(g.rps) { (format!("{:.1}", g.rps)) }
                                td data-value=(g.failed) { (thousands(g.failed)) }
                                td data-value=(g.latency_ms.p50) { (ms(g.latency_ms.p50)) }
                                td data-value=(g.latency_ms.p95) { (ms(g.latency_ms.p95)) }
                                td data-value=(g.latency_ms.p99) { (ms(g.latency_ms.p99)) }
                                td { (g.start_skew_ms.map_or("-".to_string(), |v| format!("{}", v.round() as i64))) }
                                @match &g.self_check {
                                    Some(c) if c.saturated => td class="bad" title=(c.message) { "SATURATED: " (c.message) },
                                    Some(c) => td title=(c.message) { "ok · cpu " (format!("{:.1}/{}", c.cpu_cores_mean, c.cores_allowed)) " cores" },
                                    None => td { "no figures" },
                                }
                                td { code { (g.source) } }
                            }
                        }
                    }
                }
            }
        }
    }
}
