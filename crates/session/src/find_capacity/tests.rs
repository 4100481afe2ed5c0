//! Searches against the test kit's server on loopback: what each step measured is
//! checked against what the server counted, and how the search ended against a
//! target planted to hold or to fail.

use std::path::Path;
use std::time::Duration;

use pado_analysis::capacity::{Outcome, SearchPlan, MAX_DROPPED};
use pado_testkit::TestServer;

use super::*;
use crate::prepare::Source;

/// Records what the search hands its caller; asks to stop when told to.
#[derive(Default)]
struct Seen {
    starting: usize,
    finished: Vec<f64>,
    stop: bool,
}

impl Steps for Seen {
    fn starting(&mut self, stop: &StopState) {
        assert_eq!(
            stop.load(std::sync::atomic::Ordering::SeqCst),
            pado_engine::RUNNING
        );
        self.starting += 1;
    }
    fn stop_requested(&self) -> bool {
        self.stop
    }
    fn finished(&mut self, step: &StepResult, write_error: Option<&SessionError>) {
        assert!(write_error.is_none(), "{write_error:?}");
        self.finished.push(step.rate);
    }
}

/// A search of `url` from 10/s, ×2, up to 20/s, 2 s per step, judged by `sla`.
fn search(url: &str, sla: &str, out: &Path) -> Search {
    Search {
        load: LoadSpec {
            source: Source::Url(pado_scenario::QuickRequest {
                url: url.into(),
                method: None,
                body: None,
                body_file: None,
            }),
            overrides: Default::default(),
            fit_to: None,
        },
        overwrite: false,
        plan: SearchPlan::new(10.0, 2.0, 20.0, 0).unwrap(),
        hold: Duration::from_secs(2),
        sla: vec![pado_scenario::thresholds::parse_cli(sla).unwrap()],
        max_dropped: MAX_DROPPED,
        out: out.to_path_buf(),
        fault_state_dir: None,
    }
}

#[test]
fn a_target_that_holds_at_every_rate_has_no_break_and_each_step_measured_what_it_sent() {
    let server = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let s = search(
        &format!("{}/", server.base_url()),
        "http_req_failed: rate < 0.01",
        dir.path(),
    );
    let text = s.read().unwrap();
    let mut seen = Seen::default();
    let (steps, outcome) = s.run(&text, &mut seen).unwrap();
    assert!(
        matches!(outcome, Outcome::NoBreakUpToMax { max } if max == 20.0),
        "{outcome:?}"
    );
    assert_eq!(seen.starting, 2);
    assert_eq!(seen.finished, [10.0, 20.0]);
    for st in &steps {
        assert!(st.ok && st.failing.is_empty(), "{st:?}");
        assert_eq!(st.error_rate, 0.0);
        assert!((st.rps - st.rate).abs() <= st.rate * 0.2, "{st:?}");
        assert!(st.result_dir.join("summary.json").is_file(), "{st:?}");
        assert!(st.result_dir.starts_with(dir.path()));
    }
    // 10/s and 20/s for 2 s each: what the server received.
    let received = server.stats().requests;
    assert!((58..=62).contains(&received), "{received}");
    assert!(limit_at_break(&steps).is_none());
}

#[test]
fn a_target_that_fails_breaks_the_sla_at_the_first_step() {
    let server = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let s = search(
        &format!("{}/status/500", server.base_url()),
        "http_req_failed: rate < 0.01",
        dir.path(),
    );
    let text = s.read().unwrap();
    let mut seen = Seen::default();
    let (steps, outcome) = s.run(&text, &mut seen).unwrap();
    assert!(
        matches!(outcome, Outcome::FirstStepFailed { start } if start == 10.0),
        "{outcome:?}"
    );
    assert_eq!(steps.len(), 1, "no step after the first broke");
    let st = &steps[0];
    assert!(!st.ok && st.error_rate == 1.0, "{st:?}");
    assert!(
        st.failing.iter().any(|f| f.contains("http_req_failed")),
        "{st:?}"
    );
    assert_eq!(
        server.stats().requests as f64,
        st.rps * 2.0 + st.completed_after_hold as f64
    );
}

#[test]
fn a_stop_asked_before_a_step_runs_nothing() {
    let server = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let s = search(
        &format!("{}/", server.base_url()),
        "p(95) < 200",
        dir.path(),
    );
    let text = s.read().unwrap();
    let mut seen = Seen {
        stop: true,
        ..Seen::default()
    };
    let (steps, outcome) = s.run(&text, &mut seen).unwrap();
    assert!(steps.is_empty() && seen.starting == 0);
    assert!(
        matches!(
            outcome,
            Outcome::Interrupted {
                highest_held: None,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_eq!(server.stats().requests, 0);
}

#[test]
fn a_broken_scenario_is_an_error_before_any_step() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("용량.yaml");
    std::fs::write(&file, "scenarios: {}\n").unwrap();
    let mut s = search("http://127.0.0.1:9/", "p(95) < 200", dir.path());
    s.load = LoadSpec::file(file, None);
    let e = s.read().unwrap_err();
    assert!(matches!(e, SessionError::Invalid(_)), "{e:?}");
    assert!(e.to_string().contains("용량.yaml"), "{e}");
}

fn step(rate: f64, saturated: bool, ok: bool, limit: Option<&str>) -> StepResult {
    StepResult {
        rate,
        rps: rate,
        completed_after_hold: 0,
        unfinished: 0,
        p95_ms: 1.0,
        error_rate: 0.0,
        dropped: 0.0,
        ok,
        failing: Vec::new(),
        generator_saturated: saturated,
        generator: None,
        limit: limit.map(str::to_string),
        result_dir: Default::default(),
        interrupted: false,
    }
}

#[test]
fn pado_saturated_is_named_from_its_lowest_rate_and_not_without_it() {
    assert_eq!(
        saturated_from(&[
            step(100.0, false, true, None),
            step(150.0, false, true, None)
        ]),
        None
    );
    let steps = [
        step(100.0, false, true, None),
        step(225.0, true, false, None),
        step(150.0, true, true, None),
    ];
    assert_eq!(saturated_from(&steps), Some(150.0));
}

#[test]
fn the_limit_is_the_one_seen_where_the_sla_first_broke() {
    let steps = [
        step(100.0, false, true, Some("pool")),
        step(200.0, false, false, Some("cpu")),
        step(150.0, false, false, Some("disk")),
    ];
    assert_eq!(limit_at_break(&steps).as_deref(), Some("cpu"));
    assert_eq!(limit_at_break(&steps[..1]), None);
}

/// Real steps of a search on a machine kept 100% busy by other work (the demo
/// target's pool of 4 connections at 5 ms a query: 800/s): 655/s held, 852/s
/// broke. Each step's own table named the worker threads (852/s) and the busy
/// machine; read against the rate that held, the pool that filled is the limit.
#[test]
fn the_limit_at_the_break_is_what_filled_up_since_the_rate_that_held() {
    let fixture = |name: &str| {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../analysis/tests/fixtures")
            .join(name)
    };
    let mut held = step(655.4, false, true, Some("CPU (machine): 100% busy"));
    held.result_dir = fixture("pool4-held-655");
    let mut broke = step(
        852.0,
        false,
        false,
        Some("Worker pool `http`: 42.7/64 busy"),
    );
    broke.result_dir = fixture("pool4-broke-852");
    let limit = limit_at_break(&[held.clone(), broke.clone()]).unwrap();
    assert!(limit.starts_with("DB pool HikariPool-1"), "{limit}");
    // Without a rate that held below it, the broken step's own table stands.
    assert_eq!(
        limit_at_break(&[broke]).as_deref(),
        Some("Worker pool `http`: 42.7/64 busy")
    );
    assert_eq!(limit_between(&[held]), None, "nothing broke");
}
