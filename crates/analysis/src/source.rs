//! Thresholds read metrics from a run's totals: this maps k6 metric names (and tags)
//! onto pado's series, phases and counters.
//!
//! k6's tags map so: `step`/`name` select a series by name; `scenario`, `method`
//! and `group` select the series of the steps the plan's [`StepCatalog`] places
//! there; `status` and `expected_response` count responses of `http_reqs` (pado
//! keeps counts per status, not a histogram per status; the parser refuses them
//! elsewhere); any other tag is one of the steps' own `tags:`.

use pado_metrics::{LatencyHistogram, Phase, ScenarioStats, SeriesStats, StepCatalog, Totals};

use crate::thresholds::{Aggregation, MetricSource};

/// Totals of a run seen as k6 metrics.
pub struct TotalsSource<'a> {
    totals: &'a Totals,
    duration_s: f64,
    steps: Option<&'a StepCatalog>,
}

/// Tags that filter responses within a series rather than select series.
const RESPONSE_TAGS: [&str; 2] = ["status", "expected_response"];

impl<'a> TotalsSource<'a> {
    /// `duration_s` turns counts into rates.
    pub fn new(totals: &'a Totals, duration_s: f64) -> Self {
        TotalsSource {
            totals,
            duration_s: duration_s.max(1e-9),
            steps: None,
        }
    }

    /// The plan's catalogue of steps, which the `scenario`, `method` and `group`
    /// tags of HTTP metrics and `group_duration` read; without it they have no data.
    pub fn with_steps(mut self, steps: &'a StepCatalog) -> Self {
        self.steps = Some(steps);
        self
    }

    /// Whether series (step) `name` carries `tag:value`.
    fn step_has(&self, name: &str, tag: &str, value: &str) -> bool {
        match tag {
            "step" | "name" => name == value,
            "scenario" | "method" | "group" => self
                .steps
                .and_then(|c| c.step(name))
                .and_then(|i| i.selected_by(tag, value))
                .unwrap_or(false),
            _ => false,
        }
    }

    /// Series matching the tags, merged. Tags `step` and `name` select by series name;
    /// other tags must be among the series' own tags.
    fn series(&self, tags: &[(String, String)]) -> Option<SeriesStats> {
        self.series_where(tags, |_| true)
    }

    /// [`Self::series`] of only the series `keep` accepts (the gRPC calls, say).
    fn series_where(
        &self,
        tags: &[(String, String)],
        keep: impl Fn(&SeriesStats) -> bool,
    ) -> Option<SeriesStats> {
        let mut out: Option<SeriesStats> = None;
        for s in self.totals.series.iter().filter(|s| keep(s)) {
            let ok = tags.iter().all(|(k, v)| match k.as_str() {
                // A script's series carry their group (and scenario) as tags of
                // their own; a scenario file's are placed by the catalogue.
                "step" | "name" | "scenario" | "method" | "group" => {
                    self.step_has(&s.key.name, k, v)
                        || s.key.tags.iter().any(|(tk, tv)| tk == k && tv == v)
                }
                t if RESPONSE_TAGS.contains(&t) => true,
                _ => s.key.tags.iter().any(|(tk, tv)| tk == k && tv == v),
            });
            if ok {
                out.get_or_insert_with(|| SeriesStats::new(s.key.clone()))
                    .merge(s);
            }
        }
        out
    }

    /// Requests of the series `tags` select, counted only among the responses
    /// their `status` and `expected_response` tags name (k6's `expected_response`
    /// is whether the status was one the step expects: pado's failures other than
    /// those by a check alone are the unexpected ones).
    fn requests(&self, tags: &[(String, String)]) -> Option<u64> {
        let s = self.series(tags)?;
        let mut n = s.requests;
        for (k, v) in tags {
            match k.as_str() {
                "status" => {
                    let code: u16 = v.parse().ok()?;
                    let of_code = s.status.iter().find(|(c, _)| *c == code).map_or(0, |c| c.1);
                    n = n.min(of_code);
                }
                "expected_response" => {
                    let unexpected = s.failed - s.check_failed;
                    let want = match v.as_str() {
                        "true" => s.requests - unexpected,
                        "false" => unexpected,
                        _ => return None,
                    };
                    n = n.min(want);
                }
                _ => {}
            }
        }
        Some(n)
    }

    /// The `group:` blocks' durations (k6's `group_duration`), of the groups whose
    /// path is the `group` tag's (or all), in the scenario of the `scenario` tag
    /// (or any).
    fn group_durations(&self, tags: &[(String, String)]) -> Option<ScenarioStats> {
        let catalog = self.steps?;
        let mut all = ScenarioStats::new("groups");
        let mut any = false;
        for g in &catalog.groups {
            for f in &g.flows {
                let ok = tags.iter().all(|(k, v)| match k.as_str() {
                    "group" => g.path == *v,
                    "scenario" => f.split_once('/').is_some_and(|(sc, _)| sc == v),
                    _ => false,
                });
                if !ok {
                    continue;
                }
                if let Some(stats) = self.totals.flows.iter().find(|s| s.name == *f) {
                    all.merge(stats);
                    any = true;
                }
            }
        }
        any.then_some(all)
    }

    /// k6's `group_duration`: a scenario file's `group:` blocks, else a script's
    /// `group()` calls (a time trend of its own, tagged with the group's path).
    fn group_duration(&self, tags: &[(String, String)], aggregation: &Aggregation) -> Option<f64> {
        match self.group_durations(tags) {
            Some(g) => trend(&g.iteration_duration, aggregation),
            None => crate::custom_metrics::aggregate(
                self.totals,
                "group_duration",
                tags,
                aggregation,
                self.duration_s,
            ),
        }
    }

    /// k6's `checks`: the share of checks that held among those `tags` select. A
    /// script's checks with tags beyond their name (`check(v, sets, tags)`, the
    /// test's tags, the group) are read from their tagged rate.
    fn checks(&self, tags: &[(String, String)], aggregation: &Aggregation) -> Option<f64> {
        let tagged = tags
            .iter()
            .any(|(k, _)| !matches!(k.as_str(), "check" | "step" | "name"));
        if tagged && self.totals.custom.iter().any(|c| c.key.name == "checks") {
            return crate::custom_metrics::aggregate(
                self.totals,
                "checks",
                tags,
                aggregation,
                self.duration_s,
            );
        }
        let (mut p, mut f) = (0u64, 0u64);
        for (name, c) in &self.totals.checks {
            let ok = tags.iter().all(|(k, v)| match k.as_str() {
                "check" => name == v,
                "step" | "name" => name.starts_with(&format!("{v}: ")),
                // The check's step is the one whose name prefixes it.
                _ => self.steps.is_some_and(|c| {
                    c.steps.iter().any(|st| {
                        name.starts_with(&format!("{}: ", st.name))
                            && st.selected_by(k, v) == Some(true)
                    })
                }),
            });
            if ok {
                p += c.passes;
                f += c.fails;
            }
        }
        (p + f > 0).then(|| p as f64 / (p + f) as f64)
    }
}

fn trend(h: &LatencyHistogram, a: &Aggregation) -> Option<f64> {
    if h.is_empty() {
        return None;
    }
    let ms = |us: u64| us as f64 / 1000.0;
    Some(match a {
        Aggregation::Avg => h.mean_us() / 1000.0,
        Aggregation::Min => ms(h.min_us()),
        Aggregation::Max => ms(h.max_us()),
        Aggregation::Med => ms(h.quantile_us(0.5)),
        Aggregation::Percentile(p) => ms(h.quantile_us(p / 100.0)),
        _ => return None,
    })
}

impl MetricSource for TotalsSource<'_> {
    fn aggregate(
        &self,
        metric: &str,
        tags: &[(String, String)],
        aggregation: &Aggregation,
    ) -> Option<f64> {
        if let Some(phase) = Phase::from_metric_name(metric) {
            let s = self.series(tags)?;
            return trend(s.phase(phase), aggregation);
        }
        let per_s = |n: u64| n as f64 / self.duration_s;
        let count_or_rate = |n: u64| match aggregation {
            Aggregation::Count => Some(n as f64),
            Aggregation::Rate => Some(per_s(n)),
            _ => None,
        };
        let scenarios = || {
            let mut all = pado_metrics::ScenarioStats::new("all");
            for s in &self.totals.scenarios {
                let ok = tags.iter().all(|(k, v)| k == "scenario" && s.name == *v);
                if ok {
                    all.merge(s);
                }
            }
            all
        };
        match metric {
            "http_req_failed" => {
                let s = self.series(tags)?;
                (s.requests > 0).then(|| s.failed as f64 / s.requests as f64)
            }
            "http_reqs" => count_or_rate(self.requests(tags)?),
            "data_sent" => count_or_rate(self.series(tags)?.bytes_sent),
            "data_received" => count_or_rate(self.series(tags)?.bytes_received),
            "data_received_encoded" => count_or_rate(self.series(tags)?.bytes_encoded),
            "data_received_decoded" => count_or_rate(self.series(tags)?.bytes_decoded),
            "ws_connecting" | "ws_session_duration" | "ws_msg_latency" => {
                let s = self.series(tags)?;
                let w = s.ws.as_deref()?;
                let h = match metric {
                    "ws_connecting" => &w.connecting,
                    "ws_session_duration" => &w.session,
                    _ => &w.msg_latency,
                };
                trend(h, aggregation)
            }
            "ws_sessions" | "ws_msgs_sent" | "ws_msgs_received" => {
                let s = self.series(tags)?;
                let w = s.ws.as_deref().cloned().unwrap_or_default();
                count_or_rate(match metric {
                    "ws_sessions" => w.sessions,
                    "ws_msgs_sent" => w.msgs_sent,
                    _ => w.msgs_received,
                })
            }
            "llm_ttft" | "llm_itl" | "llm_tpot" | "llm_output_tokens" | "llm_input_tokens"
            | "llm_tokens_per_s" => {
                let s = self.series(tags)?;
                let e = s.sse.as_deref()?;
                // Token counts and rates are held in thousandths: `trend` reads
                // them as tokens and tokens/s as it reads µs as ms.
                let h = match metric {
                    "llm_ttft" => &e.ttft,
                    "llm_itl" => &e.itl,
                    "llm_tpot" => &e.tpot,
                    "llm_output_tokens" => &e.output_tokens,
                    "llm_input_tokens" => &e.input_tokens,
                    _ => &e.tokens_per_s,
                };
                trend(h, aggregation)
            }
            "llm_tokens" | "sse_events" => {
                let s = self.series(tags)?;
                let e = s.sse.as_deref().cloned().unwrap_or_default();
                count_or_rate(if metric == "llm_tokens" {
                    e.tokens
                } else {
                    e.events
                })
            }
            // gRPC calls are requests of their step; k6 names them apart.
            "grpc_req_duration" => {
                let s = self.series_where(tags, SeriesStats::is_grpc)?;
                trend(s.phase(Phase::Duration), aggregation)
            }
            "grpc_streams" => count_or_rate(
                self.series_where(tags, SeriesStats::is_grpc)
                    .map_or(0, |s| s.grpc_streams),
            ),
            "grpc_streams_msgs_received" => count_or_rate(
                self.series_where(tags, SeriesStats::is_grpc)
                    .map_or(0, |s| s.grpc_stream_msgs),
            ),
            "ws_session_failed" => {
                let w = self.series(tags)?.ws?;
                (w.sessions > 0).then(|| w.failed as f64 / w.sessions as f64)
            }
            "iterations" => count_or_rate(scenarios().iterations),
            "dropped_iterations" => count_or_rate(scenarios().dropped),
            "late_iterations" => count_or_rate(scenarios().late),
            "iteration_duration" => trend(&scenarios().iteration_duration, aggregation),
            "group_duration" => self.group_duration(tags, aggregation),
            "checks" => self.checks(tags, aggregation),
            "vus" => Some(self.totals.vus_peak as f64),
            "vus_max" => Some(self.totals.vus_max_peak as f64),
            // A script's own metrics (k6/metrics).
            _ => crate::custom_metrics::aggregate(
                self.totals,
                metric,
                tags,
                aggregation,
                self.duration_s,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thresholds::{evaluate, parse, parse_cli};
    use pado_metrics::{Interval, Phases, RequestSample, SecondRecord, SeriesKey};

    fn totals() -> Totals {
        let mut a = SeriesStats::new(SeriesKey::named("search"));
        let mut b = SeriesStats::new(SeriesKey::named("detail"));
        for i in 1..=100u64 {
            let s = RequestSample {
                status: if i <= 5 { 500 } else { 200 },
                failed: i <= 5,
                phases: Phases {
                    duration_us: i * 1000,
                    ..Default::default()
                },
                ..Default::default()
            };
            a.record(&s);
            let mut s2 = s;
            s2.failed = false;
            s2.status = 200;
            s2.phases.duration_us = 500_000;
            b.record(&s2);
        }
        one_second(vec![a, b])
    }

    /// Totals of one second (second 0) holding `series`.
    fn one_second(series: Vec<SeriesStats>) -> Totals {
        let mut r = SecondRecord::new(0);
        r.absorb(Interval {
            series,
            ..Default::default()
        });
        let mut t = Totals::default();
        t.add_second(&r);
        t
    }

    /// Each threshold's verdict is the planted one.
    fn assert_verdicts(res: &[crate::thresholds::ThresholdResult], want: &[bool]) {
        assert_eq!(res.len(), want.len());
        for (i, (r, ok)) in res.iter().zip(want).enumerate() {
            assert_eq!(r.ok, *ok, "{i}: {r:?}");
        }
    }

    #[test]
    fn metrics_map_onto_series() {
        let t = totals();
        let src = TotalsSource::new(&t, 10.0);
        let th = vec![
            parse("http_req_duration{step:search}", "p(95) < 100").unwrap(),
            parse("http_req_duration", "p(95) < 100").unwrap(),
            parse_cli("http_req_failed: rate < 0.01").unwrap(),
            parse("http_reqs", "rate == 20").unwrap(),
            parse("http_req_duration{step:nope}", "avg < 1").unwrap(),
        ];
        let r = evaluate(&th, &src);
        assert!(r[0].ok, "{:?}", r[0]);
        assert!((r[0].value.unwrap() - 95.0).abs() < 0.1);
        assert!(!r[1].ok);
        assert!(!r[2].ok);
        assert!((r[2].value.unwrap() - 0.025).abs() < 1e-9);
        assert!(r[3].ok, "{:?}", r[3]);
        assert!(!r[4].ok && r[4].value.is_none());
    }

    #[test]
    fn llm_metrics_map_onto_their_step_and_fire_only_when_planted() {
        // 10 streams: TTFT 100..=190 ms, 11 tokens 20 ms apart (10 gaps each).
        let mut chat = SeriesStats::new(SeriesKey::named("대화"));
        for i in 0..10u64 {
            chat.record(&RequestSample {
                status: 200,
                ..Default::default()
            });
            chat.record_sse(&pado_metrics::SseStream {
                events: 13,
                llm: true,
                tokens: 11,
                ttft_us: Some(100_000 + i * 10_000),
                decode_us: 200_000,
                duration_us: 300_000 + i * 10_000,
            });
            for _ in 0..10 {
                chat.record_llm_itl(20_000);
            }
        }
        let t = one_second(vec![chat]);
        let src = TotalsSource::new(&t, 10.0);
        let th = vec![
            parse("llm_ttft", "p(95) < 200").unwrap(),
            parse("llm_ttft", "p(95) < 150").unwrap(),
            parse("llm_itl{step:대화}", "p(50) < 21").unwrap(),
            parse("llm_tpot", "avg > 20.5").unwrap(),
            parse("llm_output_tokens", "min == 11").unwrap(),
            parse("llm_tokens", "count == 110").unwrap(),
            parse("llm_tokens", "rate == 11").unwrap(),
            parse("sse_events", "count == 130").unwrap(),
            parse("llm_tokens_per_s", "max > 37").unwrap(),
            parse("llm_ttft{step:other}", "p(95) < 1000").unwrap(),
        ];
        let res = evaluate(&th, &src);
        assert_verdicts(
            &res,
            &[
                true, false, true, false, true, true, true, true, false, false,
            ],
        );
        // 11 tokens in 0.3 s: 36.7 tokens/s at most.
        assert!((res[8].value.unwrap() - 36.67).abs() < 0.1, "{:?}", res[8]);
        assert!((res[1].value.unwrap() - 190.0).abs() < 0.2, "{:?}", res[1]);
    }

    #[test]
    fn llm_input_tokens_thresholds_read_the_planted_prompt_lengths() {
        // 10 streams of step `대화`: 8 prompts of 1,000 tokens, 2 of 3,000 (mean
        // 1,400); step `plain` streams with prompts pado did not size.
        let mut chat = SeriesStats::new(SeriesKey::named("대화"));
        let mut plain = SeriesStats::new(SeriesKey::named("plain"));
        let stream = pado_metrics::SseStream {
            events: 5,
            llm: true,
            tokens: 4,
            ttft_us: Some(50_000),
            decode_us: 60_000,
            duration_us: 110_000,
        };
        for i in 0..10u64 {
            chat.record_sse(&stream);
            chat.record_llm_input_tokens(if i < 8 { 1_000 } else { 3_000 });
            plain.record_sse(&stream);
        }
        let t = one_second(vec![chat, plain]);
        let src = TotalsSource::new(&t, 10.0);
        let th = vec![
            parse("llm_input_tokens", "avg < 2000").unwrap(),
            parse("llm_input_tokens", "avg < 1000").unwrap(),
            parse("llm_input_tokens{step:대화}", "max < 2000").unwrap(),
            parse("llm_input_tokens", "p(50) < 1001").unwrap(),
            parse_cli("llm_input_tokens: min > 999").unwrap(),
            parse("llm_input_tokens{step:plain}", "avg < 2000").unwrap(),
        ];
        let res = evaluate(&th, &src);
        assert_verdicts(&res, &[true, false, false, true, true, false]);
        // Read in tokens, not thousandths: the planted mean and maximum.
        assert!(
            (res[0].value.unwrap() - 1_400.0).abs() < 1.0,
            "{:?}",
            res[0]
        );
        assert!(
            (res[2].value.unwrap() - 3_000.0).abs() < 3.0,
            "{:?}",
            res[2]
        );
        // The median is the planted 1,000 (HdrHistogram's 3 significant digits).
        assert!(
            (res[3].value.unwrap() - 1_000.0).abs() < 1.0,
            "{:?}",
            res[3]
        );
        // A step whose prompts pado did not size has no input tokens: no value.
        assert!(res[5].value.is_none(), "{:?}", res[5]);
    }

    #[test]
    fn websocket_metrics_map_onto_their_step() {
        let mut chat = SeriesStats::new(SeriesKey::named("chat"));
        for i in 0..10u64 {
            chat.record_ws(&pado_metrics::WsSession {
                connecting_us: 2_000 + i * 1000,
                duration_us: 1_000_000,
                msgs_sent: 5,
                msgs_received: 6,
                error: (i == 9).then_some(pado_metrics::WsError::ClosedEarly),
                connected: true,
                ..Default::default()
            });
            chat.record_ws_latency(50_000);
        }
        let t = one_second(vec![chat]);
        let src = TotalsSource::new(&t, 10.0);
        let th = vec![
            parse("ws_msgs_received", "count == 60").unwrap(),
            parse("ws_msgs_sent{step:chat}", "rate == 5").unwrap(),
            parse("ws_connecting", "max < 11.1").unwrap(),
            parse("ws_msg_latency", "p(50) > 49").unwrap(),
            parse("ws_session_failed", "rate < 0.05").unwrap(),
            parse("ws_sessions", "count == 10").unwrap(),
            parse("ws_msgs_sent{step:other}", "count > 0").unwrap(),
        ];
        let res = evaluate(&th, &src);
        assert_verdicts(&res, &[true, true, true, true, false, true, false]);
        assert!((res[4].value.unwrap() - 0.1).abs() < 1e-9);
    }

    #[test]
    fn grpc_metrics_read_only_the_grpc_calls() {
        // "detail" is HTTP at 500 ms; "echo" gRPC calls at 1..=10 ms, OK (0) or
        // NOT_FOUND (5), and 4 streams of 3 messages.
        let mut t = totals();
        let mut echo = SeriesStats::new(SeriesKey::named("echo"));
        for i in 1..=10u64 {
            echo.record(&RequestSample {
                status: if i % 2 == 0 { 0 } else { 5 },
                phases: Phases {
                    duration_us: i * 1000,
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        for _ in 0..4 {
            echo.record_grpc_stream(3, 0);
        }
        let mut r = SecondRecord::new(1);
        r.absorb(Interval {
            series: vec![echo],
            ..Default::default()
        });
        t.add_second(&r);
        let src = TotalsSource::new(&t, 10.0);
        let th = vec![
            parse("grpc_req_duration", "max < 11").unwrap(),
            parse("grpc_req_duration{step:echo}", "p(50) < 5.1").unwrap(),
            parse("grpc_streams", "count == 4").unwrap(),
            parse("grpc_streams_msgs_received", "rate == 1.2").unwrap(),
            parse("grpc_req_duration{step:detail}", "max < 1000").unwrap(),
            parse("http_req_duration", "max > 400").unwrap(),
        ];
        let res = evaluate(&th, &src);
        assert_verdicts(&res, &[true, true, true, true, false, true]);
        assert!(res[4].value.is_none(), "an HTTP step has no gRPC calls");
    }

    /// A run planted by hand: `home` (GET, scenario `browse`), `pay` (POST,
    /// scenario `buy`, inside `group: checkout`), each request's status, outcome
    /// and latency chosen so every figure below is known.
    fn two_scenarios() -> (Totals, StepCatalog) {
        let mut home = SeriesStats::new(SeriesKey::named("home"));
        let mut pay = SeriesStats::new(SeriesKey::named("pay"));
        // home: 10 requests at 10 ms, 200; 2 more at 20 ms, 503 (failed).
        for i in 0..12u64 {
            home.record(&RequestSample {
                status: if i < 10 { 200 } else { 503 },
                failed: i >= 10,
                phases: Phases {
                    duration_us: if i < 10 { 10_000 } else { 20_000 },
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        // pay: 4 requests at 100 ms, 201; one of them failed by a check alone.
        for i in 0..4u64 {
            pay.record(&RequestSample {
                status: 201,
                failed: i == 0,
                failed_by_check: i == 0,
                phases: Phases {
                    duration_us: 100_000,
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        let mut group = pado_metrics::ScenarioStats::new("buy/checkout");
        group.iterations = 4;
        for _ in 0..4 {
            group.iteration_duration.record(150_000);
        }
        let mut r = SecondRecord::new(0);
        r.absorb(Interval {
            series: vec![home, pay],
            flows: vec![group],
            ..Default::default()
        });
        let mut t = Totals::default();
        t.add_second(&r);
        let mut c = StepCatalog::default();
        c.record("home", "browse", Some("GET"), "");
        c.record("pay", "buy", Some("POST"), "::checkout");
        c.record_group("::checkout", "buy/checkout");
        (t, c)
    }

    #[test]
    fn k6_system_tags_select_the_planted_requests() {
        let (t, c) = two_scenarios();
        let src = TotalsSource::new(&t, 2.0).with_steps(&c);
        let cases: &[(&str, &str, Option<f64>)] = &[
            ("http_reqs{scenario:browse}", "count > 0", Some(12.0)),
            ("http_reqs{scenario:buy}", "count > 0", Some(4.0)),
            ("http_req_duration{scenario:buy}", "max > 0", Some(100.0)),
            ("http_req_duration{scenario:browse}", "max > 0", Some(20.0)),
            (
                "http_req_failed{scenario:browse}",
                "rate < 1",
                Some(2.0 / 12.0),
            ),
            ("http_req_failed{scenario:buy}", "rate < 1", Some(0.25)),
            ("http_reqs{method:POST}", "count > 0", Some(4.0)),
            ("http_req_duration{method:GET}", "min > 0", Some(10.0)),
            ("http_reqs{group:::checkout}", "count > 0", Some(4.0)),
            ("http_reqs{status:200}", "count > 0", Some(10.0)),
            ("http_reqs{status:503}", "rate > 0", Some(1.0)),
            (
                "http_reqs{status:201,scenario:browse}",
                "count > 0",
                Some(0.0),
            ),
            ("http_reqs{status:404}", "count > 0", Some(0.0)),
            // A check failure does not make a response unexpected (k6: status only).
            ("http_reqs{expected_response:true}", "count > 0", Some(14.0)),
            ("http_reqs{expected_response:false}", "count > 0", Some(2.0)),
            ("group_duration", "p(95) > 0", Some(150.0)),
            ("group_duration{group:::checkout}", "avg > 0", Some(150.0)),
            ("group_duration{scenario:buy}", "avg > 0", Some(150.0)),
            ("group_duration{scenario:browse}", "avg > 0", None),
            ("http_reqs{scenario:nope}", "count > 0", None),
        ];
        for (key, expr, want) in cases {
            let th = parse(key, expr).unwrap_or_else(|e| panic!("{key}: {e}"));
            let got = evaluate(std::slice::from_ref(&th), &src).remove(0).value;
            match (got, want) {
                (Some(g), Some(w)) => assert!((g - w).abs() < 0.2, "{key}: {g} != {w}"),
                _ => assert_eq!(got, *want, "{key}"),
            }
        }
        // Without the plan's steps (a run.json older than them) there is no data,
        // never the whole run's figure.
        let bare = TotalsSource::new(&t, 2.0);
        let th = parse("http_reqs{scenario:buy}", "count > 0").unwrap();
        assert_eq!(evaluate(&[th], &bare)[0].value, None);
    }
}
