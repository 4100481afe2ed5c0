//! k6's summary object of planted runs: every value is the planted truth (and the
//! same as pado's own `summary.json`), the shape is k6's.

use pado_metrics::{CheckCounts, Interval, ScenarioStats, SecondRecord};
use pado_results::ThresholdSpec;
use serde_json::Value;

use super::*;
use crate::stages::test_support::{meta, run, second, series};

/// Two seconds: 30 `login` requests answered 200 in 1 ms (3 VUs), then 10 `search`
/// requests answered 500 in 2 ms (2 VUs); 12 iterations; two checks, one in a
/// group; three thresholds (one on a sub-metric).
fn planted() -> LoadedRun {
    let mut m = meta("k6-shape", 2.0);
    let th = |metric: &str, expr: &str| ThresholdSpec {
        metric: metric.into(),
        expr: expr.into(),
        abort_on_fail: false,
        window_s: None,
    };
    m.thresholds = vec![
        th("http_req_duration", "p(95)<1.5"),
        th("http_req_failed", "rate<0.5"),
        th("http_req_duration{step:login}", "max<1.5"),
    ];
    let mut s0 = second(0, 3, vec![series("login", 30, 200, 1000)]);
    let mut it = ScenarioStats::new("default");
    it.iterations = 12;
    for _ in 0..12 {
        it.iteration_duration.record(1500);
    }
    let checks = vec![
        (
            "status is 200".to_string(),
            CheckCounts {
                passes: 30,
                fails: 10,
            },
        ),
        (
            "::auth::token present".to_string(),
            CheckCounts {
                passes: 5,
                fails: 0,
            },
        ),
    ];
    s0.absorb(Interval {
        scenarios: vec![it],
        checks,
        ..Default::default()
    });
    let s1: SecondRecord = second(1, 2, vec![series("search", 10, 500, 2000)]);
    run(m, vec![s0, s1])
}

fn values(d: &Value, metric: &str) -> Value {
    d["metrics"][metric]["values"].clone()
}

#[test]
fn every_value_is_the_planted_truth() {
    let r = planted();
    let d = from_run(&r, &K6SummaryOptions::default()).unwrap();
    let m = &d["metrics"];
    assert_eq!(m["http_reqs"]["type"], "counter");
    assert_eq!(m["http_reqs"]["contains"], "default");
    assert_eq!(
        values(&d, "http_reqs"),
        json!({"count": 40.0, "rate": 20.0})
    );
    // k6 counts a failed request as the rate's "pass".
    assert_eq!(m["http_req_failed"]["type"], "rate");
    assert_eq!(
        values(&d, "http_req_failed"),
        json!({"rate": 0.25, "passes": 10, "fails": 30})
    );
    assert_eq!(m["http_req_duration"]["type"], "trend");
    assert_eq!(m["http_req_duration"]["contains"], "time");
    assert_eq!(
        values(&d, "http_req_duration"),
        json!({"avg": 1.25, "min": 1.0, "med": 1.0, "max": 2.0, "p(90)": 2.0, "p(95)": 2.0})
    );
    // waiting is 8/10 of the duration in the planted samples.
    assert_eq!(values(&d, "http_req_waiting")["max"], 1.6);
    assert_eq!(m["data_sent"]["contains"], "data");
    assert_eq!(
        values(&d, "data_sent"),
        json!({"count": 4000.0, "rate": 2000.0})
    );
    assert_eq!(values(&d, "data_received")["count"], 40000.0);
    assert_eq!(
        values(&d, "iterations"),
        json!({"count": 12.0, "rate": 6.0})
    );
    assert_eq!(values(&d, "iteration_duration")["med"], 1.5);
    assert_eq!(
        values(&d, "checks"),
        json!({"rate": 35.0 / 45.0, "passes": 35, "fails": 10})
    );
    assert_eq!(m["vus"]["type"], "gauge");
    assert_eq!(values(&d, "vus"), json!({"value": 2, "min": 2, "max": 3}));
    assert_eq!(
        values(&d, "vus_max"),
        json!({"value": 4, "min": 4, "max": 5})
    );
    // No name resolution metric (k6 has none), no dropped iterations (none dropped).
    assert!(m.get("http_req_dns").is_none() && m.get("dropped_iterations").is_none());
    assert_eq!(d["state"]["testRunDurationMs"], 2000.0);
    assert_eq!(
        d["options"],
        json!({"summaryTrendStats": ["avg","min","med","max","p(90)","p(95)"], "summaryTimeUnit": "", "noColor": false})
    );
}

/// The same figures as pado's own summary of the run, so a script's summary never
/// disagrees with pado's report.
#[test]
fn values_equal_pados_own_summary() {
    let r = planted();
    let s = build(&r).unwrap();
    let d = from_run(&r, &K6SummaryOptions::default()).unwrap();
    assert_eq!(values(&d, "http_reqs")["count"], s.requests as f64);
    assert_eq!(values(&d, "http_req_failed")["rate"], s.failed_rate);
    let lat = values(&d, "http_req_duration");
    assert_eq!(lat["avg"], s.latency_ms.mean);
    assert_eq!(lat["p(95)"], s.latency_ms.p95);
    assert_eq!(lat["med"], s.latency_ms.p50);
    assert_eq!(values(&d, "data_received")["count"], s.data_received as f64);
    assert_eq!(values(&d, "iterations")["count"], s.iterations as f64);
    assert_eq!(values(&d, "vus")["max"], s.vus);
}

#[test]
fn thresholds_sit_on_their_metric_and_a_sub_metric_gets_its_own_entry() {
    let d = from_run(&planted(), &K6SummaryOptions::default()).unwrap();
    let m = &d["metrics"];
    assert_eq!(
        m["http_req_duration"]["thresholds"],
        json!({"p(95)<1.5": {"ok": false}})
    );
    assert_eq!(
        m["http_req_failed"]["thresholds"],
        json!({"rate<0.5": {"ok": true}})
    );
    let sub = &m["http_req_duration{step:login}"];
    assert_eq!(sub["type"], "trend");
    assert_eq!(sub["values"]["max"], 1.0);
    assert_eq!(sub["thresholds"], json!({"max<1.5": {"ok": true}}));
    // A metric without thresholds has no `thresholds` key, as in k6.
    assert!(m["http_reqs"].get("thresholds").is_none());
}

/// k6's ids are the MD5 of the path (the root's is the MD5 of ""); a check named by
/// a k6 path sits in its group, any other at the root.
#[test]
fn the_group_tree_has_k6s_paths_and_ids() {
    let d = from_run(&planted(), &K6SummaryOptions::default()).unwrap();
    let root = &d["root_group"];
    assert_eq!(root["name"], "");
    assert_eq!(root["path"], "");
    assert_eq!(root["id"], "d41d8cd98f00b204e9800998ecf8427e");
    assert_eq!(
        root["checks"],
        json!([{"name": "status is 200", "path": "::status is 200",
                "id": "6210a8cd14cd70477eba5c5e4cb3fb5f", "passes": 30, "fails": 10}])
    );
    let g = &root["groups"][0];
    assert_eq!(g["name"], "auth");
    assert_eq!(g["path"], "::auth");
    assert_eq!(g["id"], "7974aac4a665813eaeed4ec3fc0411a7");
    assert_eq!(g["groups"], json!([]));
    assert_eq!(g["checks"][0]["path"], "::auth::token present");
    assert_eq!(g["checks"][0]["id"], "8f34c52d2231400b27d6c8ec1d18c5a0");
    assert_eq!(g["checks"][0]["passes"], 5);
}

#[test]
fn summary_trend_stats_choose_the_trend_values_and_bad_ones_are_refused() {
    let opts = K6SummaryOptions {
        trend_stats: vec!["p(99)".into(), "count".into(), "p(50)".into()],
        ..K6SummaryOptions::default()
    };
    let d = from_run(&planted(), &opts).unwrap();
    assert_eq!(
        values(&d, "http_req_duration"),
        json!({"p(99)": 2.0, "count": 40.0, "p(50)": 1.0})
    );
    for bad in ["p(101)", "p95", "mean", "p()"] {
        let opts = K6SummaryOptions {
            trend_stats: vec![bad.into()],
            ..K6SummaryOptions::default()
        };
        let e = from_run(&planted(), &opts).unwrap_err();
        assert!(e.to_string().contains(&format!("'{bad}'")), "{e}");
    }
}

/// A run without checks or requests has no such metrics (k6 lists only metrics that
/// got samples), but always its VU gauges.
#[test]
fn metrics_without_samples_are_left_out() {
    let r = run(meta("idle", 1.0), vec![second(0, 1, vec![])]);
    let d = from_run(&r, &K6SummaryOptions::default()).unwrap();
    let m = d["metrics"].as_object().unwrap();
    let names: Vec<&str> = m.keys().map(String::as_str).collect();
    assert_eq!(names, ["vus", "vus_max"]);
    assert_eq!(d["root_group"]["checks"], json!([]));
}

/// A group the script entered without a check in it is listed, as k6 lists it,
/// from its `group_duration` (with k6's path and id: the MD5 of `::a` and of
/// `::a::b`, as k6 v1.8.1 gave them); a run without groups lists none.
#[test]
fn a_group_without_checks_is_listed_from_its_duration() {
    use pado_metrics::{CustomKind, CustomStats, SeriesKey};
    let mut s0 = second(0, 1, vec![]);
    let key = SeriesKey {
        name: "group_duration".into(),
        tags: vec![("group".into(), "::a::b".into())],
    };
    let mut g = CustomStats::new(key, CustomKind::Trend, true);
    g.add(3.0, 0);
    s0.absorb(Interval {
        custom: vec![g],
        ..Default::default()
    });
    let d = from_run(
        &run(meta("groups", 1.0), vec![s0]),
        &K6SummaryOptions::default(),
    )
    .unwrap();
    let a = &d["root_group"]["groups"][0];
    assert_eq!(a["path"], "::a");
    assert_eq!(a["id"], "bbf5ee9e65399b518cbae210b4c64962");
    assert_eq!(a["checks"], json!([]));
    assert_eq!(a["groups"][0]["path"], "::a::b");
    assert_eq!(a["groups"][0]["id"], "7dd4103b2f1a7305f971d430101027b7");
    assert_eq!(a["groups"][0]["groups"], json!([]));
    let none = from_run(
        &run(meta("idle", 1.0), vec![second(0, 1, vec![])]),
        &K6SummaryOptions::default(),
    )
    .unwrap();
    assert_eq!(none["root_group"]["groups"], json!([]));
}

/// `summaryTimeUnit` is judged as k6 judges it: `s`, `ms`, `us` or none.
#[test]
fn a_summary_time_unit_k6_refuses_is_refused_in_its_words() {
    for ok in ["", "s", "ms", "us"] {
        let o = K6SummaryOptions {
            time_unit: ok.into(),
            ..K6SummaryOptions::default()
        };
        assert!(o.check().is_ok(), "{ok}");
    }
    let o = K6SummaryOptions {
        time_unit: "h".into(),
        ..K6SummaryOptions::default()
    };
    assert_eq!(
        o.check().unwrap_err().to_string(),
        "summaryTimeUnit: invalid summary time unit 'h', use 's', 'ms' or 'us'"
    );
}
