//! The soak block: the verdict, whether it decides the exit code, and every resource
//! measured under steady load with where it went; then the method.

use std::fmt::Write as _;

use pado_analysis::soak::{ResourceDrift, Soak, Verdict};
use pado_base::units::{memory, plain};
use pado_results::SoakMode;

use super::{cell, mark, TextOptions};
use crate::summary::Summary;

/// A level of a resource in its unit.
pub(crate) fn level(r: &ResourceDrift, v: f64) -> String {
    if r.bytes {
        memory(v)
    } else {
        plain((v * 10.0).round() / 10.0)
    }
}

/// A change per hour of a resource, signed, in its unit.
pub(crate) fn per_hour(r: &ResourceDrift) -> String {
    let sign = if r.slope_per_hour < 0.0 { "-" } else { "+" };
    let v = r.slope_per_hour.abs();
    let amount = if r.bytes {
        memory(v)
    } else {
        plain((v * 10.0).round() / 10.0)
    };
    format!("{sign}{amount}/hour")
}

/// What a resource did, in a word or two.
pub(crate) fn state(r: &ResourceDrift) -> &'static str {
    if r.notable {
        match r.verdict() {
            Verdict::LeakSuspected => "still rising",
            _ => "rising",
        }
    } else if r.levelled_off {
        "rose, then levelled off"
    } else {
        "steady"
    }
}

/// The mode in words: judged or only shown.
fn mode_words(mode: Option<SoakMode>) -> &'static str {
    match mode {
        Some(SoakMode::Requested) => " (--soak: judged)",
        Some(SoakMode::Long) => " (a run of an hour or more; --soak would judge it)",
        None => "",
    }
}

/// The soak verdict and what it rests on, when the summary has one.
pub(super) fn soak(out: &mut String, s: &Summary, o: TextOptions) {
    let Some(k) = &s.soak else {
        if s.soak_mode == Some(SoakMode::Requested) && s.in_progress {
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "  soak: not judged yet: no period of steady load has lasted long enough so far"
            );
        } else if s.soak_mode == Some(SoakMode::Requested) {
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "  {} soak: not judged: no period of steady load lasted long enough (at least {} s after its first {} s)",
                mark(false, o),
                pado_analysis::soak::MIN_SPAN_S,
                pado_analysis::drift::WARMUP_S
            );
        }
        return;
    };
    let judged = s.soak_mode == Some(SoakMode::Requested);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  {}soak: {} over {} of steady load{}",
        if judged {
            format!("{} ", mark(s.soak_ok, o))
        } else {
            String::new()
        },
        k.verdict.words(),
        pado_base::units::duration(k.steady_s),
        mode_words(s.soak_mode)
    );
    rows(out, k);
    if let Some(g) = &k.generator {
        let _ = writeln!(out, "    {}", generator_line(g));
    }
    if !k.observed {
        let _ = writeln!(
            out,
            "    the target's memory, descriptors and pools were not observed: add its metrics endpoint with `observe:` to tell a leak from a slow dependency"
        );
    }
    let _ = writeln!(out, "  soak method: {}", pado_analysis::soak::METHOD);
}

/// pado's own memory over the longest steady period, in one line.
pub(crate) fn generator_line(g: &ResourceDrift) -> String {
    format!(
        "pado's own memory: {} → {} ({}), {}",
        level(g, g.from),
        level(g, g.to),
        per_hour(g),
        if g.notable {
            "still rising: pado's, not the target's (please report it)"
        } else {
            "steady"
        }
    )
}

fn rows(out: &mut String, k: &Soak) {
    let w = k
        .resources
        .iter()
        .map(|r| pado_base::text::columns(&series_label(r)))
        .chain(std::iter::once(8))
        .max()
        .unwrap_or(8)
        .min(60);
    for r in &k.resources {
        let _ = writeln!(
            out,
            "    {:<16} {}  {} → {}  {}  p = {:.3}  {}",
            r.resource.words(),
            cell(&series_label(r), w),
            level(r, r.from),
            level(r, r.to),
            per_hour(r),
            r.p_value,
            state(r)
        );
    }
    for d in &k.latency {
        let _ = writeln!(
            out,
            "    {:<16} {}  mean {:+.0} ms/hour ({:+.1}%)  p = {:.3}  {}",
            "latency",
            cell(&d.period.label, w),
            d.drift.slope_per_hour,
            d.drift.relative_change * 100.0,
            d.drift.p_value,
            if d.drift.notable { "rising" } else { "steady" }
        );
    }
}

/// The series as shown: `name{labels} @endpoint`.
fn series_label(r: &ResourceDrift) -> String {
    format!("{} @{}", r.series, r.endpoint)
}
