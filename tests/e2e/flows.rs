//! Real user flows: data feeds, templates, extraction and correlation, per-VU setup,
//! tags. The server's records are the truth.

use std::collections::{BTreeMap, BTreeSet};

use pado_testkit::TestServer;

use crate::harness::{num, pado_cmd, run, tmp, write_file, write_fixture};

#[test]
fn login_extract_token_create_extract_id_delete() {
    // Runs pado or a browser outside `harness::run`: hold the machine shared.
    let _machine = crate::harness::shared_machine();
    let srv = TestServer::start();
    let dir = tmp("flow");
    let f = write_fixture(
        &dir,
        "flows_login_extract_token_create_extract_id_delete.yaml",
        "flow.yaml",
        &[("target", srv.base_url())],
    );
    let out = pado_cmd(["run", f.to_str().unwrap(), "--quiet", "--out"])
        .arg(dir.join("r"))
        .env("PADO_E2E_PASSWORD", "s3cret-비밀")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recs = srv.records();
    let logins: Vec<_> = recs.iter().filter(|r| r.path == "/json/login").collect();
    assert_eq!(logins.len(), 3, "one login per VU");
    let mut users = BTreeSet::new();
    for l in &logins {
        let body: serde_json::Value = serde_json::from_slice(&l.body).unwrap();
        assert_eq!(body["password"], "s3cret-비밀");
        users.insert(body["user"].as_str().unwrap().to_string());
    }
    assert_eq!(users.len(), 3, "{users:?}");
    // Tokens the server issued, by connection (one connection per VU).
    let auth = |r: &pado_testkit::RequestRecord| {
        r.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
            .map(|(_, v)| v.clone())
    };
    let creates: Vec<_> = recs.iter().filter(|r| r.path == "/json/item").collect();
    let deletes: Vec<_> = recs
        .iter()
        .filter(|r| r.path.starts_with("/items/"))
        .collect();
    assert_eq!(creates.len(), 12);
    assert_eq!(deletes.len(), 12);
    let mut token_by_conn: BTreeMap<u64, String> = BTreeMap::new();
    for r in creates.iter().chain(deletes.iter()) {
        let a = auth(r).expect("Authorization header");
        assert!(a.starts_with("Bearer tok-"), "{a}");
        let prev = token_by_conn.entry(r.connection_id).or_insert(a.clone());
        assert_eq!(*prev, a, "a VU must keep its own token");
    }
    let distinct: BTreeSet<_> = token_by_conn.values().collect();
    assert_eq!(distinct.len(), 3);
    // Every created id is deleted exactly once, by the VU that created it.
    let deleted: BTreeSet<u64> = deletes
        .iter()
        .map(|r| r.path.trim_start_matches("/items/").parse().unwrap())
        .collect();
    assert_eq!(deleted.len(), 12);
    assert_eq!(deleted, (1..=12).collect::<BTreeSet<u64>>());
    // Bodies rendered with Hangul intact.
    let titles: Vec<String> = creates
        .iter()
        .map(|r| {
            let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            v["title"].as_str().unwrap().to_string()
        })
        .collect();
    assert!(titles.iter().all(|t| t.starts_with("글 ")), "{titles:?}");
    // The secret never reaches the result directory.
    for name in ["run.json", "summary.json", "timeline.jsonl"] {
        let text = std::fs::read_to_string(dir.join("r").join(name)).unwrap();
        assert!(!text.contains("s3cret"), "{name} leaks the password");
    }
    assert!(!String::from_utf8_lossy(&out.stdout).contains("s3cret"));
}

#[test]
fn feeds_hangul_unique_per_vu_and_tags() {
    let srv = TestServer::start();
    let dir = tmp("feeds");
    write_file(
        &dir,
        "keywords.csv",
        "term,class\n검색 엔진,high\n파도,mid\nrust load test,rare\n부하 테스트,mid\n",
    );
    let f = write_fixture(
        &dir,
        "flows_feeds_hangul_unique_per_vu_and_tags.yaml",
        "feeds.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("feeds", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let recs = srv.records();
    assert_eq!(recs.len(), 200);
    let keywords: BTreeMap<&str, &str> = [
        ("검색 엔진", "high"),
        ("파도", "mid"),
        ("rust load test", "rare"),
        ("부하 테스트", "mid"),
    ]
    .into_iter()
    .collect();
    let searches: Vec<_> = recs.iter().filter(|r| r.path == "/api/search").collect();
    assert!(!searches.is_empty());
    for s in &searches {
        let q: BTreeMap<_, _> = s.query.iter().cloned().collect();
        let term = q["q"].as_str();
        // Same row for both columns, decoded intact.
        assert_eq!(
            keywords.get(term).copied(),
            Some(q["class"].as_str()),
            "{q:?}"
        );
        // Sent percent-encoded as UTF-8, never raw.
        assert!(
            s.target.is_ascii() && (term.is_ascii() || s.target.contains('%')),
            "{}",
            s.target
        );
    }
    // Unique per VU: an account number is never used by two VUs.
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    for a in recs.iter().filter(|r| r.path.starts_with("/api/accounts/")) {
        let vu = a
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("x-vu"))
            .unwrap()
            .1
            .clone();
        let prev = owner.entry(a.path.clone()).or_insert(vu.clone());
        assert_eq!(*prev, vu, "{} used by two VUs", a.path);
    }
    // pick(hot: 80, all: 20): about 80% of post ids are hot.
    let posts: Vec<u64> = recs
        .iter()
        .filter(|r| r.path.starts_with("/api/posts/"))
        .map(|r| r.path.trim_start_matches("/api/posts/").parse().unwrap())
        .collect();
    let hot = posts.iter().filter(|p| **p <= 10).count() as f64 / posts.len() as f64;
    assert!((0.6..0.95).contains(&hot), "{hot}");
    // Tagged series: the search step is broken down by class; names are grouped.
    let s = r.summary();
    assert_eq!(
        num(&s["steps"]["search"], "requests") as usize,
        searches.len()
    );
    let tl = r.timeline();
    let mut classes = BTreeSet::new();
    for line in &tl {
        for series in line["series"].as_array().unwrap() {
            if series["name"] == "search" {
                for t in series["tags"].as_array().unwrap() {
                    classes.insert(t[1].as_str().unwrap().to_string());
                }
            }
        }
    }
    assert!(
        classes
            .iter()
            .all(|c| ["high", "mid", "rare"].contains(&c.as_str())),
        "{classes:?}"
    );
    assert!(classes.len() >= 2, "{classes:?}");
    // The summary breaks the search step down by tag.
    let tagged = s["tagged"].as_object().unwrap();
    let by_tag: f64 = tagged
        .iter()
        .filter(|(k, _)| k.starts_with("search{class="))
        .map(|(_, v)| num(v, "requests"))
        .sum();
    assert_eq!(by_tag as usize, searches.len(), "{tagged:?}");
    assert!(r.stdout().contains("{class=mid}"), "{}", r.stdout());
}

#[test]
fn cookies_regex_and_header_extraction_and_json_checks() {
    let srv = TestServer::start();
    let dir = tmp("cookies");
    let f = write_fixture(
        &dir,
        "flows_cookies_regex_and_header_extraction_and_json_checks.yaml",
        "c.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("cookies", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    let checks = s["checks"].as_object().unwrap();
    // The first login returns tok-1, the second tok-2: the JSON equality check
    // passes once and fails once; the rest always pass.
    assert_eq!(
        num(&checks["login: $.token == \"tok-1\""], "passes"),
        1.0,
        "{s}"
    );
    assert_eq!(num(&checks["login: $.token == \"tok-1\""], "fails"), 1.0);
    assert_eq!(
        num(
            &checks["login: header Content-Type contains \"json\""],
            "fails"
        ),
        0.0
    );
    let echo = checks
        .iter()
        .find(|(k, _)| k.starts_with("echo: body matches"))
        .unwrap()
        .1;
    assert_eq!(num(echo, "passes"), 2.0, "{s}");
    // The jar sent the cookies back; the extracted cookie went into a header.
    for (name, c) in checks {
        if name.starts_with("whoami:") {
            assert_eq!(num(c, "fails"), 0.0, "{name}: {s}");
            assert_eq!(num(c, "passes"), 2.0, "{name}");
        }
    }
}

#[test]
fn tag_cardinality_is_capped_with_a_warning_and_counted_checks_can_pass_requests() {
    let srv = TestServer::start();
    let dir = tmp("cap");
    let f = write_fixture(
        &dir,
        "flows_tag_cardinality_is_capped_with_a_warning_and_counted_checks_can_pass_requests.yaml",
        "cap.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("cap", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    assert_eq!(num(&s, "requests"), 1400.0);
    // Counted, not failing: the check fails every time, the requests do not.
    assert_eq!(num(&s, "failed"), 0.0);
    assert_eq!(
        num(&s["checks"]["item: body contains \"never\""], "fails"),
        1400.0
    );
    let tagged = s["tagged"].as_object().unwrap();
    assert!(
        tagged.contains_key("item{id=~other}"),
        "{:?}",
        tagged.keys().take(3).collect::<Vec<_>>()
    );
    let total: f64 = tagged.values().map(|v| num(v, "requests")).sum();
    assert_eq!(total, 1400.0);
    assert!(tagged.len() <= 2 * 500 + 1, "{}", tagged.len());
    let w = s["warnings"].to_string();
    assert!(w.contains("~other"), "{w}");
    // Routes are grouped: /items/1.. are one step named by the template.
    assert_eq!(s["steps"].as_object().unwrap().len(), 1);
}

#[test]
fn checks_compare_with_rendered_templates() {
    // Each POST /json/item answers a new id; /echo returns the body it was sent. A
    // check written `{{ id }}` must compare with the id extracted this iteration.
    let srv = TestServer::start();
    let dir = tmp("check-templates");
    let f = write_fixture(
        &dir,
        "flows_checks_compare_with_rendered_templates.yaml",
        "t.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("check-templates", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    let check = |name: &str| -> (f64, f64) {
        let c = &s["checks"][name];
        (num(c, "passes"), num(c, "fails"))
    };
    // The echoed id is this iteration's: every time.
    assert_eq!(check("echo: $.id == \"{{ id }}\""), (3.0, 0.0), "{s}");
    assert_eq!(
        check("echo: body contains \"n{{ id }}x\""),
        (3.0, 0.0),
        "{s}"
    );
    // The next item's id is another one: never equal (so the comparison is real).
    assert_eq!(check("next: $.id == \"{{ id }}\""), (0.0, 3.0), "{s}");
    assert_eq!(srv.stats().requests, 9);
    // An unknown name in a check is an error of the file, with its line.
    let bad = write_fixture(
        &dir,
        "flows_checks_compare_with_rendered_templates_bad.yaml",
        "bad.yaml",
        &[("target", srv.base_url())],
    );
    let o = crate::harness::pado(&["validate", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("bad.yaml:9") && e.contains("nope"), "{e}");
}

#[test]
fn a_path_from_a_response_and_typed_json_values_are_sent_as_meant() {
    // `/redirect-to?url=U` answers 302 with `Location: U`, as sent. The flow takes the
    // Location (a path with Hangul, then an absolute URL on the same origin) and
    // requests it; a JSON body sends typed holes unquoted. The server's records are
    // the truth.
    let srv = TestServer::start();
    let base = srv.base_url();
    let dir = tmp("path-holes");
    let f = write_fixture(
        &dir,
        "flows_a_path_from_a_response_and_typed_json_values_are_sent_as_meant.yaml",
        "t.yaml",
        &[("base", base.to_string())],
    );
    let r = run("path-holes", &[f.to_str().unwrap()]);
    let s = r.summary();
    let recs = srv.records();
    let opened: Vec<_> = recs
        .iter()
        .filter(|q| q.path.starts_with("/orders/"))
        .collect();
    assert_eq!(opened.len(), 3, "{s}");
    for (i, q) in opened.iter().enumerate() {
        // `/` and `?` kept, Hangul percent-encoded, `%2F` left as it was.
        assert_eq!(
            q.target,
            format!("/orders/{i}?view=%EC%9A%94%EC%95%BD&x=1%2F2"),
            "{s}"
        );
        assert_eq!(q.query[0], ("view".to_string(), "요약".to_string()));
    }
    // The absolute Location on the target's origin is requested there, as its path.
    assert_eq!(srv.stats().by_path.get("/abs/1"), Some(&3), "{s}");
    // Typed holes arrive as JSON numbers, booleans and values; the untyped one a string.
    let typed: Vec<serde_json::Value> = recs
        .iter()
        .filter(|q| q.path == "/echo" && !q.body.windows(4).any(|w| w == b"flag"))
        .map(|q| serde_json::from_slice(&q.body).expect("valid JSON"))
        .collect();
    assert_eq!(typed.len(), 3, "{s}");
    for (i, v) in typed.iter().enumerate() {
        assert_eq!(v["n"], serde_json::json!(i), "{v}");
        assert_eq!(v["tag"], serde_json::json!(i.to_string()), "{v}");
        assert_eq!(v["ok"], serde_json::json!(true), "{v}");
        assert_eq!(
            v["both"],
            serde_json::json!([1, { "이름": "결제", "n": [1, 2] }]),
            "{v}"
        );
    }
    // A Location elsewhere is not requested: the step fails with `template`, nothing
    // is sent (127.0.0.2:9 would refuse), and the sample says what it rendered.
    assert_eq!(num(&s, "errors.template"), 3.0, "{s}");
    // No thresholds: failed requests do not fail the run (as in k6).
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let failures = std::fs::read_to_string(r.dir.join("failures.jsonl")).unwrap();
    let f0: serde_json::Value = serde_json::from_str(failures.lines().next().unwrap()).unwrap();
    assert_eq!(f0["category"], "template", "{failures}");
    assert_eq!(f0["step"], "refuse", "{failures}");
    assert_eq!(
        f0["reason"],
        format!("`{{{{ away }}}}` rendered `http://127.0.0.2:9/x`, which is not a path starting with `/` or a URL on {base}"),
        "{failures}"
    );
    // Every other request went out and passed.
    assert_eq!(srv.stats().requests, 3 * 6 + 1, "{s}");
}
