//! `pado find-capacity` against servers whose capacity is known by design: what a
//! step reports as completed, and how a search that finds no capacity says so.

use std::path::Path;
use std::time::{Duration, Instant};

use pado_demo_target::{RunningTarget, TargetOptions};
use pado_testkit::TestServer;

use crate::harness::{
    fixture, interrupt, num, pado_cmd, shared_machine, spawn_piped, tmp, wait_within, Kid,
};

/// The step directories a search left, sorted.
fn step_dirs(out: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(out)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("step-"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn a_step_above_capacity_reports_what_the_target_completed_not_what_was_sent() {
    let _machine = shared_machine();
    // 2 connections × 5 ms per query: at most 400 list requests per second.
    let t: RunningTarget = pado_demo_target::start(TargetOptions {
        posts: 20_000,
        pool_size: 2,
        workers: 4,
        query_cost: Duration::from_millis(5),
        ..Default::default()
    })
    .expect("demo target starts");
    let capacity = 400.0;
    let out_dir = tmp("cap-above");
    let url = format!("{}/api/posts?page=1", t.base_url());
    let out = pado_cmd([
        "find-capacity",
        "--url",
        &url,
        "--start-rate",
        "600",
        "--max-rate",
        "600",
        "--hold",
        "2s",
        "--json",
        "--out",
    ])
    .arg(&out_dir)
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let step = &v["steps"][0];
    let rps = num(step, "rps");
    // Sent 600/s; the target cannot complete more than its capacity.
    assert!(
        rps <= capacity * 1.1 && rps > capacity * 0.3,
        "completed {rps}/s at 600/s for a capacity of {capacity}/s: {v}"
    );
    // The backlog finished after the hold, and every request is accounted for:
    // the hold's completions plus those after it are what the step's own result
    // directory counted.
    let after = num(step, "completed_after_hold");
    assert!(after > 0.0, "{v}");
    let dir = Path::new(step["result_dir"].as_str().unwrap());
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let total = num(&s, "requests");
    assert!(
        (rps * 2.0 + after - total).abs() < 0.5,
        "{rps}/s × 2 s + {after} ≠ {total}"
    );
    assert!(total > rps * 2.0 + 50.0, "{total} {rps}");
    // Nothing held: no capacity is claimed.
    assert_eq!(v["max_sustainable_rate"], serde_json::Value::Null, "{v}");
}

#[test]
fn every_rate_holding_up_to_the_maximum_is_reported_as_no_break() {
    let _machine = shared_machine();
    let srv = TestServer::start();
    let out_dir = tmp("cap-nobreak");
    let out = pado_cmd([
        "find-capacity",
        "--url",
        &srv.url("/"),
        "--start-rate",
        "20",
        "--factor",
        "2",
        "--max-rate",
        "30",
        "--hold",
        "1s",
        "--sla",
        "http_req_failed: rate < 0.01",
        "--out",
    ])
    .arg(&out_dir)
    .output()
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("no break found up to --max-rate 30.0/s")
            && text.contains("the capacity is above 30.0/s"),
        "{text}"
    );
    assert!(!text.contains("maximum sustainable"), "{text}");
    // 20/s, then the maximum itself (not 40/s, past it).
    assert_eq!(
        step_dirs(&out_dir),
        ["step-01-20.0", "step-02-30.0"],
        "{text}"
    );
    assert!(srv.stats().requests >= 40, "{}", srv.stats().requests);
}

#[test]
fn ctrl_c_during_a_step_stops_the_search_without_claiming_a_capacity() {
    let _machine = shared_machine();
    let srv = TestServer::start();
    let out_dir = tmp("cap-sigint");
    let child = spawn_piped(
        pado_cmd([
            "find-capacity",
            "--url",
            &srv.url("/"),
            "--start-rate",
            "20",
            "--hold",
            "3s",
            "--sla",
            "http_req_failed: rate < 0.01",
            "--out",
        ])
        .arg(&out_dir),
    );
    let mut kid = Kid(child);
    // Wait for the second step to start (bounded), then press Ctrl-C in it.
    let deadline = Instant::now() + Duration::from_secs(60);
    while step_dirs(&out_dir).len() < 2 {
        assert!(
            Instant::now() < deadline,
            "no second step: {:?}",
            step_dirs(&out_dir)
        );
        assert!(kid.0.try_wait().unwrap().is_none(), "search ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(700));
    interrupt(&kid.0);
    wait_within(&mut kid.0, Duration::from_secs(30)).expect("search did not stop after Ctrl-C");
    let mut text = String::new();
    std::io::Read::read_to_string(kid.0.stdout.as_mut().unwrap(), &mut text).unwrap();
    let code = kid.0.wait().unwrap().code();
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("interrupted at step 2 (30.0/s)")
            && text.contains("the highest rate that held so far is 20.0/s, not a capacity"),
        "{text}"
    );
    assert!(!text.contains("maximum sustainable"), "{text}");
    assert_eq!(step_dirs(&out_dir).len(), 2, "{text}");
}

#[test]
fn find_capacity_sends_the_quick_mode_method_headers_and_body() {
    let _machine = shared_machine();
    let srv = TestServer::start();
    let out_dir = tmp("cap-quick-flags");
    let out = pado_cmd([
        "find-capacity",
        "--url",
        &srv.url("/echo"),
        "-X",
        "POST",
        "-H",
        "X-Pado-Test: capacity",
        "--header",
        "Content-Type: application/json",
        "--body",
        "{\"probe\":1}",
        "--start-rate",
        "10",
        "--max-rate",
        "10",
        "--hold",
        "1s",
        "--sla",
        "http_req_failed: rate < 0.01",
        "--json",
        "--out",
    ])
    .arg(&out_dir)
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recs = srv.records();
    assert!(recs.len() >= 5, "{} requests", recs.len());
    // Every request the server counted is the one the flags describe.
    for r in &recs {
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/echo");
        assert_eq!(r.body, b"{\"probe\":1}");
        let header = |name: &str| {
            r.headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(header("x-pado-test"), Some("capacity"), "{:?}", r.headers);
        assert_eq!(header("content-type"), Some("application/json"));
    }
    assert_eq!(
        srv.stats().by_method.get("POST"),
        Some(&(recs.len() as u64))
    );
}

#[test]
fn find_capacity_reads_the_scenario_once_and_checks_it_before_the_first_step() {
    let _machine = shared_machine();
    let srv = TestServer::start();
    let dir = tmp("cap-read-once");
    let file = dir.join("t.yaml");
    let scenario = |path: &str| {
        fixture(
            "capacity_one_path_at_5_per_second.yaml",
            &[("target", srv.base_url()), ("path", path.to_string())],
        )
    };
    std::fs::write(&file, scenario("/first")).unwrap();
    let out_dir = dir.join("out");
    let child = spawn_piped(
        pado_cmd([
            "find-capacity",
            file.to_str().unwrap(),
            "--start-rate",
            "5",
            "--factor",
            "2",
            "--max-rate",
            "20",
            "--hold",
            "1s",
            "--sla",
            "http_req_failed: rate < 0.01",
            "--json",
            "--out",
        ])
        .arg(&out_dir),
    );
    // Once the first step is sending, the file changes under the search.
    let deadline = Instant::now() + Duration::from_secs(30);
    while srv.stats().requests == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::write(&file, scenario("/edited")).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Three steps (5, 10, 20/s), every one the file as it was read.
    assert_eq!(v["steps"].as_array().map(Vec::len), Some(3), "{v}");
    let by_path = srv.stats().by_path;
    assert!(
        by_path.get("/first").copied().unwrap_or(0) >= 20,
        "{by_path:?}"
    );
    assert_eq!(by_path.get("/edited"), None, "{by_path:?}");

    // A broken file is an error of the file (exit 2, its line), before any step.
    std::fs::write(&file, fixture("capacity_misspelled_field.yaml", &[])).unwrap();
    let broken_out = dir.join("broken-out");
    let o = pado_cmd(["find-capacity", file.to_str().unwrap(), "--out"])
        .arg(&broken_out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("t.yaml:5"), "{e}");
    assert!(!e.contains("searching"), "{e}");
    assert!(!broken_out.join("step-01-5.0").exists());
}
