//! Redirects: followed by default (at most 10 hops, as k6), each hop a request of the
//! step that the server counted; methods and bodies as browsers and k6 treat them.

use pado_testkit::TestServer;

use crate::harness::{num, run, tmp, write_fixture};

/// Responses of `status` the run counted, from the summary.
fn status_count(s: &serde_json::Value, status: u16) -> f64 {
    s["status"][status.to_string()].as_f64().unwrap_or(0.0)
}

#[test]
fn redirects_are_followed_and_every_hop_is_a_request() {
    let srv = TestServer::start();
    let other = TestServer::start();
    let dir = tmp("redir-follow");
    // Same origin (3 hops, relative Location) and another origin (absolute Location
    // to a server the plan never names, then 1 hop there).
    let cross = format!(
        "/redirect-to?url={}",
        other
            .url("/redirect/1")
            .replace(':', "%3A")
            .replace('/', "%2F")
    );
    let f = write_fixture(
        &dir,
        "redirects_redirects_are_followed_and_every_hop_is_a_request.yaml",
        "s.yaml",
        &[("target", srv.base_url()), ("cross", cross.to_string())],
    );
    let r = run("redir-follow", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    // 6 iterations: 4 requests of `chain` and 1 of `cross` here, 2 on the other server.
    assert_eq!(srv.stats().by_path.values().sum::<u64>(), 6 * 5);
    assert_eq!(other.stats().requests, 6 * 2);
    assert_eq!(
        num(&s, "requests") as u64,
        srv.stats().requests + other.stats().requests,
        "{s}"
    );
    assert_eq!(num(&s, "failed"), 0.0, "{s}");
    assert_eq!(num(&s["steps"]["chain"], "requests"), 24.0, "{s}");
    assert_eq!(num(&s["steps"]["cross"], "requests"), 18.0, "{s}");
    // The hops are 302s (not failures), the final answers 200s.
    assert_eq!(status_count(&s, 302), 6.0 * (3.0 + 2.0), "{s}");
    assert_eq!(status_count(&s, 200), 6.0 * 2.0, "{s}");
    let checks = s["checks"].as_object().unwrap();
    for (name, c) in checks {
        assert_eq!(num(c, "fails"), 0.0, "{name}: {s}");
        assert_eq!(num(c, "passes"), 6.0, "{name}: {s}");
    }
}

#[test]
fn follow_redirects_false_stops_at_the_redirect() {
    let srv = TestServer::start();
    let dir = tmp("redir-off");
    let f = write_fixture(
        &dir,
        "redirects_follow_redirects_false_stops_at_the_redirect.yaml",
        "s.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("redir-off", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    assert_eq!(srv.stats().requests, 3);
    assert_eq!(num(&s, "requests"), 3.0);
    assert_eq!(num(&s, "failed"), 0.0, "{s}");
    // The flag does the same for every request that does not say otherwise.
    let srv = TestServer::start();
    let f = write_fixture(
        &dir,
        "redirects_follow_redirects_false_stops_at_the_redirect_2.yaml",
        "flag.yaml",
        &[("target", srv.base_url())],
    );
    let r = run(
        "redir-flag",
        &[f.to_str().unwrap(), "--no-follow-redirects"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert_eq!(srv.stats().requests, 3);
    assert_eq!(num(&r.summary(), "failed"), 0.0);
}

#[test]
fn a_303_turns_a_post_into_a_get_and_a_307_keeps_it() {
    let srv = TestServer::start();
    let dir = tmp("redir-post");
    let f = write_fixture(
        &dir,
        "redirects_a_303_turns_a_post_into_a_get_and_a_307_keeps_it.yaml",
        "s.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("redir-post", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    assert_eq!(num(&s, "requests") as u64, srv.stats().requests);
    assert_eq!(num(&s, "failed"), 0.0, "{s}");
    let echoes: Vec<_> = srv
        .records()
        .into_iter()
        .filter(|r| r.path == "/echo")
        .collect();
    assert_eq!(echoes.len(), 4);
    let ctype = |r: &pado_testkit::RequestRecord| {
        r.headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
    };
    for (i, e) in echoes.iter().enumerate() {
        if i % 2 == 0 {
            assert_eq!(e.method, "GET", "303 → GET");
            assert!(e.body.is_empty() && !ctype(e), "{e:?}");
        } else {
            assert_eq!(e.method, "POST", "307 keeps the method");
            assert_eq!(
                e.body,
                format!("{{\"n\":\"{}\"}}", i / 2).into_bytes(),
                "{e:?}"
            );
            assert!(ctype(e));
        }
    }
}

#[test]
fn more_than_ten_hops_fail_as_too_many_redirects() {
    let srv = TestServer::start();
    let dir = tmp("redir-many");
    let f = write_fixture(
        &dir,
        "redirects_more_than_ten_hops_fail_as_too_many_redirects.yaml",
        "s.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("redir-many", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    // Ten hops are followed (11 requests, the last a 200); the eleventh 302 is not.
    assert_eq!(srv.stats().requests, 2 * (11 + 11 + 1));
    assert_eq!(num(&s, "requests") as u64, srv.stats().requests);
    assert_eq!(num(&s["steps"]["ten"], "failed"), 0.0, "{s}");
    assert_eq!(num(&s["steps"]["eleven"], "failed"), 2.0, "{s}");
    assert_eq!(num(&s, "errors.too_many_redirects"), 2.0, "{s}");
    // A redirect to another scheme is never followed.
    assert_eq!(num(&s, "errors.bad_redirect"), 2.0, "{s}");
    let failures = std::fs::read_to_string(r.dir.join("failures.jsonl")).unwrap();
    assert!(
        failures.contains("\"category\":\"too_many_redirects\""),
        "{failures}"
    );
}
