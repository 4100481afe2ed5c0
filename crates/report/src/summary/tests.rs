use super::*;
use crate::html::render_html;
use crate::stages::test_support::*;
use crate::text::{render, TextOptions};
use pado_results::ResultDir;

/// A result directory in a temporary directory removed when the test ends (the
/// `TempDir` must be held as long as the `ResultDir` is used).
fn tmpdir(name: &str) -> (tempfile::TempDir, ResultDir) {
    let t = tempfile::Builder::new()
        .prefix(&format!("pado-summary-{name}-"))
        .tempdir()
        .unwrap();
    let dir = ResultDir::create(t.path().join("run")).unwrap();
    (t, dir)
}

/// `seconds` seconds of 100 requests each, then (if `torn`) the first half of one
/// more line, as a writer killed mid-line leaves it.
fn write_killed(dir: &ResultDir, m: &RunMeta, seconds: u32, torn: bool) {
    dir.write_meta(m).unwrap();
    let mut w = dir.timeline_writer().unwrap();
    for t in 0..seconds {
        w.write(&second(t, 4, vec![series("a", 100, 200, 2_000)]))
            .unwrap();
    }
    drop(w);
    if torn {
        let (_tmp_other, other) = tmpdir("killed-extra");
        let mut w = other.timeline_writer().unwrap();
        w.write(&second(seconds, 4, vec![series("a", 100, 200, 2_000)]))
            .unwrap();
        drop(w);
        let line = std::fs::read_to_string(other.path().join("timeline.jsonl")).unwrap();
        let _ = std::fs::remove_dir_all(other.path());
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join("timeline.jsonl"))
            .unwrap();
        std::io::Write::write_all(&mut f, &line.as_bytes()[..line.len() / 2]).unwrap();
    }
}

/// A run killed with a fault window open says so: the window still on record (its
/// undo never ran); once a later pado ran the undo, when and how that went; a killed
/// run without an open window says neither.
#[test]
fn a_fault_window_a_killed_run_left_open_is_said() {
    use pado_results::events::{append_event, ActionRecord, EventRecord, LeftOpen, Outcome};
    use pado_results::open_faults::{write_record, OpenFaults, OpenWindow, OPEN_FAULTS_FILE};
    let (_tmp_dir, dir) = tmpdir("left-open");
    write_killed(&dir, &meta("killed", 0.0), 6, false);
    let said = |dir: &ResultDir| -> Vec<String> {
        build(&load(dir).unwrap())
            .unwrap()
            .warnings
            .into_iter()
            .filter(|w| w.contains("fault window"))
            .collect()
    };
    assert!(said(&dir).is_empty());
    let window = OpenWindow {
        index: 0,
        name: "지연".into(),
        kind: "run".into(),
        planned_ms: 2000,
        started_ms: 2010,
        opened_at: "2026-01-01T00:00:02.010Z".into(),
        undo_kind: "run".into(),
        undo: None,
        env: Vec::new(),
        target: None,
        timeout_ms: 1000,
    };
    let record = OpenFaults {
        format: pado_results::open_faults::OPEN_FAULTS_FORMAT.into(),
        run_name: "killed".into(),
        result_dir: dir.path().display().to_string(),
        run_started_at: "2026-01-01T00:00:00.000Z".into(),
        pid: 1,
        pid_start: 1,
        boot_id: String::new(),
        windows: vec![window],
    };
    write_record(&dir.path().join(OPEN_FAULTS_FILE), &record).unwrap();
    let w = said(&dir);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with(
            "event `지연`: its fault window was still open when the run died (2.0 s into the run"
        ) && w[0].contains("its undo never ran"),
        "{w:?}"
    );
    // A later pado ran the undo: the record is gone, the event says it.
    std::fs::remove_file(dir.path().join(OPEN_FAULTS_FILE)).unwrap();
    let undo = ActionRecord {
        kind: "run".into(),
        started_ms: 3_600_000,
        ended_ms: 3_600_020,
        outcome: Outcome::Ok,
        exit_code: Some(0),
        status: None,
        error: None,
        stdout: String::new(),
        stderr: String::new(),
    };
    append_event(
        dir.path(),
        &EventRecord {
            name: "지연".into(),
            kind: "run".into(),
            planned_ms: 2000,
            started_ms: Some(2010),
            window_end_ms: Some(3_600_020),
            required: false,
            mark: None,
            action: None,
            undo: Some(undo),
            expect: Default::default(),
            left_open: Some(LeftOpen {
                undone_at: "2026-01-01T01:00:02.000Z".into(),
                undone_by: "pado run".into(),
            }),
        },
    )
    .unwrap();
    let w = said(&dir);
    assert_eq!(
        w,
        ["event `지연`: its fault window was left open by a killed run (opened 2.0 s into the run); a later `pado run` ran its undo at 2026-01-01T01:00:02.000Z, and it succeeded"]
    );
}

/// A run whose pado was killed: run.json still says `duration_s: 0` (as written at
/// the start), the last line is torn. Rates are over the seconds written, the run
/// is marked interrupted and the summary says why.
#[test]
fn a_killed_run_is_summarised_over_the_seconds_written() {
    let (_tmp_dir, dir) = tmpdir("killed");
    write_killed(&dir, &meta("killed", 0.0), 12, true);
    let r = load(&dir).unwrap();
    assert_eq!(r.points.len(), 12);
    assert_eq!(r.meta.duration_s, 12.0);
    let s = build(&r).unwrap();
    assert_eq!(s.requests, 1_200);
    assert!((s.rps - 100.0).abs() < 1e-9, "{}", s.rps);
    assert!((s.steps["a"].rps - 100.0).abs() < 1e-9);
    assert_eq!(s.duration_s, 12.0);
    assert!(s.interrupted);
    assert!(
        s.warnings[0].starts_with(
            "the run was cut short at 12 s (pado did not finish writing it: killed or crashed)"
        ),
        "{:?}",
        s.warnings
    );
    assert!(
        s.warnings[1].contains("line 13 was only half written"),
        "{:?}",
        s.warnings
    );
    // All 12 seconds are complete: the stability figures use every one of them.
    assert_eq!(s.stability.rps_p50, 100.0);
    let text = render(&s, TextOptions { color: false });
    assert!(text.contains("cut short at 12 s"), "{text}");

    // Killed before the first second closed: nothing to rate, no division by 0.
    write_killed(&dir, &meta("killed", 0.0), 0, true);
    let s = build(&load(&dir).unwrap()).unwrap();
    assert_eq!((s.requests, s.rps, s.duration_s), (0, 0.0, 0.0));
    assert!(
        s.warnings[0].contains("cut short at 0 s"),
        "{:?}",
        s.warnings
    );

    // A finished run keeps its length; a torn last line is still said.
    write_killed(&dir, &meta("done", 12.5), 12, true);
    let s = build(&load(&dir).unwrap()).unwrap();
    assert_eq!(s.duration_s, 12.5);
    assert!(!s.interrupted);
    assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
    assert!(s.warnings[0].contains("line 13"), "{:?}", s.warnings);
    write_killed(&dir, &meta("done", 12.5), 12, false);
    assert!(build(&load(&dir).unwrap()).unwrap().warnings.is_empty());
    let _ = std::fs::remove_dir_all(dir.path());
}

/// Ten seconds on two workers: worker 0 at `busy0`, its loop's tail `lag_us` late;
/// worker 1 idle.
fn gen_run(busy0: f64, wait: f64, lag_us: u64) -> LoadedRun {
    let seconds = (0..10)
        .map(|t| {
            let rec = second(t, 4, vec![series("a", 100, 200, 2_000)]);
            let rec = with_generator(rec, busy0, wait, lag_us);
            with_generator(rec, 0.1, wait, 1_000)
        })
        .collect();
    let mut m = meta("gen", 10.0);
    m.cores_allowed = 2;
    run(m, seconds)
}

#[test]
fn a_saturated_generator_is_the_first_thing_said_everywhere() {
    let r = gen_run(0.99, 0.01, 30_000);
    let s = build(&r).unwrap();
    let g = s.generator.as_ref().unwrap();
    assert!(g.saturated, "{g:?}");
    assert_eq!(g.busy_seconds, 10);
    assert!((g.cpu_cores_mean - 1.09).abs() < 1e-6, "{g:?}");
    assert!((g.cpu_share_mean - 0.545).abs() < 1e-6, "{g:?}");
    // 20 of 180 wake-ups a second were 30 ms late: above the 99th percentile.
    assert_eq!(g.lag_p99_ms, 30.0);
    assert!(
        s.verdict[0].starts_with(GENERATOR_SATURATED),
        "{:?}",
        s.verdict
    );
    // Said once: not again among the warnings.
    assert!(
        !s.warnings.iter().any(|w| w.contains(GENERATOR_SATURATED)),
        "{:?}",
        s.warnings
    );
    assert!(s.verdict[0].contains("for 10 of 10 s"), "{}", s.verdict[0]);

    let text = render(&s, TextOptions { color: false });
    assert_eq!(text.matches("GENERATOR SATURATED").count(), 1, "{text}");
    let bang = text.find("!! GENERATOR SATURATED").expect(&text);
    assert!(bang < text.find("http_reqs").unwrap(), "{text}");
    assert!(text.contains("generator: cpu 1.1 of 2 cores"), "{text}");
    assert!(text.contains("— SATURATED"), "{text}");

    let html = render_html(&r, &s);
    let banner = html.find("id=\"generator-banner\"").expect("banner");
    assert!(banner < html.find("id=\"key-figures\"").unwrap());
    for chart in ["chart-generator_cpu", "chart-generator_lag"] {
        assert!(html.contains(chart), "{chart}");
    }
    // Same time axis as the other charts: one point per second, x = t.
    let data = html.split("id=\"data\">").nth(1).unwrap();
    let data: serde_json::Value =
        serde_json::from_str(data.split("</script>").next().unwrap()).unwrap();
    let cpu = &data["charts"]["generator_cpu"]["series"][0]["pts"];
    assert_eq!(cpu[0], serde_json::json!([0.0, 54.5]), "{cpu}");
    assert_eq!(cpu.as_array().unwrap().len(), 10);
    let lag = &data["charts"]["generator_lag"]["series"][0]["pts"];
    assert_eq!(lag[9], serde_json::json!([9.0, 30.0]), "{lag}");
}

/// A ramp 10→100 VUs in steps against a planted limit of 300 req/s (latency up
/// past it): a knee at 30 VUs when pado was idle, nothing when pado was the one
/// saturated.
fn knee_run(busy: f64) -> LoadedRun {
    let seconds = (0..40)
        .map(|t| {
            let vus = 10 * (t / 4 + 1);
            let rps = (vus as u64 * 10).min(300);
            let lat = if vus <= 30 {
                2_000
            } else {
                2_000 * vus as u64 / 10
            };
            let rec = second(t, vus, vec![series("a", rps, 200, lat)]);
            with_generator(with_generator(rec, busy, 0.01, 1_000), 0.1, 0.01, 1_000)
        })
        .collect();
    let mut m = meta("knee", 40.0);
    m.cores_allowed = 2;
    run(m, seconds)
}

#[test]
fn a_saturated_generator_gets_no_knee_claims() {
    let idle = build(&knee_run(0.3)).unwrap();
    let sat = idle.saturation.as_ref().expect("analysed");
    assert_eq!(
        sat.outcome,
        pado_analysis::saturation::Outcome::Knee,
        "{sat:?}"
    );
    assert_eq!(sat.throughput_knee_load, Some(30.0), "{sat:?}");
    assert!(idle
        .verdict
        .iter()
        .any(|v| v.contains("stopped keeping up")));
    let busy = build(&knee_run(0.99)).unwrap();
    assert!(busy.generator.as_ref().unwrap().saturated);
    assert_eq!(busy.saturation, None);
    let text = render(&busy, TextOptions { color: false });
    for claim in [
        "stopped keeping up",
        "scalability (USL",
        "no saturation reached",
    ] {
        assert!(!text.contains(claim), "{claim} in {text}");
    }
}

/// Ramp to 20 VUs, hold 40 s, ramp to 150, hold 40 s: latency 15 ms at 20 VUs and
/// 200 ms at 150 (it rises with the load), plus `leak_ms_per_s` in the second hold.
fn ramp_hold_run(leak_ms_per_s: f64) -> LoadedRun {
    let mut m = meta("soak", 100.0);
    let mark = |index, start_s, end_s, from: f64, to: f64| pado_results::StageMark {
        scenario: "default".into(),
        index,
        start_s,
        end_s,
        label: if from == to {
            format!("hold {to} VUs")
        } else {
            format!("ramp {from}→{to} VUs")
        },
        target: to,
        from: Some(from),
    };
    m.stages = vec![
        mark(0, 0.0, 10.0, 0.0, 20.0),
        mark(1, 10.0, 50.0, 20.0, 20.0),
        mark(2, 50.0, 60.0, 20.0, 150.0),
        mark(3, 60.0, 100.0, 150.0, 150.0),
    ];
    let seconds = (0..100u32)
        .map(|t| {
            let (vus, ms) = match t {
                0..=9 => (2 * (t + 1), 5.0 + t as f64),
                10..=49 => (20, 15.0),
                50..=59 => (20 + 13 * (t - 49), 15.0 + 18.5 * (t - 49) as f64),
                _ => (150, 200.0 + leak_ms_per_s * (t - 60) as f64),
            };
            // Two requests either side of the second's latency: a little spread.
            let us = (ms * 1000.0) as u64;
            second(
                t,
                vus,
                vec![series("a", 20, 200, us * (100 + (t as u64 % 7)) / 103)],
            )
        })
        .collect();
    run(m, seconds)
}

#[test]
fn latency_rising_with_the_load_is_not_drift() {
    let s = build(&ramp_hold_run(0.0)).unwrap();
    assert_eq!(s.drift_periods.len(), 2, "{:?}", s.drift_periods);
    assert!(
        s.drift_periods.iter().all(|d| !d.drift.notable),
        "{:?}",
        s.drift_periods
    );
    assert!(
        !s.verdict.iter().any(|v| v.contains("drift")),
        "{:?}",
        s.verdict
    );
    // Nothing significant (the fixture's noise gives p well above 0.01): the summary
    // prints no drift line and no method paragraph; the JSON keeps both.
    assert!(
        s.drift_periods.iter().all(|d| !d.drift.significant()),
        "{:?}",
        s.drift_periods
    );
    let text = render(&s, TextOptions { color: false });
    assert!(!text.contains("latency drift"), "{text}");
    assert!(!text.contains("drift method"), "{text}");
    let json = serde_json::to_value(&s).unwrap();
    assert!(
        json["drift_method"]
            .as_str()
            .is_some_and(|m| m.starts_with("least-squares")),
        "{json}"
    );
    assert_eq!(json["drift_periods"].as_array().map(Vec::len), Some(2));
}

/// A change of the load by hand in the second hold (150 → 100 VUs at 80.4 s) is a
/// level boundary as a planned step is: that hold is two steady periods, split at
/// the change's second. A hold of the plan is not one (the stages on record
/// already moved with it), and a run without changes keeps its two periods.
#[test]
fn a_change_of_the_load_by_hand_splits_a_steady_period_at_its_second() {
    let control =
        |name: &str, start_s: f64, end_s: Option<f64>| pado_analysis::events::EventImpact {
            name: name.into(),
            kind: "control".into(),
            start_s,
            end_s,
            outcome: "control".into(),
            required: false,
            error: None,
            before: Default::default(),
            during: None,
            after: Default::default(),
            time_to_first_error_s: None,
            time_to_recovery_s: None,
            failed_requests: 0,
            expectations: Vec::new(),
        };
    let spans = |r: &LoadedRun| -> Vec<(f64, f64)> {
        super::analyses::drift_periods(r)
            .0
            .iter()
            .map(|p| (p.start_s, p.end_s))
            .collect()
    };
    let mut r = ramp_hold_run(0.0);
    assert_eq!(spans(&r), [(10.0, 50.0), (60.0, 100.0)]);
    r.events = vec![
        control("held the plan for 2.0s", 20.0, Some(22.0)),
        control("active VUs 150 → 100", 80.4, None),
    ];
    assert_eq!(spans(&r), [(10.0, 50.0), (60.0, 80.0), (81.0, 100.0)]);
}

#[test]
fn latency_growing_under_steady_load_is_drift_near_the_planted_slope() {
    // 2 ms more every second at 150 VUs: 7,200 ms per hour.
    let s = build(&ramp_hold_run(2.0)).unwrap();
    let d = s.drift.as_ref().expect("drift");
    assert_eq!(d.period.label, "hold 150 VUs");
    assert!(d.drift.notable, "{d:?}");
    assert!((d.drift.slope_per_hour / 7200.0 - 1.0).abs() < 0.1, "{d:?}");
    let line = s
        .verdict
        .iter()
        .find(|v| v.contains("drifted"))
        .expect("verdict");
    assert!(
        line.contains("under steady load (hold 150 VUs, 60–100 s)"),
        "{line}"
    );
    // The drift made this a soak block: the significant period is its one rising
    // latency row, and no method paragraph is printed (it is in summary.json).
    let text = render(&s, TextOptions { color: false });
    let rising: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("latency") && l.ends_with("rising"))
        .collect();
    assert_eq!(rising.len(), 1, "{text}");
    assert!(!text.contains("drift method"), "{text}");
    assert!(s.drift_method.is_some());
}

/// The pool a dropped-arrivals sentence names is the open-model scenarios' `max_vus`
/// summed (12 + 30), a closed scenario's VUs left out; one open scenario without a
/// recorded ceiling makes it the allocated peak.
#[test]
fn the_vu_pool_is_the_open_scenarios_ceiling() {
    let sc = |open: bool, max: Option<u32>| pado_results::ScenarioMeta {
        open_model: open,
        max_vus: max,
        ..Default::default()
    };
    assert_eq!(
        VuPool::of(
            &[sc(true, Some(12)), sc(false, None), sc(true, Some(30))],
            9
        ),
        VuPool::Max(42)
    );
    assert_eq!(
        VuPool::of(&[sc(true, Some(12)), sc(true, None)], 9),
        VuPool::Allocated(9)
    );
    assert_eq!(VuPool::of(&[sc(false, None)], 9), VuPool::Allocated(9));
}

/// The ceiling (12), not the 7 VUs allocated at the peak, is what the sentence says:
/// with the pool split over worker threads a run drops arrivals before allocating
/// them all.
#[test]
fn dropped_arrivals_are_named_with_the_knob() {
    let mut m = meta("open", 10.0);
    m.scenarios = vec![pado_results::ScenarioMeta {
        name: "default".into(),
        executor: "constant-arrival-rate".into(),
        description: "100 it/s".into(),
        open_model: true,
        max_vus: Some(12),
        scripted: false,
    }];
    let seconds: Vec<_> = (0..10)
        .map(|t| {
            let mut rec = second(t, 5, vec![series("a", 42, 200, 1_000)]);
            let mut sc = pado_metrics::ScenarioStats::new("default");
            sc.iterations = 42;
            sc.dropped = if t < 9 { 58 } else { 0 };
            rec.absorb(pado_metrics::Interval {
                scenarios: vec![sc],
                ..Default::default()
            });
            rec
        })
        .collect();
    let s = build(&run(m.clone(), seconds.clone())).unwrap();
    // 522 of 942 planned arrivals: 55%.
    let line = s
        .verdict
        .iter()
        .find(|v| v.contains("never sent"))
        .expect("dropped line");
    assert_eq!(
        line,
        "55% of the planned arrivals (522 of 942) were never sent: the VU pool (max 12) was exhausted; raise --max-vus (or max_vus in the file)"
    );
    // A directory written before the ceiling was recorded: the allocated peak (7)
    // is said as what it is, never as the ceiling.
    let mut older = m.clone();
    older.scenarios[0].max_vus = None;
    let s = build(&run(older, seconds.clone())).unwrap();
    assert!(
        s.verdict
            .iter()
            .any(|v| v.contains("the VU pool (7 allocated at most) was exhausted")),
        "{:?}",
        s.verdict
    );
    let none: Vec<_> = (0..10)
        .map(|t| second(t, 5, vec![series("a", 42, 200, 1_000)]))
        .collect();
    let s = build(&run(m, none)).unwrap();
    assert!(
        !s.verdict.iter().any(|v| v.contains("never sent")),
        "{:?}",
        s.verdict
    );
}

/// Issue #28: a light run on a busy machine. The target answers in 274 ms and keeps
/// up with a ramp of 4, 8, 12 and 16 VUs; pado used 1% of its one core and its
/// loop woke up to 12.5 ms late (p99) on scheduler delay alone. The load went out:
/// the saturation analysis is kept ("no saturation reached"), nothing says
/// "capped by pado" or "SATURATED", and a note gives the delay the timings may carry.
#[test]
fn a_delayed_generator_keeps_the_saturation_analysis_and_says_its_delay() {
    let seconds: Vec<_> = (0..20)
        .map(|t| {
            let vus = 4 * (t / 5 + 1);
            // Each VU completes about 3.6 requests a second at 274 ms.
            let n = (vus as f64 * 3.6).round() as u64;
            let rec = second(t, vus, vec![series("a", n, 200, 274_000)]);
            with_generator(rec, 0.01, 0.05, 12_500)
        })
        .collect();
    let mut m = meta("busy-machine", 20.0);
    m.cores_allowed = 1;
    let r = run(m, seconds);
    let s = build(&r).unwrap();
    let g = s.generator.as_ref().unwrap();
    assert!(!g.saturated && g.delayed, "{g:?}");
    assert_eq!(g.lag_p99_ms, 12.5);
    let sat = s.saturation.as_ref().expect("saturation analysis kept");
    assert_eq!(
        sat.outcome,
        pado_analysis::saturation::Outcome::NoSaturationReached
    );
    assert!(
        s.verdict
            .iter()
            .any(|v| v.starts_with("no saturation reached")),
        "{:?}",
        s.verdict
    );
    let note = s
        .verdict
        .iter()
        .find(|v| v.starts_with(GENERATOR_DELAYED))
        .expect("the delay note");
    assert!(
        note.contains("timings may carry up to 12.5 ms of scheduling delay"),
        "{note}"
    );
    assert!(
        note.contains("against a median latency of 274 ms"),
        "{note}"
    );
    let all = s.verdict.join("\n");
    assert!(!all.contains(GENERATOR_SATURATED), "{all}");
    assert!(!all.contains("capped by pado"), "{all}");
    let text = render(&s, TextOptions { color: false });
    assert!(!text.contains("SATURATED"), "{text}");
    assert!(!text.contains("!!"), "{text}");
    assert!(
        text.contains("generator: cpu 0.01 of 1 core (peak 0.01"),
        "{text}"
    );
    assert!(
        text.contains("— delayed (timings may carry up to 12.5 ms of scheduling delay)"),
        "{text}"
    );
    let html = render_html(&r, &s);
    assert!(!html.contains("id=\"generator-banner\""));
    assert!(html.contains("timings may carry up to 12.5 ms"));
}

#[test]
fn an_idle_generator_gets_one_quiet_line() {
    let r = gen_run(0.3, 0.02, 2_000);
    let s = build(&r).unwrap();
    let g = s.generator.as_ref().unwrap();
    assert!(!g.saturated, "{g:?}");
    assert!(!s.verdict.iter().any(|v| v.contains("GENERATOR")));
    assert!(!s.warnings.iter().any(|v| v.contains("GENERATOR")));
    let text = render(&s, TextOptions { color: false });
    assert!(!text.contains("!!"), "{text}");
    assert!(
        text.contains("generator: cpu 0.4 of 2 cores (peak 0.4, busiest worker 30%), run-queue wait 2%, lag p99 2.00 ms (max 2.00 ms)\n"),
        "{text}"
    );
    let html = render_html(&r, &s);
    assert!(!html.contains("id=\"generator-banner\""));
    assert!(html.contains("chart-generator_cpu"));
}

#[test]
fn runs_without_generator_figures_say_nothing_about_it() {
    let r = run(
        meta("old", 2.0),
        vec![second(0, 1, vec![series("a", 5, 200, 100)])],
    );
    let s = build(&r).unwrap();
    assert!(s.generator.is_none());
    let text = render(&s, TextOptions { color: false });
    assert!(!text.contains("generator:"), "{text}");
    let html = render_html(&r, &s);
    assert!(!html.contains("chart-generator_cpu"));
    assert!(html.contains("not measured"));
}

/// A run with an event in its directory: `pado report` judges it from
/// `events.jsonl` and the timeline, and every presenter shows it.
#[test]
fn events_are_judged_from_the_directory_and_shown_everywhere() {
    use pado_results::events::{EventRecord, EventsWriter, ExpectRecord};
    let (_tmp_dir, dir) = tmpdir("events");
    dir.write_meta(&meta("events", 20.0)).unwrap();
    let mut w = dir.timeline_writer().unwrap();
    for t in 0..20 {
        // 500s from 5 to 9 (the window is 5-10 s), never after.
        let status = if (5..10).contains(&t) { 500 } else { 200 };
        w.write(&second(t, 4, vec![series("a", 100, status, 2_000)]))
            .unwrap();
    }
    drop(w);
    let rec = |name: &str, recovers: &str| EventRecord {
        name: name.into(),
        kind: "mark".into(),
        planned_ms: 5_000,
        started_ms: Some(5_000),
        window_end_ms: Some(10_000),
        required: true,
        mark: Some("fault".into()),
        action: None,
        undo: None,
        expect: ExpectRecord {
            recovers: vec![recovers.into()],
            ..Default::default()
        },
        left_open: None,
    };
    let mut ew = EventsWriter::create(dir.path()).unwrap();
    ew.write(&rec("burst", "http_req_failed: rate < 0.01 within 2s"))
        .unwrap();
    drop(ew);
    let r = load(&dir).unwrap();
    let s = build(&r).unwrap();
    assert!(s.events_ok && s.passed(), "{:?}", s.events);
    let e = &s.events[0];
    assert_eq!(e.time_to_recovery_s, Some(0.0));
    assert_eq!(e.during.as_ref().unwrap().failed, 500);
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["events"][0]["name"], "burst");
    assert_eq!(json["events_ok"], true);
    let text = render(&s, TextOptions::default());
    assert!(text.contains("  events\n"), "{text}");
    assert!(
        text.contains("✓ burst: recovers: http_req_failed: rate < 0.01 within 2s"),
        "{text}"
    );
    let html = render_html(&r, &s);
    assert!(html.contains("id=\"table-events\""));
    assert!(
        html.contains("\"events\":[{\"name\":\"burst\",\"start\":5.0,\"end\":10.0,\"ok\":true}]"),
        "chart data"
    );
    let cmp = crate::compare::compare(&[
        crate::compare::Side {
            label: "A".into(),
            run: &r,
            summary: &s,
        },
        crate::compare::Side {
            label: "B".into(),
            run: &r,
            summary: &s,
        },
    ]);
    let row = cmp
        .rows
        .iter()
        .find(|x| x.scope == "event burst" && x.metric == "failed requests")
        .unwrap();
    assert_eq!(row.values, vec![Some(500.0), Some(500.0)]);

    // The same directory with a stricter expectation fails: exit 99.
    let mut ew = EventsWriter::create(dir.path()).unwrap();
    ew.write(&rec("burst", "http_req_failed: rate < 0.01 within 2s"))
        .unwrap();
    let mut late = rec("late", "p(95) < 0.001 within 1s");
    late.planned_ms = 6_000;
    ew.write(&late).unwrap();
    drop(ew);
    let s = build(&load(&dir).unwrap()).unwrap();
    assert!(!s.events_ok && !s.passed());
    assert!(s.thresholds_ok);
    // One verdict: no threshold was set, yet the summary says what failed (never
    // "no thresholds were set"), JUnit fails the same items, exit 99.
    assert_eq!(s.judged.exit_code, 99);
    assert!(
        s.verdict[0]
            .starts_with("FAILED: event late: recovers p(95) < 0.001 within 1s: never held"),
        "{:?}",
        s.verdict
    );
    assert!(!s
        .verdict
        .iter()
        .any(|v| v.contains("no thresholds were set")));
    let failed_items = s.judged.failures().count();
    assert!(failed_items >= 1);
    let xml = crate::junit::junit_xml(&s);
    assert!(
        xml.contains(&format!("failures=\"{failed_items}\"")),
        "{xml}"
    );
    assert!(xml.contains("<testsuite name=\"events\""), "{xml}");
    assert_eq!(
        serde_json::to_value(&s).unwrap()["judged"]["passed"],
        serde_json::json!(false)
    );
}

/// `ramp_hold_run(0.0)` with the target's resident memory observed every second:
/// flat, except `leak_mib_per_s` more every second of the 150-VU hold.
fn soak_run(leak_mib_per_s: f64, mode: Option<pado_results::SoakMode>) -> LoadedRun {
    let mut run = ramp_hold_run(0.0);
    run.meta.soak = mode;
    let mib = 1024.0 * 1024.0;
    run.observations = pado_results::Observations {
        endpoints: vec![pado_results::observed::EndpointLog {
            name: "app".into(),
            ..Default::default()
        }],
        series: vec![pado_results::ObservedSeries {
            endpoint: "app".into(),
            name: "process_resident_memory_bytes".into(),
            kind: pado_metrics::MetricType::Gauge,
            points: (0..100)
                .map(|t| {
                    let wobble = (t % 5) as f64 * 0.2 * mib;
                    let grown = leak_mib_per_s * (t as f64 - 60.0).max(0.0) * mib;
                    (t as f64, 80.0 * mib + wobble + grown)
                })
                .collect(),
            ..Default::default()
        }],
    };
    run
}

/// The soak verdict: judged only under `--soak`, shown for long runs, left out of
/// other runs unless something drifted; a leak planted in the steady hold is named
/// in the verdict, the terminal block and the exit code.
#[test]
fn the_soak_verdict_is_judged_only_when_asked() {
    use pado_analysis::soak::Verdict;
    use pado_results::SoakMode;
    let leaky = soak_run(1.0, Some(SoakMode::Requested));
    let s = build(&leaky).unwrap();
    let k = s.soak.as_ref().expect("soak");
    assert_eq!(k.verdict, Verdict::LeakSuspected, "{k:?}");
    assert!(!s.soak_ok && !s.passed());
    assert_eq!(s.judged.exit_code, 99);
    assert!(
        s.verdict[0].starts_with("FAILED: soak: leak suspected"),
        "{:?}",
        s.verdict
    );
    let xml = crate::junit::junit_xml(&s);
    assert!(
        xml.contains("<testsuite name=\"soak\" tests=\"1\" failures=\"1\""),
        "{xml}"
    );
    let line = s
        .verdict
        .iter()
        .find(|v| v.starts_with("leak suspected"))
        .expect("a leak sentence");
    assert!(
        line.contains("`process_resident_memory_bytes` at app rose from")
            && line.contains("hold 150 VUs, 60–100 s"),
        "{line}"
    );
    let text = render(&s, TextOptions { color: false });
    assert!(text.contains("✗ soak: leak suspected over"), "{text}");
    assert!(text.contains("still rising"), "{text}");
    // The HTML report: the section with its verdict and table, and the memory chart.
    let html = crate::html::render_html(&leaky, &s);
    assert!(html.contains("id=\"table-soak\""), "no soak table");
    assert!(
        html.contains("<strong>leak suspected</strong>"),
        "no soak verdict"
    );
    assert!(
        html.contains("memory under the soak (MiB)"),
        "no memory chart"
    );
    // No leak: stable, passed, said.
    let s = build(&soak_run(0.0, Some(SoakMode::Requested))).unwrap();
    assert_eq!(s.soak.as_ref().unwrap().verdict, Verdict::Stable);
    assert!(s.soak_ok && s.passed());
    assert!(s.verdict.iter().any(|v| v.starts_with("soak: stable")));
    // A long run shows the leak but is not failed by it.
    let s = build(&soak_run(1.0, Some(SoakMode::Long))).unwrap();
    assert_eq!(s.soak.as_ref().unwrap().verdict, Verdict::LeakSuspected);
    assert!(s.soak_ok && s.passed());
    // Any run: a drift is worth telling; a stable soak block is not.
    let s = build(&soak_run(1.0, None)).unwrap();
    assert!(s.soak.is_some() && s.passed());
    let s = build(&soak_run(0.0, None)).unwrap();
    assert!(s.soak.is_none(), "{:?}", s.soak);
    // Asked for, with no steady period long enough: not judged, and failed.
    let mut short = soak_run(0.0, Some(SoakMode::Requested));
    short.meta.stages.clear();
    short
        .points
        .iter_mut()
        .enumerate()
        .for_each(|(i, p)| p.vus = i as u32);
    let s = build(&short).unwrap();
    assert!(s.soak.is_none() && !s.soak_ok && !s.passed());
    assert!(render(&s, TextOptions { color: false }).contains("soak: not judged"));
}

/// A `--soak` run read while it is still going, before any steady period could be
/// judged: not failed for that, and said so.
#[test]
fn a_soak_still_going_is_not_failed_for_being_short() {
    let mut run = soak_run(0.0, Some(pado_results::SoakMode::Requested));
    run.meta.stages.clear();
    run.points
        .iter_mut()
        .enumerate()
        .for_each(|(i, p)| p.vus = i as u32);
    run.in_progress = true;
    let s = build(&run).unwrap();
    assert!(s.in_progress && s.soak.is_none() && s.soak_ok && s.passed());
    assert!(render(&s, TextOptions { color: false }).contains("soak: not judged yet"));
}

/// `n` WebSocket sessions of step `name`, each sending 3 and receiving 2 messages,
/// `failed` of them closed early; no HTTP request.
fn ws_series(name: &str, n: u64, failed: u64) -> pado_metrics::SeriesStats {
    let mut s = pado_metrics::SeriesStats::new(pado_metrics::SeriesKey::named(name));
    for i in 0..n {
        s.record_ws(&pado_metrics::WsSession {
            connecting_us: 2_000,
            duration_us: 50_000,
            msgs_sent: 3,
            msgs_received: 2,
            error: (i < failed).then_some(pado_metrics::WsError::ClosedEarly),
            connected: true,
            ..Default::default()
        });
        s.record_ws_latency(4_000);
    }
    s
}

/// A run of WebSocket sessions only (the planted truth: 10 s of 20 sessions a
/// second, 3 sent and 2 received each, 1 in 20 closed early) shows sessions and
/// messages where request lines would be zeroes, no stage or step table of zeroes,
/// and an SLA sentence in sessions, never "0 req/s". A mixed run keeps its request
/// lines (where the rule must not fire).
#[test]
fn a_websocket_only_run_shows_its_sessions_not_zero_requests() {
    let mut m = meta("chat", 10.0);
    m.thresholds = vec![pado_results::ThresholdSpec {
        metric: "ws_sessions".into(),
        expr: "count > 10".into(),
        abort_on_fail: false,
        window_s: None,
    }];
    m.stages = vec![stage(0, 0.0, 10.0, "hold 10 VUs")];
    let seconds: Vec<_> = (0..10)
        .map(|t| second(t, 10, vec![ws_series("chat", 20, u64::from(t == 0))]))
        .collect();
    let s = build(&run(m.clone(), seconds)).unwrap();
    assert!(s.websocket_only());
    let ws = s.websocket.as_ref().unwrap();
    assert_eq!((ws.sessions, ws.failed), (200, 1));
    assert_eq!((ws.msgs_sent, ws.msgs_received), (600, 400));
    let text = render(&s, TextOptions { color: false });
    assert!(!text.contains("http_reqs"), "{text}");
    assert!(!text.contains("http_req_duration"), "{text}");
    assert!(!text.contains("0 req/s"), "{text}");
    let line = |key: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(key))
            .unwrap_or_else(|| panic!("no {key} line in {text}"))
            .to_string()
    };
    assert!(line("ws_sessions").contains("200 sessions"), "{text}");
    assert!(line("ws_sessions").contains("20.0/s"), "{text}");
    assert!(line("ws_failed").contains("ws_closed_early: 1"), "{text}");
    assert!(
        line("ws_msgs").contains("sent 600") && line("ws_msgs").contains("received 400"),
        "{text}"
    );
    // No step or stage table of zero requests: the sessions are in the websocket block.
    assert!(
        !text.lines().any(|l| l.trim_start().starts_with("step ")),
        "{text}"
    );
    assert!(
        !text.lines().any(|l| l.trim_start().starts_with("stage ")),
        "{text}"
    );
    let sla = &s.verdict[0];
    assert!(sla.starts_with("SLA met"), "{sla}");
    assert!(
        sla.contains("200 WebSocket sessions") && !sla.contains("req/s"),
        "{sla}"
    );

    // The same sessions beside HTTP requests: the request lines stay.
    let seconds: Vec<_> = (0..10)
        .map(|t| {
            second(
                t,
                10,
                vec![ws_series("chat", 20, 0), series("GET /", 30, 200, 5_000)],
            )
        })
        .collect();
    let s = build(&run(m, seconds)).unwrap();
    assert!(!s.websocket_only());
    let text = render(&s, TextOptions { color: false });
    assert!(text.contains("http_reqs"), "{text}");
    assert!(!text.contains("ws_sessions ."), "{text}");
    assert!(s.verdict[0].contains("30 req/s"), "{:?}", s.verdict);
}

/// Latency falling steadily through the 150-VU hold (2 ms less each second: the
/// planted truth, significant but not a soak signal) is printed as the one drift
/// line; the 20-VU hold's chance slope is not.
#[test]
fn only_significant_drift_is_printed() {
    let s = build(&ramp_hold_run(-2.0)).unwrap();
    assert!(s.soak.is_none(), "{:?}", s.soak);
    let significant: Vec<_> = s
        .drift_periods
        .iter()
        .filter(|d| d.drift.significant())
        .collect();
    assert_eq!(significant.len(), 1, "{:?}", s.drift_periods);
    assert_eq!(significant[0].period.label, "hold 150 VUs");
    let text = render(&s, TextOptions { color: false });
    let shown: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("latency drift under steady load"))
        .collect();
    assert_eq!(shown.len(), 1, "{text}");
    assert!(shown[0].contains("hold 150 VUs"), "{text}");
    assert!(!shown[0].contains("notable"), "{text}");
    assert!(!text.contains("drift method"), "{text}");
}

/// `{stage:N}` and `{window:…}` thresholds are judged on exactly their seconds:
/// a run fast (10 ms) in its first stage and slow (300 ms) in its second fails the
/// p95 threshold of stage 2 only, and the verdict, JUnit and the terminal say so.
#[test]
fn scoped_thresholds_are_judged_on_their_own_seconds() {
    let fast = (0..10).map(|t| second(t, 4, vec![series("a", 50, 200, 10_000)]));
    let slow = (10..20).map(|t| second(t, 4, vec![series("a", 50, 200, 300_000)]));
    let mut m = meta("staged", 20.0);
    m.stages = vec![
        stage(0, 0.0, 10.0, "hold 4 VUs"),
        stage(1, 10.0, 20.0, "hold 4 VUs"),
    ];
    let spec = |metric: &str, expr: &str, w: Option<[f64; 2]>| pado_results::ThresholdSpec {
        metric: metric.into(),
        expr: expr.into(),
        abort_on_fail: false,
        window_s: w,
    };
    m.thresholds = vec![
        spec(
            "http_req_duration{stage:1}",
            "p(95) < 200",
            Some([0.0, 10.0]),
        ),
        spec(
            "http_req_duration{stage:2}",
            "p(95) < 200",
            Some([10.0, 20.0]),
        ),
        spec("http_reqs{window:10s-20s}", "rate == 50", None),
        spec("http_req_duration", "p(95) < 200", None),
    ];
    let r = LoadedRun::from_seconds(m, fast.chain(slow));
    let s = build(&r).unwrap();
    let oks: Vec<bool> = s.thresholds.iter().map(|t| t.ok).collect();
    assert_eq!(oks, [true, false, true, false], "{:?}", s.thresholds);
    assert!((s.thresholds[0].value.unwrap() - 10.0).abs() < 0.1);
    assert!((s.thresholds[1].value.unwrap() - 300.0).abs() < 1.0);
    assert_eq!(s.thresholds[1].window_s, Some([10.0, 20.0]));
    assert_eq!(s.thresholds[2].value, Some(50.0));
    assert!(!s.passed() && s.judged.exit_code == 99);
    assert!(
        s.verdict[0].starts_with(
            "SLA not met: http_req_duration{stage:2}: p(95) < 200; http_req_duration: p(95) < 200"
        ),
        "{:?}",
        s.verdict
    );
    let text = render(&s, TextOptions { color: false });
    assert!(
        text.contains("http_req_duration{stage:2}: p(95) < 200   (actual 300"),
        "{text}"
    );
    assert!(text.contains("over 10–20 s)"), "{text}");
    let xml = crate::junit::junit_xml(&s);
    assert!(xml.contains("failures=\"2\""), "{xml}");
    assert!(xml.contains("over seconds 10–20 of the run"), "{xml}");

    // A stage placed past the run's end has no data: failed, not passed.
    let mut m = meta("short", 20.0);
    m.thresholds = vec![spec(
        "http_req_duration{stage:3}",
        "p(95) < 1e9",
        Some([30.0, 40.0]),
    )];
    let s = build(&LoadedRun::from_seconds(
        m,
        (0..20).map(|t| second(t, 4, vec![series("a", 5, 200, 1_000)])),
    ))
    .unwrap();
    assert!(!s.thresholds[0].ok && s.thresholds[0].value.is_none());
}

/// The requests rule: every request failed (a 500 the step does not expect) fails
/// the run and says why; the same answers when expected (not failures) pass.
#[test]
fn a_run_where_every_request_failed_fails() {
    let all_500 = (0..5).map(|t| second(t, 2, vec![series("a", 10, 500, 1_000)]));
    let s = build(&LoadedRun::from_seconds(meta("down", 5.0), all_500)).unwrap();
    assert!(!s.passed() && s.judged.exit_code == 99, "{:?}", s.judged);
    assert!(
        s.verdict[0].starts_with(
            "FAILED: requests: some completed, not all failed: every request failed (50 of 50)"
        ),
        "{:?}",
        s.verdict
    );
    let ok = (0..5).map(|t| second(t, 2, vec![series("a", 10, 200, 1_000)]));
    let s = build(&LoadedRun::from_seconds(meta("up", 5.0), ok)).unwrap();
    assert!(s.passed() && s.judged.exit_code == 0, "{:?}", s.judged);
    assert!(
        s.verdict[0].starts_with("no thresholds were set"),
        "{:?}",
        s.verdict
    );
}

/// Requests by HTTP version and connections opened reach `summary.json` and one
/// line of the terminal summary, summed over the seconds; a run without them (a
/// result directory written before pado counted them) shows neither.
#[test]
fn http_versions_and_connections_opened_are_said_when_counted() {
    let counted = |t: u32, p: pado_metrics::ProtocolCounts| {
        let mut rec = second(t, 4, vec![series("a", 1_200, 200, 2_000)]);
        rec.protocols = p;
        rec
    };
    // HTTP/2 only: 2,400 requests on 4 connections opened in the first second.
    let r = run(
        meta("h2", 2.0),
        vec![
            counted(
                0,
                pado_metrics::ProtocolCounts {
                    requests_http2: 1_200,
                    conns_http2: 4,
                    ..Default::default()
                },
            ),
            counted(
                1,
                pado_metrics::ProtocolCounts {
                    requests_http2: 1_200,
                    ..Default::default()
                },
            ),
        ],
    );
    let s = build(&r).unwrap();
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["http_versions"], serde_json::json!({"2": 2400}));
    assert_eq!(json["connections_opened"], 4);
    assert_eq!(json["connections_by_version"], serde_json::json!({"2": 4}));
    assert!(json.get("connections_tls").is_none(), "{json}");
    let text = render(&s, TextOptions { color: false });
    let line = text.lines().find(|l| l.contains("http ..")).unwrap_or("");
    assert!(
        line.ends_with("HTTP/2 (2,400 requests) · 4 connections opened"),
        "{text}"
    );

    // Both versions, some over TLS: each with its count, the connections split.
    let r = run(
        meta("mixed", 1.0),
        vec![counted(
            0,
            pado_metrics::ProtocolCounts {
                requests_http1: 1_000,
                requests_http2: 200,
                conns_http1: 10,
                conns_http2: 1,
                conns_tls: 1,
            },
        )],
    );
    let s = build(&r).unwrap();
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(
        json["http_versions"],
        serde_json::json!({"1.1": 1000, "2": 200})
    );
    assert_eq!(json["connections_opened"], 11);
    assert_eq!(json["connections_tls"], 1);
    let text = render(&s, TextOptions { color: false });
    assert!(
        text.contains(
            "HTTP/1.1 (1,000 requests), HTTP/2 (200 requests) · 11 connections opened (10 HTTP/1.1, 1 HTTP/2, 1 over TLS)"
        ),
        "{text}"
    );

    // Nothing counted: no fields, no line.
    let r = run(
        meta("old", 1.0),
        vec![second(0, 1, vec![series("a", 5, 200, 100)])],
    );
    let s = build(&r).unwrap();
    let json = serde_json::to_value(&s).unwrap();
    for k in [
        "http_versions",
        "connections_opened",
        "connections_by_version",
    ] {
        assert!(json.get(k).is_none(), "{k}: {json}");
    }
    let text = render(&s, TextOptions { color: false });
    assert!(!text.contains("connections opened"), "{text}");
    // And a summary.json of an older pado reads back without them.
    let back: Summary = serde_json::from_value(json).unwrap();
    assert_eq!(back.connections_opened, None);
}
