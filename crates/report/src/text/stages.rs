//! Time-wise: the stage table, and how steady throughput and latency were from
//! second to second (stability, drift under steady load).

use std::fmt::Write as _;

use pado_base::units::{ms, rate, thousands};

use super::{cell, TextOptions};
use crate::summary::Summary;

/// One line per stage: window, requests, rate, latency, errors.
pub(super) fn stages(out: &mut String, s: &Summary, _o: TextOptions) {
    // Every column is a request figure: a WebSocket-only run's would all be 0.
    if !s.stages.is_empty() && !s.websocket_only() {
        let _ = writeln!(out);
        let sw = s
            .stages
            .iter()
            .map(|x| pado_base::text::columns(&x.label))
            .max()
            .unwrap_or(5)
            .clamp(5, 32);
        let _ = writeln!(
            out,
            "  {:<sw$} {:>13} {:>10} {:>9} {:>8} {:>8} {:>8} {:>8}",
            "stage", "window", "requests", "req/s", "mean", "p95", "p99", "errors"
        );
        for st in &s.stages {
            let _ = writeln!(
                out,
                "  {} {:>13} {:>10} {:>9} {:>8} {:>8} {:>8} {:>7.2}%",
                cell(&st.label, sw),
                format!("{:.0}s–{:.0}s", st.start_s, st.end_s),
                thousands(st.requests),
                rate(st.rps),
                ms(st.latency_ms.mean),
                ms(st.latency_ms.p95),
                ms(st.latency_ms.p99),
                st.error_rate * 100.0,
            );
        }
    }
}

/// Stability percentiles of req/s, TTFB steadiness and latency drift.
pub(super) fn stability(out: &mut String, s: &Summary, _o: TextOptions) {
    if s.stability.seconds >= 2 && !s.websocket_only() {
        let st = &s.stability;
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "  stability over {} s: req/s reached in 50% of seconds {}, 95% {}, 99% {}, 99.9% {}",
            st.seconds,
            rate(st.rps_p50),
            rate(st.rps_p95),
            rate(st.rps_p99),
            rate(st.rps_p99_9)
        );
        let _ = writeln!(
            out,
            "  ttfb per second: mean absolute change {} ms, coefficient of variation {:.3}",
            ms(st.ttfb_mean_abs_change_ms),
            st.ttfb_cv
        );
    }
    // A soak block shows latency drift beside the resources'. Only significant
    // slopes are printed: the others are chance at this length (they stay in
    // summary.json with the method).
    if s.soak.is_none() {
        let significant = s.drift_periods.iter().filter(|d| d.drift.significant());
        let mut first = true;
        for d in significant {
            if std::mem::take(&mut first) {
                let _ = writeln!(out);
            }
            let _ = writeln!(
                out,
                "  latency drift under steady load ({}, {:.0}–{:.0} s): {:+.0} ms/hour ({:+.1}% over the period, p = {:.3}){}",
                d.period.label,
                d.period.start_s,
                d.period.end_s,
                d.drift.slope_per_hour,
                d.drift.relative_change * 100.0,
                d.drift.p_value,
                if d.drift.notable { " — notable" } else { "" }
            );
        }
    }
}
