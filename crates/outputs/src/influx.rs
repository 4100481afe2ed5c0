//! InfluxDB line protocol: each second one point per series at the second's end
//! (nanosecond timestamps). Counters carry `total` (since the start) and `count`
//! (this second); gauges `value`; `http_req_duration` (and an LLM stream's
//! `llm_ttft`, `llm_itl`, `llm_tpot`) one point per step and second with `count`,
//! `p50`, `p90`, `p95`, `p99`, `max`, `mean` in ms. A k6 script's own metrics
//! are written as [`crate::custom`] says.

use std::fmt::Write as _;

use pado_metrics::CustomKind;

use crate::catalog;
use crate::custom::{CustomPoint, PREFIX};
use crate::state::{Labels, Snapshot};

/// Escape a measurement name, tag key or tag value (commas, spaces, `=`).
fn esc_tag(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            ',' | ' ' | '=' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
}

fn head(out: &mut String, measurement: &str, common: &Labels, labels: &Labels) {
    esc_tag(measurement, out);
    let mut all: Vec<&(String, String)> = common.iter().chain(labels.iter()).collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    for (k, v) in all {
        // Empty tag values are not allowed in line protocol.
        if v.is_empty() {
            continue;
        }
        out.push(',');
        esc_tag(k, out);
        out.push('=');
        esc_tag(v, out);
    }
    out.push(' ');
}

/// The lines of `batch`'s seconds.
pub fn body(batch: &[&Snapshot]) -> Vec<u8> {
    let mut out = String::new();
    for s in batch {
        let ns = s.at_ms as i128 * 1_000_000;
        for p in &s.points {
            head(&mut out, p.metric.base_name(), &s.common, &p.labels);
            match p.metric.kind {
                catalog::MetricKind::Gauge => {
                    let _ = write!(out, "value={}i", p.value as i64);
                }
                _ => {
                    let _ = write!(out, "total={}i,count={}i", p.value as u64, p.delta as u64);
                }
            }
            let _ = writeln!(out, " {ns}");
        }
        for h in &s.histograms {
            let Some(l) = &h.second else { continue };
            head(
                &mut out,
                h.metric.name.trim_end_matches("_seconds"),
                &s.common,
                &h.labels,
            );
            let _ = writeln!(
                out,
                "count={}i,p50={},p90={},p95={},p99={},max={},mean={} {ns}",
                l.count, l.p50_ms, l.p90_ms, l.p95_ms, l.p99_ms, l.max_ms, l.mean_ms
            );
        }
        for c in &s.custom {
            custom_line(&mut out, c, &s.common, ns);
        }
    }
    out.into_bytes()
}

/// A k6 script's metric as one point ([`crate::custom`]); a trend only in a
/// second it had values.
fn custom_line(out: &mut String, c: &CustomPoint, common: &Labels, ns: i128) {
    if c.kind == CustomKind::Trend && c.second.is_none() {
        return;
    }
    head(out, &format!("{PREFIX}{}", c.name), common, &c.labels);
    let _ = match c.kind {
        CustomKind::Counter => write!(out, "total={},count={}", c.sum, c.delta),
        CustomKind::Gauge => write!(out, "value={}", c.last),
        CustomKind::Rate => {
            let rate = if c.count == 0 {
                0.0
            } else {
                c.nonzero as f64 / c.count as f64
            };
            write!(
                out,
                "passes={}i,samples={}i,rate={rate}",
                c.nonzero, c.count
            )
        }
        CustomKind::Trend => {
            let l = c.second.clone().unwrap_or_default();
            write!(
                out,
                "count={}i,p50={},p90={},p95={},p99={},max={},mean={}",
                l.count, l.p50_ms, l.p90_ms, l.p95_ms, l.p99_ms, l.max_ms, l.mean_ms
            )
        }
    };
    let _ = writeln!(out, " {ns}");
}

/// The `Content-Type` of a body.
pub const CONTENT_TYPE: &str = "text/plain; charset=utf-8";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::{labels, second};
    use crate::state::State;

    #[test]
    fn lines_escape_and_count() {
        let mut l = labels();
        l.step_scenarios.insert("a b,c=d".into(), "main".into());
        let mut st = State::new(l);
        let a = st.fold(&second(0, "a b,c=d", 4, 0, 3), 10_000);
        let b = st.fold(&second(1, "검색", 2, 1, 3), 11_000);
        let text = String::from_utf8(body(&[&a, &b])).unwrap();
        assert!(text.contains("step=a\\ b\\,c\\=d"), "{text}");
        assert!(text.contains("step=검색"), "{text}");
        let counts: u64 = text
            .lines()
            .filter(|l| l.starts_with("pado_http_reqs,"))
            .map(|l| {
                let f = l.split(' ').rev().nth(1).unwrap();
                f.split(',')
                    .find_map(|kv| kv.strip_prefix("count="))
                    .unwrap()
                    .trim_end_matches('i')
                    .parse::<u64>()
                    .unwrap()
            })
            .sum();
        assert_eq!(counts, 7);
        assert!(text.contains(" 11000000000\n"));
        assert!(text
            .lines()
            .any(|l| l.starts_with("pado_http_req_duration,") && l.contains("count=3i")));
    }
}
