//! A script's own metrics (k6's `Counter`, `Gauge`, `Rate`, `Trend`, and
//! `group_duration` measured by a script's `group()`) as a threshold reads them:
//! the parts whose tags include the threshold's, merged exactly, then k6's
//! statistic of the kind (a counter's `count` and `rate` per second, a gauge's
//! `value`/`min`/`max`, a rate's `rate`, a trend's `avg`/`min`/`med`/`max`/`p(N)`).

use pado_metrics::{CustomKind, CustomStats, Totals};

use crate::thresholds::Aggregation;

/// The parts of metric `name` carrying all of `tags`, merged; `None` when none
/// has data.
pub fn select(totals: &Totals, name: &str, tags: &[(String, String)]) -> Option<CustomStats> {
    let mut out: Option<CustomStats> = None;
    for c in totals.custom.iter().filter(|c| c.key.name == name) {
        let ok = tags
            .iter()
            .all(|(k, v)| c.key.tags.iter().any(|(tk, tv)| tk == k && tv == v));
        if ok {
            out.get_or_insert_with(|| CustomStats::new(c.key.clone(), c.kind, c.is_time))
                .merge(c);
        }
    }
    out.filter(|c| !c.is_empty())
}

/// k6's statistic `a` of `c` (`duration_s` turns a counter's sum into a rate);
/// `None` when the kind has no such statistic.
pub fn statistic(c: &CustomStats, a: &Aggregation, duration_s: f64) -> Option<f64> {
    use Aggregation as A;
    match (c.kind, a) {
        (CustomKind::Counter, A::Count) => Some(c.sum),
        (CustomKind::Counter, A::Rate) => Some(c.sum / duration_s.max(1e-9)),
        (CustomKind::Gauge, A::Value) => Some(c.last),
        (CustomKind::Gauge | CustomKind::Trend, A::Min) => Some(c.min),
        (CustomKind::Gauge | CustomKind::Trend, A::Max) => Some(c.max),
        (CustomKind::Rate, A::Rate) => c.rate(),
        (CustomKind::Trend, A::Avg) => c.avg(),
        (CustomKind::Trend, A::Med) => c.quantile(0.5),
        (CustomKind::Trend, A::Percentile(p)) => c.quantile(p / 100.0),
        _ => None,
    }
}

/// [`statistic`] of [`select`]: what a threshold on a custom metric reads.
pub fn aggregate(
    totals: &Totals,
    name: &str,
    tags: &[(String, String)],
    a: &Aggregation,
    duration_s: f64,
) -> Option<f64> {
    statistic(&select(totals, name, tags)?, a, duration_s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pado_metrics::SeriesKey;

    fn part(name: &str, kind: CustomKind, tags: &[(&str, &str)], values: &[f64]) -> CustomStats {
        let key = SeriesKey {
            name: name.into(),
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let mut c = CustomStats::new(key, kind, true);
        for (i, v) in values.iter().enumerate() {
            c.add(*v, i as u64);
        }
        c
    }

    fn totals() -> Totals {
        let mut t = Totals::default();
        for c in [
            part(
                "지연",
                CustomKind::Trend,
                &[("type", "API")],
                &[10.0, 20.0, 30.0],
            ),
            part("지연", CustomKind::Trend, &[("type", "정적")], &[300.0]),
            part("errors", CustomKind::Counter, &[], &[1.0, 1.0, 3.0]),
            part("ok", CustomKind::Rate, &[], &[1.0, 0.0, 1.0, 1.0]),
            part("size", CustomKind::Gauge, &[], &[7.0, 3.0, 5.0]),
        ] {
            pado_metrics::custom::merge_custom_into(&mut t.custom, &c);
        }
        t
    }

    #[test]
    fn each_kind_answers_k6s_statistics() {
        let t = totals();
        let get =
            |n: &str, tags: &[(String, String)], a: Aggregation| aggregate(&t, n, tags, &a, 10.0);
        let api = vec![("type".to_string(), "API".to_string())];
        assert_eq!(get("지연", &api, Aggregation::Avg), Some(20.0));
        assert_eq!(get("지연", &api, Aggregation::Max), Some(30.0));
        assert_eq!(get("지연", &[], Aggregation::Max), Some(300.0));
        // A percentile is HdrHistogram's: within 0.1% of the value.
        let med = get("지연", &[], Aggregation::Med).unwrap();
        assert!((med - 20.0).abs() <= 0.02, "{med}");
        let none = vec![("type".to_string(), "other".to_string())];
        assert_eq!(get("지연", &none, Aggregation::Avg), None);
        assert_eq!(get("errors", &[], Aggregation::Count), Some(5.0));
        assert_eq!(get("errors", &[], Aggregation::Rate), Some(0.5));
        assert_eq!(get("ok", &[], Aggregation::Rate), Some(0.75));
        assert_eq!(get("size", &[], Aggregation::Value), Some(5.0));
        assert_eq!(get("size", &[], Aggregation::Min), Some(3.0));
        // A statistic the kind does not have is no answer.
        assert_eq!(get("ok", &[], Aggregation::Count), None);
        assert_eq!(get("missing", &[], Aggregation::Count), None);
    }
}
