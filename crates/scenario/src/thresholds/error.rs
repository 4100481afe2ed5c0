//! The reasons a threshold or metric key is rejected.

use crate::metric_catalog::MetricKind;

/// Why a threshold or metric key was rejected. Every message names the offending part
/// and says how to fix it, because users read these in CI logs, not in a debugger.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ThresholdError {
    /// The metric key has no name before its tags (or is empty).
    #[error("empty metric name in `{key}`; write a metric such as `http_req_duration`, optionally with tags: `http_req_duration{{step:search}}`")]
    EmptyMetric {
        /// The key as given.
        key: String,
    },
    /// The metric name is not one pado measures.
    #[error("unknown metric `{name}`; {hint}")]
    UnknownMetric {
        /// The name as given.
        name: String,
        /// A close known name, or the list of known names.
        hint: String,
    },
    /// The `{tag:value,...}` part of a metric key is malformed.
    #[error("invalid tag filter in `{key}`: {reason}")]
    InvalidTags {
        /// The key as given.
        key: String,
        /// What is wrong and how to write it.
        reason: String,
    },
    /// A tag filter pado's data cannot answer for this metric (a latency per
    /// status, say): refused with the reason rather than never having data.
    #[error("`{metric}{{{tag}:...}}` cannot be measured: {reason}")]
    TagNotApplicable {
        /// The metric name.
        metric: String,
        /// The tag.
        tag: String,
        /// Why, and what to write instead.
        reason: String,
    },
    /// The expression is empty or blank.
    #[error("empty threshold expression; write e.g. `{example}`")]
    EmptyExpression {
        /// A valid expression for the metric.
        example: &'static str,
    },
    /// The expression starts without an aggregation (e.g. `< 200`).
    #[error("missing aggregation in `{expr}`; write e.g. `{example}`")]
    MissingAggregation {
        /// The expression as given.
        expr: String,
        /// A valid expression for the metric.
        example: &'static str,
    },
    /// The aggregation is not one of k6's.
    #[error("unknown aggregation `{found}`; {hint}")]
    UnknownAggregation {
        /// The aggregation as written.
        found: String,
        /// A close known aggregation, or the allowed ones.
        hint: String,
    },
    /// `p(N)` with a missing, non-numeric or out-of-range rank.
    #[error("invalid percentile `{found}`: {reason}")]
    InvalidPercentile {
        /// The percentile as written.
        found: String,
        /// What is wrong with the rank.
        reason: String,
    },
    /// A known aggregation that k6 does not allow on this kind of metric.
    #[error("`{aggregation}` does not apply to {kind} metric {metric}; use {allowed}")]
    AggregationNotAllowed {
        /// The aggregation, canonical spelling.
        aggregation: String,
        /// The metric's kind.
        kind: MetricKind,
        /// The metric name.
        metric: String,
        /// The aggregations allowed on this kind.
        allowed: &'static str,
    },
    /// Nothing that looks like an operator follows the aggregation.
    #[error(
        "missing comparison operator after `{after}` in `{expr}`; use one of <, <=, >, >=, ==, !="
    )]
    MissingOperator {
        /// The expression as given.
        expr: String,
        /// The aggregation after which an operator was expected.
        after: String,
    },
    /// Operator characters that do not form a valid operator (e.g. `=`, `=<`).
    #[error("invalid comparison operator `{found}` in `{expr}`; {hint}")]
    InvalidOperator {
        /// The expression as given.
        expr: String,
        /// The operator as written.
        found: String,
        /// The operator probably meant.
        hint: String,
    },
    /// The expression ends after the operator.
    #[error("missing number after `{operator}` in `{expr}`; write e.g. `{example}`")]
    MissingValue {
        /// The expression as given.
        expr: String,
        /// The operator as written.
        operator: String,
        /// A valid expression for the metric.
        example: &'static str,
    },
    /// The bound is not a plain finite number (e.g. `200ms`, `1%`, `abc`).
    #[error("invalid number `{found}` in `{expr}`; {hint}")]
    InvalidValue {
        /// The expression as given.
        expr: String,
        /// The bound as written.
        found: String,
        /// How to write it as a plain number.
        hint: String,
    },
    /// Extra text after a complete expression.
    #[error("unexpected `{found}` after the number in `{expr}`; {hint}")]
    TrailingInput {
        /// The expression as given.
        expr: String,
        /// The extra text.
        found: String,
        /// How to write it instead.
        hint: String,
    },
}
