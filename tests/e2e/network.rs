//! The network around a request: name resolution timed as `http_req_dns`, HTTP
//! proxies (CONNECT tunnels, `NO_PROXY`, credentials, refusals) and compressed
//! responses, each checked against what a test server counted.

use pado_metrics::LatencyHistogram;
use pado_testkit::h2server::{H2Options, H2Server};
use pado_testkit::{ProxyOptions, ProxyServer, ServerOptions, TestServer};

use crate::harness::{fixture, num, run, run_env, tmp, write_file, Run};

/// The run's `http_req_dns` values from its timeline: (how many were recorded,
/// how many were more than 0 µs).
fn dns_counts(r: &Run) -> (u64, u64) {
    let mut all = LatencyHistogram::new();
    for line in r.timeline() {
        for s in line["series"].as_array().unwrap() {
            if let Some(enc) = s["hist"]["dns"].as_str() {
                all.add(&LatencyHistogram::decode(enc).unwrap());
            }
        }
    }
    let nonzero = (all.share_above_us(0) * all.count() as f64).round() as u64;
    (all.count(), nonzero)
}

fn proxied_file(dir: &std::path::Path, target: &str, defaults: &str) -> String {
    let text = fixture(
        "network_closed.yaml",
        &[
            ("target", target.to_string()),
            ("defaults", defaults.to_string()),
        ],
    );
    write_file(dir, "s.yaml", &text)
        .to_str()
        .unwrap()
        .to_string()
}

/// A name is resolved when a connection is made: with `ttl: 0s` every new
/// connection has a lookup (> 0) and a request on a kept-alive connection has 0,
/// so the requests with a lookup are exactly the connections the server accepted.
#[test]
fn dns_is_timed_once_per_new_connection() {
    for (policy, name) in [("per-request", "dns-per-request"), ("per-vu", "dns-per-vu")] {
        let srv = TestServer::start();
        let dir = tmp(name);
        let target = format!("http://localhost:{}", srv.addr().port());
        let file = proxied_file(
            &dir,
            &target,
            &format!("  connections: {policy}\n  dns:\n    ttl: 0s\n"),
        );
        let r = run(name, &[&file]);
        assert_eq!(r.code(), 0, "{}", r.stderr());
        let s = r.summary();
        let requests = num(&s, "requests") as u64;
        let stats = srv.stats();
        assert_eq!(requests, stats.requests);
        let (recorded, looked_up) = dns_counts(&r);
        assert_eq!(recorded, requests, "every request records the phase");
        assert_eq!(looked_up, stats.connections, "{policy}: {s}");
        if policy == "per-vu" {
            assert!(requests > stats.connections, "{requests} requests");
        }
        assert!(num(&s, "phases_ms.http_req_dns.max") > 0.0, "{s}");
    }
}

/// The default cache (5 minutes, as k6) answers every connection after the first
/// lookups: at most one lookup per VU racing at the start.
#[test]
fn dns_answers_are_cached_for_the_run_by_default() {
    let srv = TestServer::start();
    let dir = tmp("dns-cached");
    let target = format!("http://localhost:{}", srv.addr().port());
    let file = proxied_file(&dir, &target, "  connections: per-request\n");
    let r = run("dns-cached", &[&file]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let (recorded, looked_up) = dns_counts(&r);
    assert!(srv.stats().connections > 10, "{:?}", srv.stats());
    assert_eq!(recorded, srv.stats().requests);
    assert!((1..=2).contains(&looked_up), "{looked_up} lookups");
    // An IP address is never looked up.
    let r = run(
        "dns-ip",
        &["--url", &srv.url("/"), "--vus", "1", "--duration", "1s"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert_eq!(dns_counts(&r).1, 0);
}

/// Every connection goes through the proxy's tunnel: as many tunnels as the target
/// accepted connections, every request counted by the target.
#[test]
fn requests_go_through_the_proxy_of_the_environment_or_the_flag() {
    let srv = TestServer::start();
    let proxy = ProxyServer::start(ProxyOptions::default());
    let url = srv.url("/");
    let args = [
        "--url",
        &url,
        "--vus",
        "2",
        "--duration",
        "1s",
        "--connections",
        "per-iteration",
    ];
    let r = run_env("proxy-env", &args, &[("HTTP_PROXY", &proxy.url())]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    let (p, t) = (proxy.stats(), srv.stats());
    assert!(t.requests > 4, "{t:?}");
    assert_eq!(num(&s, "requests") as u64, t.requests);
    assert_eq!(p.tunnels, t.connections, "{p:?} {t:?}");
    assert_eq!(p.connects, p.tunnels);
    assert_eq!(p.targets.len(), 1, "{p:?}");

    // NO_PROXY bypasses it; --no-proxy ignores the environment.
    for (name, env, extra) in [
        (
            "proxy-bypass",
            vec![
                ("http_proxy", proxy.url()),
                ("NO_PROXY", "127.0.0.1".to_string()),
            ],
            None,
        ),
        (
            "proxy-off",
            vec![("ALL_PROXY", proxy.url())],
            Some("--no-proxy"),
        ),
    ] {
        let before = proxy.stats().connects;
        let mut a = args.to_vec();
        a.extend(extra);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let r = run_env(name, &a, &env);
        assert_eq!(r.code(), 0, "{}", r.stderr());
        assert!(num(&r.summary(), "requests") > 0.0);
        assert_eq!(proxy.stats().connects, before, "{name}");
    }

    // The flag, with credentials the proxy asks for.
    let locked = ProxyServer::start(ProxyOptions {
        credentials: Some(("load".into(), "s3cret".into())),
        ..Default::default()
    });
    let good = locked.url_with("load", "s3cret");
    let mut a = args.to_vec();
    a.extend(["--proxy", &good]);
    let before = srv.stats();
    let r = run("proxy-auth", &a);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let (p, t) = (locked.stats(), srv.stats());
    assert_eq!(p.auth_refused, 0);
    assert_eq!(p.tunnels, t.connections - before.connections);
    assert_eq!(
        num(&r.summary(), "requests") as u64,
        t.requests - before.requests
    );
}

/// A proxy that refuses the tunnel (407 without credentials, 502) fails the
/// requests as `proxy`, each one counted, and nothing reaches the target.
#[test]
fn a_refusing_proxy_is_a_proxy_error() {
    let srv = TestServer::start();
    let locked = ProxyServer::start(ProxyOptions {
        credentials: Some(("load".into(), "s3cret".into())),
        ..Default::default()
    });
    let bad_gateway = ProxyServer::start(ProxyOptions {
        refuse_with: Some(502),
        ..Default::default()
    });
    let url = srv.url("/");
    for (name, proxy, url_of) in [
        ("proxy-407", &locked, locked.url_with("load", "wrong")),
        ("proxy-502", &bad_gateway, bad_gateway.url()),
    ] {
        let r = run(
            name,
            &[
                "--url",
                &url,
                "--vus",
                "1",
                "--duration",
                "1s",
                "--proxy",
                &url_of,
            ],
        );
        let s = r.summary();
        let refused = proxy.stats();
        let n = num(&s, "requests") as u64;
        assert!(n > 0, "{s}");
        assert_eq!(num(&s, "errors.proxy") as u64, n, "{s}");
        assert_eq!(refused.connects, n, "{refused:?}");
        assert_eq!(refused.tunnels, 0);
        // The password never reaches the results.
        for f in ["summary.json", "run.json", "failures.jsonl"] {
            let text = std::fs::read_to_string(r.dir.join(f)).unwrap_or_default();
            assert!(!text.contains("wrong"), "{f}: {text}");
        }
    }
    assert_eq!(locked.stats().auth_refused, locked.stats().connects);
    assert_eq!(srv.stats().requests, 0);
}

/// https through the tunnel: TLS to the origin inside CONNECT, trusted through
/// the test server's own certificate (`--ca-cert`), over HTTP/1.1 and over HTTP/2
/// (whose pool connects through the same function).
#[test]
fn tls_goes_through_connect_to_the_origin() {
    let h1 = TestServer::start_with(ServerOptions {
        tls: true,
        ..Default::default()
    });
    let h2 = H2Server::start(H2Options {
        tls: true,
        ..Default::default()
    })
    .unwrap();
    let cases: [(&str, String, String, Option<&str>); 2] = [
        ("proxy-tls", h1.url("/"), h1.cert_pem().unwrap(), None),
        (
            "proxy-tls-h2",
            format!("https://{}/", h2.addr),
            h2.cert_pem.clone().unwrap(),
            Some("--http2"),
        ),
    ];
    for (name, url, pem, extra) in cases {
        let proxy = ProxyServer::start(ProxyOptions::default());
        let dir = tmp(name);
        let ca = write_file(&dir, "ca.pem", &pem);
        let mut a = vec![
            "--url",
            &url,
            "--vus",
            "2",
            "--duration",
            "1s",
            "--ca-cert",
            ca.to_str().unwrap(),
        ];
        a.extend(extra);
        let r = run_env(name, &a, &[("HTTPS_PROXY", &proxy.url())]);
        assert_eq!(r.code(), 0, "{}", r.stderr());
        let s = r.summary();
        let p = proxy.stats();
        let (requests, connections) = if extra.is_some() {
            (h2.requests(), h2.connections())
        } else {
            (h1.stats().requests, h1.stats().connections)
        };
        assert!(requests > 0);
        assert_eq!(num(&s, "requests") as u64, requests, "{s}");
        assert_eq!(num(&s, "failed"), 0.0, "{s}");
        assert_eq!(p.tunnels, connections, "{p:?}");
        assert!(
            num(&s, "phases_ms.http_req_tls_handshaking.max") > 0.0,
            "{s}"
        );
    }
}

/// Compressed responses: asked for with `defaults.compression`, decoded for checks
/// (which see the text, not the bytes sent), counted before and after exactly as
/// the server encoded them; a corrupt body is a `decode` failure and the run goes on.
#[test]
fn encoded_responses_are_decoded_for_checks_and_counted_before_and_after() {
    let srv = TestServer::start();
    let dir = tmp("compression");
    let codings = ["gzip", "br", "zstd", "deflate"];
    let mut flow = String::new();
    for c in codings {
        flow.push_str(&format!(
            "      - name: {c}\n        request: /encoded/{c}?n=300\n        check: {{ body_contains: \"line 299 of what pado should decode\" }}\n"
        ));
    }
    flow.push_str("      - name: gzip-chunked\n        request: /encoded/gzip?n=300&chunked=1\n        check: { body_contains: \"end\" }\n");
    flow.push_str("      - name: corrupt\n        request: /encoded/corrupt\n");
    flow.push_str("      - name: headers\n        request: /headers\n        check: { body_contains: 'accept-encoding\":\"gzip, br, zstd, deflate' }\n");
    let text = fixture(
        "network_compressed.yaml",
        &[("target", srv.base_url()), ("flow", flow.to_string())],
    );
    let file = write_file(&dir, "s.yaml", &text);
    let r = run("compression", &[file.to_str().unwrap()]);
    let s = r.summary();
    let iterations = 10u64;
    assert_eq!(num(&s, "requests") as u64, 7 * iterations, "{s}");
    assert_eq!(num(&s, "errors.decode") as u64, iterations, "{s}");
    assert_eq!(
        num(&s, "failed") as u64,
        iterations,
        "only the corrupt ones: {s}"
    );
    for c in codings {
        let key = format!("{c}: body contains \"line 299 of what pado should decode\"");
        assert_eq!(s["checks"][&key]["fails"], 0, "{key}: {s}");
        assert_eq!(s["checks"][&key]["passes"], iterations, "{key}: {s}");
    }
    // Exact sizes: what the server encoded, and the text it encoded.
    let encoded: u64 = codings
        .iter()
        .map(|c| pado_testkit::encoded_body(c, 300).unwrap().len() as u64)
        .sum::<u64>()
        + pado_testkit::encoded_body("gzip", 300).unwrap().len() as u64;
    let decoded = 5 * pado_testkit::decoded_text(300).len() as u64;
    assert_eq!(
        num(&s, "data_received_encoded") as u64,
        iterations * encoded,
        "{s}"
    );
    assert_eq!(
        num(&s, "data_received_decoded") as u64,
        iterations * decoded,
        "{s}"
    );
    assert!(num(&s, "data_received") as u64 > iterations * encoded);
    // The failure sample names the reason.
    let failures = std::fs::read_to_string(r.dir.join("failures.jsonl")).unwrap();
    assert!(
        failures.contains("not valid for its Content-Encoding"),
        "{failures}"
    );

    // Without `compression`, nothing is asked for (as wrk and oha).
    let plain = TestServer::start();
    let r = run(
        "compression-off",
        &[
            "--url",
            &plain.url("/headers"),
            "--vus",
            "1",
            "--iterations",
            "1",
            "--http-debug=full",
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let shown = format!("{}{}", r.stdout(), r.stderr()).to_ascii_lowercase();
    assert!(
        shown.contains("\"user-agent\""),
        "the debug output shows the server's view: {shown}"
    );
    assert!(!shown.contains("accept-encoding"), "{shown}");
}

/// A WebSocket handshake goes through the same tunnel: one CONNECT per session.
#[test]
fn websocket_sessions_go_through_the_proxy() {
    let srv = pado_testkit::WsServer::start();
    let proxy = ProxyServer::start(ProxyOptions::default());
    let dir = tmp("proxy-ws");
    let text = fixture(
        "network_ws_through_proxy.yaml",
        &[("target", srv.http_base_url())],
    );
    let file = write_file(&dir, "ws.yaml", &text);
    let r = run_env(
        "proxy-ws",
        &[file.to_str().unwrap()],
        &[("http_proxy", &proxy.url())],
    );
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let st = srv.stats();
    assert_eq!(st.sessions, 6, "{st:?}");
    assert_eq!(proxy.stats().tunnels, 6, "{:?}", proxy.stats());
    assert_eq!(num(&r.summary()["steps"]["echo"]["ws"], "sessions"), 6.0);
}

/// A brotli bomb (64 MiB of zeros in a few KiB): pado stops decoding at its cap
/// (16 MiB with the default `max_body`) and fails each such response as `decode`,
/// naming the cap, though no check reads the body; an ordinary brotli answer in the
/// same flow still decodes and passes its check. With `max_body: 64MiB` the cap is
/// 256 MiB: the bomb decodes whole and passes, and pado's own CPU figure for that
/// run is the reference the capped run must stay well under (before the cap
/// followed `max_body`, both decoded the whole bomb).
#[test]
fn a_brotli_bomb_fails_as_decode_at_the_cap() {
    let srv = TestServer::start();
    let dir = tmp("brotli-bomb");
    let bomb_plan = |defaults: &str| {
        fixture(
            "network_brotli_bomb.yaml",
            &[
                ("target", srv.base_url()),
                ("defaults", defaults.to_string()),
            ],
        )
    };
    // pado's own CPU figure for a whole run (its workers, each second of the
    // timeline).
    let cpu_ns = |r: &Run| -> f64 {
        r.timeline()
            .iter()
            .filter_map(|l| l.get("generator"))
            .map(|g| num(g, "cpu_ns"))
            .sum()
    };
    let file = write_file(&dir, "s.yaml", &bomb_plan(""));
    let r = run("brotli-bomb", &[file.to_str().unwrap()]);
    let s = r.summary();
    let bomb = &s["steps"]["bomb"];
    assert_eq!(num(bomb, "requests"), 5.0, "{bomb:#}");
    assert_eq!(num(bomb, "errors.decode"), 5.0, "{bomb:#}");
    let plain = &s["steps"]["plain"];
    assert_eq!(num(plain, "failed"), 0.0, "{plain:#}");
    assert_eq!(num(&s, "failed"), 5.0, "only the bombs: {s:#}");
    let failures = std::fs::read_to_string(r.dir.join("failures.jsonl")).unwrap();
    assert!(
        failures.contains("decoded body larger than 16 MiB"),
        "{failures}"
    );
    // The cap follows max_body: 4 × 64 MiB lets the whole bomb through.
    let big = write_file(
        &dir,
        "big.yaml",
        &bomb_plan("defaults:\n  max_body: 64MiB\n"),
    );
    let whole = run("brotli-bomb-whole", &[big.to_str().unwrap()]);
    let w = whole.summary();
    assert_eq!(num(&w, "failed"), 0.0, "{w:#}");
    assert_eq!(
        num(&w, "data_received_decoded") as u64,
        5 * ((64 << 20) + pado_testkit::decoded_text(300).len() as u64),
        "{w:#}"
    );
    let (capped, full) = (cpu_ns(&r), cpu_ns(&whole));
    assert!(
        capped < 0.6 * full,
        "capped run {capped} ns of CPU, whole bombs {full} ns"
    );
}
