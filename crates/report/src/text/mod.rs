//! The terminal summary: what a k6 user expects to read at the end of a run, with
//! pado's per-step table and an explicit note on how latency was timed.
//!
//! Small reporters, each a function of the [`Summary`] writing its own block of
//! lines, composed in reading order by [`render`]: the run's totals ([`totals`]),
//! a merged result's generators ([`generators`]),
//! latency and its phases ([`latency`]), stages and steadiness over time
//! ([`stages`]), the per-step table ([`steps`]), WebSocket sessions ([`websocket`]), LLM streams ([`llm`]), gRPC calls ([`grpc`]), checks, failures and thresholds
//! ([`outcomes`]), the events' impact and expectations ([`events`]), the soak verdict ([`soak`]), and what the analysis found ([`findings`]).

mod custom;

pub(crate) use custom::line as custom_line;
mod events;
mod findings;
mod generators;
mod grpc;
mod latency;
mod llm;
mod outcomes;
pub(crate) mod soak;
mod stages;
mod steps;
#[cfg(test)]
mod tests;
mod totals;
mod websocket;

use std::fmt::Write as _;

use pado_analysis::self_check::{cores_used, lag_ms, of_cores, GeneratorCheck};
use pado_base::units::{ms, percent};
use pado_metrics::LatencySummary;

use crate::summary::Summary;

/// Render options.
#[derive(Clone, Copy, Debug, Default)]
pub struct TextOptions {
    /// ANSI colours for pass/fail marks.
    pub color: bool,
}

/// One block of the summary: appends its lines (each block starts with its own
/// blank line when it has something to say).
type Section = fn(&mut String, &Summary, TextOptions);

/// The blocks in reading order.
const SECTIONS: [Section; 20] = [
    totals::title,
    totals::totals,
    generators::generators,
    latency::latency,
    stages::stages,
    stages::stability,
    steps::steps,
    websocket::websocket,
    llm::llm,
    grpc::grpc,
    outcomes::checks,
    custom::custom,
    outcomes::why_failed,
    outcomes::thresholds,
    events::events,
    soak::soak,
    findings::scalability,
    findings::bottlenecks,
    findings::verdict,
    findings::footer,
];

/// Render the summary.
pub fn render(s: &Summary, o: TextOptions) -> String {
    defang(&render_raw(s, o), o.color)
}

/// pado's own colour sequences: the only escapes the summary may print.
const OWN_ESCAPES: [&str; 4] = ["\x1b[32m", "\x1b[31m", "\x1b[1;31m", "\x1b[0m"];

/// Control characters in the rendered text shown as `\x..` instead of sent to the
/// terminal: step names, tag values, scraped labels and server text come from
/// outside, and an escape sequence in them could rewrite the screen or the window
/// title. Newlines (the summary's own layout) and, with colour, pado's own colour
/// sequences stay.
fn defang(text: &str, color: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if color && c == '\x1b' {
            if let Some(own) = OWN_ESCAPES.iter().find(|e| rest.starts_with(**e)) {
                out.push_str(own);
                rest = &rest[own.len()..];
                continue;
            }
        }
        if c.is_control() && c != '\n' {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

fn render_raw(s: &Summary, o: TextOptions) -> String {
    let mut out = String::new();
    for section in SECTIONS {
        section(&mut out, s, o);
    }
    out
}

/// A pass or fail mark, green or red with colour.
pub(super) fn mark(ok: bool, o: TextOptions) -> &'static str {
    match (ok, o.color) {
        (true, true) => "\x1b[32m✓\x1b[0m",
        (false, true) => "\x1b[31m✗\x1b[0m",
        (true, false) => "✓",
        (false, false) => "✗",
    }
}

/// `label ........` padded to `width` characters.
pub(super) fn dots(label: &str, width: usize) -> String {
    let n = width.saturating_sub(pado_base::text::columns(label) + 1);
    format!("{label} {}", ".".repeat(n))
}

/// One row of the latency table.
pub(super) fn lat_row(out: &mut String, label: &str, l: &LatencySummary, w: usize) {
    let _ = writeln!(
        out,
        "  {} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        cell(label, w),
        ms(l.min),
        ms(l.mean),
        ms(l.p50),
        ms(l.p90),
        ms(l.p95),
        ms(l.p99),
        ms(l.p99_9),
        ms(l.max),
    );
}

/// Truncate to `max` terminal columns with an ellipsis (names can be long URLs).
pub(super) fn fit(s: &str, max: usize) -> String {
    if pado_base::text::columns(s) <= max {
        s.to_string()
    } else {
        pado_base::text::cell(s, max).trim_end().to_string()
    }
}

/// A name as one table cell of `cols` terminal columns: cut and padded by display
/// width, so Hangul step names keep the columns after them aligned.
pub(super) fn cell(s: &str, cols: usize) -> String {
    pado_base::text::cell(s, cols)
}

/// The generator's figures in one line: CPU in cores of the allowed ones, the busiest
/// worker, run-queue wait and event-loop lag; what shows a run had headroom. Ends
/// with the state: `SATURATED` (its CPU busy), `STARVED` (it could not deliver the
/// load for CPU it did not get, so a line reading 0.01 cores is not called
/// saturated) or `delayed` with the scheduling delay the timings may carry.
pub fn generator_line(g: &GeneratorCheck) -> String {
    let wait = match g.run_queue_wait_share {
        Some(w) => format!(", run-queue wait {}", percent(w)),
        None => String::new(),
    };
    format!(
        "generator: cpu {} (peak {}, busiest worker {}){wait}, lag p99 {} ms (max {} ms){}",
        of_cores(g.cpu_cores_mean, g.cores_allowed),
        cores_used(g.cpu_cores_peak),
        percent(g.busiest_worker_peak.min(1.0)),
        ms(g.lag_p99_ms),
        ms(g.lag_max_ms),
        match g.state_word() {
            "" => String::new(),
            "delayed" => format!(
                " — delayed (timings may carry up to {} of scheduling delay)",
                lag_ms(g.scheduling_delay_ms)
            ),
            w => format!(" — {}", w.to_uppercase()),
        }
    )
}
