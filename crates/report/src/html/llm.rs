//! "LLM streams": for a run with `sse:` steps, what users of a streaming endpoint
//! feel, per step and for all steps together: time to first token, the gaps
//! between tokens, the time per output token, tokens per second and the counts
//! (the prompts' input tokens beside the output tokens, when pado sized them),
//! then the same per second on the run's time axis (with its stages), beside the
//! latency the other charts draw.

use maud::{html, Markup};

use super::cells::{table, td_int, td_ms, td_name, td_rate};
use super::chart_data::ChartData;
use super::charts::chart;
use crate::summary::{SseSummary, Summary};

/// The table's columns; each row is one step's figures in this order (the last
/// row, `all steps`, is the run's), so a reader (or a test) finds a figure by its
/// heading.
pub(super) const LLM_HEADS: [&str; 17] = [
    "step",
    "streams",
    "events",
    "requests",
    "output tokens",
    "input tokens p50",
    "input tokens max",
    "tokens/s (run)",
    "ttft p50 ms",
    "ttft p95 ms",
    "ttft p99 ms",
    "itl p50 ms",
    "itl p95 ms",
    "itl p99 ms",
    "tpot p50 ms",
    "tpot p95 ms",
    "tokens/s per request p50",
];

/// The per-second charts of the section, by the id their data carries.
pub(super) const LLM_CHARTS: [(&str, &str); 3] = [
    ("llm_ttft", "Time to first token per second (p50 / p95, ms)"),
    ("llm_itl", "Inter-token latency per second (p50 / p99, ms)"),
    ("llm_tokens", "Output tokens per second (all streams)"),
];

/// One row: a step's (or all steps') streams and their LLM figures; a step whose
/// streams were not an LLM's answer shows its counts and empty LLM cells.
fn row(name: &str, e: &SseSummary) -> Markup {
    html! {
        tr {
            (td_name(name))
            (td_int(e.streams))
            (td_int(e.events))
            @if let Some(l) = &e.llm {
                (td_int(l.requests))
                (td_int(l.output_tokens))
                // The prompts' lengths, when pado sized them (`sse.prompt`).
                @match &l.input_tokens_per_request {
                    Some(i) => { (td_rate(i.p50)) (td_rate(i.max)) }
                    None => { td class="num" {} td class="num" {} }
                }
                (td_rate(l.output_tokens_per_s))
                (td_ms(l.ttft_ms.p50))
                (td_ms(l.ttft_ms.p95))
                (td_ms(l.ttft_ms.p99))
                (td_ms(l.itl_ms.p50))
                (td_ms(l.itl_ms.p95))
                (td_ms(l.itl_ms.p99))
                (td_ms(l.tpot_ms.p50))
                (td_ms(l.tpot_ms.p95))
                (td_rate(l.tokens_per_s_per_request.p50))
            } @else {
                @for _ in 3..LLM_HEADS.len() { td class="num" {} }
            }
        }
    }
}

/// The section; nothing for a run without `sse:` steps.
pub(super) fn section(s: &Summary, data: &ChartData<'_>) -> Markup {
    let Some(all) = &s.sse else {
        return html! {};
    };
    let mut rows: Vec<Markup> = s
        .steps
        .iter()
        .filter_map(|(n, st)| st.sse.as_ref().map(|e| row(n, e)))
        .collect();
    rows.push(row("all steps", all));
    html! {
        h2 { "LLM streams" }
        p class="note" {
            "Server-Sent Events steps: time to first token (ttft), every gap between two tokens (itl), "
            "time per output token after the first (tpot), output tokens per second and, "
            "when pado sized the prompts (" code { "sse.prompt" } "), their input tokens, as "
            code { "docs/llm.md" } " defines them."
        }
        (table("llm", &LLM_HEADS, &rows, "no event streams"))
        section class="charts" {
            @for (key, title) in LLM_CHARTS {
                @if let Some(c) = data.charts.get(key) {
                    (chart(key, title, (key != "llm_tokens").then_some(c.log)))
                }
            }
        }
    }
}
