//! `k6/crypto`, `k6/html`, `http.file` and multipart bodies, form bodies and
//! `res.cookies`, driven through a VU whose requests are captured and answered
//! with planted responses. Every expected value is what k6 v1.8.1 itself gave
//! for the same script (run against a local server that recorded what it got),
//! unless the comment names another source.

use std::sync::Arc;

use pado_engine::script::{
    ScriptCall, ScriptHost, ScriptReply, ScriptRequest, ScriptResponse, ScriptRole,
};

use crate::load_for_run;

/// The requests a VU's one iteration sent, and whether it ended without an
/// exception (its message otherwise).
fn run_once(
    src: &str,
    answer: &dyn Fn(&ScriptRequest) -> ScriptResponse,
) -> (Vec<ScriptRequest>, Result<(), String>) {
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
    let mut sent = Vec::new();
    let mut reply = ScriptReply::Start {
        iter: 0,
        data: None::<Arc<str>>,
        ids: Default::default(),
    };
    for _ in 0..1000 {
        reply = match vu.resume(reply) {
            ScriptCall::Http(r) => {
                let a = answer(&r);
                sent.push(*r);
                ScriptReply::Http(Box::new(a))
            }
            ScriptCall::Done(r) => return (sent, r.map(|_| ()).map_err(|f| f.message)),
            _ => ScriptReply::Resumed,
        };
    }
    panic!("the VU never finished");
}

fn answer(body: &str, headers: &[(&str, &str)]) -> ScriptResponse {
    ScriptResponse {
        status: 200,
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        body: body.as_bytes().to_vec(),
        url: "http://127.0.0.1:9/".into(),
        proto: "HTTP/1.1".into(),
        ..Default::default()
    }
}

/// The JSON the script posted as its last request's body.
fn reported(sent: &[ScriptRequest]) -> serde_json::Value {
    let last = sent.last().expect("the script reported");
    serde_json::from_slice(&last.body).unwrap()
}

#[test]
fn crypto_in_a_script_gives_what_k6_gives() {
    let (sent, done) = run_once(
        r#"
import crypto from 'k6/crypto';
import { sha256, hmac, createHMAC } from 'k6/crypto';
import http from 'k6/http';
export default function () {
  const h = crypto.createHash('sha256');
  h.update('파도');
  h.update(new Uint8Array([1, 2]).buffer);
  const m = createHMAC('sha256', 'Jefe');
  m.update('what do ya want ');
  m.update('for nothing?');
  const bin = crypto.sha1('abc', 'binary');
  let bad = '';
  try { crypto.sha256('abc', 'nope'); } catch (e) { bad = String(e); }
  let badAlg = '';
  try { crypto.createHash('sha3'); } catch (e) { badAlg = String(e); }
  http.post('http://127.0.0.1:9/report', JSON.stringify({
    chunks: h.digest('hex'),
    b64url: sha256('abc', 'base64url'),
    rawurl: crypto.md5('abc', 'base64rawurl'),
    hmac: hmac('sha256', 'Jefe', 'what do ya want for nothing?', 'hex'),
    hmacChunks: m.digest('base64'),
    binLen: bin.byteLength, binType: bin.constructor.name,
    rand: crypto.randomBytes(8).byteLength,
    bad, badAlg,
  }));
}
"#,
        &|_| answer("", &[]),
    );
    assert_eq!(done, Ok(()));
    let r = reported(&sent);
    assert_eq!(
        r["chunks"],
        "340fefd4962098426a7136a746a550f8e89ac8aae5768ae7056a390e4392e013"
    );
    assert_eq!(r["b64url"], "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0=");
    assert_eq!(r["rawurl"], "kAFQmDzST7DWlj99KOF_cg");
    assert_eq!(
        r["hmac"],
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
    // RFC 4231 case 2 in base64: the same MAC fed in two pieces.
    assert_eq!(
        r["hmacChunks"],
        "W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM="
    );
    assert_eq!(r["binLen"], 20);
    assert_eq!(r["binType"], "ArrayBuffer");
    assert_eq!(r["rand"], 8);
    assert!(
        r["bad"]
            .as_str()
            .unwrap()
            .contains("invalid output encoding: nope"),
        "{r}"
    );
    // k6 v1.8.1 crashes here (a nil hash); pado names the algorithm.
    assert!(
        r["badAlg"]
            .as_str()
            .unwrap()
            .contains("invalid algorithm: sha3"),
        "{r}"
    );
}

const PAGE: &str = r#"<html><body><div id="a" class="x y" data-n="5" data-is-ok="true" data-obj='{"k":1}'>Hi <b>파도</b></div><ul><li>1</li><li class="s">2</li><li>3</li></ul><form><input name="u" value="v"><select name="s"><option value="o1">A</option><option selected>B</option></select><textarea name="t">TT</textarea></form></body></html>"#;

#[test]
fn html_selections_and_response_html_give_what_k6_gives() {
    let (sent, done) = run_once(
        r#"
import http from 'k6/http';
import { parseHTML } from 'k6/html';
export default function () {
  const res = http.get('http://127.0.0.1:9/page');
  const doc = parseHTML(res.body);
  const d = doc.find('#a');
  const el = d.get(0);
  const each = [];
  doc.find('li').each((i, e) => each.push(i + ':' + e.textContent()));
  http.post('http://127.0.0.1:9/report', JSON.stringify({
    text: d.text(), html: d.html(), size: d.size(),
    data: d.data(), dataN: d.data('n'),
    el: [el.nodeName(), el.textContent(), el.id(), el.nodeType(), el.innerHTML(), el.className()],
    attrs: Object.keys(el.attributes()),
    each,
    map: doc.find('li').map((i, s) => s.text() + i),
    filter: [doc.find('li').filter('.s').text(), doc.find('li').filter((i, s) => s.text() === '3').text()],
    eq: [doc.find('li').eq(-1).text(), doc.find('li').first().text(), doc.find('li').last().text()],
    walk: [doc.find('li.s').next().text(), doc.find('li.s').prev().text(),
           doc.find('li.s').parent().children().size(), doc.find('b').closest('div').attr('id')],
    attr: [doc.find('li').attr('nope') === undefined, doc.find('li').attr('nope', 'dflt'), doc.find('div').attr('class')],
    val: [doc.find('input').val(), doc.find('select').val(), doc.find('textarea').val(), doc.find('li').val() === undefined],
    is: [doc.find('li').is('.s'), doc.find('li').is('.zz'), doc.find('li').children().size()],
    all: [doc.find('li').text(), doc.find('ul').html(), doc.find('nothing').html()],
    get: [doc.find('li').get().length, doc.find('li').get(5) === undefined],
    fromResponse: [res.html('li.s').text(), res.html().find('b').text()],
    parents: doc.find('b').parents().size(),
  }));
}
"#,
        &|r| {
            if r.url.ends_with("/page") {
                answer(PAGE, &[("Content-Type", "text/html; charset=utf-8")])
            } else {
                answer("", &[])
            }
        },
    );
    assert_eq!(done, Ok(()));
    let r = reported(&sent);
    let want = serde_json::json!({
        "text": "Hi 파도", "html": "Hi <b>파도</b>", "size": 1,
        "data": {"n": 5, "isOk": true, "obj": {"k": 1}}, "dataN": 5,
        "el": ["div", "Hi 파도", "a", 1, "Hi <b>파도</b>", "x y"],
        "attrs": ["id", "class", "data-n", "data-is-ok", "data-obj"],
        "each": ["0:1", "1:2", "2:3"],
        "map": ["10", "21", "32"],
        "filter": ["2", "3"],
        "eq": ["3", "1", "3"],
        "walk": ["3", "1", 3, "a"],
        "attr": [true, "dflt", "x y"],
        "val": ["v", "B", "TT", true],
        "is": [true, false, 0],
        "all": ["123", "<li>1</li><li class=\"s\">2</li><li>3</li>", ""],
        "get": [3, true],
        "fromResponse": ["2", "파도"],
        "parents": 3,
    });
    // k6 lists attributes in Go map order; the set is what counts.
    let mut got = r.clone();
    let mut attrs: Vec<String> = serde_json::from_value(got["attrs"].take()).unwrap();
    attrs.sort();
    let mut want_attrs: Vec<String> = serde_json::from_value(want["attrs"].clone()).unwrap();
    want_attrs.sort();
    assert_eq!(attrs, want_attrs);
    got["attrs"] = want["attrs"].clone();
    assert_eq!(got, want);
}

#[test]
fn a_bad_selector_is_an_exception_naming_it_not_a_crash() {
    let (_, done) = run_once(
        "import { parseHTML } from 'k6/html';\nexport default function () { parseHTML('<p>x</p>').find('p[').size(); }\n",
        &|_| answer("", &[]),
    );
    let e = done.unwrap_err();
    assert!(e.contains("invalid CSS selector `p[`"), "{e}");
}

/// One part of a multipart body: name, filename, content type, bytes.
type SentPart = (String, Option<String>, Option<String>, Vec<u8>);

/// The parts of a multipart body, sorted.
fn parts(body: &[u8], boundary: &str) -> Vec<SentPart> {
    let delim = format!("--{boundary}");
    let text = body;
    let mut out = Vec::new();
    let pos = |from: usize, pat: &[u8]| {
        text[from..]
            .windows(pat.len())
            .position(|w| w == pat)
            .map(|p| p + from)
    };
    let mut at = pos(0, delim.as_bytes()).unwrap() + delim.len();
    while !text[at..].starts_with(b"--") {
        let start = at + 2;
        let end = pos(start, format!("\r\n{delim}").as_bytes()).unwrap();
        let split = pos(start, b"\r\n\r\n").unwrap();
        let head = String::from_utf8_lossy(&text[start..split]).into_owned();
        let field = |k: &str| {
            head.split(&format!("{k}=\""))
                .nth(1)
                .map(|r| r.split('"').next().unwrap().to_string())
        };
        let name = head
            .split("; name=\"")
            .nth(1)
            .map(|r| r.split('"').next().unwrap().to_string())
            .unwrap();
        let ctype = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Type: ").map(str::to_string));
        out.push((
            name,
            field("filename"),
            ctype,
            text[split + 4..end].to_vec(),
        ));
        at = end + 2 + delim.len();
    }
    out.sort();
    out
}

#[test]
fn http_file_makes_a_multipart_body_with_k6s_parts() {
    let (sent, done) = run_once(
        r#"
import http from 'k6/http';
export default function () {
  const bin = new Uint8Array([0, 255, 10, 13]).buffer;
  http.post('http://127.0.0.1:9/mp', { zz: 'last', field: '파도 value',
    file: http.file(bin, 'photo.bin', 'application/octet-stream'), txt: http.file('hello 파도', 'h.txt') });
  http.post('http://127.0.0.1:9/form', { b: 'x y&z', a: '파도', c: 1, d: "it's*(ok)!~" });
  http.post('http://127.0.0.1:9/ab', bin);
  const f = http.file('abc', 'n.txt', 'text/plain');
  http.post('http://127.0.0.1:9/report', JSON.stringify({ keys: Object.keys(f), f }));
}
"#,
        &|_| answer("", &[]),
    );
    assert_eq!(done, Ok(()));
    let mp = &sent[0];
    let ctype = mp
        .headers
        .iter()
        .find(|(n, _)| n == "Content-Type")
        .map(|(_, v)| v.clone())
        .unwrap();
    let boundary = ctype
        .strip_prefix("multipart/form-data; boundary=")
        .unwrap();
    assert_eq!(boundary.len(), 60);
    assert_eq!(
        parts(&mp.body, boundary),
        vec![
            ("field".into(), None, None, "파도 value".as_bytes().to_vec()),
            (
                "file".into(),
                Some("photo.bin".into()),
                Some("application/octet-stream".into()),
                vec![0, 255, 10, 13]
            ),
            (
                "txt".into(),
                Some("h.txt".into()),
                Some("application/octet-stream".into()),
                "hello 파도".as_bytes().to_vec()
            ),
            ("zz".into(), None, None, b"last".to_vec()),
        ]
    );
    // A plain object: sorted, Go's query escaping (k6 sent exactly
    // `a=%ED%8C%8C%EB%8F%84&b=x+y%26z&c=1` for the first three).
    let form = &sent[1];
    assert_eq!(
        String::from_utf8(form.body.clone()).unwrap(),
        "a=%ED%8C%8C%EB%8F%84&b=x+y%26z&c=1&d=it%27s%2A%28ok%29%21~"
    );
    assert!(form.headers.contains(&(
        "Content-Type".into(),
        "application/x-www-form-urlencoded".into()
    )));
    // An ArrayBuffer: its bytes, no content type of pado's making.
    assert_eq!(sent[2].body, vec![0, 255, 10, 13]);
    assert!(!sent[2]
        .headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("content-type")));
    let r = reported(&sent);
    assert_eq!(
        r["keys"],
        serde_json::json!(["data", "filename", "content_type"])
    );
    assert_eq!(r["f"]["content_type"], "text/plain");
}

#[test]
fn response_cookies_have_k6s_fields() {
    let (sent, done) = run_once(
        r#"
import http from 'k6/http';
export default function () {
  const r = http.get('http://127.0.0.1:9/c');
  http.post('http://127.0.0.1:9/report', JSON.stringify(r.cookies));
}
"#,
        &|_| {
            answer(
                "",
                &[
                    (
                        "Set-Cookie",
                        "sid=abc; Path=/; Max-Age=100; HttpOnly; Secure",
                    ),
                    ("Set-Cookie", "lang=ko; Domain=127.0.0.1"),
                ],
            )
        },
    );
    assert_eq!(done, Ok(()));
    // k6 gives `expires` as Go's zero time when none is set; pado gives 0.
    assert_eq!(
        reported(&sent),
        serde_json::json!({
            "lang": [{"name": "lang", "value": "ko", "domain": "127.0.0.1", "path": "", "http_only": false, "secure": false, "max_age": 0, "expires": 0}],
            "sid": [{"name": "sid", "value": "abc", "domain": "", "path": "/", "http_only": true, "secure": true, "max_age": 100, "expires": 0}],
        })
    );
}

#[test]
fn pados_internal_body_module_is_not_importable_by_a_script() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.js");
    std::fs::write(
        &p,
        "import { file } from 'pado:http-body';\nexport default function () {}\n",
    )
    .unwrap();
    let e = load_for_run(&p, &[]).err().expect("refused").to_string();
    assert!(e.contains("s.js:1") && e.contains("pado:http-body"), "{e}");
    // Nor its files and forms, which `k6/http` loads on first use.
    std::fs::write(
        &p,
        "import { file } from 'pado:http-forms';\nexport default function () {}\n",
    )
    .unwrap();
    let e = load_for_run(&p, &[]).err().expect("refused").to_string();
    assert!(e.contains("s.js:1") && e.contains("pado:http-forms"), "{e}");
}

#[test]
fn a_file_made_in_the_init_code_and_a_form_sent_later_use_the_forms_loaded_once() {
    // `k6/http` loads its files and forms on first use: here in the init code
    // (`http.file` at the top, as k6 scripts often do), then a form, a
    // request's own cookies and a response's in the iteration.
    let (sent, done) = run_once(
        r#"
import http from 'k6/http';
const f = http.file('abc', 'n.txt', 'text/plain');
export default function () {
  const r = http.post('http://127.0.0.1:9/mp', { f }, { cookies: { a: '1' } });
  http.post('http://127.0.0.1:9/form', { b: 'x y', a: 2 });
  http.get(`http://127.0.0.1:9/?c=${r.cookies.sid[0].value}&same=${f instanceof http.file('x').constructor}`);
}
"#,
        &|_| answer("", &[("Set-Cookie", "sid=s1; Path=/")]),
    );
    assert_eq!(done, Ok(()));
    assert!(
        String::from_utf8_lossy(&sent[0].body).contains("filename=\"n.txt\""),
        "{:?}",
        String::from_utf8_lossy(&sent[0].body)
    );
    assert_eq!(sent[0].cookies.len(), 1);
    assert_eq!(sent[1].body, b"a=2&b=x+y");
    assert_eq!(sent[2].url, "http://127.0.0.1:9/?c=s1&same=true");
}

#[test]
fn params_cookies_reach_the_engine_with_replace() {
    let (sent, done) = run_once(
        r#"
import http from 'k6/http';
export default function () {
  http.get('http://127.0.0.1:9/c2', { cookies: { extra: 'e1', sid: { value: 'override', replace: true } } });
  http.get('http://127.0.0.1:9/c3', { cookies: { sid: '파도' } });
}
"#,
        &|_| answer("", &[]),
    );
    assert_eq!(done, Ok(()));
    let c = |n: &str, v: &str, replace| pado_engine::script::RequestCookie {
        name: n.into(),
        value: v.into(),
        replace,
    };
    assert_eq!(
        sent[0].cookies,
        vec![c("extra", "e1", false), c("sid", "override", true)]
    );
    assert_eq!(sent[1].cookies, vec![c("sid", "파도", false)]);
    // No Cookie header of the script's making: the engine writes the one header.
    assert!(!sent[0]
        .headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("cookie")));
}
