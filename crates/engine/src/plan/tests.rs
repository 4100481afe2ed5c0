//! Compiling scenarios into plans: names, origins, request bytes, checks.

use std::path::Path;

use super::*;

fn plan(src: &str) -> RunPlan {
    let cfg = pado_scenario::parse_str(src, "t.yaml").unwrap();
    compile(&cfg, Path::new(".")).unwrap()
}

#[test]
fn a_unique_feed_with_fewer_rows_than_vus_is_warned_about() {
    let src = |vus: u32| {
        format!("target: http://127.0.0.1:9\ndata:\n  users: {{ range: [1, 5], pick: unique }}\nscenarios:\n  s:\n    executor: constant-vus\n    vus: {vus}\n    duration: 1s\n    flow: [{{ request: \"GET /u/{{{{ users.value }}}}\" }}]\n")
    };
    let w = plan(&src(8)).warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("feed `users`") && w[0].contains("5 rows for up to 8 VUs"),
        "{w:?}"
    );
    assert_eq!(plan(&src(5)).warnings(), Vec::<String>::new());
}

#[test]
fn request_bytes_are_built_once_and_correct() {
    let p = plan("target: http://127.0.0.1:9\ndefaults:\n  headers: { X-Env: a, Accept: text/plain }\nscenarios:\n  s:\n    executor: constant-vus\n    duration: 1s\n    flow:\n      - name: search\n        request: \"GET /api/search?q=검색 엔진\"\n      - request: { method: post, url: /api/posts, headers: { accept: application/json }, json: { title: \"안녕\" } }\n        check: { status: 201, body_contains: ok }\n");
    let s = &p.scenarios[0];
    let bytes_of = |r: &RequestPlan| match &r.form {
        RequestForm::Static { bytes, .. } => bytes.to_vec(),
        RequestForm::Dynamic { .. } => panic!("expected a static request"),
    };
    let r0 = s.entries[0].steps[0].request.as_ref().unwrap();
    let text = String::from_utf8(bytes_of(r0)).unwrap();
    assert!(
        text.starts_with("GET /api/search?q=%EA%B2%80%EC%83%89%20%EC%97%94%EC%A7%84 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n"),
        "{text}"
    );
    assert!(text.ends_with("\r\n\r\n"));
    assert!(!text.contains("Content-Length"));
    let r1 = s.entries[0].steps[1].request.as_ref().unwrap();
    let text = String::from_utf8(bytes_of(r1)).unwrap();
    assert!(text.starts_with("POST /api/posts HTTP/1.1\r\n"), "{text}");
    assert!(text.contains("Content-Type: application/json\r\n"));
    assert!(text.contains("accept: application/json\r\n"));
    assert!(!text.contains("Accept: text/plain"), "{text}");
    let body = "{\"title\":\"안녕\"}";
    assert!(text.contains(&format!("Content-Length: {}\r\n", body.len())));
    assert!(text.ends_with(body));
    assert!(r1.keep_body);
    assert!(r1.expect.contains(201) && !r1.expect.contains(200));
    assert_eq!(p.series[0].name, "search");
    assert_eq!(p.series[1].name, "POST /api/posts");
    assert_eq!(p.checks.len(), 2);
    assert_eq!(p.origins.len(), 1);
    assert_eq!(p.origins[0].addrs.len(), 1);
}

#[test]
fn one_step_name_in_two_flows_is_warned_about_naming_both() {
    let p = plan("target: http://127.0.0.1:9\nscenarios:\n  s:\n    executor: constant-vus\n    duration: 1s\n    mix:\n      - { name: read, flow: [ { name: login, request: \"POST /a\" }, { name: get, request: /x } ] }\n      - { name: write, flow: [ { name: login, request: \"POST /b\" }, { name: get, request: /x }, { name: get, request: /y } ] }\n  t:\n    executor: constant-vus\n    duration: 1s\n    setup_per_vu: [ { name: solo, request: /s } ]\n    flow: [ { name: solo2, request: /s } ]\n");
    assert_eq!(p.warnings.len(), 2, "{:?}", p.warnings);
    assert_eq!(
        p.warnings[0],
        "step name `login` is used in flow `read` of scenario `s` and flow `write` of scenario `s`: their requests are measured as one step `login`; give them different names to see them apart"
    );
    assert!(p.warnings[1].starts_with("step name `get` is used in flow `read`"));
    // One name repeated inside one flow is one flow: no warning.
    let q = plan("target: http://127.0.0.1:9\nscenarios:\n  s:\n    executor: constant-vus\n    duration: 1s\n    flow: [ { name: poll, request: /a }, { name: poll, request: /a } ]\n");
    assert!(q.warnings.is_empty(), "{:?}", q.warnings);
}

#[test]
fn mix_weights_accumulate() {
    let p = plan("target: http://127.0.0.1:9\nscenarios:\n  s:\n    executor: constant-vus\n    duration: 1s\n    mix:\n      - { weight: 30, name: a, request: /a }\n      - { weight: 70, name: w, flow: [ { request: \"POST /b\" }, { think: 1s } ] }\n");
    let s = &p.scenarios[0];
    assert_eq!(s.total_weight, 100.0);
    assert_eq!(s.entries[0].cum_weight, 30.0);
    assert_eq!(p.series[1].name, "w: POST /b");
    assert_eq!(p.flows, vec!["s/w".to_string()]);
    assert_eq!(s.entries[1].flow, Some(0));
    assert!(s.entries[1].steps[1].request.is_none());
}

#[test]
fn think_pauses() {
    let mut rng = fastrand::Rng::with_seed(1);
    let u = ThinkPlan::Uniform(Duration::from_millis(500), Duration::from_secs(2));
    for _ in 0..1000 {
        let d = u.pause(&mut rng, Duration::ZERO);
        assert!(d >= Duration::from_millis(500) && d <= Duration::from_secs(2));
    }
    let p = ThinkPlan::Pacing(Duration::from_secs(5));
    assert_eq!(
        p.pause(&mut rng, Duration::from_secs(2)),
        Duration::from_secs(3)
    );
    assert_eq!(p.pause(&mut rng, Duration::from_secs(7)), Duration::ZERO);
    let n = ThinkPlan::Normal(Duration::from_secs(1), Duration::from_millis(100));
    let mean: f64 = (0..10_000)
        .map(|_| n.pause(&mut rng, Duration::ZERO).as_secs_f64())
        .sum::<f64>()
        / 10_000.0;
    assert!((mean - 1.0).abs() < 0.01, "{mean}");
}

#[test]
fn a_websocket_step_compiles_its_handshake_and_actions() {
    let p = plan("target: http://127.0.0.1:9\ndefaults:\n  headers: { Accept: text/plain }\nscenarios:\n  s:\n    executor: constant-vus\n    duration: 1s\n    flow:\n      - ws:\n          url: /ws/방?room=1\n          actions:\n            - send: hi\n            - expect: { body_contains: hi }\n            - { send: p, every: 10ms, count: 3 }\n            - hold: 1s\n      - name: far\n        ws:\n          url: wss://127.0.0.1:8443/x\n          actions: [ { close: true } ]\n");
    let steps = &p.scenarios[0].entries[0].steps;
    // The default name, as for requests; both steps are series of their own.
    assert_eq!(p.series[steps[0].series as usize].name, "WS /ws/방");
    assert_eq!(p.series[steps[1].series as usize].name, "far");
    let ws = steps[0].ws.as_deref().unwrap();
    let RequestForm::Static { bytes, .. } = &ws.handshake.form else {
        panic!("a static handshake");
    };
    let head = String::from_utf8(bytes.to_vec()).unwrap();
    assert!(
        head.starts_with("GET /ws/%EB%B0%A9?room=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n"),
        "{head}"
    );
    assert!(head.contains("Accept: text/plain\r\n"), "{head}");
    assert_eq!(ws.timeout, WS_DEFAULT_TIMEOUT);
    assert!(matches!(ws.actions[0], WsActionPlan::Send { count: 1, .. }));
    match &ws.actions[1] {
        WsActionPlan::Expect { check, timeout, .. } => {
            assert_eq!(
                p.checks[*check as usize],
                "WS /ws/방: message contains \"hi\""
            );
            assert_eq!(*timeout, WS_DEFAULT_TIMEOUT);
        }
        a => panic!("{a:?}"),
    }
    assert!(matches!(
        ws.actions[2],
        WsActionPlan::Send { count: 3, every, .. } if every == std::time::Duration::from_millis(10)
    ));
    // wss:// is the https origin, with TLS.
    let far = steps[1].ws.as_deref().unwrap();
    let o = &p.origins[far.handshake.origin];
    assert_eq!(o.label, "https://127.0.0.1:8443");
    assert!(o.tls.is_some());
}

#[test]
fn the_plan_records_each_steps_scenarios_methods_and_groups() {
    let p = plan("target: http://127.0.0.1:9\nsetup:\n  - { name: login, request: { method: post, url: /login } }\nscenarios:\n  browse:\n    executor: constant-vus\n    duration: 1s\n    flow:\n      - { name: 홈, request: /home }\n      - group: checkout\n        steps:\n          - { name: cart, request: /cart }\n      - group: pay\n        steps: [ { name: card, request: { method: put, url: /card } } ]\n  buy:\n    executor: constant-vus\n    duration: 1s\n    flow: [ { name: 홈, request: { method: post, url: /home } } ]\n");
    let c = &p.steps;
    let home = c.step("홈").unwrap();
    assert_eq!(home.scopes, ["browse", "buy"]);
    assert_eq!(home.methods, ["GET", "POST"]);
    assert_eq!(home.groups, [""]);
    let card = c.step("card").unwrap();
    assert_eq!(
        (
            card.scopes.as_slice(),
            card.methods.as_slice(),
            card.groups.as_slice()
        ),
        (
            &["browse".to_string()][..],
            &["PUT".to_string()][..],
            &["::pay".to_string()][..]
        )
    );
    assert_eq!(card.selected_by("group", "::checkout"), Some(false));
    assert_eq!(c.step("cart").unwrap().groups, ["::checkout"]);
    assert_eq!(c.step("login").unwrap().scopes, ["setup"]);
    let paths: Vec<(&str, &[String])> = c
        .groups
        .iter()
        .map(|g| (g.path.as_str(), g.flows.as_slice()))
        .collect();
    assert_eq!(
        paths,
        [
            ("::checkout", &["browse/checkout".to_string()][..]),
            ("::pay", &["browse/pay".to_string()][..])
        ]
    );
    // Each of those flows is one the runtime records group durations under.
    for g in &c.groups {
        assert!(p.flows.contains(&g.flows[0]), "{g:?} in {:?}", p.flows);
    }
}

#[test]
fn checks_and_extraction_on_events_compile_to_named_checks_and_variables() {
    let p = plan("target: http://127.0.0.1:9\nscenarios:\n  s:\n    executor: constant-vus\n    duration: 1s\n    flow:\n      - name: 대화\n        request: { method: POST, url: /v1/chat }\n        sse:\n          until: \"[DONE]\"\n          check: { event: message, json_valid: true, no_event: [error, fault], json: { \"$.object\": chunk }, fail_request: false }\n          extract:\n            cid: \"$.id\"\n            fin: { regex: \"stop\", event: message, from: last }\n      - { request: \"/done/{{ cid }}/{{ fin }}\" }\n");
    let step = &p.scenarios[0].entries[0].steps[0];
    let sse = step.request.as_ref().unwrap().sse.as_deref().unwrap();
    let names: Vec<&str> = sse
        .checks
        .iter()
        .map(|c| p.checks[c.id as usize].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "대화: every `message` event's data is JSON",
            "대화: no `error`/`fault` event",
            "대화: every `message` event: $.object == \"chunk\"",
        ]
    );
    assert!(!sse.checks_fail_request);
    assert!(matches!(&sse.checks[1].test, EventTest::NoEvent(n) if n.len() == 2));
    assert_eq!(sse.checks[0].event.as_deref(), Some(&b"message"[..]));
    // The step's own checks are untouched: none were asked for.
    assert!(step.checks.is_empty());
    let [cid, fin] = &sse.extract[..] else {
        panic!("{:?}", sse.extract)
    };
    assert!(!cid.last && cid.event.is_none() && matches!(cid.source, ExtractSource::Json(_)));
    assert!(fin.last && matches!(fin.source, ExtractSource::Regex(_)));
    assert_ne!(cid.var, fin.var);
}

#[test]
fn a_sized_prompt_the_request_never_sends_is_refused_at_start() {
    let src = |content: &str| {
        format!("target: http://127.0.0.1:9\nscenarios:\n  s:\n    executor: constant-vus\n    duration: 1s\n    flow:\n      - name: chat\n        request: {{ method: POST, url: /v1/chat, json: {{ messages: [ {{ role: user, content: \"{content}\" }} ] }} }}\n        sse: {{ llm: true, prompt: {{ tokens: 100 }} }}\n")
    };
    let cfg = pado_scenario::parse_str(&src("안녕"), "t.yaml").unwrap();
    let Err(e) = compile(&cfg, Path::new(".")) else {
        panic!("a prompt the request never sends was accepted");
    };
    let text = e.to_string();
    assert!(
        text.starts_with("scenarios.s.flow[0].sse.prompt: the request never uses `{{ prompt }}`"),
        "{text}"
    );
    // Sent: the plan keeps the prompt's variable and length.
    let p = plan(&src("{{ prompt }}"));
    let req = p.scenarios[0].entries[0].steps[0].request.as_ref().unwrap();
    let pr = req.sse.as_ref().unwrap().prompt.as_ref().unwrap();
    assert_eq!(p.vars[pr.var], "prompt");
    assert_eq!(pr.length, crate::prompt::PromptLength::Fixed(100));
    assert!(req.form.uses_var(pr.var));
}
