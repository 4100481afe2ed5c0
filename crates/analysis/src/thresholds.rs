//! Pass/fail thresholds in k6 syntax: parsing and evaluation.
//!
//! Users carry thresholds over from k6, so the accepted syntax is k6's:
//!
//! ```text
//! thresholds:
//!   http_req_duration: ["p(95) < 200", "avg < 100"]
//!   http_req_failed: ["rate < 0.01"]
//!   "http_req_duration{step:search}": ["p(99) < 300"]
//! ```
//!
//! and on the command line `--threshold 'p(95) < 200'` (metric defaults to
//! [`DEFAULT_CLI_METRIC`]) or `--threshold 'http_req_failed: rate < 0.01'`.
//!
//! Parsing is strict and every error says which part is wrong and how to fix it,
//! because a threshold that silently never matches would let a regression pass CI.
//! The parser works on arbitrary input without panicking.
//!
//! Evaluation is decoupled from storage through [`MetricSource`], so the same rules
//! serve a live run, a result directory or a test double.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::metric_catalog::{self, MetricInfo, MetricKind};

/// Metric a command-line threshold applies to when it names none, so that the most
/// common case (`--threshold 'p(95) < 200'`) needs no metric name. Its unit is ms.
pub const DEFAULT_CLI_METRIC: &str = "http_req_duration";

/// The statistic of a metric a threshold compares, named as in k6.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Aggregation {
    /// `avg`: arithmetic mean of a trend.
    Avg,
    /// `min`: smallest value of a trend or gauge.
    Min,
    /// `max`: largest value of a trend or gauge.
    Max,
    /// `med`: median of a trend (same as `p(50)`).
    Med,
    /// `p(N)`: N-th percentile of a trend, `0 <= N <= 100` (fractional ranks such as
    /// `p(99.9)` are allowed).
    Percentile(f64),
    /// `count`: total of a counter.
    Count,
    /// `rate`: fraction of non-zero samples for a rate metric, or total per second
    /// for a counter.
    Rate,
    /// `value`: last value of a gauge.
    Value,
}

impl Aggregation {
    /// Whether k6 allows this aggregation on a metric of `kind`; thresholds that fail
    /// this are rejected at parse time rather than evaluating to nonsense.
    pub fn applies_to(&self, kind: MetricKind) -> bool {
        use Aggregation as A;
        match kind {
            MetricKind::Trend => {
                matches!(self, A::Avg | A::Min | A::Max | A::Med | A::Percentile(_))
            }
            MetricKind::Rate => matches!(self, A::Rate),
            MetricKind::Counter => matches!(self, A::Count | A::Rate),
            MetricKind::Gauge => matches!(self, A::Value | A::Min | A::Max),
        }
    }
}

impl fmt::Display for Aggregation {
    /// Writes the k6 spelling (`avg`, `p(95)`, ...), so messages and reports echo
    /// what users type.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Aggregation::Avg => f.write_str("avg"),
            Aggregation::Min => f.write_str("min"),
            Aggregation::Max => f.write_str("max"),
            Aggregation::Med => f.write_str("med"),
            Aggregation::Percentile(p) => write!(f, "p({p})"),
            Aggregation::Count => f.write_str("count"),
            Aggregation::Rate => f.write_str("rate"),
            Aggregation::Value => f.write_str("value"),
        }
    }
}

/// The comparison operator of a threshold. k6 also spells equality `===`; it is
/// accepted as [`Comparison::Eq`] (and `!==` as [`Comparison::Ne`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Comparison {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==` (exact f64 equality)
    Eq,
    /// `!=` (exact f64 inequality)
    Ne,
}

impl Comparison {
    /// The operator as written in canonical form, for messages and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Comparison::Lt => "<",
            Comparison::Le => "<=",
            Comparison::Gt => ">",
            Comparison::Ge => ">=",
            Comparison::Eq => "==",
            Comparison::Ne => "!=",
        }
    }

    /// Whether `value <op> bound` holds, with exact IEEE-754 comparisons (no epsilon:
    /// `==` means bit-for-bit equal numbers, `-0 == 0`). A NaN value never passes,
    /// not even `!=`, because a threshold must not pass on an undefined statistic.
    pub fn holds(self, value: f64, bound: f64) -> bool {
        if value.is_nan() {
            return false;
        }
        match self {
            Comparison::Lt => value < bound,
            Comparison::Le => value <= bound,
            Comparison::Gt => value > bound,
            Comparison::Ge => value >= bound,
            Comparison::Eq => value == bound,
            Comparison::Ne => value != bound,
        }
    }
}

impl fmt::Display for Comparison {
    /// Writes the canonical operator, e.g. `<=`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One parsed threshold: "aggregation of metric (filtered by tags) compared with a
/// bound". Produced by [`parse`], [`parse_object`] or [`parse_cli`]; evaluated by
/// [`evaluate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The expression as the user wrote it, trimmed of surrounding whitespace (e.g.
    /// `p(95) < 200`), so results quote the user's own words.
    pub source: String,
    /// The k6 metric name, always one of [`metric_catalog::all`].
    pub metric: String,
    /// Tag filter from `{step:search,status:200}`, in the order written; empty when
    /// the threshold applies to the whole metric.
    pub tags: Vec<(String, String)>,
    /// Which statistic is compared.
    pub aggregation: Aggregation,
    /// How it is compared.
    pub comparison: Comparison,
    /// The number it is compared with, in the metric's unit (ms for trends).
    pub bound: f64,
    /// k6's `abortOnFail`: stop the run as soon as this threshold fails.
    pub abort_on_fail: bool,
}

impl Threshold {
    /// The metric key in canonical form, `metric` or `metric{k:v,...}`, so results
    /// group by the same key however the user spaced it. Values that could not be
    /// read back unquoted are written as `"..."` with `\` and `"` escaped;
    /// [`parse_metric_key`] reads the result back to the same metric and tags.
    pub fn metric_key(&self) -> String {
        if self.tags.is_empty() {
            return self.metric.clone();
        }
        let mut out = self.metric.clone();
        out.push('{');
        for (i, (k, v)) in self.tags.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(k);
            out.push(':');
            push_tag_value(&mut out, v);
        }
        out.push('}');
        out
    }

    /// Whether an observed value satisfies this threshold (see [`Comparison::holds`]).
    pub fn passes(&self, value: f64) -> bool {
        self.comparison.holds(value, self.bound)
    }
}

impl fmt::Display for Threshold {
    /// Writes the command-line form `metric{tags}: expression`, which [`parse_cli`]
    /// reads back, so a threshold can be echoed in a reproducible command line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.metric_key(), self.source)
    }
}

fn push_tag_value(out: &mut String, v: &str) {
    let needs_quotes =
        v.is_empty() || v.trim() != v || v.starts_with(['"', '\'']) || v.contains([',', '}']);
    if !needs_quotes {
        out.push_str(v);
        return;
    }
    out.push('"');
    for ch in v.chars() {
        if ch == '"' || ch == '\\' {
            out.push('\\');
        }
        out.push(ch);
    }
    out.push('"');
}

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

/// Parses a metric key such as `http_req_duration` or
/// `http_req_duration{step:search,status:200}` into the metric name and its tag
/// filter, checking the name against [`metric_catalog`].
///
/// Tags are `name:value` pairs separated by `,`. Values are taken up to the next `,`
/// or `}` and trimmed, may contain any UTF-8 (`{step:검색}`) and `:` (URLs); a value
/// that needs `,`, `}`, outer whitespace or is empty is quoted with `"` or `'`
/// (inside quotes, `\"`, `\'` and `\\` are escapes, other backslashes are literal).
/// A tag name may appear only once.
pub fn parse_metric_key(key: &str) -> Result<(String, Vec<(String, String)>), ThresholdError> {
    let (info, tags) = parse_key(key)?;
    Ok((info.name.to_string(), tags))
}

/// Parses one threshold in file form: `metric_key` is the map key (`metric{tags}`),
/// `expr` one entry of its list (`p(95) < 200`). Same as
/// [`parse_object`]`(metric_key, expr, false)`.
pub fn parse(metric_key: &str, expr: &str) -> Result<Threshold, ThresholdError> {
    parse_object(metric_key, expr, false)
}

/// Parses k6's object form `{ threshold: "p(95)<200", abortOnFail: true }`: the
/// caller extracts the two fields (and rejects unsupported ones such as
/// `delayAbortEval`, if it wants to) and passes them here.
pub fn parse_object(
    metric_key: &str,
    expr: &str,
    abort_on_fail: bool,
) -> Result<Threshold, ThresholdError> {
    let (info, tags) = parse_key(metric_key)?;
    let (aggregation, comparison, bound) = parse_expr(info, expr)?;
    Ok(Threshold {
        source: expr.trim().to_string(),
        metric: info.name.to_string(),
        tags,
        aggregation,
        comparison,
        bound,
        abort_on_fail,
    })
}

/// Parses a `--threshold` argument: either a bare expression (`p(95) < 200`, applied
/// to [`DEFAULT_CLI_METRIC`]) or `metric{tags}: expression`
/// (`http_req_failed: rate < 0.01`). The separating `:` is the first one outside a
/// tag filter. Command-line thresholds never abort the run.
pub fn parse_cli(s: &str) -> Result<Threshold, ThresholdError> {
    match split_cli(s)? {
        Some((key, expr)) => parse(key, expr),
        None => parse(DEFAULT_CLI_METRIC, s),
    }
}

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
}

/// Evaluates every threshold against `source`, returning one result per threshold in
/// the same order (so callers can pair results with thresholds, e.g. for
/// `abort_on_fail`). Missing data fails the threshold with `value: None`.
pub fn evaluate(thresholds: &[Threshold], source: &dyn MetricSource) -> Vec<ThresholdResult> {
    thresholds
        .iter()
        .map(|t| {
            let value = source.aggregate(&t.metric, &t.tags, &t.aggregation);
            ThresholdResult {
                expr: t.source.clone(),
                metric: t.metric_key(),
                ok: value.is_some_and(|v| t.passes(v)),
                value,
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------
// Implementation
// ---------------------------------------------------------------------------------

/// A byte position in a string that only ever moves over whole chars.
struct Cursor<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(s: &'a str) -> Self {
        Cursor { s, pos: 0 }
    }

    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let ch = self.peek()?;
        self.pos += ch.len_utf8();
        Some(ch)
    }

    fn take_while(&mut self, mut pred: impl FnMut(char) -> bool) -> &'a str {
        let start = self.pos;
        while let Some(ch) = self.peek() {
            if !pred(ch) {
                break;
            }
            self.pos += ch.len_utf8();
        }
        &self.s[start..self.pos]
    }

    fn skip_ws(&mut self) {
        self.take_while(char::is_whitespace);
    }
}

/// A tag filter, as in [`Threshold::tags`].
type Tags = Vec<(String, String)>;

fn parse_key(key: &str) -> Result<(&'static MetricInfo, Tags), ThresholdError> {
    let k = key.trim();
    let brace = k.find('{');
    let name = match brace {
        Some(i) => k[..i].trim(),
        None => k,
    };
    if name.is_empty() {
        return Err(ThresholdError::EmptyMetric { key: k.to_string() });
    }
    if brace.is_none() && name.contains('}') {
        return Err(ThresholdError::InvalidTags {
            key: k.to_string(),
            reason: "`}` without a matching `{`".to_string(),
        });
    }
    let info = metric_catalog::lookup(name).ok_or_else(|| ThresholdError::UnknownMetric {
        name: name.to_string(),
        hint: suggest_metric(name),
    })?;
    let Some(i) = brace else {
        return Ok((info, Vec::new()));
    };
    let invalid = |reason: String| ThresholdError::InvalidTags {
        key: k.to_string(),
        reason,
    };
    let body = &k[i + 1..];
    let (tags, used) = parse_tag_block(body).map_err(invalid)?;
    let rest = body[used..].trim();
    if !rest.is_empty() {
        return Err(invalid(format!("unexpected `{rest}` after `}}`")));
    }
    Ok((info, tags))
}

const MISSING_CLOSE: &str = "missing closing `}`";

/// Parses the text after `{` up to and including the matching `}`; returns the tags
/// and the number of bytes consumed, or a reason for [`ThresholdError::InvalidTags`].
fn parse_tag_block(s: &str) -> Result<(Tags, usize), String> {
    let mut c = Cursor::new(s);
    let mut tags: Vec<(String, String)> = Vec::new();
    loop {
        c.skip_ws();
        match c.peek() {
            None => return Err(MISSING_CLOSE.to_string()),
            Some('}') if tags.is_empty() => {
                return Err(
                    "empty tag filter `{}`; remove the braces or write `{name:value}`".to_string(),
                )
            }
            Some('}') => return Err("trailing `,` before `}`".to_string()),
            Some(',') => return Err("empty tag before `,`; write `name:value`".to_string()),
            _ => {}
        }
        let name = c
            .take_while(|ch| !matches!(ch, ':' | ',' | '}' | '{' | '"' | '\''))
            .trim();
        match c.peek() {
            Some(':') => {}
            None => return Err(MISSING_CLOSE.to_string()),
            Some(',' | '}') => {
                return Err(format!("tag `{name}` has no value; write `{name}:value`"));
            }
            Some(ch) => return Err(format!("unexpected `{ch}` in tag name `{name}`")),
        }
        if name.is_empty() {
            return Err("empty tag name before `:`; write `name:value`".to_string());
        }
        if name.contains(char::is_whitespace) {
            return Err(format!("tag name `{name}` contains whitespace"));
        }
        c.bump(); // ':'
        c.skip_ws();
        let value = match c.peek() {
            Some(q @ ('"' | '\'')) => {
                c.bump();
                let mut v = String::new();
                loop {
                    match c.bump() {
                        None => {
                            return Err(format!(
                                "unterminated quoted value of tag `{name}`; close it with {q}"
                            ))
                        }
                        Some(ch) if ch == q => break,
                        Some('\\') => match c.peek() {
                            Some(e @ ('\\' | '"' | '\'')) => {
                                c.bump();
                                v.push(e);
                            }
                            _ => v.push('\\'),
                        },
                        Some(ch) => v.push(ch),
                    }
                }
                c.skip_ws();
                match c.peek() {
                    Some(',' | '}') => {}
                    None => return Err(MISSING_CLOSE.to_string()),
                    Some(ch) => {
                        return Err(format!(
                            "unexpected `{ch}` after the quoted value of tag `{name}`; separate tags with `,`"
                        ))
                    }
                }
                v
            }
            _ => {
                let v = c.take_while(|ch| ch != ',' && ch != '}').trim();
                if c.peek().is_none() {
                    return Err(MISSING_CLOSE.to_string());
                }
                if v.is_empty() {
                    return Err(format!(
                        "tag `{name}` has no value; write `{name}:value` (or `{name}:\"\"` for an empty value)"
                    ));
                }
                v.to_string()
            }
        };
        if tags.iter().any(|(k, _)| k == name) {
            return Err(format!("tag `{name}` is given twice"));
        }
        tags.push((name.to_string(), value));
        match c.bump() {
            Some('}') => return Ok((tags, c.pos)),
            Some(',') => continue,
            _ => return Err(MISSING_CLOSE.to_string()),
        }
    }
}

/// Splits a CLI threshold at the first `:` outside a tag filter; `None` when there is
/// no such `:` (bare expression).
fn split_cli(s: &str) -> Result<Option<(&str, &str)>, ThresholdError> {
    let mut c = Cursor::new(s);
    while let Some(ch) = c.bump() {
        match ch {
            ':' => {
                let colon = c.pos - 1;
                return Ok(Some((&s[..colon], &s[c.pos..])));
            }
            '{' => {
                let (_, used) =
                    parse_tag_block(c.rest()).map_err(|reason| ThresholdError::InvalidTags {
                        key: s.trim().to_string(),
                        reason,
                    })?;
                c.pos += used;
            }
            _ => {}
        }
    }
    Ok(None)
}

fn example_for(kind: MetricKind) -> &'static str {
    match kind {
        MetricKind::Trend => "p(95) < 200",
        MetricKind::Rate => "rate < 0.01",
        MetricKind::Counter => "count > 0",
        MetricKind::Gauge => "value < 100",
    }
}

fn allowed_for(kind: MetricKind) -> &'static str {
    match kind {
        MetricKind::Trend => "avg, min, max, med or p(N)",
        MetricKind::Rate => "rate",
        MetricKind::Counter => "count or rate",
        MetricKind::Gauge => "value, min or max",
    }
}

const SIMPLE_AGGREGATIONS: [(&str, Aggregation); 7] = [
    ("avg", Aggregation::Avg),
    ("min", Aggregation::Min),
    ("max", Aggregation::Max),
    ("med", Aggregation::Med),
    ("count", Aggregation::Count),
    ("rate", Aggregation::Rate),
    ("value", Aggregation::Value),
];

fn simple_aggregation(name: &str) -> Option<Aggregation> {
    SIMPLE_AGGREGATIONS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, a)| *a)
}

fn parse_expr(
    info: &MetricInfo,
    raw: &str,
) -> Result<(Aggregation, Comparison, f64), ThresholdError> {
    let expr = raw.trim();
    let example = example_for(info.kind);
    if expr.is_empty() {
        return Err(ThresholdError::EmptyExpression { example });
    }
    let mut c = Cursor::new(expr);

    // Aggregation: a name, optionally followed by `( ... )`.
    let name = c.take_while(|ch| !ch.is_whitespace() && !"<>=!()".contains(ch));
    if name.is_empty() {
        return Err(ThresholdError::MissingAggregation {
            expr: expr.to_string(),
            example,
        });
    }
    let after_name = c.pos;
    c.skip_ws();
    let args = if c.peek() == Some('(') {
        c.bump();
        let inner = c.take_while(|ch| ch != ')');
        if c.bump().is_none() {
            let found = expr[..c.pos].trim_end().to_string();
            let reason = "missing closing `)`".to_string();
            return Err(if name == "p" {
                ThresholdError::InvalidPercentile { found, reason }
            } else {
                ThresholdError::UnknownAggregation {
                    found,
                    hint: reason,
                }
            });
        }
        Some(inner)
    } else {
        c.pos = after_name;
        None
    };
    let written = &expr[..c.pos];
    let aggregation = match (name, args, simple_aggregation(name)) {
        ("p", Some(inner), _) => Aggregation::Percentile(parse_percentile(written, inner)?),
        ("p", None, _) => {
            return Err(ThresholdError::UnknownAggregation {
                found: written.to_string(),
                hint: "a percentile needs its rank in parentheses, e.g. `p(95)`".to_string(),
            })
        }
        (_, None, Some(a)) => a,
        (_, Some(_), Some(_)) => {
            return Err(ThresholdError::UnknownAggregation {
                found: written.to_string(),
                hint: format!("`{name}` takes no argument; write `{name}`"),
            })
        }
        (_, _, None) => {
            return Err(ThresholdError::UnknownAggregation {
                found: written.to_string(),
                hint: suggest_aggregation(name, args, info),
            })
        }
    };
    if !aggregation.applies_to(info.kind) {
        return Err(ThresholdError::AggregationNotAllowed {
            aggregation: aggregation.to_string(),
            kind: info.kind,
            metric: info.name.to_string(),
            allowed: allowed_for(info.kind),
        });
    }

    // Operator.
    c.skip_ws();
    let op = c.take_while(|ch| "<>=!".contains(ch));
    let comparison = match op {
        "" => {
            let unicode = match c.peek() {
                Some('≤') => Some("<="),
                Some('≥') => Some(">="),
                Some('≠') => Some("!="),
                _ => None,
            };
            if let (Some(ascii), Some(found)) = (unicode, c.peek()) {
                return Err(ThresholdError::InvalidOperator {
                    expr: expr.to_string(),
                    found: found.to_string(),
                    hint: format!("did you mean `{ascii}`?"),
                });
            }
            return Err(ThresholdError::MissingOperator {
                expr: expr.to_string(),
                after: written.trim_end().to_string(),
            });
        }
        "<" => Comparison::Lt,
        "<=" => Comparison::Le,
        ">" => Comparison::Gt,
        ">=" => Comparison::Ge,
        "==" | "===" => Comparison::Eq,
        "!=" | "!==" => Comparison::Ne,
        other => {
            let hint = match other {
                "=" => "use `==` to test equality".to_string(),
                "=<" => "did you mean `<=`?".to_string(),
                "=>" => "did you mean `>=`?".to_string(),
                "<>" | "!" => "did you mean `!=`?".to_string(),
                _ => "use one of <, <=, >, >=, ==, !=".to_string(),
            };
            return Err(ThresholdError::InvalidOperator {
                expr: expr.to_string(),
                found: other.to_string(),
                hint,
            });
        }
    };

    // Bound.
    c.skip_ws();
    let token = c.take_while(|ch| !ch.is_whitespace());
    if token.is_empty() {
        return Err(ThresholdError::MissingValue {
            expr: expr.to_string(),
            operator: op.to_string(),
            example,
        });
    }
    let invalid = |found: &str, hint: String| ThresholdError::InvalidValue {
        expr: expr.to_string(),
        found: found.to_string(),
        hint,
    };
    let len = scan_number(token);
    if len == 0 {
        return Err(invalid(
            token,
            format!(
                "expected a plain number such as `200`, `0.01`, `-5` or `1e3`, e.g. `{example}`"
            ),
        ));
    }
    let number = &token[..len];
    let Some(bound) = number.parse::<f64>().ok().filter(|v| v.is_finite()) else {
        return Err(invalid(token, "the number is out of range".to_string()));
    };
    let suffix = &token[len..];
    if !suffix.is_empty() {
        return Err(invalid(token, unit_hint(number, bound, suffix, info)));
    }
    c.skip_ws();
    let rest = c.rest();
    if !rest.is_empty() {
        if is_unit_word(rest) {
            return Err(invalid(
                &format!("{number} {rest}"),
                unit_hint(number, bound, rest, info),
            ));
        }
        let joined = ["&&", "||", "and ", "or ", ","]
            .iter()
            .any(|j| rest.to_ascii_lowercase().starts_with(j));
        let hint = if joined {
            "write each condition as its own threshold, e.g. [\"p(95) < 200\", \"avg < 100\"]"
                .to_string()
        } else {
            format!("a threshold is `aggregation operator number`, e.g. `{example}`")
        };
        return Err(ThresholdError::TrailingInput {
            expr: expr.to_string(),
            found: rest.to_string(),
            hint,
        });
    }
    Ok((aggregation, comparison, bound))
}

fn parse_percentile(written: &str, inner: &str) -> Result<f64, ThresholdError> {
    let rank = inner.trim();
    let err = |reason: String| ThresholdError::InvalidPercentile {
        found: written.to_string(),
        reason,
    };
    if rank.is_empty() {
        return Err(err("missing rank; write e.g. `p(95)`".to_string()));
    }
    let p = parse_number(rank).ok_or_else(|| {
        err(format!(
            "rank `{rank}` is not a number; write e.g. `p(95)` or `p(99.9)`"
        ))
    })?;
    if !(0.0..=100.0).contains(&p) {
        return Err(err(format!("rank must be between 0 and 100, got {rank}")));
    }
    // Normalise -0 so that it prints as `p(0)`.
    Ok(if p == 0.0 { 0.0 } else { p })
}

/// Length in bytes of the longest prefix of `s` that is a decimal number:
/// `[+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?`. 0 if none.
fn scan_number(s: &str) -> usize {
    let b = s.as_bytes();
    let at = |i: usize| b.get(i).copied();
    let digits_from = |mut i: usize| {
        while at(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
        i
    };
    let mut i = 0;
    if matches!(at(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let int_end = digits_from(i);
    let int_digits = int_end - i;
    i = int_end;
    let mut frac_digits = 0;
    if at(i) == Some(b'.') {
        let frac_end = digits_from(i + 1);
        frac_digits = frac_end - (i + 1);
        if int_digits + frac_digits > 0 {
            i = frac_end;
        }
    }
    if int_digits + frac_digits == 0 {
        return 0;
    }
    if matches!(at(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(at(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let exp_end = digits_from(j);
        if exp_end > j {
            i = exp_end;
        }
    }
    i
}

/// A whole string as a finite decimal number (see [`scan_number`]).
fn parse_number(s: &str) -> Option<f64> {
    if scan_number(s) != s.len() {
        return None;
    }
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

const UNIT_WORDS: [&str; 14] = [
    "ms", "s", "sec", "us", "µs", "μs", "m", "min", "%", "b", "kb", "mb", "gb", "bytes",
];

fn is_unit_word(s: &str) -> bool {
    UNIT_WORDS.contains(&s.to_lowercase().as_str())
}

/// `number * 10^exp`, computed on the decimal text when possible so that `1.1s`
/// suggests `1100`, not `1100.0000000000002`.
fn scaled(number: &str, value: f64, exp: i32) -> String {
    let decimal = if number.contains(['e', 'E']) {
        None
    } else {
        format!("{number}e{exp}")
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
    };
    let v = decimal.unwrap_or(value * 10f64.powi(exp));
    format!("{v}")
}

fn unit_hint(number: &str, value: f64, suffix: &str, info: &MetricInfo) -> String {
    let unit = suffix.trim().to_lowercase();
    let ms = info.unit == "ms";
    let exponent = suffix.strip_prefix(['e', 'E']);
    if exponent.is_some_and(|e| {
        e.chars()
            .all(|c| c.is_ascii_digit() || c == '+' || c == '-')
    }) {
        return format!("incomplete exponent; write e.g. `{number}e3`");
    }
    match unit.as_str() {
        "%" if info.kind == MetricKind::Rate => format!(
            "rates are fractions between 0 and 1; write `{}` for {number}%",
            scaled(number, value, -2)
        ),
        "ms" if ms => format!("durations are plain milliseconds; write `{number}`"),
        "s" | "sec" if ms => format!(
            "durations are plain milliseconds; write `{}` for {number}s",
            scaled(number, value, 3)
        ),
        "us" | "µs" | "μs" if ms => format!(
            "durations are plain milliseconds; write `{}` for {number}{unit}",
            scaled(number, value, -3)
        ),
        "m" | "min" if ms => {
            let v = scaled(number, value, 3)
                .parse::<f64>()
                .unwrap_or(value * 1e3)
                * 60.0;
            format!("durations are plain milliseconds; write `{v}` for {number}{unit}")
        }
        _ if is_unit_word(&unit) || unit.chars().all(char::is_alphabetic) => {
            let in_unit = match info.unit {
                "" => String::new(),
                u => format!(" (in {u})"),
            };
            format!(
                "units are not allowed; write a plain number{in_unit} for {} {}",
                info.kind, info.name
            )
        }
        _ => format!("unexpected `{suffix}` after `{number}`; write a plain number such as `200`"),
    }
}

fn suggest_aggregation(name: &str, args: Option<&str>, info: &MetricInfo) -> String {
    let base = name.split('{').next().unwrap_or(name);
    if let Some(m) = metric_catalog::lookup(base) {
        return format!(
            "`{name}` is a metric; separate it from the expression with `:`, e.g. `{}: {}`",
            m.name,
            example_for(m.kind)
        );
    }
    let lower = name.to_lowercase();
    let did_you_mean = |s: String| format!("did you mean `{s}`?");
    // `p95`, `P99.9`, `p95(` ...
    if let Some(rank) = lower.strip_prefix('p') {
        if parse_number(rank).is_some() {
            return did_you_mean(format!("p({rank})"));
        }
    }
    if let Some(inner) = args {
        if lower == "p" || matches!(lower.as_str(), "percentile" | "pct" | "perc" | "quantile") {
            return did_you_mean(format!("p({})", inner.trim()));
        }
    }
    let alias = match lower.as_str() {
        "average" | "mean" => Some("avg"),
        "median" => Some("med"),
        "minimum" => Some("min"),
        "maximum" => Some("max"),
        "sum" | "total" => Some("count"),
        "last" | "val" => Some("value"),
        _ => None,
    };
    if let Some(a) = alias {
        return did_you_mean(a.to_string());
    }
    if simple_aggregation(&lower).is_some() {
        return did_you_mean(lower);
    }
    // Closest name by edit distance, preferring ones that apply to this metric.
    let limit = if lower.chars().count() <= 4 { 1 } else { 2 };
    let best = SIMPLE_AGGREGATIONS
        .iter()
        .map(|(n, a)| (edit_distance(&lower, n), !a.applies_to(info.kind), *n))
        .min();
    if let Some((d, _, n)) = best {
        if d <= limit {
            return did_you_mean(n.to_string());
        }
    }
    format!(
        "use {} for {} metric {}",
        allowed_for(info.kind),
        info.kind,
        info.name
    )
}

fn suggest_metric(name: &str) -> String {
    let lower = name.to_lowercase().replace('-', "_");
    let limit = (name.chars().count() / 3).clamp(1, 3);
    let len = lower.chars().count();
    // The distance is at least the length difference, so skip hopeless candidates.
    let best = metric_catalog::all()
        .iter()
        .filter(|m| m.name.len().abs_diff(len) <= limit)
        .map(|m| (edit_distance(&lower, m.name), m.name))
        .min();
    match best {
        Some((d, n)) if d <= limit => format!("did you mean `{n}`?"),
        _ => {
            let names: Vec<&str> = metric_catalog::all().iter().map(|m| m.name).collect();
            format!("known metrics are {}", names.join(", "))
        }
    }
}

/// Levenshtein distance over chars. Inputs longer than 64 chars are cut (they are
/// never close to a known name anyway), bounding the cost on garbage input.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().take(64).collect();
    let b: Vec<char> = b.chars().take(64).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(key: &str, expr: &str) -> String {
        parse(key, expr).unwrap_err().to_string()
    }

    fn assert_err(key: &str, expr: &str, fragments: &[&str]) {
        let msg = err(key, expr);
        for f in fragments {
            assert!(
                msg.contains(f),
                "`{key}` / `{expr}`: message {msg:?} lacks {f:?}"
            );
        }
    }

    fn tags(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parses_basic_file_form() {
        let t = parse("http_req_duration", "p(95) < 200").unwrap();
        assert_eq!(
            t,
            Threshold {
                source: "p(95) < 200".into(),
                metric: "http_req_duration".into(),
                tags: vec![],
                aggregation: Aggregation::Percentile(95.0),
                comparison: Comparison::Lt,
                bound: 200.0,
                abort_on_fail: false,
            }
        );
        let t = parse("http_req_failed", "rate < 0.01").unwrap();
        assert_eq!(
            (t.aggregation, t.comparison, t.bound),
            (Aggregation::Rate, Comparison::Lt, 0.01)
        );
        let t = parse("checks", "rate>0.99").unwrap();
        assert_eq!(
            (t.aggregation, t.comparison, t.bound),
            (Aggregation::Rate, Comparison::Gt, 0.99)
        );
    }

    #[test]
    fn whitespace_and_numbers() {
        let cases: &[(&str, Aggregation, Comparison, f64)] = &[
            (
                "p(95)<200",
                Aggregation::Percentile(95.0),
                Comparison::Lt,
                200.0,
            ),
            (
                "  p( 95 ) < 200.5 ",
                Aggregation::Percentile(95.0),
                Comparison::Lt,
                200.5,
            ),
            (
                "p (99.9)<=1e3",
                Aggregation::Percentile(99.9),
                Comparison::Le,
                1000.0,
            ),
            (
                "p(0) >= -5",
                Aggregation::Percentile(0.0),
                Comparison::Ge,
                -5.0,
            ),
            (
                "p(100)>.5",
                Aggregation::Percentile(100.0),
                Comparison::Gt,
                0.5,
            ),
            ("avg==1.", Aggregation::Avg, Comparison::Eq, 1.0),
            ("avg === 3", Aggregation::Avg, Comparison::Eq, 3.0),
            ("med != +2E-1", Aggregation::Med, Comparison::Ne, 0.2),
            ("min\t<\t1", Aggregation::Min, Comparison::Lt, 1.0),
            ("max < 0.01", Aggregation::Max, Comparison::Lt, 0.01),
        ];
        for (expr, agg, cmp, bound) in cases {
            let t = parse("http_req_duration", expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
            assert_eq!(
                (t.aggregation, t.comparison, t.bound),
                (*agg, *cmp, *bound),
                "{expr}"
            );
            assert_eq!(t.source, expr.trim());
        }
    }

    #[test]
    fn aggregations_per_kind() {
        assert!(parse("http_reqs", "count > 100").is_ok());
        assert!(parse("http_reqs", "rate > 50").is_ok());
        assert!(parse("data_received", "count < 1e9").is_ok());
        assert!(parse("vus", "value <= 10").is_ok());
        assert!(parse("vus_max", "max < 100").is_ok());
        assert!(parse("vus", "min > 0").is_ok());
        assert!(parse("iteration_duration", "med < 1000").is_ok());

        assert_err(
            "http_req_duration",
            "rate < 0.1",
            &["`rate` does not apply to trend metric http_req_duration; use avg, min, max, med or p(N)"],
        );
        assert_err(
            "http_req_failed",
            "p(95) < 1",
            &["`p(95)` does not apply to rate metric http_req_failed; use rate"],
        );
        assert_err(
            "http_reqs",
            "avg < 1",
            &["counter metric http_reqs; use count or rate"],
        );
        assert_err(
            "vus",
            "count < 1",
            &["gauge metric vus; use value, min or max"],
        );
        assert_err("checks", "value > 0", &["use rate"]);
    }

    #[test]
    fn object_form_carries_abort_on_fail() {
        let t = parse_object("http_req_failed", "rate<0.01", true).unwrap();
        assert!(t.abort_on_fail);
        assert!(!parse("http_req_failed", "rate<0.01").unwrap().abort_on_fail);
        assert!(parse_object("http_req_failed", "rate<<0.01", true).is_err());
    }

    #[test]
    fn invalid_aggregations() {
        assert_err(
            "http_req_duration",
            "p95 < 200",
            &["unknown aggregation `p95`; did you mean `p(95)`?"],
        );
        assert_err("http_req_duration", "p99.9<1", &["did you mean `p(99.9)`?"]);
        assert_err(
            "http_req_duration",
            "P(95) < 200",
            &["`P(95)`", "did you mean `p(95)`?"],
        );
        assert_err(
            "http_req_duration",
            "percentile(90) < 200",
            &["did you mean `p(90)`?"],
        );
        assert_err(
            "http_req_duration",
            "average < 200",
            &["did you mean `avg`?"],
        );
        assert_err(
            "http_req_duration",
            "median < 200",
            &["did you mean `med`?"],
        );
        assert_err("http_req_duration", "AVG < 200", &["did you mean `avg`?"]);
        assert_err("http_req_duration", "avgg < 200", &["did you mean `avg`?"]);
        assert_err("http_req_failed", "rat < 0.1", &["did you mean `rate`?"]);
        assert_err(
            "http_req_duration",
            "foo < 200",
            &[
                "unknown aggregation `foo`",
                "use avg, min, max, med or p(N) for trend metric http_req_duration",
            ],
        );
        assert_err("http_req_duration", "p < 200", &["rank in parentheses"]);
        assert_err(
            "http_req_duration",
            "avg() < 200",
            &["`avg` takes no argument"],
        );
        assert_err(
            "http_req_duration",
            "< 200",
            &["missing aggregation in `< 200`", "p(95) < 200"],
        );
        assert_err("http_req_duration", "   ", &["empty threshold expression"]);
        assert_err("http_req_failed", "", &["write e.g. `rate < 0.01`"]);
    }

    #[test]
    fn invalid_percentiles() {
        assert_err(
            "http_req_duration",
            "p(101) < 1",
            &["invalid percentile `p(101)`", "between 0 and 100, got 101"],
        );
        assert_err("http_req_duration", "p(-1) < 1", &["between 0 and 100"]);
        assert_err("http_req_duration", "p() < 1", &["missing rank"]);
        assert_err(
            "http_req_duration",
            "p(x) < 1",
            &["rank `x` is not a number"],
        );
        assert_err("http_req_duration", "p(nan) < 1", &["not a number"]);
        assert_err("http_req_duration", "p(95 < 1", &["missing closing `)`"]);
    }

    #[test]
    fn invalid_operators_and_values() {
        assert_err(
            "http_req_duration",
            "p(95) 200",
            &["missing comparison operator after `p(95)`"],
        );
        assert_err(
            "http_req_duration",
            "avg",
            &["missing comparison operator after `avg`"],
        );
        assert_err(
            "http_req_duration",
            "avg = 200",
            &["invalid comparison operator `=`", "use `==`"],
        );
        assert_err("http_req_duration", "avg => 200", &["did you mean `>=`?"]);
        assert_err("http_req_duration", "avg =< 200", &["did you mean `<=`?"]);
        assert_err("http_req_duration", "avg <> 200", &["did you mean `!=`?"]);
        assert_err(
            "http_req_duration",
            "avg <<< 200",
            &["use one of <, <=, >, >=, ==, !="],
        );
        assert_err(
            "http_req_duration",
            "avg <",
            &["missing number after `<`", "p(95) < 200"],
        );
        assert_err(
            "http_req_duration",
            "avg < abc",
            &["invalid number `abc`", "plain number"],
        );
        assert_err("http_req_duration", "avg < inf", &["invalid number `inf`"]);
        assert_err("http_req_duration", "avg < NaN", &["invalid number `NaN`"]);
        assert_err("http_req_duration", "avg < 1e999", &["out of range"]);
        assert_err(
            "http_req_duration",
            "p(95) < 200ms",
            &["invalid number `200ms`", "write `200`"],
        );
        assert_err(
            "http_req_duration",
            "p(95) < 200 ms",
            &["invalid number `200 ms`", "write `200`"],
        );
        assert_err(
            "http_req_duration",
            "p(95) < 1.1s",
            &["write `1100` for 1.1s"],
        );
        assert_err("http_req_duration", "p(95) < 2m", &["write `120000`"]);
        assert_err("http_req_duration", "p(95) < 500us", &["write `0.5`"]);
        assert_err(
            "http_req_failed",
            "rate < 1%",
            &["fractions between 0 and 1", "write `0.01` for 1%"],
        );
        assert_err(
            "data_sent",
            "count < 10kb",
            &["units are not allowed", "(in bytes)"],
        );
        assert_err(
            "http_req_duration",
            "avg < 1.2.3",
            &["unexpected `.3` after `1.2`"],
        );
        assert_err(
            "http_req_duration",
            "avg < 1 2",
            &["unexpected `2` after the number"],
        );
        assert_err(
            "http_req_duration",
            "p(95) < 200 && avg < 100",
            &["each condition as its own threshold"],
        );
    }

    #[test]
    fn metric_key_tags() {
        assert_eq!(
            parse_metric_key("http_req_duration").unwrap(),
            ("http_req_duration".to_string(), vec![])
        );
        assert_eq!(
            parse_metric_key(" http_req_duration { step : search , status:200 } ").unwrap(),
            (
                "http_req_duration".to_string(),
                tags(&[("step", "search"), ("status", "200")])
            )
        );
        assert_eq!(
            parse_metric_key("http_req_duration{url:http://example.com:8080/a?b=c}")
                .unwrap()
                .1,
            tags(&[("url", "http://example.com:8080/a?b=c")])
        );
        assert_eq!(
            parse_metric_key(r#"checks{name:"a, b}", other:'it''s', e:"", esc:"q\"\\x\y"}"#).unwrap_err().to_string(),
            "invalid tag filter in `checks{name:\"a, b}\", other:'it''s', e:\"\", esc:\"q\\\"\\\\x\\y\"}`: unexpected `'` after the quoted value of tag `other`; separate tags with `,`"
        );
        assert_eq!(
            parse_metric_key(
                r#"checks{name:"a, b}", other:'it\'s', e:"", esc:"q\"\\x\y", plain:it's}"#
            )
            .unwrap()
            .1,
            tags(&[
                ("name", "a, b}"),
                ("other", "it's"),
                ("e", ""),
                ("esc", "q\"\\x\\y"),
                ("plain", "it's")
            ])
        );
    }

    #[test]
    fn hangul_tag_values() {
        let (m, t) =
            parse_metric_key("http_req_duration{step:검색,페이지:\"장바구니 담기\"}").unwrap();
        assert_eq!(m, "http_req_duration");
        assert_eq!(t, tags(&[("step", "검색"), ("페이지", "장바구니 담기")]));
        let th = parse_cli("http_req_duration{step:결제}: p(99) < 300").unwrap();
        assert_eq!(th.tags, tags(&[("step", "결제")]));
        assert_eq!(th.metric_key(), "http_req_duration{step:결제}");
        let e = parse_metric_key("http_req_duration{단계:}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("tag `단계` has no value"), "{e}");
    }

    #[test]
    fn invalid_metric_keys() {
        let e = |k: &str| parse_metric_key(k).unwrap_err().to_string();
        assert_eq!(
            e("http_req_duraton"),
            "unknown metric `http_req_duraton`; did you mean `http_req_duration`?"
        );
        assert!(e("HTTP_REQ_FAILED").contains("did you mean `http_req_failed`?"));
        assert!(e("http-reqs").contains("did you mean `http_reqs`?"));
        assert!(e("vu").contains("did you mean `vus`?"));
        assert!(e("latency").contains("known metrics are http_req_duration, "));
        assert!(e("").contains("empty metric name"));
        assert!(e("{step:a}").contains("empty metric name"));
        assert!(e("http_req_duration{step:a").contains("missing closing `}`"));
        assert!(e("http_req_duration{}").contains("empty tag filter `{}`"));
        assert!(e("http_req_duration{step}").contains("tag `step` has no value"));
        assert!(e("http_req_duration{:a}").contains("empty tag name"));
        assert!(e("http_req_duration{a:b,}").contains("trailing `,`"));
        assert!(e("http_req_duration{a:b,,c:d}").contains("empty tag before `,`"));
        assert!(e("http_req_duration{a:1,a:2}").contains("tag `a` is given twice"));
        assert!(e("http_req_duration{a:b}x").contains("unexpected `x` after `}`"));
        assert!(e("http_req_duration{a:\"b}").contains("unterminated quoted value of tag `a`"));
        assert!(e("http_req_duration{a b:c}").contains("contains whitespace"));
        assert!(e("http_req_duration}").contains("`}` without a matching `{`"));
        // The metric is checked before the tags, so a typo is reported first.
        assert!(e("http_req_duraton{").contains("did you mean"));
    }

    #[test]
    fn metric_key_round_trips() {
        let mut t = parse("http_req_duration", "avg < 1").unwrap();
        t.tags = tags(&[
            ("a", "plain"),
            ("b", ""),
            ("c", " padded "),
            ("d", "x,y}z"),
            ("e", "\"quoted\""),
            ("f", "back\\slash\\"),
            ("g", "'single"),
            ("h", "검색:결제"),
        ]);
        let key = t.metric_key();
        assert_eq!(
            parse_metric_key(&key).unwrap(),
            (t.metric.clone(), t.tags.clone()),
            "{key}"
        );
        let again = parse_cli(&t.to_string()).unwrap();
        assert_eq!(again, t);
    }

    #[test]
    fn cli_form() {
        let t = parse_cli("p(95) < 200").unwrap();
        assert_eq!(t.metric, DEFAULT_CLI_METRIC);
        assert_eq!(t.source, "p(95) < 200");
        assert!(t.tags.is_empty());

        let t = parse_cli("http_req_failed: rate < 0.01").unwrap();
        assert_eq!(
            (t.metric.as_str(), t.aggregation, t.bound),
            ("http_req_failed", Aggregation::Rate, 0.01)
        );
        assert_eq!(t.source, "rate < 0.01");

        let t = parse_cli("http_req_duration{step:search}: p(99)<300").unwrap();
        assert_eq!(t.tags, tags(&[("step", "search")]));
        assert_eq!(t.aggregation, Aggregation::Percentile(99.0));
        assert_eq!(t.to_string(), "http_req_duration{step:search}: p(99)<300");

        let t = parse_cli("http_req_duration{url:\"http://x:1/a,b\"}:avg<1").unwrap();
        assert_eq!(t.tags, tags(&[("url", "http://x:1/a,b")]));
        assert!(!t.abort_on_fail);

        let e = |s: &str| parse_cli(s).unwrap_err().to_string();
        assert!(e("http_req_failed rate < 0.01").contains(
            "`http_req_failed` is a metric; separate it from the expression with `:`, e.g. `http_req_failed: rate < 0.01`"
        ));
        assert!(e("http_req_duration{step:a} p(95)<1").contains("is a metric"));
        assert!(e("http_req_duration{step:a: p(95)<1").contains("missing closing `}`"));
        assert!(
            e("http_req_failed:").contains("empty threshold expression; write e.g. `rate < 0.01`")
        );
        assert!(e("http_req_duraton: p(95)<1").contains("did you mean `http_req_duration`?"));
        assert!(e("p(95) < 200ms").contains("write `200`"));
        assert!(e("http_req_failed: p(95) < 1").contains("does not apply to rate metric"));
    }

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

    #[test]
    fn display_of_aggregations() {
        assert_eq!(Aggregation::Percentile(95.0).to_string(), "p(95)");
        assert_eq!(Aggregation::Percentile(99.9).to_string(), "p(99.9)");
        assert_eq!(
            parse("http_req_duration", "p(-0)<1")
                .unwrap()
                .aggregation
                .to_string(),
            "p(0)"
        );
        assert_eq!(Comparison::Ge.to_string(), ">=");
    }

    /// Tiny xorshift64 generator so the fuzz test needs no dependency and is
    /// reproducible.
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    const ALPHABET: &[char] = &[
        'p',
        '(',
        ')',
        '<',
        '>',
        '=',
        '!',
        '{',
        '}',
        ':',
        ',',
        '"',
        '\'',
        '\\',
        ' ',
        '\t',
        '.',
        '0',
        '1',
        '5',
        '9',
        'e',
        'E',
        '+',
        '-',
        '_',
        'a',
        'v',
        'g',
        'm',
        'i',
        'n',
        'x',
        'd',
        'r',
        't',
        'c',
        'o',
        'u',
        's',
        '%',
        '검',
        '색',
        'µ',
        '\u{0}',
        '\u{200b}',
        '\u{10FFFF}',
        '&',
        '|',
    ];

    const SEEDS: &[&str] = &[
        "p(95) < 200",
        "http_req_duration{step:search}: p(99)<300",
        "http_req_failed: rate < 0.01",
        "checks{name:\"a,b\",x:'y'}: rate > 0.99",
        "vus: value <= 1e3",
        "http_reqs{단계:검색}: count >= -5",
        "avg===.5",
    ];

    fn random_string(rng: &mut XorShift) -> String {
        let mut s: String = if rng.below(2) == 0 {
            SEEDS[rng.below(SEEDS.len())].to_string()
        } else {
            String::new()
        };
        // Mutate: insert, delete or replace characters (on char boundaries).
        for _ in 0..rng.below(8) + 1 {
            let mut chars: Vec<char> = s.chars().collect();
            let ch = if rng.below(8) == 0 {
                char::from_u32(rng.below(0x11_0000) as u32).unwrap_or('?')
            } else {
                ALPHABET[rng.below(ALPHABET.len())]
            };
            let at = rng.below(chars.len() + 1);
            match rng.below(3) {
                0 => chars.insert(at, ch),
                1 if at < chars.len() => {
                    chars.remove(at);
                }
                _ if at < chars.len() => chars[at] = ch,
                _ => chars.push(ch),
            }
            s = chars.into_iter().collect();
        }
        s
    }

    #[test]
    fn never_panics_on_garbage() {
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        let source = fake();
        let mut accepted = 0;
        for _ in 0..10_000 {
            let s = random_string(&mut rng);
            let split = rng.below(s.chars().count() + 1);
            let (a, b) = s.split_at(s.char_indices().nth(split).map_or(s.len(), |(i, _)| i));
            let results = [
                parse_cli(&s),
                parse(a, b),
                parse(DEFAULT_CLI_METRIC, &s),
                parse_object(&s, &s, true),
            ];
            let _ = parse_metric_key(&s).map_err(|e| e.to_string());
            for r in results {
                match r {
                    Ok(t) => {
                        accepted += 1;
                        let info = metric_catalog::lookup(&t.metric).expect("known metric");
                        assert!(t.aggregation.applies_to(info.kind), "{s:?}");
                        assert!(t.bound.is_finite(), "{s:?}");
                        assert_eq!(
                            parse_metric_key(&t.metric_key()).unwrap(),
                            (t.metric.clone(), t.tags.clone()),
                            "{s:?}"
                        );
                        let back = parse_cli(&t.to_string())
                            .unwrap_or_else(|e| panic!("{s:?} -> {t}: {e}"));
                        assert_eq!(
                            back,
                            Threshold {
                                abort_on_fail: false,
                                ..t.clone()
                            },
                            "{s:?}"
                        );
                        let _ = evaluate(&[t], &source);
                    }
                    Err(e) => {
                        assert!(!e.to_string().is_empty());
                    }
                }
            }
        }
        assert!(
            accepted > 100,
            "the generator should also produce valid thresholds ({accepted})"
        );
    }
}
