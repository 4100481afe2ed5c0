//! Loading and validating scenario files: every problem with its line.

use super::*;

fn errs(src: &str) -> Vec<Diagnostic> {
    match parse_str(src, "t.yaml") {
        Ok(_) => vec![],
        Err(e) => e.diagnostics().to_vec(),
    }
}

fn one_scenario(body: &str) -> Vec<Diagnostic> {
    errs(&format!(
        "target: http://127.0.0.1:1\nscenarios:\n  a:\n{body}    flow: [{{ request: \"GET /\" }}]\n"
    ))
}

#[test]
fn loads_no_machine_could_run_are_refused_with_the_limit() {
    let cases = [
        ("    executor: constant-vus\n    vus: 4294967295\n    duration: 2s\n", "scenarios.a.vus", "1000000"),
        ("    executor: constant-arrival-rate\n    rate: 100\n    duration: 2s\n    pre_allocated_vus: 4294967295\n    max_vus: 4294967295\n", "scenarios.a.pre_allocated_vus", "1000000"),
        ("    executor: constant-arrival-rate\n    rate: 1e308\n    duration: 2s\n", "scenarios.a.rate", "10000000/s"),
        ("    executor: constant-arrival-rate\n    rate: 1\n    time_unit: 1ns\n    duration: 2s\n", "scenarios.a.rate", "1.000e9 iterations"),
        ("    executor: ramping-arrival-rate\n    stages: [{ duration: 2s, target: 1e300 }]\n", "scenarios.a.stages[0].target", "10000000/s"),
        ("    executor: ramping-vus\n    stages: [{ duration: 2s, target: 5000000 }]\n", "scenarios.a.stages[0].target", "1000000"),
        ("    executor: constant-vus\n    vus: 1\n    duration: 0s\n", "scenarios.a.duration", "more than 0"),
        ("    executor: constant-arrival-rate\n    rate: 1e-9\n    duration: 10s\n", "scenarios.a.rate", "not one iteration"),
        ("    executor: ramping-vus\n    stages: [{ duration: 0s, target: 5 }]\n", "scenarios.a.stages", "lasts 0s"),
    ];
    for (body, field, says) in cases {
        let e = one_scenario(body);
        let hit = e.iter().find(|d| d.field == field);
        let d = hit.unwrap_or_else(|| panic!("{field} not refused for {body:?}: {e:?}"));
        assert!(d.message.contains(says), "{d}");
        assert!(d.line.is_some(), "{d}");
        assert!(!d.message.contains("inf"), "{d}");
    }
}

#[test]
fn environment_values_are_refused_in_tags() {
    let e = one_scenario("    executor: constant-vus\n    vus: 1\n    duration: 1s\n    mix:\n      - { request: \"GET /\", tags: { who: \"u-{{ env.SECRET_TOKEN }}\" } }\n");
    let d = e
        .iter()
        .find(|d| d.field == "scenarios.a.mix[0].tags.who")
        .unwrap_or_else(|| panic!("{e:?}"));
    assert!(d.message.contains("cannot be used in a tag"), "{d}");
    assert_eq!(d.line, Some(8), "{d}");
    // Other templates in tags stay allowed.
    let ok = errs("target: http://127.0.0.1:1\nscenarios:\n  a:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n    mix:\n      - { request: \"GET /\", tags: { vu: \"{{ vu }}\" } }\n");
    assert_eq!(ok, vec![]);
}

#[test]
fn nul_bytes_and_transfer_encoding_headers_are_refused() {
    let file = |headers: &str| {
        errs(&format!(
            "target: http://127.0.0.1:1\ndefaults:\n  headers: {headers}\nscenarios:\n  a:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n    flow: [{{ request: {{ url: /, headers: {headers} }} }}]\n"
        ))
    };
    let e = file("{ X-A: \"a\\0b\", Transfer-Encoding: chunked }");
    for field in [
        "defaults.headers.X-A",
        "scenarios.a.flow[0].request.headers.X-A",
    ] {
        assert!(
            e.iter()
                .any(|d| d.field == field && d.message.contains("NUL")),
            "{field}: {e:?}"
        );
    }
    assert_eq!(
        e.iter()
            .filter(|d| d.message.contains("frames request bodies itself"))
            .count(),
        2,
        "{e:?}"
    );
    assert_eq!(file("{ X-A: b }"), vec![]);
}

#[test]
fn loads_at_the_limits_are_accepted() {
    for body in [
        "    executor: constant-vus\n    vus: 1000000\n    duration: 2s\n",
        "    executor: constant-arrival-rate\n    rate: 10000000\n    duration: 2s\n",
        "    executor: constant-arrival-rate\n    rate: 1\n    time_unit: 1m\n    duration: 1m\n",
        "    executor: ramping-arrival-rate\n    stages: [{ duration: 0s, target: 5 }, { duration: 2s, target: 5 }]\n",
    ] {
        assert_eq!(one_scenario(body), vec![], "{body}");
    }
}

#[test]
fn a_good_file_loads() {
    let c = parse_str(
        "name: demo\ntarget: http://127.0.0.1:8080\nthresholds:\n  http_req_duration: [\"p(95) < 200\"]\nscenarios:\n  browse:\n    executor: ramping-vus\n    stages: [{ duration: 10s, target: 5 }, { duration: 5s, target: 0 }]\n    mix:\n      - { weight: 30, name: search, request: \"GET /api/search?q=x\", check: { status: 200 } }\n      - { weight: 5, name: write, flow: [ { request: { method: POST, url: /api/posts, json: { title: \"안녕\" } } }, { think: 1s } ] }\n    think: { uniform: [0.5s, 2s] }\n",
        "t.yaml",
    )
    .unwrap();
    assert_eq!(c.scenarios[0].0, "browse");
    assert_eq!(c.scenarios[0].1.mix.len(), 2);
}

#[test]
fn a_leading_byte_order_mark_is_ignored_and_lines_stay_right() {
    let body = "name: bom\ntarget: http://127.0.0.1:8080\nscenarios:\n  a:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n    flow: [{ request: \"GET /\" }]\n";
    let plain = parse_str(body, "t.yaml").unwrap();
    let with_bom = parse_str(&format!("\u{feff}{body}"), "t.yaml").unwrap();
    assert_eq!(with_bom, plain);
    assert_eq!(with_bom.name.as_deref(), Some("bom"));
    // Errors found after parsing and by the YAML parser still name the right line.
    let e = errs("\u{feff}target: http://x\nscenarios:\n  a:\n    executor: constant-vus\n    vus: 1\n    duraton: 10s\n    flow: [{ request: \"GET /\" }]\n");
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].line, Some(6), "{:?}", e[0]);
    let e = errs("\u{feff}target: http://x\nscenarios:\n  a:\n    executor: constant-arrival-rate\n    rate: -5\n    duration: 1s\n    flow: [{ request: \"GET /\" }]\n");
    assert!(
        e.iter()
            .any(|d| d.line == Some(5) && d.field.ends_with("rate")),
        "{e:?}"
    );
}

#[test]
fn unknown_field_names_line_and_field() {
    let e = errs("target: http://x\nscenarios:\n  a:\n    executor: constant-vus\n    vus: 1\n    duraton: 10s\n    flow: [{ request: \"GET /\" }]\n");
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].line, Some(6), "{:?}", e[0]);
    assert!(e[0].message.contains("duraton"), "{}", e[0]);
    assert!(e[0].to_string().starts_with("t.yaml:6:"), "{}", e[0]);
}

#[test]
fn semantic_errors_are_all_reported_with_lines() {
    let e = errs("scenarios:\n  a:\n    executor: constant-arrival-rate\n    rate: -5\n    vus: 3\n    flow:\n      - request: \"FETCH /x\"\n");
    let text: Vec<String> = e.iter().map(|d| d.to_string()).collect();
    let all = text.join("\n");
    assert!(
        all.contains("t.yaml:5:") && all.contains("`vus` does not apply"),
        "{all}"
    );
    assert!(
        all.contains("t.yaml:4:") && all.contains("rate: must be more than 0"),
        "{all}"
    );
    assert!(all.contains("needs `duration`"), "{all}");
    assert!(all.contains("unknown method `FETCH`"), "{all}");
    assert!(
        all.contains("relative but the file has no `target`"),
        "{all}"
    );
}

#[test]
fn bad_executor_and_bad_duration() {
    let e = errs("scenarios:\n  a:\n    executor: constant-users\n");
    assert_eq!(e[0].line, Some(3));
    assert!(
        e[0].message.contains("unknown executor `constant-users`"),
        "{}",
        e[0]
    );
    assert!(
        e[0].hint
            .as_deref()
            .unwrap_or_default()
            .contains("did you mean `constant-vus`"),
        "{}",
        e[0]
    );
    let e = errs("target: http://h\nscenarios:\n  a:\n    executor: constant-vus\n    duration: 10x\n    flow: [{request: /}]\n");
    assert_eq!(e[0].line, Some(5), "{}", e[0]);
    assert!(e[0].message.contains("unknown unit"), "{}", e[0]);
}

#[test]
fn templates_and_names_are_checked_with_lines() {
    let e = errs("target: http://h\ndata:\n  kw: { file: k.csv }\n  bad: { range: [5, 1] }\nscenarios:\n  a:\n    executor: constant-vus\n    duration: 1s\n    flow:\n      - request: \"GET /s?q={{ kw.term }}&t={{ token }}\"\n      - { request: \"GET /x\", extract: { id: \"$.[\" } }\n      - request: { method: POST, url: /p, json: { a: \"{{ nope }}\" } }\n");
    let all: Vec<String> = e.iter().map(|d| d.to_string()).collect();
    let all = all.join("\n");
    assert!(
        all.contains("t.yaml:4:") && all.contains("first must not exceed"),
        "{all}"
    );
    assert!(
        all.contains("t.yaml:10:") && all.contains("`token` is neither"),
        "{all}"
    );
    assert!(
        all.contains("t.yaml:11:") && all.contains("not a JSONPath"),
        "{all}"
    );
    assert!(all.contains("json.a") && all.contains("`nope`"), "{all}");
    // Defined by an extract elsewhere: fine.
    let ok = errs("target: http://h\nscenarios:\n  a:\n    executor: constant-vus\n    duration: 1s\n    setup_per_vu:\n      - { request: \"POST /login\", extract: { token: $.token } }\n    flow:\n      - request: { url: \"/me/{{ token }}\", headers: { Authorization: \"Bearer {{ token }}\" } }\n      - { group: g, steps: [ { request: /a } ] }\n");
    assert!(ok.is_empty(), "{ok:?}");
}

#[test]
fn typed_values_and_path_holes_are_checked_where_they_stand() {
    let flow = |steps: &str, target: &str| {
        errs(&format!(
            "{target}scenarios:\n  a:\n    executor: constant-vus\n    duration: 1s\n    flow:\n{steps}"
        ))
    };
    let t = "target: http://127.0.0.1:1\n";
    // The whole of a JSON value: fine, and a path taken from a response.
    let ok = flow("      - { request: \"GET /a\", extract: { next: { header: Location } } }\n      - request: { method: POST, url: \"{{ next }}\", json: { n: \"{{ iter | int }}\", items: [\"{{ next | json }}\"] } }\n", t);
    assert!(ok.is_empty(), "{ok:?}");
    let text = |d: Vec<Diagnostic>| {
        d.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    // Part of a JSON string, a URL, a header: a type has no meaning there.
    let e = text(flow("      - request: { method: POST, url: \"/a/{{ iter | int }}\", headers: { X-N: \"{{ vu | int }}\" }, json: { n: \"n{{ iter | int }}\" } }\n", t));
    assert_eq!(
        e.matches("must be the whole of a JSON body value").count(),
        3,
        "{e}"
    );
    assert!(
        e.contains("t.yaml:7:106: scenarios.a.flow[0].request.json.n"),
        "{e}"
    );
    let e = text(flow(
        "      - request: { method: POST, url: /a, json: { n: \"{{ iter | integer }}\" } }\n",
        t,
    ));
    assert!(e.contains("unknown type `integer`"), "{e}");
    // A leading hole needs a target to be requested on.
    let e = text(flow("      - request: \"GET {{ vu }}\"\n", ""));
    assert!(
        e.contains("is a path from a template but the file has no `target`"),
        "{e}"
    );
    // The host still cannot come from a template.
    let e = text(flow("      - request: \"GET http://{{ vu }}/x\"\n", t));
    assert!(e.contains("cannot come from a template"), "{e}");
}

#[test]
fn request_line_split() {
    assert_eq!(
        split_request_line("post /a").unwrap(),
        ("POST".into(), "/a".into())
    );
    assert_eq!(
        split_request_line("http://h/x").unwrap(),
        ("GET".into(), "http://h/x".into())
    );
    assert_eq!(
        split_request_line("GET /s?q=검색 엔진").unwrap().1,
        "/s?q=검색 엔진"
    );
    assert!(split_request_line("  ").is_err());
}

#[test]
fn garbage_never_panics() {
    let mut rng = fastrand::Rng::with_seed(0x9e3779b97f4a7c15);
    let alphabet = b"ab:- \n{}[],\"'#&*!|>%@`0123456789scenariosexecutor\t";
    for _ in 0..3000 {
        let s: Vec<u8> = (0..rng.usize(..80))
            .map(|_| alphabet[rng.usize(..alphabet.len())])
            .collect();
        let s = String::from_utf8_lossy(&s);
        let _ = parse_str(&s, "fuzz.yaml");
    }
}

#[test]
fn observe_section_loads_and_its_errors_name_lines() {
    let c = parse_str(
        "target: http://127.0.0.1:8080\nobserve:\n  interval: 1s\n  endpoints:\n    - http://127.0.0.1:9100/metrics\n    - { name: app, url: http://127.0.0.1:8080/actuator/prometheus, headers: { Authorization: \"Bearer {{ env.T }}\" } }\nscenarios:\n  a: { executor: constant-vus, vus: 1, duration: 1s, flow: [{ request: \"GET /\" }] }\n",
        "t.yaml",
    )
    .unwrap();
    let o = c.observe.unwrap();
    assert_eq!(o.endpoints[0].name(), "node");
    assert_eq!(o.endpoints[1].name(), "app");
    let e = errs("target: http://127.0.0.1:8080\nobserve:\n  interval: 10ms\n  endpoints:\n    - ftp://x/metrics\n    - http://127.0.0.1:9100/metrics\n    - { name: node, url: \"http://127.0.0.1:9101/m\", headers: { X: \"{{ vu }}\" } }\nscenarios:\n  a: { executor: constant-vus, vus: 1, duration: 1s, flow: [{ request: \"GET /\" }] }\n");
    let all: Vec<String> = e.iter().map(|d| d.to_string()).collect();
    let all = all.join("\n");
    assert!(
        all.contains("t.yaml:3:") && all.contains("between 100ms and 1h"),
        "{all}"
    );
    assert!(
        all.contains("t.yaml:5:") && all.contains("only http://"),
        "{all}"
    );
    assert!(all.contains("two endpoints are named `node`"), "{all}");
    assert!(all.contains("observe.endpoints[2].headers.X"), "{all}");
}

#[test]
fn a_websocket_step_loads_and_its_mistakes_name_line_and_field() {
    let good = "target: http://127.0.0.1:1\nscenarios:\n  a:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n    flow:\n      - name: chat\n        ws:\n          url: /ws?room={{ vu }}\n          headers: { X-Who: \"u{{ vu }}\" }\n          actions:\n            - send: '{\"type\":\"join\"}'\n            - expect: { body_contains: joined, timeout: 2s }\n              extract: { member: { json: $.id } }\n            - send: 'hi {{ member }}'\n            - expect: { json: { $.echo: \"hi {{ member }}\" } }\n            - { send: ping, every: 100ms, count: 3 }\n            - hold: 1s\n            - close: true\n";
    assert_eq!(errs(good), vec![]);
    let file = |actions: &str| {
        errs(&format!(
            "target: http://127.0.0.1:1\nscenarios:\n  a:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n    flow:\n      - name: chat\n        ws:\n          url: /ws\n          actions:\n{actions}"
        ))
    };
    // (actions, field, says, line)
    let cases = [
        ("            - { send: a, hold: 1s }\n", "scenarios.a.flow[0].ws.actions[0]", "only one of", 12),
        ("            - { send: a }\n            - { count: 3 }\n", "scenarios.a.flow[0].ws.actions[1]", "needs one of", 13),
        ("            - { send: a, count: 3 }\n", "scenarios.a.flow[0].ws.actions[0].count", "needs `every`", 12),
        ("            - { hold: 1s, extract: { x: $.id } }\n", "scenarios.a.flow[0].ws.actions[0].extract", "`expect`", 12),
        ("            - expect: { body_matches: \"(\" }\n", "scenarios.a.flow[0].ws.actions[0].expect.body_matches", "regular expression", 12),
        ("            - expect: { body_contains: x }\n              extract: { t: { header: X-T } }\n", "scenarios.a.flow[0].ws.actions[0].extract.t", "no headers", 13),
        ("            - send: \"{{ nope }}\"\n", "scenarios.a.flow[0].ws.actions[0].send", "nope", 12),
    ];
    for (actions, field, says, line) in cases {
        let e = file(actions);
        let d = e
            .iter()
            .find(|d| d.field == field)
            .unwrap_or_else(|| panic!("{field} not refused for {actions:?}: {e:?}"));
        assert!(d.message.contains(says), "{d}");
        assert_eq!(d.line, Some(line), "{d}");
    }
    // A field that does not exist is a shape error naming its line.
    let e = file("            - { sned: a }\n");
    let d = e
        .iter()
        .find(|d| d.message.contains("sned"))
        .unwrap_or_else(|| panic!("{e:?}"));
    assert_eq!(d.line, Some(12), "{d}");
    // The scheme: ws(s) only for absolute URLs.
    let e = errs("scenarios:\n  a:\n    executor: constant-vus\n    flow:\n      - ws: { url: \"ftp://h/x\", actions: [ { send: a } ] }\n");
    let d = e
        .iter()
        .find(|d| d.field == "scenarios.a.flow[0].ws.url")
        .unwrap_or_else(|| panic!("{e:?}"));
    assert!(d.message.contains("not a WebSocket scheme"), "{d}");
    let ok = errs("scenarios:\n  a:\n    executor: constant-vus\n    duration: 1s\n    flow:\n      - ws: { url: \"wss://h/x?a={{ vu }}\", actions: [ { send: a } ] }\n");
    assert_eq!(ok, vec![]);
}

#[test]
fn body_base64_must_be_base64_and_the_only_body() {
    let file = |req: &str| {
        format!("target: http://127.0.0.1:1\nscenarios:\n  a:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n    flow:\n      - request:\n          method: POST\n          url: /x\n{req}")
    };
    // Wrapped lines are fine: the bytes are the same.
    assert!(errs(&file(
        "          body_base64: |\n            AP/+\n            gA==\n"
    ))
    .is_empty());
    let e = errs(&file("          body_base64: \"%%\"\n"));
    let d = e
        .iter()
        .find(|d| d.field.ends_with(".body_base64"))
        .unwrap_or_else(|| panic!("{e:?}"));
    assert!(d.message.starts_with("not base64"), "{d}");
    assert_eq!(d.line, Some(11), "{d}");
    let e = errs(&file("          body: x\n          body_base64: eA==\n"));
    assert!(
        e.iter().any(|d| d.message.contains("`body_base64`")),
        "{e:?}"
    );
}

/// `externally-controlled` needs its ceiling and a duration, starts at most at its
/// ceiling, and takes no other executor's fields; each error names its line.
#[test]
fn an_externally_controlled_scenario_is_validated_like_the_others() {
    let ok = one_scenario(
        "    executor: externally-controlled\n    vus: 2\n    max_vus: 10\n    duration: 1m\n",
    );
    assert_eq!(ok, vec![]);
    let cases = [
        (
            "    executor: externally-controlled\n    vus: 2\n    duration: 1m\n",
            "scenarios.a.executor",
            "needs `max_vus`",
            4,
        ),
        (
            "    executor: externally-controlled\n    max_vus: 10\n",
            "scenarios.a.executor",
            "needs `duration`",
            4,
        ),
        (
            "    executor: externally-controlled\n    vus: 12\n    max_vus: 10\n    duration: 1m\n",
            "scenarios.a.vus",
            "12 VUs to start is more than max_vus (10)",
            5,
        ),
        (
            "    executor: externally-controlled\n    max_vus: 10\n    duration: 1m\n    rate: 5\n",
            "scenarios.a.rate",
            "does not apply to executor externally-controlled",
            7,
        ),
    ];
    for (body, field, says, line) in cases {
        let e = one_scenario(body);
        let d = e
            .iter()
            .find(|d| d.field == field && d.message.contains(says))
            .unwrap_or_else(|| panic!("{field}: {says} not said for {body:?}: {e:?}"));
        assert_eq!(d.line, Some(line), "{d}");
    }
}

#[test]
fn sse_options_that_cannot_work_are_refused_with_their_field() {
    let flow = |step: &str| {
        errs(&format!(
            "target: http://127.0.0.1:1\nscenarios:\n  a:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n    flow:\n      - {step}\n"
        ))
    };
    let cases = [
        (
            "{ request: \"POST /v1/chat\", sse: { count: 0 } }",
            "scenarios.a.flow[0].sse.count",
            "at least 1",
        ),
        (
            "{ request: \"POST /v1/chat\", sse: { max_time: 0s } }",
            "scenarios.a.flow[0].sse.max_time",
            "more than 0",
        ),
        (
            "{ request: \"POST /v1/chat\", sse: { llm: true, token_path: \"$[\" } }",
            "scenarios.a.flow[0].sse.token_path",
            "not a JSONPath",
        ),
        (
            "{ request: \"POST /v1/chat\", sse: { usage_path: \"$.usage.n\" } }",
            "scenarios.a.flow[0].sse.usage_path",
            "llm: true",
        ),
        (
            "{ think: 1s, sse: { until: \"[DONE]\" } }",
            "scenarios.a.flow[0].sse",
            "needs a `request`",
        ),
        (
            "{ request: \"POST /v1/chat\", sse: { until_event: \"\" } }",
            "scenarios.a.flow[0].sse.until_event",
            "empty",
        ),
        (
            "{ request: \"POST /v1/chat\", sse: { check: { fail_request: false } } }",
            "scenarios.a.flow[0].sse.check",
            "nothing to check",
        ),
        (
            "{ request: \"POST /v1/chat\", sse: { check: { json_exists: [\"$[\"] } } }",
            "scenarios.a.flow[0].sse.check.json",
            "not a JSONPath",
        ),
        (
            "{ request: \"POST /v1/chat\", sse: { check: { body_matches: \"(\" } } }",
            "scenarios.a.flow[0].sse.check.body_matches",
            "regular expression",
        ),
        (
            "{ request: \"POST /v1/chat\", sse: { check: { body_contains: \"{{ id }}\" } } }",
            "scenarios.a.flow[0].sse.check",
            "templates",
        ),
        (
            "{ request: \"POST /v1/chat\", sse: { extract: { id: { json: \"$.id\", regex: \"x\" } } } }",
            "scenarios.a.flow[0].sse.extract.id",
            "one of",
        ),
        (
            "{ request: \"POST /v1/chat\", sse: { extract: { id: \"$[\" } } }",
            "scenarios.a.flow[0].sse.extract.id",
            "not a JSONPath",
        ),
    ];
    for (step, field, says) in cases {
        let e = flow(step);
        let d = e
            .iter()
            .find(|d| d.field == field)
            .unwrap_or_else(|| panic!("{field} not refused for {step}: {e:?}"));
        assert!(
            d.message.contains(says) || d.hint.as_deref().is_some_and(|h| h.contains(says)),
            "{d}"
        );
        assert_eq!(d.line, Some(8), "{d}");
    }
    // A good one loads: LLM stream with its paths, a Hangul stop word.
    let ok = flow("{ request: \"POST /v1/chat\", sse: { until: \"끝\", count: 500, max_time: 30s, llm: true, token_path: \"$.choices[0].delta.content\" } }");
    assert!(ok.is_empty(), "{ok:?}");
    // Checks and extraction on events load, and the variable is known to later steps.
    let ok = errs("target: http://127.0.0.1:1\nscenarios:\n  a:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n    flow:\n      - { request: \"POST /v1/chat\", sse: { until: \"[DONE]\", check: { json_valid: true, no_event: [error], json_exists: [\"$.choices\"] }, extract: { cid: \"$.id\", fin: { json: \"$.choices[0].finish_reason\", from: last, event: message } } } }\n      - { request: \"GET /v1/done/{{ cid }}\" }\n");
    assert!(ok.is_empty(), "{ok:?}");
}

/// `shared-iterations` takes `vus`, `iterations` and `max_duration` only, needs at
/// least one iteration per VU, and each error names its line.
#[test]
fn a_shared_iterations_scenario_is_validated_like_the_others() {
    let ok = one_scenario(
        "    executor: shared-iterations\n    vus: 3\n    iterations: 10\n    max_duration: 30s\n",
    );
    assert_eq!(ok, vec![]);
    let cases = [
        (
            "    executor: shared-iterations\n    vus: 4\n    iterations: 3\n",
            "scenarios.a.iterations",
            "3 iterations shared by 4 VUs",
            6,
        ),
        (
            "    executor: shared-iterations\n    vus: 0\n    iterations: 3\n",
            "scenarios.a.vus",
            "must be at least 1",
            5,
        ),
        (
            "    executor: shared-iterations\n    iterations: 0\n",
            "scenarios.a.iterations",
            "must be at least 1",
            5,
        ),
        (
            "    executor: shared-iterations\n    iterations: 5\n    duration: 1m\n",
            "scenarios.a.duration",
            "does not apply to executor shared-iterations",
            6,
        ),
    ];
    for (body, field, says, line) in cases {
        let e = one_scenario(body);
        let d = e
            .iter()
            .find(|d| d.field == field && d.message.contains(says))
            .unwrap_or_else(|| panic!("{field}: {says} not said for {body:?}: {e:?}"));
        assert_eq!(d.line, Some(line), "{d}");
    }
}

#[test]
fn a_prompt_length_that_cannot_be_made_is_refused_with_its_field() {
    let flow = |step: &str| {
        errs(&format!(
            "target: http://127.0.0.1:1\nscenarios:\n  a:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n    flow:\n      - {step}\n"
        ))
    };
    let body = "request: { method: POST, url: /v1/chat, json: { messages: [ { role: user, content: \"{{ prompt }}\" } ] } }";
    let cases = [
        (
            "sse: { prompt: { tokens: 10 } }",
            "scenarios.a.flow[0].sse.prompt",
            "llm: true",
        ),
        (
            "sse: { llm: true, prompt: { tokens: 0 } }",
            "scenarios.a.flow[0].sse.prompt.tokens",
            "between 1 and 262144",
        ),
        (
            "sse: { llm: true, prompt: { tokens: { mean: 0.5, stddev: 1 } } }",
            "scenarios.a.flow[0].sse.prompt.tokens.mean",
            "between 1",
        ),
        (
            "sse: { llm: true, prompt: { tokens: { mean: 500, stddev: -3 } } }",
            "scenarios.a.flow[0].sse.prompt.tokens.stddev",
            "0 or more",
        ),
        (
            "sse: { llm: true, prompt: { tokens: 10, var: \"a b\" } }",
            "scenarios.a.flow[0].sse.prompt.var",
            "variable's name",
        ),
        (
            "sse: { llm: true, prompt: { tokens: 10, text: \"{{ nowhere.x }}\" } }",
            "scenarios.a.flow[0].sse.prompt.text",
            "nowhere",
        ),
    ];
    for (sse, field, says) in cases {
        let step = format!("{{ {body}, {sse} }}");
        let e = flow(&step);
        let d = e
            .iter()
            .find(|d| d.field == field)
            .unwrap_or_else(|| panic!("{field} not refused for {step}: {e:?}"));
        assert!(
            d.message.contains(says) || d.hint.as_deref().is_some_and(|h| h.contains(says)),
            "{d}"
        );
        assert_eq!(d.line, Some(8), "{d}");
    }
    // Fixed and spread lengths load, and `{{ prompt }}` (or the named variable) is
    // a known name in the body.
    for sse in [
        "sse: { llm: true, until: \"[DONE]\", prompt: { tokens: 1000 } }",
        "sse: { llm: true, prompt: { tokens: { mean: 550, stddev: 150 }, seed: 3 } }",
    ] {
        let ok = flow(&format!("{{ {body}, {sse} }}"));
        assert!(ok.is_empty(), "{sse}: {ok:?}");
    }
    let ok = flow("{ request: { method: POST, url: /v1/chat, json: { prompt: \"{{ question }}\" } }, sse: { llm: true, prompt: { tokens: 8, var: question } } }");
    assert!(ok.is_empty(), "{ok:?}");
}
