//! The soak section: the verdict, then every resource measured under steady load
//! (and latency per steady period) with where it went.

use maud::{html, Markup};
use pado_results::SoakMode;

use super::cells::table;
use crate::summary::Summary;
use crate::text::soak::{generator_line, level, per_hour, state};

/// The "Soak" section (nothing when the summary has no soak analysis).
pub(super) fn section(s: &Summary) -> Markup {
    let Some(k) = &s.soak else {
        return html! {};
    };
    let rows: Vec<Markup> = k
        .resources
        .iter()
        .map(|r| {
            html! {
                tr data-notable=(r.notable) {
                    td { (r.resource.words()) }
                    td { (r.series) " @" (r.endpoint) }
                    td { (r.period.label) }
                    td class="num" { (level(r, r.from)) }
                    td class="num" { (level(r, r.to)) }
                    td class="num" data-value=(r.slope_per_hour) { (per_hour(r)) }
                    td class="num" { (format!("{:.3}", r.p_value)) }
                    td { (state(r)) }
                }
            }
        })
        .chain(k.latency.iter().map(|d| {
            html! {
                tr data-notable=(d.drift.notable) {
                    td { "latency" }
                    td { "mean of every request" }
                    td { (d.period.label) }
                    td class="num" { "-" }
                    td class="num" { "-" }
                    td class="num" data-value=(d.drift.slope_per_hour) {
                        (format!("{:+.0} ms/hour ({:+.0}% over the period)", d.drift.slope_per_hour, d.drift.relative_change * 100.0))
                    }
                    td class="num" { (format!("{:.3}", d.drift.p_value)) }
                    td { (if d.drift.notable { "rising" } else { "steady" }) }
                }
            }
        }))
        .collect();
    let heads = [
        "resource",
        "<series",
        "<steady period",
        "from",
        "to",
        "per hour",
        "p",
        "<state",
    ];
    let judged = s.soak_mode == Some(SoakMode::Requested);
    html! {
        h2 { "Soak" }
        p id="soak-verdict" class=(if !judged { "note" } else if s.soak_ok { "pass" } else { "fail" }) {
            "Verdict: " strong { (k.verdict.words()) } " over "
            (pado_base::units::duration(k.steady_s)) " of steady load"
            (match s.soak_mode {
                Some(SoakMode::Requested) => " (--soak: part of the exit code).",
                Some(SoakMode::Long) => " (a run of an hour or more: shown, not judged; --soak judges it).",
                None => ".",
            })
        }
        @if !k.observed {
            p class="note" { "The target's memory, descriptors and pools were not observed: add its metrics endpoint with observe: to tell a leak from a slow dependency." }
        }
        (table("table-soak", &heads, &rows, "no resource series observed"))
        @if let Some(g) = &k.generator {
            p id="soak-generator" class=(if g.notable { "warn" } else { "note" }) { (generator_line(g)) }
        }
        p class="note" { (pado_analysis::soak::METHOD) }
    }
}
