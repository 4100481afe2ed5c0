//! A scripted VU driven by a planted engine: every request the script makes is
//! captured and answered with a planted response, so what the script sent and
//! what it concluded (checks, faults, setup's value) are checked exactly.

use std::sync::Arc;

use pado_engine::script::{
    ScriptCall, ScriptFault, ScriptHost, ScriptReply, ScriptRequest, ScriptResponse, ScriptRole,
};

use crate::load_for_run;

/// One metric add: the metric's number, the value, the tags.
type MetricAdd = (u32, f64, Vec<(String, String)>);

/// What one run of a VU's function did.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    pub(crate) requests: Vec<ScriptRequest>,
    pub(crate) checks: Vec<(String, bool)>,
    pub(crate) sleeps: Vec<f64>,
    pub(crate) metrics: Vec<MetricAdd>,
    pub(crate) aborted: Option<String>,
    pub(crate) done: Option<Result<Option<String>, ScriptFault>>,
}

pub(crate) fn script(
    src: &str,
) -> (
    tempfile::TempDir,
    Arc<crate::Script>,
    pado_scenario::model::Config,
) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.js");
    std::fs::write(&p, src).unwrap();
    let l = load_for_run(&p, &[("BASE".into(), "http://127.0.0.1:9".into())]).unwrap();
    (dir, l.script, l.config)
}

fn load_err(src: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.js");
    std::fs::write(&p, src).unwrap();
    match load_for_run(&p, &[]) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("loaded"),
    }
}

/// Run one start of `vu`, answering each request with `answer`.
pub(crate) fn drive(
    vu: &mut dyn pado_engine::script::ScriptVu,
    start: ScriptReply,
    answer: &dyn Fn(&ScriptRequest) -> ScriptResponse,
) -> Seen {
    let mut seen = Seen::default();
    let mut reply = start;
    for _ in 0..1000 {
        reply = match vu.resume(reply) {
            ScriptCall::Http(r) => {
                let a = answer(&r);
                seen.requests.push(*r);
                ScriptReply::Http(Box::new(a))
            }
            ScriptCall::Batch(b) => {
                let b = *b;
                let responses = b.requests.iter().map(answer).collect();
                seen.requests.extend(b.requests);
                ScriptReply::Batch(Box::new(pado_engine::script::ScriptBatchReply {
                    responses,
                    jars: b.jars,
                }))
            }
            ScriptCall::Check { name, ok } => {
                seen.checks.push((name, ok));
                ScriptReply::Resumed
            }
            ScriptCall::Sleep(d) => {
                seen.sleeps.push(d.as_secs_f64());
                ScriptReply::Resumed
            }
            ScriptCall::Metric {
                id, value, tags, ..
            } => {
                seen.metrics.push((id, value, tags));
                ScriptReply::Resumed
            }
            ScriptCall::Execution => ScriptReply::Execution(Box::new(planted_execution())),
            ScriptCall::Abort(reason) => {
                seen.aborted = Some(reason);
                ScriptReply::Stop
            }
            ScriptCall::Done(r) => {
                seen.done = Some(r);
                return seen;
            }
            other => panic!("a call this test does not plant: {other:?}"),
        };
    }
    panic!("the VU never finished");
}

/// The live figures every `k6/execution` read gets in these tests.
fn planted_execution() -> pado_engine::script::Execution {
    pado_engine::script::Execution {
        instance: pado_engine::script_state::InstanceFigures {
            vus_active: 7,
            vus_initialized: 9,
            iterations_completed: 41,
            iterations_interrupted: 2,
        },
        test_ms: 1500.0,
        executor: "shared-iterations",
        scenario_start_ms: 1_700_000_000_000.0,
        progress: 0.25,
    }
}

pub(crate) fn start(iter: u64, data: Option<&str>) -> ScriptReply {
    ScriptReply::Start {
        iter,
        data: data.map(Arc::from),
        ids: Default::default(),
    }
}

pub(crate) fn ok_json(body: &str) -> ScriptResponse {
    ScriptResponse {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.as_bytes().to_vec(),
        url: "http://127.0.0.1:9/".into(),
        proto: "HTTP/1.1".into(),
        ..Default::default()
    }
}

pub(crate) fn load_vu(host: &crate::Script, vu: u64) -> Box<dyn pado_engine::script::ScriptVu> {
    host.vu(ScriptRole::Load {
        scenario: "default".into(),
        exec: "default".into(),
        vu,
    })
    .unwrap()
}

#[test]
fn a_vu_sends_what_the_script_asks_and_checks_the_planted_answer() {
    let (_d, host, _) = script(
        r#"
import http from 'k6/http';
import { check } from 'k6';
export default function () {
  const r = http.post(`${__ENV.BASE}/items?vu=${__VU}&iter=${__ITER}`, JSON.stringify({ title: '파도' }),
    { headers: { 'Content-Type': 'application/json', 'X-Name': '파도' }, tags: { name: 'create' }, timeout: '2s' });
  check(r, {
    'status is 200': (x) => x.status === 200,
    'b is 7': (x) => x.json('a.b') === 7,
    'header read': (x) => x.headers['Content-Type'] === 'application/json',
    'wrong': (x) => x.json('a.b') === 8,
  });
}
"#,
    );
    let mut vu = load_vu(&host, 3);
    let seen = drive(vu.as_mut(), start(5, None), &|_| {
        ok_json(r#"{"a":{"b":7}}"#)
    });
    assert_eq!(seen.done, Some(Ok(None)));
    let r = &seen.requests[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.url, "http://127.0.0.1:9/items?vu=3&iter=5");
    assert_eq!(
        String::from_utf8(r.body.clone()).unwrap(),
        r#"{"title":"파도"}"#
    );
    assert!(
        r.headers.contains(&("X-Name".into(), "파도".into())),
        "{:?}",
        r.headers
    );
    assert_eq!(r.name.as_deref(), Some("create"));
    assert_eq!(r.timeout, Some(std::time::Duration::from_secs(2)));
    assert_eq!(
        seen.checks,
        vec![
            ("status is 200".to_string(), true),
            ("b is 7".to_string(), true),
            ("header read".to_string(), true),
            ("wrong".to_string(), false),
        ]
    );
}

#[test]
fn setup_returns_json_and_it_reaches_every_iteration() {
    let (_d, host, _) = script(
        r#"
import http from 'k6/http';
export function setup() {
  const r = http.post(`${__ENV.BASE}/login`, { user: 'a b' });
  return { token: r.json('token'), n: 2 };
}
export default function (data) {
  http.get(`${__ENV.BASE}/items`, { headers: { Authorization: `Bearer ${data.token}` } });
}
"#,
    );
    assert_eq!(host.has_setup(), (true, false));
    let mut setup = host.vu(ScriptRole::Setup).unwrap();
    let seen = drive(setup.as_mut(), start(0, None), &|_| {
        ok_json(r#"{"token":"t-9"}"#)
    });
    let data = seen.done.unwrap().unwrap().unwrap();
    assert_eq!(data, r#"{"token":"t-9","n":2}"#);
    // An object body is a form, as k6 sends it (Go's query escaping: a space is `+`).
    let login = &seen.requests[0];
    assert_eq!(String::from_utf8(login.body.clone()).unwrap(), "user=a+b");
    let mut vu = load_vu(&host, 1);
    for iter in 0..2 {
        let seen = drive(vu.as_mut(), start(iter, Some(&data)), &|_| ok_json("{}"));
        assert!(seen.requests[0]
            .headers
            .contains(&("Authorization".into(), "Bearer t-9".into())));
    }
}

#[test]
fn an_exception_ends_the_iteration_with_its_line_and_the_vu_goes_on() {
    let (_d, host, _) = script(
        "import http from 'k6/http';\nexport default function () {\n  if (__ITER === 0) {\n    throw new Error('planted 파도');\n  }\n  http.get(`${__ENV.BASE}/ok`);\n}\n",
    );
    let mut vu = load_vu(&host, 1);
    let seen = drive(vu.as_mut(), start(0, None), &|_| ok_json("{}"));
    let fault = seen.done.unwrap().unwrap_err();
    assert_eq!(fault.message, "Error: planted 파도");
    assert!(fault.stack.contains("s.js:4:"), "{}", fault.stack);
    assert!(seen.requests.is_empty());
    let seen = drive(vu.as_mut(), start(1, None), &|_| ok_json("{}"));
    assert_eq!(seen.done, Some(Ok(None)));
    assert_eq!(seen.requests.len(), 1);
}

#[test]
fn a_stop_mid_request_ends_the_iteration_and_the_next_starts_clean() {
    let (_d, host, _) = script(
        "import http from 'k6/http';\nexport default function () {\n  http.get(`${__ENV.BASE}/a`);\n  http.get(`${__ENV.BASE}/b`);\n}\n",
    );
    let mut vu = load_vu(&host, 1);
    let first = vu.resume(start(0, None));
    assert!(matches!(first, ScriptCall::Http(_)));
    // The run stops while the request is in flight: the script is told so.
    let after = vu.resume(ScriptReply::Stop);
    assert!(matches!(after, ScriptCall::Done(Err(_))), "{after:?}");
    let seen = drive(vu.as_mut(), start(1, None), &|_| ok_json("{}"));
    assert_eq!(seen.requests.len(), 2);
    // A VU dropped mid-request is ended, not unwound (nothing to assert but
    // that this returns).
    let mut vu = load_vu(&host, 2);
    assert!(matches!(vu.resume(start(0, None)), ScriptCall::Http(_)));
    drop(vu);
}

#[test]
fn sleep_and_timers_are_calls_to_the_engine() {
    let (_d, host, _) = script(
        "import http from 'k6/http';\nimport { sleep } from 'k6';\nexport default function () {\n  setTimeout(() => http.get(`${__ENV.BASE}/late`), 50);\n  sleep(0.25);\n}\n",
    );
    let mut vu = load_vu(&host, 1);
    let seen = drive(vu.as_mut(), start(0, None), &|_| ok_json("{}"));
    assert_eq!(seen.done, Some(Ok(None)));
    assert_eq!(seen.sleeps[0], 0.25);
    // The timer ran after the function, before the iteration ended.
    assert_eq!(seen.requests.len(), 1);
    assert!(seen.requests[0].url.ends_with("/late"));
}

#[test]
fn expected_statuses_and_response_type_reach_the_request() {
    let (_d, host, _) = script(
        "import http from 'k6/http';\nhttp.setResponseCallback(http.expectedStatuses(200, { min: 400, max: 404 }));\nexport default function () {\n  http.get(`${__ENV.BASE}/x`, { responseType: 'none', redirects: 0 });\n  http.get(`${__ENV.BASE}/y`, { responseCallback: http.expectedStatuses(500) });\n}\n",
    );
    let mut vu = load_vu(&host, 1);
    let seen = drive(vu.as_mut(), start(0, None), &|_| ok_json("{}"));
    let (a, b) = (&seen.requests[0], &seen.requests[1]);
    assert_eq!(a.expected, Some(vec![(200, 200), (400, 404)]));
    assert!(!a.keep_body);
    assert_eq!(a.redirects, Some(0));
    assert_eq!(b.expected, Some(vec![(500, 500)]));
}

#[test]
fn a_syntax_error_names_file_line_and_column_with_the_source_line() {
    let e = load_err(
        "import http from 'k6/http';\n\nexport default function () {\n  http.get('x' +);\n}\n",
    );
    assert!(e.contains("s.js:4:"), "{e}");
    assert!(e.contains("SyntaxError"), "{e}");
    assert!(e.contains("    4 |   http.get('x' +);"), "{e}");
}

#[test]
fn refused_imports_name_the_line_at_start() {
    let e = load_err("import http from 'k6/http';\nimport { browser } from 'k6/browser';\nexport default function () {}\n");
    assert!(e.contains("s.js:2: cannot import `k6/browser`"), "{e}");
    let e = load_err("import sql from 'k6/x/sql';\nexport default function () {}\n");
    assert!(e.contains("s.js:1: cannot import `k6/x/sql`"), "{e}");
}

#[test]
fn init_code_cannot_send_and_says_so() {
    let e = load_err("import http from 'k6/http';\nhttp.get('http://127.0.0.1:9/');\nexport default function () {}\n");
    assert!(e.contains("init code"), "{e}");
    // Nor check, nor add to a metric (neither suspends the VU any more).
    let e = load_err("import { check } from 'k6';\ncheck(1, { a: () => true });\nexport default function () {}\n");
    assert!(e.contains("init code"), "{e}");
    let e = load_err("import { Trend } from 'k6/metrics';\nnew Trend('t').add(1);\nexport default function () {}\n");
    assert!(e.contains("init code"), "{e}");
}

#[test]
fn checks_and_adds_reach_the_engine_in_order_before_the_next_call_each_add_timed_when_made() {
    let (_d, host, _) = script(
        r#"
import http from 'k6/http';
import { check, sleep } from 'k6';
import { Trend } from 'k6/metrics';
const t = new Trend('t');
export default function () {
  check(1, { a: () => true });
  t.add(1);
  http.get(`${__ENV.BASE}/one`);
  check(2, { b: () => false, c: () => true });
  const until = Date.now() + 30;
  while (Date.now() < until) {}
  t.add(2);
  sleep(0.5);
  t.add(3);
  check(3, { d: () => true });
}
"#,
    );
    let mut vu = load_vu(&host, 1);
    let mut said = Vec::new();
    let mut adds = Vec::new();
    let mut reply = start(0, None);
    let t0 = std::time::Instant::now();
    for _ in 0..100 {
        reply = match vu.resume(reply) {
            ScriptCall::Check { name, ok } => {
                said.push(format!("check {name} {ok}"));
                ScriptReply::Resumed
            }
            ScriptCall::Metric { value, at, .. } => {
                said.push(format!("add {value}"));
                adds.push((at, std::time::Instant::now()));
                ScriptReply::Resumed
            }
            ScriptCall::Http(r) => {
                said.push(format!("get {}", r.url));
                ScriptReply::Http(Box::new(ok_json("{}")))
            }
            ScriptCall::Sleep(d) => {
                said.push(format!("sleep {}", d.as_secs_f64()));
                ScriptReply::Resumed
            }
            ScriptCall::Done(r) => {
                assert_eq!(r, Ok(None));
                said.push("done".into());
                break;
            }
            other => panic!("a call this test does not plant: {other:?}"),
        };
    }
    assert_eq!(
        said,
        [
            "check a true",
            "add 1",
            "get http://127.0.0.1:9/one",
            "check b false",
            "check c true",
            "add 2",
            "sleep 0.5",
            "add 3",
            "check d true",
            "done",
        ]
    );
    // Each add carries when it was made, not when the engine got it.
    let (first, second) = (adds[0].0, adds[1].0);
    assert!(first >= t0 && first <= adds[0].1);
    // `Date.now()` counts whole milliseconds: its 30 ms can end 29 ms and a
    // fraction after the loop began.
    assert!(
        second.duration_since(first) >= std::time::Duration::from_millis(29),
        "the second add was made after 30 ms of the script's own work: {:?}",
        second.duration_since(first)
    );
    assert!(second <= adds[1].1);
}

#[test]
fn local_modules_and_open_read_relative_to_the_script() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("lib")).unwrap();
    std::fs::write(
        dir.path().join("lib/util.js"),
        "export function path(n) { return '/users/' + n; }\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("users.json"), r#"["김", "lee"]"#).unwrap();
    let p = dir.path().join("s.js");
    std::fs::write(
        &p,
        "import http from 'k6/http';\nimport { path } from './lib/util.js';\nimport { SharedArray } from 'k6/data';\nconst users = new SharedArray('u', () => JSON.parse(open('./users.json')));\nexport const options = { vus: 2, duration: '1s' };\nexport default function () {\n  http.get(`${__ENV.BASE}${path(users[__VU - 1])}`);\n}\n",
    )
    .unwrap();
    let l = load_for_run(&p, &[("BASE".into(), "http://127.0.0.1:9".into())]).unwrap();
    let mut urls = Vec::new();
    for vu in 1..=2 {
        let mut v = load_vu(&l.script, vu);
        let seen = drive(v.as_mut(), start(0, None), &|_| ok_json("{}"));
        urls.push(seen.requests[0].url.clone());
    }
    assert_eq!(
        urls,
        vec![
            "http://127.0.0.1:9/users/김",
            "http://127.0.0.1:9/users/lee"
        ]
    );
}

#[test]
fn a_scenario_exec_runs_its_named_function() {
    let (_d, host, cfg) = script(
        "import http from 'k6/http';\nexport const options = { scenarios: { buy: { executor: 'constant-vus', vus: 1, duration: '1s', exec: 'buy' } } };\nexport function buy() { http.get(`${__ENV.BASE}/buy`); }\n",
    );
    assert_eq!(cfg.scenarios[0].1.script_exec.as_deref(), Some("buy"));
    let mut v = host
        .vu(ScriptRole::Load {
            scenario: "buy".into(),
            exec: "buy".into(),
            vu: 1,
        })
        .unwrap();
    let seen = drive(v.as_mut(), start(0, None), &|_| ok_json("{}"));
    assert!(seen.requests[0].url.ends_with("/buy"));
}

#[test]
fn runaway_recursion_is_a_javascript_error_not_a_crash() {
    let (_d, host, _) =
        script("export default function () {\n  const f = (n) => f(n + 1) + 1;\n  f(0);\n}\n");
    let mut vu = load_vu(&host, 1);
    let seen = drive(vu.as_mut(), start(0, None), &|_| ok_json("{}"));
    let fault = seen.done.unwrap().unwrap_err();
    assert!(
        fault.message.contains("RangeError") || fault.message.contains("stack"),
        "{fault:?}"
    );
    // The VU survives it.
    let seen = drive(vu.as_mut(), start(1, None), &|_| ok_json("{}"));
    assert!(seen.done.is_some());
}

#[test]
fn requests_in_groups_carry_k6s_group_path() {
    let (_d, host, _) = script(
        "import http from 'k6/http';\nimport { group } from 'k6';\nexport default function () {\n  group('login', () => {\n    group('form', () => http.get(`${__ENV.BASE}/a`));\n  });\n  http.get(`${__ENV.BASE}/b`);\n}\n",
    );
    let mut vu = load_vu(&host, 1);
    let seen = drive(vu.as_mut(), start(0, None), &|_| ok_json("{}"));
    assert_eq!(seen.requests[0].group.as_deref(), Some("::login::form"));
    assert_eq!(seen.requests[1].group, None);
}

#[test]
fn metric_adds_carry_their_number_value_and_every_tag_a_sample_gets() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.js");
    std::fs::write(
        &p,
        r#"
import http from 'k6/http';
import { group } from 'k6';
import { Counter, Rate, Trend } from 'k6/metrics';
const hits = new Counter('script_test_hits');
const ok = new Rate('script_test_ok');
const 지연 = new Trend('script_test_지연', true);
export const options = { tags: { env: 'staging' } };
export default function () {
  hits.add(true);
  ok.add('yes');
  group('로그인', () => {
    http.get('http://127.0.0.1:9/a', { tags: { type: 'API', name: 'a' } });
    지연.add(12.5, { kind: '읽기' });
  });
}
"#,
    )
    .unwrap();
    let l = crate::load_for_run_tagged(&p, &[], &[("team".into(), "파도".into())]).unwrap();
    let host = l.script;
    let ids: Vec<u32> = ["script_test_hits", "script_test_ok", "script_test_지연"]
        .iter()
        .map(|n| {
            (0..10u32)
                .find(|i| host.metric(*i).is_some_and(|m| &*m.name == *n))
                .unwrap_or_else(|| panic!("{n} not declared"))
        })
        .collect();
    let m = host.metric(ids[2]).unwrap();
    assert_eq!(m.kind, pado_metrics::CustomKind::Trend);
    assert!(m.is_time);
    let mut vu = load_vu(&host, 1);
    let seen = drive(vu.as_mut(), start(0, None), &|_| ok_json("{}"));
    assert!(matches!(seen.done, Some(Ok(_))), "{:?}", seen.done);
    let tags = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let test = [("env", "staging"), ("team", "파도")];
    // true is 1; a rate takes any truthy value as 1.
    assert_eq!(seen.metrics[0], (ids[0], 1.0, tags(&test)));
    assert_eq!(seen.metrics[1], (ids[1], 1.0, tags(&test)));
    let mut inner = test.to_vec();
    inner.extend([("group", "::로그인"), ("kind", "읽기")]);
    let mut got = seen.metrics[2].clone();
    got.2.sort();
    let mut want = tags(&inner);
    want.sort();
    assert_eq!(got, (ids[2], 12.5, want));
    // The group's duration, tagged with its path.
    let (gid, gms, gtags) = &seen.metrics[3];
    assert_eq!(host.metric(*gid).unwrap().name.as_ref(), "group_duration");
    assert!(*gms >= 0.0);
    assert!(gtags.contains(&("group".to_string(), "::로그인".to_string())));
    // The request: its name, group and other tags (not `name`).
    let r = &seen.requests[0];
    assert_eq!(r.name.as_deref(), Some("a"));
    assert_eq!(r.group.as_deref(), Some("::로그인"));
    let mut rt = r.tags.clone();
    rt.sort();
    assert_eq!(
        rt,
        tags(&[("env", "staging"), ("team", "파도"), ("type", "API")])
    );
}

#[test]
fn a_metric_name_k6_refuses_is_an_error_at_load_naming_it_and_the_line() {
    let e = load_err(
        "import { Trend } from 'k6/metrics';\nconst t = new Trend('bad-name');\nexport default function () {}\n",
    );
    assert!(e.contains("bad-name"), "{e}");
    assert!(e.contains("s.js:2"), "{e}");
    let e = load_err(
        "import { Trend, Counter } from 'k6/metrics';\nconst a = new Counter('script_test_twice');\nconst b = new Trend('script_test_twice');\nexport default function () {}\n",
    );
    assert!(
        e.contains("script_test_twice") && e.contains("counter"),
        "{e}"
    );
}
