//! Hostile servers that flood what a client must buffer: pado's memory stays
//! bounded and each flood is counted under a category of its own, while the run
//! goes on and ends on time. pado's own resident memory is read from the
//! timeline, where the aggregator records it every second.

use std::time::Duration;

use pado_testkit::hostile::{Flood, HostileServer};
use serde_json::Value;

use crate::harness::{fixture, num, run, run_timed, tmp, write_file, write_fixture};

/// The most resident memory pado itself may reach under any flood below: a debug
/// build idles at about 30 MiB; without the caps these floods took hundreds of MB
/// within seconds (a ping flood about 200 MB/s).
const RSS_BOUND: u64 = 120 << 20;

/// pado's largest resident memory in any second of the run.
fn peak_rss(timeline: &[Value]) -> u64 {
    let peak = timeline
        .iter()
        .filter_map(|l| l["generator"]["rss_bytes"].as_u64())
        .max();
    peak.expect("the timeline records pado's memory every second")
}

/// What pado holds of its own unread frames at most (the pongs a ping flood makes
/// it owe): the engine's write backlog, 1 MiB.
const BACKLOG_BOUND: u64 = 1 << 20;

/// How much of a ping flood must go out for the test to mean something: sixteen
/// times what pado may hold (without the cap it kept a pong for every ping).
const FLOOD_BYTES: u64 = 16 * BACKLOG_BOUND;

#[test]
fn a_ping_flood_that_never_reads_its_pongs_leaves_memory_bounded() {
    // Long enough for a second attempt on a busy machine.
    let srv = HostileServer::start(Flood::WsPings, Duration::from_secs(60));
    let t = tmp("hostile-pings");
    let f = write_fixture(
        &t,
        "hostile_a_ping_flood_that_never_reads_its_pongs_leaves_memory_bounded.yaml",
        "s.yaml",
        &[("target", srv.base_url())],
    );
    // How much goes out in the run's 3 s depends on the CPU pado gets: a flood
    // that fell short is judged by pado's own self-check (run_timed): a starved
    // generator is the machine's doing, one that had its CPU is a failure.
    let mut before = srv.written();
    let judged = run_timed("hostile-pings", &[f.to_str().unwrap()], |r| {
        let flood = srv.written() - before;
        before = srv.written();
        let s = r.summary();
        let ws = &s["steps"]["flooded"]["ws"];
        assert!(num(ws, "sessions") >= 1.0, "{}\n{ws:#}", r.stderr());
        // Whatever came, pado's memory stayed bounded.
        let peak = peak_rss(&r.timeline());
        assert!(peak < RSS_BOUND, "pado's memory reached {} MiB", peak >> 20);
        // Every session failed, each by a category that says what happened (no
        // data message ever came; pado's own frames could not be sent).
        let errors = ws["errors"].as_object().cloned().unwrap_or_default();
        let failed: f64 = errors.values().filter_map(Value::as_f64).sum();
        assert_eq!(failed, num(ws, "sessions"), "{ws:#}");
        assert!(
            errors
                .keys()
                .all(|k| k == "ws_expect_timeout" || k == "ws_backlog"),
            "{ws:#}"
        );
        // The flood really happened: far more than pado's bound went out to it.
        // (How much goes out in 3 s is the machine's doing: a busy one delivered
        // 20 to 28 MiB where a quiet one delivers over 50.)
        if flood > FLOOD_BYTES {
            Ok(())
        } else {
            Err(format!("the flood wrote only {flood} bytes"))
        }
    });
    drop(judged);
}

#[test]
fn a_websocket_message_that_never_ends_is_cut_at_max_body() {
    let srv = HostileServer::start(Flood::WsEndlessMessage, Duration::from_secs(20));
    let t = tmp("hostile-fragments");
    let f = write_fixture(
        &t,
        "hostile_a_websocket_message_that_never_ends_is_cut_at_max_body.yaml",
        "s.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("hostile-fragments", &[f.to_str().unwrap()]);
    let s = r.summary();
    let ws = &s["steps"]["flooded"]["ws"];
    assert!(num(ws, "sessions") >= 1.0, "{}\n{ws:#}", r.stderr());
    assert_eq!(
        num(ws, "errors.ws_too_large"),
        num(ws, "sessions"),
        "{ws:#}"
    );
    let peak = peak_rss(&r.timeline());
    assert!(peak < RSS_BOUND, "pado's memory reached {} MiB", peak >> 20);
}

#[test]
fn an_http2_continuation_flood_is_refused_as_too_large() {
    let srv = HostileServer::start(Flood::H2Continuation, Duration::from_secs(20));
    let t = tmp("hostile-h2");
    let text = fixture("hostile_h2_get.yaml", &[("target", srv.base_url())]);
    let f = write_file(&t, "s.yaml", &text);
    let r = run("hostile-h2", &[f.to_str().unwrap(), "--workers", "1"]);
    let s = r.summary();
    let requests = num(&s, "requests");
    assert!(requests >= 1.0, "{}\n{s:#}", r.stderr());
    // Every request failed as too large, none as a timeout or a protocol error.
    assert_eq!(num(&s, "errors.too_large"), requests, "{:#}", s["errors"]);
    let peak = peak_rss(&r.timeline());
    assert!(peak < RSS_BOUND, "pado's memory reached {} MiB", peak >> 20);
}
