use super::*;
use pado_metrics::{Interval, Phases, RequestSample, SecondRecord, SeriesKey, SeriesStats};
use pado_results::events::{ActionRecord, ExpectRecord};

/// One planted second: `n` requests, the first `failed` of them failed, each
/// taking `ms`.
fn sec(t: u32, n: u64, failed: u64, ms: u64) -> SecondRecord {
    let mut s = SeriesStats::new(SeriesKey::named("checkout"));
    for i in 0..n {
        s.record(&RequestSample {
            status: if i < failed { 500 } else { 200 },
            failed: i < failed,
            phases: Phases {
                duration_us: ms * 1000,
                ..Default::default()
            },
            ..Default::default()
        });
    }
    let mut r = SecondRecord::new(t);
    r.absorb(Interval {
        series: vec![s],
        ..Default::default()
    });
    r
}

fn event(name: &str, start_ms: u64, end_ms: Option<u64>, expect: ExpectRecord) -> EventRecord {
    EventRecord {
        name: name.into(),
        kind: "http".into(),
        planned_ms: start_ms,
        started_ms: Some(start_ms),
        window_end_ms: end_ms,
        required: true,
        mark: None,
        action: Some(ActionRecord {
            kind: "http".into(),
            started_ms: start_ms,
            ended_ms: start_ms + 3,
            outcome: Outcome::Ok,
            exit_code: None,
            status: Some(200),
            error: None,
            stdout: String::new(),
            stderr: String::new(),
        }),
        undo: None,
        expect,
        left_open: None,
    }
}

fn expect() -> ExpectRecord {
    ExpectRecord {
        during: [(
            "http_req_failed".to_string(),
            vec!["rate > 0.1".to_string()],
        )]
        .into_iter()
        .collect(),
        recovers: vec!["p(95) < 100 within 5s".into()],
        hold_s: None,
        no_errors_after_s: Some(5.0),
    }
}

fn run(events: Vec<EventRecord>, seconds: impl Iterator<Item = SecondRecord>) -> Vec<EventImpact> {
    let mut f = EventFold::new(events);
    for s in seconds {
        f.add_second(&s);
    }
    f.finish()
}

/// 30 s at 100 req/s and 10 ms; the fault [10.2 s, 20.2 s) makes 20% fail at 500
/// ms; the latency stays at 500 ms until `heal_t` (the truth), errors stop with the
/// window.
fn faulty(heal_t: u32) -> impl Iterator<Item = SecondRecord> {
    (0..30).map(move |t| match t {
        10..=19 => sec(t, 100, 20, 500),
        _ if t >= 20 && t < heal_t => sec(t, 100, 0, 500),
        _ => sec(t, 100, 0, 10),
    })
}

#[test]
fn a_fault_that_heals_passes_with_recovery_at_the_planted_time() {
    let got = run(
        vec![event("errors", 10_200, Some(20_200), expect())],
        faulty(23),
    );
    let e = &got[0];
    assert!(e.ok(), "{e:#?}");
    // Truth: p95 back under 100 ms from second 23, 2.8 s after the window's end.
    let rec = e.time_to_recovery_s.unwrap();
    assert!((rec - 2.8).abs() <= 1.0, "{rec}");
    assert_eq!(e.expectations[1].kind, "recovers");
    assert_eq!(e.expectations[1].value, Some(rec));
    let during = e.during.as_ref().unwrap();
    assert_eq!(during.seconds, 10);
    assert_eq!(during.failed, 200);
    assert!((during.error_rate - 0.2).abs() < 1e-9);
    assert!((e.expectations[0].value.unwrap() - 0.2).abs() < 1e-9);
    assert!((e.before.p95_ms.unwrap() - 10.0).abs() < 0.1);
    assert!((during.p95_ms.unwrap() - 500.0).abs() < 1.0);
    assert_eq!(e.before.failed, 0);
    // The before window is 10 s long, ending at the start.
    assert!((e.before.start_s - 0.2).abs() < 1e-9, "{:?}", e.before);
    assert_eq!(e.before.seconds, 10);
    // First error in second 10, which starts 0.2 s before the event: 0.
    assert_eq!(e.time_to_first_error_s, Some(0.0));
    assert_eq!(e.failed_requests, 200);
    // no_errors_after 5s: from 25.2 s on, none failed.
    assert!(e.expectations[2].ok);
    assert_eq!(e.expectations[2].value, Some(0.0));
}

#[test]
fn the_empty_tail_after_the_load_does_not_break_recovery() {
    // Healed at 23; seconds 26-29 completed nothing (the graceful stop's tail):
    // the condition held from 23 to the last second with requests.
    let secs = faulty(23).map(|s| if s.t >= 26 { SecondRecord::new(s.t) } else { s });
    let got = run(vec![event("errors", 10_200, Some(20_200), expect())], secs);
    let r = &got[0].expectations[1];
    assert!(r.ok, "{r:?}");
    assert!((r.value.unwrap() - 2.8).abs() < 1e-9, "{r:?}");
    // A second without requests in the middle of the run does not hold.
    let secs = faulty(23).map(|s| if s.t == 24 { SecondRecord::new(s.t) } else { s });
    let got = run(vec![event("errors", 10_200, Some(20_200), expect())], secs);
    assert!((got[0].expectations[1].value.unwrap() - 4.8).abs() < 1e-9);
}

#[test]
fn a_fault_that_never_heals_fails_recovers() {
    let got = run(
        vec![event("errors", 10_200, Some(20_200), expect())],
        faulty(99),
    );
    let e = &got[0];
    assert!(!e.ok());
    let r = &e.expectations[1];
    assert!(!r.ok);
    assert_eq!(r.value, None);
    assert!(r.detail.contains("never"), "{}", r.detail);
    assert_eq!(e.time_to_recovery_s, None);
}

#[test]
fn late_recovery_fails_within_but_is_measured() {
    // Heals 8 s after the window: `within 5s` fails, the time is still reported.
    let got = run(
        vec![event("errors", 10_000, Some(20_000), expect())],
        faulty(28),
    );
    let r = &got[0].expectations[1];
    assert!(!r.ok);
    assert!((r.value.unwrap() - 8.0).abs() <= 1.0, "{r:?}");
}

#[test]
fn errors_after_the_grace_fail_no_errors_after() {
    // Errors go on until second 26: from 25.2 s on, second 25 (middle 25.5) fails.
    let secs = (0..30).map(|t| match t {
        10..=25 => sec(t, 100, 20, 10),
        _ => sec(t, 100, 0, 10),
    });
    let got = run(vec![event("errors", 10_200, Some(20_200), expect())], secs);
    let n = &got[0].expectations[2];
    assert!(!n.ok);
    assert_eq!(n.value, Some(20.0));
}

#[test]
fn a_ramp_is_not_a_fault() {
    // Load and latency rise together, nothing fails: a point event in the middle
    // sees no errors, and its default recovery is immediate.
    let secs = (0..30u32).map(|t| sec(t, 10 + u64::from(t) * 10, 0, 5 + u64::from(t) * 3));
    let mut ev = event(
        "deploy",
        15_000,
        None,
        ExpectRecord {
            no_errors_after_s: Some(0.0),
            ..Default::default()
        },
    );
    ev.kind = "mark".into();
    ev.action = None;
    let got = run(vec![ev], secs);
    let e = &got[0];
    assert!(e.ok(), "{e:#?}");
    assert_eq!(e.outcome, "mark");
    assert_eq!(e.during, None);
    assert_eq!(e.time_to_first_error_s, None);
    assert_eq!(e.failed_requests, 0);
    // A mark is not a fault: it has no recovery time.
    assert_eq!(e.time_to_recovery_s, None);
}

/// A mark placed in the middle of an error burst (which it did not cause) gets no
/// recovery time and no "failed until it recovered" count; the same burst after a
/// real fault does (the planted truth where the rule must fire).
#[test]
fn a_mark_has_no_recovery_time_a_fault_does() {
    let mut mark = event("note", 10_200, None, ExpectRecord::default());
    mark.kind = "mark".into();
    mark.action = None;
    mark.mark = Some("release 2.3 rolled out".into());
    let got = run(vec![mark], faulty(23));
    let e = &got[0];
    assert_eq!(e.outcome, "mark");
    assert_eq!(e.time_to_recovery_s, None, "{e:#?}");
    assert_eq!(e.failed_requests, 0, "{e:#?}");
    // The burst is still shown as what followed it.
    assert_eq!(e.time_to_first_error_s, Some(0.0));
    let fault = event("errors", 10_200, None, ExpectRecord::default());
    let got = run(vec![fault], faulty(23));
    let e = &got[0];
    assert!(e.time_to_recovery_s.is_some(), "{e:#?}");
    assert!(e.failed_requests > 0, "{e:#?}");
}

/// A change of the load by hand (`control`, from a session's handle) in the middle
/// of an error burst is shown as `control`, with no recovery time of its own; the
/// same record kind `shell` with no action is still judged as a fault would be.
#[test]
fn a_change_of_the_load_is_shown_as_control_without_recovery() {
    let mut change = event("active VUs 4 → 1", 10_200, None, ExpectRecord::default());
    change.kind = "control".into();
    change.action = None;
    change.mark = Some("active VUs 4 → 1".into());
    let got = run(vec![change.clone()], faulty(23));
    let e = &got[0];
    assert_eq!(e.outcome, "control");
    assert_eq!(e.name, "active VUs 4 → 1");
    assert_eq!(e.time_to_recovery_s, None, "{e:#?}");
    assert_eq!(e.failed_requests, 0, "{e:#?}");
    change.kind = "shell".into();
    let got = run(vec![change], faulty(23));
    assert_eq!(got[0].outcome, "mark");
    assert!(got[0].time_to_recovery_s.is_some(), "{:#?}", got[0]);
}

#[test]
fn per_step_filters_and_bad_expressions() {
    let mut x = expect();
    x.during = [
        (
            "http_req_failed{step:checkout}".to_string(),
            vec!["rate > 0.1".to_string()],
        ),
        (
            "http_req_failed{step:browse}".to_string(),
            vec!["rate < 0.01".to_string()],
        ),
        (
            "http_req_duration".to_string(),
            vec!["p(95) <<< 1".to_string()],
        ),
    ]
    .into_iter()
    .collect();
    x.recovers = vec![];
    x.no_errors_after_s = None;
    let got = run(vec![event("e", 10_000, Some(20_000), x)], faulty(20));
    let ex = &got[0].expectations;
    let by = |k: &str| ex.iter().find(|e| e.expr.starts_with(k)).unwrap();
    assert!(by("http_req_failed{step:checkout}").ok);
    // No step `browse` in the window: no data fails the expectation.
    let b = by("http_req_failed{step:browse}");
    assert!(!b.ok && b.value.is_none());
    let bad = by("http_req_duration");
    assert!(!bad.ok && bad.detail.starts_with("cannot be read"));
}

#[test]
fn a_failed_required_event_fails() {
    let mut ev = event("e", 1000, None, ExpectRecord::default());
    let a = ev.action.as_mut().unwrap();
    a.outcome = Outcome::Timeout;
    a.error = Some("timed out after 1.0s".into());
    let got = run(vec![ev.clone()], (0..5).map(|t| sec(t, 10, 0, 5)));
    assert_eq!(got[0].outcome, "timeout");
    assert!(!got[0].ok());
    ev.required = false;
    let got = run(vec![ev], (0..5).map(|t| sec(t, 10, 0, 5)));
    assert!(got[0].ok());
}

/// Expectations select requests by `scenario`, `method` and `group` as a run's
/// thresholds do: through the plan's step catalogue. Without it (a directory
/// written before the catalogue) they have no data and fail as such.
#[test]
fn scenario_and_method_tags_in_expectations_read_the_step_catalogue() {
    let during = ExpectRecord {
        during: [
            (
                "http_req_failed{scenario:buy}".to_string(),
                vec!["rate > 0.1".to_string()],
            ),
            (
                "http_reqs{method:POST}".to_string(),
                vec!["count == 1000".to_string()],
            ),
        ]
        .into_iter()
        .collect(),
        recovers: vec!["http_req_failed{scenario:buy}: rate < 0.01 within 5s".into()],
        hold_s: None,
        no_errors_after_s: None,
    };
    let mut steps = pado_metrics::StepCatalog::default();
    steps.record("checkout", "buy", Some("POST"), "");
    let judged = |steps: Option<pado_metrics::StepCatalog>| {
        let mut f = EventFold::new(vec![event("errors", 10_000, Some(20_000), during.clone())]);
        if let Some(s) = steps {
            f = f.with_steps(s);
        }
        faulty(23).for_each(|s| f.add_second(&s));
        f.finish().remove(0)
    };
    let e = judged(Some(steps));
    assert!(e.ok(), "{e:#?}");
    // The planted truth: 20% failed during the window, 100 × 10 s requests.
    let by = |kind: &str, text: &str| {
        e.expectations
            .iter()
            .find(|x| x.kind == kind && x.expr.contains(text))
            .unwrap_or_else(|| panic!("{text}: {e:#?}"))
            .value
    };
    assert!((by("during", "scenario:buy").unwrap() - 0.2).abs() < 1e-9);
    assert_eq!(by("during", "method:POST"), Some(1000.0));
    // A step of another scenario has no data: never the whole run's figure.
    let mut other = pado_metrics::StepCatalog::default();
    other.record("checkout", "browse", Some("GET"), "");
    let e = judged(Some(other));
    assert!(!e.ok(), "{e:#?}");
    assert!(
        e.expectations
            .iter()
            .all(|x| x.value.is_none() || x.kind == "recovers"),
        "{e:#?}"
    );
    let e = judged(None);
    assert!(!e.ok(), "{e:#?}");
}
