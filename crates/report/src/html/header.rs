//! The top of the page: `<head>`, the header (name, pass/fail badge, generator
//! banner, scenarios, notes, warnings), the verdict sentences and the key figures.

use maud::{html, Markup, PreEscaped};
use pado_base::units::{bytes, duration, ms, percent2, thousands, vus};

use super::cells::card;
use super::chart_data::round3;
use crate::summary::{LoadedRun, Summary, GENERATOR_SATURATED};

const CSS: &str = include_str!("../../assets/report.css");

/// `<head>`: charset, title and the bundled stylesheet (pado's own text, so
/// pre-escaped on purpose).
pub(super) fn head(run: &LoadedRun, s: &Summary) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            meta name="generator" content=(format!("pado {}", run.meta.pado_version));
            title { "pado report · " (s.name) }
            style { "\n" (PreEscaped(CSS)) }
        }
    }
}

/// The header: what ran, whether it passed, and what to know before reading on.
pub(super) fn header(run: &LoadedRun, s: &Summary) -> Markup {
    // The badge is the run's verdict: FAIL whenever anything judged failed (the
    // requests rule too), "no thresholds" only for a run that passed with nothing
    // but the run itself judged.
    let (badge_class, badge_text) = if !s.passed() {
        ("fail", "FAIL")
    } else if !s.judged.has_criteria() && s.thresholds.is_empty() && s.events.is_empty() {
        ("none", "no thresholds")
    } else if s.passed() {
        ("pass", "PASS")
    } else {
        ("fail", "FAIL")
    };
    html! {
        header id="header" {
            div class="title-row" {
                h1 id="test-name" { (s.name) }
                span id="badge" class=(format!("badge {badge_class}")) data-ok=(s.passed()) { (badge_text) }
                @if s.interrupted {
                    span id="badge-interrupted" class="badge warn" { "INTERRUPTED" }
                }
                @if !s.partial.is_empty() {
                    span id="badge-partial" class="badge fail" { "PARTIAL" }
                }
            }
            @if !s.partial.is_empty() {
                div id="partial-banner" class="banner" role="alert" {
                    b { "PARTIAL RESULT: merged without all of the test's load (--allow-partial)" }
                    @for p in &s.partial { br; (p) }
                }
            }
            @for g in s.generators.iter().filter(|g| g.self_check.as_ref().is_some_and(|c| c.saturated)) {
                div class="banner generator-banner" role="alert" {
                    b { (GENERATOR_SATURATED) } br;
                    "generator " (g.segment) ": " (g.self_check.as_ref().map(|c| c.message.as_str()).unwrap_or(""))
                }
            }
            @if let Some(g) = s.generator.as_ref().filter(|g| g.saturated) {
                div id="generator-banner" class="banner" role="alert" {
                    b { (GENERATOR_SATURATED) } br; (g.message)
                }
            }
            div class="sub" {
                "started " time id="started-at" datetime=(s.started_at) { (s.started_at) }
                " · duration " span id="duration" data-value=(round3(s.duration_s)) { (duration(s.duration_s)) }
                " · peak " (vus(s.vus as f64))
            }
            @if !s.scenarios.is_empty() {
                ul class="plain" id="scenarios" {
                    @for sc in &s.scenarios {
                        li {
                            b { (sc.name) } " " code { (sc.executor) } " " (sc.description) " "
                            span class="note" {
                                "(" (if sc.open_model { "open model" } else { "closed model" }) ")"
                            }
                        }
                    }
                }
            }
            div class="note" id="latency-origin" { "latency: " (s.latency_origin) }
            @for n in &run.meta.notes { div class="note" { (n) } }
            @if !s.warnings.is_empty() {
                ul class="plain warnings" id="warnings" {
                    @for w in &s.warnings { li { "⚠ " (w) } }
                }
            }
        }
    }
}

/// The verdict, as the terminal summary ends: a few sentences (the generator's
/// finding is already the banner above, so it is left out here).
pub(super) fn verdict(s: &Summary) -> Markup {
    let verdict: Vec<&String> = s
        .verdict
        .iter()
        .filter(|v| !v.starts_with(GENERATOR_SATURATED))
        .collect();
    html! {
        @if !verdict.is_empty() {
            section id="verdict" {
                h2 { "Verdict" }
                ul { @for v in verdict { li { (v) } } }
            }
        }
    }
}

/// The figures a reader looks for first.
pub(super) fn key_figures(s: &Summary) -> Markup {
    let dropped = if s.dropped_iterations > 0 {
        format!("{} dropped", thousands(s.dropped_iterations))
    } else {
        String::new()
    };
    html! {
        section class="cards" id="key-figures" {
            (card("requests", &thousands(s.requests), "", false))
            (card("failed", &thousands(s.failed), &percent2(s.failed_rate), s.failed > 0))
            (card("req/s", &format!("{:.1}", s.rps), "", false))
            (card("p50", &ms(s.latency_ms.p50), "ms", false))
            (card("p95", &ms(s.latency_ms.p95), "ms", false))
            (card("p99", &ms(s.latency_ms.p99), "ms", false))
            (card("peak VUs", &s.vus.to_string(), "", false))
            (card("iterations", &thousands(s.iterations), &dropped, s.dropped_iterations > 0))
            (card("data received", &bytes(s.data_received), "", false))
        }
    }
}
