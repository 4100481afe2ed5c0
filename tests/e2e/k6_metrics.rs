//! A k6 script's own metrics (`k6/metrics`), `group_duration` and thresholds on
//! the tags a script sets, end to end: the scripts under `testdata/k6/metrics/`
//! plant every value, the test kit's server counts the requests and delays the
//! ones it is told to, and each threshold is planted to pass and to fail.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pado_testkit::TestServer;
use serde_json::Value;

use crate::harness::{merge, num, pado, read_json, run, tmp};

fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/e2e/testdata/k6/metrics")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn base(srv: &TestServer) -> String {
    format!("BASE={}", srv.base_url())
}

/// The verdict of threshold `expr` on `metric` in a summary.
fn verdict(s: &Value, metric: &str, expr: &str) -> Option<bool> {
    s["thresholds"]
        .as_array()?
        .iter()
        .find(|t| t["metric"] == metric && t["expr"] == expr)
        .and_then(|t| t["ok"].as_bool())
}

/// Every `(metric, expr, ok)` as planted, or what differs.
fn verdicts_as_planted(s: &Value, planted: &[(&str, &str, bool)]) {
    let bad: Vec<String> = planted
        .iter()
        .filter(|(m, e, ok)| verdict(s, m, e) != Some(*ok))
        .map(|(m, e, ok)| format!("{m}: {e}: {:?} (want {ok})", verdict(s, m, e)))
        .collect();
    assert!(bad.is_empty(), "{}\n{:#}", bad.join("\n"), s["thresholds"]);
}

#[test]
fn custom_metrics_of_each_kind_are_recorded_and_judged_as_k6_does() {
    let srv = TestServer::start();
    let r = run(
        "k6-custom",
        &[&script("custom_kinds.js"), "-e", &base(&srv)],
    );
    // Half the thresholds are planted to fail: k6's exit code for it.
    assert_eq!(r.code(), 99, "{}\n{}", r.stdout(), r.stderr());
    assert_eq!(srv.records().len(), 5);
    let s = r.summary();
    let c = &s["custom"];
    assert_eq!(num(&c["my_counter"], "values.count"), 15.0, "{c:#}");
    assert_eq!(c["지연시간"]["kind"], "trend");
    assert_eq!(c["지연시간"]["time"], true);
    assert_eq!(num(&c["지연시간"], "values.avg"), 30.0);
    assert_eq!(num(&c["지연시간"], "values.min"), 10.0);
    // A percentile is HdrHistogram's: within 0.1% of the value.
    let med = num(&c["지연시간"], "values.med");
    assert!((med - 30.0).abs() <= 0.03, "{med}");
    assert_eq!(num(&c["지연시간"], "values.max"), 50.0);
    assert_eq!(num(&c["my_rate"], "values.rate"), 0.8);
    assert_eq!(num(&c["my_rate"], "values.passes"), 4.0);
    assert_eq!(num(&c["my_rate"], "values.fails"), 1.0);
    assert_eq!(num(&c["my_gauge"], "values.value"), 3.0);
    assert_eq!(num(&c["my_gauge"], "values.min"), 3.0);
    assert_eq!(num(&c["my_gauge"], "values.max"), 9.0);
    verdicts_as_planted(
        &s,
        &[
            ("지연시간", "p(95)<1000", true),
            ("지연시간", "avg<20", false),
            ("my_counter", "count>10", true),
            ("my_counter", "count>100", false),
            ("my_rate", "rate>0.5", true),
            ("my_rate", "rate>0.9", false),
            ("my_gauge", "value<5", true),
            ("my_gauge", "max<9", false),
        ],
    );
    // Per second in the timeline: the seconds' counts add up to the run's.
    let mut adds = 0.0;
    for line in r.timeline() {
        for m in line["custom"].as_array().into_iter().flatten() {
            if m["name"] == "my_counter" {
                adds += num(m, "sum");
            }
        }
    }
    assert_eq!(adds, 15.0);
    // k6's summary object (what handleSummary receives) has them under k6's keys.
    let rd = pado_results::ResultDir::open(&r.dir).unwrap();
    let k6 = pado_report::k6_summary::data(&rd).unwrap();
    let m = &k6["metrics"];
    assert_eq!(m["my_counter"]["type"], "counter");
    assert_eq!(num(&m["my_counter"], "values.count"), 15.0);
    assert_eq!(m["지연시간"]["contains"], "time");
    assert_eq!(num(&m["지연시간"], "values.p(95)"), 50.0);
    assert_eq!(m["my_rate"]["thresholds"]["rate>0.9"]["ok"], false);
    assert_eq!(m["my_gauge"]["thresholds"]["value<5"]["ok"], true);
}

#[test]
fn the_terminal_summary_shows_each_custom_metric() {
    let srv = TestServer::start();
    let dir = tmp("k6-custom-text");
    let out = pado(&[
        "run",
        &script("custom_kinds.js"),
        "-e",
        &base(&srv),
        "--out",
        dir.join("r").to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("custom metrics"), "{text}");
    assert!(text.contains("my_counter  count=15"), "{text}");
    assert!(text.contains("my_rate     80.00% (4 / 5)"), "{text}");
    let trend = text
        .lines()
        .find(|l| l.trim_start().starts_with("지연시간"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(trend.contains("avg=30ms min=10ms med=30"), "{trend}");
    assert!(trend.ends_with("max=50ms p(90)=50ms p(95)=50ms"), "{trend}");
}

#[test]
fn abort_on_fail_on_a_custom_counter_stops_the_run() {
    let srv = TestServer::start();
    let t0 = Instant::now();
    let r = run(
        "k6-custom-abort",
        &[&script("abort_on_custom.js"), "-e", &base(&srv)],
    );
    let took = t0.elapsed();
    assert_eq!(r.code(), 99, "{}\n{}", r.stdout(), r.stderr());
    // 20 s planned; the counter reaches 3 after about 0.3 s.
    assert!(took < Duration::from_secs(12), "took {took:?}");
    let s = r.summary();
    assert_eq!(verdict(&s, "planted_errors", "count<3"), Some(false));
    // The counter counted every iteration the server saw.
    assert_eq!(
        num(&s["custom"]["planted_errors"], "values.count"),
        srv.records().len() as f64
    );
}

#[test]
fn group_duration_is_measured_per_group_and_the_groups_requests_are_tagged() {
    let srv = TestServer::start();
    let r = run("k6-groups", &[&script("groups.js"), "-e", &base(&srv)]);
    assert_eq!(r.code(), 99, "{}\n{}", r.stdout(), r.stderr());
    assert_eq!(srv.records().len(), 9);
    let s = r.summary();
    verdicts_as_planted(
        &s,
        &[
            ("group_duration{group:::login}", "min>=95", true),
            ("group_duration{group:::login}", "avg<50", false),
            ("group_duration{group:::browse}", "max<90", true),
            ("group_duration{group:::browse::상세}", "max<90", true),
            ("http_req_duration{group:::login}", "min>=95", true),
            ("http_reqs{group:::browse::상세}", "count==3", true),
        ],
    );
    // One duration per group run: 3 runs of each of the three groups.
    let g = &s["custom"]["group_duration"];
    assert_eq!(g["kind"], "trend");
    let rd = pado_results::ResultDir::open(&r.dir).unwrap();
    let totals = rd.read_totals().unwrap();
    let count = |path: &str| -> u64 {
        totals
            .custom
            .iter()
            .filter(|c| c.key.name == "group_duration")
            .filter(|c| c.key.tags.iter().any(|(k, v)| k == "group" && v == path))
            .map(|c| c.count)
            .sum()
    };
    assert_eq!(count("::login"), 3);
    assert_eq!(count("::browse"), 3);
    assert_eq!(count("::browse::상세"), 3);
    // A group lasts at least its requests: login waited 100 ms each time.
    assert!(num(g, "values.max") >= 100.0, "{g}");
}

#[test]
fn thresholds_select_the_tags_a_script_and_the_command_line_set() {
    let srv = TestServer::start();
    let r = run(
        "k6-tags",
        &[
            &script("tagged.js"),
            "-e",
            &base(&srv),
            "--tag",
            "team=파도",
        ],
    );
    assert_eq!(r.code(), 99, "{}\n{}", r.stdout(), r.stderr());
    assert_eq!(srv.records().len(), 4);
    let s = r.summary();
    verdicts_as_planted(
        &s,
        &[
            ("http_req_duration{type:API}", "min>=95", true),
            ("http_req_duration{type:static}", "max<90", true),
            ("http_req_duration{type:static}", "min>=95", false),
            ("http_reqs{type:API}", "count==2", true),
            // The server answers /delay with 200 and /json/item with 201.
            ("http_reqs{status:200}", "count==2", true),
            ("http_reqs{status:201}", "count==2", true),
            ("http_reqs{env:staging}", "count==4", true),
            ("http_reqs{flow:구매}", "count==4", true),
            ("http_reqs{team:파도}", "count==4", true),
            ("http_reqs{type:static}", "count==3", false),
            ("work{kind:읽기}", "max==5", true),
            ("work{kind:쓰기}", "max==7", true),
            ("work{team:파도}", "max==7", true),
            ("checks{mytag:x}", "rate==0.5", true),
            ("checks{mytag:x}", "rate>0.9", false),
            ("checks{team:파도}", "rate==0.5", true),
        ],
    );
    // The checks by name are counted once, as without tags.
    assert_eq!(num(&s["checks"]["is 200"], "passes"), 1.0);
    assert_eq!(num(&s["checks"]["is 201"], "fails"), 1.0);
    assert!(s["custom"].get("checks").is_none(), "{:#}", s["custom"]);
}

#[test]
fn a_metric_name_k6_refuses_stops_the_run_at_start_naming_it() {
    let srv = TestServer::start();
    let r = run(
        "k6-bad-metric",
        &[&script("bad_metric_name.js"), "-e", &base(&srv)],
    );
    assert_eq!(r.code(), 107, "{}\n{}", r.stdout(), r.stderr());
    let e = r.stderr();
    assert!(e.contains("bad-name"), "{e}");
    assert!(e.contains("bad_metric_name.js:4"), "names the line: {e}");
    assert!(srv.records().is_empty());
}

/// Run `segment_part.js` as part `part` into `dir`, made segment `part` of 2.
fn part_run(srv: &TestServer, dir: &Path, part: u32) {
    let out = pado(&[
        "run",
        &script("segment_part.js"),
        "-e",
        &base(srv),
        "-e",
        &format!("PART={part}"),
        "--out",
        dir.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = dir.join("run.json");
    let mut v = read_json(&p);
    v["segment"] = serde_json::json!({
        "index": part, "count": 2, "weights": [1, 1], "plan_id": "c0ffee00c0ffee00",
    });
    v["thresholds"] = serde_json::json!([
        { "metric": "part_trend", "expr": "max==100", "abort_on_fail": false },
        { "metric": "part_counter", "expr": "count==15", "abort_on_fail": false },
    ]);
    std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

#[test]
fn custom_metrics_merge_exactly_across_segments() {
    let srv = TestServer::start();
    let root = tmp("k6-custom-merge");
    let dirs: Vec<PathBuf> = (0..2).map(|i| root.join(format!("seg{i}"))).collect();
    for (i, d) in dirs.iter().enumerate() {
        part_run(&srv, d, i as u32);
    }
    let out = root.join("merged");
    let o = merge(&dirs, &out, &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s = read_json(&out.join("summary.json"));
    let c = &s["custom"];
    // Part 0 added 5 × 1, part 1 5 × 2.
    assert_eq!(num(&c["part_counter"], "values.count"), 15.0, "{c:#}");
    // 10, 20, ..., 100: the union's statistics, not either part's.
    assert_eq!(num(&c["part_trend"], "values.min"), 10.0);
    assert_eq!(num(&c["part_trend"], "values.max"), 100.0);
    assert_eq!(num(&c["part_trend"], "values.avg"), 55.0);
    // Percentiles of the added histograms: HdrHistogram's, within 0.1%.
    let med = num(&c["part_trend"], "values.med");
    assert!((med - 50.0).abs() <= 0.05, "{med}");
    let p90 = num(&c["part_trend"], "values.p(90)");
    assert!((p90 - 90.0).abs() <= 0.09, "{p90}");
    // Thresholds no part passes alone, judged on the merged run.
    verdicts_as_planted(
        &s,
        &[
            ("part_trend", "max==100", true),
            ("part_counter", "count==15", true),
        ],
    );
    for d in &dirs {
        let alone = read_json(&d.join("summary.json"));
        assert_ne!(num(&alone["custom"]["part_counter"], "values.count"), 15.0);
    }
}
