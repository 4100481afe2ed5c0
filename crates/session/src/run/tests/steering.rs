//! Changes of the load beyond a level set at once: ramps, a skip to the next
//! stage, a hold of the plan, a scenario with no fixed plan. Each is checked
//! against what the test server received and when, and against the result
//! directory the run wrote.

use std::time::{Duration, Instant};

use pado_testkit::TestServer;

use super::{max_concurrent, per_second, session, t0, total_requests};
use crate::{ControlCommand, ControlError};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Each second's arrivals as the run counted them (`started`, `dropped`), from its
/// `timeline.jsonl`.
fn counted_arrivals(dir: &std::path::Path) -> Vec<(u64, u64)> {
    let rd = pado_results::ResultDir::open(dir).unwrap();
    let mut out = Vec::new();
    rd.for_each_second(|r| {
        let sc = r
            .scenarios
            .iter()
            .fold((0, 0), |(s, d), sc| (s + sc.started, d + sc.dropped));
        let t = r.t as usize;
        out.resize(out.len().max(t + 1), (0, 0));
        out[t] = sc;
        Ok(())
    })
    .unwrap();
    out
}

fn control_events(dir: &std::path::Path) -> Vec<pado_results::events::EventRecord> {
    pado_results::events::read_events(dir)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "control")
        .collect()
}

/// VUs ramped 1 → 4 over 2 s: the server holds one request at a time at the
/// ramp's start, two a little after its first third, four after its end.
#[test]
fn a_ramp_of_vus_from_1_to_4_raises_the_servers_concurrency_step_by_step() {
    let server = TestServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let delay = ms(100);
    let s = session(
        &server,
        "scenarios:\n  s:\n    executor: constant-vus\n    vus: 4\n    duration: 5s\n    flow:\n      - request: GET /delay/100\n",
        tmp.path(),
    );
    let h = s.handle();
    h.set_vus(1).unwrap();
    let sub = h.subscribe(64);
    assert_eq!(sub.recv().map(|r| r.t), Some(0));
    let start = Instant::now();
    h.apply(&ControlCommand::SetVus {
        vus: 4,
        ramp_s: 2.0,
    })
    .unwrap();
    std::thread::sleep(ms(1000));
    assert!(
        matches!(h.state().vu_cap, Some(2..=3)),
        "mid-ramp: {:?}",
        h.state().vu_cap
    );
    let done = s.wait().unwrap();
    let r = server.records();
    // Cap 1 until a third of a ramp step (round(1 + 3·t/2) ≥ 2 from 0.33 s).
    let first = max_concurrent(&r, start + ms(30), start + ms(250), delay);
    // Level 2.1 to 2.4: two VUs.
    let second = max_concurrent(&r, start + ms(750), start + ms(950), delay);
    // After the end: four.
    let last = max_concurrent(&r, start + ms(2300), start + ms(2900), delay);
    assert_eq!((first, second, last), (1, 2, 4), "rising with the ramp");
    let control = control_events(&done.dir);
    assert_eq!(control.len(), 2, "{control:?}");
    assert_eq!(control[1].name, "active VUs 1 → 4 over 2.0s");
    let began = control[1].started_ms.unwrap();
    assert_eq!(control[1].window_end_ms, Some(began + 2000));
    assert_eq!(total_requests(&done.totals), server.stats().requests);
}

/// A ramp of the open-model rate from ×1 to ×2 over 2 s: second 3, after it,
/// holds twice the planned arrivals, second 1 (in it) fewer than that.
#[test]
fn a_ramped_rate_reaches_its_target_after_the_ramp() {
    let server = TestServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let s = session(
        &server,
        "scenarios:\n  s:\n    executor: constant-arrival-rate\n    rate: 20\n    duration: 4s\n    pre_allocated_vus: 10\n    max_vus: 20\n    flow:\n      - request: GET /delay/10\n",
        tmp.path(),
    );
    let h = s.handle();
    let sub = h.subscribe(64);
    assert_eq!(sub.recv().map(|r| r.t), Some(0));
    let t0 = t0(&h);
    h.apply(&ControlCommand::SetRateFactor {
        factor: 2.0,
        ramp_s: 2.0,
    })
    .unwrap();
    let done = s.wait().unwrap();
    let n = per_second(&server.records(), t0, 4);
    assert!((36..=44).contains(&n[3]), "doubled after the ramp: {n:?}");
    assert!(n[1] < n[3] - 5, "rising during the ramp: {n:?}");
    let control = control_events(&done.dir);
    assert_eq!(control[0].name, "arrival rate ×1 → ×2 over 2.0s");
    // The run counted the arrivals it offered where they started: the load the
    // bottleneck table reads, the plan's 20/s doubled by hand. Every arrival
    // started (none dropped) and sent one request the server received.
    let counted = counted_arrivals(&done.dir);
    let started: u64 = counted.iter().map(|c| c.0).sum();
    assert_eq!(started, server.stats().requests, "{counted:?}");
    assert!(counted.iter().all(|c| c.1 == 0), "{counted:?}");
    assert!(
        (36..=44).contains(&counted[3].0),
        "second 3 offered the doubled rate: {counted:?}"
    );
    assert!(
        (16..=24).contains(&counted[0].0),
        "second 0 the planned 20: {counted:?}"
    );
}

/// Two stages (1 VU for 4 s, then 3 VUs for 4 s) skipped at second 1: three VUs
/// run within a second, the stage shown is the second one, the run ends about
/// 3 s early, and run.json's stages are where they really ran.
#[test]
fn next_stage_moves_to_the_second_stages_level_at_once_and_ends_the_run_sooner() {
    let server = TestServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let delay = ms(100);
    let s = session(
        &server,
        "scenarios:\n  s:\n    executor: ramping-vus\n    start_vus: 1\n    stages:\n      - { duration: 4s, target: 1 }\n      - { duration: 0s, target: 3 }\n      - { duration: 4s, target: 3 }\n    flow:\n      - request: GET /delay/100\n",
        tmp.path(),
    );
    let h = s.handle();
    let sub = h.subscribe(64);
    assert_eq!(sub.recv().map(|r| r.t), Some(0));
    let t0 = t0(&h);
    assert_eq!(h.state().stage.as_deref(), Some("hold 1 VU"));
    let skipped = Instant::now();
    h.apply(&ControlCommand::NextStage).unwrap();
    let skipped_at = skipped.duration_since(t0).as_secs_f64();
    let st = h.state();
    assert_eq!(st.stage.as_deref(), Some("hold 3 VUs"));
    let planned_end = st.planned_end.as_secs_f64();
    assert!(
        (planned_end - (skipped_at + 4.0)).abs() < 0.1,
        "{planned_end} vs skip at {skipped_at}"
    );
    // The last stage cannot be skipped.
    assert!(matches!(
        h.apply(&ControlCommand::NextStage),
        Err(ControlError::NotApplicable(m)) if m.contains("last stage")
    ));
    let done = s.wait().unwrap();
    let r = server.records();
    let before = max_concurrent(&r, t0 + ms(100), skipped, delay);
    let after = max_concurrent(&r, skipped + ms(1000), skipped + ms(2500), delay);
    assert_eq!((before, after), (1, 3));
    let last = r.iter().map(|x| x.received_at).max().unwrap();
    let ran = last.duration_since(t0).as_secs_f64();
    assert!(
        ran < skipped_at + 4.3 && ran > skipped_at + 3.5,
        "last request at {ran:.2} s, skip at {skipped_at:.2} s"
    );
    let meta = pado_results::ResultDir::open(&done.dir)
        .unwrap()
        .read_meta()
        .unwrap();
    assert!(!meta.interrupted, "a skip is not an interruption");
    let marks: Vec<(String, f64, f64)> = meta
        .stages
        .iter()
        .map(|m| (m.label.clone(), m.start_s, m.end_s))
        .collect();
    assert_eq!(marks.len(), 2, "{marks:?}");
    assert!((marks[0].2 - skipped_at).abs() < 0.1, "{marks:?}");
    assert!((marks[1].1 - skipped_at).abs() < 0.1, "{marks:?}");
    assert!((marks[1].2 - (skipped_at + 4.0)).abs() < 0.1, "{marks:?}");
    let control = control_events(&done.dir);
    assert!(
        control[0]
            .name
            .starts_with("skipped to the next stage (hold 1 VU ended"),
        "{control:?}"
    );
}

/// A 2 s hold of a 4 s run ends it at about 6 s, not 4 s (and no later): the
/// load goes on through the hold.
#[test]
fn a_hold_of_two_seconds_makes_a_four_second_run_end_at_six() {
    let server = TestServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let s = session(
        &server,
        "scenarios:\n  s:\n    executor: constant-vus\n    vus: 1\n    duration: 4s\n    flow:\n      - request: GET /delay/20\n",
        tmp.path(),
    );
    let h = s.handle();
    let sub = h.subscribe(64);
    assert_eq!(sub.recv().map(|r| r.t), Some(0));
    let t0 = t0(&h);
    h.apply(&ControlCommand::Hold { seconds: 2.0 }).unwrap();
    let st = h.state();
    assert!(
        (st.planned_end.as_secs_f64() - 6.0).abs() < 0.01,
        "{:?}",
        st.planned_end
    );
    let done = s.wait().unwrap();
    let r = server.records();
    let last = r.iter().map(|x| x.received_at).max().unwrap();
    let ran = last.duration_since(t0).as_secs_f64();
    assert!((5.7..6.2).contains(&ran), "last request at {ran:.2} s");
    let n = per_second(&r, t0, 6);
    assert!(n.iter().all(|&c| c >= 20), "load every second: {n:?}");
    let meta = pado_results::ResultDir::open(&done.dir)
        .unwrap()
        .read_meta()
        .unwrap();
    assert!(!meta.interrupted);
    assert!(
        (meta.stages[0].end_s - 6.0).abs() < 0.01,
        "{:?}",
        meta.stages
    );
    assert!((meta.planned_s.unwrap() - 6.0).abs() < 0.01);
    let control = control_events(&done.dir);
    assert_eq!(control[0].name, "held the plan for 2.0s");
}

/// An open-model hold keeps the rate the plan had: 10/s held for 2 s at second 1
/// of a ramp from 10/s, where a paused timetable would send nothing.
#[test]
fn an_open_model_hold_keeps_the_rate_of_its_moment() {
    let server = TestServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let s = session(
        &server,
        "scenarios:\n  s:\n    executor: ramping-arrival-rate\n    start_rate: 10\n    pre_allocated_vus: 5\n    max_vus: 20\n    stages:\n      - { duration: 2s, target: 10 }\n      - { duration: 2s, target: 30 }\n    flow:\n      - request: GET /delay/10\n",
        tmp.path(),
    );
    let h = s.handle();
    let sub = h.subscribe(64);
    assert_eq!(sub.recv().map(|r| r.t), Some(0));
    let t0 = t0(&h);
    let at = t0.elapsed().as_secs_f64();
    h.hold(Duration::from_secs(2)).unwrap();
    let done = s.wait().unwrap();
    let n = per_second(&server.records(), t0, 6);
    // Seconds 2 and 3 lie inside the hold (from ~1.0 s to ~3.0 s) or just past it.
    assert!(
        (8..=12).contains(&n[2]),
        "10/s held: {n:?} (hold at {at:.2} s)"
    );
    // The ramp to 30/s comes after the hold: its last second is second 5.
    assert!(n[5] >= 20, "the ramp ran after the hold: {n:?}");
    assert_eq!(done.totals.scenarios[0].dropped, 0);
}

/// `externally-controlled`: the starting VUs run until someone sets another
/// number, then that number does.
#[test]
fn an_externally_controlled_scenario_holds_its_vus_and_follows_set_vus() {
    let server = TestServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let delay = ms(100);
    let s = session(
        &server,
        "scenarios:\n  s:\n    executor: externally-controlled\n    vus: 1\n    max_vus: 4\n    duration: 3s\n    flow:\n      - request: GET /delay/100\n",
        tmp.path(),
    );
    let h = s.handle();
    let sub = h.subscribe(64);
    assert_eq!(sub.recv().map(|r| r.t), Some(0));
    let t0 = t0(&h);
    assert_eq!(h.state().vu_cap, Some(1));
    let changed = Instant::now();
    h.apply(&ControlCommand::SetVus {
        vus: 3,
        ramp_s: 0.0,
    })
    .unwrap();
    assert_eq!(
        h.set_vus(5),
        Err(ControlError::AboveMax { asked: 5, max: 4 })
    );
    let done = s.wait().unwrap();
    let r = server.records();
    let before = max_concurrent(&r, t0, changed, delay);
    let after = max_concurrent(&r, changed + ms(200), changed + ms(1500), delay);
    assert_eq!((before, after), (1, 3));
    let control = control_events(&done.dir);
    assert_eq!(control[0].name, "active VUs 1 → 3");
}

/// Without a change the starting VUs run the whole time, never the ceiling.
#[test]
fn an_externally_controlled_scenario_nobody_steers_runs_its_starting_vus() {
    let server = TestServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let s = session(
        &server,
        "scenarios:\n  s:\n    executor: externally-controlled\n    vus: 2\n    max_vus: 6\n    duration: 2s\n    flow:\n      - request: GET /delay/100\n",
        tmp.path(),
    );
    let sub = s.handle().subscribe(64);
    let done = s.wait().unwrap();
    // The VUs held back from the start are never counted as active.
    let vus: Vec<u32> = sub.map(|r| r.vus).collect();
    assert!(!vus.is_empty() && vus.iter().all(|&v| v <= 2), "{vus:?}");
    let r = server.records();
    let first = r.iter().map(|x| x.received_at).min().unwrap();
    assert_eq!(max_concurrent(&r, first, first + ms(1900), ms(100)), 2);
    assert!(!done.dir.join("events.jsonl").exists());
}

#[test]
fn holds_and_skips_a_plan_cannot_take_are_refused() {
    let server = TestServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let s = session(
        &server,
        "scenarios:\n  s:\n    executor: per-vu-iterations\n    vus: 1\n    iterations: 3\n    flow:\n      - request: GET /\n",
        tmp.path(),
    );
    let h = s.handle();
    for cmd in [
        ControlCommand::NextStage,
        ControlCommand::Hold { seconds: 2.0 },
    ] {
        match h.apply(&cmd) {
            Err(ControlError::NotApplicable(m)) => assert!(m.contains("no stages"), "{m}"),
            other => panic!("{cmd:?}: {other:?}"),
        }
    }
    assert!(matches!(
        h.apply(&ControlCommand::Hold { seconds: -1.0 }),
        Err(ControlError::BadCommand(_))
    ));
    s.wait().unwrap();
}

/// An iteration in flight when a stage is skipped gets the graceful stop from the
/// moved end, not from the planned one: a request the server holds for 10 s is
/// cut at the skip + the last stage's 1 s + the 1 s graceful stop, where the plan
/// unskipped would have let it run to 6 s.
#[test]
fn a_skip_moves_the_deadline_of_an_iteration_in_flight() {
    let server = TestServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let s = session(
        &server,
        "scenarios:\n  s:\n    executor: ramping-vus\n    start_vus: 1\n    graceful_stop: 1s\n    stages:\n      - { duration: 4s, target: 1 }\n      - { duration: 1s, target: 1 }\n    flow:\n      - request: GET /delay/10000\n",
        tmp.path(),
    );
    let h = s.handle();
    let sub = h.subscribe(64);
    assert_eq!(sub.recv().map(|r| r.t), Some(0));
    let t0 = t0(&h);
    h.apply(&ControlCommand::NextStage).unwrap();
    let skipped_at = t0.elapsed().as_secs_f64();
    s.wait().unwrap();
    let ended = t0.elapsed().as_secs_f64();
    assert!(
        ended < skipped_at + 2.0 + 0.8,
        "ended at {ended:.2} s, skip at {skipped_at:.2} s"
    );
}
