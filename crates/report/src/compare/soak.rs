//! Soak runs side by side: each run's soak verdict with what it rests on, and the
//! change per hour of every resource all the runs measured, so a fixed leak shows
//! as the verdict turning stable and the slope falling to nothing.

use pado_analysis::soak::{ResourceDrift, Soak, Verdict as SoakVerdict};

use pado_base::units::MIB;

use super::{CompareRow, Side, Verdict};
use crate::text::soak::per_hour;

/// Per run, its soak verdict in words with the finding behind it
/// (`leak suspected (process_resident_memory_bytes +8.8 GiB/hour)`); `None` for a
/// run without a soak analysis.
pub(super) fn verdicts(sides: &[Side<'_>]) -> Vec<Option<String>> {
    sides
        .iter()
        .map(|s| s.summary.soak.as_ref().map(in_words))
        .collect()
}

fn in_words(k: &Soak) -> String {
    let why = match k.findings().next() {
        Some(r) => Some(format!("{} {}", r.series, per_hour(r))),
        None if k.verdict == SoakVerdict::LatencyDrift => k
            .latency
            .iter()
            .find(|p| p.drift.notable)
            .map(|p| format!("latency {:+.0} ms/hour", p.drift.slope_per_hour)),
        None => None,
    };
    match why {
        Some(w) => format!("{} ({w})", k.verdict.words()),
        None => k.verdict.words().to_string(),
    }
}

/// One row per resource series every run measured, and one for latency when every
/// run measured it: the change per hour of each run, as single values (a slope
/// near zero makes a change in % meaningless, and its noise is in each run's own
/// verdict above the table).
pub(super) fn rows(sides: &[Side<'_>]) -> Vec<CompareRow> {
    let Some(soaks) = sides
        .iter()
        .map(|s| s.summary.soak.as_ref())
        .collect::<Option<Vec<&Soak>>>()
    else {
        return Vec::new();
    };
    let single = |metric: String, values: Vec<Option<f64>>| CompareRow {
        scope: "soak".into(),
        metric,
        changes: vec![None; values.len() - 1],
        verdicts: vec![Verdict::NotTested; values.len() - 1],
        p_values: vec![None; values.len() - 1],
        floor: None,
        values,
    };
    let mut out = Vec::new();
    if soaks.iter().all(|k| !k.latency.is_empty()) {
        let values = soaks
            .iter()
            .map(|k| {
                // The period that drifted most, as the verdict reads it.
                k.latency
                    .iter()
                    .map(|p| p.drift.slope_per_hour)
                    .max_by(f64::total_cmp)
            })
            .collect();
        out.push(single("latency ms per hour".into(), values));
    }
    let mut seen: Vec<&str> = Vec::new();
    for r in &soaks[0].resources {
        if seen.contains(&r.series.as_str()) {
            continue;
        }
        seen.push(&r.series);
        // Each run's first entry of the series: notable ones come first, so a period
        // where it drifted wins over one where it did not.
        let each: Option<Vec<&ResourceDrift>> = soaks
            .iter()
            .map(|k| k.resources.iter().find(|x| x.series == r.series))
            .collect();
        let Some(each) = each else { continue };
        let (unit, scale) = if r.bytes { (" MiB", MIB) } else { ("", 1.0) };
        out.push(single(
            format!("{} per hour{unit}", r.series),
            each.iter()
                .map(|d| Some(d.slope_per_hour / scale))
                .collect(),
        ));
    }
    out
}
