//! Pass/fail thresholds in k6 syntax: the language and its parser.
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
//! Parsing lives here, beside the scenario file it is part of, so that a threshold
//! error names the file, line and field like every other scenario error
//! ([`from_config`]) and the file is read once. Evaluating a parsed [`Threshold`]
//! against measurements is `pado_analysis::thresholds`'.
//!
//! Parsing is strict and every error says which part is wrong and how to fix it,
//! because a threshold that silently never matches would let a regression pass CI.
//! The parser works on arbitrary input without panicking.
//!
//! The parts: `key` reads metric keys and tag filters, `expr` the
//! `aggregation operator number` expression, `hint` the "did you mean" suggestions
//! of the errors ([`ThresholdError`], in `error`), `cursor` the char-safe position
//! both parsers move.

use std::fmt;

use crate::error::{Diagnostic, ScenarioError};
use crate::line_index::LineIndex;
use crate::metric_catalog::MetricKind;
use crate::Config;

mod cursor;
mod error;
mod expr;
mod hint;
mod key;
mod scope;
mod tag_rules;

#[cfg(test)]
mod garbage_tests;
#[cfg(test)]
mod k6_parity_tests;
#[cfg(test)]
mod tests;

pub use error::ThresholdError;
pub use scope::{Scope, ScopeKind, StageRef, STAGE_TAG, WINDOW_TAG};

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
/// `pado_analysis::thresholds::evaluate`.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The expression as the user wrote it, trimmed of surrounding whitespace (e.g.
    /// `p(95) < 200`), so results quote the user's own words.
    pub source: String,
    /// The k6 metric name, always one of [`crate::metric_catalog::all`].
    pub metric: String,
    /// Tag filter from `{step:search,method:GET}`, in the order written; empty when
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
    /// The part of the run it is judged on (`{stage:2}`, `{window:60s-120s}`);
    /// `None` for the whole run, as in k6.
    pub scope: Option<Scope>,
}

impl Threshold {
    /// The metric key in canonical form, `metric` or `metric{k:v,...}`, so results
    /// group by the same key however the user spaced it. Values that could not be
    /// read back unquoted are written as `"..."` with `\` and `"` escaped;
    /// [`parse_metric_key`] reads the result back to the same metric and tags.
    pub fn metric_key(&self) -> String {
        if self.tags.is_empty() && self.scope.is_none() {
            return self.metric.clone();
        }
        let mut out = self.metric.clone();
        out.push('{');
        let scope = self
            .scope
            .as_ref()
            .map(|s| (s.tag().to_string(), s.text.clone()));
        for (i, (k, v)) in self.tags.iter().chain(scope.as_ref()).enumerate() {
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

/// Whether every `}` of `v` closes an earlier `{` and every `{` is closed: such a
/// value reads back unquoted (`{name:http://${}.com}`).
fn braces_balanced(v: &str) -> bool {
    let mut depth = 0usize;
    for ch in v.chars() {
        match ch {
            '{' => depth += 1,
            '}' if depth == 0 => return false,
            '}' => depth -= 1,
            _ => {}
        }
    }
    depth == 0
}

fn push_tag_value(out: &mut String, v: &str) {
    let needs_quotes = v.is_empty()
        || v.trim() != v
        || v.starts_with(['"', '\''])
        || v.contains(',')
        || !braces_balanced(v);
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

/// Parses a metric key such as `http_req_duration` or
/// `http_reqs{step:search,status:200}` into the metric name and its tag
/// filter, checking the name against [`crate::metric_catalog`].
///
/// Tags are `name:value` pairs separated by `,`. Values are taken up to the next `,`
/// or `}` and trimmed, may contain any UTF-8 (`{step:검색}`) and `:` (URLs); a value
/// that needs `,`, `}`, outer whitespace or is empty is quoted with `"` or `'`
/// (inside quotes, `\"`, `\'` and `\\` are escapes, other backslashes are literal).
/// A tag name may appear only once.
///
/// A scope (`stage:`, `window:`) selects seconds, not series: it is checked and left
/// out of the tags returned ([`Threshold::scope`] holds it).
pub fn parse_metric_key(key: &str) -> Result<(String, Vec<(String, String)>), ThresholdError> {
    let (info, mut tags) = key::parse_key(key)?;
    scope::take_scope(&mut tags).map_err(|reason| ThresholdError::InvalidTags {
        key: key.trim().to_string(),
        reason,
    })?;
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
    let (info, mut tags) = key::parse_key(metric_key)?;
    let scope = scope::take_scope(&mut tags).map_err(|reason| ThresholdError::InvalidTags {
        key: metric_key.trim().to_string(),
        reason,
    })?;
    let (aggregation, comparison, bound) = expr::parse_expr(info, expr)?;
    Ok(Threshold {
        source: expr.trim().to_string(),
        metric: info.name.to_string(),
        tags,
        aggregation,
        comparison,
        bound,
        abort_on_fail,
        scope,
    })
}

/// Parses a `--threshold` argument: either a bare expression (`p(95) < 200`, applied
/// to [`DEFAULT_CLI_METRIC`]) or `metric{tags}: expression`
/// (`http_req_failed: rate < 0.01`). The separating `:` is the first one outside a
/// tag filter. Command-line thresholds never abort the run.
pub fn parse_cli(s: &str) -> Result<Threshold, ThresholdError> {
    match key::split_cli(s)? {
        Some((key, expr)) => parse(key, expr),
        None => parse(DEFAULT_CLI_METRIC, s),
    }
}

/// Parses every threshold of a loaded scenario (its own and those the command line
/// added to it), collecting every problem. An error names the file and the line
/// and column of the threshold's key (from `lines`; none in quick mode), the field
/// `thresholds.<metric key>`, the expression and what is wrong with it.
pub fn from_config(
    config: &Config,
    file: &str,
    lines: &LineIndex,
) -> Result<Vec<Threshold>, ScenarioError> {
    let mut parsed = Vec::new();
    let mut problems = Vec::new();
    for (metric, expr, abort) in crate::quick::threshold_list(config) {
        let field = format!("thresholds.{metric}");
        let problem = |message: String, hint: Option<String>| {
            let at = lines.locate(&field);
            Diagnostic {
                file: file.to_string(),
                line: at.map(|p| p.0),
                column: at.map(|p| p.1),
                message,
                field: field.clone(),
                hint,
            }
        };
        match parse_object(&metric, &expr, abort) {
            Ok(mut t) => match resolve_scope(&mut t, config) {
                Ok(()) => parsed.push(t),
                Err((why, hint)) => problems.push(problem(format!("`{expr}`: {why}"), hint)),
            },
            Err(e) => problems.push(problem(format!("`{expr}`: {e}"), None)),
        }
    }
    if problems.is_empty() {
        Ok(parsed)
    } else {
        Err(ScenarioError::Invalid(problems))
    }
}

/// Places a scoped threshold's stage on the run's clock (its window in seconds from
/// the start, which `run.json` keeps so reports need not read the file again), and
/// refuses what a scope cannot do: a stage that does not exist, and
/// `abort_on_fail`, since a scope is judged when the run ends. A reason and a hint.
fn resolve_scope(t: &mut Threshold, config: &Config) -> Result<(), (String, Option<String>)> {
    let Some(scope) = t.scope.as_mut() else {
        return Ok(());
    };
    if t.abort_on_fail {
        return Err((
            format!(
                "`abort_on_fail` cannot go with `{}:`: a threshold scoped to a stage or a window is judged when the run ends, over exactly those seconds",
                scope.tag()
            ),
            Some("remove `abort_on_fail`, or add an unscoped threshold with it to stop the run early".into()),
        ));
    }
    let ScopeKind::Stage(stage) = &scope.kind else {
        return Ok(());
    };
    let named = t.tags.iter().find(|(k, _)| k == "scenario").map(|(_, v)| v);
    let scenario = match named {
        Some(n) => config.scenarios.iter().find(|(name, _)| name == n),
        None => config.scenarios.iter().find(|(_, sc)| sc.stages.is_some()),
    };
    let Some((name, sc)) = scenario else {
        return Err(match named {
            Some(n) => (format!("no scenario named `{n}`"), None),
            None => (
                "`stage:` counts the stages of a scenario's `stages:`, and no scenario has them".into(),
                Some("use `window:60s-120s` (seconds from the run's start), or give the scenario `stages:`".into()),
            ),
        });
    };
    let Some(stages) = sc.stages.as_ref() else {
        return Err((
            format!("scenario `{name}` has no `stages:` for `stage:` to count"),
            Some("use `window:60s-120s` (seconds from the run's start)".into()),
        ));
    };
    let index = match stage {
        StageRef::Number(n) if (*n as usize) <= stages.len() => *n as usize - 1,
        StageRef::Number(n) => {
            return Err((
                format!(
                    "stage {n} does not exist: scenario `{name}` has {} (counting from 1)",
                    stages.len()
                ),
                None,
            ))
        }
        StageRef::Name(wanted) => match stages
            .iter()
            .position(|s| s.name.as_deref() == Some(wanted.as_str()))
        {
            Some(i) => i,
            None => {
                let names: Vec<&str> = stages.iter().filter_map(|s| s.name.as_deref()).collect();
                return Err((
                    format!("scenario `{name}` has no stage named `{wanted}`"),
                    Some(if names.is_empty() {
                        format!(
                            "name a stage with `name:` in its `stages:` entry, or count from 1: `stage:1` to `stage:{}`",
                            stages.len()
                        )
                    } else {
                        format!("its named stages: {}", names.join(", "))
                    }),
                ));
            }
        },
    };
    let offset = sc.start_time.map_or(0.0, |d| d.secs());
    let start: f64 = offset
        + stages[..index]
            .iter()
            .map(|s| s.duration.secs())
            .sum::<f64>();
    scope.window_s = Some((start, start + stages[index].duration.secs()));
    Ok(())
}
