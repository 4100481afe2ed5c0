//! The chart containers: the page's script finds each by id and draws its series
//! from the JSON block ([`super::chart_data`]).

use maud::{html, Markup};

use super::chart_data::ChartData;

/// The load, latency, error and generator charts, in reading order; a chart without
/// data (the generator's, for older result directories) gets no container.
const OVER_TIME: [(&str, &str); 6] = [
    ("vus", "Virtual users (active and allocated)"),
    ("rps", "Requests and failures per second"),
    ("latency", "Latency per second (p50 / p95 / p99, ms)"),
    ("errors", "Errors per second by category"),
    (
        "generator_cpu",
        "Generator CPU (% of allowed cores; busiest worker; run-queue wait)",
    ),
    ("generator_lag", "Generator event-loop lag per second (ms)"),
];

/// One empty chart container with its title and, for latency, the log-scale switch.
pub(super) fn chart(id: &str, title: &str, log: Option<bool>) -> Markup {
    html! {
        div class="chart" id=(format!("chart-{id}")) {
            div class="chart-head" {
                h3 { (title) }
                @if let Some(checked) = log {
                    label {
                        input type="checkbox" class="log-scale" data-chart=(id) checked[checked];
                        " log scale"
                    }
                }
            }
            div class="legend" {}
            div class="chart-body" {}
        }
    }
}

/// "Over time": what pado applied and measured, second by second.
pub(super) fn over_time(data: &ChartData<'_>) -> Markup {
    html! {
        h2 { "Over time" }
        section class="charts" {
            @for (key, title) in OVER_TIME {
                @if let Some(c) = data.charts.get(key) {
                    (chart(key, title, (key == "latency").then_some(c.log)))
                }
            }
        }
    }
}

/// "Target metrics": the target's own signals scraped during the run, when it was
/// observed; `titles` in the order of the `obs-N` charts.
pub(super) fn target_metrics(titles: &[String]) -> Markup {
    html! {
        @if !titles.is_empty() {
            h2 { "Target metrics" }
            p class="note" { "Scraped from the target during the run, on the same time axis as the load." }
            section class="charts" id="target-charts" {
                @for (i, title) in titles.iter().enumerate() {
                    (chart(&format!("obs-{i}"), title, None))
                }
            }
        }
    }
}
