//! Thresholds in k6 syntax drive the exit code.

use pado_testkit::TestServer;

use crate::harness::{fixture, run, tmp, write_file, write_fixture};

#[test]
fn a_failed_threshold_exits_99_and_says_which() {
    let srv = TestServer::start();
    let r = run(
        "th-fail",
        &[
            "--url",
            &srv.url("/delay/20"),
            "--vus",
            "2",
            "--duration",
            "1s",
            "--threshold",
            "p(95) < 5",
            "--threshold",
            "http_req_failed: rate < 0.01",
        ],
    );
    assert_eq!(r.code(), 99, "{}", r.stderr());
    let s = r.summary();
    let t = s["thresholds"].as_array().unwrap();
    assert_eq!(t.len(), 2);
    let dur = t
        .iter()
        .find(|x| x["metric"] == "http_req_duration")
        .unwrap();
    assert_eq!(dur["ok"], false);
    assert!(dur["value"].as_f64().unwrap() >= 20.0);
    let failed = t.iter().find(|x| x["metric"] == "http_req_failed").unwrap();
    assert_eq!(failed["ok"], true);
    assert!(
        r.stdout().contains("✗ http_req_duration: p(95) < 5"),
        "{}",
        r.stdout()
    );
}

#[test]
fn passing_thresholds_exit_0() {
    let srv = TestServer::start();
    let r = run(
        "th-pass",
        &[
            "--url",
            &srv.url("/"),
            "--vus",
            "2",
            "--duration",
            "1s",
            "--threshold",
            "p(99) < 1000",
            "--threshold",
            "http_reqs: count > 10",
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert_eq!(r.summary()["thresholds_ok"], true);
}

#[test]
fn per_step_thresholds_and_abort_on_fail_from_a_file() {
    let srv = TestServer::start();
    let dir = tmp("th-file");
    let f = write_fixture(
        &dir,
        "thresholds_per_step_thresholds_and_abort_on_fail_from_a_file.yaml",
        "t.yaml",
        &[("target", srv.base_url())],
    );
    let started = std::time::Instant::now();
    let r = run("th-file", &[f.to_str().unwrap()]);
    // The failure rate is ~50%: the run stops early and the threshold fails.
    assert_eq!(r.code(), 99, "{}", r.stderr());
    assert!(
        started.elapsed().as_secs() < 10,
        "abort_on_fail did not stop the run"
    );
    let s = r.summary();
    assert_eq!(s["interrupted"], true);
    let t = s["thresholds"].as_array().unwrap();
    assert_eq!(
        t.iter()
            .find(|x| x["metric"] == "http_req_duration{step:slow}")
            .unwrap()["ok"],
        true
    );
    assert_eq!(
        t.iter().find(|x| x["metric"] == "http_req_failed").unwrap()["ok"],
        false
    );
    assert!(r.stderr().contains("abort_on_fail"), "{}", r.stderr());
}

#[test]
fn a_bad_threshold_is_invalid_input_with_its_line() {
    let dir = tmp("th-bad");
    let f = write_fixture(
        &dir,
        "thresholds_a_bad_threshold_is_invalid_input_with_its_line.yaml",
        "t.yaml",
        &[],
    );
    let r = run("th-bad", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 2);
    let e = r.stderr();
    assert!(e.contains("t.yaml:3:"), "{e}");
    assert!(e.contains("p(95)"), "{e}");
    let r = run(
        "th-bad-cli",
        &["--url", "http://127.0.0.1:9/", "--threshold", "p(95) <"],
    );
    assert_eq!(r.code(), 2);
    assert!(r.stderr().contains("--threshold"), "{}", r.stderr());
}

/// Two scenarios with exact iteration counts: `browse` runs 10 iterations of
/// `GET /home` (200) and `GET /status/503` (unexpected, so failed); `buy` runs 4
/// of `group: checkout` around `POST /json/item` (201). `extra` adds thresholds.
fn two_scenarios(srv: &TestServer, extra: &str) -> String {
    fixture(
        "thresholds_scenario_status_method_group.yaml",
        &[("target", srv.base_url()), ("extra", extra.to_string())],
    )
}

/// The value of the summary's threshold `metric` (its key as written back).
fn threshold_value(s: &serde_json::Value, metric: &str, expr: &str) -> (bool, Option<f64>) {
    let t = s["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["metric"] == metric && x["expr"] == expr)
        .unwrap_or_else(|| panic!("no threshold {metric}: {expr} in {s}"));
    (t["ok"].as_bool().unwrap(), t["value"].as_f64())
}

#[test]
fn scenario_status_method_and_group_thresholds_have_the_servers_counts() {
    let srv = TestServer::start();
    let dir = tmp("th-k6-tags");
    let f = write_file(&dir, "t.yaml", &two_scenarios(&srv, ""));
    let r = run("th-k6-tags", &[f.to_str().unwrap()]);
    let seen = srv.stats();
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    // The server's own counts are the truth every value is held to.
    assert_eq!(seen.by_path.get("/home"), Some(&10));
    assert_eq!(seen.by_path.get("/status/503"), Some(&10));
    assert_eq!(seen.by_method.get("POST"), Some(&4));
    let s = r.summary();
    let browse = (seen.by_path["/home"] + seen.by_path["/status/503"]) as f64;
    for (metric, expr, want) in [
        ("http_reqs{scenario:browse}", "count == 20", browse),
        (
            "http_reqs{scenario:buy}",
            "count == 4",
            seen.by_method["POST"] as f64,
        ),
        (
            "http_req_failed{scenario:browse}",
            "rate == 0.5",
            seen.by_path["/status/503"] as f64 / browse,
        ),
        ("http_req_failed{scenario:buy}", "rate == 0", 0.0),
        (
            "http_reqs{status:200}",
            "count == 10",
            seen.by_path["/home"] as f64,
        ),
        (
            "http_reqs{status:201}",
            "count == 4",
            seen.by_path["/json/item"] as f64,
        ),
        (
            "http_reqs{method:POST}",
            "count == 4",
            seen.by_method["POST"] as f64,
        ),
        (
            "http_reqs{expected_response:true}",
            "count == 14",
            (seen.by_path["/home"] + seen.by_path["/json/item"]) as f64,
        ),
        (
            "http_reqs{group:::checkout}",
            "count == 4",
            seen.by_method["POST"] as f64,
        ),
    ] {
        assert_eq!(
            threshold_value(&s, metric, expr),
            (true, Some(want)),
            "{metric}"
        );
    }
    for (metric, expr) in [
        ("http_req_duration{scenario:buy}", "p(95) < 5000"),
        ("http_req_duration{method:GET}", "max < 5000"),
        ("group_duration{group:::checkout}", "max < 5000"),
    ] {
        let (ok, v) = threshold_value(&s, metric, expr);
        assert!(ok && v.is_some_and(|v| v > 0.0), "{metric}: {v:?}");
    }
}

#[test]
fn a_scenario_threshold_planted_to_fail_exits_99_with_the_real_value() {
    let srv = TestServer::start();
    let dir = tmp("th-k6-fail");
    let extra = "  \"http_req_failed{scenario:browse}\": [\"rate == 0.5\", \"rate < 0.1\"]\n";
    let text = two_scenarios(&srv, "").replace(
        "  \"http_req_failed{scenario:browse}\": [\"rate == 0.5\"]\n",
        extra,
    );
    let f = write_file(&dir, "t.yaml", &text);
    let r = run("th-k6-fail", &[f.to_str().unwrap()]);
    let seen = srv.stats();
    assert_eq!(r.code(), 99, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    let failed = seen.by_path["/status/503"] as f64;
    let browse = failed + seen.by_path["/home"] as f64;
    assert_eq!(
        threshold_value(&s, "http_req_failed{scenario:browse}", "rate < 0.1"),
        (false, Some(failed / browse))
    );
    let failing: Vec<_> = s["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["ok"] == false)
        .collect();
    assert_eq!(failing.len(), 1, "only the planted one fails: {failing:?}");
}

#[test]
fn a_tag_pado_cannot_answer_is_refused_at_validate_with_the_reason() {
    let srv = TestServer::start();
    let dir = tmp("th-k6-refused");
    let cases = [
        (
            "  \"http_req_duration{status:200}\": [\"p(95) < 500\"]\n",
            "one latency histogram",
        ),
        (
            "  \"http_reqs{group:checkout}\": [\"count > 0\"]\n",
            "group:::checkout",
        ),
        (
            "  \"http_reqs{method:DELETE}\": [\"count > 0\"]\n",
            "no method is named `DELETE`",
        ),
        (
            "  \"http_reqs{group:::login}\": [\"count > 0\"]\n",
            "no group is named `::login`",
        ),
        (
            "  \"http_req_duration{url:http://x/}\": [\"p(95) < 500\"]\n",
            "k6 sets `url`, pado does not: a step is one request",
        ),
    ];
    for (i, (extra, says)) in cases.iter().enumerate() {
        let f = write_file(&dir, &format!("t{i}.yaml"), &two_scenarios(&srv, extra));
        let o = crate::harness::pado(&["validate", f.to_str().unwrap()]);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra}: {e}");
        assert!(e.contains(says), "{extra}: {e}");
        assert!(
            e.contains(&format!("t{i}.yaml:")),
            "{extra}: names the file: {e}"
        );
    }
    // group_duration in a file without groups could never have data.
    let flat = two_scenarios(&srv, "")
        .replace(
            "      - group: checkout\n        steps:\n          - {",
            "      - {",
        )
        .replace("  \"http_reqs{group:::checkout}\": [\"count == 4\"]\n", "")
        .replace(
            "  \"group_duration{group:::checkout}\": [\"max < 5000\"]\n",
            "  group_duration: [\"max < 5000\"]\n",
        );
    let f = write_file(&dir, "flat.yaml", &flat);
    let o = crate::harness::pado(&["validate", f.to_str().unwrap()]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("no `group:` block"), "{e}");
    // A step used by both scenarios would bring the other's requests along.
    let shared = two_scenarios(&srv, "").replace("name: pay,", "name: 홈,");
    let f = write_file(&dir, "shared.yaml", &shared);
    let o = crate::harness::pado(&["validate", f.to_str().unwrap()]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("step `홈` is used in more than one scenario"),
        "{e}"
    );
    assert_eq!(srv.stats().requests, 0, "validate sends nothing");
}
