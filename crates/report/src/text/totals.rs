//! The top of the summary: the run's name and scenarios, the generator's alarm, and
//! the totals (requests, failures, statuses, data, iterations, VUs).

use std::fmt::Write as _;

use pado_base::units::{bytes, percent2, rate, thousands};

use super::{dots, TextOptions};
use crate::summary::{Summary, GENERATOR_SATURATED};

/// The name, duration and scenarios; a saturated generator right after them.
pub(super) fn title(out: &mut String, s: &Summary, o: TextOptions) {
    let _ = writeln!(out);
    let state = if s.in_progress {
        match s.planned_s {
            Some(p) => format!(" · in progress (of {})", pado_base::units::duration(p)),
            None => " · in progress".to_string(),
        }
    } else if s.interrupted {
        " · interrupted".to_string()
    } else {
        String::new()
    };
    let _ = writeln!(out, "  pado · {} · {:.1}s{state}", s.name, s.duration_s);
    for sc in &s.scenarios {
        let _ = writeln!(
            out,
            "  scenario {} ({}): {}",
            sc.name, sc.executor, sc.description
        );
    }
    if !s.partial.is_empty() {
        // A merge of part of the test: every total below is short of the test's.
        let bang = if o.color { "\x1b[1;31m!!\x1b[0m" } else { "!!" };
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "  {bang} PARTIAL RESULT: merged without all of the test's load (--allow-partial)"
        );
        for p in &s.partial {
            let _ = writeln!(out, "  {bang} {p}");
        }
    }
    if let Some(g) = s.generator.as_ref().filter(|g| g.saturated) {
        // First thing after the title, impossible to miss: every number below is
        // suspect.
        let bang = if o.color { "\x1b[1;31m!!\x1b[0m" } else { "!!" };
        let _ = writeln!(out);
        let _ = writeln!(out, "  {bang} {GENERATOR_SATURATED}");
        let _ = writeln!(out, "  {bang} {}", g.message);
    }
}

/// Requests, failures, statuses, data, iterations and VUs, one dotted line each (a
/// WebSocket-only run's sessions and messages instead of its requests).
pub(super) fn totals(out: &mut String, s: &Summary, _o: TextOptions) {
    let _ = writeln!(out);
    let w = 18;
    match &s.websocket {
        Some(ws) if s.websocket_only() => ws_totals(out, s, ws, w),
        _ => http_totals(out, s, w),
    }
    if let Some(line) = protocols_line(s) {
        let _ = writeln!(out, "  {} {line}", dots("http", w));
    }
    iterations_and_vus(out, s, w);
}

/// `HTTP/2 (2,400 requests) · 4 connections opened`: which HTTP versions the load
/// went out over and how many connections it took (a keep-alive that did not hold
/// shows as one per request). `None` for a result directory written before pado
/// counted them.
pub(super) fn protocols_line(s: &Summary) -> Option<String> {
    let opened = s.connections_opened?;
    let name = |v: &str| format!("HTTP/{v}");
    let versions: Vec<String> = s
        .http_versions
        .iter()
        .map(|(v, n)| {
            let what = if *n == 1 { "request" } else { "requests" };
            format!("{} ({} {what})", name(v), thousands(*n))
        })
        .collect();
    let mut conns = format!(
        "{} connection{} opened",
        thousands(opened),
        if opened == 1 { "" } else { "s" }
    );
    let mut detail: Vec<String> = Vec::new();
    if s.connections_by_version.len() > 1 {
        detail.extend(
            s.connections_by_version
                .iter()
                .map(|(v, n)| format!("{} {}", thousands(*n), name(v))),
        );
    }
    if s.connections_tls > 0 {
        let tls = if s.connections_tls == opened {
            "all over TLS".to_string()
        } else {
            format!("{} over TLS", thousands(s.connections_tls))
        };
        detail.push(tls);
    }
    if !detail.is_empty() {
        conns.push_str(&format!(" ({})", detail.join(", ")));
    }
    Some(if versions.is_empty() {
        conns
    } else {
        format!("{} · {conns}", versions.join(", "))
    })
}

/// The HTTP request lines: requests, failures, statuses, data.
fn http_totals(out: &mut String, s: &Summary, w: usize) {
    let _ = writeln!(
        out,
        "  {} {} requests   {}/s",
        dots("http_reqs", w),
        thousands(s.requests),
        rate(s.rps)
    );
    let errs: Vec<String> = s
        .errors
        .iter()
        .map(|(k, v)| format!("{k}: {}", thousands(*v)))
        .collect();
    let _ = writeln!(
        out,
        "  {} {} ({}){}",
        dots("http_req_failed", w),
        thousands(s.failed),
        percent2(s.failed_rate),
        if errs.is_empty() {
            String::new()
        } else {
            format!("   {}", errs.join(", "))
        }
    );
    let statuses: Vec<String> = s
        .status
        .iter()
        .map(|(k, v)| format!("{k}: {}", thousands(*v)))
        .collect();
    if !statuses.is_empty() {
        let _ = writeln!(out, "  {} {}", dots("status", w), statuses.join(", "));
    }
    let _ = writeln!(
        out,
        "  {} received {} ({}/s) · sent {}",
        dots("data", w),
        bytes(s.data_received),
        bytes((s.data_received as f64 / s.duration_s.max(1e-9)) as u64),
        bytes(s.data_sent)
    );
}

/// A run of WebSocket sessions only: sessions and messages where the request lines
/// would be (zeroes there would read as "nothing happened").
fn ws_totals(out: &mut String, s: &Summary, ws: &crate::summary::WsSummary, w: usize) {
    let secs = s.duration_s.max(1e-9);
    let _ = writeln!(
        out,
        "  {} {} sessions   {}/s",
        dots("ws_sessions", w),
        thousands(ws.sessions),
        rate(ws.sessions as f64 / secs)
    );
    let errs: Vec<String> = ws
        .errors
        .iter()
        .map(|(k, v)| format!("{k}: {}", thousands(*v)))
        .collect();
    let failed_rate = ws.failed as f64 / ws.sessions.max(1) as f64;
    let _ = writeln!(
        out,
        "  {} {} ({}){}",
        dots("ws_failed", w),
        thousands(ws.failed),
        percent2(failed_rate),
        if errs.is_empty() {
            String::new()
        } else {
            format!("   {}", errs.join(", "))
        }
    );
    let _ = writeln!(
        out,
        "  {} sent {} ({}/s) · received {} ({}/s)",
        dots("ws_msgs", w),
        thousands(ws.msgs_sent),
        rate(ws.msgs_sent_per_s),
        thousands(ws.msgs_received),
        rate(ws.msgs_received_per_s)
    );
}

/// Iterations and VUs, one dotted line each.
fn iterations_and_vus(out: &mut String, s: &Summary, w: usize) {
    let mut it = format!("{} completed", thousands(s.iterations));
    if s.iterations_interrupted > 0 {
        let _ = write!(it, ", {} interrupted", thousands(s.iterations_interrupted));
    }
    if s.dropped_iterations > 0 {
        let _ = write!(
            it,
            ", {} dropped (VU pool exhausted)",
            thousands(s.dropped_iterations)
        );
    }
    if s.late_iterations > 0 {
        let _ = write!(it, ", {} started late", thousands(s.late_iterations));
    }
    let _ = writeln!(out, "  {} {}", dots("iterations", w), it);
    let _ = writeln!(
        out,
        "  {} {} active, {} allocated",
        dots("vus (peak)", w),
        s.vus,
        s.vus_max
    );
    let _ = writeln!(out);
}
