//! WebSocket sessions per `ws:` step, in k6's words: sessions, messages both ways,
//! `ws_connecting`, `ws_msg_latency`, and failed sessions by category.

use std::fmt::Write as _;

use pado_base::units::{ms, rate, thousands};

use super::{cell, TextOptions};
use crate::summary::Summary;

/// One line per `ws:` step, then the failure categories; nothing without any.
pub(super) fn websocket(out: &mut String, s: &Summary, _o: TextOptions) {
    let Some(all) = &s.websocket else {
        return;
    };
    let ws_steps: Vec<_> = s
        .steps
        .iter()
        .filter_map(|(n, st)| st.ws.as_ref().map(|w| (n, w)))
        .collect();
    let nw = ws_steps
        .iter()
        .map(|(n, _)| pado_base::text::columns(n))
        .max()
        .unwrap_or(4)
        .clamp(9, 40);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  {:<nw$} {:>8} {:>7} {:>9} {:>9} {:>8} {:>10} {:>10} {:>10}",
        "websocket",
        "sessions",
        "failed",
        "msgs sent",
        "received",
        "recv/s",
        "connect95",
        "latency50",
        "latency95"
    );
    for (name, w) in &ws_steps {
        let lat = |v: f64| {
            if w.msg_latency_count == 0 {
                "-".to_string()
            } else {
                ms(v)
            }
        };
        let _ = writeln!(
            out,
            "  {} {:>8} {:>7} {:>9} {:>9} {:>8} {:>10} {:>10} {:>10}",
            cell(name, nw),
            thousands(w.sessions),
            thousands(w.failed),
            thousands(w.msgs_sent),
            thousands(w.msgs_received),
            rate(w.msgs_received_per_s),
            ms(w.connecting_ms.p95),
            lat(w.msg_latency_ms.p50),
            lat(w.msg_latency_ms.p95),
        );
    }
    if !all.errors.is_empty() {
        let e: Vec<String> = all
            .errors
            .iter()
            .map(|(k, n)| format!("{k} {}", thousands(*n)))
            .collect();
        let _ = writeln!(out, "  failed sessions: {}", e.join(", "));
    }
}
