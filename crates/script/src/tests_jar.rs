//! k6's cookie jars and `http.batch` at the script's side: what a VU hands the
//! engine (its jar with each request, a batch as one call with k6's limits)
//! and what it makes of the answers, driven through a VU whose calls are
//! answered here. The engine's side (cookies on the wire, requests at once) is
//! tested end to end in `tests/e2e/k6_http_more.rs`.

use std::sync::Arc;

use pado_engine::cookies::ScriptJar;
use pado_engine::script::{
    ScriptBatchReply, ScriptCall, ScriptHost, ScriptReply, ScriptRequest, ScriptResponse,
    ScriptRole,
};

use crate::load_for_run;

/// Run `iterations` iterations of `src`'s default function on one VU,
/// answering each request with `answer` (which may change the jar it was
/// handed, as the engine does with the cookies a response sets) and each
/// batch with one answer per request. Every request sent (with the jar it
/// carried), and the batches' calls.
fn drive(
    src: &str,
    iterations: u64,
    answer: &dyn Fn(&ScriptRequest, &mut ScriptJar) -> ScriptResponse,
) -> (Vec<ScriptRequest>, Vec<pado_engine::script::ScriptBatch>) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.js");
    std::fs::write(&p, src).unwrap();
    let l = load_for_run(&p, &[]).unwrap_or_else(|e| panic!("{e}"));
    let mut vu = l
        .script
        .vu(ScriptRole::Load {
            scenario: "default".into(),
            exec: "default".into(),
            vu: 1,
        })
        .unwrap();
    let (mut sent, mut batches) = (Vec::new(), Vec::new());
    for iter in 0..iterations {
        let mut reply = ScriptReply::Start {
            iter,
            data: None::<Arc<str>>,
            ids: Default::default(),
        };
        loop {
            reply = match vu.resume(reply) {
                ScriptCall::Http(mut r) => {
                    let mut jar = r.jar.take().map(|j| *j).expect("a request carries a jar");
                    let mut kept = (*r).clone();
                    kept.jar = Some(Box::new(jar.clone()));
                    let mut a = answer(&r, &mut jar);
                    sent.push(kept);
                    a.jar = Some(Box::new(jar));
                    ScriptReply::Http(Box::new(a))
                }
                ScriptCall::Batch(b) => {
                    let mut jars = b.jars.clone();
                    let responses = b
                        .requests
                        .iter()
                        .zip(&b.jar_of)
                        .map(|(r, j)| answer(r, &mut jars[*j]))
                        .collect();
                    batches.push(*b);
                    ScriptReply::Batch(Box::new(ScriptBatchReply { responses, jars }))
                }
                ScriptCall::Done(r) => {
                    if let Err(f) = r {
                        panic!("iteration {iter}: {} {}", f.message, f.stack);
                    }
                    break;
                }
                _ => ScriptReply::Resumed,
            };
        }
    }
    (sent, batches)
}

fn ok(body: &str) -> ScriptResponse {
    ScriptResponse {
        status: 200,
        body: body.as_bytes().to_vec(),
        proto: "HTTP/1.1".into(),
        ..Default::default()
    }
}

/// The `Cookie` header the engine would send with `r` to its URL.
fn cookie_line(r: &ScriptRequest) -> String {
    let mut out = Vec::new();
    let url = url::Url::parse(&r.url).unwrap();
    if let Some(j) = &r.jar {
        j.write_header_for(&url, &r.cookies, &mut out);
    }
    String::from_utf8(out).unwrap()
}

/// The JSON the script posted as its last request's body.
fn reported(sent: &[ScriptRequest]) -> serde_json::Value {
    serde_json::from_slice(&sent.last().expect("the script reported").body).unwrap()
}

#[test]
fn the_vus_jar_and_a_jar_of_the_scripts_own_go_with_their_requests() {
    let (sent, _) = drive(
        r#"
import http from 'k6/http';
export default function () {
  const jar = http.cookieJar();
  jar.set('http://127.0.0.1:9/', 'sid', '파도', { path: '/' });
  jar.set('http://127.0.0.1:9/', 'sec', 's', { path: '/', secure: true });
  http.get('http://127.0.0.1:9/a');
  const own = new http.CookieJar();
  own.set('http://127.0.0.1:9/', 'mine', '1');
  http.get('http://127.0.0.1:9/b', { jar: own });
  http.get('http://127.0.0.1:9/c', { jar: null });
  const seen = jar.cookiesForURL('http://127.0.0.1:9/x');
  const ownSeen = own.cookiesForURL('http://127.0.0.1:9/x');
  jar.delete('http://127.0.0.1:9/', 'srv');
  const afterDelete = jar.cookiesForURL('http://127.0.0.1:9/x');
  jar.clear('http://127.0.0.1:9/');
  const afterClear = jar.cookiesForURL('http://127.0.0.1:9/x');
  http.post('http://127.0.0.1:9/report', JSON.stringify({ seen, ownSeen, afterDelete, afterClear }), { jar: own });
}
"#,
        1,
        &|r, jar| {
            // What the engine does with `Set-Cookie: srv=1; Path=/` from /a.
            if r.url.ends_with("/a") {
                let url = url::Url::parse(&r.url).unwrap();
                jar.absorb_url(&url, std::iter::once(&b"srv=1; Path=/"[..]));
            }
            ok("")
        },
    );
    // /a: the VU's jar (a secure cookie stays off plain http).
    assert_eq!(cookie_line(&sent[0]), "Cookie: sid=파도\r\n");
    // /b: the script's own jar only.
    assert_eq!(cookie_line(&sent[1]), "Cookie: mine=1\r\n");
    // /c: `jar: null` is the VU's jar, as k6 reads it; /a's cookie is in it.
    assert_eq!(cookie_line(&sent[2]), "Cookie: sid=파도; srv=1\r\n");
    assert_eq!(
        reported(&sent),
        serde_json::json!({
            "seen": { "sid": ["파도"], "srv": ["1"] },
            "ownSeen": { "mine": ["1"] },
            "afterDelete": { "sid": ["파도"] },
            "afterClear": {},
        })
    );
}

#[test]
fn the_vus_jar_is_emptied_each_iteration_unless_no_cookies_reset() {
    let script = |opts: &str| {
        format!(
            r#"
import http from 'k6/http';
export const options = {{ {opts} }};
export default function () {{
  const had = http.cookieJar().cookiesForURL('http://127.0.0.1:9/');
  http.cookieJar().set('http://127.0.0.1:9/', 'n', String(__ITER));
  http.post('http://127.0.0.1:9/report', JSON.stringify(had));
}}
"#
        )
    };
    let (sent, _) = drive(&script("iterations: 2"), 2, &|_, _| ok(""));
    assert_eq!(reported(&sent), serde_json::json!({}));
    // The report itself carried iteration 1's cookie, not iteration 0's.
    assert_eq!(cookie_line(&sent[1]), "Cookie: n=1\r\n");
    let (sent, _) = drive(
        &script("iterations: 2, noCookiesReset: true"),
        2,
        &|_, _| ok(""),
    );
    assert_eq!(reported(&sent), serde_json::json!({ "n": ["0"] }));
}

#[test]
fn a_jar_made_in_the_init_context_is_refused_as_k6_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.js");
    std::fs::write(
        &p,
        "import http from 'k6/http';\nconst jar = new http.CookieJar();\nexport default function () {}\n",
    )
    .unwrap();
    let e = load_for_run(&p, &[]).err().expect("refused").to_string();
    assert!(
        e.contains("Making cookie jars in the init context is not supported")
            && e.contains("s.js:2"),
        "{e}"
    );
}

#[test]
fn a_bad_date_or_url_given_to_a_jar_is_an_exception_naming_it() {
    let (sent, _) = drive(
        r#"
import http from 'k6/http';
export default function () {
  let msg = '';
  try { http.cookieJar().set('http://127.0.0.1:9/', 'a', 'b', { expires: 'tomorrow' }); } catch (e) { msg = String(e); }
  http.cookieJar().set('http://127.0.0.1:9/', 'gone', 'x', { expires: 'Thu, 01 Jan 1970 00:00:00 GMT' });
  http.cookieJar().set('http://127.0.0.1:9/', 'later', 'y', { max_age: 3600 });
  let bad = '';
  try { http.cookieJar().cookiesForURL('not a url'); } catch (e) { bad = String(e); }
  http.post('http://127.0.0.1:9/report', JSON.stringify({ msg, bad, now: http.cookieJar().cookiesForURL('http://127.0.0.1:9/') }));
}
"#,
        1,
        &|_, _| ok(""),
    );
    let r = reported(&sent);
    assert!(
        r["msg"]
            .as_str()
            .unwrap()
            .contains("unable to parse \"expires\" date string \"tomorrow\""),
        "{r}"
    );
    assert!(
        r["bad"]
            .as_str()
            .unwrap()
            .contains("`not a url` is not an absolute URL"),
        "{r}"
    );
    assert_eq!(r["now"], serde_json::json!({ "later": ["y"] }));
}

#[test]
fn a_batch_is_one_call_in_order_with_k6s_limits_and_each_jar_once() {
    let (sent, batches) = drive(
        r#"
import http from 'k6/http';
export const options = { iterations: 1, batch: 3, batchPerHost: 2 };
export default function () {
  const own = new http.CookieJar();
  const list = http.batch([
    'http://127.0.0.1:9/s/1',
    ['GET', 'http://127.0.0.1:9/s/2', null, { jar: own }],
    { method: 'POST', url: 'http://127.0.0.1:9/s/3', body: 'x', params: { jar: own, tags: { name: 'three' } } },
  ]);
  const named = http.batch({ a: 'http://127.0.0.1:9/s/4', b: ['GET', 'http://127.0.0.1:9/s/5'] });
  http.post('http://127.0.0.1:9/report', JSON.stringify({
    list: list.map((r) => [r.status, r.body, r.request.method]),
    named: { a: named.a.body, b: named.b.body },
    own: own.cookiesForURL('http://127.0.0.1:9/'),
  }));
}
"#,
        1,
        &|r, jar| {
            let url = url::Url::parse(&r.url).unwrap();
            let n = &r.url[r.url.len() - 1..];
            if !n.as_bytes()[0].is_ascii_digit() {
                return ok("");
            }
            jar.absorb_url(&url, std::iter::once(format!("c{n}=v; Path=/").as_bytes()));
            ScriptResponse {
                status: 200 + n.parse::<u16>().unwrap(),
                ..ok(&format!("body {n}"))
            }
        },
    );
    assert_eq!(batches.len(), 2);
    let b = &batches[0];
    assert_eq!((b.parallel, b.per_host), (3, 2));
    // The VU's jar and the script's own, each handed over once.
    assert_eq!(b.jars.len(), 2);
    assert_eq!(b.jar_of, vec![0, 1, 1]);
    assert_eq!(b.requests[2].name.as_deref(), Some("three"));
    assert_eq!(b.requests[2].body, b"x");
    assert!(b.requests.iter().all(|r| r.jar.is_none()));
    assert_eq!(
        reported(&sent),
        serde_json::json!({
            "list": [[201, "body 1", "GET"], [202, "body 2", "GET"], [203, "body 3", "POST"]],
            "named": { "a": "body 4", "b": "body 5" },
            "own": { "c2": ["v"], "c3": ["v"] },
        })
    );
    // k6's defaults when the options say nothing: 10 and 6.
    let (_, batches) = drive(
        "import http from 'k6/http';\nexport default function () { http.batch(['http://127.0.0.1:9/s/1']); }\n",
        1,
        &|_, _| ok(""),
    );
    assert_eq!((batches[0].parallel, batches[0].per_host), (10, 6));
}
