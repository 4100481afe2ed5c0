//! Thresholds in k6 syntax drive the exit code.

use pado_testkit::TestServer;

use crate::harness::{run, tmp, write_file};

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
    let f = write_file(
        &dir,
        "t.yaml",
        &format!(
            "target: {}\nthresholds:\n  \"http_req_duration{{step:slow}}\": [\"p(95) < 1000\"]\n  http_req_failed:\n    - {{ threshold: \"rate < 0.1\", abort_on_fail: true }}\nscenarios:\n  s:\n    executor: constant-vus\n    vus: 2\n    duration: 20s\n    mix:\n      - {{ weight: 1, name: slow, request: \"GET /delay/10\" }}\n      - {{ weight: 1, name: bad, request: \"GET /status/500\" }}\n",
            srv.base_url()
        ),
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
    let f = write_file(
        &dir,
        "t.yaml",
        "target: http://127.0.0.1:9\nthresholds:\n  http_req_duration: [\"p95 < 200\"]\nscenarios:\n  s: { executor: constant-vus, duration: 1s, flow: [ { request: / } ] }\n",
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
