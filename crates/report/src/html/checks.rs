//! Checks and thresholds: what the scenario asserted and whether it held.

use maud::{html, Markup};
use pado_base::units::{pct, plain};

use super::cells::{table, td_int, td_name, td_pct};
use crate::summary::Summary;

/// Passes and fails per check.
fn checks(s: &Summary) -> Markup {
    let rows: Vec<Markup> = s
        .checks
        .iter()
        .map(|(name, c)| {
            let total = c.passes + c.fails;
            html! {
                tr class=(if c.fails > 0 { "bad" } else { "ok" }) {
                    (td_name(name))
                    (td_int(c.passes))
                    (td_int(c.fails))
                    (td_pct(pct(c.passes, total), c.fails > 0))
                }
            }
        })
        .collect();
    table(
        "table-checks",
        &["check", "passes", "fails", "passed"],
        &rows,
        "no checks",
    )
}

/// Each threshold with the value it was judged on.
fn thresholds(s: &Summary) -> Markup {
    let rows: Vec<Markup> = s
        .thresholds
        .iter()
        .map(|t| {
            let class = if t.ok { "ok" } else { "bad" };
            let (value_attr, value_text) = match t.value {
                Some(v) => (format!("{v}"), plain(v)),
                None => (String::new(), "no data".to_string()),
            };
            html! {
                tr class=(class) data-ok=(t.ok) {
                    (td_name(&t.metric))
                    td { code { (t.expr) } }
                    td class="num" data-value=(value_attr) { (value_text) }
                    td class=(format!("status {class}")) { (if t.ok { "✓ pass" } else { "✗ fail" }) }
                }
            }
        })
        .collect();
    table(
        "table-thresholds",
        &["metric", "<expression", "actual", "<result"],
        &rows,
        "no thresholds",
    )
}

/// The "Checks" and "Thresholds" sections.
pub(super) fn section(s: &Summary) -> Markup {
    html! {
        h2 { "Checks" }
        (checks(s))
        h2 { "Thresholds" }
        (thresholds(s))
    }
}
