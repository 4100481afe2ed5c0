//! The demo target and `pado demo`: pado's counts agree with the target's own
//! metrics, capacity is real, and the demo runs end to end (every example runs: see
//! `first_run`).

use std::io::{Read, Write};

use pado_demo_target::{RunningTarget, TargetOptions};

use crate::harness::{demo_target, num, pado_cmd, run, tmp};

fn sized_target(pool: usize, cost_ms: u64) -> RunningTarget {
    demo_target(TargetOptions {
        posts: 20_000,
        pool_size: pool,
        workers: 4,
        query_cost: std::time::Duration::from_millis(cost_ms),
        ..Default::default()
    })
}

/// GET a path with a plain socket (no client library in tests).
fn get(t: &RunningTarget, path: &str) -> String {
    let mut s = std::net::TcpStream::connect(t.addr()).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn metric_sum(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name) && !l.starts_with('#'))
        .filter(|l| l[name.len()..].starts_with(['{', ' ']))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn pado_counts_agree_with_the_targets_metrics() {
    let t = sized_target(8, 1);
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/board-stress.yaml");
    let r = run(
        "agree",
        &[
            example,
            "--target",
            &t.base_url(),
            "--stages",
            "1s:6,1s:6,1s:0",
        ],
    );
    assert!(r.code() == 0 || r.code() == 99, "{}", r.stderr());
    let s = r.summary();
    let requests = num(&s, "requests");
    assert!(requests > 20.0, "{s}");
    assert_eq!(num(&s, "failed"), 0.0, "{s}");
    let metrics = get(&t, "/metrics");
    let served = metric_sum(&metrics, "http_server_requests_seconds_count");
    assert_eq!(
        served, requests,
        "target says {served}, pado says {requests}"
    );
    assert_eq!(t.requests_served() as f64, requests);
    // The search step carries the keyword class as a tag.
    assert!(s["tagged"]
        .as_object()
        .unwrap()
        .keys()
        .any(|k| k.starts_with("search{class=")));
}

#[test]
fn past_capacity_throughput_stops_growing_and_latency_rises() {
    // 2 connections at 5 ms: ~400 detail queries/s at most.
    let t = sized_target(2, 5);
    let url = format!("{}/api/posts?page=1", t.base_url());
    let low = run(
        "cap-low",
        &["--url", &url, "--vus", "2", "--duration", "2s"],
    );
    let high = run(
        "cap-high",
        &["--url", &url, "--vus", "32", "--duration", "2s"],
    );
    let (l, h) = (low.summary(), high.summary());
    let (rl, rh) = (num(&l, "rps"), num(&h, "rps"));
    let (ml, mh) = (num(&l, "latency_ms.mean"), num(&h, "latency_ms.mean"));
    // 16x the users: throughput at most ~1.5x, latency several times higher.
    assert!(rh < rl * 1.5, "rps {rl} -> {rh}");
    assert!(mh > ml * 4.0, "mean latency {ml} -> {mh}");
    assert_eq!(num(&h, "failed"), 0.0);
}

#[test]
fn demo_runs_end_to_end_in_its_short_form() {
    // Runs pado or a browser outside `harness::run`: hold the machine shared.
    let _machine = crate::harness::shared_machine();
    let dir_tmp = tmp("demo");
    let dir = dir_tmp.join("result");
    let out = pado_cmd(["demo", "--duration", "6s", "--quiet", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    let code = out.status.code();
    assert!(
        code == Some(0) || code == Some(99),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert!(num(&s, "requests") > 20.0, "{s}");
    assert_eq!(num(&s, "failed"), 0.0, "{s}");
    assert!(dir.join("scenario/board-stress.yaml").is_file());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("board-stress") && stdout.contains("search"),
        "{stdout}"
    );
    // The demo observes its target: the bottleneck table is there, with the
    // service's pools read from its /metrics.
    assert!(
        stdout.contains("bottlenecks: target metrics at"),
        "{stdout}"
    );
    let rows = s["bottlenecks"]["components"].as_array().expect("a table");
    for name in [
        "DB pool HikariPool-1",
        "Worker pool `http`",
        "CPU (process)",
    ] {
        assert!(
            rows.iter()
                .any(|r| r["component"] == name && r["endpoint"] == "app"),
            "{name} missing: {rows:?}"
        );
    }
    assert_eq!(s["bottlenecks"]["endpoints"][0]["failed"], 0, "{s}");
}

#[test]
fn find_capacity_finds_the_configured_capacity_within_15_percent() {
    // Runs pado or a browser outside `harness::run`: hold the machine shared.
    let _machine = crate::harness::shared_machine();
    // 2 connections × 5 ms per query: at most 400 list requests per second.
    let t = sized_target(2, 5);
    let capacity = pado_demo_target::capacity_hint(&TargetOptions {
        pool_size: 2,
        workers: 4,
        query_cost: std::time::Duration::from_millis(5),
        ..Default::default()
    });
    assert!((capacity - 400.0).abs() < 1.0);
    let out_dir = crate::harness::tmp("capacity");
    let url = format!("{}/api/posts?page=1", t.base_url());
    let out = pado_cmd([
        "find-capacity",
        "--url",
        &url,
        "--start-rate",
        "150",
        "--hold",
        "2s",
        "--refine",
        "3",
        // Below capacity p95 stays near the 5 ms query cost; above it the queue
        // grows without bound, so a generous SLA still breaks right past the
        // limit and does not trip on a busy test machine's latency tail.
        "--sla",
        "p(95) < 200",
        "--observe",
        &format!("{}/metrics", t.base_url()),
        "--observe-interval",
        "500ms",
        "--json",
        "--out",
    ])
    .arg(&out_dir)
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let found = v["max_sustainable_rate"].as_f64().expect("a rate");
    assert!(
        (found - capacity).abs() / capacity <= 0.15,
        "found {found}/s for a capacity of {capacity}/s: {v}"
    );
    let steps = v["steps"].as_array().unwrap();
    assert!(steps.iter().any(|s| s["ok"] == false), "{v}");
    assert!(steps.iter().any(|s| s["ok"] == true), "{v}");
    // Every step left a result directory, and the target's metrics (named `app`:
    // the origin the load goes to) name what limited it where the SLA broke: the
    // 2-connection pool.
    for s in steps {
        let dir = std::path::Path::new(s["result_dir"].as_str().unwrap());
        assert!(
            dir.starts_with(&out_dir) && dir.join("summary.json").is_file(),
            "{s}"
        );
        assert!(s["generator_saturated"].is_boolean(), "{s}");
    }
    // (Listed after pado itself if a busy machine starved the generator.)
    let limit = v["limit_at_break"].as_str().unwrap_or_default();
    assert!(limit.contains("DB pool HikariPool-1 (app)"), "{v}");
}
