//! The events block: one impact row per event (errors and latency before, during
//! and after its window, time to first error and to recovery), then each
//! expectation with its mark.

use std::fmt::Write as _;

use pado_analysis::events::{EventImpact, WindowFigures};
use pado_base::units::{ms, percent, plain, rate};

use super::{mark, TextOptions};
use crate::summary::Summary;

fn window_cell(w: &WindowFigures) -> String {
    if w.requests == 0 {
        return "-".into();
    }
    format!(
        "{} err, p95 {}, {}/s",
        percent(w.error_rate),
        w.p95_ms.map_or("-".into(), |v| format!("{} ms", ms(v))),
        rate(w.rps)
    )
}

fn when(e: &EventImpact) -> String {
    match e.end_s {
        Some(end) => format!("{}–{} s", plain(round1(e.start_s)), plain(round1(end))),
        None => format!("{} s", plain(round1(e.start_s))),
    }
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

fn secs(v: Option<f64>) -> String {
    v.map_or("-".into(), |s| format!("{} s", plain(round1(s))))
}

/// The events of the run, when it had any.
pub(super) fn events(out: &mut String, s: &Summary, o: TextOptions) {
    if s.events.is_empty() {
        return;
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "  events");
    let rows: Vec<[String; 8]> = s
        .events
        .iter()
        .map(|e| {
            [
                e.name.clone(),
                when(e),
                e.outcome.clone(),
                window_cell(&e.before),
                e.during.as_ref().map_or("-".into(), window_cell),
                window_cell(&e.after),
                secs(e.time_to_first_error_s),
                secs(e.time_to_recovery_s),
            ]
        })
        .collect();
    let head = [
        "event",
        "when",
        "outcome",
        "before",
        "during",
        "after",
        "1st error",
        "recovery",
    ];
    let mut w = head.map(|h| h.chars().count());
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut l = String::from("   ");
        for (i, c) in cells.iter().enumerate() {
            l.push(' ');
            l.push_str(c);
            l.push_str(&" ".repeat(w[i] - c.chars().count()));
            l.push(' ');
        }
        l.trim_end().to_string()
    };
    let _ = writeln!(out, "{}", line(&head.map(String::from)));
    for r in &rows {
        let _ = writeln!(out, "{}", line(r));
    }
    for e in &s.events {
        if let Some(err) = &e.error {
            let _ = writeln!(out, "  {} {}: {}", mark(!e.required, o), e.name, err);
        }
        for x in &e.expectations {
            let what = match x.kind.as_str() {
                "during" => format!("during: {}", x.expr),
                "recovers" => format!("recovers: {}", x.expr),
                _ => format!("no errors after {}", x.expr),
            };
            let _ = writeln!(
                out,
                "  {} {}: {}   ({})",
                mark(x.ok, o),
                e.name,
                what,
                x.detail
            );
        }
        if e.failed_requests > 0 {
            let _ = writeln!(
                out,
                "    {}: {} requests failed until it recovered",
                e.name, e.failed_requests
            );
        }
    }
}
