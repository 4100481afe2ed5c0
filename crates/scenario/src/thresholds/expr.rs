//! The expression of a threshold, `aggregation operator number` (`p(95) < 200`),
//! checked against the kind of its metric.

use super::cursor::Cursor;
use super::hint::{is_unit_word, suggest_aggregation, unit_hint};
use super::{Aggregation, Comparison, ThresholdError};
use crate::metric_catalog::{MetricInfo, MetricKind};

pub(super) fn example_for(kind: MetricKind) -> &'static str {
    match kind {
        MetricKind::Trend => "p(95) < 200",
        MetricKind::Rate => "rate < 0.01",
        MetricKind::Counter => "count > 0",
        MetricKind::Gauge => "value < 100",
    }
}

pub(super) fn allowed_for(kind: MetricKind) -> &'static str {
    match kind {
        MetricKind::Trend => "avg, min, max, med or p(N)",
        MetricKind::Rate => "rate",
        MetricKind::Counter => "count or rate",
        MetricKind::Gauge => "value, min or max",
    }
}

pub(super) const SIMPLE_AGGREGATIONS: [(&str, Aggregation); 7] = [
    ("avg", Aggregation::Avg),
    ("min", Aggregation::Min),
    ("max", Aggregation::Max),
    ("med", Aggregation::Med),
    ("count", Aggregation::Count),
    ("rate", Aggregation::Rate),
    ("value", Aggregation::Value),
];

pub(super) fn simple_aggregation(name: &str) -> Option<Aggregation> {
    SIMPLE_AGGREGATIONS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, a)| *a)
}

/// A threshold's expression read as aggregation, comparison and bound, each part
/// checked with a message that says what to write instead.
pub(super) fn parse_expr(
    info: &MetricInfo,
    raw: &str,
) -> Result<(Aggregation, Comparison, f64), ThresholdError> {
    let expr = raw.trim();
    let example = example_for(info.kind);
    if expr.is_empty() {
        return Err(ThresholdError::EmptyExpression { example });
    }
    let mut c = Cursor::new(expr);
    let (aggregation, written) = parse_aggregation(&mut c, expr, info)?;
    let (comparison, op) = parse_operator(&mut c, expr, written)?;
    let bound = parse_bound(&mut c, expr, op, info)?;
    Ok((aggregation, comparison, bound))
}

/// The aggregation (a name, optionally followed by `( ... )`), checked against the
/// metric's kind; with the text it was written as, for later messages.
fn parse_aggregation<'a>(
    c: &mut Cursor<'a>,
    expr: &'a str,
    info: &MetricInfo,
) -> Result<(Aggregation, &'a str), ThresholdError> {
    let example = example_for(info.kind);
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
    Ok((aggregation, written))
}

/// The comparison operator, with a hint for the ones people write by habit (`=`,
/// `=>`, `<>`, `≤`).
fn parse_operator<'a>(
    c: &mut Cursor<'a>,
    expr: &str,
    written: &str,
) -> Result<(Comparison, &'a str), ThresholdError> {
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
    Ok((comparison, op))
}

/// The bound: a plain number and nothing after it, with a hint when a unit or a
/// second condition follows.
fn parse_bound(
    c: &mut Cursor<'_>,
    expr: &str,
    op: &str,
    info: &MetricInfo,
) -> Result<f64, ThresholdError> {
    let example = example_for(info.kind);
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
    Ok(bound)
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
pub(super) fn parse_number(s: &str) -> Option<f64> {
    if scan_number(s) != s.len() {
        return None;
    }
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}
