//! What the analysis found: scalability, the bottleneck table, the verdict, and the
//! closing lines (the generator's figures, how latency was timed, warnings).

use std::fmt::Write as _;

use pado_base::units::vus as vus_text;

use super::{cell, generator_line, TextOptions};
use crate::summary::{Summary, GENERATOR_SATURATED};

/// The USL fit: predicted peak and what doubling the load would buy.
pub(super) fn scalability(out: &mut String, s: &Summary, _o: TextOptions) {
    if let Some(sat) = &s.saturation {
        if let Some(u) = &sat.usl {
            let _ = writeln!(out);
            let peak = match (u.peak_rps, u.peak_load) {
                (Some(r), Some(n)) => format!("predicted peak {r:.0} req/s at {}", vus_text(n)),
                _ => "no peak predicted within reach of this run's loads".into(),
            };
            let _ = writeln!(
                out,
                "  scalability (USL fit over {} load levels, r² {:.2}): σ {:.4}, κ {:.6}; {}",
                sat.levels, u.r2, u.sigma, u.kappa, peak
            );
            // What more capacity would buy at the knee: double the concurrency, and
            // the ceiling that contention alone sets whatever the concurrency.
            let at = sat
                .throughput_knee_load
                .unwrap_or(sat.highest_load)
                .max(1.0);
            let gain = u.predict(2.0 * at) / u.predict(at).max(1e-9) - 1.0;
            if sat.outcome == pado_analysis::saturation::Outcome::Knee && gain.is_finite() {
                let ceiling = match u.contention_cap_rps {
                    Some(c) => format!("; contention alone caps it at {c:.0} req/s"),
                    None => String::new(),
                };
                let _ = writeln!(
                    out,
                    "  doubling the load from {:.0} to {:.0} VUs would change throughput by {:+.0}%{}",
                    at,
                    2.0 * at,
                    gain * 100.0,
                    ceiling
                );
            }
        }
    }
}

/// The bottleneck table, when the target was observed.
pub(super) fn bottlenecks(out: &mut String, s: &Summary, o: TextOptions) {
    if let Some(b) = &s.bottlenecks {
        bottleneck_table(out, b, o);
    }
}

/// A component's verdict as a five-column mark, the limit in bold red with colour.
fn verdict_mark(v: pado_analysis::attribution::Verdict, o: TextOptions) -> String {
    use pado_analysis::attribution::Verdict;
    match (v, o.color) {
        (Verdict::Yes, true) => "\x1b[1;31mYES\x1b[0m  ".to_string(),
        (v, _) => format!(
            "{:<5}",
            match v {
                Verdict::Yes => "YES",
                Verdict::Consequence => "no*",
                Verdict::BusyThroughout => "busy",
                Verdict::No => "no",
                Verdict::Unknown => "?",
            }
        ),
    }
}

/// Seed 000's elimination table: each observed component's state at saturation,
/// whether it was the bottleneck, and why.
pub(super) fn bottleneck_table(
    out: &mut String,
    b: &pado_analysis::attribution::Attribution,
    o: TextOptions,
) {
    use pado_analysis::attribution::Verdict;
    let _ = writeln!(out);
    let base = match &b.baseline {
        Some(w) => format!(
            "; compared with {} at {:.0}–{:.0} s",
            w.label, w.start_s, w.end_s
        ),
        None => String::new(),
    };
    let _ = writeln!(
        out,
        "  bottlenecks: target metrics at {} ({:.0}–{:.0} s){}",
        b.window.label, b.window.start_s, b.window.end_s, base
    );
    if b.components.is_empty() {
        let _ = writeln!(out, "    no known metric families in the scraped endpoints");
    }
    let cw = b
        .components
        .iter()
        .map(|c| pado_base::text::columns(&c.component) + pado_base::text::columns(&c.endpoint) + 3)
        .max()
        .unwrap_or(10)
        .clamp(10, 44);
    for c in &b.components {
        let name = cell(&format!("{} ({})", c.component, c.endpoint), cw);
        let verdict = verdict_mark(c.verdict, o);
        let _ = writeln!(out, "    {verdict} {name}  {}", c.state);
        let mut why = c.evidence.clone();
        if let Some(bl) = &c.baseline {
            why.push_str(&format!(" · low load: {bl}"));
        }
        let _ = writeln!(out, "    {:5} {:cw$}  └ {why}", "", "");
    }
    if b.components
        .iter()
        .any(|c| c.verdict == Verdict::Consequence)
    {
        let _ = writeln!(
            out,
            "    no* = saturated, but because it waits on the limit above"
        );
    }
    if b.components
        .iter()
        .any(|c| c.verdict == Verdict::BusyThroughout)
    {
        let _ = writeln!(
            out,
            "    busy = busy throughout: as busy at low load, when the service kept up"
        );
    }
    for e in &b.endpoints {
        if e.failed > 0 {
            let kinds: Vec<String> = e.errors.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
            let _ = writeln!(
                out,
                "    scrapes of `{}` failed {} of {} times ({}){}",
                e.name,
                e.failed,
                e.scrapes,
                kinds.join(", "),
                e.first_error
                    .as_deref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default()
            );
        }
    }
}

/// The verdict sentences (the generator's finding is already on top).
pub(super) fn verdict(out: &mut String, s: &Summary, _o: TextOptions) {
    if !s.verdict.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "  verdict");
        // The generator's finding is already on top, loud: said once.
        for v in s
            .verdict
            .iter()
            .filter(|v| !v.starts_with(GENERATOR_SATURATED))
        {
            let _ = writeln!(out, "  · {v}");
        }
    }
}

/// The generator's figures, how latency was timed, and warnings.
pub(super) fn footer(out: &mut String, s: &Summary, _o: TextOptions) {
    let _ = writeln!(out);
    if let Some(g) = &s.generator {
        let _ = writeln!(out, "  {}", generator_line(g));
    }
    let _ = writeln!(out, "  latency: {}", s.latency_origin);
    for w in &s.warnings {
        let _ = writeln!(out, "  warning: {w}");
    }
}
