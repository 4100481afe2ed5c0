//! The terminal summary: what a k6 user expects to read at the end of a run, with
//! pado's per-step table and an explicit note on how latency was timed.

use std::fmt::Write as _;

use pado_analysis::self_check::GeneratorCheck;
use pado_metrics::fmt::{bytes, ms, plain as trim, rate, thousands, vus as vus_text};
use pado_metrics::LatencySummary;

use crate::summary::{Summary, GENERATOR_SATURATED};

/// Render options.
#[derive(Clone, Copy, Debug, Default)]
pub struct TextOptions {
    /// ANSI colours for pass/fail marks.
    pub color: bool,
}

fn mark(ok: bool, o: TextOptions) -> &'static str {
    match (ok, o.color) {
        (true, true) => "\x1b[32m✓\x1b[0m",
        (false, true) => "\x1b[31m✗\x1b[0m",
        (true, false) => "✓",
        (false, false) => "✗",
    }
}

fn dots(label: &str, width: usize) -> String {
    let n = width.saturating_sub(label.chars().count() + 1);
    format!("{label} {}", ".".repeat(n))
}

fn lat_row(out: &mut String, label: &str, l: &LatencySummary, w: usize) {
    let _ = writeln!(
        out,
        "  {:<w$} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        label,
        ms(l.min),
        ms(l.mean),
        ms(l.p50),
        ms(l.p90),
        ms(l.p95),
        ms(l.p99),
        ms(l.p99_9),
        ms(l.max),
    );
}

/// "Why requests failed": one line per error category with its count and the first
/// sampled request of that category (step, request, status, the failing check and
/// what it saw, or the first bytes of the body). Text from responses is shown with
/// control characters escaped, so a body cannot drive the terminal.
fn why_failed(out: &mut String, s: &Summary) {
    if s.failures.is_empty() {
        return;
    }
    let clean = |t: &str| pado_metrics::failure::printable(t.as_bytes());
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  why requests failed (a sample per category; all in failures.jsonl)"
    );
    let mut seen: Vec<&str> = Vec::new();
    for f in &s.failures {
        if seen.contains(&f.category.as_str()) {
            continue;
        }
        seen.push(&f.category);
        let n = s.errors.get(&f.category).copied().unwrap_or(0);
        let status = if f.status == 0 {
            "no response".to_string()
        } else {
            f.status.to_string()
        };
        let mut why = match (&f.check, &f.actual) {
            (Some(c), Some(a)) => format!("{}: {}", clean(c), clean(a)),
            _ if f.reason.is_some() => clean(f.reason.as_deref().unwrap_or_default()),
            _ if !f.body.is_empty() => format!("body \"{}\"", fit(&clean(&f.body), 60)),
            _ => String::new(),
        };
        if !why.is_empty() {
            why.insert_str(0, " · ");
        }
        let _ = writeln!(
            out,
            "  {:<22} {}: {} {} → {}{} · at {}s",
            format!("{} ({})", f.category, thousands(n)),
            fit(&clean(&f.step), 40),
            clean(&f.method),
            fit(&clean(&f.url), 60),
            status,
            why,
            f.second
        );
    }
}

/// Truncate to `max` characters with an ellipsis (names can be long URLs).
fn fit(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Render the summary.
pub fn render(s: &Summary, o: TextOptions) -> String {
    defang(&render_raw(s, o), o.color)
}

/// pado's own colour sequences: the only escapes the summary may print.
const OWN_ESCAPES: [&str; 4] = ["\x1b[32m", "\x1b[31m", "\x1b[1;31m", "\x1b[0m"];

/// Control characters in the rendered text shown as `\x..` instead of sent to the
/// terminal: step names, tag values, scraped labels and server text come from
/// outside, and an escape sequence in them could rewrite the screen or the window
/// title. Newlines (the summary's own layout) and, with colour, pado's own colour
/// sequences stay.
fn defang(text: &str, color: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if color && c == '\x1b' {
            if let Some(own) = OWN_ESCAPES.iter().find(|e| rest.starts_with(**e)) {
                out.push_str(own);
                rest = &rest[own.len()..];
                continue;
            }
        }
        if c.is_control() && c != '\n' {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

fn render_raw(s: &Summary, o: TextOptions) -> String {
    let mut out = String::new();
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  pado · {} · {:.1}s{}",
        s.name,
        s.duration_s,
        if s.interrupted { " · interrupted" } else { "" }
    );
    for sc in &s.scenarios {
        let _ = writeln!(
            out,
            "  scenario {} ({}): {}",
            sc.name, sc.executor, sc.description
        );
    }
    if let Some(g) = s.generator.as_ref().filter(|g| g.saturated) {
        // First thing after the title, impossible to miss: every number below is
        // suspect.
        let bang = if o.color { "\x1b[1;31m!!\x1b[0m" } else { "!!" };
        let _ = writeln!(out);
        let _ = writeln!(out, "  {bang} {GENERATOR_SATURATED}");
        let _ = writeln!(out, "  {bang} {}", g.message);
    }
    let _ = writeln!(out);
    let w = 18;
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
        "  {} {} ({:.2}%){}",
        dots("http_req_failed", w),
        thousands(s.failed),
        s.failed_rate * 100.0,
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
    let lw = 24;
    let _ = writeln!(
        out,
        "  {:<lw$} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "latency (ms)", "min", "mean", "p50", "p90", "p95", "p99", "p99.9", "max"
    );
    lat_row(&mut out, "http_req_duration", &s.latency_ms, lw);
    for (name, label) in [
        ("http_req_blocked", "  blocked"),
        ("http_req_connecting", "  connecting"),
        ("http_req_tls_handshaking", "  tls_handshaking"),
        ("http_req_sending", "  sending"),
        ("http_req_waiting", "  waiting (ttfb)"),
        ("http_req_receiving", "  receiving"),
    ] {
        if let Some(l) = s.phases_ms.get(name) {
            if l.max > 0.0 || name == "http_req_waiting" {
                lat_row(&mut out, label, l, lw);
            }
        }
    }
    if s.iterations > 0 {
        lat_row(&mut out, "iteration_duration", &s.iteration_duration_ms, lw);
        for (name, f) in &s.flows {
            lat_row(
                &mut out,
                &format!("  {}", fit(name, lw - 2)),
                &f.iteration_duration_ms,
                lw,
            );
        }
    }
    if !s.stages.is_empty() {
        let _ = writeln!(out);
        let sw = s
            .stages
            .iter()
            .map(|x| x.label.chars().count())
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
                "  {:<sw$} {:>13} {:>10} {:>9} {:>8} {:>8} {:>8} {:>7.2}%",
                fit(&st.label, sw),
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
    if s.stability.seconds >= 2 {
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
    if !s.drift_periods.is_empty() {
        let _ = writeln!(out);
        for d in &s.drift_periods {
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
        let _ = writeln!(out, "  drift method: {}", pado_analysis::drift::METHOD);
    }
    if !s.steps.is_empty() {
        let _ = writeln!(out);
        let tag_width = s.tagged.keys().map(|k| {
            let base = k.find('{').unwrap_or(0);
            k[base..].chars().count() + 2
        });
        let nw = s
            .steps
            .keys()
            .map(|k| k.chars().count())
            .chain(tag_width)
            .max()
            .unwrap_or(4)
            .clamp(4, 48);
        let _ = writeln!(
            out,
            "  {:<nw$} {:>10} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8}",
            "step", "requests", "failed", "req/s", "mean", "p95", "p99", "max"
        );
        for (name, st) in &s.steps {
            let _ = writeln!(
                out,
                "  {:<nw$} {:>10} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8}",
                fit(name, nw),
                thousands(st.requests),
                thousands(st.failed),
                rate(st.rps),
                ms(st.latency_ms.mean),
                ms(st.latency_ms.p95),
                ms(st.latency_ms.p99),
                ms(st.latency_ms.max),
            );
            for (tname, t) in s.tagged.range(format!("{name}{{")..) {
                if !tname.starts_with(&format!("{name}{{")) {
                    break;
                }
                let label = format!("  {}", &tname[name.len()..]);
                let _ = writeln!(
                    out,
                    "  {:<nw$} {:>10} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8}",
                    fit(&label, nw),
                    thousands(t.requests),
                    thousands(t.failed),
                    rate(t.rps),
                    ms(t.latency_ms.mean),
                    ms(t.latency_ms.p95),
                    ms(t.latency_ms.p99),
                    ms(t.latency_ms.max),
                );
            }
        }
    }
    if !s.checks.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "  checks");
        for (name, c) in &s.checks {
            let total = c.passes + c.fails;
            let pct = if total > 0 {
                c.passes as f64 * 100.0 / total as f64
            } else {
                0.0
            };
            let _ = writeln!(
                out,
                "  {} {}  {:.2}% ({} / {})",
                mark(c.fails == 0, o),
                name,
                pct,
                thousands(c.passes),
                thousands(total)
            );
        }
    }
    why_failed(&mut out, s);
    if !s.thresholds.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "  thresholds");
        for t in &s.thresholds {
            let v = match t.value {
                Some(v) => trim(v),
                None => "no data".into(),
            };
            let _ = writeln!(
                out,
                "  {} {}: {}   (actual {})",
                mark(t.ok, o),
                t.metric,
                t.expr,
                v
            );
        }
    }
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
            let at = sat.throughput_knee_load.max(1.0);
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
    if let Some(b) = &s.bottlenecks {
        bottleneck_table(&mut out, b, o);
    }
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
    let _ = writeln!(out);
    if let Some(g) = &s.generator {
        let _ = writeln!(out, "  {}", generator_line(g));
    }
    let _ = writeln!(out, "  latency: {}", s.latency_origin);
    for w in &s.warnings {
        let _ = writeln!(out, "  warning: {w}");
    }
    out
}

/// Seed 000's elimination table: each observed component's state at saturation,
/// whether it was the bottleneck, and why.
fn bottleneck_table(out: &mut String, b: &pado_analysis::attribution::Attribution, o: TextOptions) {
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
        .map(|c| c.component.chars().count() + c.endpoint.chars().count() + 3)
        .max()
        .unwrap_or(10)
        .clamp(10, 44);
    for c in &b.components {
        let name = fit(&format!("{} ({})", c.component, c.endpoint), cw);
        let verdict = match (c.verdict, o.color) {
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
        };
        let _ = writeln!(out, "    {verdict} {name:<cw$}  {}", c.state);
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

/// The generator's figures in one line: CPU in cores of the allowed ones, the busiest
/// worker, run-queue wait and event-loop lag; what shows a run had headroom.
pub fn generator_line(g: &GeneratorCheck) -> String {
    let wait = match g.run_queue_wait_share {
        Some(w) => format!(", run-queue wait {:.0}%", w * 100.0),
        None => String::new(),
    };
    format!(
        "generator: cpu {:.1}/{} cores (peak {:.1}, busiest worker {:.0}%){wait}, lag p99 {} ms (max {} ms){}",
        g.cpu_cores_mean,
        g.cores_allowed,
        g.cpu_cores_peak,
        g.busiest_worker_peak.min(1.0) * 100.0,
        ms(g.lag_p99_ms),
        ms(g.lag_max_ms),
        if g.saturated { " — SATURATED" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_from_outside_never_reach_the_terminal() {
        let mut s = Summary {
            name: "run\x1b]0;pwned\x07".into(),
            requests: 3,
            ..Default::default()
        };
        s.steps.insert(
            "GET /\x1b[2J\x1b[H".into(),
            crate::summary::StepSummary {
                requests: 3,
                ..Default::default()
            },
        );
        s.warnings.push("label \x1b[31mred\x1b[0m\r".into());
        for color in [false, true] {
            let out = render(&s, TextOptions { color });
            assert!(out.contains("run\\x1b]0;pwned\\x07"), "{out}");
            assert!(out.contains("\\x1b[2J\\x1b[H"), "{out}");
            assert!(!out.contains('\r') && !out.contains('\x07'), "{out}");
            let mut rest = out.as_str();
            while let Some(i) = rest.find('\x1b') {
                assert!(color, "an escape without colour: {out:?}");
                assert!(
                    OWN_ESCAPES.iter().any(|e| rest[i..].starts_with(e)),
                    "{out:?}"
                );
                rest = &rest[i + 1..];
            }
        }
    }

    #[test]
    fn number_formats() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(100), "100");
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(1_500_000), "1.5 MB");
        assert_eq!(ms(0.2871), "0.287");
        assert_eq!(ms(12.345), "12.35");
        assert_eq!(fit("abcdef", 4), "abc…");
    }

    #[test]
    fn the_bottleneck_table_marks_busy_throughout_apart_from_the_limit() {
        use pado_analysis::attribution::{Attribution, Component, Kind, Verdict, Window};
        let comp = |name: &str, kind, verdict| Component {
            component: name.into(),
            kind,
            endpoint: "app".into(),
            state: "state".into(),
            baseline: None,
            verdict,
            evidence: "why".into(),
            utilisation: None,
        };
        let mut b = Attribution {
            window: Window::new("saturation (load ≥ 8)", 10.0, 20.0),
            baseline: Some(Window::new("low load (≤ 4)", 0.0, 5.0)),
            saturated_run: true,
            components: vec![
                comp("DB pool HikariPool-1", Kind::Pool, Verdict::Yes),
                comp("CPU (machine)", Kind::MachineCpu, Verdict::BusyThroughout),
            ],
            limit: Some("DB pool HikariPool-1 (app)".into()),
            endpoints: Vec::new(),
        };
        let mut out = String::new();
        bottleneck_table(&mut out, &b, TextOptions { color: false });
        let line = |name: &str| {
            out.lines()
                .find(|l| l.contains(name))
                .unwrap_or_else(|| panic!("no {name} in {out}"))
                .to_string()
        };
        assert!(line("DB pool").trim_start().starts_with("YES"), "{out}");
        assert!(
            line("CPU (machine)").trim_start().starts_with("busy "),
            "{out}"
        );
        assert!(out.contains("busy = busy throughout"), "{out}");
        // Without such a row, no legend for it.
        b.components.pop();
        let mut out = String::new();
        bottleneck_table(&mut out, &b, TextOptions { color: false });
        assert!(!out.contains("busy = "), "{out}");
    }
}
