//! What differs between the runs other than the change under test (name, load
//! shape, duration, early stop), and the limit each run's bottleneck table named.

use super::{letter, Side};

pub(super) fn limits_of(sides: &[Side<'_>]) -> Vec<Option<String>> {
    sides
        .iter()
        .map(|s| s.summary.bottlenecks.as_ref().and_then(|b| b.limit.clone()))
        .collect()
}

/// The load a run applied, in words: one entry per scenario (executor and its
/// parameters, which include VUs or rates and durations) and per stage window.
fn load_shape(m: &pado_results::RunMeta) -> Vec<String> {
    let mut out: Vec<String> = m
        .scenarios
        .iter()
        .map(|s| format!("{}: {} {}", s.name, s.executor, s.description))
        .collect();
    out.extend(m.stages.iter().map(|st| {
        format!(
            "{} stage {}: {} ({:.0}–{:.0} s)",
            st.scenario,
            st.index + 1,
            st.label,
            st.start_s,
            st.end_s
        )
    }));
    out
}

/// Differences between the baseline and each other run that are not the change
/// under test.
pub(super) fn shape_warnings(sides: &[Side<'_>]) -> Vec<String> {
    let mut out = Vec::new();
    let Some(base) = sides.first() else {
        return out;
    };
    let bm = &base.run.meta;
    for (i, s) in sides.iter().enumerate().skip(1) {
        let (m, l) = (&s.run.meta, letter(i));
        if m.name != bm.name {
            out.push(format!(
                "the runs are different tests: A is `{}`, {l} is `{}`",
                bm.name, m.name
            ));
        }
        let (sa, sb) = (load_shape(bm), load_shape(m));
        if sa != sb {
            let only = |x: &[String], y: &[String]| {
                x.iter()
                    .filter(|v| !y.contains(v))
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            out.push(format!(
                "the load shapes differ: A ran {}, {l} ran {}",
                or_nothing(only(&sa, &sb)),
                or_nothing(only(&sb, &sa))
            ));
        }
        let (da, db) = (bm.duration_s, m.duration_s);
        if da.is_finite() && db.is_finite() && (da - db).abs() > (0.1 * da.max(db)).max(1.0) {
            out.push(format!(
                "the runs lasted differently: A {da:.1} s, {l} {db:.1} s"
            ));
        }
        if m.interrupted != bm.interrupted {
            let who = if m.interrupted { l } else { 'A' };
            out.push(format!("run {who} was stopped early"));
        }
    }
    out
}

fn or_nothing(s: String) -> String {
    if s.is_empty() {
        "nothing else".into()
    } else {
        format!("`{s}`")
    }
}
