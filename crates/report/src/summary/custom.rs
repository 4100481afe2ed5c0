//! A script's own metrics in the summary (`summary.json`'s `custom`, the
//! terminal's "custom metrics" block, k6's summary object): each metric over all
//! its tags, with k6's statistics of its kind under k6's keys.

use std::collections::BTreeMap;

use pado_analysis::custom_metrics::statistic;
use pado_analysis::thresholds::Aggregation;
use pado_metrics::{CustomKind, CustomStats, Totals};
use serde::{Deserialize, Serialize};

/// One metric a script made (`k6/metrics`, or `group_duration`), summed over
/// the run and its tags.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CustomSummary {
    /// `counter`, `gauge`, `rate` or `trend`.
    pub kind: CustomKind,
    /// Whether its values are times in milliseconds.
    #[serde(default)]
    pub time: bool,
    /// k6's statistics of the kind, under k6's keys: a counter's `count` and
    /// `rate` (per second), a gauge's `value`, `min`, `max`, a rate's `rate`,
    /// `passes`, `fails`, a trend's `avg`, `min`, `med`, `max`, `p(90)`, `p(95)`.
    pub values: BTreeMap<String, f64>,
}

/// k6's default statistics of a trend, in its order.
pub const TREND_STATS: [&str; 6] = ["avg", "min", "med", "max", "p(90)", "p(95)"];

/// Each of the run's custom metrics over all its tags (`duration_s` turns a
/// counter into a rate).
pub fn custom_of(totals: &Totals, duration_s: f64) -> BTreeMap<String, CustomSummary> {
    let mut merged: BTreeMap<&str, CustomStats> = BTreeMap::new();
    // `checks` with tags are the checks the summary already has, by name.
    for c in totals.custom.iter().filter(|c| c.key.name != "checks") {
        merged
            .entry(c.key.name.as_str())
            .or_insert_with(|| CustomStats::new(c.key.clone(), c.kind, c.is_time))
            .merge(c);
    }
    merged
        .into_iter()
        .filter(|(_, c)| !c.is_empty())
        .map(|(name, c)| (name.to_string(), summarise(&c, duration_s)))
        .collect()
}

/// One metric's k6 statistics.
pub fn summarise(c: &CustomStats, duration_s: f64) -> CustomSummary {
    let mut values = BTreeMap::new();
    let mut put = |k: &str, a: Aggregation| {
        if let Some(v) = statistic(c, &a, duration_s) {
            values.insert(k.to_string(), v);
        }
    };
    match c.kind {
        CustomKind::Counter => {
            put("count", Aggregation::Count);
            put("rate", Aggregation::Rate);
        }
        CustomKind::Gauge => {
            put("value", Aggregation::Value);
            put("min", Aggregation::Min);
            put("max", Aggregation::Max);
        }
        CustomKind::Rate => {
            put("rate", Aggregation::Rate);
            values.insert("passes".into(), c.nonzero as f64);
            values.insert("fails".into(), (c.count - c.nonzero) as f64);
        }
        CustomKind::Trend => {
            for k in TREND_STATS {
                if let Some(a) = trend_stat(k) {
                    put(k, a);
                }
            }
        }
    }
    CustomSummary {
        kind: c.kind,
        time: c.is_time,
        values,
    }
}

/// The aggregation of a trend statistic named as k6 names it (`avg`, `min`,
/// `med`, `max`, `p(N)`).
pub fn trend_stat(k: &str) -> Option<Aggregation> {
    Some(match k {
        "avg" => Aggregation::Avg,
        "min" => Aggregation::Min,
        "med" => Aggregation::Med,
        "max" => Aggregation::Max,
        _ => Aggregation::Percentile(k.strip_prefix("p(")?.strip_suffix(')')?.parse().ok()?),
    })
}

/// Make the run's custom metrics known to the threshold language in this
/// process (a report read from a result directory knows them only from it), so
/// that `run.json`'s thresholds on them parse.
pub fn declare(totals: &Totals) {
    for c in &totals.custom {
        let kind = match c.kind {
            CustomKind::Counter => pado_analysis::metric_catalog::MetricKind::Counter,
            CustomKind::Gauge => pado_analysis::metric_catalog::MetricKind::Gauge,
            CustomKind::Rate => pado_analysis::metric_catalog::MetricKind::Rate,
            CustomKind::Trend => pado_analysis::metric_catalog::MetricKind::Trend,
        };
        // A name the catalogue has as another kind stays the catalogue's: its
        // thresholds were judged on that when the run ran.
        let _ = pado_analysis::metric_catalog::register_custom(&c.key.name, kind, c.is_time);
    }
}
