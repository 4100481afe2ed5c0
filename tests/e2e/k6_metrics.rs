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

/// Every group and check of k6's `root_group`, by path: a group's `id`, a
/// check's `id`, passes and fails.
fn group_tree(g: &Value, out: &mut std::collections::BTreeMap<String, Value>) {
    for c in g["checks"].as_array().unwrap() {
        out.insert(
            c["path"].as_str().unwrap().to_string(),
            serde_json::json!([c["id"], c["passes"], c["fails"]]),
        );
    }
    for s in g["groups"].as_array().unwrap() {
        out.insert(
            s["path"].as_str().unwrap().to_string(),
            serde_json::json!([s["id"]]),
        );
        group_tree(s, out);
    }
}

/// k6 itself on `script` against `base`, with `extra` flags: the `data` its
/// `handleSummary` wrote. k6 never reports usage and only reaches loopback.
fn k6_summary_data(k6: &Path, script: &str, base: &str, out: &Path, extra: &[&str]) -> Value {
    let o = std::process::Command::new(k6)
        .env("K6_NO_USAGE_REPORT", "true")
        .args(["run", "--quiet", "--no-color"])
        .args(["-e", base, "-e", &format!("OUT={}", out.display())])
        .args(extra)
        .arg(script)
        .output()
        .expect("running k6");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    read_json(out)
}

/// pado's `handleSummary` data for `summary_groups.js` (with `extra` flags),
/// and what pado printed.
fn pado_summary_data(srv: &TestServer, name: &str, extra: &[&str]) -> (Value, String) {
    let dir = tmp(name);
    let out = dir.join("data.json");
    let mut args = vec![
        "run".to_string(),
        script("summary_groups.js"),
        "-e".into(),
        base(srv),
        "-e".into(),
        format!("OUT={}", out.display()),
        "--out".into(),
        dir.join("r").display().to_string(),
        "--quiet".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = pado(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    (
        read_json(&out),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

/// The checks of `summary_groups.js` sit in their groups with the counts its
/// logic gives (and, where k6 is installed, exactly as k6's own handleSummary
/// data has them: paths, ids, passes and fails).
#[test]
fn checks_sit_in_their_groups_as_k6_gives_them() {
    let srv = TestServer::start();
    let (data, _) = pado_summary_data(&srv, "k6-summary-groups", &[]);
    assert_eq!(srv.records().len(), 4);
    let mut ours = std::collections::BTreeMap::new();
    group_tree(&data["root_group"], &mut ours);
    let counts = |path: &str| (ours[path][1].as_u64(), ours[path][2].as_u64());
    assert_eq!(counts("::status 201"), (Some(4), Some(0)), "{ours:#?}");
    assert_eq!(counts("::odd iteration"), (Some(2), Some(2)));
    assert_eq!(counts("::login::status 201"), (Some(4), Some(0)));
    assert_eq!(counts("::login::토큰::first two"), (Some(2), Some(2)));
    assert!(ours.contains_key("::empty"), "{ours:#?}");
    // Only the root's own checks at the root.
    assert_eq!(data["root_group"]["checks"].as_array().unwrap().len(), 2);
    let Some(k6) = crate::k6_corpus::k6_or_skip() else {
        return;
    };
    let work = tmp("k6-summary-groups-k6");
    let theirs = k6_summary_data(
        &k6,
        &script("summary_groups.js"),
        &base(&srv),
        &work.join("k6.json"),
        &[],
    );
    let mut k = std::collections::BTreeMap::new();
    group_tree(&theirs["root_group"], &mut k);
    assert_eq!(ours, k);
}

/// `summaryTrendStats` (the script's, then the flag's) chooses exactly the
/// statistics of every trend in handleSummary's data, with the planted values;
/// k6 gives the same keys for the same script.
#[test]
fn summary_trend_stats_choose_each_trends_statistics() {
    let srv = TestServer::start();
    let (data, text) = pado_summary_data(&srv, "k6-summary-stats", &[]);
    let want = [
        "avg", "min", "med", "max", "p(90)", "p(95)", "p(99.9)", "count",
    ];
    let keys = |d: &Value, m: &str| -> std::collections::BTreeSet<String> {
        d["metrics"][m]["values"]
            .as_object()
            .unwrap_or_else(|| panic!("no {m} in {d:#}"))
            .keys()
            .cloned()
            .collect()
    };
    let want_set: std::collections::BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
    for m in ["http_req_duration", "iteration_duration", "wait_ms"] {
        assert_eq!(keys(&data, m), want_set, "{m}");
    }
    assert_eq!(
        data["options"]["summaryTrendStats"],
        serde_json::json!(want)
    );
    let w = &data["metrics"]["wait_ms"]["values"];
    assert_eq!(w["count"], 4.0);
    assert_eq!(w["avg"], 15.0);
    assert_eq!(
        (w["min"].as_f64(), w["max"].as_f64()),
        (Some(0.0), Some(30.0))
    );
    assert_eq!(
        data["metrics"]["http_req_duration"]["values"]["count"].as_f64(),
        Some(srv.records().len() as f64)
    );
    // pado's own summary shows the script's trend with the same statistics.
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("wait_ms"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("avg=15 min=0 med=")
            && line.contains(" count=4 ")
            && line.trim_end().ends_with("p(99.9)=30"),
        "{line}"
    );
    // The flag over the script's option, and summaryTimeUnit handed over.
    let (data, _) = pado_summary_data(
        &srv,
        "k6-summary-stats-flag",
        &[
            "--summary-trend-stats",
            "p(99),count",
            "--summary-time-unit",
            "s",
        ],
    );
    let two: std::collections::BTreeSet<String> = ["p(99)".to_string(), "count".into()].into();
    assert_eq!(keys(&data, "wait_ms"), two);
    assert_eq!(keys(&data, "http_req_duration"), two);
    assert_eq!(data["options"]["summaryTimeUnit"], "s");
    let Some(k6) = crate::k6_corpus::k6_or_skip() else {
        return;
    };
    let work = tmp("k6-summary-stats-k6");
    let theirs = k6_summary_data(
        &k6,
        &script("summary_groups.js"),
        &base(&srv),
        &work.join("k6.json"),
        &[],
    );
    for m in ["http_req_duration", "iteration_duration", "wait_ms"] {
        assert_eq!(keys(&theirs, m), want_set, "k6's {m}");
    }
    assert_eq!(theirs["metrics"]["wait_ms"]["values"]["avg"], 15.0);
}

/// A statistic k6 refuses stops the run before any request, in k6's words,
/// whether the script's option or the flag names it.
#[test]
fn a_bad_summary_trend_stat_stops_the_run_at_start() {
    let srv = TestServer::start();
    let o = pado(&[
        "run",
        &script("summary_bad_stat.js"),
        "-e",
        &base(&srv),
        "--quiet",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("summary_bad_stat.js")
            && err.contains("summaryTrendStats")
            && err.contains("invalid trend stat 'p95', unknown format"),
        "{err}"
    );
    let o = pado(&[
        "run",
        &script("summary_groups.js"),
        "-e",
        &base(&srv),
        "--summary-trend-stats",
        "avg,p(101)",
        "--quiet",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("--summary-trend-stats")
            && err.contains("invalid percentile trend stat value 'p(101)'"),
        "{err}"
    );
    let o = pado(&[
        "run",
        &script("summary_groups.js"),
        "-e",
        &base(&srv),
        "--summary-time-unit",
        "h",
        "--quiet",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("invalid summary time unit 'h', use 's', 'ms' or 'us'"),
        "{err}"
    );
    assert_eq!(srv.records().len(), 0, "a refused run sent requests");
}

/// `--once` judges a script's checks as a scenario's: a failing one (in a group)
/// fails the pass, named in the output; all passing exits 0.
#[test]
fn once_counts_a_scripts_checks_in_its_verdict() {
    let srv = TestServer::start();
    let once = |plant: &str| {
        pado(&[
            "run",
            &script("once_checks.js"),
            "-e",
            &base(&srv),
            "-e",
            &format!("PLANT={plant}"),
            "--once",
        ])
    };
    let bad = once("fail");
    let text = String::from_utf8_lossy(&bad.stdout);
    assert_eq!(bad.status.code(), Some(99), "{text}");
    assert!(text.contains("✗ check ::order::planted"), "{text}");
    assert!(text.contains("✓ check created"), "{text}");
    assert!(text.contains("2 checks, 1 failed"), "{text}");
    let good = once("pass");
    let text = String::from_utf8_lossy(&good.stdout);
    assert_eq!(good.status.code(), Some(0), "{text}");
    assert!(text.contains("2 checks, 0 failed"), "{text}");
    assert_eq!(srv.records().len(), 2);
}

/// A series' labels, as received.
type Labels = Vec<(String, String)>;

/// The latest sample of the Prometheus series named `name` (the planted metrics
/// have one series each), with its labels.
fn prom_last(bodies: &[Vec<u8>], name: &str) -> (f64, Labels) {
    let mut best: Option<(i64, f64, Labels)> = None;
    for b in bodies {
        let wr = pado_outputs::prometheus::decode(b).unwrap();
        for t in &wr.timeseries {
            if !t
                .labels
                .iter()
                .any(|l| l.name == "__name__" && l.value == name)
            {
                continue;
            }
            for s in &t.samples {
                if best.as_ref().is_none_or(|(ts, _, _)| s.timestamp > *ts) {
                    let labels = t
                        .labels
                        .iter()
                        .map(|l| (l.name.clone(), l.value.clone()))
                        .collect();
                    best = Some((s.timestamp, s.value, labels));
                }
            }
        }
    }
    let (_, v, l) = best.unwrap_or_else(|| panic!("no {name} received"));
    (v, l)
}

/// The bodies pado's outputs posted to `path` of the test server.
fn bodies(srv: &TestServer, path: &str) -> Vec<Vec<u8>> {
    srv.records()
        .into_iter()
        .filter(|x| x.path == path)
        .map(|x| x.body)
        .collect()
}

/// Prometheus: counters and gauges at their last sample, the trend a histogram,
/// the Hangul name and tag in labels.
fn prometheus_got_the_planted_values(srv: &TestServer) {
    let prom = bodies(srv, "/api/v1/write");
    assert!(!prom.is_empty());
    let (orders, labels) = prom_last(&prom, "pado_script____total");
    assert_eq!(orders, 12.0);
    assert!(
        labels.contains(&("metric".into(), "주문".into())),
        "{labels:?}"
    );
    assert!(
        labels.contains(&("tag___".into(), "결제".into())),
        "{labels:?}"
    );
    assert_eq!(prom_last(&prom, "pado_script_queue_depth").0, 6.0);
    assert_eq!(prom_last(&prom, "pado_script_ok_rate_passes_total").0, 4.0);
    assert_eq!(prom_last(&prom, "pado_script_ok_rate_samples_total").0, 6.0);
    assert_eq!(
        prom_last(&prom, "pado_script_wait_time_seconds_count").0,
        6.0
    );
    let sum = prom_last(&prom, "pado_script_wait_time_seconds_sum").0;
    assert!((sum - 0.21).abs() < 1e-9, "{sum}");
}

/// A field of a line-protocol line.
fn influx_field(l: &str, f: &str) -> f64 {
    l.rsplit(' ')
        .nth(1)
        .unwrap()
        .split(',')
        .find_map(|kv| kv.strip_prefix(&format!("{f}=")))
        .unwrap_or_else(|| panic!("no {f} in {l}"))
        .trim_end_matches('i')
        .parse()
        .unwrap()
}

/// InfluxDB: each second's increase adds up to the totals; the measurement keeps
/// the Hangul name.
fn influx_got_the_planted_values(srv: &TestServer) {
    let lines: Vec<String> = bodies(srv, "/write")
        .into_iter()
        .flat_map(|b| {
            String::from_utf8(b)
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    let of = |m: &str| -> Vec<&String> {
        lines
            .iter()
            .filter(|l| l.starts_with(&format!("{m},")))
            .collect()
    };
    let f = influx_field;
    let counter = of("pado_script_주문");
    assert!(
        counter.iter().all(|l| l.contains("tag___=결제")),
        "{counter:?}"
    );
    assert_eq!(counter.iter().map(|l| f(l, "count")).sum::<f64>(), 12.0);
    assert_eq!(f(counter.last().unwrap(), "total"), 12.0);
    assert_eq!(
        f(of("pado_script_queue_depth").last().unwrap(), "value"),
        6.0
    );
    let rate = of("pado_script_ok_rate");
    assert_eq!(f(rate.last().unwrap(), "passes"), 4.0);
    assert_eq!(f(rate.last().unwrap(), "samples"), 6.0);
    let trend = of("pado_script_wait_time");
    assert_eq!(trend.iter().map(|l| f(l, "count")).sum::<f64>(), 6.0);
    assert_eq!(trend.iter().map(|l| f(l, "max")).fold(0.0, f64::max), 60.0);
}

/// OTLP: the latest point of each metric (a histogram's count).
fn otlp_got_the_planted_values(srv: &TestServer) {
    use pado_outputs::otlp::Data;
    let mut latest: std::collections::BTreeMap<String, (u64, f64)> = Default::default();
    for b in bodies(srv, "/v1/metrics") {
        let req = pado_outputs::otlp::decode(&b).unwrap();
        for m in &req.resource_metrics[0].scope_metrics[0].metrics {
            let number = |p: &pado_outputs::otlp::NumberDataPoint| {
                (p.time_unix_nano, p.as_double.unwrap_or(p.as_int as f64))
            };
            let points: Vec<(u64, f64)> = match &m.data {
                Some(Data::Sum(s)) => s.data_points.iter().map(number).collect(),
                Some(Data::Gauge(g)) => g.data_points.iter().map(number).collect(),
                Some(Data::Histogram(h)) => h
                    .data_points
                    .iter()
                    .map(|p| (p.time_unix_nano, p.count as f64))
                    .collect(),
                None => Vec::new(),
            };
            for (t, v) in points {
                let e = latest.entry(m.name.clone()).or_insert((0, 0.0));
                if t >= e.0 {
                    *e = (t, v);
                }
            }
        }
    }
    let got = |n: &str| latest.get(n).map(|e| e.1);
    assert_eq!(got("pado_script___"), Some(12.0), "{latest:?}");
    assert_eq!(got("pado_script_queue_depth"), Some(6.0));
    assert_eq!(got("pado_script_ok_rate_passes"), Some(4.0));
    assert_eq!(got("pado_script_ok_rate_samples"), Some(6.0));
    assert_eq!(got("pado_script_wait_time_seconds"), Some(6.0));
}

/// A script's Counter, Gauge, Rate and Trend reach Prometheus remote write,
/// InfluxDB and OTLP (the test kit's server receives and pado's decoders read
/// them): the values received equal the script's planted logic, Hangul names
/// and tags intact where the format allows.
#[test]
fn custom_metrics_reach_every_live_output() {
    let srv = TestServer::start();
    let r = run(
        "k6-live-outputs",
        &[
            &script("live_outputs.js"),
            "-e",
            &base(&srv),
            "--output",
            &format!("prometheus={}", srv.url("/api/v1/write")),
            "--output",
            &format!("influxdb={}", srv.url("/write?db=pado")),
            "--output",
            &format!("otlp={}", srv.url("/v1/metrics")),
        ],
    );
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let loads = srv
        .records()
        .iter()
        .filter(|x| x.path == "/json/item")
        .count();
    assert_eq!(loads, 6);
    prometheus_got_the_planted_values(&srv);
    influx_got_the_planted_values(&srv);
    otlp_got_the_planted_values(&srv);
}
