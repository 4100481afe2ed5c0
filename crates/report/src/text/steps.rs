//! The per-step table, with each step's tagged series under it.

use std::fmt::Write as _;

use pado_base::units::{ms, rate, thousands};
use pado_metrics::LatencySummary;

use super::{cell, TextOptions};
use crate::summary::Summary;

/// One line per step and per tagged series of it.
///
/// A `ws:` step that sent no HTTP request is left to the WebSocket block: its row
/// here would be all zeroes.
pub(super) fn steps(out: &mut String, s: &Summary, _o: TextOptions) {
    let shown = |st: &crate::summary::StepSummary| st.ws.is_none() || st.requests > 0;
    if s.steps.values().any(shown) {
        let _ = writeln!(out);
        let tag_width = s.tagged.keys().map(|k| {
            let base = k.find('{').unwrap_or(0);
            pado_base::text::columns(&k[base..]) + 2
        });
        let nw = s
            .steps
            .keys()
            .map(|k| pado_base::text::columns(k))
            .chain(tag_width)
            .max()
            .unwrap_or(4)
            .clamp(4, 48);
        let _ = writeln!(
            out,
            "  {:<nw$} {:>10} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8}",
            "step", "requests", "failed", "req/s", "mean", "p95", "p99", "max"
        );
        // A step's row and each of its tag values' rows, alike.
        let row = |out: &mut String, label: &str, requests, failed, rps, l: &LatencySummary| {
            let _ = writeln!(
                out,
                "  {} {:>10} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8}",
                cell(label, nw),
                thousands(requests),
                thousands(failed),
                rate(rps),
                ms(l.mean),
                ms(l.p95),
                ms(l.p99),
                ms(l.max),
            );
        };
        for (name, st) in s.steps.iter().filter(|(_, st)| shown(st)) {
            row(out, name, st.requests, st.failed, st.rps, &st.latency_ms);
            for (tname, t) in s.tagged.range(format!("{name}{{")..) {
                if !tname.starts_with(&format!("{name}{{")) {
                    break;
                }
                let label = format!("  {}", &tname[name.len()..]);
                row(out, &label, t.requests, t.failed, t.rps, &t.latency_ms);
            }
        }
    }
}
