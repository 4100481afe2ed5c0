//! Per step, per tagged series and per flow: where the requests went and how long
//! they took; `ws:` steps' sessions and messages.

use maud::{html, Markup};
use pado_base::units::pct;

use super::cells::{table, td_int, td_ms, td_name, td_pct, td_rate};
use crate::summary::{FlowSummary, StepSummary, Summary, WsSummary};

const STEP_HEADS: [&str; 10] = [
    "step", "requests", "failed", "error %", "req/s", "mean ms", "p50 ms", "p95 ms", "p99 ms",
    "max ms",
];

const FLOW_HEADS: [&str; 7] = [
    "flow",
    "iterations",
    "mean ms",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "max ms",
];

/// One step (or tagged series).
fn step_row(name: &str, s: &StepSummary) -> Markup {
    let l = &s.latency_ms;
    html! {
        tr {
            (td_name(name))
            (td_int(s.requests))
            (td_int(s.failed))
            (td_pct(pct(s.failed, s.requests), s.failed > 0))
            (td_rate(s.rps))
            (td_ms(l.mean))
            (td_ms(l.p50))
            (td_ms(l.p95))
            (td_ms(l.p99))
            (td_ms(l.max))
        }
    }
}

const WS_HEADS: [&str; 10] = [
    "step",
    "sessions",
    "failed",
    "msgs sent",
    "msgs received",
    "received/s",
    "connecting p95 ms",
    "msg latency p50 ms",
    "msg latency p95 ms",
    "failures",
];

/// One `ws:` step: sessions, messages both ways, handshake and message latency.
fn ws_row(name: &str, w: &WsSummary) -> Markup {
    let failures: Vec<String> = w.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
    html! {
        tr {
            (td_name(name))
            (td_int(w.sessions))
            (td_int(w.failed))
            (td_int(w.msgs_sent))
            (td_int(w.msgs_received))
            (td_rate(w.msgs_received_per_s))
            (td_ms(w.connecting_ms.p95))
            (td_ms(w.msg_latency_ms.p50))
            (td_ms(w.msg_latency_ms.p95))
            td { (failures.join(", ")) }
        }
    }
}

/// One flow: iterations and their duration.
fn flow_row(name: &str, f: &FlowSummary) -> Markup {
    let l = &f.iteration_duration_ms;
    html! {
        tr {
            (td_name(name))
            (td_int(f.iterations))
            (td_ms(l.mean))
            (td_ms(l.p50))
            (td_ms(l.p95))
            (td_ms(l.p99))
            (td_ms(l.max))
        }
    }
}

/// The "Steps" section, with "By tag" and "Flows" when the run has them.
pub(super) fn section(s: &Summary) -> Markup {
    let steps: Vec<Markup> = s.steps.iter().map(|(n, st)| step_row(n, st)).collect();
    let tagged: Vec<Markup> = s.tagged.iter().map(|(n, st)| step_row(n, st)).collect();
    let flows: Vec<Markup> = s.flows.iter().map(|(n, f)| flow_row(n, f)).collect();
    let ws: Vec<Markup> = s
        .steps
        .iter()
        .filter_map(|(n, st)| st.ws.as_ref().map(|w| ws_row(n, w)))
        .collect();
    let mut tag_heads = STEP_HEADS;
    tag_heads[0] = "step{tags}";
    html! {
        h2 { "Steps" }
        (table("table-steps", &STEP_HEADS, &steps, "no requests"))
        @if !ws.is_empty() {
            h3 { "WebSocket" }
            (table("table-websocket", &WS_HEADS, &ws, "no WebSocket sessions"))
        }
        @if !tagged.is_empty() {
            h3 { "By tag" }
            (table("table-tags", &tag_heads, &tagged, "no tagged requests"))
        }
        @if !flows.is_empty() {
            h3 { "Flows" }
            (table("table-flows", &FLOW_HEADS, &flows, "no flows"))
        }
    }
}
