//! The suggestions in threshold errors: units written after a number, misspelt
//! aggregations and metric names ("did you mean").

use super::expr::{
    allowed_for, example_for, parse_number, simple_aggregation, SIMPLE_AGGREGATIONS,
};
use crate::metric_catalog::{self, MetricInfo, MetricKind};

const UNIT_WORDS: [&str; 14] = [
    "ms", "s", "sec", "us", "µs", "μs", "m", "min", "%", "b", "kb", "mb", "gb", "bytes",
];

pub(super) fn is_unit_word(s: &str) -> bool {
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

pub(super) fn unit_hint(number: &str, value: f64, suffix: &str, info: &MetricInfo) -> String {
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

pub(super) fn suggest_aggregation(name: &str, args: Option<&str>, info: &MetricInfo) -> String {
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

pub(super) fn suggest_metric(name: &str) -> String {
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

/// Levenshtein distance over chars ([`strsim::levenshtein`]). Inputs longer than 64
/// chars are cut (they are never close to a known name anyway), bounding the cost on
/// garbage input.
fn edit_distance(a: &str, b: &str) -> usize {
    let cut = |s: &str| -> String { s.chars().take(64).collect() };
    strsim::levenshtein(&cut(a), &cut(b))
}
