//! A k6 script's own metrics (`k6/metrics`, `group_duration`): one row each,
//! with k6's statistics of its kind; no section when the run made none.

use maud::{html, Markup};

use super::cells::{table, td_name};
use crate::summary::Summary;

/// The "Custom metrics" section.
pub(super) fn section(s: &Summary) -> Markup {
    if s.custom.is_empty() {
        return html! {};
    }
    let rows: Vec<Markup> = s
        .custom
        .iter()
        .map(|(name, c)| {
            html! {
                tr {
                    (td_name(name))
                    td { (c.kind.as_str()) }
                    td { code { (crate::text::custom_line(c)) } }
                }
            }
        })
        .collect();
    html! {
        h2 { "Custom metrics" }
        (table("table-custom", &["metric", "<kind", "<values"], &rows, "no custom metrics"))
    }
}
