//! A k6 script's own metrics (`k6/metrics`, `group_duration`): one line each,
//! with k6's statistics of its kind, as k6's end-of-test summary shows them.

use std::fmt::Write as _;

use pado_metrics::CustomKind;

use super::TextOptions;
use crate::summary::custom::{CustomSummary, TREND_STATS};
use crate::summary::Summary;

/// The block: nothing when the run made no metric of its own.
pub(super) fn custom(out: &mut String, s: &Summary, _o: TextOptions) {
    if s.custom.is_empty() {
        return;
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "  custom metrics");
    let width = s
        .custom
        .keys()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0);
    for (name, c) in &s.custom {
        let pad = width - name.chars().count();
        let _ = writeln!(out, "  {name}{}  {}", " ".repeat(pad), line(c));
    }
}

/// `avg=12.30ms min=... ` for a trend, `count=5 rate=2.50/s` for a counter,
/// `value=3 min=3 max=3` for a gauge, `100.00% (5 / 5)` for a rate.
pub(crate) fn line(c: &CustomSummary) -> String {
    let v = |k: &str| c.values.get(k).copied();
    let num = |x: f64| {
        let t = format!("{x:.2}");
        let t = t.trim_end_matches('0').trim_end_matches('.');
        if t.is_empty() || t == "-" {
            "0".to_string()
        } else {
            t.to_string()
        }
    };
    let unit = if c.time { "ms" } else { "" };
    match c.kind {
        CustomKind::Trend => {
            // k6's default statistics in k6's order, then any other a script's
            // `summaryTrendStats` chose (`count` without a unit).
            let mut keys: Vec<&String> = c.values.keys().collect();
            keys.sort_by_key(|k| (TREND_STATS.iter().position(|d| d == k).unwrap_or(9), *k));
            keys.iter()
                .map(|k| {
                    let u = if k.as_str() == "count" { "" } else { unit };
                    format!("{k}={}{u}", num(c.values[*k]))
                })
                .collect::<Vec<_>>()
                .join(" ")
        }
        CustomKind::Counter => format!(
            "count={} rate={}/s",
            num(v("count").unwrap_or(0.0)),
            num(v("rate").unwrap_or(0.0))
        ),
        CustomKind::Gauge => ["value", "min", "max"]
            .iter()
            .filter_map(|k| v(k).map(|x| format!("{k}={}{unit}", num(x))))
            .collect::<Vec<_>>()
            .join(" "),
        CustomKind::Rate => {
            let (p, f) = (v("passes").unwrap_or(0.0), v("fails").unwrap_or(0.0));
            format!(
                "{:.2}% ({} / {})",
                v("rate").unwrap_or(0.0) * 100.0,
                num(p),
                num(p + f)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn c(kind: CustomKind, time: bool, vals: &[(&str, f64)]) -> CustomSummary {
        CustomSummary {
            kind,
            time,
            values: vals
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect::<BTreeMap<_, _>>(),
        }
    }

    #[test]
    fn each_kind_reads_as_k6_shows_it() {
        let t = c(
            CustomKind::Trend,
            true,
            &[
                ("avg", 12.5),
                ("min", 1.0),
                ("med", 10.0),
                ("max", 40.25),
                ("p(90)", 30.0),
                ("p(95)", 35.0),
            ],
        );
        assert_eq!(
            line(&t),
            "avg=12.5ms min=1ms med=10ms max=40.25ms p(90)=30ms p(95)=35ms"
        );
        // A script's summaryTrendStats: k6's default ones in k6's order, then the
        // others; a count is no time.
        let chosen = c(
            CustomKind::Trend,
            true,
            &[
                ("count", 4.0),
                ("p(99.9)", 30.0),
                ("max", 30.0),
                ("avg", 15.0),
            ],
        );
        assert_eq!(line(&chosen), "avg=15ms max=30ms count=4 p(99.9)=30ms");
        let n = c(CustomKind::Counter, false, &[("count", 5.0), ("rate", 2.5)]);
        assert_eq!(line(&n), "count=5 rate=2.5/s");
        let g = c(
            CustomKind::Gauge,
            false,
            &[("value", 3.0), ("min", 3.0), ("max", 3.0)],
        );
        assert_eq!(line(&g), "value=3 min=3 max=3");
        let r = c(
            CustomKind::Rate,
            false,
            &[("rate", 0.75), ("passes", 3.0), ("fails", 1.0)],
        );
        assert_eq!(line(&r), "75.00% (3 / 4)");
    }
}
