//! Scenario files: weighted mixes, flows, checks, Hangul, and errors with lines.

use pado_testkit::TestServer;

use crate::harness::{num, pado, run, tmp, write_fixture};

#[test]
fn weighted_mix_and_flow_with_checks_and_hangul() {
    let srv = TestServer::start();
    let dir = tmp("mix");
    let f = write_fixture(
        &dir,
        "scenarios_weighted_mix_and_flow_with_checks_and_hangul.yaml",
        "mix.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("mix", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    let recs = srv.records();
    let total_iterations = 1000.0;
    assert_eq!(num(&s, "iterations"), total_iterations);
    assert_eq!(num(&s, "requests") as usize, recs.len());
    // Weights hold within sampling noise (1000 draws).
    let search = recs.iter().filter(|r| r.path == "/api/search").count() as f64;
    let detail = recs.iter().filter(|r| r.path == "/api/posts/1").count() as f64;
    let create = recs.iter().filter(|r| r.path == "/json/item").count() as f64;
    assert!((search - 300.0).abs() < 60.0, "search {search}");
    assert!((detail - 600.0).abs() < 60.0, "detail {detail}");
    assert!((create - 100.0).abs() < 40.0, "create {create}");
    assert_eq!(
        recs.iter().filter(|r| r.path == "/status/404").count() as f64,
        create
    );
    // Hangul in the query arrives percent-encoded and decodes intact.
    let one = recs.iter().find(|r| r.path == "/api/search").unwrap();
    assert!(one.target.contains("%EA%B2%80%EC%83%89"), "{}", one.target);
    assert!(one.query.iter().any(|(k, v)| k == "q" && v == "검색 엔진"));
    // JSON body and default headers.
    let c = recs.iter().find(|r| r.path == "/json/item").unwrap();
    let body: serde_json::Value = serde_json::from_slice(&c.body).unwrap();
    assert_eq!(body["title"], "안녕하세요");
    assert!(c
        .headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("x-test") && v == "pado"));
    assert!(c
        .headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("content-type") && v == "application/json"));
    // A 404 that the check expects is not a failure.
    assert_eq!(num(&s, "failed"), 0.0, "{s}");
    assert_eq!(s["name"], "검색 부하");
    let steps = s["steps"].as_object().unwrap();
    assert_eq!(num(&steps["search"], "requests"), search);
    assert_eq!(num(&steps["missing"], "requests"), create);
    // Iterations per named flow.
    assert_eq!(num(&s["flows"]["browse/write"], "iterations"), create);
    assert!(num(&s["flows"]["browse/write"], "iteration_duration_ms.min") > 0.0);
    let checks = s["checks"].as_object().unwrap();
    assert_eq!(num(&checks["search: status is 200"], "passes"), search);
    assert_eq!(num(&checks["missing: status is 404"], "passes"), create);
    assert!(r.stdout().contains("검색 부하"));
}

#[test]
fn a_failed_check_fails_the_request() {
    let srv = TestServer::start();
    let dir = tmp("check");
    let f = write_fixture(
        &dir,
        "scenarios_a_failed_check_fails_the_request.yaml",
        "c.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("check", &[f.to_str().unwrap()]);
    // Every request failed its check, so every request failed: the verdict fails
    // the run (exit 99) and says so.
    assert_eq!(r.code(), 99, "{}", r.stderr());
    assert!(
        r.stdout().contains("every request failed"),
        "{}",
        r.stdout()
    );
    let s = r.summary();
    assert_eq!(num(&s, "failed"), 20.0);
    assert_eq!(num(&s, "errors.check_failed"), 20.0);
    assert!(
        r.stdout().contains("✗ home: body contains \"not there\""),
        "{}",
        r.stdout()
    );
}

#[test]
fn an_invalid_file_exits_2_naming_file_line_and_field() {
    let dir = tmp("invalid");
    let f = write_fixture(
        &dir,
        "scenarios_an_invalid_file_exits_2_naming_file_line_and_field.yaml",
        "bad.yaml",
        &[],
    );
    let r = run("invalid", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 2);
    let e = r.stderr();
    assert!(e.contains("bad.yaml:7:"), "{e}");
    assert!(e.contains("unknown unit"), "{e}");
    assert!(!r.dir.join("summary.json").exists());

    let f = write_fixture(
        &dir,
        "scenarios_an_invalid_file_exits_2_naming_file_line_and_field_semantic.yaml",
        "semantic.yaml",
        &[],
    );
    let out = pado(&["validate", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("semantic.yaml:5:") && e.contains("rate: must be more than 0"),
        "{e}"
    );
    assert!(
        e.contains("semantic.yaml:7:") && e.contains("`vus` does not apply"),
        "{e}"
    );
    assert!(e.contains("2 problems found"), "{e}");
}

#[test]
fn validate_accepts_a_good_file_and_usage_errors_exit_2() {
    let dir = tmp("validate");
    let f = write_fixture(
        &dir,
        "scenarios_validate_accepts_a_good_file_and_usage_errors_exit_2.yaml",
        "ok.yaml",
        &[],
    );
    let out = pado(&["validate", f.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok (1 scenario, 1 threshold)"));
    assert_eq!(pado(&["run"]).status.code(), Some(2));
    assert_eq!(
        pado(&["run", "--url", "http://127.0.0.1:9/", "--stages", "x"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(pado(&["nope"]).status.code(), Some(2));
    let missing = pado(&["run", "/no/such/file.yaml"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/no/such/file.yaml"));
}

#[test]
fn report_rebuilds_the_summary_from_the_result_directory() {
    let srv = TestServer::start();
    let r = run(
        "report",
        &["--url", &srv.url("/"), "--vus", "2", "--duration", "1s"],
    );
    assert_eq!(r.code(), 0);
    let before = r.summary();
    // Copy the directory elsewhere (another machine) and rebuild there.
    let other = tmp("report-copy");
    for name in ["run.json", "timeline.jsonl"] {
        std::fs::copy(r.dir.join(name), other.join(name)).unwrap();
    }
    let out = pado(&["report", other.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let after: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(other.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(before, after);
}
