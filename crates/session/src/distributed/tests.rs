//! The split of a change over planted segments, checked against the engine's own
//! split of the planned load; the forwarding to every generator with one that
//! refuses.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pado_engine::executor::segment::{split, Segment};
use pado_engine::executor::Schedule;
use pado_engine::RunPlan;

use super::split::{planned_rate_at, split_command};
use super::*;

fn plan(load: &str) -> RunPlan {
    let yaml = format!(
        "name: 분산\ntarget: http://127.0.0.1:9\nscenarios:\n  s:\n{load}    flow:\n      - request: /\n"
    );
    let config = pado_scenario::parse_str(&yaml, "t.yaml").expect("scenario");
    pado_engine::compile(&config, Path::new(".")).expect("plan")
}

fn closed(vus: u32) -> RunPlan {
    plan(&format!(
        "    executor: constant-vus\n    vus: {vus}\n    duration: 10s\n"
    ))
}

fn open(rate: u32) -> RunPlan {
    plan(&format!(
        "    executor: constant-arrival-rate\n    rate: {rate}\n    duration: 10s\n    max_vus: 50\n"
    ))
}

fn segments(weights: &[u32]) -> Vec<Segment> {
    let n = weights.len() as u32;
    (0..n)
        .map(|i| Segment::new(i, n, Some(weights)).unwrap())
        .collect()
}

fn vus_of(cmds: &[ControlCommand]) -> Vec<u64> {
    cmds.iter()
        .map(|c| match c {
            ControlCommand::SetVus { vus, .. } => *vus,
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn a_vu_target_splits_as_the_stripe_gives_vus_and_adds_up_to_it() {
    let p = closed(10);
    let set = |vus| ControlCommand::SetVus { vus, ramp_s: 0.0 };
    // The stripe's documented order: 1,1,1 gives 0,1,2,0,1,2,...; 2,1,1 gives
    // 0,1,0,2,0,1,0,2,...
    let even = split_command(&set(10), &segments(&[1, 1, 1]), &p, || 0.0, || 0).unwrap();
    assert_eq!(vus_of(&even), vec![4, 3, 3]);
    let weighted = split_command(&set(10), &segments(&[2, 1, 1]), &p, || 0.0, || 0).unwrap();
    assert_eq!(vus_of(&weighted), vec![5, 3, 2]);
    let low = split_command(&set(1), &segments(&[1, 1, 1]), &p, || 0.0, || 0).unwrap();
    assert_eq!(vus_of(&low), vec![1, 0, 0]);
    // Against the engine's own split: on each segment, the VUs of rank below its
    // cap are exactly its VUs among the whole test's first V, for every V.
    for weights in [&[1, 1, 1][..], &[2, 1, 1], &[1, 3], &[1]] {
        let segs = segments(weights);
        for v in 0..=10u64 {
            let caps = vus_of(&split_command(&set(v), &segs, &p, || 0.0, || 0).unwrap());
            assert_eq!(caps.iter().sum::<u64>(), v, "{weights:?} V={v}");
            for (seg, cap) in segs.iter().zip(&caps) {
                let Schedule::Closed(c) = split(p.scenarios[0].executor.schedule(), seg) else {
                    panic!("closed");
                };
                for rank in 0..c.vus.len() as u64 {
                    let global = c.global_index(rank);
                    assert_eq!(
                        rank < *cap,
                        global < v,
                        "{weights:?} V={v} segment {} rank {rank} (VU {global})",
                        seg.index()
                    );
                }
            }
        }
    }
    let above = split_command(&set(11), &segments(&[1, 1]), &p, || 0.0, || 0).unwrap_err();
    assert_eq!(above, ControlError::AboveMax { asked: 11, max: 10 });
    let no_closed =
        split_command(&set(1), &segments(&[1, 1]), &open(10), || 10.0, || 0).unwrap_err();
    assert!(matches!(no_closed, ControlError::NotApplicable(_)));
}

#[test]
fn a_rate_is_one_factor_of_the_whole_plan_on_every_generator_and_the_shares_add_up() {
    let p = open(10);
    let segs = segments(&[1, 1, 1]);
    assert_eq!(planned_rate_at(&p, Duration::ZERO), 10.0);
    let cmds = split_command(
        &ControlCommand::SetRate {
            per_s: 25.0,
            ramp_s: 3.0,
        },
        &segs,
        &p,
        || planned_rate_at(&p, Duration::ZERO),
        || 0,
    )
    .unwrap();
    assert_eq!(
        cmds,
        vec![
            ControlCommand::SetRateFactor {
                factor: 2.5,
                ramp_s: 3.0
            };
            3
        ]
    );
    // Each segment runs its own arrivals (4, 3 and 3 of the first second's 10)
    // times the factor: 25 in all. Its own rate times 25/3 would not be one factor.
    let mut own = Vec::new();
    for seg in &segs {
        let Schedule::Open(o) = split(p.scenarios[0].executor.schedule(), seg) else {
            panic!("open");
        };
        own.push(o.arrivals().filter(|a| *a < Duration::from_secs(1)).count() as f64);
    }
    assert_eq!(own, vec![4.0, 3.0, 3.0]);
    assert_eq!(own.iter().map(|n| n * 2.5).sum::<f64>(), 25.0);
    // Nothing planned now, or a rate that is not one: refused before anything is sent.
    let r = |per_s: f64, planned: f64| {
        split_command(
            &ControlCommand::SetRate { per_s, ramp_s: 0.0 },
            &segs,
            &p,
            || planned,
            || 0,
        )
    };
    assert!(matches!(r(5.0, 0.0), Err(ControlError::NotApplicable(_))));
    assert_eq!(r(-1.0, 10.0), Err(ControlError::BadRate(-1.0)));
    assert!(matches!(r(f64::NAN, 10.0), Err(ControlError::BadRate(_))));
    let closed_only = split_command(
        &ControlCommand::SetRate {
            per_s: 5.0,
            ramp_s: 0.0,
        },
        &segs,
        &closed(3),
        || 0.0,
        || 0,
    );
    assert!(matches!(closed_only, Err(ControlError::NotApplicable(_))));
}

#[test]
fn pause_stop_and_stage_changes_reach_every_generator_as_they_are() {
    let p = closed(4);
    let segs = segments(&[1, 1]);
    for cmd in [
        ControlCommand::Pause,
        ControlCommand::Resume,
        ControlCommand::Stop,
        ControlCommand::NextStage,
        ControlCommand::Hold { seconds: 30.0 },
        ControlCommand::SetRateFactor {
            factor: 0.5,
            ramp_s: 0.0,
        },
    ] {
        assert_eq!(
            split_command(&cmd, &segs, &p, || 0.0, || 0).unwrap(),
            vec![cmd.clone(), cmd.clone()]
        );
    }
}

/// What each generator received, by index.
type Received = Arc<Mutex<Vec<(usize, ControlCommand)>>>;

/// A distributed run of `p` on segments of `weights`, whose generator `down`
/// refuses everything; what each generator received.
fn fleet(p: RunPlan, weights: &[u32], down: Option<usize>) -> (DistributedRun, Received) {
    let got = Arc::new(Mutex::new(Vec::new()));
    let seen = got.clone();
    let send: SendFn = Arc::new(move |i, cmd: &ControlCommand| {
        if Some(i) == down {
            return Err("refused the connection (is the agent running?)".into());
        }
        seen.lock().unwrap().push((i, cmd.clone()));
        Ok(())
    });
    let gens = segments(weights)
        .into_iter()
        .enumerate()
        .map(|(i, segment)| Generator {
            name: format!("generator {i}/{} (에이전트-{i})", weights.len()),
            segment,
        })
        .collect();
    (DistributedRun::new(Arc::new(p), gens, send), got)
}

#[test]
fn a_change_reaches_every_generator_and_one_that_refuses_is_named() {
    let (run, got) = fleet(closed(10), &[1, 1, 1], Some(1));
    run.started(Instant::now());
    let e = run
        .apply(&ControlCommand::SetVus {
            vus: 7,
            ramp_s: 0.0,
        })
        .unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, ControlError::Generators(_)), "{text}");
    assert!(
        text.contains("1 of 3")
            && text.contains("generator 1/3 (에이전트-1)")
            && text.contains("refused the connection"),
        "{text}"
    );
    assert!(!text.contains("generator 0/3") && !text.contains("generator 2/3"));
    let mut received = got.lock().unwrap().clone();
    received.sort_by_key(|(i, _)| *i);
    // 7 over three: 0,1,2,0,1,2,0 → 3, 2, 2; the others got theirs.
    assert_eq!(
        received,
        vec![
            (
                0,
                ControlCommand::SetVus {
                    vus: 3,
                    ramp_s: 0.0
                }
            ),
            (
                2,
                ControlCommand::SetVus {
                    vus: 2,
                    ramp_s: 0.0
                }
            ),
        ]
    );
    // Taken by some: recorded once, in the whole test's numbers.
    let changes = run.changes();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].name, "active VUs 10 → 7");
    assert_eq!(changes[0].kind, "control");
    assert_eq!(run.state().vu_cap, Some(7));
}

#[test]
fn a_change_no_generator_took_is_not_recorded_and_a_bad_one_is_sent_to_none() {
    let (run, got) = fleet(open(10), &[1], Some(0));
    assert!(run.apply(&ControlCommand::Pause).is_err());
    assert!(run.changes().is_empty());
    assert!(!run.state().paused);
    let e = run
        .apply(&ControlCommand::SetVus {
            vus: 1,
            ramp_s: 0.0,
        })
        .unwrap_err();
    assert!(matches!(e, ControlError::NotApplicable(_)), "{e}");
    assert!(got.lock().unwrap().is_empty());
    // A stop nobody took is still the coordinator's to carry out its own way.
    assert!(!run.state().stopping);
    assert!(run.apply(&ControlCommand::Stop).is_err());
    assert!(run.state().stopping);
    assert!(run.changes().is_empty());
}

#[test]
fn pause_resume_and_a_rate_are_recorded_once_each_and_state_follows() {
    let (run, got) = fleet(open(10), &[1, 1], None);
    run.started(Instant::now());
    run.apply(&ControlCommand::Pause).unwrap();
    run.apply(&ControlCommand::Pause).unwrap();
    assert!(run.state().paused);
    run.apply(&ControlCommand::Resume).unwrap();
    run.apply(&ControlCommand::SetRate {
        per_s: 20.0,
        ramp_s: 0.0,
    })
    .unwrap();
    let names: Vec<String> = run.changes().into_iter().map(|c| c.name).collect();
    assert_eq!(
        names,
        vec!["paused", "resumed", "arrival rate 10.0/s → 20.0/s"],
        "a second pause changes nothing and is not a change"
    );
    assert_eq!(run.state().rate_factor, 2.0);
    // Every command reached both generators (the repeated pause too).
    assert_eq!(got.lock().unwrap().len(), 8);
    run.ended();
    assert_eq!(run.apply(&ControlCommand::Resume), Err(ControlError::Ended));
}

#[test]
fn merged_seconds_reach_subscribers_and_each_generator_s_share_is_kept() {
    let (run, _) = fleet(closed(4), &[1, 1], None);
    let sub = run.subscribe(8);
    let mut r = SecondRecord::new(0);
    r.vus = 4;
    run.second(
        &r,
        &[
            Some(GeneratorTick {
                requests: 30,
                cpu_pct: Some(12.5),
            }),
            None,
        ],
        1,
    );
    run.left_out(1);
    assert_eq!(sub.recv_timeout(Duration::from_secs(1)).unwrap().t, 0);
    let g = run.generators();
    assert_eq!(g.len(), 2);
    assert_eq!(
        (g[0].requests, g[0].cpu_pct, g[0].reporting),
        (30, Some(12.5), true)
    );
    assert_eq!(g[0].segment.as_deref(), Some("0/2"));
    assert_eq!((g[1].requests, g[1].reporting), (0, false));
    let s = run.state();
    assert_eq!(
        (s.seconds_closed, s.active_vus, s.thresholds_failing),
        (1, 4, 1)
    );
    run.ended();
    assert!(sub.recv_timeout(Duration::from_secs(1)).is_none());
}

#[test]
fn a_skip_and_a_hold_move_the_coordinator_s_plan_clock_as_the_generators_do() {
    let p = plan(
        "    executor: ramping-vus\n    stages:\n      - { duration: 10s, target: 4 }\n      - { duration: 10s, target: 4 }\n",
    );
    let (run, got) = fleet(p, &[1, 1], None);
    run.started(Instant::now());
    let first = run.state();
    assert_eq!(first.planned_end, Duration::from_secs(20));
    let stage0 = first.stage.clone().expect("a stage runs");
    run.apply(&ControlCommand::NextStage).unwrap();
    let after = run.state();
    assert_ne!(after.stage.as_deref(), Some(stage0.as_str()), "moved on");
    // About 10 s skipped: the end comes that much sooner.
    let end = after.planned_end.as_secs_f64();
    assert!((9.5..=10.5).contains(&end), "{end}");
    // The last stage has no next one: refused before anything is sent.
    let sent = got.lock().unwrap().len();
    let e = run.apply(&ControlCommand::NextStage).unwrap_err();
    assert!(matches!(e, ControlError::NotApplicable(_)), "{e}");
    assert_eq!(got.lock().unwrap().len(), sent);
    run.apply(&ControlCommand::Hold { seconds: 30.0 }).unwrap();
    let end = run.state().planned_end.as_secs_f64();
    assert!((39.5..=40.5).contains(&end), "{end}");
    assert!(run.apply(&ControlCommand::Hold { seconds: 0.0 }).is_err());
    let names: Vec<String> = run.changes().into_iter().map(|c| c.name).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names[0].starts_with("skipped to the next stage ("),
        "{names:?}"
    );
    assert_eq!(names[1], "held the plan for 30.0s");
    // Both generators got the skip and the hold as they are.
    assert_eq!(got.lock().unwrap().len(), 4);
}

#[test]
fn each_merged_second_keeps_every_generator_s_part_of_that_second() {
    let (run, _) = fleet(closed(4), &[1, 1], None);
    let tick = |requests, cpu| {
        Some(GeneratorTick {
            requests,
            cpu_pct: Some(cpu),
        })
    };
    // Three seconds arrive before a live view reads any of them: each keeps its
    // own parts, not the latest second's.
    run.second(&SecondRecord::new(0), &[tick(30, 10.0), tick(10, 20.0)], 0);
    run.second(&SecondRecord::new(1), &[tick(25, 11.0), None], 0);
    run.second(&SecondRecord::new(2), &[tick(5, 12.0), tick(35, 22.0)], 0);
    let parts = |t| {
        run.generators_at(t)
            .into_iter()
            .map(|g| (g.name.clone(), g.requests, g.cpu_pct, g.reporting))
            .collect::<Vec<_>>()
    };
    let names: Vec<String> = run.generators().into_iter().map(|g| g.name).collect();
    assert_eq!(
        parts(0),
        vec![
            (names[0].clone(), 30, Some(10.0), true),
            (names[1].clone(), 10, Some(20.0), true)
        ]
    );
    assert_eq!(
        parts(1),
        vec![
            (names[0].clone(), 25, Some(11.0), true),
            (names[1].clone(), 0, None, false)
        ],
        "a generator that did not report second 1 has no part of it"
    );
    assert_eq!(parts(2)[1], (names[1].clone(), 35, Some(22.0), true));
    assert!(run.generators_at(3).is_empty(), "not closed yet");
    // Only the latest seconds are kept.
    for t in 3..(3 + GENERATOR_SECONDS_KEPT as u32) {
        run.second(&SecondRecord::new(t), &[tick(1, 1.0), tick(1, 1.0)], 0);
    }
    assert!(run.generators_at(0).is_empty());
    assert_eq!(run.generators_at(3).len(), 2);
}

/// The whole test ramps `from` → `to` VUs over 1 s on segments of `weights`: at
/// every 20 ms step (the engine's clock writes a ramp's level that often) the
/// generators' VUs add up to the whole test's, rounded as a single run rounds
/// its ramp, and at the end to the VUs asked for.
fn ramp_adds_up(weights: &[u32], from: u64, to: u64) {
    let segs = segments(weights);
    let length = Duration::from_secs(1);
    for step in 0..=55u64 {
        let at = Duration::from_millis(step * 20);
        let whole = split::test_vus_at(from, to, length, at);
        let start = std::time::Instant::now();
        let single = pado_engine::Ramp {
            from: from as f64,
            to: to as f64,
            start,
            length,
        }
        .vus_at(start + at);
        assert_eq!(whole, single, "the single run's rounding at {at:?}");
        let sum: u64 = segs
            .iter()
            .map(|s| split::segment_vus_at(s, from, to, length, at))
            .sum();
        assert_eq!(sum, whole, "{weights:?} {from}→{to} at {at:?}");
    }
    let end: u64 = segs
        .iter()
        .map(|s| split::segment_vus_at(s, from, to, length, length))
        .sum();
    assert_eq!(end, to);
}

#[test]
fn a_ramped_vu_target_adds_up_over_generators_at_every_20_ms_step() {
    for weights in [&[1, 1][..], &[1, 1, 1], &[2, 1, 1], &[1, 3], &[5, 3, 2, 1]] {
        for (from, to) in [(0, 10), (10, 3), (7, 25), (1, 2), (40, 0)] {
            ramp_adds_up(weights, from, to);
        }
    }
    // Each generator ramping its own share linearly, rounding on its own (what
    // was sent before), does not add up at some step of 0 → 10 on three equal
    // segments: what the split above must not do.
    let own = |from: u64, to: u64, at_ms: u64| {
        split::test_vus_at(
            from,
            to,
            Duration::from_secs(1),
            Duration::from_millis(at_ms),
        )
    };
    let segs = segments(&[1, 1, 1]);
    let mut differs = false;
    for step in 0..=50u64 {
        let at = step * 20;
        let whole = own(0, 10, at);
        let linear: u64 = segs
            .iter()
            .map(|s| own(s.count_before(0), s.count_before(10), at))
            .sum();
        differs |= linear != whole;
    }
    assert!(
        differs,
        "the linear shares never differ: the test plants nothing"
    );
}

#[test]
fn a_ramped_vu_target_is_sent_as_the_whole_test_s_ramp_to_follow() {
    let (run, got) = fleet(closed(10), &[2, 1, 1], None);
    run.started(Instant::now());
    run.apply(&ControlCommand::SetVus {
        vus: 4,
        ramp_s: 2.0,
    })
    .unwrap();
    let mut sent = got.lock().unwrap().clone();
    sent.sort_by_key(|(i, _)| *i);
    let caps: Vec<ControlCommand> = sent.into_iter().map(|(_, c)| c).collect();
    // From the plan's 10 VUs to 4: the shares of 4 at the end (2, 1, 1), each
    // following the whole test's 10 → 4.
    let expect = |vus| ControlCommand::SetSegmentVus {
        vus,
        ramp_s: 2.0,
        test_from: 10,
        test_to: 4,
    };
    assert_eq!(caps, vec![expect(2), expect(1), expect(1)]);
    // A user cannot send the generators' form to the coordinator.
    assert!(matches!(
        run.apply(&expect(3)),
        Err(ControlError::NotApplicable(_))
    ));
}

#[test]
fn the_scrapes_the_coordinator_hands_in_reach_a_live_view_as_a_local_run_s_do() {
    let (run, _) = fleet(closed(4), &[1, 1], None);
    let rx = run
        .subscribe_observed(4)
        .expect("a distributed run hands out its scrapes");
    let pool = pado_metrics::ScrapedSample {
        name: "hikaricp_connections_pending".into(),
        labels: vec![("pool".into(), "주문-풀".into())],
        value: 12.0,
        kind: pado_metrics::MetricType::Gauge,
    };
    run.scrape(
        "app",
        &ScrapeOutcome {
            t: 3.0,
            ms: 40.0,
            samples: vec![pool.clone()],
            ..Default::default()
        },
    );
    // A failed scrape has nothing to show.
    run.scrape(
        "app",
        &ScrapeOutcome {
            t: 4.0,
            error: Some(("timeout".into(), "no answer".into())),
            ..Default::default()
        },
    );
    let got = rx.try_recv().unwrap();
    assert_eq!((got.t, got.ms, got.endpoint.as_str()), (3.0, 40.0, "app"));
    assert_eq!(
        got.values,
        vec![(
            "hikaricp_connections_pending{pool=\"주문-풀\"}".to_string(),
            12.0
        )]
    );
    assert_eq!(got.analysed, vec![pool]);
    assert!(rx.try_recv().is_err());
}
