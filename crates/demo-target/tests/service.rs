//! End-to-end tests of the demo service over real sockets.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::{enc, parse_prometheus, Client, Exposition};
use pado_demo_target::{capacity_hint, start, Faults, TargetOptions};

fn small(posts: usize) -> TargetOptions {
    TargetOptions {
        posts,
        query_cost: Duration::from_micros(200),
        ..Default::default()
    }
}

fn scrape(c: &mut Client) -> Exposition {
    let r = c.get("/metrics");
    assert_eq!(r.status, 200);
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    parse_prometheus(&r.text()).unwrap_or_else(|e| panic!("{e}\n{}", r.text()))
}

#[test]
fn endpoints_work_and_metrics_count_exactly() {
    let target = start(small(2_000)).unwrap();
    assert!(target.base_url().starts_with("http://127.0.0.1:"));
    let mut c = Client::new(target.addr());
    let mut api = 0u64; // API requests made (what the metrics must count)

    // Management endpoints are not counted.
    let h = c.get("/health");
    assert_eq!(h.status, 200);
    assert_eq!(h.json(), serde_json::json!({"status": "UP"}));

    let token = login(&mut c, &mut api);
    let id = write_and_read_posts(&mut c, &mut api, &token);
    search_and_autocomplete(&mut c, &mut api, id);
    delete_and_refuse_bad_requests(&mut c, &mut api, &token, id);
    let m = scrape(&mut c);
    assert_eq!(target.requests_served(), api);
    assert_exact_exposition(&m, api);
    // Scrapes did not count themselves.
    let m2 = scrape(&mut c);
    assert_eq!(
        m2.sum("http_server_requests_seconds_count", &[]),
        api as f64
    );
    target.shutdown();
}

/// An API request, counted in `api` (what the metrics must count).
fn call(api: &mut u64, c: &mut Client, f: &dyn Fn(&mut Client) -> common::Resp) -> common::Resp {
    *api += 1;
    f(c)
}

/// Logs in (and is refused without a user, or with a malformed body); the token.
fn login(c: &mut Client, api: &mut u64) -> String {
    // Login.
    let r = call(api, c, &|c| {
        c.post_json("/api/login", None, r#"{"user":"kim","password":"x"}"#)
    });
    assert_eq!(r.status, 200);
    let token = r.json()["token"].as_str().unwrap().to_string();
    assert!(token.len() >= 16);
    let r = call(api, c, &|c| {
        c.post_json("/api/login", None, r#"{"user":"","password":"x"}"#)
    });
    assert_eq!(r.status, 401);
    let r = call(api, c, &|c| c.post_json("/api/login", None, "{not json"));
    assert_eq!(r.status, 400);
    token
}

/// Writes need the token; the new post is read back, liked and listed first. Its id.
fn write_and_read_posts(c: &mut Client, api: &mut u64, token: &str) -> u64 {
    let token = token.to_string();
    // Writes need the token.
    let r = call(api, c, &|c| {
        c.post_json("/api/posts", None, r#"{"title":"t","body":"b"}"#)
    });
    assert_eq!(r.status, 401);
    let r = call(api, c, &|c| {
        c.post_json("/api/posts", Some("nope"), r#"{"title":"t","body":"b"}"#)
    });
    assert_eq!(r.status, 401);
    let tok = token.clone();
    let r = call(api, c, &move |c| {
        c.post_json(
            "/api/posts",
            Some(&tok),
            r#"{"title":"파도 부하 테스트 uniquezebra","body":"서버 성능 분석 quokkaword","tags":["성능"]}"#,
        )
    });
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["id"].as_u64().unwrap();
    assert_eq!(id, 2_001);
    assert_eq!(r.header("location"), Some("/api/posts/2001"));
    let tok = token.clone();
    let r = call(api, c, &move |c| {
        c.post_json("/api/posts", Some(&tok), r#"{"title":"  "}"#)
    });
    assert_eq!(r.status, 400);
    let tok = token.clone();
    let r = call(api, c, &move |c| {
        c.post_json("/api/posts", Some(&tok), r#"[1,2"#)
    });
    assert_eq!(r.status, 400);

    // Detail, like, newest-first listing.
    let r = call(api, c, &move |c| c.get(&format!("/api/posts/{id}")));
    assert_eq!(r.status, 200);
    let post = r.json();
    assert_eq!(post["title"], "파도 부하 테스트 uniquezebra");
    assert_eq!(post["author"], "kim");
    assert_eq!(post["likes"], 0);
    let tok = token.clone();
    let r = call(api, c, &move |c| {
        c.post_json(&format!("/api/posts/{id}/like"), Some(&tok), "")
    });
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), serde_json::json!({"id": id, "likes": 1}));
    let r = call(api, c, &move |c| c.get(&format!("/api/posts/{id}")));
    assert_eq!(r.json()["likes"], 1, "a like invalidates the cached detail");
    let r = call(api, c, &|c| c.get("/api/posts?page=0&size=20"));
    assert_eq!(r.status, 200);
    let list = r.json();
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 20);
    assert_eq!(items[0]["id"].as_u64(), Some(id));
    let ids: Vec<u64> = items.iter().map(|i| i["id"].as_u64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first: {ids:?}");
    assert_eq!(list["total"], 2_001);
    let r = call(api, c, &|c| c.get("/api/posts?page=3&size=5"));
    assert_eq!(r.json()["items"][0]["id"], 2_001 - 15);
    let r = call(api, c, &|c| c.get("/api/posts?page=abc"));
    assert_eq!(r.status, 400);
    let r = call(api, c, &|c| c.get("/api/posts?page=99999999"));
    assert_eq!(r.json()["items"].as_array().unwrap().len(), 0);
    id
}

/// Search (Korean, and the new post by its unique word) and autocomplete.
fn search_and_autocomplete(c: &mut Client, api: &mut u64, id: u64) {
    // Search: Korean, and the new post by its unique word.
    let r = call(api, c, &|c| {
        c.get(&format!("/api/search?q={}", enc("검색")))
    });
    assert_eq!(r.status, 200);
    let s = r.json();
    let results = s["results"].as_array().unwrap();
    assert_eq!(results.len(), 10);
    assert!(s["total"].as_u64().unwrap() > 1_000, "{s}");
    assert!(
        results
            .iter()
            .any(|h| h["title"].as_str().unwrap().contains("검색")),
        "{s}"
    );
    assert!(results[0]["score"].as_f64().unwrap() >= results[9]["score"].as_f64().unwrap());
    let r = call(api, c, &|c| c.get("/api/search?q=quokkaword"));
    assert_eq!(r.json()["results"][0]["id"].as_u64(), Some(id));
    let r = call(api, c, &|c| c.get("/api/search?q=%20%2C"));
    assert_eq!(r.json()["total"], 0);
    let r = call(api, c, &|c| c.get("/api/search"));
    assert_eq!(r.status, 400);

    // Autocomplete.
    let r = call(api, c, &|c| {
        c.get(&format!("/api/autocomplete?prefix={}", enc("검")))
    });
    assert_eq!(r.status, 200);
    let a = r.json();
    assert_eq!(a["suggestions"][0], "검색", "{a}");
    let r = call(api, c, &|c| c.get("/api/autocomplete?prefix=UNIQUEZ"));
    assert_eq!(r.json()["suggestions"], serde_json::json!(["uniquezebra"]));
    let r = call(api, c, &|c| {
        c.get(&format!(
            "/api/autocomplete?prefix={}",
            enc("파도 부하 테스트 UNIQ")
        ))
    });
    assert_eq!(
        r.json()["titles"][0]["id"].as_u64(),
        Some(id),
        "{}",
        r.text()
    );
}

/// Delete (then the post is gone), and bad ids, unknown routes, wrong methods.
fn delete_and_refuse_bad_requests(c: &mut Client, api: &mut u64, token: &str, id: u64) {
    // Delete, then it is gone.
    let auth = format!("Bearer {token}");
    let delete = move |c: &mut Client| {
        c.request(
            "DELETE",
            &format!("/api/posts/{id}"),
            &[("Authorization", &auth)],
            None,
        )
    };
    let r = call(api, c, &delete);
    assert_eq!(r.status, 204);
    assert!(r.body.is_empty());
    let r = call(api, c, &move |c| c.get(&format!("/api/posts/{id}")));
    assert_eq!(r.status, 404);
    let r = call(api, c, &delete);
    assert_eq!(r.status, 404);

    // Bad ids, unknown routes, wrong methods.
    for path in [
        "/api/posts/abc",
        "/api/posts/-1",
        "/api/posts/0",
        "/api/posts/99999999999999999999",
    ] {
        let r = call(api, c, &|c| c.get(path));
        assert_eq!(r.status, 404, "{path}");
    }
    let r = call(api, c, &|c| c.get("/nope"));
    assert_eq!(r.status, 404);
    let r = call(api, c, &|c| c.request("PUT", "/api/posts/1", &[], None));
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET, HEAD, DELETE"));
    let r = call(api, c, &|c| c.request("HEAD", "/api/posts/1", &[], None));
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty());
    let r = call(api, c, &|c| c.get("/api/posts/1"));
    assert_eq!(r.json()["id"], 1, "served from the cache the HEAD filled");
}

/// Exact counts of the `api` requests made, and a well-formed exposition.
fn assert_exact_exposition(m: &Exposition, api: u64) {
    assert_eq!(m.sum("http_server_requests_seconds_count", &[]), api as f64);
    assert_eq!(
        m.sum("http_server_requests_seconds_bucket", &[("le", "+Inf")]),
        api as f64
    );
    assert_eq!(
        m.sum(
            "http_server_requests_seconds_count",
            &[
                ("uri", "/api/posts/{id}"),
                ("method", "GET"),
                ("status", "404")
            ]
        ),
        5.0
    );
    assert_eq!(
        m.sum(
            "http_server_requests_seconds_count",
            &[("uri", "NOT_FOUND"), ("status", "404")]
        ),
        1.0
    );
    assert_eq!(m.types["http_server_requests_seconds"], "histogram");
    for name in [
        "process_cpu_usage",
        "process_uptime_seconds",
        "hikaricp_connections_active",
        "hikaricp_connections_pending",
        "hikaricp_connections_acquire_seconds_count",
        "executor_active_threads",
        "executor_queued_tasks",
        "cache_size",
        "pado_target_cpu_usage",
    ] {
        assert!(m.has(name), "{name} missing");
    }
    assert_eq!(m.sum("hikaricp_connections_max", &[]), 8.0);
    assert_eq!(m.sum("executor_pool_max_threads", &[]), 4.0);
    assert!(m.sum("cache_gets_total", &[("cache", "posts"), ("result", "hit")]) >= 1.0);
    assert!(m.sum("cache_gets_total", &[("result", "miss")]) >= 1.0);
    // Bucket counts are cumulative per series.
    let mut series: std::collections::BTreeMap<String, Vec<(f64, f64)>> = Default::default();
    for s in m
        .samples
        .iter()
        .filter(|s| s.name == "http_server_requests_seconds_bucket")
    {
        let mut l = s.labels.clone();
        let le = l.remove("le").unwrap();
        let le = if le == "+Inf" {
            f64::INFINITY
        } else {
            le.parse().unwrap()
        };
        series
            .entry(format!("{l:?}"))
            .or_default()
            .push((le, s.value));
    }
    for (k, b) in series {
        assert!(
            b.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
            "{k}: {b:?}"
        );
    }
}

/// Closed-loop clients for `dur`: (throughput/s, mean latency, p95 latency, requests).
fn drive(
    addr: std::net::SocketAddr,
    clients: usize,
    dur: Duration,
) -> (f64, Duration, Duration, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|i| {
            let stop = stop.clone();
            thread::spawn(move || {
                let mut c = Client::new(addr);
                let mut lat = Vec::new();
                let mut n = i as u64;
                while !stop.load(Ordering::Relaxed) {
                    n = n
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let id = 1 + (n >> 33) % 500;
                    let t = Instant::now();
                    let r = c.get(&format!("/api/posts/{id}"));
                    lat.push(t.elapsed());
                    assert_eq!(r.status, 200);
                }
                lat
            })
        })
        .collect();
    thread::sleep(dur);
    stop.store(true, Ordering::Relaxed);
    let mut lat: Vec<Duration> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let elapsed = start.elapsed();
    lat.sort();
    let n = lat.len();
    let mean = lat.iter().sum::<Duration>() / n.max(1) as u32;
    let p95 = lat[(n * 95 / 100).min(n - 1)];
    (n as f64 / elapsed.as_secs_f64(), mean, p95, n as u64)
}

#[test]
fn throughput_plateaus_and_latency_rises_past_capacity() {
    let opts = TargetOptions {
        posts: 500,
        pool_size: 2,
        query_cost: Duration::from_millis(5),
        cache_size: 0,
        ..Default::default()
    };
    let cap = capacity_hint(&opts);
    assert!((cap - 400.0).abs() < 1e-9);
    let target = start(opts).unwrap();
    let addr = target.addr();

    let (tp2, mean2, p95_2, n2) = drive(addr, 2, Duration::from_millis(1_500));

    // Overload, while watching the queues.
    let watching = Arc::new(AtomicBool::new(true));
    let watcher = {
        let watching = watching.clone();
        thread::spawn(move || {
            let mut c = Client::new(addr);
            let (mut queued, mut pending) = (0f64, 0f64);
            thread::sleep(Duration::from_millis(300));
            while watching.load(Ordering::Relaxed) {
                let m = scrape(&mut c);
                queued = queued.max(m.sum("executor_queued_tasks", &[]));
                pending = pending.max(m.sum("hikaricp_connections_pending", &[]));
                thread::sleep(Duration::from_millis(100));
            }
            (queued, pending)
        })
    };
    let (tp32, mean32, p95_32, n32) = drive(addr, 32, Duration::from_millis(1_500));
    watching.store(false, Ordering::Relaxed);
    let (queued, pending) = watcher.join().unwrap();

    // Load drops: latency recovers.
    let (_, mean_after, _, n_after) = drive(addr, 2, Duration::from_millis(500));

    let report = format!(
        "capacity {cap:.0}/s; c=2: {tp2:.0}/s mean {mean2:?} p95 {p95_2:?}; \
         c=32: {tp32:.0}/s mean {mean32:?} p95 {p95_32:?}; after: mean {mean_after:?}; \
         max queued {queued}, max pending {pending}"
    );
    eprintln!("{report}");
    assert!(
        tp2 > 0.3 * cap,
        "the service works below capacity: {report}"
    );
    assert!(tp32 <= 1.3 * tp2, "throughput plateaus: {report}");
    assert!(
        tp32 <= 1.15 * cap,
        "throughput is bounded by the pool: {report}"
    );
    assert!(mean32 > mean2 * 4, "mean latency rises: {report}");
    assert!(p95_32 > p95_2 * 4, "p95 rises: {report}");
    assert!(queued >= 1.0, "requests queue for workers: {report}");
    assert!(pending >= 1.0, "workers wait for connections: {report}");
    assert!(mean_after < mean2 * 3, "latency recovers: {report}");

    let mut c = Client::new(addr);
    let m = scrape(&mut c);
    assert_eq!(
        m.sum("http_server_requests_seconds_count", &[]),
        (n2 + n32 + n_after) as f64,
        "exact counts under concurrency"
    );
    assert!(m.sum("hikaricp_connections_acquire_seconds_sum", &[]) > 1.0);
    eprintln!(
        "usage avg {:.3} ms, acquire avg {:.3} ms, queue avg {:.3} ms",
        m.sum("hikaricp_connections_usage_seconds_sum", &[]) * 1e3
            / m.sum("hikaricp_connections_usage_seconds_count", &[]),
        m.sum("hikaricp_connections_acquire_seconds_sum", &[]) * 1e3
            / m.sum("hikaricp_connections_acquire_seconds_count", &[]),
        m.sum("executor_queue_wait_seconds_sum", &[]) * 1e3
            / m.sum("executor_queue_wait_seconds_count", &[])
    );
    assert_eq!(m.sum("hikaricp_connections_max", &[]), 2.0);
    target.shutdown();
}

#[test]
fn faults_switch_at_run_time() {
    let target = start(small(1_000)).unwrap();
    let mut c = Client::new(target.addr());

    let r = c.get("/admin/faults");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        serde_json::json!({"added_latency_ms": 0, "error_rate": 0.0, "stall_ms": 0, "stall_every_s": 0.0, "cache": true,
            "pool_size": 0, "workers": 0, "restart_ms": 0, "leak_kib_per_request": 0, "leak_creep_us_per_mib": 0,
            "pool_leak_every_s": 0.0, "llm_batch_limit": 8, "llm_batch_slowdown": 0.02,
            "llm_decode_ms_per_token": 20.0, "llm_prefill_ms_per_1k_tokens": 50.0})
    );

    // Every API call fails; management endpoints do not.
    let r = c.post_json("/admin/faults", None, r#"{"error_rate": 1.0}"#);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["error_rate"], 1.0);
    for path in ["/api/posts/1", "/api/posts", "/api/search?q=test", "/nope"] {
        assert_eq!(c.get(path).status, 500, "{path}");
    }
    assert_eq!(
        c.post_json("/api/login", None, r#"{"user":"a"}"#).status,
        500
    );
    assert_eq!(c.get("/health").status, 200);
    let m = scrape(&mut c);
    assert_eq!(
        m.sum("http_server_requests_seconds_count", &[("status", "500")]),
        5.0
    );
    assert_eq!(
        m.sum(
            "http_server_requests_seconds_count",
            &[("outcome", "SERVER_ERROR")]
        ),
        5.0
    );

    // Partial update keeps the other fields; latency applies.
    let r = c.post_json(
        "/admin/faults",
        None,
        r#"{"error_rate": 0, "added_latency_ms": 150}"#,
    );
    assert_eq!(r.json()["added_latency_ms"], 150);
    assert_eq!(r.json()["cache"], true);
    let t = Instant::now();
    assert_eq!(c.get("/api/posts/1").status, 200);
    assert!(
        t.elapsed() >= Duration::from_millis(150),
        "{:?}",
        t.elapsed()
    );
    let t = Instant::now();
    assert_eq!(c.get("/health").status, 200);
    assert!(t.elapsed() < Duration::from_millis(150));

    // Bad fault documents are refused and change nothing.
    for bad in [
        r#"{"error_rate": 2}"#,
        r#"{"nope": 1}"#,
        "[]",
        "{",
        r#"{"cache": "yes"}"#,
    ] {
        let r = c.post_json("/admin/faults", None, bad);
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
    }
    assert_eq!(target.faults().added_latency_ms, 150);

    // The library handle: cache off makes every lookup a miss; a one-shot stall.
    target
        .set_faults(Faults {
            cache: false,
            ..Faults::default()
        })
        .unwrap();
    let before = scrape(&mut c).sum(
        "cache_gets_total",
        &[("cache", "posts"), ("result", "miss")],
    );
    for _ in 0..3 {
        assert_eq!(c.get("/api/posts/2").status, 200);
    }
    let m = scrape(&mut c);
    assert_eq!(
        m.sum(
            "cache_gets_total",
            &[("cache", "posts"), ("result", "miss")]
        ) - before,
        3.0
    );
    assert!(target
        .set_faults(Faults {
            error_rate: -0.1,
            ..Faults::default()
        })
        .is_err());
    let r = c.post_json(
        "/admin/faults",
        None,
        r#"{"stall_ms": 300, "stall_every_s": 0}"#,
    );
    assert_eq!(r.status, 200);
    let t = Instant::now();
    assert_eq!(c.get("/api/posts/3").status, 200);
    assert!(
        t.elapsed() >= Duration::from_millis(250),
        "{:?}",
        t.elapsed()
    );
    // Periodic stalls: within 1 s some request is held.
    c.post_json(
        "/admin/faults",
        None,
        r#"{"stall_ms": 150, "stall_every_s": 0.3}"#,
    );
    let t = Instant::now();
    let mut worst = Duration::ZERO;
    while t.elapsed() < Duration::from_millis(900) {
        let s = Instant::now();
        assert_eq!(c.get("/api/posts/4").status, 200);
        worst = worst.max(s.elapsed());
    }
    assert!(worst >= Duration::from_millis(50), "{worst:?}");
    target.set_faults(Faults::default()).unwrap();
    target.shutdown();
}

#[test]
fn frequent_terms_cost_more_and_cpu_budget_throttles() {
    let target = start(TargetOptions {
        posts: 3_000,
        posting_cost: Duration::from_micros(5),
        cache_size: 0,
        ..Default::default()
    })
    .unwrap();
    let mut c = Client::new(target.addr());
    let median = |c: &mut Client, q: &str| {
        let mut v: Vec<(Duration, u64)> = (0..7)
            .map(|_| {
                let t = Instant::now();
                let r = c.get(&format!("/api/search?q={}", enc(q)));
                assert_eq!(r.status, 200);
                (t.elapsed(), r.json()["postings"].as_u64().unwrap())
            })
            .collect();
        v.sort();
        v[3]
    };
    let (hot, hot_postings) = median(&mut c, "검색");
    // A rare term: the word of post 1 that appears in the fewest posts.
    let body = c.get("/api/posts/1").json()["body"]
        .as_str()
        .unwrap()
        .to_string();
    let rare = body
        .split(|ch: char| !ch.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            let r = c.get(&format!("/api/search?q={}", enc(w)));
            (r.json()["postings"].as_u64().unwrap(), w.to_string())
        })
        .min()
        .unwrap()
        .1;
    let (cold, cold_postings) = median(&mut c, &rare);
    assert!(hot_postings > 2_000, "{hot_postings}");
    assert!(
        cold_postings * 10 < hot_postings,
        "{cold_postings} vs {hot_postings}"
    );
    assert!(hot >= Duration::from_millis(10), "{hot:?}");
    assert!(hot > cold * 2, "hot {hot:?} vs cold {cold:?} ({rare})");
    let m = scrape(&mut c);
    assert!(m.sum("pado_target_cpu_work_seconds_total", &[]) >= 0.07);
    assert_eq!(
        m.sum(
            "cache_gets_total",
            &[("cache", "search"), ("result", "hit")]
        ),
        0.0
    );
    target.shutdown();

    // A quarter of a core: the same CPU work takes about four times as long.
    let throttled = start(TargetOptions {
        posts: 3_000,
        posting_cost: Duration::from_micros(5),
        cache_size: 0,
        cpu_budget: Some(0.25),
        ..Default::default()
    })
    .unwrap();
    let mut c = Client::new(throttled.addr());
    let (slow, _) = median(&mut c, "검색");
    let cpu_ms = hot_postings as f64 * 0.005;
    assert!(
        slow.as_secs_f64() * 1e3 >= cpu_ms * 3.0,
        "budget 0.25: {slow:?} for {cpu_ms:.1} ms of CPU"
    );
    throttled.shutdown();
}

#[test]
fn bad_input_never_breaks_the_server() {
    let target = start(small(200)).unwrap();
    let addr = target.addr();

    let mut c = Client::new(addr);
    c.send_raw(b"THIS IS NOT HTTP\r\n\r\n");
    let r = c.read_response(false);
    assert_eq!(r.status, 400);

    let mut c = Client::new(addr);
    c.send_raw(b"POST /api/login HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n");
    assert_eq!(c.read_response(false).status, 413);

    let mut c = Client::new(addr);
    c.send_raw(b"POST /api/login HTTP/1.1\r\nContent-Length: abc\r\n\r\n");
    assert_eq!(c.read_response(false).status, 400);

    // Chunked bodies work; HTTP/1.0 closes.
    let mut c = Client::new(addr);
    c.send_raw(
        b"POST /api/login HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"use\r\n9\r\nr\":\"lee\"}\r\n0\r\n\r\n",
    );
    let r = c.read_response(false);
    assert_eq!(r.status, 200, "{}", r.text());
    let mut c = Client::new(addr);
    c.send_raw(b"GET /health HTTP/1.0\r\n\r\n");
    let raw = String::from_utf8(c.read_to_close()).unwrap();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(raw.contains("connection: close"));

    // Odd JSON and odd queries.
    let mut c = Client::new(addr);
    for body in ["", "null", "[]", r#"{"user": 5}"#, "\u{0}\u{1}"] {
        assert_eq!(
            c.post_json("/api/login", None, body).status,
            400,
            "{body:?}"
        );
    }
    assert_eq!(c.get("/api/search?q=%ZZ%F0%9F").status, 200);
    assert_eq!(c.get("/api/autocomplete?prefix=%FF").status, 200);
    assert_eq!(c.get("/api/autocomplete?prefix=").status, 200);
    assert_eq!(c.get("/api/posts?size=100000").json()["size"], 100);
    let long = "x".repeat(10_000);
    assert_eq!(c.get(&format!("/api/search?q={long}")).status, 200);
    // Pipelined requests are answered in order.
    c.send_raw(b"GET /api/posts/1 HTTP/1.1\r\n\r\nGET /api/posts/abc HTTP/1.1\r\n\r\n");
    assert_eq!(c.read_response(false).status, 200);
    assert_eq!(c.read_response(false).status, 404);
    assert_eq!(c.get("/health").status, 200);
    target.shutdown();
}

#[test]
fn overflowing_chunk_sizes_get_400_class_answers_and_the_server_goes_on() {
    let target = start(small(50)).unwrap();
    let addr = target.addr();
    for raw in [
        &b"POST /api/login HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nabc\r\n0\r\n\r\n"[..],
        b"POST /api/login HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nfffffffffffffffe;x=y\r\nabc\r\n",
    ] {
        let mut c = Client::new(addr);
        c.send_raw(raw);
        // 400: no body is 2^63 bytes or more; the chunk size is malformed.
        assert_eq!(c.read_response(false).status, 400);
    }
    let mut c = Client::new(addr);
    c.send_raw(
        b"POST /api/login HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1ffffffffffffffff\r\n",
    );
    assert_eq!(c.read_response(false).status, 400);
    // A target whose 8th byte falls inside a UTF-8 character.
    let mut c = Client::new(addr);
    c.send_raw("GET http:/\u{d55c}x HTTP/1.1\r\n\r\n".as_bytes());
    let status = c.read_response(false).status;
    assert!(status == 400 || status == 404, "{status}");
    // The next connection is served as usual.
    assert_eq!(Client::new(addr).get("/health").status, 200);
    target.shutdown();
}

#[test]
fn refuses_remote_bind_and_bad_options() {
    let e = start(TargetOptions {
        host: "0.0.0.0".into(),
        posts: 10,
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
    let e = start(TargetOptions {
        pool_size: 0,
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    // Two services side by side get their own ports; dropping stops one.
    let a = start(small(10)).unwrap();
    let b = start(small(10)).unwrap();
    assert_ne!(a.addr(), b.addr());
    let addr = a.addr();
    drop(a);
    assert!(std::net::TcpStream::connect(addr).is_err());
    b.shutdown();
}
