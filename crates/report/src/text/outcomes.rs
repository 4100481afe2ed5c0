//! What the scenario asserted and what went wrong: checks, a sample of why requests
//! failed, and thresholds.

use std::fmt::Write as _;

use pado_base::units::{plain, thousands};

use super::{fit, mark, TextOptions};
use crate::summary::Summary;

/// Each check with its pass rate.
pub(super) fn checks(out: &mut String, s: &Summary, o: TextOptions) {
    if !s.checks.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "  checks");
        for (name, c) in &s.checks {
            let total = c.passes + c.fails;
            let pct = pado_base::units::pct(c.passes, total);
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
}

/// "Why requests failed": one line per error category with its count and the first
/// sampled request of that category (step, request, status, the failing check and
/// what it saw, or the first bytes of the body). Text from responses is shown with
/// control characters escaped, so a body cannot drive the terminal.
pub(super) fn why_failed(out: &mut String, s: &Summary, _o: TextOptions) {
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
        if f.category == "script_error" {
            // A script's exception ended an iteration: not a request, so not in
            // `errors` (the iterations it ended are counted as interrupted).
            let why = clean(f.reason.as_deref().unwrap_or_default());
            let mut lines = why.split("\\n");
            let mut first = lines.next().unwrap_or_default().to_string();
            if let Some(at) = lines.next() {
                first = format!("{first} ({})", at.trim());
            }
            let _ = writeln!(
                out,
                "  {:<22} {}: an exception ended an iteration · {} · at {}s",
                f.category,
                fit(&clean(&f.step), 40),
                fit(&first, 100),
                f.second
            );
            continue;
        }
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

/// Each threshold, pass or fail, with the value it was judged on.
pub(super) fn thresholds(out: &mut String, s: &Summary, o: TextOptions) {
    if !s.thresholds.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "  thresholds");
        for t in &s.thresholds {
            let v = match t.value {
                Some(v) => plain(v),
                None => "no data".into(),
            };
            let over = match t.window_s {
                Some([a, b]) => format!(" over {a:.0}–{b:.0} s"),
                None => String::new(),
            };
            let _ = writeln!(
                out,
                "  {} {}: {}   (actual {}{over})",
                mark(t.ok, o),
                t.metric,
                t.expr,
                v
            );
        }
    }
}
