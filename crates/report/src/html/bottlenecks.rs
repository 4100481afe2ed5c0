//! The bottleneck table: the state of each observed component of the target at the
//! run's highest load, and which one was the limit.

use maud::{html, Markup};
use pado_analysis::attribution::{Attribution, Verdict};

use super::cells::{table, td_name};

/// The `data-verdict` value and the shown word (with its class) of a verdict.
fn verdict_words(v: Verdict) -> (&'static str, &'static str, &'static str) {
    match v {
        Verdict::Yes => ("yes", "bad", "YES"),
        Verdict::Consequence => ("consequence", "", "consequence"),
        Verdict::BusyThroughout => ("busy_throughout", "", "busy throughout"),
        Verdict::No => ("no", "", "no"),
        Verdict::Unknown => ("unknown", "", "?"),
    }
}

/// The section: the window read, the limit found, one row per component and the
/// endpoints whose scrapes failed.
pub(super) fn section(b: &Attribution) -> Markup {
    let rows: Vec<Markup> = b
        .components
        .iter()
        .map(|c| {
            let (attr, cls, text) = verdict_words(c.verdict);
            html! {
                tr data-verdict=(attr) {
                    (td_name(&c.component))
                    td { (c.endpoint) }
                    td { (c.state) }
                    td { (c.baseline.as_deref().unwrap_or("")) }
                    td class=(cls) { (text) }
                    td { (c.evidence) }
                }
            }
        })
        .collect();
    let heads = [
        "component",
        "<endpoint",
        "<state",
        "<low load",
        "<bottleneck?",
        "<evidence",
    ];
    let failing: Vec<_> = b.endpoints.iter().filter(|e| e.failed > 0).collect();
    html! {
        h2 { "Bottlenecks" }
        p class="note" {
            (format!("State of each observed component at {} ({:.0}–{:.0} s)", b.window.label, b.window.start_s, b.window.end_s))
            @if let Some(bl) = &b.baseline {
                (format!(", compared with {} ({:.0}–{:.0} s)", bl.label, bl.start_s, bl.end_s))
            }
            ". " i { "consequence" } ": saturated because it waits on the limit; "
            i { "busy throughout" } ": as busy at low load, when the service kept up, so not what changed."
        }
        @if let Some(l) = &b.limit {
            p id="bottleneck-limit" { b { "Limit:" } " " (l) }
        }
        (table("table-bottlenecks", &heads, &rows, "no known metric families in the scraped endpoints"))
        @if !failing.is_empty() {
            ul class="plain warnings" id="scrape-failures" {
                @for e in failing {
                    li {
                        "⚠ scrapes of " code { (e.name) }
                        (format!(" ({}) failed {} of {} times: ", e.url, e.failed, e.scrapes))
                        (e.errors.iter().map(|(k, n)| format!("{k} ×{n}")).collect::<Vec<_>>().join(", "))
                    }
                }
            }
        }
    }
}
