//! Load models run as planned.

use pado_testkit::TestServer;

use crate::harness::{num, pado, run, tmp, write_fixture};

#[test]
fn ramping_vus_follow_the_stages() {
    let srv = TestServer::start();
    let r = run(
        "ramp",
        &["--url", &srv.url("/delay/10"), "--stages", "1s:6,1s:6,1s:0"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    assert_eq!(num(&s, "vus_max"), 6.0);
    assert_eq!(num(&s, "requests") as u64, srv.stats().requests);
    let tl = r.timeline();
    let vus: Vec<f64> = tl.iter().map(|l| l["vus"].as_f64().unwrap()).collect();
    // Second 1 (the hold) runs all 6; the last second ramps down.
    assert_eq!(vus[1], 6.0, "{vus:?}");
    assert!(vus.last().copied().unwrap() < 6.0, "{vus:?}");
    // Stages are recorded for reports.
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(meta["stages"].as_array().unwrap().len(), 3);
    assert_eq!(meta["stages"][1]["label"], "hold 6 VUs");
}

#[test]
fn step_ramp_adds_vus_in_steps() {
    let srv = TestServer::start();
    let r = run(
        "steps",
        &["--url", &srv.url("/delay/20"), "--step-ramp", "2:2:1s:6"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let tl = r.timeline();
    let vus: Vec<f64> = tl.iter().map(|l| l["vus"].as_f64().unwrap()).collect();
    assert!(vus.len() >= 3, "{vus:?}");
    assert_eq!(&vus[..3], &[2.0, 4.0, 6.0], "{vus:?}");
    assert_eq!(num(&r.summary(), "vus_max"), 6.0);
}

#[test]
fn per_vu_iterations_run_exactly() {
    let srv = TestServer::start();
    let r = run(
        "iters",
        &["--url", &srv.url("/"), "--vus", "3", "--iterations", "7"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert_eq!(num(&r.summary(), "requests"), 21.0);
    assert_eq!(srv.stats().requests, 21);
}

#[test]
fn ramping_arrival_rate_schedules_the_integral() {
    let srv = TestServer::start();
    let dir = tmp("rar");
    let f = write_fixture(
        &dir,
        "models_ramping_arrival_rate_schedules_the_integral.yaml",
        "rar.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("rar", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    // 0→100/s over 2 s is 100 iterations, then 100 in the hold.
    assert_eq!(num(&r.summary(), "requests"), 200.0);
    assert_eq!(srv.stats().requests, 200);
}

#[test]
fn think_time_paces_a_vu() {
    let srv = TestServer::start();
    let r = run(
        "think",
        &[
            "--url",
            &srv.url("/"),
            "--vus",
            "2",
            "--duration",
            "2s",
            "--think",
            "500ms",
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    // Each VU: a request at 0, 0.5, 1.0, 1.5 s.
    assert_eq!(num(&r.summary(), "requests"), 8.0);
}

#[test]
fn two_scenarios_run_in_parallel_with_a_start_time() {
    let srv = TestServer::start();
    let dir = tmp("two");
    let f = write_fixture(
        &dir,
        "models_two_scenarios_run_in_parallel_with_a_start_time.yaml",
        "two.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("two", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let st = srv.stats();
    assert_eq!(st.by_path["/a"], 100);
    assert_eq!(st.by_path["/b"], 10);
    let first_b = srv
        .records()
        .iter()
        .filter(|x| x.path == "/b")
        .map(|x| x.received_at)
        .min()
        .unwrap();
    let first_a = srv
        .records()
        .iter()
        .filter(|x| x.path == "/a")
        .map(|x| x.received_at)
        .min()
        .unwrap();
    let gap = first_b.duration_since(first_a).as_secs_f64();
    assert!((0.9..1.3).contains(&gap), "{gap}");
}

/// `--duration` alone on an open-model file changes only the length: 20/s for 3 s is
/// 60 arrivals (the server counts them), not a closed test of 10 VUs sending thousands.
#[test]
fn a_lone_duration_keeps_the_files_arrival_rate() {
    let srv = TestServer::start();
    let dir = tmp("lone-duration");
    let f = write_fixture(
        &dir,
        "models_a_lone_duration_keeps_the_files_arrival_rate.yaml",
        "open.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("lone-duration", &[f.to_str().unwrap(), "--duration", "3s"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let n = srv.stats().requests;
    assert!((57..=63).contains(&n), "{n} requests for 20/s over 3s");
    assert_eq!(num(&r.summary(), "requests") as u64, n);
    // A flag the file's executor has no use for is refused, naming the executor.
    let r = run("lone-vus", &[f.to_str().unwrap(), "--vus", "5"]);
    assert_eq!(r.code(), 2, "{}", r.stderr());
    assert!(
        r.stderr().contains("constant-arrival-rate"),
        "{}",
        r.stderr()
    );
    assert_eq!(srv.stats().requests, n, "nothing was sent");
}

#[test]
fn a_short_open_run_reports_its_configured_rate() {
    // 5/s for 2 s: 10 arrivals, the last at 1.8 s. The run lasts the schedule's 2 s,
    // so the reported rate is the configured 5/s, not 10 / 1.8 s.
    let srv = TestServer::start();
    let dir = tmp("short-open");
    let f = write_fixture(
        &dir,
        "models_a_short_open_run_reports_its_configured_rate.yaml",
        "s.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("short-open", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    assert_eq!(num(&s, "requests"), 10.0, "{s}");
    assert_eq!(srv.stats().requests, 10);
    let rps = num(&s, "rps");
    assert!((rps - 5.0).abs() <= 0.25, "rps {rps}, expected 5 ± 5%");
    let step = num(&s, "steps.GET /.rps");
    assert!((step - 5.0).abs() <= 0.25, "step rps {step}");
    assert!(num(&s, "duration_s") >= 2.0, "{s}");
}

#[test]
fn requests_finishing_in_the_graceful_stop_are_in_the_stage_table() {
    // 2 VUs, 1 s, 700 ms per request: the iterations started at 0.7 s end at 1.4 s,
    // after the stage's window, during the graceful stop.
    let srv = TestServer::start();
    let r = run(
        "graceful-tail",
        &[
            "--url",
            &srv.url("/delay/700"),
            "--vus",
            "2",
            "--duration",
            "1s",
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    let requests = num(&s, "requests");
    assert_eq!(requests, 4.0, "{s}");
    assert_eq!(srv.stats().requests, 4);
    let stages = s["stages"].as_array().unwrap();
    assert!(!stages.is_empty(), "{s}");
    let sum: f64 = stages.iter().map(|st| num(st, "requests")).sum();
    assert_eq!(sum, requests, "{s}");
    // The tail has a row of its own: the stage's rate stays that of its window.
    let tail = stages.last().unwrap();
    assert_eq!(tail["label"], "after the last stage (graceful stop)", "{s}");
    assert_eq!(num(tail, "requests"), 2.0, "{s}");
    assert_eq!(num(&stages[0], "requests"), 2.0, "{s}");
}

/// `externally-controlled` run by `pado run` with nobody steering: its starting 2
/// VUs of a ceiling of 6 run the whole time, every request counted by the server;
/// `pado validate` names the file, line and field of a bad one.
#[test]
fn an_externally_controlled_scenario_nobody_steers_runs_its_starting_vus() {
    let srv = TestServer::start();
    let dir = tmp("steered");
    let f = write_fixture(
        &dir,
        "models_an_externally_controlled_scenario_nobody_steers_runs_its_starting_vus.yaml",
        "steered.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("steered", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    // Two active at most; the ceiling's six are allocated.
    assert_eq!(num(&s, "vus"), 2.0);
    assert_eq!(num(&s, "vus_max"), 6.0);
    assert_eq!(num(&s, "requests") as u64, srv.stats().requests);
    // Two VUs, 50 ms a request, 2 s: about 80 requests, far from 6 VUs' 240.
    assert!(
        (60..=90).contains(&srv.stats().requests),
        "{}",
        srv.stats().requests
    );
    let bad = write_fixture(
        &dir,
        "models_an_externally_controlled_scenario_nobody_steers_runs_its_starting_vus_bad.yaml",
        "bad.yaml",
        &[],
    );
    let out = pado(&["validate", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("bad.yaml:4:") && e.contains("needs `duration`"),
        "{e}"
    );
    assert!(
        e.contains("bad.yaml:5:") && e.contains("8 VUs to start is more than max_vus (6)"),
        "{e}"
    );
}

/// shared-iterations: the VUs take from one count, so the VU with the faster answers
/// runs more of the iterations, and the total is exact.
#[test]
fn shared_iterations_go_to_whichever_vu_is_free() {
    let srv = TestServer::start();
    let dir = tmp("shared-free");
    let f = write_fixture(
        &dir,
        "models_shared_iterations_go_to_whichever_vu_is_free.yaml",
        "t.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("shared-free", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let stats = srv.stats();
    assert_eq!(stats.requests, 12);
    assert_eq!(num(&r.summary(), "iterations"), 12.0);
    let fast = stats.by_path.get("/delay/100").copied().unwrap_or(0);
    let slow = stats.by_path.get("/delay/200").copied().unwrap_or(0);
    assert_eq!(fast + slow, 12, "{:?}", stats.by_path);
    assert!(fast > slow && slow >= 1, "fast {fast}, slow {slow}");
}
