//! Responses and errors: status codes, error categories and samples of failed
//! requests (the "why" behind the counts).

use maud::{html, Markup};
use pado_base::units::pct;

use super::cells::{table, td_int, td_name, td_pct};
use crate::summary::Summary;

/// Responses per status code, 4xx and 5xx marked.
fn status_table(s: &Summary) -> Markup {
    let total: u64 = s.status.values().sum();
    let rows: Vec<Markup> = s
        .status
        .iter()
        .map(|(code, n)| {
            let bad = code.parse::<u16>().map(|c| c >= 400).unwrap_or(false);
            html! { tr { (td_name(code)) (td_int(*n)) (td_pct(pct(*n, total), bad)) } }
        })
        .collect();
    table(
        "table-status",
        &["status", "responses", "share"],
        &rows,
        "no responses",
    )
}

/// Requests per error category, as a share of all requests.
fn error_table(s: &Summary) -> Markup {
    let rows: Vec<Markup> = s
        .errors
        .iter()
        .map(
            |(k, n)| html! { tr { (td_name(k)) (td_int(*n)) (td_pct(pct(*n, s.requests), true)) } },
        )
        .collect();
    table(
        "table-errors",
        &["error", "requests", "of all requests"],
        &rows,
        "no errors",
    )
}

/// Samples of failed requests. URLs, bodies and check values come from the target:
/// the template escapes every one of them.
fn failure_table(s: &Summary) -> Markup {
    let rows: Vec<Markup> = s
        .failures
        .iter()
        .map(|f| {
            let check = match (&f.check, &f.actual, &f.reason) {
                (Some(c), Some(a), _) => format!("{c}: {a}"),
                (_, _, Some(r)) => r.clone(),
                _ => String::new(),
            };
            html! {
                tr class="bad" {
                    (td_name(&f.category))
                    (td_name(&f.step))
                    (td_name(&format!("{} {}", f.method, f.url)))
                    (td_int(u64::from(f.status)))
                    (td_name(&check))
                    (td_name(&f.body))
                    (td_int(u64::from(f.second)))
                }
            }
        })
        .collect();
    let heads = [
        "error",
        "<step",
        "<request",
        "status",
        "<check: saw",
        "<body (first bytes)",
        "second",
    ];
    html! {
        @if !s.failures.is_empty() {
            h3 { "Why requests failed" }
            p class="note" {
                "A few failed requests per step and error category (all in failures.jsonl): the first bytes of the body, or the failing check and what it saw."
            }
            (table("table-failures", &heads, &rows, "no samples"))
        }
    }
}

/// The "Responses and errors" section.
pub(super) fn section(s: &Summary) -> Markup {
    html! {
        h2 { "Responses and errors" }
        div class="two" {
            div { (status_table(s)) }
            div { (error_table(s)) }
        }
        (failure_table(s))
    }
}
