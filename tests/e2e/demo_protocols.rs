//! The demo target speaks what pado speaks, on one port: the docs' HTTP/2,
//! WebSocket, gRPC and compression examples run as written against it (started as
//! `pado target serve` starts it), every request counted by pado as the target
//! served it.

use pado_demo_target::TargetOptions;
use serde_json::Value;

use crate::harness::{
    demo_target, fixture, num, run_env, serve_printing_url, tmp, write_file, write_fixture,
};

/// The first ```yaml block after the heading `heading` of docs/scenario.md, with
/// the docs' port replaced by `base`'s.
fn docs_example(heading: &str, base: &str) -> String {
    let md = include_str!("../../docs/scenario.md");
    let at = md
        .find(heading)
        .unwrap_or_else(|| panic!("{heading} in the docs"));
    let start = at + md[at..].find("```yaml\n").unwrap() + "```yaml\n".len();
    let len = md[start..].find("```").unwrap();
    md[start..start + len]
        .replace("http://127.0.0.1:8080", base)
        .replace("https://127.0.0.1:8443", base)
}

/// Runs `yaml` with `args` (and `TOKEN` set); exit 0, nothing failed.
fn passes(name: &str, yaml: &str, args: &[&str]) -> Value {
    let dir = tmp(name);
    let f = write_file(&dir, "s.yaml", yaml);
    let mut all = vec![f.to_str().unwrap()];
    all.extend_from_slice(args);
    let r = run_env(name, &all, &[("TOKEN", "t0ken")]);
    assert_eq!(r.code(), 0, "{name}: {}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    assert_eq!(num(&s, "failed"), 0.0, "{name}: {:#}", s["errors"]);
    for (check, c) in s["checks"].as_object().unwrap() {
        assert_eq!(num(c, "fails"), 0.0, "{name}: check {check} failed");
    }
    s
}

/// `--http2` against the demo target over cleartext: h2c, every request answered,
/// each counted by the target (an HTTP/1.1-only target failed all of them).
#[test]
fn h2c_against_the_demo_target_is_all_ok() {
    let t = demo_target(TargetOptions::default());
    let before = t.requests_served();
    let s = passes(
        "demo-h2c",
        &fixture("demo_protocols_get_post.yaml", &[("target", t.base_url())]),
        &["--http2"],
    );
    assert_eq!(num(&s, "requests"), 20.0, "{s}");
    assert_eq!(t.requests_served() - before, 20);
}

/// `pado target serve --tls` (the binary, port 0): HTTP/2 over TLS with ALPN h2,
/// the docs' HTTP/2 example as written; with `--http2` a server that did not choose
/// h2 would fail every request as `h2_not_negotiated`.
#[test]
fn tls_with_alpn_h2_against_pado_target_serve() {
    let (mut child, base) = serve_printing_url(&[
        "target",
        "serve",
        "--tls",
        "--port",
        "0",
        "--posts",
        "200",
        "--exit-after",
        "120s",
    ]);
    assert!(base.starts_with("https://"), "{base}");
    let yaml = docs_example("## HTTP/2", &base);
    let s = passes("demo-tls-h2", &yaml, &["--vus", "4", "--duration", "2s"]);
    assert!(num(&s, "requests") > 0.0, "{s}");
    assert!(s["errors"].get("h2_not_negotiated").is_none(), "{s}");
    // Over HTTP/1.1 on the same port and TLS too.
    let s = passes(
        "demo-tls-h1",
        &fixture(
            "demo_protocols_tls_with_alpn_h2_against_pado_target_serve.yaml",
            &[("target", base.to_string())],
        ),
        &[],
    );
    assert_eq!(num(&s, "requests"), 20.0, "{s}");
    let _ = child.kill();
    let _ = child.wait();
}

/// The docs' WebSocket example against `/ws/echo`, plus the live feed.
#[test]
fn the_websocket_example_runs_against_the_demo_target() {
    let t = demo_target(TargetOptions::default());
    let yaml = docs_example("## WebSocket", &t.base_url());
    let s = passes("demo-ws", &yaml, &["--vus", "2", "--duration", "3s"]);
    let ws = &s["steps"]["chat"]["ws"];
    assert!(num(ws, "sessions") >= 2.0, "{ws:#}");
    assert_eq!(num(ws, "failed"), 0.0, "{ws:#}");
    // join + hello + 5 pings per session, each echoed.
    assert_eq!(num(ws, "msgs_sent"), 7.0 * num(ws, "sessions"), "{ws:#}");
    // Three posts awaited, then the client closes: the feed (a post every 100 ms,
    // ten at most) is still going, so no session ends early and none gets a fourth.
    let expect = "            - expect: { json: { $.type: post }, body_contains: '\"id\":' }\n";
    let feed = format!(
        "      - name: feed\n        ws:\n          url: /ws/feed?every_ms=100&count=10\n          actions:\n{}",
        expect.repeat(3)
    );
    let s = passes(
        "demo-ws-feed",
        &fixture(
            "demo_protocols_the_websocket_example_runs_against_the_demo_target.yaml",
            &[("target", t.base_url()), ("flow", feed.to_string())],
        ),
        &[],
    );
    assert_eq!(
        num(&s["steps"]["feed"]["ws"], "failed"),
        0.0,
        "{:#}",
        s["steps"]["feed"]
    );
    let ws = &s["steps"]["feed"]["ws"];
    assert_eq!(num(ws, "sessions"), 20.0, "{ws:#}");
    assert_eq!(
        num(ws, "msgs_received"),
        60.0,
        "3 posts per session: {ws:#}"
    );
}

/// The docs' gRPC example: methods found by the target's reflection, unary and
/// server streaming, each call served through the posts routes.
#[test]
fn the_grpc_example_runs_against_the_demo_target_by_reflection() {
    let t = demo_target(TargetOptions::default());
    let before = t.requests_served();
    let yaml = docs_example("## gRPC", &t.base_url());
    assert!(
        !yaml.contains("\n          proto:"),
        "the example uses reflection"
    );
    let s = passes("demo-grpc", &yaml, &["--vus", "2", "--duration", "2s"]);
    let calls = num(&s, "steps.post.requests");
    let streams = num(&s, "steps.page.grpc.streams");
    assert!(calls > 0.0 && streams > 0.0, "{s}");
    assert_eq!(num(&s, "steps.page.grpc.stream_msgs"), 5.0 * streams, "{s}");
    // Reflection is no request of the API; every call is one.
    let served = (t.requests_served() - before) as f64;
    assert_eq!(served, calls + num(&s, "steps.page.requests"), "{s}");
}

/// A post that does not exist is gRPC's NOT_FOUND, counted as `grpc_status`.
#[test]
fn a_missing_post_over_grpc_is_not_found() {
    let t = demo_target(TargetOptions::default());
    let dir = tmp("demo-grpc-404");
    let f = write_fixture(
        &dir,
        "demo_protocols_a_missing_post_over_grpc_is_not_found.yaml",
        "s.yaml",
        &[("target", t.base_url())],
    );
    let r = crate::harness::run("demo-grpc-404", &[f.to_str().unwrap()]);
    let s = r.summary();
    assert_eq!(num(&s, "errors.grpc_status"), 20.0, "{s}");
    assert_eq!(num(&s, "requests"), 20.0, "{s}");
}

/// The docs' compression example: checks on the decoded JSON pass, and the encoded
/// bytes are counted (fewer than decoded); without compression none are.
#[test]
fn the_compression_example_gets_compressed_answers() {
    let t = demo_target(TargetOptions::default());
    let yaml = docs_example("## Compression", &t.base_url());
    let s = passes("demo-gzip", &yaml, &["--vus", "2", "--duration", "2s"]);
    let encoded = num(&s, "data_received_encoded");
    let decoded = num(&s, "data_received_decoded");
    assert!(encoded > 0.0 && encoded < decoded, "{encoded} {decoded}");
    let plain = fixture("demo_protocols_get_post.yaml", &[("target", t.base_url())]);
    let s = passes("demo-plain", &plain, &[]);
    assert_eq!(
        s["data_received_encoded"].as_f64().unwrap_or(0.0),
        0.0,
        "{s}"
    );
}
