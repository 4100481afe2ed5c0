//! The store against planted seconds: every figure is one the test chose.

use super::*;
use pado_metrics::{
    CheckCounts, Interval, Phases, RequestSample, ScenarioStats, SeriesKey, SeriesStats,
};

/// A request of `us` microseconds with `status` (failed when 400 or more).
fn req(us: u64, status: u16) -> RequestSample {
    RequestSample {
        status,
        failed: status >= 400,
        phases: Phases {
            duration_us: us,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn series(name: &str, reqs: &[RequestSample]) -> SeriesStats {
    let mut s = SeriesStats::new(SeriesKey::named(name));
    for r in reqs {
        s.record(r);
    }
    s
}

/// Second `t`: `login` 1.0, 1.5 and 2.0 ms (the last a 503), `검색` 0.5 ms twice,
/// one check of login held twice and failed once, 4 dropped and 2 late arrivals.
fn planted(t: u32) -> SecondRecord {
    let mut r = SecondRecord::new(t);
    let mut sc = ScenarioStats::new("main");
    sc.dropped = 4;
    sc.late = 2;
    r.absorb(Interval {
        vus: 7,
        series: vec![
            series("login", &[req(1000, 200), req(1500, 200), req(2000, 503)]),
            series("검색", &[req(500, 200), req(500, 200)]),
        ],
        scenarios: vec![sc],
        checks: vec![(
            "login: status is 200".into(),
            CheckCounts {
                passes: 2,
                fails: 1,
            },
        )],
        ..Default::default()
    });
    r
}

fn info(thresholds: &[&str]) -> RunInfo {
    RunInfo {
        thresholds: thresholds
            .iter()
            .map(|t| pado_scenario::thresholds::parse_cli(t).unwrap())
            .collect(),
        ..RunInfo::default()
    }
}

fn add(store: &mut Store, r: &SecondRecord, info: &RunInfo) -> serde_json::Value {
    let json = store.add(r, &Second::of(r), info);
    serde_json::from_str(&json).unwrap()
}

#[test]
fn a_planted_second_reads_back_with_its_exact_figures() {
    let info = info(&[]);
    let mut store = Store::new(10, &info);
    let v = add(&mut store, &planted(3), &info);
    assert_eq!(v["t"], 3);
    assert_eq!(v["vus"], 7);
    assert_eq!(v["requests"], 5);
    assert_eq!(v["rps"], 5.0);
    assert_eq!(v["errors"], serde_json::json!({"http_503": 1}));
    assert_eq!(v["dropped"], 4);
    assert_eq!(v["late"], 2);
    // All five: 0.5 0.5 1.0 1.5 2.0 ms; the 3rd is the median, the 5th the p95.
    assert_eq!(v["p50_ms"], 1.0);
    assert_eq!(v["p95_ms"], 2.0);
    assert_eq!(v["p99_ms"], 2.0);
    assert_eq!(v["max_ms"], 2.0);
    let login = &v["steps"]["login"];
    assert_eq!(login["count"], 3);
    assert_eq!(login["failures"], 1);
    assert_eq!(login["p50_ms"], 1.5);
    assert_eq!(login["max_ms"], 2.0);
    assert_eq!(login["checks_passed"], 2);
    assert_eq!(login["checks_failed"], 1);
    let search = &v["steps"]["검색"];
    assert_eq!(search["count"], 2);
    assert_eq!(search["failures"], 0);
    assert_eq!(search["p99_ms"], 0.5);
    assert_eq!(search["checks_passed"], 0);
    // Nothing the record did not have.
    assert!(v.get("observed").is_none());
    assert!(v.get("self_check").is_none());
    assert!(v.get("generators").is_none());
}

#[test]
fn an_empty_second_has_no_percentiles() {
    let info = info(&[]);
    let mut store = Store::new(10, &info);
    let v = add(&mut store, &SecondRecord::new(0), &info);
    assert_eq!(v["requests"], 0);
    assert!(v.get("p50_ms").is_none(), "{v}");
}

#[test]
fn from_pages_from_any_second_and_says_where_to_go_on() {
    let info = info(&[]);
    let mut store = Store::new(100, &info);
    for t in 0..5 {
        add(&mut store, &planted(t), &info);
    }
    let ts = |p: &Page| -> Vec<u64> {
        p.seconds
            .iter()
            .map(|s| {
                serde_json::from_str::<serde_json::Value>(s).unwrap()["t"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    };
    let all = store.page(0);
    assert_eq!((ts(&all), all.next), (vec![0, 1, 2, 3, 4], 5));
    let late = store.page(3);
    assert_eq!((ts(&late), late.next), (vec![3, 4], 5));
    let ahead = store.page(9);
    assert_eq!((ts(&ahead), ahead.next), (vec![], 9));
    let v: serde_json::Value = serde_json::from_str(&late.to_json()).unwrap();
    assert_eq!(v["next"], 5);
    assert_eq!(v["seconds"][0]["t"], 3);
    assert_eq!(v["seconds"].as_array().unwrap().len(), 2);
}

#[test]
fn memory_is_capped_the_oldest_seconds_go_first() {
    let info = info(&[]);
    let mut store = Store::new(3, &info);
    for t in 0..5 {
        add(&mut store, &planted(t), &info);
    }
    assert_eq!(store.len(), 3);
    let p = store.page(0);
    let first: serde_json::Value = serde_json::from_str(&p.seconds[0]).unwrap();
    assert_eq!(
        (first["t"].as_u64(), p.seconds.len(), p.next),
        (Some(2), 3, 5)
    );
}

#[test]
fn memory_is_capped_by_bytes_too() {
    let info = info(&[]);
    let one = {
        let mut s = Store::new(10, &info);
        add(&mut s, &planted(0), &info);
        s.page(0).seconds[0].len()
    };
    // Room for two and a half seconds of JSON: two are kept.
    let mut store = Store::with_limits(100, one * 5 / 2, &info);
    for t in 0..6 {
        add(&mut store, &planted(t), &info);
    }
    let p = store.page(0);
    let first: serde_json::Value = serde_json::from_str(&p.seconds[0]).unwrap();
    assert_eq!((store.len(), first["t"].as_u64()), (2, Some(4)));
    // A second larger than the whole budget is still kept, alone.
    let mut tiny = Store::with_limits(100, 1, &info);
    add(&mut tiny, &planted(0), &info);
    add(&mut tiny, &planted(1), &info);
    assert_eq!(tiny.len(), 1);
}

#[test]
fn a_page_holds_at_most_max_page_seconds() {
    let info = info(&[]);
    let mut store = Store::new(MAX_PAGE + 10, &info);
    for t in 0..(MAX_PAGE as u32 + 10) {
        store.add(&SecondRecord::new(t), &Second::default(), &info);
    }
    let p = store.page(0);
    assert_eq!((p.seconds.len(), p.next), (MAX_PAGE, MAX_PAGE as u32));
    assert_eq!(store.page(p.next).seconds.len(), 10);
}

/// Second `t` with `ok` good and `bad` failed (503) requests of 1 ms.
fn mixed(t: u32, ok: usize, bad: usize) -> SecondRecord {
    let mut reqs = vec![req(1000, 200); ok];
    reqs.extend(vec![req(1000, 503); bad]);
    let mut r = SecondRecord::new(t);
    r.absorb(Interval {
        series: vec![series("get", &reqs)],
        ..Default::default()
    });
    r
}

#[test]
fn thresholds_are_judged_on_the_seconds_so_far() {
    let info = info(&["http_req_failed: rate < 0.1"]);
    let mut store = Store::new(10, &info);
    add(&mut store, &mixed(0, 10, 0), &info);
    let t = &store.thresholds()[0];
    assert_eq!((t.pass, t.value), (true, Some(0.0)));
    assert_eq!(t.metric, "http_req_failed");
    // 10 of 20 failed so far: 50%, over 10%.
    add(&mut store, &mixed(1, 0, 10), &info);
    let t = &store.thresholds()[0];
    assert_eq!((t.pass, t.value), (false, Some(0.5)));
}

#[test]
fn failures_keep_their_first_and_last_second_and_count() {
    let info = info(&[]);
    let mut store = Store::new(10, &info);
    add(&mut store, &mixed(0, 5, 0), &info);
    add(&mut store, &mixed(1, 5, 2), &info);
    add(&mut store, &mixed(2, 5, 0), &info);
    add(&mut store, &mixed(3, 0, 3), &info);
    let f = store.failures();
    assert_eq!(f.len(), 1);
    assert_eq!(
        (
            f[0].category.as_str(),
            f[0].first_s,
            f[0].last_s,
            f[0].count
        ),
        ("http_503", 1, 3, 5)
    );
    let sample = pado_metrics::FailureSample {
        step: "get".into(),
        category: "http_503".into(),
        second: 1,
        method: "GET".into(),
        url: "/x".into(),
        status: 503,
        body: String::new(),
        check: None,
        actual: None,
        reason: None,
        event: None,
    };
    store.add_samples(&vec![sample.clone(); 2]);
    assert_eq!(store.failures()[0].samples.len(), 2);
    store.add_samples(&vec![sample.clone(); 5]);
    assert_eq!(store.failures()[0].samples.len(), 3);
    // The file at the end replaces what was seen live, not added to it.
    store.replace_samples(&[sample]);
    assert_eq!(store.failures()[0].samples.len(), 1);
    assert_eq!(store.failures()[0].samples[0]["url"], "/x");
    // A sample of a category no second had is not shown alone.
    let other = pado_metrics::FailureSample {
        category: "timeout".into(),
        ..store_sample()
    };
    store.add_samples(&[other]);
    assert_eq!(store.failures().len(), 1);
}

fn store_sample() -> pado_metrics::FailureSample {
    pado_metrics::FailureSample {
        step: "get".into(),
        category: "http_503".into(),
        second: 1,
        method: "GET".into(),
        url: "/x".into(),
        status: 503,
        body: String::new(),
        check: None,
        actual: None,
        reason: None,
        event: None,
    }
}
