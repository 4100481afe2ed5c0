//! k6's `Response` as a script sees it, made by the native request
//! (`response_obj`): every field planted in the answer is read back exactly,
//! stays with its own response after the next request, and Hangul round-trips;
//! a batch's responses are the same objects, each showing its own request; a
//! request's header values go out as the script gave them.

use pado_engine::script::{ScriptRequest, ScriptResponse, ScriptTimings};

use crate::tests::{drive, load_vu, script, start};

/// The first answer: every field set, headers in the server's own case, one
/// name twice, a Hangul value and a cookie.
fn first() -> ScriptResponse {
    ScriptResponse {
        status: 201,
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("x-multi".into(), "a".into()),
            ("X-NAME".into(), "파도".into()),
            ("x-multi".into(), "b".into()),
            ("set-cookie".into(), "sid=물결; Path=/; HttpOnly".into()),
        ],
        body: r#"{"word":"파도","n":[1,2]}"#.as_bytes().to_vec(),
        url: "http://127.0.0.1:9/first".into(),
        error: String::new(),
        error_code: 0,
        proto: "HTTP/1.1".into(),
        timings: ScriptTimings {
            blocked: 0.5,
            looking_up: 0.25,
            connecting: 1.5,
            tls_handshaking: 0.0,
            sending: 0.125,
            waiting: 7.75,
            receiving: 0.375,
            duration: 8.25,
        },
        jar: None,
    }
}

/// The second answer: every field different from the first's.
fn second() -> ScriptResponse {
    ScriptResponse {
        status: 503,
        headers: vec![("Retry-After".into(), "3".into())],
        body: b"busy".to_vec(),
        url: "http://127.0.0.1:9/second".into(),
        error: "HTTP 503".into(),
        error_code: 1503,
        proto: "HTTP/2.0".into(),
        timings: ScriptTimings {
            waiting: 99.0,
            duration: 99.0,
            ..ScriptTimings::default()
        },
        jar: None,
    }
}

#[test]
fn every_response_field_is_the_planted_answers_and_stays_with_its_response() {
    let (_d, host, _) = script(
        r#"
import http from 'k6/http';
export default function () {
  const a = http.get(`${__ENV.BASE}/first`);
  const b = http.get(`${__ENV.BASE}/second`);
  // Every field of the first answer read only after the second arrived.
  http.post(`${__ENV.BASE}/report`, JSON.stringify({
    keys: Object.keys(a),
    a: {
      status: a.status, body: a.body, url: a.url, error: a.error, error_code: a.error_code,
      proto: a.proto, timings: a.timings, headers: a.headers, cookies: a.cookies,
      word: a.json('word'), n: a.json('n.#'), request: a.request.url, status_text: a.status_text,
    },
    b: {
      status: b.status, body: b.body, url: b.url, error: b.error, error_code: b.error_code,
      proto: b.proto, timings: b.timings, headers: b.headers, cookies: b.cookies,
    },
  }));
}
"#,
    );
    let report = report_of_two_answers(&host);
    let want = serde_json::json!({
        "keys": ["status", "body", "url", "error", "error_code", "proto", "timings",
                 "request", "status_text", "headers", "cookies"],
        "a": {
            "status": 201,
            "body": r#"{"word":"파도","n":[1,2]}"#,
            "url": "http://127.0.0.1:9/first",
            "error": "",
            "error_code": 0,
            "proto": "HTTP/1.1",
            "timings": {
                "blocked": 0.5, "looking_up": 0.25, "connecting": 1.5, "tls_handshaking": 0,
                "sending": 0.125, "waiting": 7.75, "receiving": 0.375, "duration": 8.25,
            },
            // Go's canonical names; a name given twice is one, its values joined.
            "headers": {
                "Content-Type": "application/json",
                "X-Multi": "a, b",
                "X-Name": "파도",
                "Set-Cookie": "sid=물결; Path=/; HttpOnly",
            },
            "cookies": {"sid": [{
                "name": "sid", "value": "물결", "domain": "", "path": "/",
                "http_only": true, "secure": false, "max_age": 0, "expires": 0,
            }]},
            "word": "파도",
            "n": 2,
            "request": "http://127.0.0.1:9/first",
            "status_text": "",
        },
        "b": {
            "status": 503,
            "body": "busy",
            "url": "http://127.0.0.1:9/second",
            "error": "HTTP 503",
            "error_code": 1503,
            "proto": "HTTP/2.0",
            "timings": {
                "blocked": 0, "looking_up": 0, "connecting": 0, "tls_handshaking": 0,
                "sending": 0, "waiting": 99, "receiving": 0, "duration": 99,
            },
            "headers": {"Retry-After": "3"},
            "cookies": {},
        },
    });
    assert_eq!(report, want);
}

#[test]
fn header_values_go_out_as_the_script_gave_them() {
    // An entity tag is quoted by definition (RFC 9110): k6 sends the quotes.
    let (_d, host, _) = script(
        r#"
import http from 'k6/http';
export default function () {
  http.get(`${__ENV.BASE}/etag`, { headers: {
    'If-None-Match': '"v1"', 'X-Quoted': '"파도"', 'X-Number': 5, 'X-Flag': true,
  } });
}
"#,
    );
    let mut vu = load_vu(&host, 1);
    let seen = drive(vu.as_mut(), start(0, None), &|_| second());
    assert_eq!(seen.done, Some(Ok(None)));
    let sent = &seen.requests[0].headers;
    let value = |n: &str| {
        sent.iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("{n} not sent: {sent:?}"))
    };
    assert_eq!(value("If-None-Match"), "\"v1\"");
    assert_eq!(value("X-Quoted"), "\"파도\"");
    assert_eq!(value("X-Number"), "5");
    assert_eq!(value("X-Flag"), "true");
}

/// What the script of VU 1 on `host` posted last (its report, as JSON), its
/// requests to `/first` answered with [`first`] and the rest with [`second`].
fn report_of_two_answers(host: &crate::Script) -> serde_json::Value {
    let mut vu = load_vu(host, 1);
    let seen = drive(vu.as_mut(), start(0, None), &|r: &ScriptRequest| {
        if r.url.ends_with("/first") {
            first()
        } else {
            second()
        }
    });
    assert_eq!(seen.done, Some(Ok(None)));
    serde_json::from_slice(&seen.requests.last().expect("reported").body).unwrap()
}

#[test]
fn a_response_stringifies_whole_and_its_lazy_body_behaves_as_a_plain_property() {
    let (_d, host, _) = script(
        r#"
import http from 'k6/http';
export default function () {
  const a = http.get(`${__ENV.BASE}/first`);
  const d = Object.getOwnPropertyDescriptor(a, 'body');
  const before = { enumerable: d.enumerable, configurable: d.configurable };
  // JSON.stringify reads the body (as k6 gives it, text) among every field.
  const whole = JSON.parse(JSON.stringify(a));
  const b = http.get(`${__ENV.BASE}/second`);
  b.body = 'replaced';
  const c = http.get(`${__ENV.BASE}/second`);
  http.post(`${__ENV.BASE}/report`, JSON.stringify({
    before, whole, timingKeys: Object.keys(a.timings),
    b: b.body, bKeys: Object.keys(b), c: c.body, requestMethod: c.request.method,
  }));
}
"#,
    );
    let report = report_of_two_answers(&host);
    let keys = response_keys();
    assert_eq!(
        report["before"],
        serde_json::json!({"enumerable": true, "configurable": true})
    );
    let whole = &report["whole"];
    // (serde_json's map is sorted: the names, not their order, compared here;
    // `bKeys` below holds the order.)
    let mut got: Vec<&str> = whole
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    let mut want: Vec<&str> = keys
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
    assert_eq!(whole["body"], r#"{"word":"파도","n":[1,2]}"#);
    assert_eq!(whole["status"], 201);
    assert_eq!(whole["timings"]["waiting"], 7.75);
    assert_eq!(whole["headers"]["X-Multi"], "a, b");
    assert_eq!(whole["request"]["method"], "GET");
    assert_eq!(whole["request"]["url"], "http://127.0.0.1:9/first");
    assert_eq!(
        report["timingKeys"],
        serde_json::json!([
            "blocked",
            "looking_up",
            "connecting",
            "tls_handshaking",
            "sending",
            "waiting",
            "receiving",
            "duration"
        ])
    );
    // An assigned body is the script's, kept as a plain, enumerable property.
    assert_eq!(report["b"], "replaced");
    assert_eq!(report["bKeys"], keys);
    // The next answer's body is its own.
    assert_eq!(report["c"], "busy");
    assert_eq!(report["requestMethod"], "GET");
}

#[test]
fn a_batchs_responses_are_k6_responses_each_showing_its_own_request() {
    let (_d, host, _) = script(
        r#"
import http from 'k6/http';
export default function () {
  const [a, b] = http.batch([
    ['POST', `${__ENV.BASE}/first`, 'name=파도', { headers: { 'X-One': '1' } }],
    { method: 'get', url: `${__ENV.BASE}/second` },
  ]);
  const c = http.get(`${__ENV.BASE}/proto`);
  http.post(`${__ENV.BASE}/report`, JSON.stringify({
    a: [a.status, a.request.method, a.request.url, a.request.headers, a.request.body,
        a.json('word'), a instanceof http.Response, a.headers['X-Multi'], a.cookies.sid[0].value],
    b: [b.status, b.request.method, b.request.url, b.body, b.timings.waiting, Object.keys(b)],
    // A header named as Object.prototype's accessor is a header like any other.
    c: [Object.getPrototypeOf(c.headers) === Object.prototype, Object.keys(c.headers),
        c.headers['__proto__'], c.status, typeof c.html],
  }));
}
"#,
    );
    let mut vu = load_vu(&host, 1);
    let seen = drive(vu.as_mut(), start(0, None), &|r: &ScriptRequest| {
        if r.url.ends_with("/first") {
            first()
        } else if r.url.ends_with("/proto") {
            ScriptResponse {
                status: 204,
                headers: vec![("__proto__".into(), "x".into()), ("Y".into(), "1".into())],
                ..second()
            }
        } else {
            second()
        }
    });
    assert_eq!(seen.done, Some(Ok(None)));
    let report: serde_json::Value =
        serde_json::from_slice(&seen.requests.last().expect("reported").body).unwrap();
    assert_eq!(
        report["a"],
        serde_json::json!([201, "POST", "http://127.0.0.1:9/first", {"X-One": "1"}, "name=파도", "파도", true, "a, b", "물결"])
    );
    assert_eq!(
        report["b"],
        serde_json::json!([
            503,
            "GET",
            "http://127.0.0.1:9/second",
            "busy",
            99,
            [
                "status",
                "body",
                "url",
                "error",
                "error_code",
                "proto",
                "timings",
                "request",
                "status_text",
                "headers",
                "cookies"
            ]
        ])
    );
    assert_eq!(
        report["c"],
        serde_json::json!([true, ["__proto__", "Y"], "x", 204, "function"])
    );
}

/// The parts made when first read (`response_lazy`): each is an own,
/// enumerable accessor until read, then the plain data property k6 has, in the
/// same place; assigning, deleting, spreading, freezing and stringifying
/// behave as on k6's data properties; nothing else is on the object.
#[test]
fn a_responses_parts_made_when_read_become_plain_properties_in_place() {
    let (_d, host, _) = script(
        r#"
import http from 'k6/http';
const PARTS = ['body', 'timings', 'request', 'headers', 'cookies'];
const kind = (o, k) => {
  const d = Object.getOwnPropertyDescriptor(o, k);
  if (!d) return 'none';
  return ('value' in d ? 'data' : 'accessor') + (d.enumerable ? ',e' : '') + (d.configurable ? ',c' : '') +
    (d.writable ? ',w' : '');
};
export default function () {
  const a = http.get(`${__ENV.BASE}/first`);
  const before = PARTS.map((k) => kind(a, k));
  const keysBefore = Object.keys(a);
  const unread = JSON.stringify(http.get(`${__ENV.BASE}/first`));
  // Read in an order unlike the properties' own.
  const t1 = a.timings, h1 = a.headers, c1 = a.cookies, r1 = a.request, b1 = a.body;
  const after = PARTS.map((k) => kind(a, k));
  const same = [a.timings === t1, a.headers === h1, a.cookies === c1, a.request === r1, a.body === b1];
  const read = JSON.stringify(a);

  const s = http.get(`${__ENV.BASE}/first`);
  s.timings = 5;
  s.headers = undefined;
  delete s.request;
  const spread = { ...http.get(`${__ENV.BASE}/second`) };
  const frozen = Object.freeze(http.get(`${__ENV.BASE}/second`));
  const getter = Object.getOwnPropertyDescriptor(http.get(`${__ENV.BASE}/second`), 'timings').get;
  const other = http.get(`${__ENV.BASE}/second`);
  http.post(`${__ENV.BASE}/report`, JSON.stringify({
    before, after, same, keysBefore, keysAfter: Object.keys(a), unread, read,
    ownKeys: Reflect.ownKeys(other).map(String),
    symbols: Object.getOwnPropertySymbols(other).length,
    assigned: [s.timings, kind(s, 'timings'), s.headers, kind(s, 'headers'), 'request' in s, Object.keys(s)],
    spread: [Object.keys(spread), PARTS.map((k) => kind(spread, k)), spread.timings.waiting, spread.body,
             spread.request.method, spread.headers['Retry-After']],
    frozen: [frozen.timings.waiting, frozen.timings.waiting, frozen.body, frozen.headers['Retry-After'],
             kind(frozen, 'timings')],
    foreign: [getter.call({}), getter.call(5)],
    proto: Object.getPrototypeOf(a.timings) === Object.prototype &&
      Object.getPrototypeOf(a.headers) === Object.prototype && a instanceof http.Response,
    tag: Object.prototype.toString.call(other),
  }));
}
"#,
    );
    let report = report_of_two_answers(&host);
    let keys = response_keys();
    let lazy = "accessor,e,c";
    let data = serde_json::Value::from(vec!["data,e,c,w"; 5]);
    assert_eq!(report["before"], serde_json::Value::from(vec![lazy; 5]));
    assert_eq!(report["after"], data);
    assert_eq!(report["same"], serde_json::Value::from(vec![true; 5]));
    assert_eq!(report["keysBefore"], keys);
    assert_eq!(report["keysAfter"], keys);
    assert_eq!(report["ownKeys"], keys);
    assert_eq!(report["symbols"], 0);
    // The same answer stringified unread and after every part was read: the
    // same text, the properties in the same order.
    assert_eq!(report["unread"], report["read"]);
    let unread: serde_json::Value =
        serde_json::from_str(report["unread"].as_str().unwrap()).unwrap();
    assert_eq!(unread["timings"]["receiving"], 0.375);
    assert_eq!(unread["headers"]["X-Name"], "파도");
    assert_eq!(unread["cookies"]["sid"][0]["value"], "물결");
    assert_eq!(unread["request"]["url"], "http://127.0.0.1:9/first");
    assert_eq!(unread["body"], r#"{"word":"파도","n":[1,2]}"#);
    let s_keys: Vec<&str> = keys
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .filter(|k| *k != "request")
        .collect();
    assert_eq!(
        report["assigned"],
        serde_json::json!([5, "data,e,c,w", null, "data,e,c,w", false, s_keys])
    );
    assert_eq!(
        report["spread"],
        serde_json::json!([keys, data, 99, "busy", "GET", "3"])
    );
    // A frozen response keeps its accessors: each read makes the part anew.
    assert_eq!(
        report["frozen"],
        serde_json::json!([99, 99, "busy", "3", "accessor,e"])
    );
    assert_eq!(report["foreign"], serde_json::json!([null, null]));
    assert_eq!(report["proto"], true);
    assert_eq!(report["tag"], "[object Object]");
}

/// What a response keeps for its parts made when read (the request's values)
/// is traced by QuickJS's collector: responses in cycles through those values
/// are freed, whether the request was prepared in JavaScript or in Rust.
#[test]
fn responses_in_cycles_through_what_they_keep_are_collected() {
    let (_d, host, _) = script(
        r#"
import http from 'k6/http';
export default function () {
  const n = __ITER === 0 ? 2 : 300;
  for (let i = 0; i < n; i++) {
    // Prepared in Rust: the header's value (an object) kept by the response.
    const v = { toJSON: () => 'v' };
    const a = http.get(`${__ENV.BASE}/second`, { headers: { X: v } });
    v.res = a;
    // Prepared in JavaScript (a tag): its copy of the headers kept.
    const h = { Y: '1' };
    const b = http.get(`${__ENV.BASE}/second`, { headers: h, tags: { t: 'x' } });
    const shown = b.request.headers;
    shown.res = b;
    b.keep = a;
  }
}
"#,
    );
    let usage = || {
        let rt = crate::worker_rt::this_threads_runtime().expect("a runtime");
        rt.run_gc();
        rt.memory_usage()
    };
    let mut vu = load_vu(&host, 1);
    let first = drive(vu.as_mut(), start(0, None), &|_| second());
    assert_eq!(first.done, Some(Ok(None)));
    let before = usage();
    let more = drive(vu.as_mut(), start(1, None), &|_| second());
    assert_eq!(more.done, Some(Ok(None)));
    assert_eq!(more.requests.len(), 600);
    let after = usage();
    // 600 responses, each with its request, headers and values, were made:
    // none is left (a leak would leave several objects each).
    assert!(
        after.obj_count <= before.obj_count + 20,
        "{} objects before, {} after",
        before.obj_count,
        after.obj_count
    );
}

/// k6's own properties of a `Response`, in k6's order.
fn response_keys() -> serde_json::Value {
    serde_json::json!([
        "status",
        "body",
        "url",
        "error",
        "error_code",
        "proto",
        "timings",
        "request",
        "status_text",
        "headers",
        "cookies"
    ])
}
