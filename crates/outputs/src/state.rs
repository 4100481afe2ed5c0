//! The run as the outputs send it: each closed second folded into cumulative
//! counters and histograms (so a second that could not be delivered loses
//! resolution, never counts: the next delivered second carries the totals), and a
//! [`Snapshot`] of every series at that second for the encoders.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use pado_metrics::{
    ErrorKind, LatencyHistogram, Phase, SecondRecord, SeriesKey, SeriesStats, OTHER_TAG,
    TAG_SERIES_CAP,
};

use crate::catalog::{self, Metric, DURATION_BUCKETS_S};

/// What every series of a run is labelled with.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunLabels {
    /// The run (its result directory's name: unique per run).
    pub run: String,
    /// A segment of a split test: `i/N`, so each generator writes series of its own.
    pub generator: Option<String>,
    /// The scenario each step belongs to (by step name).
    pub step_scenarios: BTreeMap<String, String>,
}

/// Labels of one series, besides the common ones.
pub type Labels = Vec<(String, String)>;

/// A counter or gauge of one series at the end of a second.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Which metric.
    pub metric: &'static Metric,
    /// Its labels (besides `run` and `generator`).
    pub labels: Labels,
    /// Counters: since the run's start; gauges: at the end of the second.
    pub value: f64,
    /// Counters: this second's increase; gauges: the value.
    pub delta: f64,
}

/// One second's `http_req_duration` of a step, as people read it (milliseconds).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SecondLatency {
    /// Requests timed in the second.
    pub count: u64,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
    /// Mean.
    pub mean_ms: f64,
}

/// A histogram of one series ([`catalog::HTTP_REQ_DURATION`], or an LLM stream's
/// [`catalog::LLM_TTFT`], [`catalog::LLM_ITL`], [`catalog::LLM_TPOT`]), cumulative
/// from the run's start.
#[derive(Clone, Debug, PartialEq)]
pub struct HistPoint {
    /// Which histogram.
    pub metric: &'static Metric,
    /// Its labels (besides `run` and `generator`).
    pub labels: Labels,
    /// Values at or below each of [`DURATION_BUCKETS_S`] (cumulative, as Prometheus's `le`).
    pub le_counts: Vec<u64>,
    /// Values recorded.
    pub count: u64,
    /// Their sum, seconds.
    pub sum_s: f64,
    /// This second alone (`None` when the series had no request in it).
    pub second: Option<SecondLatency>,
}

impl HistPoint {
    /// Values in each bucket alone (OTLP's form): one more than the bounds, the last
    /// above the highest bound.
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
}

/// Every series of the run at the end of one second.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// Second of the run.
    pub t: u32,
    /// Wall time at the end of the second, ms since the Unix epoch.
    pub at_ms: i64,
    /// Wall time of the run's start, ms since the Unix epoch (OTLP's start time).
    pub start_ms: i64,
    /// `run` and `generator`.
    pub common: Labels,
    /// Counters and gauges.
    pub points: Vec<Point>,
    /// Histograms.
    pub histograms: Vec<HistPoint>,
    /// A k6 script's own metrics ([`crate::custom`]).
    pub custom: Vec<crate::custom::CustomPoint>,
}

impl Snapshot {
    /// Sum of [`catalog::HTTP_REQS`] since the start (what tests hold against the
    /// summary).
    pub fn requests_total(&self) -> f64 {
        self.points
            .iter()
            .filter(|p| p.metric.name == catalog::HTTP_REQS.name)
            .map(|p| p.value)
            .sum()
    }
}

/// The cumulative state one output keeps.
#[derive(Debug, Default)]
pub struct State {
    labels: RunLabels,
    start_ms: Option<i64>,
    series: BTreeMap<SeriesKey, SeriesStats>,
    iterations: BTreeMap<String, (u64, u64)>,
    checks: BTreeMap<String, (u64, u64)>,
    admitted: BTreeMap<String, BTreeSet<Vec<(String, String)>>>,
    custom: crate::custom::CustomTotals,
}

/// One histogram of a series, cumulative in Prometheus' buckets, with the closing
/// second's own quantiles when it had values; `None` before any value. `pick`
/// finds the histogram in a series (`None`: the series has none of this kind).
fn histogram_point(
    metric: &'static Metric,
    base: &Labels,
    cum: &SeriesStats,
    now: Option<&SeriesStats>,
    pick: fn(&SeriesStats) -> Option<&LatencyHistogram>,
) -> Option<HistPoint> {
    let h = pick(cum)?;
    if h.count() == 0 {
        return None;
    }
    Some(HistPoint {
        metric,
        labels: base.clone(),
        le_counts: DURATION_BUCKETS_S
            .iter()
            .map(|b| h.count_at_or_below_us((b * 1e6) as u64))
            .collect(),
        count: h.count(),
        sum_s: h.mean_us() * h.count() as f64 / 1e6,
        second: now.and_then(pick).filter(|h| h.count() > 0).map(|h| {
            let ms = |us: u64| us as f64 / 1000.0;
            SecondLatency {
                count: h.count(),
                p50_ms: ms(h.quantile_us(0.5)),
                p90_ms: ms(h.quantile_us(0.9)),
                p95_ms: ms(h.quantile_us(0.95)),
                p99_ms: ms(h.quantile_us(0.99)),
                max_ms: ms(h.max_us()),
                mean_ms: h.mean_us() / 1000.0,
            }
        }),
    })
}

/// The histograms a series may carry, each with where it is in a series.
type HistogramOf = (
    &'static Metric,
    fn(&SeriesStats) -> Option<&LatencyHistogram>,
);
const HISTOGRAMS: [HistogramOf; 4] = [
    (&catalog::HTTP_REQ_DURATION, |s| {
        Some(&s.hist[Phase::Duration as usize])
    }),
    (&catalog::LLM_TTFT, |s| s.sse.as_deref().map(|e| &e.ttft)),
    (&catalog::LLM_ITL, |s| s.sse.as_deref().map(|e| &e.itl)),
    (&catalog::LLM_TPOT, |s| s.sse.as_deref().map(|e| &e.tpot)),
];

impl State {
    /// An empty run labelled `labels`.
    pub fn new(labels: RunLabels) -> State {
        State {
            labels,
            ..Default::default()
        }
    }

    /// Fold second `r` (closed at wall time `at_ms`, which sets the run's start on
    /// the first call) in and return every series.
    pub fn fold(&mut self, r: &SecondRecord, at_ms: i64) -> Snapshot {
        // Stamped on the run's own clock (second t ends at start + t + 1 s), fixed by
        // the first second's arrival: the last seconds of a run close together, and
        // two seconds of one series must never share a timestamp.
        let start_ms = *self
            .start_ms
            .get_or_insert(at_ms - (i64::from(r.t) + 1) * 1000);
        let at_ms = start_ms + (i64::from(r.t) + 1) * 1000;
        // This second's series, capped as the aggregator caps them (it already did:
        // this guards the stores should a record come from elsewhere).
        let mut second: BTreeMap<SeriesKey, SeriesStats> = BTreeMap::new();
        for s in &r.series {
            let key = self.capped(&s.key);
            second
                .entry(key.clone())
                .or_insert_with(|| SeriesStats::new(key))
                .merge(s);
        }
        for (k, s) in &second {
            self.series
                .entry(k.clone())
                .or_insert_with(|| SeriesStats::new(k.clone()))
                .merge(s);
        }
        let mut iter_delta: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for sc in &r.scenarios {
            let e = self.iterations.entry(sc.name.clone()).or_default();
            e.0 += sc.iterations;
            e.1 += sc.dropped;
            iter_delta.insert(&sc.name, (sc.iterations, sc.dropped));
        }
        let mut check_delta: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for (name, c) in &r.checks {
            let e = self.checks.entry(name.clone()).or_default();
            e.0 += c.passes;
            e.1 += c.fails;
            check_delta.insert(name, (c.passes, c.fails));
        }

        let mut points = Vec::new();
        let mut histograms = Vec::new();
        for (k, cum) in &self.series {
            let base = self.series_labels(k);
            let now = second.get(k);
            let deltas: HashMap<(&str, Labels), f64> = now
                .map(|s| {
                    series_points(s, &base)
                        .into_iter()
                        .map(|(m, l, v)| ((m.name, l), v))
                        .collect()
                })
                .unwrap_or_default();
            for (m, labels, value) in series_points(cum, &base) {
                let delta = deltas
                    .get(&(m.name, labels.clone()))
                    .copied()
                    .unwrap_or(0.0);
                points.push(Point {
                    metric: m,
                    labels,
                    value,
                    delta,
                });
            }
            for (metric, pick) in HISTOGRAMS {
                if let Some(h) = histogram_point(metric, &base, cum, now, pick) {
                    histograms.push(h);
                }
            }
        }
        for (name, &(it, dropped)) in &self.iterations {
            let d = iter_delta.get(name.as_str()).copied().unwrap_or_default();
            let labels = vec![("scenario".to_string(), name.clone())];
            points.push(counter(&catalog::ITERATIONS, labels.clone(), it, d.0));
            points.push(counter(&catalog::DROPPED_ITERATIONS, labels, dropped, d.1));
        }
        for (name, &(pass, fail)) in &self.checks {
            let d = check_delta.get(name.as_str()).copied().unwrap_or_default();
            for (result, v, dv) in [("pass", pass, d.0), ("fail", fail, d.1)] {
                let labels = vec![
                    ("check".to_string(), name.clone()),
                    ("result".to_string(), result.to_string()),
                ];
                points.push(counter(&catalog::CHECKS, labels, v, dv));
            }
        }
        for (m, v) in [(&catalog::VUS, r.vus), (&catalog::VUS_MAX, r.vus_max)] {
            points.push(Point {
                metric: m,
                labels: Vec::new(),
                value: f64::from(v),
                delta: f64::from(v),
            });
        }
        let mut common = vec![("run".to_string(), self.labels.run.clone())];
        if let Some(g) = &self.labels.generator {
            common.push(("generator".to_string(), g.clone()));
        }
        Snapshot {
            t: r.t,
            at_ms,
            start_ms,
            common,
            points,
            histograms,
            custom: self.custom.fold(&r.custom),
        }
    }

    /// `key`, or its step's `~other` series once the step has [`TAG_SERIES_CAP`]
    /// tag combinations.
    fn capped(&mut self, key: &SeriesKey) -> SeriesKey {
        if key.tags.is_empty() || key.tags.iter().all(|(_, v)| v == OTHER_TAG) {
            return key.clone();
        }
        let set = self.admitted.entry(key.name.clone()).or_default();
        if set.contains(&key.tags) || set.len() < TAG_SERIES_CAP {
            set.insert(key.tags.clone());
            return key.clone();
        }
        SeriesKey {
            name: key.name.clone(),
            tags: key
                .tags
                .iter()
                .map(|(k, _)| (k.clone(), OTHER_TAG.to_string()))
                .collect(),
        }
    }

    fn series_labels(&self, k: &SeriesKey) -> Labels {
        let scenario = self
            .labels
            .step_scenarios
            .get(&k.name)
            .cloned()
            .unwrap_or_default();
        let mut l = vec![
            ("scenario".to_string(), scenario),
            ("step".to_string(), k.name.clone()),
        ];
        for (name, v) in &k.tags {
            l.push((format!("tag_{}", label_name(name)), v.clone()));
        }
        l
    }
}

fn counter(m: &'static Metric, labels: Labels, v: u64, d: u64) -> Point {
    Point {
        metric: m,
        labels,
        value: v as f64,
        delta: d as f64,
    }
}

/// A tag's name as a label name: `[a-zA-Z0-9_]`, anything else `_`.
pub fn label_name(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The counters of one series: requests by status, failures, errors by category,
/// bytes.
fn series_points(s: &SeriesStats, base: &Labels) -> Vec<(&'static Metric, Labels, f64)> {
    let with = |extra: &[(&str, String)]| {
        let mut l = base.clone();
        l.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
        l
    };
    let mut out = Vec::new();
    let expected = |code: u16| code < 400 || s.expected_status.iter().any(|e| e.0 == code);
    for &(code, n) in &s.status {
        out.push((
            &catalog::HTTP_REQS,
            with(&[
                ("status", code.to_string()),
                ("expected", expected(code).to_string()),
            ]),
            n as f64,
        ));
    }
    for k in ErrorKind::ALL {
        let n = s.errors[k.index()];
        if n > 0 {
            out.push((
                &catalog::HTTP_REQS,
                with(&[
                    ("status", k.as_str().to_string()),
                    ("expected", "false".into()),
                ]),
                n as f64,
            ));
            out.push((
                &catalog::HTTP_REQ_ERRORS,
                with(&[("category", k.as_str().to_string())]),
                n as f64,
            ));
        }
    }
    for &(code, n) in s.status.iter().filter(|e| e.0 >= 400) {
        let exp = s
            .expected_status
            .iter()
            .find(|e| e.0 == code)
            .map_or(0, |e| e.1);
        if n > exp {
            out.push((
                &catalog::HTTP_REQ_ERRORS,
                with(&[("category", format!("http_{code}"))]),
                (n - exp) as f64,
            ));
        }
    }
    if s.check_failed > 0 {
        out.push((
            &catalog::HTTP_REQ_ERRORS,
            with(&[("category", "check".into())]),
            s.check_failed as f64,
        ));
    }
    out.push((&catalog::HTTP_REQ_FAILED, base.clone(), s.failed as f64));
    out.push((&catalog::DATA_SENT, base.clone(), s.bytes_sent as f64));
    out.push((
        &catalog::DATA_RECEIVED,
        base.clone(),
        s.bytes_received as f64,
    ));
    if let Some(e) = s.sse.as_deref() {
        out.push((&catalog::SSE_EVENTS, base.clone(), e.events as f64));
        if e.llm_streams > 0 {
            out.push((&catalog::LLM_REQUESTS, base.clone(), e.llm_streams as f64));
            out.push((&catalog::LLM_OUTPUT_TOKENS, base.clone(), e.tokens as f64));
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use pado_metrics::{Phases, RequestSample};

    /// A second with `ok` 200s and `bad` 503s of step `step`, each taking `ms`.
    pub(crate) fn second(t: u32, step: &str, ok: u64, bad: u64, ms: u64) -> SecondRecord {
        let mut s = SeriesStats::new(SeriesKey::named(step));
        for i in 0..ok + bad {
            let status = if i < ok { 200 } else { 503 };
            s.record(&RequestSample {
                status,
                failed: status >= 400,
                bytes_sent: 10,
                phases: Phases {
                    duration_us: ms * 1000,
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        let mut r = SecondRecord::new(t);
        r.vus = 3;
        r.series.push(s);
        r
    }

    pub(crate) fn labels() -> RunLabels {
        RunLabels {
            run: "run-1".into(),
            generator: None,
            step_scenarios: [("검색".to_string(), "main".to_string())].into(),
        }
    }

    /// A second of step `step` with `streams` LLM streams of `tokens` tokens, the
    /// first after `ttft_ms`, then one every `gap_ms`.
    pub(crate) fn llm_second(
        t: u32,
        step: &str,
        streams: u64,
        tokens: u64,
        ttft_ms: u64,
        gap_ms: u64,
    ) -> SecondRecord {
        let mut r = second(t, step, streams, 0, ttft_ms + gap_ms * (tokens - 1));
        let mut e = pado_metrics::SseStats::default();
        for _ in 0..streams {
            for _ in 1..tokens {
                e.record_itl(gap_ms * 1000);
            }
            e.record(&pado_metrics::SseStream {
                events: tokens + 1,
                llm: true,
                tokens,
                ttft_us: Some(ttft_ms * 1000),
                decode_us: gap_ms * 1000 * (tokens - 1),
                duration_us: (ttft_ms + gap_ms * (tokens - 1)) * 1000,
            });
        }
        r.series[0].sse = Some(Box::new(e));
        r
    }

    #[test]
    fn llm_streams_give_token_counters_and_ttft_itl_tpot_histograms() {
        let mut st = State::new(labels());
        let a = st.fold(&llm_second(0, "검색", 3, 10, 200, 20), 10_000);
        let b = st.fold(&second(1, "검색", 2, 0, 5), 11_000);
        let c = st.fold(&llm_second(2, "검색", 1, 4, 400, 20), 12_000);
        let counter = |s: &Snapshot, name: &str| {
            s.points
                .iter()
                .find(|p| p.metric.name == name)
                .map(|p| (p.value, p.delta))
        };
        assert_eq!(
            counter(&a, "pado_llm_output_tokens_total"),
            Some((30.0, 30.0))
        );
        assert_eq!(counter(&a, "pado_sse_events_total"), Some((33.0, 33.0)));
        assert_eq!(counter(&a, "pado_llm_requests_total"), Some((3.0, 3.0)));
        // A second without streams: the totals stand, nothing this second.
        assert_eq!(
            counter(&b, "pado_llm_output_tokens_total"),
            Some((30.0, 0.0))
        );
        assert_eq!(
            counter(&c, "pado_llm_output_tokens_total"),
            Some((34.0, 4.0))
        );
        let hist = |s: &Snapshot, name: &str| {
            s.histograms
                .iter()
                .find(|h| h.metric.name == name)
                .cloned()
                .unwrap_or_else(|| panic!("{name}"))
        };
        let ttft = hist(&c, "pado_llm_ttft_seconds");
        assert_eq!(ttft.count, 4);
        // 3 × 0.2 s + 0.4 s.
        assert!((ttft.sum_s - 1.0).abs() < 0.002, "{}", ttft.sum_s);
        // 0.25 s is bucket 7: the three 200 ms first tokens at or below it.
        assert_eq!(DURATION_BUCKETS_S[7], 0.25);
        assert_eq!(ttft.le_counts[7], 3);
        assert!((ttft.second.as_ref().unwrap().p50_ms - 400.0).abs() < 0.5);
        let itl = hist(&a, "pado_llm_itl_seconds");
        assert_eq!(itl.count, 27);
        assert!((itl.second.unwrap().p99_ms - 20.0).abs() < 0.05);
        assert_eq!(hist(&c, "pado_llm_tpot_seconds").count, 4);
        // A run without streams writes none of them.
        let plain = State::new(labels()).fold(&second(0, "검색", 2, 0, 5), 10_000);
        assert!(plain.points.iter().all(|p| !p.metric.name.contains("llm")));
        assert_eq!(plain.histograms.len(), 1);
    }

    fn find<'a>(s: &'a Snapshot, name: &str, status: &str) -> &'a Point {
        s.points
            .iter()
            .find(|p| {
                p.metric.name == name && p.labels.iter().any(|(k, v)| k == "status" && v == status)
            })
            .unwrap()
    }

    #[test]
    fn counters_accumulate_with_this_seconds_delta() {
        let mut st = State::new(labels());
        let a = st.fold(&second(0, "검색", 5, 1, 3), 10_000);
        assert_eq!(a.start_ms, 9_000);
        assert_eq!(a.requests_total(), 6.0);
        // Arriving late (the end of a run closes its last seconds together) does not
        // move a second's timestamp.
        let b = st.fold(&second(1, "검색", 7, 0, 30), 10_200);
        assert_eq!(b.at_ms, 11_000);
        assert_eq!(b.requests_total(), 13.0);
        let ok = find(&b, "pado_http_reqs_total", "200");
        assert_eq!((ok.value, ok.delta), (12.0, 7.0));
        let bad = find(&b, "pado_http_reqs_total", "503");
        assert_eq!((bad.value, bad.delta), (1.0, 0.0));
        assert!(bad.labels.contains(&("expected".into(), "false".into())));
        assert!(ok.labels.contains(&("scenario".into(), "main".into())));
        assert!(ok.labels.contains(&("step".into(), "검색".into())));
        let err = b
            .points
            .iter()
            .find(|p| p.metric.name == "pado_http_req_errors_total")
            .unwrap();
        assert!(err.labels.contains(&("category".into(), "http_503".into())));
        assert_eq!(err.value, 1.0);
        let h = &b.histograms[0];
        assert_eq!(h.count, 13);
        // 6 requests of 3 ms (≤ 5 ms), 7 of 30 ms (≤ 50 ms, not ≤ 25 ms).
        let at = |s: f64| DURATION_BUCKETS_S.iter().position(|b| *b == s).unwrap();
        assert_eq!(h.le_counts[at(0.0025)], 0);
        assert_eq!(h.le_counts[at(0.005)], 6);
        assert_eq!(h.le_counts[at(0.025)], 6);
        assert_eq!(h.le_counts[at(0.05)], 13);
        assert_eq!(h.bucket_counts().iter().sum::<u64>(), 13);
        assert!((h.sum_s - (6.0 * 0.003 + 7.0 * 0.030)).abs() < 0.002);
        assert_eq!(h.second.as_ref().unwrap().count, 7);
        let vus = b
            .points
            .iter()
            .find(|p| p.metric.name == "pado_vus")
            .unwrap();
        assert_eq!(vus.value, 3.0);
    }

    #[test]
    fn tags_become_labels_and_are_capped() {
        let mut st = State::new(labels());
        let mut r = SecondRecord::new(0);
        for i in 0..TAG_SERIES_CAP + 3 {
            let mut s = SeriesStats::new(SeriesKey {
                name: "s".into(),
                tags: vec![("user id".into(), i.to_string())],
            });
            s.record(&RequestSample {
                status: 200,
                ..Default::default()
            });
            r.series.push(s);
        }
        let snap = st.fold(&r, 1000);
        let reqs: Vec<_> = snap
            .points
            .iter()
            .filter(|p| p.metric.name == "pado_http_reqs_total")
            .collect();
        assert_eq!(reqs.len(), TAG_SERIES_CAP + 1);
        let other = reqs
            .iter()
            .find(|p| p.labels.contains(&("tag_user_id".into(), OTHER_TAG.into())))
            .unwrap();
        assert_eq!(other.value, 3.0);
        assert_eq!(snap.requests_total(), (TAG_SERIES_CAP + 3) as f64);
    }
}
