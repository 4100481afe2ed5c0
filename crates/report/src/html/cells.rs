//! Table cells, tables and key-figure cards shared by the sections: numbers carry
//! their plain value in `data-value` (what the page sorts by) and show formatted text.

use maud::{html, Markup};
use pado_base::units::{ms, rate, thousands};

use super::chart_data::round3;

/// Cell with an integer: `data-value` holds it plain, the text has separators.
pub(super) fn td_int(v: u64) -> Markup {
    html! { td class="num" data-value=(v) { (thousands(v)) } }
}

/// Cell with milliseconds.
pub(super) fn td_ms(v: f64) -> Markup {
    html! { td class="num" data-value=(round3(v)) { (ms(v)) } }
}

/// Cell with a rate per second.
pub(super) fn td_rate(v: f64) -> Markup {
    html! { td class="num" data-value=(round3(v)) { (rate(v)) } }
}

/// Cell with a percentage (already times 100), red when `bad`.
pub(super) fn td_pct(v: f64, bad: bool) -> Markup {
    let class = if bad { "num bad" } else { "num" };
    html! {
        td class=(class) data-value=((v * 10_000.0).round() / 10_000.0) { (format!("{v:.2}%")) }
    }
}

/// Cell with a name (step, check, error category...), escaped like every value.
pub(super) fn td_name(s: &str) -> Markup {
    html! { td class="name" { (s) } }
}

/// A sortable table with a stable id; `empty` is shown as a single row when there are
/// no rows. The first column is a name, the others numbers unless their heading is
/// marked with a leading `<`.
pub(super) fn table(id: &str, heads: &[&str], rows: &[Markup], empty: &str) -> Markup {
    html! {
        div class="scroll" {
            table id=(id) class="sortable" {
                thead { tr {
                    @for (i, h) in heads.iter().enumerate() {
                        @match h.strip_prefix('<') {
                            Some(t) => th { (t) },
                            None if i == 0 => th { (h) },
                            None => th class="num" { (h) },
                        }
                    }
                } }
                tbody {
                    @if rows.is_empty() {
                        tr class="empty" { td colspan=(heads.len()) { (empty) } }
                    }
                    @for r in rows { (r) }
                }
            }
        }
    }
}

/// A key figure; `small` is shown smaller after the value.
pub(super) fn card(key: &str, value: &str, small: &str, bad: bool) -> Markup {
    html! {
        div class="card" {
            div class="k" { (key) }
            div class=(if bad { "v bad" } else { "v" }) {
                (value)
                @if !small.is_empty() { " " small { (small) } }
            }
        }
    }
}
