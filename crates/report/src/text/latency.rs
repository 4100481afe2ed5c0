//! The latency table: the request duration, its phases, and iteration durations
//! per flow.

use std::fmt::Write as _;

use super::{fit, lat_row, TextOptions};
use crate::summary::Summary;

/// Latency percentiles of requests, their phases and iterations.
/// A WebSocket-only run has no request latency to show: only its iterations (its
/// sessions' latencies are in the WebSocket block).
pub(super) fn latency(out: &mut String, s: &Summary, _o: TextOptions) {
    let lw = 24;
    let ws_only = s.websocket_only();
    if ws_only && s.iterations == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "  {:<lw$} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "latency (ms)", "min", "mean", "p50", "p90", "p95", "p99", "p99.9", "max"
    );
    if !ws_only {
        http_rows(out, s, lw);
    }
    if s.iterations > 0 {
        lat_row(out, "iteration_duration", &s.iteration_duration_ms, lw);
        for (name, f) in &s.flows {
            lat_row(
                out,
                &format!("  {}", fit(name, lw - 2)),
                &f.iteration_duration_ms,
                lw,
            );
        }
    }
}

/// `http_req_duration` and the phases that took any time.
fn http_rows(out: &mut String, s: &Summary, lw: usize) {
    lat_row(out, "http_req_duration", &s.latency_ms, lw);
    for (name, label) in [
        ("http_req_blocked", "  blocked"),
        ("http_req_dns", "  dns"),
        ("http_req_connecting", "  connecting"),
        ("http_req_tls_handshaking", "  tls_handshaking"),
        ("http_req_sending", "  sending"),
        ("http_req_waiting", "  waiting (ttfb)"),
        ("http_req_receiving", "  receiving"),
    ] {
        if let Some(l) = s.phases_ms.get(name) {
            if l.max > 0.0 || name == "http_req_waiting" {
                lat_row(out, label, l, lw);
            }
        }
    }
}
