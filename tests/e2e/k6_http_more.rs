//! k6's cookie jars, parallel `http.batch` and HTTP/2 for a script's requests
//! (the scripts under `testdata/k6/http_more/`, each naming the k6
//! documentation page it follows), run by pado against the test kit's servers,
//! which record what they received: the `Cookie` header of each request, when
//! each arrived and on which connection, which protocol. Where k6 is
//! installed, k6 runs the same script against a fresh server and the server
//! must have received the same from both (skipped with a message otherwise,
//! unless `PADO_E2E_REQUIRE_ALL=1`). k6 always runs with
//! `K6_NO_USAGE_REPORT=true`.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use pado_testkit::h2server::{H2Options, H2Server};
use pado_testkit::{RequestRecord, ServerOptions, TestServer};
use serde_json::Value;

use crate::harness::{num, read_json, run, tmp};
use crate::k6_corpus::k6_or_skip;

fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/e2e/testdata/k6/http_more")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn pado(name: &str, env: &[(&str, String)]) -> crate::harness::Run {
    let s = script(name);
    let mut args: Vec<String> = vec![s];
    for (k, v) in env {
        args.push("-e".into());
        args.push(format!("{k}={v}"));
    }
    let all: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run(&format!("k6-{}", name.trim_end_matches(".js")), &all);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    r
}

/// k6's exit code and summary export for `name`, or `None` without k6.
fn k6(name: &str, env: &[(&str, String)]) -> Option<(i32, Value, String)> {
    let k6 = k6_or_skip()?;
    let work = tmp("k6-http-more");
    let export = work.join("export.json");
    let mut cmd = Command::new(k6);
    cmd.current_dir(&*work)
        .env("K6_NO_USAGE_REPORT", "true")
        .args(["run", "--quiet", "--no-color", "--summary-export"])
        .arg(&export);
    for (k, v) in env {
        cmd.args(["-e", &format!("{k}={v}")]);
    }
    let out = cmd.arg(script(name)).output().expect("running k6");
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(export.is_file(), "k6 wrote no summary: {log}");
    Some((out.status.code().unwrap_or(-1), read_json(&export), log))
}

/// pado's checks as (passes, fails) summed.
fn checks(s: &Value) -> (u64, u64) {
    let mut p = (0, 0);
    for (_, c) in s["checks"].as_object().into_iter().flatten() {
        p.0 += c["passes"].as_f64().unwrap_or(0.0) as u64;
        p.1 += c["fails"].as_f64().unwrap_or(0.0) as u64;
    }
    p
}

/// k6's checks as (passes, fails).
fn k6_checks(export: &Value) -> (u64, u64) {
    let c = &export["metrics"]["checks"];
    (
        c["passes"].as_f64().unwrap_or(0.0) as u64,
        c["fails"].as_f64().unwrap_or(0.0) as u64,
    )
}

/// Each request the server received: its target and the Cookie header it
/// carried (empty for none), in the order received.
fn cookies_seen(srv: &TestServer) -> Vec<(String, String)> {
    srv.records()
        .iter()
        .map(|r| {
            let c = r
                .headers
                .iter()
                .filter(|(k, _)| k.eq_ignore_ascii_case("cookie"))
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
                .join("; ");
            (r.target.clone(), c)
        })
        .collect()
}

#[test]
fn cookie_jars_send_what_k6s_send_request_by_request() {
    let srv = TestServer::start();
    let r = pado("cookie_jars.js", &[("BASE", srv.base_url())]);
    let s = r.summary();
    // 3 iterations × 8 requests, 4 checks each, all passing.
    assert_eq!(num(&s, "requests"), 24.0);
    assert_eq!(srv.stats().requests, 24);
    assert_eq!(checks(&s), (12, 0), "{:#}", s["checks"]);
    let seen = cookies_seen(&srv);
    // What the script's logic implies, request by request: each iteration
    // starts with an empty VU jar, so every one is the same with its own number.
    for i in 0..3 {
        let at = |t: &str| {
            seen.iter()
                .find(|(target, _)| target == t)
                .map(|(_, c)| c.as_str())
                .unwrap_or_else(|| panic!("no request {t} in {seen:?}"))
        };
        assert_eq!(at(&format!("/set-cookie?sid=s{i}")), "", "iteration {i}");
        assert_eq!(at(&format!("/vu-jar?i={i}")), format!("sid=s{i}; lang=ko"));
        assert_eq!(
            at(&format!("/null-jar?i={i}")),
            format!("sid=s{i}; lang=ko")
        );
        assert_eq!(at(&format!("/own-jar?i={i}")), format!("mine=m{i}"));
        assert_eq!(at(&format!("/set-cookie?late={i}")), format!("mine=m{i}"));
        assert_eq!(at(&format!("/after-delete?i={i}")), format!("sid=s{i}"));
        assert_eq!(at(&format!("/after-clear?i={i}")), "");
        assert_eq!(
            at(&format!("/own-again?i={i}")),
            format!("mine=m{i}; late={i}")
        );
    }
    // k6 against a fresh server: the same Cookie header on every request.
    let srv2 = TestServer::start();
    let Some((code, export, log)) = k6("cookie_jars.js", &[("BASE", srv2.base_url())]) else {
        return;
    };
    assert_eq!(code, 0, "{log}");
    assert_eq!(cookies_seen(&srv2), seen);
    assert_eq!(k6_checks(&export), checks(&s));
}

/// The most requests the server was working on at once: each held from its
/// arrival for `d` (the server's own delay), the server's records swept in
/// time order (an answer that ended before another arrived does not overlap).
fn most_at_once(records: &[RequestRecord], d: Duration) -> usize {
    let mut events: Vec<(std::time::Instant, i32)> = Vec::new();
    for r in records {
        events.push((r.received_at, 1));
        events.push((r.received_at + d, -1));
    }
    // Ends before starts at the same instant.
    events.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, e) in events {
        now += e;
        most = most.max(now);
    }
    most as usize
}

/// The five-request batch's records, the named batch's left out.
fn five(srv: &TestServer) -> Vec<RequestRecord> {
    srv.records()
        .into_iter()
        .filter(|r| r.target.contains("?i="))
        .collect()
}

#[test]
fn a_batch_goes_out_at_once_each_on_its_own_connection_and_batch_limits_it() {
    const D: u64 = 400;
    let d = Duration::from_millis(D);
    let srv = TestServer::start();
    let env = [("BASE", srv.base_url()), ("DELAY", D.to_string())];
    let r = pado("batch.js", &env);
    let s = r.summary();
    assert_eq!(num(&s, "requests"), 7.0);
    assert_eq!(srv.stats().requests, 7);
    assert_eq!(checks(&s), (4, 0), "{:#}", s["checks"]);
    let recs = five(&srv);
    assert_eq!(recs.len(), 5);
    // All five in flight together (one after another would be 1 at a time).
    assert_eq!(most_at_once(&recs, d), 5, "{recs:?}");
    let mut conns: Vec<u64> = recs.iter().map(|r| r.connection_id).collect();
    conns.sort_unstable();
    conns.dedup();
    assert_eq!(conns.len(), 5, "each on a connection of its own");
    // `batch: 2`: never more than two at once.
    let srv2 = TestServer::start();
    let env2 = [
        ("BASE", srv2.base_url()),
        ("DELAY", D.to_string()),
        ("BATCH", "2".to_string()),
    ];
    let r2 = pado("batch.js", &env2);
    assert_eq!(checks(&r2.summary()), (4, 0));
    assert_eq!(most_at_once(&five(&srv2), d), 2);
    // k6 on the same script: the same overlap and connections.
    let srv3 = TestServer::start();
    let env3 = [("BASE", srv3.base_url()), ("DELAY", D.to_string())];
    let Some((code, export, log)) = k6("batch.js", &env3) else {
        return;
    };
    assert_eq!(code, 0, "{log}");
    assert_eq!(k6_checks(&export), (4, 0));
    let k = five(&srv3);
    assert_eq!(most_at_once(&k, d), 5);
    let srv4 = TestServer::start();
    let env4 = [
        ("BASE", srv4.base_url()),
        ("DELAY", D.to_string()),
        ("BATCH", "2".to_string()),
    ];
    let (code, _, log) = k6("batch.js", &env4).expect("k6 ran once already");
    assert_eq!(code, 0, "{log}");
    assert_eq!(most_at_once(&five(&srv4), d), 2);
}

#[test]
fn a_vu_keeps_its_batchs_connections_for_the_next_as_k6() {
    // Two iterations of the batch of five and the batch of two: the second
    // iteration goes on the connections the first opened.
    let env = |srv: &TestServer| {
        [
            ("BASE", srv.base_url()),
            ("DELAY", "50".to_string()),
            ("ITERS", "2".to_string()),
        ]
    };
    let srv = TestServer::start();
    let r = pado("batch.js", &env(&srv));
    assert_eq!(checks(&r.summary()), (8, 0));
    let st = srv.stats();
    assert_eq!(st.requests, 14);
    let srv2 = TestServer::start();
    let Some((code, _, log)) = k6("batch.js", &env(&srv2)) else {
        assert_eq!(st.connections, 5);
        return;
    };
    assert_eq!(code, 0, "{log}");
    assert_eq!(srv2.stats().requests, 14);
    assert_eq!(
        st.connections,
        srv2.stats().connections,
        "pado's against k6's"
    );
}

#[test]
fn https_targets_offering_h2_get_http2_as_in_k6() {
    let h2 = H2Server::start(H2Options {
        tls: true,
        ..H2Options::default()
    })
    .unwrap();
    let h1 = TestServer::start_with(ServerOptions {
        tls: true,
        ..ServerOptions::default()
    });
    let env = |h2: &H2Server, h1: &TestServer| {
        [
            ("H2", format!("https://{}", h2.addr)),
            ("H1", h1.base_url()),
            ("DELAY", "300".to_string()),
        ]
    };
    let r = pado("http2.js", &env(&h2, &h1));
    let s = r.summary();
    // 2 iterations: an h2 request and a batch of 3 over h2, an h1 request.
    assert_eq!(checks(&s), (10, 0), "{:#}", s["checks"]);
    assert_eq!(h2.requests(), 8);
    assert_eq!(h1.stats().requests, 2);
    // The VU's one HTTP/2 connection, its batch multiplexed on it.
    assert_eq!(h2.connections(), 1);
    assert_eq!(h2.max_concurrent(), 3);
    let h2b = H2Server::start(H2Options {
        tls: true,
        ..H2Options::default()
    })
    .unwrap();
    let h1b = TestServer::start_with(ServerOptions {
        tls: true,
        ..ServerOptions::default()
    });
    let Some((code, export, log)) = k6("http2.js", &env(&h2b, &h1b)) else {
        return;
    };
    assert_eq!(code, 0, "{log}");
    assert_eq!(k6_checks(&export), checks(&s));
    assert_eq!(h2b.requests(), 8);
    assert_eq!(h1b.stats().requests, 2);
}
