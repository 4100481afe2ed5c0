//! The stage table: each stage's window with its load, errors and latency.

use maud::{html, Markup};
use pado_base::units::duration;

use super::cells::{table, td_int, td_ms, td_name, td_pct, td_rate};
use super::chart_data::round3;
use crate::stages::StageStats;
use crate::summary::LoadedRun;

/// One stage; `qualified` prefixes the scenario when several scenarios have stages.
fn row(st: &StageStats, qualified: bool) -> Markup {
    let l = &st.latency_ms;
    let name = if qualified {
        format!("{} · {}", st.scenario, st.label)
    } else {
        st.label.clone()
    };
    html! {
        tr data-scenario=(st.scenario) data-index=(st.index) {
            (td_name(&name))
            td class="num" data-value=(round3(st.start_s)) {
                (format!("{}–{}", duration(st.start_s), duration(st.end_s)))
            }
            (td_int(st.vus_peak as u64))
            (td_int(st.requests))
            (td_int(st.failed))
            (td_pct(st.error_rate * 100.0, st.failed > 0))
            (td_rate(st.rps))
            (td_ms(l.mean))
            (td_ms(l.p50))
            (td_ms(l.p95))
            (td_ms(l.p99))
        }
    }
}

/// The "Stages" section.
pub(super) fn section(run: &LoadedRun) -> Markup {
    let stages = &run.stages;
    let rows: Vec<Markup> = stages
        .iter()
        .map(|st| row(st, stages.iter().any(|o| o.scenario != st.scenario)))
        .collect();
    let heads = [
        "stage", "window", "peak VUs", "requests", "failed", "error %", "req/s", "mean ms",
        "p50 ms", "p95 ms", "p99 ms",
    ];
    html! {
        h2 { "Stages" }
        (table("table-stages", &heads, &rows, "no stages (the executor has none)"))
    }
}
