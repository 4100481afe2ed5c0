//! Short sessions against the test kit's server on loopback: what the handle's
//! subscribers and changes of the load do, checked against what the server itself
//! counted and when it received each request.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pado_metrics::SecondRecord;
use pado_testkit::{RequestRecord, TestServer};

use crate::{Output, RunConfig, RunHandle, Scenario, Session};

/// A session of `yaml` (its target the server) writing into `dir`.
pub(super) fn session(server: &TestServer, body: &str, dir: &Path) -> Session {
    let yaml = format!("name: 세션\ntarget: {}\n{body}", server.base_url());
    let config = pado_scenario::parse_str(&yaml, "session.yaml").expect("scenario");
    let plan = pado_engine::compile(&config, Path::new(".")).expect("plan");
    let scenario = Scenario {
        config,
        file: "session.yaml".into(),
        thresholds: Vec::new(),
        notes: Vec::new(),
    };
    let output = Output {
        dir: Some(dir.join("out")),
        html: false,
        quiet: true,
        ..Output::default()
    };
    let mut cfg = RunConfig::new(plan, scenario, output);
    cfg.workers = Some(2);
    Session::start(cfg).expect("session starts")
}

fn requests(r: &SecondRecord) -> u64 {
    r.requests()
}

pub(super) fn total_requests(t: &pado_metrics::Totals) -> u64 {
    t.series.iter().map(|s| s.requests).sum()
}

fn iterations(r: &SecondRecord) -> u64 {
    r.scenarios.iter().map(|s| s.iterations).sum()
}

/// Second 0's instant, as the handle sees it.
pub(super) fn t0(h: &RunHandle) -> Instant {
    Instant::now() - h.state().elapsed
}

/// Requests the server received in each whole second after `t0` (the run's clock).
pub(super) fn per_second(records: &[RequestRecord], t0: Instant, seconds: usize) -> Vec<u64> {
    let mut n = vec![0; seconds];
    for r in records {
        let t = r.received_at.saturating_duration_since(t0).as_secs() as usize;
        if t < seconds {
            n[t] += 1;
        }
    }
    n
}

/// Most requests the server held at once among those received in `[from, to)`, each
/// held for `delay` from when it was read.
pub(super) fn max_concurrent(
    records: &[RequestRecord],
    from: Instant,
    to: Instant,
    delay: Duration,
) -> usize {
    let mut edges: Vec<(Instant, i32)> = Vec::new();
    for r in records
        .iter()
        .filter(|r| r.received_at >= from && r.received_at < to)
    {
        edges.push((r.received_at, 1));
        edges.push((r.received_at + delay, -1));
    }
    // An end and a start at the same instant are not concurrent.
    edges.sort_by_key(|&(at, d)| (at, d));
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most as usize
}

mod steering;

#[test]
fn a_subscriber_gets_every_closed_second_in_order_as_the_server_counted() {
    let server = TestServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let s = session(
        &server,
        "scenarios:\n  s:\n    executor: constant-vus\n    vus: 2\n    duration: 2s\n    flow:\n      - request: GET /delay/20\n",
        tmp.path(),
    );
    let sub = s.handle().subscribe(64);
    let done = s.wait().unwrap();
    let seconds: Vec<Arc<SecondRecord>> = sub.collect();
    let ts: Vec<u32> = seconds.iter().map(|r| r.t).collect();
    let want: Vec<u32> = (0..ts.len() as u32).collect();
    assert_eq!(ts, want, "every second, in order");
    assert!(ts.len() >= 2, "{ts:?}");
    let counted: u64 = seconds.iter().map(|r| requests(r)).sum();
    assert!(counted > 20, "{counted}");
    assert_eq!(counted, server.stats().requests);
    assert_eq!(counted, total_requests(&done.totals));
}

#[test]
fn lowering_vus_from_4_to_1_leaves_one_request_at_a_time() {
    let server = TestServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let delay = Duration::from_millis(100);
    let s = session(
        &server,
        "scenarios:\n  s:\n    executor: constant-vus\n    vus: 4\n    duration: 3s\n    flow:\n      - request: GET /delay/100\n",
        tmp.path(),
    );
    let h = s.handle();
    let sub = h.subscribe(64);
    assert_eq!(sub.recv().map(|r| r.t), Some(0));
    let changed = Instant::now();
    h.set_vus(1).unwrap();
    assert_eq!(h.state().vu_cap, Some(1));
    let done = s.wait().unwrap();
    let records = server.records();
    // Before: four at a time (the measure sees concurrency). After the iterations
    // in flight ended: one.
    let before = max_concurrent(
        &records,
        changed - Duration::from_millis(900),
        changed,
        delay,
    );
    assert!(before >= 3, "before the change: {before} at once");
    let after = max_concurrent(
        &records,
        changed + delay + Duration::from_millis(50),
        Instant::now(),
        delay,
    );
    assert_eq!(after, 1, "after lowering to 1 VU");
    // Seconds fully after the change hold about 1/d requests, not 4/d.
    let tail: Vec<u64> = sub.filter(|r| r.t >= 2).map(|r| requests(&r)).collect();
    assert!(
        !tail.is_empty() && tail.iter().all(|&n| n <= 11),
        "{tail:?}"
    );
    // The change is on record and in the report's events.
    let events = pado_results::events::read_events(&done.dir).unwrap();
    let control: Vec<_> = events.iter().filter(|e| e.kind == "control").collect();
    assert_eq!(control.len(), 1, "{events:?}");
    assert_eq!(control[0].name, "active VUs 4 → 1");
    assert!(
        (900..2100).contains(&control[0].planned_ms),
        "{:?}",
        control[0]
    );
    let text = pado_report::render(&done.summary, pado_report::TextOptions { color: false });
    assert!(text.contains("active VUs 4 → 1"), "{text}");
}

#[test]
fn raising_an_open_rate_twofold_doubles_the_arrivals() {
    let server = TestServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let s = session(
        &server,
        "scenarios:\n  s:\n    executor: constant-arrival-rate\n    rate: 20\n    duration: 3s\n    pre_allocated_vus: 10\n    max_vus: 20\n    flow:\n      - request: GET /delay/10\n",
        tmp.path(),
    );
    let h = s.handle();
    let sub = h.subscribe(64);
    assert_eq!(sub.recv().map(|r| r.t), Some(0));
    let t0 = t0(&h);
    h.set_rate_factor(2.0).unwrap();
    let done = s.wait().unwrap();
    let n = per_second(&server.records(), t0, 3);
    assert!((17..=23).contains(&n[0]), "as planned in second 0: {n:?}");
    assert!((36..=44).contains(&n[2]), "doubled in second 2: {n:?}");
    let events = pado_results::events::read_events(&done.dir).unwrap();
    assert_eq!(events[0].name, "arrival rate ×1 → ×2");
}

#[test]
fn a_pause_starts_no_iteration_until_resumed() {
    let server = TestServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let s = session(
        &server,
        "scenarios:\n  s:\n    executor: constant-vus\n    vus: 2\n    duration: 4s\n    flow:\n      - request: GET /delay/20\n",
        tmp.path(),
    );
    let h = s.handle();
    let sub = h.subscribe(64);
    assert_eq!(sub.recv().map(|r| r.t), Some(0));
    h.pause().unwrap();
    let paused = Instant::now();
    std::thread::sleep(Duration::from_millis(1600));
    let resumed = Instant::now();
    h.resume().unwrap();
    let done = s.wait().unwrap();
    let records = server.records();
    // Nothing after the iterations in flight when the pause began.
    let during = records
        .iter()
        .filter(|r| r.received_at > paused + Duration::from_millis(60) && r.received_at < resumed)
        .count();
    assert_eq!(during, 0);
    let after = records.iter().filter(|r| r.received_at > resumed).count();
    assert!(after > 20, "resumed: {after}");
    let seconds: Vec<_> = sub.collect();
    assert!(
        seconds.iter().any(|r| iterations(r) == 0 && r.t >= 1),
        "a whole second paused: {:?}",
        seconds.iter().map(|r| iterations(r)).collect::<Vec<_>>()
    );
    let names: Vec<String> = pado_results::events::read_events(&done.dir)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["paused", "resumed"]);
}

#[test]
fn stop_ends_the_run_early_with_a_complete_result_directory() {
    let server = TestServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let s = session(
        &server,
        "scenarios:\n  s:\n    executor: constant-vus\n    vus: 1\n    duration: 30s\n    flow:\n      - request: GET /delay/10\n",
        tmp.path(),
    );
    let h = s.handle();
    let sub = h.subscribe(64);
    assert_eq!(sub.recv().map(|r| r.t), Some(0));
    h.stop().unwrap();
    let done = s.wait().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let meta = pado_results::ResultDir::open(&done.dir)
        .unwrap()
        .read_meta()
        .unwrap();
    assert!(meta.interrupted);
    for f in ["run.json", "timeline.jsonl", "summary.json", "events.jsonl"] {
        assert!(done.dir.join(f).is_file(), "{f}");
    }
    assert_eq!(total_requests(&done.totals), server.stats().requests);
    assert_eq!(h.set_vus(1), Err(crate::ControlError::Ended));
}

#[test]
fn a_slow_subscriber_loses_seconds_and_does_not_slow_the_run() {
    let server = TestServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let s = session(
        &server,
        "scenarios:\n  s:\n    executor: constant-vus\n    vus: 1\n    duration: 3s\n    flow:\n      - request: GET /delay/10\n",
        tmp.path(),
    );
    let h = s.handle();
    let slow = h.subscribe(1);
    let fast = h.subscribe(64);
    let done = s.wait().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    let all = fast.count() as u64;
    assert!(all >= 3, "{all}");
    assert_eq!(slow.lost(), all - 1);
    // Nobody changed the load: no events file.
    assert!(!done.dir.join("events.jsonl").exists());
}

#[test]
fn changes_a_plan_cannot_take_are_refused() {
    let server = TestServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let s = session(
        &server,
        "scenarios:\n  s:\n    executor: constant-vus\n    vus: 2\n    duration: 1s\n    flow:\n      - request: GET /\n",
        tmp.path(),
    );
    let h = s.handle();
    assert_eq!(
        h.set_vus(3),
        Err(crate::ControlError::AboveMax { asked: 3, max: 2 })
    );
    assert!(matches!(
        h.set_rate_factor(2.0),
        Err(crate::ControlError::NotApplicable(_))
    ));
    s.wait().unwrap();
}
