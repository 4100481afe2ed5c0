//! gRPC calls per `grpc:` step, in k6's words: calls (`grpc_req_duration`'s count and
//! percentiles), the accepted status codes by name, and server streams with their
//! messages (`grpc_streams`, `grpc_streams_msgs_received`).

use std::fmt::Write as _;

use pado_base::units::{ms, thousands};

use super::{cell, TextOptions};
use crate::summary::Summary;

/// One line per `grpc:` step; nothing when the run has none.
pub(super) fn grpc(out: &mut String, s: &Summary, _o: TextOptions) {
    let steps: Vec<_> = s
        .steps
        .iter()
        .filter_map(|(n, st)| st.grpc.as_ref().map(|g| (n, st, g)))
        .collect();
    if steps.is_empty() {
        return;
    }
    let nw = steps
        .iter()
        .map(|(n, _, _)| pado_base::text::columns(n))
        .max()
        .unwrap_or(4)
        .clamp(4, 40);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  {} {:>8} {:>7} {:>8} {:>8} {:>8} {:>9}  status",
        cell("grpc", nw),
        "calls",
        "failed",
        "p50",
        "p95",
        "streams",
        "msgs"
    );
    for (name, st, g) in steps {
        let status: Vec<String> = g
            .status
            .iter()
            .map(|(code, n)| {
                let label = code
                    .parse::<u16>()
                    .ok()
                    .and_then(pado_analysis::grpc_codes::name)
                    .unwrap_or(code);
                format!("{label} {}", thousands(*n))
            })
            .collect();
        let _ = writeln!(
            out,
            "  {} {:>8} {:>7} {:>8} {:>8} {:>8} {:>9}  {}",
            cell(name, nw),
            thousands(st.requests),
            thousands(st.failed),
            ms(st.latency_ms.p50),
            ms(st.latency_ms.p95),
            thousands(g.streams),
            thousands(g.stream_msgs),
            status.join(", ")
        );
    }
}
