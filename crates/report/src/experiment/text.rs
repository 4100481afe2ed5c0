//! The experiment as text: the table of points (Hangul aligned, control characters
//! escaped), then the fit, its prediction checks and what it says about the limit.

use std::fmt::Write;

use pado_base::text::{cell, columns};
use pado_base::units::{plain, value};

use super::{analyse, fit_line, limit_lines, prediction_line, ExperimentTable};

/// The experiment as text for a terminal or a file.
pub fn text(t: &ExperimentTable) -> String {
    let a = analyse(t);
    let mut s = String::new();
    let unit = t
        .unit
        .as_deref()
        .filter(|u| !u.is_empty())
        .map(|u| format!(" ({u})"))
        .unwrap_or_default();
    let _ = writeln!(s, "Experiment: {} against {}{unit}", t.metric, t.knob);
    let per_cost = !a.per_cost.is_empty();
    let mut heads = vec![t.knob.clone(), t.metric.clone()];
    if per_cost {
        heads.push("per cost".into());
    }
    heads.extend(["run".to_string(), "limit".to_string()]);
    let rows: Vec<Vec<String>> = t
        .points
        .iter()
        .map(|r| {
            let mut row = vec![t.value_label(r.value), value(r.measured)];
            if per_cost {
                let c = a.per_cost.iter().find(|c| c.value == r.value);
                row.push(value(c.map(|c| c.per_cost)));
            }
            row.push(r.run_id.clone().unwrap_or_else(|| "-".into()));
            row.push(match &r.error {
                Some(e) => format!("failed: {e}"),
                None => r.verdict.clone(),
            });
            row
        })
        .collect();
    // Every column as wide as its widest cell (at most 40 columns), the last (the
    // verdict, the longest) never cut.
    let last = heads.len() - 1;
    let widths: Vec<usize> = (0..heads.len())
        .map(|i| {
            let w = rows
                .iter()
                .map(|r| columns(&r[i]))
                .chain([columns(&heads[i])])
                .max()
                .unwrap_or(0);
            if i == last {
                w
            } else {
                w.min(40)
            }
        })
        .collect();
    let line = |cells: &[String]| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| cell(c, *w))
            .collect();
        format!("  {}", parts.join("  ").trim_end())
    };
    let _ = writeln!(s, "{}", line(&heads));
    for r in &rows {
        let _ = writeln!(s, "{}", line(r));
    }
    if let Some(f) = &a.fit {
        let _ = writeln!(s, "{}", fit_line(t, f));
    }
    if let Some(n) = &a.fit_note {
        let _ = writeln!(s, "  {n}");
    }
    if !a.predictions.is_empty() {
        let _ = writeln!(s, "Predictions, each from the points before it:");
        for c in &a.predictions {
            let _ = writeln!(s, "  {}", prediction_line(t, c));
        }
    }
    for l in limit_lines(t, &a) {
        let _ = writeln!(s, "{l}");
    }
    if let (true, Some(cost)) = (per_cost, t.cost_per_unit) {
        let _ = writeln!(
            s,
            "Per cost: {} for each unit of cost, at a cost of {} per {}.",
            t.metric_unit(),
            plain(cost),
            t.unit
                .as_deref()
                .filter(|u| !u.is_empty())
                .unwrap_or("unit")
        );
    }
    // The knob's name, labels and verdicts are other people's text.
    pado_base::text::terminal_safe(&s).into_owned()
}
