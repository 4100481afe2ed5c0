//! The comparison as a terminal table: runs with their limits and soak verdicts,
//! warnings, one line per metric grouped by scope, then the legend of the marks
//! used, the method and the noise between runs a change had to beat.

use std::fmt::Write as _;

use pado_base::units::value as fmt_v;

use super::{legend, letter, Comparison};

/// The comparison as a terminal table, control characters in names escaped.
pub fn render_compare(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out);
    for (i, r) in c.runs.iter().enumerate() {
        let _ = writeln!(
            out,
            "  {}{} {}{}{}",
            letter(i),
            if i == 0 { " (baseline)" } else { "" },
            r,
            match c.limits.get(i).and_then(|l| l.as_ref()) {
                Some(l) => format!("   limit: {l}"),
                None => String::new(),
            },
            match c.soak.get(i).and_then(|k| k.as_ref()) {
                Some(k) => format!("   soak: {k}"),
                None => String::new(),
            }
        );
    }
    for w in &c.warnings {
        let _ = writeln!(out, "  !! {w}");
    }
    let _ = writeln!(out);
    let mw = c
        .rows
        .iter()
        .map(|r| pado_base::text::columns(&r.metric))
        .max()
        .unwrap_or(10)
        .max(10);
    let mut scope = String::new();
    for r in &c.rows {
        if r.scope != scope {
            scope = r.scope.clone();
            let _ = writeln!(out, "  {scope}");
        }
        let mut line = format!("    {}", pado_base::text::cell(&r.metric, mw));
        for v in &r.values {
            let _ = write!(line, " {:>10}", fmt_v(*v));
        }
        for (ch, vd) in r.changes.iter().zip(&r.verdicts) {
            let change = ch.map_or("-".to_string(), |x| format!("{x:+.1}%"));
            let _ = write!(line, " {:>9} {:<17}", change, vd.mark());
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let _ = writeln!(out);
    for (mark, meaning) in legend(c) {
        let _ = writeln!(out, "  {mark}: {meaning}");
    }
    let _ = writeln!(out, "  significance: {}", c.method);
    let _ = writeln!(out, "  noise between runs: {}", c.noise_between_runs);
    // Run names, labels, steps and directories are other people's text: no control
    // character of theirs reaches the terminal.
    pado_base::text::terminal_safe(&out).into_owned()
}
