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
    // Read against a rate that held, the pool that filled up is named, not the
    // machine's CPU that other work on a busy machine keeps full at every rate.
    let limit = v["limit_at_break"].as_str().unwrap_or_default();
    assert!(
        limit.starts_with("DB pool HikariPool-1"),
        "{v}\n{}",
        tables_of(steps)
    );
}

/// Each step's own bottleneck rows (those not "no"), for a failure's message: what
/// the pools and CPUs showed at each rate when the limit read between two of them
/// is not the one expected.
fn tables_of(steps: &[serde_json::Value]) -> String {
    let mut out = String::new();
    for s in steps {
        let dir = std::path::Path::new(s["result_dir"].as_str().unwrap_or_default());
        let Ok(text) = std::fs::read_to_string(dir.join("summary.json")) else {
            continue;
        };
        let summary: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        out.push_str(&format!("{} ok={}\n", s["rate"], s["ok"]));
        for c in summary["bottlenecks"]["components"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if c["verdict"] != "no" {
                out.push_str(&format!(
                    "    {} | {} | {} | {}\n",
                    c["component"], c["state"], c["verdict"], c["evidence"]
                ));
            }
        }
    }
    out
}

/// The experiment's demo knob, measured by pado: with 2 workers each holding its
/// permit for one 20 ms query (16 connections: the pool is never the limit), the
/// service serves 2 / 20 ms = 100 requests a second; raised to 4 at run time
/// (`POST /admin/faults {"workers": 4}`), 200. The bottleneck table of each run
/// names the worker pool at its new size.
#[test]
fn raising_the_workers_at_run_time_doubles_capacity_and_names_the_limit() {
    let cost = std::time::Duration::from_millis(20);
    let t = demo_target(TargetOptions {
        posts: 2_000,
        pool_size: 16,
        workers: 2,
        query_cost: cost,
        ..Default::default()
    });
    let url = format!("{}/api/posts?size=1", t.base_url());
    let metrics = format!("{}/metrics", t.base_url());
    let measure = |name: &str| {
        let r = run(
            name,
            &[
                "--url",
                &url,
                "--vus",
                "12",
                "--duration",
                "4s",
                "--observe",
                &metrics,
                "--observe-interval",
                "500ms",
            ],
        );
        assert!(r.code() == 0 || r.code() == 99, "{}", r.stderr());
        let s = r.summary();
        assert_eq!(num(&s, "failed"), 0.0, "{s}");
        (num(&s, "rps"), s)
    };
    let truth = |workers: f64| workers / cost.as_secs_f64();

    let (two, s2) = measure("workers-2");
    t.set_faults(pado_demo_target::Faults {
        workers: 4,
        ..t.faults()
    })
    .unwrap();
    let (four, s4) = measure("workers-4");
    eprintln!("2 workers: {two:.1} req/s, 4 workers: {four:.1} req/s");
    for (got, workers) in [(two, 2.0), (four, 4.0)] {
        assert!(
            (got - truth(workers)).abs() <= 0.05 * truth(workers),
            "{workers} workers of {cost:?}: pado measured {got:.1} req/s, truth {:.1}",
            truth(workers)
        );
    }
    assert!(
        (four / two - 2.0).abs() <= 0.1,
        "twice the workers: {:.2}× the throughput",
        four / two
    );
    // The bottleneck table saw the new limit through the target's /metrics: the
    // worker pool full at its new size (the limit itself, or, on a machine whose
    // CPUs other work keeps busy, waiting on that CPU).
    for (s, size) in [(&s2, "/2 busy"), (&s4, "/4 busy")] {
        let b = &s["bottlenecks"];
        let row = b["components"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["component"] == "Worker pool `http`")
            .unwrap_or_else(|| panic!("{b}"));
        assert!(
            row["state"].as_str().unwrap().contains(size),
            "{size}: {row}"
        );
        assert!(
            row["verdict"] == "yes" || row["verdict"] == "consequence",
            "{row}"
        );
    }
}
