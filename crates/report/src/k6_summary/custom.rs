//! A script's own metrics in k6's summary object: each as k6 writes a metric of
//! its kind (`type`, `contains`, `values`), a trend with the options'
//! `summaryTrendStats`, a sub-metric a threshold names from the parts with its
//! tags.

use pado_analysis::custom_metrics::{select, statistic};
use pado_metrics::{CustomKind, CustomStats};
use serde_json::{json, Map, Value};

use super::{AggregationKind, Metrics, TrendStat};

impl Metrics<'_> {
    /// Every custom metric of the run over all its tags, by name.
    pub(super) fn custom(&self) -> Vec<(String, Value)> {
        let names: std::collections::BTreeSet<&str> = self
            .run
            .totals
            .custom
            .iter()
            .map(|c| c.key.name.as_str())
            // Tagged checks are k6's `checks`, which the built-in entry gives.
            .filter(|n| *n != "checks")
            .collect();
        names
            .into_iter()
            .filter_map(|n| {
                let c = select(&self.run.totals, n, &[])?;
                Some((n.to_string(), self.custom_entry(&c)))
            })
            .collect()
    }

    /// The entry of custom metric `name` restricted to `tags` (a threshold's
    /// sub-metric), or `None` when the run has no such metric.
    pub(super) fn custom_sub(&self, name: &str, tags: &[(String, String)]) -> Option<Value> {
        if !self.run.totals.custom.iter().any(|c| c.key.name == name) {
            return None;
        }
        // `checks` by name alone is every check's, which the built-in path gives;
        // the tagged rate holds only the checks that had tags.
        let by_name_only = tags
            .iter()
            .all(|(k, _)| matches!(k.as_str(), "check" | "step" | "name"));
        if name == "checks" && by_name_only {
            return None;
        }
        Some(match select(&self.run.totals, name, tags) {
            Some(c) => self.custom_entry(&c),
            None => json!({}),
        })
    }

    /// One metric as k6 writes it.
    fn custom_entry(&self, c: &CustomStats) -> Value {
        let dur = self.run.meta.duration_s.max(1e-9);
        let get = |a| statistic(c, &a, dur).unwrap_or(0.0);
        use pado_analysis::thresholds::Aggregation as A;
        let values = match c.kind {
            CustomKind::Counter => json!({ "count": get(A::Count), "rate": get(A::Rate) }),
            CustomKind::Gauge => {
                json!({ "value": get(A::Value), "min": get(A::Min), "max": get(A::Max) })
            }
            CustomKind::Rate => json!({
                "rate": get(A::Rate),
                "passes": c.nonzero,
                "fails": c.count - c.nonzero,
            }),
            CustomKind::Trend => {
                let mut m = Map::new();
                for (stat, name) in self.stats.iter().zip(self.names) {
                    let v = match stat {
                        TrendStat::Count => c.count as f64,
                        TrendStat::Agg(AggregationKind::Avg) => get(A::Avg),
                        TrendStat::Agg(AggregationKind::Min) => get(A::Min),
                        TrendStat::Agg(AggregationKind::Med) => get(A::Med),
                        TrendStat::Agg(AggregationKind::Max) => get(A::Max),
                        TrendStat::Agg(AggregationKind::Percentile(p)) => get(A::Percentile(*p)),
                    };
                    m.insert(name.clone(), json!(v));
                }
                Value::Object(m)
            }
        };
        json!({
            "type": c.kind.as_str(),
            "contains": if c.is_time { "time" } else { "default" },
            "values": values,
        })
    }
}
