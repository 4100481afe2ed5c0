//! A merged result's generators: one line each with its share, throughput, errors,
//! latency, start skew and its own self-check. Nothing for a run of one generator.

use std::fmt::Write as _;

use pado_base::units::{ms, percent, rate, thousands};

use super::TextOptions;
use crate::summary::Summary;

/// The per-generator block.
pub(super) fn generators(out: &mut String, s: &Summary, o: TextOptions) {
    if s.generators.is_empty() {
        return;
    }
    let _ = writeln!(out, "  generators ({} merged)", s.generators.len());
    let _ = writeln!(
        out,
        "  {:<8} {:>6} {:>10} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8}  self-check",
        "segment", "share", "requests", "req/s", "errors", "p50", "p95", "p99", "skew ms"
    );
    for g in &s.generators {
        let check = match &g.self_check {
            Some(c) if c.saturated => {
                if o.color {
                    "\x1b[1;31mSATURATED\x1b[0m".to_string()
                } else {
                    "SATURATED".to_string()
                }
            }
            Some(c) => format!("ok (cpu {:.1}/{} cores)", c.cpu_cores_mean, c.cores_allowed),
            None => "no figures".to_string(),
        };
        let _ = writeln!(
            out,
            "  {:<8} {:>6} {:>10} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8}  {check}{}",
            g.segment,
            percent(g.share),
            thousands(g.requests),
            rate(g.rps),
            thousands(g.failed),
            ms(g.latency_ms.p50),
            ms(g.latency_ms.p95),
            ms(g.latency_ms.p99),
            g.start_skew_ms
                .map_or("-".to_string(), |v| format!("{}", v.round() as i64)),
            if g.ended_early { " · ended early" } else { "" }
        );
    }
    // The totals above end with a blank line; so does this block.
    let _ = writeln!(out);
}
