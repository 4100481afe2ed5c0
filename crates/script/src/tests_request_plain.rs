//! k6's request as most scripts make it, prepared in Rust
//! (`request_plain`): each such request is sent exactly as `js/http.js`'s
//! `prepare` sends it (the same `ScriptRequest`, the same request shown by its
//! response), and every request it is not for is left to `prepare`.

use pado_engine::script::ScriptRequest;

use crate::tests::{drive, load_vu, ok_json, script, start};

#[test]
fn a_plain_request_is_sent_and_shown_as_prepare_makes_it() {
    let (_d, host, _) = script(
        r#"
import http from 'k6/http';
import { group } from 'k6';
const B = __ENV.BASE;
// Each request twice: as it is (made in Rust), then with an option that
// changes nothing but sends it through `prepare`.
const slow = (p) => Object.assign({ timeout: undefined }, p);
const cases = [
  (s) => http.get(`${B}/a`, s ? slow({}) : undefined),
  (s) => http.get(`${B}/b`, (s ? slow : (p) => p)({ headers: { A: '1', N: 2, 'x-low': 'v', U: undefined } })),
  (s) => http.post(`${B}/c`, 'body 파도', (s ? slow : (p) => p)({ headers: { 'Content-Type': 'text/plain' } })),
  (s) => http.request('patch', `${B}/d`, null, (s ? slow : (p) => p)({ headers: {} })),
  (s) => http.del(`${B}/e`, undefined, s ? slow({}) : {}),
  (s) => http.put(`${B}/f`, '', s ? slow({ headers: null }) : null),
  (s) => group('g', () => http.get(`${B}/g`, s ? slow({}) : undefined)),
];
export default function () {
  const shown = [];
  for (const c of cases) {
    const a = c(false);
    const b = c(true);
    shown.push([JSON.stringify(a.request), JSON.stringify(b.request), typeof a.request.headers.N,
                JSON.stringify(a), JSON.stringify(b)]);
  }
  http.post(`${B}/report`, JSON.stringify(shown), { tags: { t: 'x' } });
}
"#,
    );
    let mut vu = load_vu(&host, 1);
    let seen = drive(vu.as_mut(), start(0, None), &|_| ok_json(r#"{"k":1}"#));
    assert_eq!(seen.done, Some(Ok(None)));
    let reqs: &[ScriptRequest] = &seen.requests;
    assert_eq!(reqs.len(), 15);
    for pair in reqs[..14].chunks(2) {
        assert_eq!(pair[0], pair[1]);
    }
    // What was sent, planted in the script.
    assert_eq!(reqs[0].method, "GET");
    assert_eq!(reqs[0].url, "http://127.0.0.1:9/a");
    assert!(reqs[0].headers.is_empty() && reqs[0].keep_body);
    assert_eq!(
        reqs[2].headers,
        [
            ("A".to_string(), "1".to_string()),
            ("N".to_string(), "2".to_string()),
            ("x-low".to_string(), "v".to_string()),
            ("U".to_string(), String::new()),
        ]
    );
    assert_eq!(reqs[4].method, "POST");
    assert_eq!(reqs[4].body, "body 파도".as_bytes());
    assert_eq!(reqs[6].method, "PATCH");
    assert_eq!(reqs[8].method, "DELETE");
    assert_eq!(reqs[10].method, "PUT");
    assert_eq!(reqs[12].group.as_deref(), Some("::g"));
    let shown: serde_json::Value = serde_json::from_slice(&reqs[14].body).unwrap();
    for (i, case) in shown.as_array().unwrap().iter().enumerate() {
        assert_eq!(case[0], case[1], "case {i}'s request shown");
        assert_eq!(case[3], case[4], "case {i}'s response");
    }
    let b: serde_json::Value = serde_json::from_str(shown[1][0].as_str().unwrap()).unwrap();
    // A value shown as the script gave it (a number stays one).
    assert_eq!(
        b["headers"],
        serde_json::json!({"A": "1", "N": 2, "x-low": "v"})
    );
    assert_eq!(shown[1][2], "number");
    let d: serde_json::Value = serde_json::from_str(shown[3][0].as_str().unwrap()).unwrap();
    assert_eq!(d["method"], "PATCH");
    assert_eq!(d["body"], "");
}

#[test]
fn a_request_with_anything_more_is_left_to_prepare() {
    let (_d, host, _) = script(
        r#"
import http from 'k6/http';
const B = __ENV.BASE;
const P = globalThis.__pado;
// What js/http.js hands the native: its prototype, cookie reader and jar.
const S = [http.Response.prototype, () => ({}), http.cookieJar().__h];
export default function () {
  const inherited = Object.create({ tags: { a: '1' } });
  const cases = {
    plain: ['GET', `${B}/x`, null, { headers: { A: '1' } }],
    none: ['GET', `${B}/y`, undefined, undefined],
    tags: ['GET', `${B}/x`, null, { tags: { a: '1' } }],
    alsoHeaders: ['GET', `${B}/x`, null, { headers: {}, redirects: 0 }],
    inherited: ['GET', `${B}/x`, null, inherited],
    credentials: ['GET', 'http://u:p@127.0.0.1:9/x', null, undefined],
    objectBody: ['POST', `${B}/x`, { a: 1 }, undefined],
    bufferBody: ['POST', `${B}/x`, new ArrayBuffer(2), undefined],
    urlObject: ['GET', { toString: () => `${B}/x` }, null, undefined],
    headersText: ['GET', `${B}/x`, null, { headers: 'A: 1' }],
    unicodeMethod: ['get\u0131', `${B}/x`, null, undefined],
    cookies: ['GET', `${B}/x`, null, { cookies: { a: 'b' } }],
    paramsText: ['GET', `${B}/x`, null, 'x'],
  };
  const out = {};
  for (const k in cases) {
    const [m, u, b, p] = cases[k];
    const r = P.requestPlain(m, u, b, p, undefined, S);
    out[k] = r === undefined ? 'prepare' : r.request.url;
  }
  http.post(`${B}/report`, JSON.stringify(out));
}
"#,
    );
    let mut vu = load_vu(&host, 1);
    let seen = drive(vu.as_mut(), start(0, None), &|_| ok_json("{}"));
    assert_eq!(seen.done, Some(Ok(None)));
    // Only the two plain ones were sent (then the report).
    let urls: Vec<&str> = seen.requests.iter().map(|r| r.url.as_str()).collect();
    assert_eq!(
        urls,
        [
            "http://127.0.0.1:9/x",
            "http://127.0.0.1:9/y",
            "http://127.0.0.1:9/report"
        ]
    );
    let out: serde_json::Value = serde_json::from_slice(&seen.requests[2].body).unwrap();
    let mut want = serde_json::Map::new();
    for k in [
        "tags",
        "alsoHeaders",
        "inherited",
        "credentials",
        "objectBody",
        "bufferBody",
        "urlObject",
        "headersText",
        "unicodeMethod",
        "cookies",
        "paramsText",
    ] {
        want.insert(k.into(), "prepare".into());
    }
    want.insert("plain".into(), "http://127.0.0.1:9/x".into());
    want.insert("none".into(), "http://127.0.0.1:9/y".into());
    assert_eq!(out, serde_json::Value::Object(want));
}
