//! One verdict everywhere: whatever was judged — a threshold scoped to a stage or
//! a window, an event's expectation, the `--soak` verdict, the rule that a run in
//! which every request failed fails — the exit code, the summary's verdict,
//! `junit.xml` and the `pado history` row say the same. Each rule is planted where
//! it must fire and where it must not.

use std::path::PathBuf;

use pado_testkit::TestServer;
use serde_json::Value;

use crate::harness::{
    demo_target, fixture, free_port, pado_cmd, shared_machine, tmp, write_file, write_fixture,
};

/// What one `pado run` left behind, run with a `PADO_HOME` of its own.
struct Judged {
    code: i32,
    stdout: String,
    stderr: String,
    summary: Value,
    junit: String,
    /// The `pado history` row's exit code.
    history_exit: i64,
    /// The result directory.
    dir: PathBuf,
}

/// `pado run ARGS --out DIR --export junit --quiet --no-html` in a home of its own,
/// then `pado history --json` there.
fn judged(name: &str, args: &[&str]) -> (Judged, crate::harness::Tmp) {
    let _machine = shared_machine();
    let t = tmp(name);
    let home = t.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let dir = t.join("result");
    let out = pado_cmd(["run"])
        .args(args)
        .args(["--export", "junit", "--quiet", "--no-html", "--out"])
        .arg(&dir)
        .env("PADO_HOME", &home)
        .current_dir(&home)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let read = |f: &str| {
        std::fs::read_to_string(dir.join(f))
            .unwrap_or_else(|e| panic!("{f}: {e}\n{stdout}\n{stderr}"))
    };
    let summary: Value = serde_json::from_str(&read("summary.json")).unwrap();
    let junit = read("junit.xml");
    let h = pado_cmd(["history", "--json"])
        .env("PADO_HOME", &home)
        .current_dir(&home)
        .output()
        .unwrap();
    let rows: Value = serde_json::from_slice(&h.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&h.stderr)));
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    let history_exit = rows[0]["exit_code"].as_i64().unwrap();
    let j = Judged {
        code: out.status.code().unwrap_or(-1),
        stdout,
        stderr,
        summary,
        junit,
        history_exit,
        dir,
    };
    (j, t)
}

/// The `failures="N"` of `<testsuites>`.
fn junit_failures(xml: &str) -> u32 {
    let root = xml
        .lines()
        .find(|l| l.starts_with("<testsuites"))
        .unwrap_or_else(|| panic!("{xml}"));
    let at = root.find("failures=\"").unwrap() + "failures=\"".len();
    root[at..].split('"').next().unwrap().parse().unwrap()
}

/// The verdict's sentence about what was judged: the first after any note on
/// pado's own machine (a busy machine puts `GENERATOR SATURATED` first).
fn first_sentence(s: &Value) -> String {
    s["verdict"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find(|v| !v.starts_with("GENERATOR SATURATED") && !v.starts_with("generator delayed"))
        .unwrap_or_default()
        .to_string()
}

/// Every output agrees: exit code, `judged`, JUnit's failures and the history row.
fn agrees(j: &Judged, code: i32, failures: u32) {
    let why = format!("{}\n{}\n{}", j.stdout, j.stderr, j.summary["judged"]);
    assert_eq!(j.code, code, "{why}");
    assert_eq!(j.summary["judged"]["exit_code"], code, "{why}");
    assert_eq!(j.summary["judged"]["passed"], code == 0, "{why}");
    assert_eq!(junit_failures(&j.junit), failures, "{}", j.junit);
    assert_eq!(j.history_exit, i64::from(code), "{why}");
}

/// A stress test of two 4-second holds at 3 VUs, against the demo service: at the
/// start of stage 2 an event adds 300 ms to every answer (on pado's own clock), so
/// stage 1 is fast and stage 2 slow by construction.
#[test]
fn a_stage_threshold_fails_only_in_the_slow_stage() {
    // The demo service on a port of its own.
    let target = demo_target(pado_demo_target::TargetOptions {
        posts: 200,
        ..Default::default()
    });
    let t = tmp("verdict-stage");
    let file = write_fixture(
        &t,
        "verdict_a_stage_threshold_fails_only_in_the_slow_stage.yaml",
        "stress.yaml",
        &[("target", target.base_url())],
    );
    let (j, _t) = judged("verdict-stage-run", &[file.to_str().unwrap()]);
    agrees(&j, 99, 2);
    let th = j.summary["thresholds"].as_array().unwrap();
    let by_key = |k: &str| {
        th.iter()
            .find(|x| x["metric"] == k)
            .unwrap_or_else(|| panic!("{k}: {th:?}"))
    };
    for k in [
        "http_req_duration{stage:1}",
        "http_req_duration{stage:빠름}",
        "http_req_duration{window:0s-4s}",
    ] {
        let x = by_key(k);
        assert_eq!(x["ok"], true, "{x}");
        assert!(x["value"].as_f64().unwrap() < 150.0, "{x}");
    }
    for k in [
        "http_req_duration{stage:slow}",
        "http_req_duration{window:4s-8s}",
    ] {
        let x = by_key(k);
        assert_eq!(x["ok"], false, "{x}");
        assert!(x["value"].as_f64().unwrap() >= 300.0, "{x}");
        assert_eq!(x["window_s"], serde_json::json!([4.0, 8.0]), "{x}");
    }
    // The whole run mixes the stages: its p95 is the slow stage's.
    assert!(
        first_sentence(&j.summary)
            .starts_with("SLA not met: http_req_duration{stage:slow}: p(95) < 150"),
        "{}",
        j.summary["verdict"]
    );
    // `pado report` on the directory judges the same seconds, and exits the same.
    let rep = crate::harness::pado(&["report", j.dir.to_str().unwrap(), "--quiet"]);
    assert_eq!(
        rep.status.code(),
        Some(99),
        "{}",
        String::from_utf8_lossy(&rep.stderr)
    );
    let again: Value =
        serde_json::from_str(&std::fs::read_to_string(j.dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(again["thresholds"], j.summary["thresholds"]);
}

/// A `mark` event whose `recovers` expectation never holds (p95 under a
/// microsecond) fails the run with no threshold set: exit 99, the summary names the
/// event, JUnit has its one failure, the history row 99. The same run expecting
/// what it gets passes everywhere.
#[test]
fn a_failed_event_expectation_fails_the_verdict_everywhere() {
    let srv = TestServer::start();
    let t = tmp("verdict-event");
    let scenario = |expect: &str| {
        fixture(
            "verdict_event_expectation.yaml",
            &[("target", srv.base_url()), ("expect", expect.to_string())],
        )
    };
    let fail = write_file(&t, "fail.yaml", &scenario("p(95) < 0.001"));
    let (j, _t1) = judged("verdict-event-fail", &[fail.to_str().unwrap()]);
    agrees(&j, 99, 1);
    let first = first_sentence(&j.summary);
    assert!(
        first.starts_with("FAILED: event 배포: recovers p(95) < 0.001 within 1s"),
        "{first}"
    );
    assert!(
        !j.summary["verdict"]
            .to_string()
            .contains("no thresholds were set"),
        "{}",
        j.summary["verdict"]
    );
    assert!(
        j.junit
            .contains("<testsuite name=\"events\" tests=\"1\" failures=\"1\""),
        "{}",
        j.junit
    );

    let pass = write_file(&t, "pass.yaml", &scenario("p(95) < 10000"));
    let (j, _t2) = judged("verdict-event-pass", &[pass.to_str().unwrap()]);
    agrees(&j, 0, 0);
    assert!(
        j.junit
            .contains("<testsuite name=\"events\" tests=\"1\" failures=\"0\""),
        "{}",
        j.junit
    );
}

/// `--soak` on a run too short to hold steady load for 30 s: the soak verdict
/// cannot be judged, so it fails, and every output says so.
#[test]
fn a_soak_that_cannot_be_judged_fails_the_verdict_everywhere() {
    let srv = TestServer::start();
    let (j, _t) = judged(
        "verdict-soak",
        &[
            "--url",
            &srv.url("/"),
            "--vus",
            "1",
            "--duration",
            "2s",
            "--soak",
        ],
    );
    agrees(&j, 99, 1);
    let first = first_sentence(&j.summary);
    assert!(
        first.starts_with("FAILED: soak: no period of steady load"),
        "{first}"
    );
    assert!(
        j.junit
            .contains("<testsuite name=\"soak\" tests=\"1\" failures=\"1\""),
        "{}",
        j.junit
    );
}

/// Every request failed — nothing listening, or a 500 the step does not expect —
/// is never a quiet exit 0; a run that expects the 500 (`check: { status: 500 }`)
/// passes.
#[test]
fn a_run_where_every_request_failed_fails_and_says_why() {
    let port = free_port();
    let closed = format!("http://127.0.0.1:{port}/");
    let (j, _t1) = judged(
        "verdict-closed",
        &["--url", &closed, "--vus", "1", "--duration", "1s"],
    );
    agrees(&j, 99, 1);
    let first = first_sentence(&j.summary);
    assert!(
        first.starts_with("FAILED: requests: some completed, not all failed: every request failed"),
        "{first}"
    );
    assert!(
        j.junit
            .contains("<testsuite name=\"requests\" tests=\"1\" failures=\"1\""),
        "{}",
        j.junit
    );

    let srv = TestServer::start();
    let (j, _t2) = judged(
        "verdict-500",
        &[
            "--url",
            &srv.url("/status/500"),
            "--vus",
            "1",
            "--duration",
            "1s",
        ],
    );
    agrees(&j, 99, 1);
    let first = first_sentence(&j.summary);
    assert!(
        first.contains("every request failed") && first.contains("http_500"),
        "{first}"
    );

    let t = tmp("verdict-expect-500");
    let f = write_fixture(
        &t,
        "verdict_a_run_where_every_request_failed_fails_and_says_why.yaml",
        "expect500.yaml",
        &[("target", srv.base_url())],
    );
    let (j, _t3) = judged("verdict-expect-500-run", &[f.to_str().unwrap()]);
    agrees(&j, 0, 0);
    assert!(j.summary["requests"].as_u64().unwrap() > 0);
    assert_eq!(j.summary["failed"], 0);
}

/// A stage that does not exist is refused before anything runs, with file and line.
#[test]
fn a_stage_that_does_not_exist_is_an_error_with_its_line() {
    let t = tmp("verdict-bad-stage");
    let f = write_fixture(
        &t,
        "verdict_a_stage_that_does_not_exist_is_an_error_with_its_line.yaml",
        "bad.yaml",
        &[],
    );
    let out = crate::harness::pado(&["validate", f.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.yaml:3"), "{err}");
    assert!(
        err.contains("stage 3 does not exist: scenario `s` has 2 (counting from 1)"),
        "{err}"
    );
}
