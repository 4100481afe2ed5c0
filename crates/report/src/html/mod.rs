//! The HTML report (`report.html`): one self-contained file that works offline, with
//! charts over time (hand-written SVG drawn by a small inline script from an embedded
//! JSON block), the per-stage, per-step, per-tag, phase, check and threshold tables.
//!
//! The page is built with [`maud`] templates, one small function per section, each a
//! function of the loaded run and its summary. Templates escape every value they
//! interpolate, so names, URLs, tags, messages and bodies that come from users or
//! responses cannot become markup. [`PreEscaped`] is used only for what pado writes
//! itself: the bundled CSS and script, and the chart data as JSON made safe by
//! [`script_json`] (every `<` written `\u003c`, so nothing in it can close the
//! `<script>` element; the page parses it with `JSON.parse`).

mod bottlenecks;
mod cells;
mod chart_data;
mod charts;
mod checks;
mod custom;
mod errors;
mod events;
mod generators;
mod header;
mod llm;
mod phases;
mod run_meta;
mod soak;
mod stages;
mod steps;
#[cfg(test)]
mod tests;

use maud::{html, PreEscaped, DOCTYPE};

pub use crate::stages::{stage_stats, StageStats};
use crate::summary::{LoadedRun, Summary};
pub use chart_data::{lttb, MAX_POINTS};

const JS: &str = include_str!("../../assets/report.js");

/// JSON text made safe to sit inside `<script type="application/json">`: `<`, `>` and
/// `&` only occur inside JSON strings, where `\u003c`-style escapes mean the same, so
/// no `</script>` or `<!--` can appear. Also escapes U+2028/U+2029 for old parsers.
pub fn script_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The whole report page. Reads only the loaded result directory and its summary;
/// each section is its own function, in the order the page shows them.
pub fn render_html(run: &LoadedRun, summary: &Summary) -> String {
    let s = summary;
    let observed = chart_data::observed_charts(run, s.bottlenecks.as_ref(), s.soak.as_ref());
    let observed_titles: Vec<String> = observed.iter().map(|o| o.0.clone()).collect();
    let data = chart_data::chart_data(run, observed);
    let json = script_json(&serde_json::to_string(&data).unwrap_or_else(|_| "null".into()));
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            (header::head(run, s))
            body {
                (header::header(run, s))
                (header::verdict(s))
                (header::key_figures(s))
                (generators::section(s))
                (charts::over_time(&data))
                (charts::target_metrics(&observed_titles))
                (llm::section(s, &data))
                @if let Some(b) = &s.bottlenecks {
                    (bottlenecks::section(b))
                }
                (events::section(s))
                (soak::section(s))
                (stages::section(run))
                (steps::section(s))
                (phases::section(s))
                (errors::section(s))
                (checks::section(s))
                (custom::section(s))
                (run_meta::section(run, s))
                // pado's own serialization, made inert by `script_json`.
                script type="application/json" id="data" { (PreEscaped(&json)) }
                script { "\n" (PreEscaped(JS)) }
            }
        }
    };
    let mut out = page.into_string();
    out.push('\n');
    out
}
