use super::*;

fn config() -> Config {
    serde_json::from_value(serde_json::json!({
        "target": "http://127.0.0.1:9",
        "scenarios": {
            "browse": {"executor": "constant-vus", "vus": 1, "duration": "1s",
                "flow": [{"request": "/검색", "name": "검색", "tags": {"팀": "검색"}}]},
            "buy": {"executor": "constant-vus", "vus": 1, "duration": "1s",
                "flow": [{"request": "/검색", "name": "검색"}, {"request": "/pay", "name": "checkout"}]}
        }
    }))
    .unwrap()
}

fn catalog() -> StepCatalog {
    let mut c = StepCatalog::default();
    c.record("검색", "browse", Some("GET"), "");
    c.record("검색", "buy", Some("GET"), "");
    c.record("checkout", "buy", Some("POST"), "");
    c
}

fn problems(key: &str) -> Vec<SelectorProblem> {
    let expr = match key.split('{').next() {
        Some("checks") => "rate > 0.9",
        Some("http_reqs") => "count > 0",
        _ => "p(95) < 200",
    };
    let t = pado_scenario::thresholds::parse(key, expr).unwrap();
    let steps = catalog();
    let names = PlanNames {
        series: &["검색", "checkout"],
        checks: &["status 200".to_string()],
        steps: &steps,
    };
    selector_problems(&config(), &[t], &names)
}

#[test]
fn selectors_naming_what_the_plan_has_pass() {
    for key in [
        "http_req_duration{step:검색}",
        "http_req_duration{name:checkout}",
        "http_req_duration{method:POST}",
        "http_req_duration{method:GET}",
        "http_req_duration{팀:검색}",
        "checks{check:status 200}",
        "http_reqs{status:500}",
    ] {
        assert_eq!(problems(key), vec![], "{key}");
    }
}

#[test]
fn a_misspelt_step_an_unknown_tag_and_a_k6_only_tag_are_named() {
    let p = problems("http_req_duration{step:검섹}");
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].field, "thresholds.http_req_duration{step:검섹}");
    assert!(
        p[0].message
            .starts_with("thresholds.http_req_duration{step:검섹}: no step is named `검섹`"),
        "{}",
        p[0].message
    );
    assert!(
        p[0].message.ends_with("hint: steps here: 검색, checkout"),
        "{}",
        p[0].message
    );
    let p = problems("http_req_duration{step:chekout}");
    assert!(
        p[0].message.contains("did you mean `checkout`?"),
        "{}",
        p[0].message
    );
    let p = problems("http_req_duration{stp:검색}");
    assert!(
        p[0].message.contains("did you mean `step`?"),
        "{}",
        p[0].message
    );
    assert!(
        p[0].message.contains("your steps' tags: 팀"),
        "{}",
        p[0].message
    );
    let p = problems("http_req_duration{url:/pay}");
    assert!(
        p[0].message.contains("k6 sets `url`, pado does not"),
        "{}",
        p[0].message
    );
    let p = problems("group_duration");
    assert!(
        p[0].message.contains("no `group:` block"),
        "{}",
        p[0].message
    );
}

#[test]
fn a_scenario_selector_whose_step_is_shared_is_refused() {
    // `검색` is a step of both scenarios: one series, so `scenario:browse` would
    // count buy's searches too.
    let p = problems("http_req_duration{scenario:browse}");
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].message
            .contains("step `검색` is used in more than one scenario (`browse`, `buy`)"),
        "{}",
        p[0].message
    );
    // Iterations are the scenario's own figure: no step series involved.
    let t = pado_scenario::thresholds::parse("iterations{scenario:browse}", "count > 1").unwrap();
    let steps = catalog();
    let names = PlanNames {
        series: &["검색", "checkout"],
        checks: &[],
        steps: &steps,
    };
    assert_eq!(selector_problems(&config(), &[t], &names), vec![]);
}
