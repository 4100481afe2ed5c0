//! A k6 script's own metrics (`Counter`, `Gauge`, `Rate`, `Trend` from
//! `k6/metrics`, and k6's `group_duration`) in the live outputs: each closed
//! second folded into the run's totals per metric and tag set
//! ([`CustomTotals`]), and a [`CustomPoint`] per series that each encoder writes
//! as its format represents that kind:
//!
//! | kind | Prometheus remote write | InfluxDB line protocol | OTLP |
//! |---|---|---|---|
//! | counter | counter `<name>_total` | `total`, `count` (this second) | monotonic sum |
//! | gauge | gauge `<name>` | `value` | gauge |
//! | rate | counters `<name>_passes_total`, `<name>_samples_total` | `passes`, `samples`, `rate` | sums `<name>_passes`, `<name>_samples` |
//! | trend | histogram `<name>_seconds` (time) or `<name>` | this second's `count`, `p50`, `p90`, `p95`, `p99`, `max`, `mean` | histogram |
//!
//! Names: Prometheus and OTLP take `pado_script_` and the script's name with
//! every character other than an ASCII letter, digit or `_` made `_` (their
//! formats, and the collectors behind OTLP, want such names); the name as the
//! script wrote it (Hangul intact) is the `metric` label (attribute). InfluxDB's
//! measurement is `pado_script_` and the name as written (line protocol is
//! UTF-8). A tag is a `tag_<name>` label, its value intact, as a step's tags are.
//!
//! A time trend (`new Trend(name, true)`) is in seconds in the histograms (as
//! `http_req_duration`), with the same bucket bounds; any other trend keeps its
//! own unit, with bounds 1000 times those (1, 2.5, 5 … 120000).

use std::collections::BTreeMap;

use pado_metrics::custom::TREND_SCALE;
use pado_metrics::{CustomKind, CustomStats, SeriesKey};

use crate::catalog::DURATION_BUCKETS_S;
use crate::state::{label_name, Labels, SecondLatency};

/// The prefix of every script metric's name in the outputs: never the same as
/// one of pado's own (`pado_http_reqs_total`...), whatever the script calls it.
pub const PREFIX: &str = "pado_script_";

/// The name of a script's metric in Prometheus and OTLP: [`PREFIX`] and `name`
/// with anything but ASCII letters, digits and `_` made `_`.
pub fn sanitised_name(name: &str) -> String {
    let mut out = String::with_capacity(PREFIX.len() + name.len());
    out.push_str(PREFIX);
    out.extend(
        name.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }),
    );
    out
}

/// A script's metric of one tag set at the end of a second.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomPoint {
    /// The name as the script wrote it.
    pub name: String,
    /// Counter, gauge, rate or trend.
    pub kind: CustomKind,
    /// A trend of times in milliseconds.
    pub is_time: bool,
    /// `metric` (the name as written) and a `tag_<name>` per tag.
    pub labels: Labels,
    /// Adds since the run's start (a rate's samples, a trend's count).
    pub count: u64,
    /// Non-zero adds since the start (a rate's passes).
    pub nonzero: u64,
    /// Sum of the values since the start (a counter's value, a trend's sum in
    /// its own unit).
    pub sum: f64,
    /// A counter's increase in this second.
    pub delta: f64,
    /// A gauge's value (the latest add).
    pub last: f64,
    /// A trend's values at or below each of [`CustomPoint::bounds`], cumulative
    /// from the start (empty for other kinds).
    pub le_counts: Vec<u64>,
    /// This second's trend figures in the trend's unit (ms for a time trend);
    /// `None` when no value was added in the second.
    pub second: Option<SecondLatency>,
}

/// Bounds of a non-time trend's buckets: the time buckets' bounds in ms.
const PLAIN_BOUNDS: [f64; 16] = [
    1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0, 30000.0,
    60000.0, 120000.0,
];

impl CustomPoint {
    /// The bucket bounds of a trend, in its output unit (seconds for a time trend).
    pub fn bounds(&self) -> &'static [f64] {
        if self.is_time {
            &DURATION_BUCKETS_S
        } else {
            &PLAIN_BOUNDS
        }
    }

    /// A trend's sum in its output unit (seconds for a time trend).
    pub fn out_sum(&self) -> f64 {
        if self.is_time {
            self.sum / 1000.0
        } else {
            self.sum
        }
    }

    /// Values in each bucket alone (OTLP's form): one more than the bounds.
    pub fn bucket_counts(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.le_counts.len() + 1);
        let mut prev = 0;
        for &c in &self.le_counts {
            out.push(c.saturating_sub(prev));
            prev = c;
        }
        out.push(self.count.saturating_sub(prev));
        out
    }

    /// The histogram's name in Prometheus and OTLP (with `_seconds` for a time
    /// trend).
    pub fn histogram_name(&self) -> String {
        let mut n = sanitised_name(&self.name);
        if self.is_time {
            n.push_str("_seconds");
        }
        n
    }
}

/// The run's script metrics so far, per name and tags.
#[derive(Debug, Default)]
pub struct CustomTotals {
    totals: BTreeMap<SeriesKey, CustomStats>,
}

impl CustomTotals {
    /// Fold one second's script metrics in and return every series at its end.
    /// Tagged checks (the `checks` rate a tagged `check` also feeds) are left out:
    /// the checks counter already carries every check.
    pub fn fold(&mut self, second: &[CustomStats]) -> Vec<CustomPoint> {
        let mut now: BTreeMap<&SeriesKey, &CustomStats> = BTreeMap::new();
        for c in second.iter().filter(|c| c.key.name != "checks") {
            now.insert(&c.key, c);
            match self.totals.get_mut(&c.key) {
                Some(t) => t.merge(c),
                None => {
                    self.totals.insert(c.key.clone(), c.clone());
                }
            }
        }
        self.totals
            .values()
            .map(|t| point(t, now.get(&t.key).copied()))
            .collect()
    }
}

/// One series' point: the totals `t`, and `now` (this second's adds, if any).
fn point(t: &CustomStats, now: Option<&CustomStats>) -> CustomPoint {
    let mut labels = vec![("metric".to_string(), t.key.name.clone())];
    for (k, v) in &t.key.tags {
        labels.push((format!("tag_{}", label_name(k)), v.clone()));
    }
    let mut p = CustomPoint {
        name: t.key.name.clone(),
        kind: t.kind,
        is_time: t.is_time,
        labels,
        count: t.count,
        nonzero: t.nonzero,
        sum: t.sum,
        delta: now.map_or(0.0, |n| n.sum),
        last: t.last,
        le_counts: Vec::new(),
        second: None,
    };
    if t.kind == CustomKind::Trend {
        // Bounds in the histogram's own units (the values × TREND_SCALE): a time
        // trend's bound is in seconds, its values in ms.
        let scale = if t.is_time { 1000.0 } else { 1.0 } * TREND_SCALE;
        p.le_counts = p
            .bounds()
            .iter()
            .map(|b| t.hist.count_at_or_below_us((b * scale).round() as u64))
            .collect();
        p.second = now.filter(|n| n.count > 0).map(|n| {
            let q = |x: f64| n.quantile(x).unwrap_or(0.0);
            SecondLatency {
                count: n.count,
                p50_ms: q(0.5),
                p90_ms: q(0.9),
                p95_ms: q(0.95),
                p99_ms: q(0.99),
                max_ms: n.max,
                mean_ms: n.avg().unwrap_or(0.0),
            }
        });
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A metric `name` of `kind` with `tags`, the values added at 0 µs.
    pub(crate) fn stats(
        name: &str,
        kind: CustomKind,
        is_time: bool,
        tags: &[(&str, &str)],
        values: &[f64],
    ) -> CustomStats {
        let key = SeriesKey {
            name: name.into(),
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let mut s = CustomStats::new(key, kind, is_time);
        for v in values {
            s.add(*v, 0);
        }
        s
    }

    #[test]
    fn names_keep_ascii_and_the_label_keeps_the_name_as_written() {
        assert_eq!(sanitised_name("login_time"), "pado_script_login_time");
        assert_eq!(sanitised_name("지연 시간.p"), "pado_script_______p");
        let mut t = CustomTotals::default();
        let p = t.fold(&[stats(
            "지연",
            CustomKind::Counter,
            false,
            &[("단계", "로그인")],
            &[1.0],
        )]);
        assert_eq!(
            p[0].labels,
            [
                ("metric".to_string(), "지연".to_string()),
                ("tag___".to_string(), "로그인".to_string())
            ]
        );
    }

    /// Totals since the start and this second's part, for each kind; the tagged
    /// checks are not a series of their own.
    #[test]
    fn seconds_fold_into_totals_with_this_seconds_part() {
        let mut t = CustomTotals::default();
        let a = t.fold(&[
            stats("c", CustomKind::Counter, false, &[], &[1.0, 2.5]),
            stats("g", CustomKind::Gauge, false, &[], &[7.0]),
            stats("r", CustomKind::Rate, false, &[], &[1.0, 0.0, 1.0]),
            stats("checks", CustomKind::Rate, false, &[("check", "x")], &[1.0]),
            stats("t", CustomKind::Trend, true, &[], &[2.0, 20.0, 200.0]),
        ]);
        assert_eq!(a.len(), 4, "{a:?}");
        let b = t.fold(&[
            stats("c", CustomKind::Counter, false, &[], &[4.0]),
            stats("r", CustomKind::Rate, false, &[], &[0.0]),
        ]);
        let get = |v: &[CustomPoint], n: &str| v.iter().find(|p| p.name == n).unwrap().clone();
        let c = get(&b, "c");
        assert_eq!((c.sum, c.delta, c.count), (7.5, 4.0, 3));
        let g = get(&b, "g");
        assert_eq!((g.last, g.delta), (7.0, 0.0));
        let r = get(&b, "r");
        assert_eq!((r.nonzero, r.count), (2, 4));
        let tr = get(&a, "t");
        // 2 ms, 20 ms, 200 ms against bounds in seconds: ≤ 2.5 ms holds one,
        // ≤ 25 ms two, ≤ 250 ms three.
        let at = |bound: f64| {
            let i = DURATION_BUCKETS_S.iter().position(|b| *b == bound).unwrap();
            tr.le_counts[i]
        };
        assert_eq!((at(0.001), at(0.0025), at(0.025), at(0.25)), (0, 1, 2, 3));
        assert_eq!(tr.bucket_counts().iter().sum::<u64>(), 3);
        assert!((tr.out_sum() - 0.222).abs() < 1e-12);
        let s = tr.second.clone().unwrap();
        assert_eq!((s.count, s.max_ms, s.mean_ms), (3, 200.0, 74.0));
        // Nothing added to the trend in the second after: no figures of its own.
        assert!(get(&b, "t").second.is_none());
        assert_eq!(get(&b, "t").count, 3);
    }

    #[test]
    fn a_plain_trend_keeps_its_unit() {
        let mut t = CustomTotals::default();
        let p = t.fold(&[stats(
            "bytes",
            CustomKind::Trend,
            false,
            &[],
            &[3.0, 3000.0],
        )]);
        assert_eq!(p[0].histogram_name(), "pado_script_bytes");
        let i = PLAIN_BOUNDS.iter().position(|b| *b == 5.0).unwrap();
        assert_eq!(p[0].le_counts[i], 1);
        assert_eq!(p[0].le_counts[PLAIN_BOUNDS.len() - 1], 2);
        assert_eq!(p[0].out_sum(), 3003.0);
    }
}

/// Each format's encoding of a planted second: the values received are the
/// planted ones.
#[cfg(test)]
mod encoded {
    use pado_metrics::{CustomKind, SecondRecord};

    use super::tests::stats;
    use crate::state::tests::labels;
    use crate::state::{Snapshot, State};

    /// Two seconds: counter `주문` (tag 단계=결제) +2 then +3, gauge `queue` 4 then
    /// 9, rate `ok` 1,0,1 then 1, time trend `login` 10 and 30 ms then nothing.
    fn planted() -> Vec<Snapshot> {
        let mut st = State::new(labels());
        let mut a = SecondRecord::new(0);
        a.custom = vec![
            stats(
                "주문",
                CustomKind::Counter,
                false,
                &[("단계", "결제")],
                &[2.0],
            ),
            stats("queue", CustomKind::Gauge, false, &[], &[4.0]),
            stats("ok", CustomKind::Rate, false, &[], &[1.0, 0.0, 1.0]),
            stats("login", CustomKind::Trend, true, &[], &[10.0, 30.0]),
        ];
        let mut b = SecondRecord::new(1);
        b.custom = vec![
            stats(
                "주문",
                CustomKind::Counter,
                false,
                &[("단계", "결제")],
                &[3.0],
            ),
            stats("queue", CustomKind::Gauge, false, &[], &[9.0]),
            stats("ok", CustomKind::Rate, false, &[], &[1.0]),
        ];
        vec![st.fold(&a, 10_000), st.fold(&b, 11_000)]
    }

    #[test]
    fn prometheus_series_carry_the_planted_values() {
        let s = planted();
        let wr = crate::prometheus::decode(&crate::prometheus::body(&[&s[0], &s[1]])).unwrap();
        let last = |name: &str, extra: Option<(&str, &str)>| -> f64 {
            let t = wr
                .timeseries
                .iter()
                .find(|t| {
                    t.labels
                        .iter()
                        .any(|l| l.name == "__name__" && l.value == name)
                        && extra.is_none_or(|(k, v)| {
                            t.labels.iter().any(|l| l.name == k && l.value == v)
                        })
                })
                .unwrap_or_else(|| panic!("no {name}"));
            t.samples.last().unwrap().value
        };
        assert_eq!(last("pado_script____total", None), 5.0);
        assert_eq!(last("pado_script_queue", None), 9.0);
        assert_eq!(last("pado_script_ok_passes_total", None), 3.0);
        assert_eq!(last("pado_script_ok_samples_total", None), 4.0);
        let h = "pado_script_login_seconds";
        assert_eq!(last(&format!("{h}_count"), None), 2.0);
        assert!((last(&format!("{h}_sum"), None) - 0.04).abs() < 1e-12);
        assert_eq!(last(&format!("{h}_bucket"), Some(("le", "0.01"))), 1.0);
        assert_eq!(last(&format!("{h}_bucket"), Some(("le", "0.05"))), 2.0);
        // The name as written, and the tag, in labels; Hangul intact.
        let order = wr
            .timeseries
            .iter()
            .find(|t| t.labels.iter().any(|l| l.value == "pado_script____total"))
            .unwrap();
        assert!(order
            .labels
            .iter()
            .any(|l| l.name == "metric" && l.value == "주문"));
        assert!(order
            .labels
            .iter()
            .any(|l| l.name == "tag___" && l.value == "결제"));
    }

    #[test]
    fn influx_lines_carry_the_planted_values() {
        let s = planted();
        let text = String::from_utf8(crate::influx::body(&[&s[0], &s[1]])).unwrap();
        let line = |prefix: &str, ts: &str| {
            text.lines()
                .find(|l| l.starts_with(prefix) && l.ends_with(ts))
                .unwrap_or_else(|| panic!("no {prefix} at {ts} in\n{text}"))
                .to_string()
        };
        let c = line("pado_script_주문,", " 11000000000");
        assert!(
            c.contains("tag___=결제") && c.contains(" total=5,count=3 "),
            "{c}"
        );
        assert!(line("pado_script_queue,", " 11000000000").contains(" value=9 "));
        assert!(
            line("pado_script_ok,", " 11000000000").contains(" passes=3i,samples=4i,rate=0.75 ")
        );
        let t = line("pado_script_login,", " 10000000000");
        assert!(
            t.contains("count=2i,") && t.contains(",max=30,mean=20 "),
            "{t}"
        );
        // No value in the second second: no trend point for it.
        assert!(!text
            .lines()
            .any(|l| l.starts_with("pado_script_login,") && l.ends_with(" 11000000000")));
    }

    #[test]
    fn otlp_metrics_carry_the_planted_values() {
        use crate::otlp::Data;
        let s = planted();
        let req = crate::otlp::decode(&crate::otlp::body(&[&s[0], &s[1]])).unwrap();
        let ms = &req.resource_metrics[0].scope_metrics[0].metrics;
        let get = |n: &str| {
            ms.iter()
                .find(|m| m.name == n)
                .unwrap_or_else(|| panic!("no {n}"))
        };
        let Some(Data::Sum(c)) = &get("pado_script___").data else {
            panic!("counter not a sum")
        };
        assert!(c.is_monotonic);
        assert_eq!(c.data_points.last().unwrap().as_double, Some(5.0));
        assert!(c.data_points[0]
            .attributes
            .iter()
            .any(|a| a.key == "metric" && a.value.as_ref().unwrap().string_value == "주문"));
        let Some(Data::Gauge(g)) = &get("pado_script_queue").data else {
            panic!("gauge")
        };
        assert_eq!(g.data_points.last().unwrap().as_double, Some(9.0));
        let Some(Data::Sum(p)) = &get("pado_script_ok_passes").data else {
            panic!("passes")
        };
        assert_eq!(p.data_points.last().unwrap().as_double, Some(3.0));
        let Some(Data::Sum(n)) = &get("pado_script_ok_samples").data else {
            panic!("samples")
        };
        assert_eq!(n.data_points.last().unwrap().as_double, Some(4.0));
        let Some(Data::Histogram(h)) = &get("pado_script_login_seconds").data else {
            panic!("histogram")
        };
        let last = h.data_points.last().unwrap();
        assert_eq!(last.count, 2);
        assert_eq!(last.bucket_counts.iter().sum::<u64>(), 2);
        assert!((last.sum.unwrap() - 0.04).abs() < 1e-12);
    }
}
