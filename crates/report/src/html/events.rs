//! The events section: each event's impact (before / during / after its window,
//! time to first error and to recovery) and its expectations with their marks.

use maud::{html, Markup};
use pado_analysis::events::{EventImpact, WindowFigures};
use pado_base::units::{duration, percent, plain, rate};

use super::cells::table;
use crate::summary::Summary;

fn window(w: Option<&WindowFigures>) -> Markup {
    match w.filter(|w| w.requests > 0) {
        None => html! { td class="num" { "-" } },
        Some(w) => html! {
            td class="num" data-value=(w.error_rate) {
                (percent(w.error_rate)) " err · p95 "
                (w.p95_ms.map_or("-".into(), pado_base::units::ms)) " ms · "
                (rate(w.rps)) "/s"
            }
        },
    }
}

fn secs(v: Option<f64>) -> Markup {
    html! {
        td class="num" { (v.map_or("-".into(), |s| format!("{} s", plain((s * 10.0).round() / 10.0)))) }
    }
}

fn row(e: &EventImpact) -> Markup {
    let when = match e.end_s {
        Some(end) => format!("{}–{}", duration(e.start_s), duration(end)),
        None => duration(e.start_s),
    };
    html! {
        tr data-event=(e.name) data-ok=(e.ok()) {
            td { (e.name) }
            td class="num" { (when) }
            td { (e.outcome) }
            (window(Some(&e.before)))
            (window(e.during.as_ref()))
            (window(Some(&e.after)))
            (secs(e.time_to_first_error_s))
            (secs(e.time_to_recovery_s))
            td class="num" { (e.failed_requests) }
        }
    }
}

/// The "Events" section (nothing when the run had no events).
pub(super) fn section(s: &Summary) -> Markup {
    if s.events.is_empty() {
        return html! {};
    }
    let rows: Vec<Markup> = s.events.iter().map(row).collect();
    let heads = [
        "event",
        "when",
        "outcome",
        "before",
        "during",
        "after",
        "first error",
        "recovery",
        "failed",
    ];
    html! {
        h2 { "Events" }
        p class="note" { "Fault windows are shaded on the time charts above. Before and after: as long as the window, at least 10 s." }
        @if s.events.iter().any(|e| e.kind == "control") {
            p class="note" id="control-note" { "Rows with outcome control are changes of the load made while the run went (from the dashboard, its JSON API or a library caller): drawn as dashed blue lines on the charts, a ramp or a hold as a blue band. The analyses take each for the start of a new load level, as they take a planned stage." }
        }
        (table("table-events", &heads, &rows, "no events"))
        ul id="event-expectations" {
            @for e in &s.events {
                @if let Some(err) = &e.error {
                    li class=(if e.required { "fail" } else { "warn" }) { (e.name) ": " (err) }
                }
                @for x in &e.expectations {
                    li class=(if x.ok { "pass" } else { "fail" }) {
                        (if x.ok { "✓ " } else { "✗ " }) (e.name) " · " (x.kind) ": " (x.expr) " — " (x.detail)
                    }
                }
            }
        }
    }
}
