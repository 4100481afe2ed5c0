//! `pado experiment`: a knob swept against a server whose capacity is known exactly
//! for each value (the test kit's `/slots`: N slots, each request holding one for a
//! fixed time, so N/hold answers per second at most), and what the experiment does
//! when a point fails, when `ready:` never holds, and when it is stopped: `restore:`
//! runs every time, checked against the server's own record of its settings.

use std::path::Path;
use std::time::{Duration, Instant};

use pado_testkit::TestServer;
use serde_json::Value;

use crate::harness::{
    interrupt, pado_cmd, read_json, shared_machine, spawn_piped, tmp, wait_within, write_file,
};

/// The scenario every point runs: `/slots` holding a slot `hold_ms`, at a fixed
/// rate for `secs` (a search replaces the load with its own rates), observed.
fn scenario(srv: &TestServer, hold_ms: u64, rate: u32, secs: u32) -> String {
    format!(
        "name: slots
target: {base}
observe:
  endpoints: [ {base}/slots/metrics ]
  interval: 500ms
scenarios:
  main:
    executor: constant-arrival-rate
    rate: {rate}
    duration: {secs}s
    flow: [ {{ name: slot, request: \"/slots?ms={hold_ms}\" }} ]
",
        base = srv.base_url()
    )
}

/// An experiment file naming `load.yaml`, with `body` (values, apply, ready,
/// measure, restore, on_failure) under `experiment:`.
fn experiment(dir: &Path, body: &str) -> std::path::PathBuf {
    write_file(
        dir,
        "exp.yaml",
        &format!("name: 슬롯 실험\nexperiment:\n  scenario: load.yaml\n  knob: {{ name: slots, unit: slots }}\n{body}"),
    )
}

fn run_experiment(file: &Path, out: &Path) -> std::process::Output {
    let _machine = shared_machine();
    pado_cmd(["experiment", "--out"])
        .arg(out)
        .arg(file)
        .output()
        .expect("running pado")
}

/// Whether pado itself was starved at any run under `out` (its self-check in each
/// `summary.json`): then a missed timing tolerance says nothing about the search.
fn starved_runs(out: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![out.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "summary.json") {
                let s = read_json(&p);
                let g = &s["generator"];
                if g["saturated"].as_bool().unwrap_or(false)
                    || g["wait_seconds"].as_u64().unwrap_or(0) > 0
                    || g["lag_seconds"].as_u64().unwrap_or(0) > 0
                {
                    found.push(d.display().to_string());
                }
            }
        }
    }
    found
}

#[test]
fn the_capacity_at_each_point_is_the_slots_over_the_hold_and_the_fit_predicts_the_next() {
    let srv = TestServer::start();
    let dir = tmp("exp-capacity");
    write_file(&dir, "load.yaml", &scenario(&srv, 100, 5, 2));
    // 100 ms per slot: 10, 20 and 40 answers per second at 1, 2 and 4 slots (a
    // little less: the truth below is N over the hold the server really served).
    // The SLA allows a wait of half a hold: a hold long beside a busy machine's timer
    // jitter, so that the SLA breaks where the slots run out and not before; the
    // search refines to 1/32 of its bracket, finer than the 5% asked of it.
    let file = experiment(
        &dir,
        "  values: [1, 2, 4]
  apply:
    http: { url: '/slots/set?n={{ value }}' }
  ready:
    http: { url: /slots/state, body_contains: '\"n\":{{ value }}' }
    timeout: 5s
  find_capacity:
    sla: ['p(95) < 150', 'http_req_failed: rate < 0.01']
    start_rate: 7
    factor: 2
    max_rate: 400
    hold: 2s
    refine: 5
  restore:
    http: { url: '/slots/set?n=9' }
",
    );
    let out = dir.join("out");
    let o = run_experiment(&file, &out);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    let x = read_json(&out.join("experiment.json"));
    let points = x["points"].as_array().unwrap();
    assert_eq!(points.len(), 3, "{x:#}");
    assert_eq!(x["name"], "슬롯 실험", "Hangul round-trips");
    let hold = srv.slot_mean_hold().expect("slots were held").as_secs_f64();
    assert!((0.100..0.150).contains(&hold), "mean hold {hold} s");
    let mut misses = Vec::new();
    for (p, n) in points.iter().zip([1.0, 2.0, 4.0]) {
        let truth = n / hold;
        let got = p["measured"].as_f64().unwrap_or(0.0);
        eprintln!("{n} slots: capacity {got:.2}/s, truth {truth:.2}/s");
        if (got - truth).abs() > truth * 0.05 {
            misses.push(format!(
                "{n} slots: capacity {got:.2}/s, truth {truth:.2}/s"
            ));
        }
        // The slots are what was full: the bottleneck table names them.
        let verdict = p["verdict"].as_str().unwrap_or_default();
        assert!(
            verdict.contains("testkit_slots"),
            "{n} slots: {verdict}\n{x:#}"
        );
        assert_eq!(p["label"], format!("slots={n}"), "{p}");
    }
    // Each point's prediction from the points before it: the third from the first two.
    let checks = x["scaling"]["predictions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let err = checks
        .iter()
        .find(|c| c["x"] == 4.0)
        .and_then(|c| c["error_pct"].as_f64());
    match err {
        Some(e) if e.abs() <= 10.0 => {}
        _ => misses.push(format!("prediction for 4 slots: {checks:?}")),
    }
    if !misses.is_empty() {
        let starved = starved_runs(&out);
        if starved.is_empty() {
            panic!("{misses:?} (pado's self-check saw no starvation, so this is not the machine)\n{stdout}\n{stderr}");
        }
        eprintln!(
            "\n*** SKIPPED: machine too busy to judge the capacities ({starved:?}): {misses:?}\n"
        );
        return;
    }
    // The knob went 1, 2, 4, then back as `restore:` says.
    assert_eq!(srv.slot_settings(), [1, 2, 4, 9]);
    assert!(stdout.contains("slots"), "{stdout}");
    assert!(out.join("experiment.txt").is_file() && out.join("experiment.html").is_file());
    // `pado report` on the experiment's directory prints its table.
    let r = pado_cmd(["report"]).arg(&out).output().unwrap();
    let text = String::from_utf8_lossy(&r.stdout);
    assert_eq!(r.status.code(), Some(0), "{text}");
    assert!(text.contains("testkit_slots"), "{text}");
}

/// A fixed-load experiment over `values`: `apply:` sets the slots (a 0 is refused
/// by the server: a failed point), `restore:` sets 7.
fn fixed(
    dir: &Path,
    srv: &TestServer,
    values: &str,
    on_failure: &str,
    secs: u32,
) -> std::path::PathBuf {
    write_file(dir, "load.yaml", &scenario(srv, 5, 20, secs));
    experiment(
        dir,
        &format!(
            "  values: {values}
  apply:
    http: {{ url: '/slots/set?n={{{{ value }}}}' }}
  fixed: {{ metric: p95 }}
  restore:
    http: {{ url: '/slots/set?n=7' }}
  on_failure: {on_failure}
"
        ),
    )
}

#[test]
fn a_failed_point_stops_the_experiment_when_asked_and_restore_still_runs() {
    let srv = TestServer::start();
    let dir = tmp("exp-fail-stop");
    let file = fixed(&dir, &srv, "[1, 0, 3]", "stop", 1);
    let out = dir.join("out");
    let o = run_experiment(&file, &out);
    let said = format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    // A failed point is a failed experiment (as a failed threshold is a failed run).
    assert_eq!(o.status.code(), Some(99), "{said}");
    let x = read_json(&out.join("experiment.json"));
    let points = x["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "point 3 must not run: {x:#}");
    let e = points[1]["error"].as_str().unwrap_or_default();
    assert!(
        e.contains("apply failed") && e.contains("status 400"),
        "{e}"
    );
    assert!(
        x["stopped"]
            .as_str()
            .unwrap_or_default()
            .contains("point 2 (slots=0) failed"),
        "{x:#}"
    );
    assert_eq!(x["restore"]["ok"], true, "{x:#}");
    // The server saw 1 (0 refused), then the restore's 7; never 3.
    assert_eq!(srv.slot_settings(), [1, 7], "{said}");
    // The first point's run is in the history with its knob as a label.
    let h = pado_cmd(["history", "--json", "--label", "slots=1"])
        .output()
        .unwrap();
    let runs: Value = serde_json::from_slice(&h.stdout).unwrap();
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
}

#[test]
fn a_failed_point_is_passed_over_with_on_failure_continue_and_restore_runs_at_the_end() {
    let srv = TestServer::start();
    let dir = tmp("exp-fail-continue");
    let file = fixed(&dir, &srv, "[1, 0, 3]", "continue", 1);
    let out = dir.join("out");
    let o = run_experiment(&file, &out);
    assert_eq!(
        o.status.code(),
        Some(99),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let x = read_json(&out.join("experiment.json"));
    let points = x["points"].as_array().unwrap();
    assert_eq!(points.len(), 3, "{x:#}");
    assert!(
        points[1]["error"].is_string() && points[2]["error"].is_null(),
        "{x:#}"
    );
    assert!(
        points[2]["measured"].as_f64().unwrap_or(0.0) >= 5.0,
        "{x:#}"
    );
    assert_eq!(srv.slot_settings(), [1, 3, 7]);
    // compare and trend read the experiment as its two measured points, in knob order.
    let c = pado_cmd(["compare", "--json"]).arg(&out).output().unwrap();
    assert_eq!(
        c.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&c.stderr)
    );
    let cmp: Value = serde_json::from_slice(&c.stdout).unwrap();
    // The baseline (1 slot) and one candidate (3 slots): point 2 has no run.
    assert_eq!(cmp["limits"].as_array().map(Vec::len), Some(2), "{cmp:#}");
    assert_eq!(
        cmp["rows"][0]["changes"].as_array().map(Vec::len),
        Some(1),
        "{cmp:#}"
    );
    let t = pado_cmd(["trend", "--json", "--metric", "rps", "--html"])
        .arg(dir.join("trend.html"))
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        t.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&t.stderr)
    );
    let tr: Value = serde_json::from_slice(&t.stdout).unwrap();
    let labels: Vec<String> = tr["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["labels"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(labels, ["slots=1", "slots=3"], "{tr:#}");
}

/// `ready:` waits for `"n":VALUE` while `apply:` always sets 2: only the point at 2
/// is ever ready.
fn never_ready(dir: &Path, srv: &TestServer, on_failure: &str) -> std::path::PathBuf {
    write_file(dir, "load.yaml", &scenario(srv, 5, 20, 1));
    experiment(
        dir,
        &format!(
            "  values: [2, 4, 6]
  apply:
    http: {{ url: '/slots/set?n=2' }}
  ready:
    http: {{ url: /slots/state, body_contains: '\"n\":{{{{ value }}}}' }}
    timeout: 1s
    every: 200ms
  fixed: {{ metric: rps }}
  restore:
    http: {{ url: '/slots/set?n=5' }}
  on_failure: {on_failure}
"
        ),
    )
}

#[test]
fn a_ready_that_never_holds_fails_its_point_saying_what_was_awaited_and_last_seen() {
    let srv = TestServer::start();
    for (on_failure, points_run) in [("continue", 3), ("stop", 2)] {
        let dir = tmp("exp-ready");
        let file = never_ready(&dir, &srv, on_failure);
        let out = dir.join("out");
        let o = run_experiment(&file, &out);
        assert_eq!(
            o.status.code(),
            Some(99),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let x = read_json(&out.join("experiment.json"));
        let points = x["points"].as_array().unwrap();
        assert_eq!(points.len(), points_run, "{on_failure}: {x:#}");
        assert!(points[0]["error"].is_null(), "{x:#}");
        let e = points[1]["error"].as_str().unwrap_or_default();
        assert!(
            e.starts_with("not ready after")
                && e.contains("/slots/state to answer 200 with `\"n\":4` in its body")
                && e.contains("last seen: status 200, body `{\"n\":2"),
            "{e}"
        );
        assert_eq!(x["restore"]["ok"], true, "{x:#}");
    }
    // Each experiment's apply(s) and then its restore.
    assert_eq!(srv.slot_settings(), [2, 2, 2, 5, 2, 2, 5]);
}

/// Starts a fixed-load experiment with long points, waits until the first point's
/// run is under way, sends `signal`, and checks the restore ran.
fn stopped_by(signal: i32, name: &str) {
    let srv = TestServer::start();
    let dir = tmp(name);
    let file = fixed(&dir, &srv, "[1, 2, 3]", "continue", 30);
    let out = dir.join("out");
    let _machine = shared_machine();
    let mut child = spawn_piped(pado_cmd(["experiment", "--out"]).arg(&out).arg(&file));
    let t0 = Instant::now();
    while !out.join("point-01-1/run/run.json").exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the first point never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    if signal == libc::SIGINT {
        interrupt(&child);
    } else {
        // SAFETY: signalling our own child process.
        unsafe {
            libc::kill(child.id() as i32, signal);
        }
    }
    let status = wait_within(&mut child, Duration::from_secs(20)).expect("pado stops");
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let x = read_json(&out.join("experiment.json"));
    assert_eq!(x["interrupted"], true, "{x:#}");
    assert_eq!(x["points"].as_array().map(Vec::len), Some(1), "{x:#}");
    assert_eq!(x["restore"]["ok"], true, "{x:#}");
    // Applied 1, stopped during its run, restored: 2 and 3 never applied.
    assert_eq!(srv.slot_settings(), [1, 7]);
    assert!(t0.elapsed() < Duration::from_secs(25));
}

#[test]
fn ctrl_c_during_a_point_stops_the_experiment_and_restore_runs() {
    stopped_by(libc::SIGINT, "exp-sigint");
}

#[test]
fn sigterm_during_a_point_stops_the_experiment_and_restore_runs() {
    stopped_by(libc::SIGTERM, "exp-sigterm");
}
