//! HTTP/2: exact counts against the server's, streams multiplexed on shared
//! connections (`max_streams`), phases, `GOAWAY` and stream resets by category, and
//! ALPN (`auto` negotiates h2 or falls back; `2` fails clearly without h2).

use pado_testkit::h2server::{H2Options, H2Server};
use pado_testkit::{ServerOptions, TestServer};

use crate::harness::{fixture, num, run, tmp, write_file, write_fixture};

fn run_file(name: &str, text: &str, extra: &[&str]) -> crate::harness::Run {
    let dir = tmp(name);
    let f = write_file(&dir, "s.yaml", text);
    let mut args = vec![
        f.to_str().unwrap().to_string(),
        "--workers".into(),
        "1".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(name, &args)
}

#[test]
fn h2c_counts_are_exact_and_streams_share_connections() {
    let srv = H2Server::start(H2Options::default()).unwrap();
    let base = format!("http://{}", srv.addr);
    // 20 VUs, 10 streams per connection, one worker: two connections, several
    // streams in flight on one (each request waits 50 ms at the server).
    let r = run_file(
        "h2-mux",
        &fixture(
            "http2_h2c_counts_are_exact_and_streams_share_connections.yaml",
            &[("target", base.to_string())],
        ),
        &[],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    assert_eq!(num(&s, "requests"), 100.0, "{s}");
    assert_eq!(srv.requests(), 100);
    assert_eq!(num(&s, "failed"), 0.0, "{s}");
    assert_eq!(srv.connections(), 2, "20 VUs / 10 streams each");
    assert!(srv.max_concurrent() >= 2, "{}", srv.max_concurrent());
    assert!(srv.max_concurrent() <= 10, "{}", srv.max_concurrent());
    // Phases: the planted delay is the waiting time.
    let wait = num(&s, "phases_ms.http_req_waiting.p50");
    assert!((50.0..150.0).contains(&wait), "waiting p50 {wait}");
    assert!(s["phases_ms"]["http_req_connecting"].is_object(), "{s}");
    assert!(num(&s, "phases_ms.http_req_receiving.p50") < 50.0, "{s}");
}

#[test]
fn one_stream_per_connection_gives_a_connection_per_vu() {
    let srv = H2Server::start(H2Options::default()).unwrap();
    let base = format!("http://{}", srv.addr);
    let r = run_file(
        "h2-one",
        &fixture(
            "http2_one_stream_per_connection_gives_a_connection_per_vu.yaml",
            &[("target", base.to_string())],
        ),
        &["--http2"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    assert_eq!(num(&s, "requests"), 20.0, "{s}");
    assert_eq!(srv.requests(), 20);
    assert_eq!(srv.connections(), 4);
    assert_eq!(srv.max_concurrent(), 1);
}

#[test]
fn goaway_is_counted_and_the_connection_replaced() {
    let srv = H2Server::start(H2Options {
        goaway_after: Some(5),
        ..Default::default()
    })
    .unwrap();
    let base = format!("http://{}", srv.addr);
    let r = run_file(
        "h2-goaway",
        &fixture(
            "http2_goaway_is_counted_and_the_connection_replaced.yaml",
            &[("target", base.to_string())],
        ),
        &[],
    );
    let s = r.summary();
    // Every 6th request on a connection is refused by GOAWAY; the run goes on.
    let goaways = srv.goaways() as f64;
    assert!(goaways >= 2.0, "{goaways}");
    assert_eq!(num(&s, "errors.goaway"), goaways, "{s}");
    assert_eq!(num(&s, "requests"), 20.0, "{s}");
    assert_eq!(srv.requests() as f64, 20.0 - goaways);
    assert_eq!(srv.connections() as f64, goaways + 1.0);
    assert_eq!(num(&s, "failed"), goaways, "{s}");
}

#[test]
fn a_reset_stream_is_counted_with_its_category() {
    let srv = H2Server::start(H2Options::default()).unwrap();
    let base = format!("http://{}", srv.addr);
    let r = run_file(
        "h2-reset",
        &fixture(
            "http2_a_reset_stream_is_counted_with_its_category.yaml",
            &[("target", base.to_string())],
        ),
        &[],
    );
    let s = r.summary();
    assert_eq!(srv.resets(), 6);
    assert_eq!(num(&s, "errors.stream_reset"), 6.0, "{s}");
    let failures = std::fs::read_to_string(r.dir.join("failures.jsonl")).unwrap_or_default();
    assert!(failures.contains("REFUSED_STREAM"), "{failures}");
}

#[test]
fn auto_over_tls_negotiates_h2_or_falls_back_to_http1() {
    let h2 = H2Server::start(H2Options {
        tls: true,
        ..Default::default()
    })
    .unwrap();
    let base = format!("https://localhost:{}", h2.addr.port());
    let r = run_file(
        "h2-auto",
        &fixture(
            "http2_auto_over_tls_negotiates_h2_or_falls_back_to_http1.yaml",
            &[("target", base.to_string())],
        ),
        &[],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert_eq!(num(&r.summary(), "requests"), 20.0);
    assert_eq!(h2.requests(), 20, "spoken over h2");
    assert_eq!(h2.connections(), 1, "4 VUs share one connection");

    let h1 = TestServer::start_with(ServerOptions {
        tls: true,
        ..Default::default()
    });
    let base = h1.base_url().replace("127.0.0.1", "localhost");
    let r = run_file(
        "h2-auto-h1",
        &fixture(
            "http2_auto_over_tls_negotiates_h2_or_falls_back_to_http1.yaml",
            &[("target", base.to_string())],
        ),
        &[],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    assert_eq!(num(&s, "requests"), 20.0, "{s}");
    assert_eq!(num(&s, "failed"), 0.0, "{s}");
    assert_eq!(h1.stats().requests, 20, "fell back to HTTP/1.1");
}

#[test]
fn http2_required_against_an_http1_server_fails_with_a_clear_category() {
    let h1 = TestServer::start_with(ServerOptions {
        tls: true,
        ..Default::default()
    });
    let base = h1.base_url().replace("127.0.0.1", "localhost");
    let r = run_file(
        "h2-required",
        &fixture(
            "http2_http2_required_against_an_http1_server_fails_with_a_clear_category.yaml",
            &[("target", base.to_string())],
        ),
        &["--http2"],
    );
    let s = r.summary();
    assert_eq!(num(&s, "errors.h2_not_negotiated"), 4.0, "{s}");
    assert_eq!(h1.stats().requests, 0);
    let failures = std::fs::read_to_string(r.dir.join("failures.jsonl")).unwrap_or_default();
    assert!(failures.contains("ALPN"), "{failures}");
}

/// h2c (prior knowledge) against a server that speaks only HTTP/1.1: the server
/// answers the preface with `HTTP/1.1 400`, which HTTP/2 would read as a frame too
/// large (`FRAME_SIZE_ERROR`, counted as `goaway` before). Every request is named
/// `h2c_unsupported`, with the way out in the reason.
#[test]
fn h2c_against_an_http1_server_names_the_cause() {
    let h1 = TestServer::start();
    let r = run_file(
        "h2c-vs-h1",
        &fixture(
            "http2_h2c_against_an_http1_server_names_the_cause.yaml",
            &[("target", h1.base_url())],
        ),
        &["--http2"],
    );
    let s = r.summary();
    assert_eq!(num(&s, "errors.h2c_unsupported"), 6.0, "{s}");
    assert!(s["errors"].get("goaway").is_none(), "{s}");
    assert_eq!(h1.stats().requests, 0, "no HTTP/1.1 request was made");
    let failures = std::fs::read_to_string(r.dir.join("failures.jsonl")).unwrap_or_default();
    assert!(
        failures.contains("the server answered in HTTP/1.1"),
        "{failures}"
    );
}

#[test]
fn once_shows_an_http2_exchange() {
    let srv = H2Server::start(H2Options::default()).unwrap();
    let base = format!("http://{}", srv.addr);
    let dir = tmp("h2-once");
    let f = write_fixture(
        &dir,
        "http2_once_shows_an_http2_exchange.yaml",
        "s.yaml",
        &[("target", base.to_string())],
    );
    let out = crate::harness::pado(&["run", f.to_str().unwrap(), "--once"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert_eq!(srv.requests(), 1);
    assert!(text.contains("get → 200"), "{text}");
    assert!(text.contains("waiting"), "{text}");
}

/// Compressed HTTP/2 responses are decoded as over HTTP/1.1: checks see the text,
/// and both sizes are exactly what the server encoded and the text it encoded.
#[test]
fn http2_encoded_responses_are_decoded_and_counted() {
    let srv = H2Server::start(H2Options::default()).unwrap();
    let base = format!("http://{}", srv.addr);
    let codings = ["gzip", "br", "zstd", "deflate"];
    let mut flow = String::new();
    for c in codings {
        flow.push_str(&format!(
            "      - name: {c}\n        request: /encoded/{c}?n=200\n        check: {{ body_contains: \"line 199 of what pado should decode\" }}\n"
        ));
    }
    let text = fixture(
        "http2_encoded.yaml",
        &[("base", base.to_string()), ("flow", flow.to_string())],
    );
    let r = run_file("h2-encoded", &text, &[]);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    let iterations = 6u64;
    assert_eq!(num(&s, "requests") as u64, 4 * iterations, "{s}");
    assert_eq!(srv.requests(), 4 * iterations);
    assert_eq!(num(&s, "failed"), 0.0, "{s}");
    let encoded: u64 = codings
        .iter()
        .map(|c| pado_testkit::encoded_body(c, 200).unwrap().len() as u64)
        .sum();
    let decoded = 4 * pado_testkit::decoded_text(200).len() as u64;
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
}
