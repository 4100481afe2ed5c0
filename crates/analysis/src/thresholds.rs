//! Evaluating pass/fail thresholds against measurements.
//!
//! The threshold language (k6's, `p(95) < 200`) and its parser live in
//! [`pado_scenario::thresholds`], beside the scenario file thresholds are written in,
//! so that their errors name file and line and the file is read once. This module
//! only decides whether parsed thresholds hold. Evaluation is decoupled from storage
//! through [`MetricSource`], so the same rules serve a live run, a result directory
//! or a test double.
//!
//! The parser's types and entry points are re-exported here, so that code that
//! evaluates thresholds names one module for both.

use serde::{Deserialize, Serialize};

pub use pado_scenario::thresholds::{
    parse, parse_cli, parse_metric_key, parse_object, Aggregation, Comparison, Scope, ScopeKind,
    StageRef, Threshold, ThresholdError, DEFAULT_CLI_METRIC,
};

/// Where [`evaluate`] gets its numbers from: the live aggregator, a result directory
/// or a test double, so threshold logic does not depend on storage.
pub trait MetricSource {
    /// Value of one aggregation of one metric, restricted to samples carrying all of
    /// `tags` (empty = all samples); `None` when the metric has no data (then the
    /// threshold fails, as a threshold on nothing proves nothing).
    fn aggregate(
        &self,
        metric: &str,
        tags: &[(String, String)],
        aggregation: &Aggregation,
    ) -> Option<f64>;
}

/// Outcome of one threshold, in the shape reports and the JSON summary print.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdResult {
    /// The expression as the user wrote it ([`Threshold::source`]).
    pub expr: String,
    /// The metric key including tags ([`Threshold::metric_key`]).
    pub metric: String,
    /// Whether the threshold passed; `false` when there was no data.
    pub ok: bool,
    /// The observed value; `None` when the metric had no data, so the report can say
    /// why the threshold failed.
    pub value: Option<f64>,
    /// For a threshold scoped to a stage or a window: the seconds of the run it was
    /// judged on, `[start, end)`. Absent for the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_s: Option<[f64; 2]>,
}

/// Evaluates every threshold against `source`, returning one result per threshold in
/// the same order (so callers can pair results with thresholds, e.g. for
/// `abort_on_fail`). Missing data fails the threshold with `value: None`.
///
/// `source` is what the thresholds are judged on: the whole run for unscoped ones;
/// a threshold scoped to a stage or window is judged on that window's seconds
/// ([`crate::scoped::WindowFold::evaluate`]).
pub fn evaluate(thresholds: &[Threshold], source: &dyn MetricSource) -> Vec<ThresholdResult> {
    thresholds.iter().map(|t| evaluate_one(t, source)).collect()
}

/// [`evaluate`] of one threshold.
pub fn evaluate_one(t: &Threshold, source: &dyn MetricSource) -> ThresholdResult {
    let value = source.aggregate(&t.metric, &t.tags, &t.aggregation);
    ThresholdResult {
        expr: t.source.clone(),
        metric: t.metric_key(),
        ok: value.is_some_and(|v| t.passes(v)),
        value,
        window_s: t
            .scope
            .as_ref()
            .and_then(|s| s.window_s)
            .map(|(a, b)| [a, b]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    type Tags = Vec<(String, String)>;

    struct Fake(Vec<(&'static str, Tags, Aggregation, f64)>);

    impl MetricSource for Fake {
        fn aggregate(
            &self,
            metric: &str,
            tags: &[(String, String)],
            aggregation: &Aggregation,
        ) -> Option<f64> {
            self.0
                .iter()
                .find(|(m, t, a, _)| *m == metric && t.as_slice() == tags && a == aggregation)
                .map(|e| e.3)
        }
    }

    fn fake() -> Fake {
        Fake(vec![
            (
                "http_req_duration",
                vec![],
                Aggregation::Percentile(95.0),
                180.0,
            ),
            ("http_req_duration", vec![], Aggregation::Avg, 100.0),
            (
                "http_req_duration",
                tags(&[("step", "검색")]),
                Aggregation::Percentile(99.0),
                350.0,
            ),
            ("http_req_failed", vec![], Aggregation::Rate, 0.0),
            ("http_reqs", vec![], Aggregation::Count, 1000.0),
            ("vus", vec![], Aggregation::Value, f64::NAN),
        ])
    }

    #[test]
    fn evaluates_against_source() {
        let ths = [
            parse("http_req_duration", "p(95) < 200").unwrap(),
            parse("http_req_duration", "avg < 100").unwrap(),
            parse("http_req_duration", "avg <= 100").unwrap(),
            parse("http_req_duration", "avg == 100").unwrap(),
            parse("http_req_duration", "avg != 100").unwrap(),
            parse("http_req_duration{step:검색}", "p(99) < 300").unwrap(),
            parse("http_req_failed", "rate < 0.01").unwrap(),
            parse("http_reqs", "count >= 1000").unwrap(),
            parse("http_reqs", "count > 1000").unwrap(),
        ];
        let res = evaluate(&ths, &fake());
        let oks: Vec<bool> = res.iter().map(|r| r.ok).collect();
        assert_eq!(
            oks,
            [true, false, true, true, false, false, true, true, false]
        );
        assert_eq!(
            res[5],
            ThresholdResult {
                expr: "p(99) < 300".into(),
                metric: "http_req_duration{step:검색}".into(),
                ok: false,
                value: Some(350.0),
                window_s: None,
            }
        );
        let json = serde_json::to_value(&res[0]).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"expr": "p(95) < 200", "metric": "http_req_duration", "ok": true, "value": 180.0})
        );
    }

    #[test]
    fn missing_data_fails_visibly() {
        let ths = [
            parse("checks", "rate > 0.99").unwrap(),
            parse("http_req_duration{step:other}", "p(95) < 1e9").unwrap(),
            parse("http_req_duration", "max != 1").unwrap(),
        ];
        let res = evaluate(&ths, &fake());
        for r in &res {
            assert!(!r.ok, "{r:?}");
            assert_eq!(r.value, None);
        }
        let json = serde_json::to_string(&res[0]).unwrap();
        assert_eq!(
            json,
            r#"{"expr":"rate > 0.99","metric":"checks","ok":false,"value":null}"#
        );
    }

    #[test]
    fn nan_never_passes() {
        let res = evaluate(&[parse("vus", "value != 5").unwrap()], &fake());
        assert!(!res[0].ok);
        assert!(!Comparison::Eq.holds(f64::NAN, f64::NAN));
        assert!(Comparison::Eq.holds(-0.0, 0.0));
        assert!(Comparison::Le.holds(0.1 + 0.2, 0.30000000000000004));
        assert!(!Comparison::Lt.holds(0.1 + 0.2, 0.30000000000000004));
        assert!(Comparison::Gt.holds(f64::INFINITY, f64::MAX));
    }
}
