use super::*;
use crate::attribution::tests::{attribute_app, spring};
use crate::attribution::{EndpointStatus, Kind, Window};

#[test]
fn a_full_pool_with_requests_waiting_is_the_headline() {
    let a = attribute_app(spring(true));
    let h = headline(Some(&a));
    assert!(
        h.phrase
            .starts_with("DB pool HikariPool-1: 4/4 active, 4 pending"),
        "{h:?}"
    );
    assert_eq!(h.component.as_deref(), Some("DB pool HikariPool-1"));
    assert_eq!(
        h.evidence,
        "every connection in use with requests waiting for one"
    );
}

#[test]
fn busy_workers_with_free_connections_are_the_headline() {
    let a = attribute_app(spring(false));
    let h = headline(Some(&a));
    assert!(
        h.phrase.starts_with("Worker pool `http`: 8/8 busy"),
        "{h:?}"
    );
    assert!(!h.phrase.contains("DB pool"), "{h:?}");
}

#[test]
fn nothing_saturated_says_no_limit_and_why() {
    // The same service without its worker pool's series: nothing observed was full.
    let series = spring(false)
        .into_iter()
        .filter(|s| !s.name.starts_with("executor_"))
        .collect();
    let a = attribute_app(series);
    let h = headline(Some(&a));
    assert_eq!(h.phrase, NO_LIMIT);
    assert_eq!(h.component, None);
    assert!(h.evidence.contains("not scraped"), "{h:?}");
    let unobserved = headline(None);
    assert_eq!(unobserved.phrase, NO_LIMIT);
    assert!(unobserved.evidence.contains("observe:"), "{unobserved:?}");
}

fn row(name: &str, endpoint: &str, verdict: Verdict, state: &str) -> Component {
    Component {
        component: name.into(),
        kind: Kind::Generic,
        endpoint: endpoint.into(),
        state: state.into(),
        baseline: None,
        verdict,
        evidence: format!("{name} evidence"),
        utilisation: None,
    }
}

fn table(rows: Vec<Component>, endpoints: &[&str]) -> Attribution {
    Attribution {
        window: Window::new("sat", 30.0, 60.0),
        baseline: None,
        saturated_run: true,
        components: rows,
        limit: None,
        endpoints: endpoints
            .iter()
            .map(|e| EndpointStatus {
                name: e.to_string(),
                url: format!("http://127.0.0.1/{e}"),
                scrapes: 1,
                failed: 0,
                errors: Default::default(),
                first_error: None,
                samples: 1,
                mean_ms: 1.0,
            })
            .collect(),
    }
}

#[test]
fn busy_throughout_is_named_as_such_and_other_limits_are_counted() {
    let a = table(
        vec![
            row("CPU (machine)", "node", Verdict::BusyThroughout, "97% busy"),
            row("Redis", "node", Verdict::No, "idle"),
        ],
        &["node"],
    );
    let h = headline(Some(&a));
    assert_eq!(h.phrase, "CPU (machine): 97% busy (busy throughout)");
    let two = table(
        vec![
            row("CPU (process)", "api", Verdict::Yes, "1.9 of 2 cores"),
            row("DB pool", "db", Verdict::Yes, "10/10 active"),
            row("Worker pool", "api", Verdict::Consequence, "8/8 busy"),
        ],
        &["api", "db"],
    );
    let h = headline(Some(&two));
    assert_eq!(h.phrase, "CPU (process) (api): 1.9 of 2 cores (and 1 more)");
    assert_eq!(h.evidence, "CPU (process) evidence");
}

#[test]
fn a_run_directory_is_read_through_its_summary() {
    let dir = tempfile::tempdir().unwrap();
    let err = headline_of_run(dir.path()).unwrap_err();
    assert!(matches!(err, HeadlineError::NoSummary { .. }));
    assert!(err.to_string().contains("no summary.json"), "{err}");

    let a = attribute_app(spring(true));
    let summary = serde_json::json!({ "requests": 12, "bottlenecks": a });
    std::fs::write(dir.path().join("summary.json"), summary.to_string()).unwrap();
    assert_eq!(headline_of_run(dir.path()).unwrap(), headline(Some(&a)));

    // A summary of a run without `observe:` has no table.
    std::fs::write(dir.path().join("summary.json"), "{\"requests\": 3}").unwrap();
    assert_eq!(headline_of_run(dir.path()).unwrap(), headline(None));

    std::fs::write(
        dir.path().join("summary.json"),
        "{\n\"bottlenecks\": {\"window\": 3}}",
    )
    .unwrap();
    let err = headline_of_run(dir.path()).unwrap_err();
    match &err {
        HeadlineError::Parse { line, .. } => assert_eq!(*line, 2, "{err}"),
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("summary.json:2:"), "{err}");
}
