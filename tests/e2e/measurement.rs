//! Counts and latencies are what the server saw and did.

use pado_testkit::TestServer;

use crate::harness::{num, run, run_timed, within};

#[test]
fn requests_counted_equal_requests_received() {
    let srv = TestServer::start();
    let r = run(
        "count",
        &["--url", &srv.url("/"), "--vus", "8", "--duration", "2s"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    let st = srv.stats();
    assert!(st.requests > 100, "{st:?}");
    assert_eq!(num(&s, "requests") as u64, st.requests);
    assert_eq!(num(&s, "failed"), 0.0);
    assert_eq!(num(&s, "status.200") as u64, st.requests);
    // One keep-alive connection per VU.
    assert_eq!(st.connections, 8, "{st:?}");
    // The timeline adds up to the same total.
    let sum: f64 = r
        .timeline()
        .iter()
        .flat_map(|l| l["series"].as_array().cloned().unwrap_or_default())
        .map(|s| s["requests"].as_f64().unwrap())
        .sum();
    assert_eq!(sum as u64, st.requests);
    assert_eq!(num(&s, "vus_max"), 8.0);
    assert!(num(&s, "data_received") > 0.0 && num(&s, "data_sent") > 0.0);
}

#[test]
fn percentiles_match_the_delay_the_server_applied() {
    let srv = TestServer::start();
    let url = srv.url("/delay/50");
    run_timed(
        "delay",
        &["--url", &url, "--vus", "4", "--duration", "2s"],
        |r| {
            assert_eq!(r.code(), 0, "{}", r.stderr());
            let s = r.summary();
            assert_eq!(num(&s, "requests") as u64, srv.stats().requests);
            srv.reset_stats();
            let lat = &s["latency_ms"];
            // The server waits exactly 50 ms: nothing can be faster, and the middle of
            // the distribution sits just above it. The tail gets more room.
            for (key, hi) in [("min", 60.0), ("p50", 65.0), ("p90", 75.0), ("p99", 110.0)] {
                let v = num(lat, key);
                assert!(v >= 50.0, "{key} = {v}: faster than the server's delay");
                within(&format!("latency {key}"), v, 50.0..hi)?;
            }
            // Time to first byte carries the delay; sending does not.
            within(
                "waiting p50",
                num(&s, "phases_ms.http_req_waiting.p50"),
                50.0..65.0,
            )?;
            within(
                "sending p50",
                num(&s, "phases_ms.http_req_sending.p50"),
                0.0..5.0,
            )
        },
    );
}

#[test]
fn receiving_phase_holds_a_slow_body() {
    let srv = TestServer::start();
    let url = srv.url("/slow-body?ms=80");
    run_timed(
        "slowbody",
        &["--url", &url, "--vus", "2", "--duration", "1s"],
        |r| {
            assert_eq!(r.code(), 0, "{}", r.stderr());
            let s = r.summary();
            let recv = num(&s, "phases_ms.http_req_receiving.p50");
            let wait = num(&s, "phases_ms.http_req_waiting.p50");
            within("receiving p50", recv, 75.0..100.0)?;
            within("waiting p50", wait, 0.0..20.0)
        },
    );
}

#[test]
fn open_model_shows_the_stall_that_a_closed_loop_would_hide() {
    // 2 s period with a 0.5 s stall: a quarter of the schedule falls into a stall.
    let srv = TestServer::start_with(pado_testkit::ServerOptions {
        stall_period: std::time::Duration::from_secs(2),
        stall_len: std::time::Duration::from_millis(500),
        ..Default::default()
    });
    let url = srv.url("/stall");
    run_timed(
        "stall",
        &[
            "--url",
            &url,
            "--rate",
            "200",
            "--duration",
            "4s",
            "--max-vus",
            "300",
        ],
        |r| {
            assert_eq!(r.code(), 0, "{}", r.stderr());
            let s = r.summary();
            let st = srv.stats();
            srv.reset_stats();
            // Exact whatever the machine: every scheduled arrival is made or
            // counted dropped, and the server saw every one made.
            let made = num(&s, "requests") as u64;
            let dropped = num(&s, "dropped_iterations") as u64;
            assert_eq!(made + dropped, 800, "{s}");
            assert_eq!(st.requests, made);
            // None dropped unless the scheduler fell behind at the end, which
            // only a starved generator may (its self-check says so).
            if dropped > 0 {
                return Err(format!("{dropped} arrivals dropped at the schedule's end"));
            }
            assert!(s["latency_origin"]
                .as_str()
                .unwrap()
                .contains("scheduled start"));
            let lat = &s["latency_ms"];
            // Truth: ~25% of intended starts fall in a stall, uniform over (0, 500 ms].
            within("p50", num(lat, "p50"), 0.0..20.0)?;
            within("p90", num(lat, "p90"), 200.0..400.0)?;
            within("p99", num(lat, "p99"), 420.0..560.0)?;
            within("max", num(lat, "max"), 450.0..600.0)
        },
    );
}

#[test]
fn open_model_runs_exactly_the_scheduled_iterations() {
    let srv = TestServer::start();
    let r = run(
        "rate",
        &["--url", &srv.url("/"), "--rate", "150", "--duration", "2s"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    assert_eq!(num(&s, "requests") as u64, 300);
    assert_eq!(num(&s, "iterations") as u64, 300);
    assert_eq!(srv.stats().requests, 300);
    // Late starts mean the generator was behind; on a busy CI machine a few may be.
    assert!(num(&s, "late_iterations") < 15.0, "{s}");
}

#[test]
fn dropped_iterations_are_counted_when_the_pool_is_exhausted() {
    let srv = TestServer::start();
    // 100/s against a 200 ms endpoint needs ~20 VUs; allow 5.
    let r = run(
        "drop",
        &[
            "--url",
            &srv.url("/delay/200"),
            "--rate",
            "100",
            "--duration",
            "2s",
            "--max-vus",
            "5",
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    let done = num(&s, "iterations") as u64;
    let dropped = num(&s, "dropped_iterations") as u64;
    assert_eq!(done + dropped, 200, "{s}");
    assert!(dropped > 100, "{dropped}");
    assert_eq!(srv.stats().requests, num(&s, "requests") as u64);
    assert!(r.stdout().contains("dropped"), "{}", r.stdout());
}
