//! The run-time faults added for resilience and soak tests, over real sockets: a pool
//! and the workers resized at run time, a restart in place, a memory leak with its latency creep, a
//! connection leak, and the validation of their values.

mod common;

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::{parse_prometheus, Client, Exposition};
use pado_demo_target::{start, Faults, TargetOptions};

fn scrape(c: &mut Client) -> Exposition {
    let r = c.get("/metrics");
    assert_eq!(r.status, 200);
    parse_prometheus(&r.text()).unwrap_or_else(|e| panic!("{e}\n{}", r.text()))
}

fn pool_gauge(m: &Exposition, name: &str) -> f64 {
    m.sum(name, &[("pool", "HikariPool-1")])
}

/// `clients` closed-loop clients listing posts (one DB query each, never cached)
/// until `stop`; returns how many requests each finished.
fn db_load(
    addr: SocketAddr,
    clients: usize,
    stop: Arc<AtomicBool>,
) -> Vec<thread::JoinHandle<u64>> {
    (0..clients)
        .map(|_| {
            let stop = stop.clone();
            thread::spawn(move || {
                let mut c = Client::new(addr);
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    assert_eq!(c.get("/api/posts?size=1").status, 200);
                    n += 1;
                }
                n
            })
        })
        .collect()
}

/// The largest `hikaricp_connections_active` seen in scrapes every 10 ms for `d`.
fn max_active(c: &mut Client, d: Duration) -> f64 {
    let t = Instant::now();
    let mut max = 0f64;
    while t.elapsed() < d {
        max = max.max(pool_gauge(&scrape(c), "hikaricp_connections_active"));
        thread::sleep(Duration::from_millis(10));
    }
    max
}

#[test]
fn a_shrunk_pool_caps_concurrent_queries_and_zero_restores_it() {
    let query = Duration::from_millis(40);
    let target = start(TargetOptions {
        posts: 500,
        workers: 8,
        pool_size: 4,
        query_cost: query,
        ..Default::default()
    })
    .unwrap();
    let addr = target.addr();
    let mut c = Client::new(addr);
    let stop = Arc::new(AtomicBool::new(false));
    let load = db_load(addr, 8, stop.clone());

    // The configured pool: all 4 connections in use under 8 clients.
    assert_eq!(max_active(&mut c, Duration::from_millis(400)), 4.0);
    let r = c.post_json("/admin/faults", None, r#"{"pool_size": 1}"#);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["pool_size"], 1);
    let m = scrape(&mut c);
    assert_eq!(pool_gauge(&m, "hikaricp_connections_max"), 1.0);
    assert_eq!(pool_gauge(&m, "hikaricp_connections"), 1.0);
    assert_eq!(m.sum("pado_target_fault", &[("fault", "pool_size")]), 1.0);
    // The queries in flight finish (one query's time), then never more than one
    // at a time; the rest wait.
    thread::sleep(query * 2);
    let queries = |m: &Exposition| pool_gauge(m, "hikaricp_connections_usage_seconds_count");
    let before = queries(&scrape(&mut c));
    let t = Instant::now();
    assert_eq!(max_active(&mut c, Duration::from_millis(600)), 1.0);
    let m = scrape(&mut c);
    let rate = (queries(&m) - before) / t.elapsed().as_secs_f64();
    assert!(
        rate <= 1.15 / query.as_secs_f64(),
        "one connection of {query:?} served {rate:.1} queries/s"
    );
    assert!(pool_gauge(&m, "hikaricp_connections_pending") >= 1.0);
    assert_eq!(pool_gauge(&m, "hikaricp_connections_idle"), 0.0);

    // Growing past the configured size works too, and 0 restores it.
    c.post_json("/admin/faults", None, r#"{"pool_size": 6}"#);
    assert_eq!(max_active(&mut c, Duration::from_millis(400)), 6.0);
    let r = c.post_json("/admin/faults", None, r#"{"pool_size": 0}"#);
    assert_eq!(r.json()["pool_size"], 0);
    thread::sleep(query * 2);
    assert_eq!(max_active(&mut c, Duration::from_millis(400)), 4.0);
    assert_eq!(pool_gauge(&scrape(&mut c), "hikaricp_connections_max"), 4.0);
    stop.store(true, Ordering::Relaxed);
    for h in load {
        assert!(h.join().unwrap() > 0);
    }
    // Idle again: every connection back, none lost or doubled by the resizes.
    let m = scrape(&mut c);
    assert_eq!(pool_gauge(&m, "hikaricp_connections_active"), 0.0);
    assert_eq!(pool_gauge(&m, "hikaricp_connections_idle"), 4.0);
    target.shutdown();
}

fn worker_gauge(m: &Exposition, name: &str) -> f64 {
    m.sum(name, &[("name", "http")])
}

/// Requests the workers finished per second over `d`, read from the service's own
/// counter (so the clients' side of the exchange does not count).
fn served_per_s(c: &mut Client, d: Duration) -> f64 {
    let done = |c: &mut Client| worker_gauge(&scrape(c), "executor_completed_tasks_total");
    let before = done(c);
    let t = Instant::now();
    thread::sleep(d);
    (done(c) - before) / t.elapsed().as_secs_f64()
}

/// The planted truth: with `w` workers each holding its permit for one query of
/// `cost` (the pool is larger, so never the limit), the service serves `w / cost`
/// requests per second. Resizing the workers at run time moves it there.
#[test]
fn resized_workers_set_the_capacity_at_run_time_and_zero_restores_them() {
    let cost = Duration::from_millis(25);
    let target = start(TargetOptions {
        posts: 500,
        workers: 2,
        pool_size: 16,
        query_cost: cost,
        ..Default::default()
    })
    .unwrap();
    let addr = target.addr();
    let mut c = Client::new(addr);
    let stop = Arc::new(AtomicBool::new(false));
    // More clients than workers at every size, so a worker never waits for work.
    let load = db_load(addr, 12, stop.clone());
    thread::sleep(Duration::from_millis(300));
    let truth = |w: f64| w / cost.as_secs_f64();

    let two = served_per_s(&mut c, Duration::from_secs(2));
    assert!(
        (two - truth(2.0)).abs() <= 0.05 * truth(2.0),
        "2 workers of {cost:?}: {two:.1} requests/s, truth {:.1}",
        truth(2.0)
    );
    let r = c.post_json("/admin/faults", None, r#"{"workers": 4}"#);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["workers"], 4);
    let m = scrape(&mut c);
    assert_eq!(worker_gauge(&m, "executor_pool_max_threads"), 4.0);
    assert_eq!(m.sum("pado_target_fault", &[("fault", "workers")]), 4.0);
    thread::sleep(Duration::from_millis(200));
    let four = served_per_s(&mut c, Duration::from_secs(2));
    assert!(
        (four - truth(4.0)).abs() <= 0.05 * truth(4.0),
        "4 workers of {cost:?}: {four:.1} requests/s, truth {:.1}",
        truth(4.0)
    );
    assert!(
        (four / two - 2.0).abs() <= 0.1,
        "twice the workers served {:.2}× the requests",
        four / two
    );
    assert!(worker_gauge(&scrape(&mut c), "executor_active_threads") <= 4.0);

    // 0 restores the configured 2: the workers busy beyond them finish their
    // request, then never more than 2 are busy at once.
    let r = c.post_json("/admin/faults", None, r#"{"workers": 0}"#);
    assert_eq!(r.json()["workers"], 0);
    assert_eq!(
        worker_gauge(&scrape(&mut c), "executor_pool_max_threads"),
        2.0
    );
    thread::sleep(cost * 4);
    let t = Instant::now();
    let mut busiest = 0f64;
    while t.elapsed() < Duration::from_millis(400) {
        busiest = busiest.max(worker_gauge(&scrape(&mut c), "executor_active_threads"));
        thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(busiest, 2.0, "restored to 2 workers");
    stop.store(true, Ordering::Relaxed);
    for h in load {
        assert!(h.join().unwrap() > 0);
    }
    // Idle again: every worker back, none lost or doubled by the resizes.
    let m = scrape(&mut c);
    assert_eq!(worker_gauge(&m, "executor_active_threads"), 0.0);
    assert_eq!(worker_gauge(&m, "executor_pool_max_threads"), 2.0);
    target.shutdown();
}

/// Whether a new connection to `addr` is refused now.
fn refused(addr: SocketAddr) -> bool {
    match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
        Ok(_) => false,
        Err(e) => {
            assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
            true
        }
    }
}

/// `/metrics` over a connection of its own, or `None` if the service does not answer
/// (refused, or closed by a restart).
fn try_scrape(addr: SocketAddr) -> Option<Exposition> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    std::io::Write::write_all(
        &mut s,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .ok()?;
    let mut got = Vec::new();
    s.read_to_end(&mut got).ok()?;
    let text = String::from_utf8(got).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200")
        .then(|| parse_prometheus(body).unwrap())
}

/// Waits (at most 5 s) until the service answers again after its `n`th restart.
fn wait_restarted(addr: SocketAddr, n: f64) -> Client {
    let t = Instant::now();
    loop {
        if try_scrape(addr).is_some_and(|m| m.sum("pado_target_restarts_total", &[]) == n) {
            return Client::new(addr);
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "no restart {n} in 5 s"
        );
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_restart_refuses_connections_for_its_length_then_serves_cold_with_the_leak_freed() {
    let target = start(TargetOptions {
        posts: 500,
        ..Default::default()
    })
    .unwrap();
    let addr = target.addr();
    let mut c = Client::new(addr);
    c.post_json("/admin/faults", None, r#"{"leak_kib_per_request": 64}"#);
    for _ in 0..10 {
        assert_eq!(c.get("/api/posts/7").status, 200);
    }
    let m = scrape(&mut c);
    assert_eq!(m.sum("pado_target_leaked_bytes", &[]), 10.0 * 64.0 * 1024.0);
    assert_eq!(m.sum("cache_size", &[("cache", "posts")]), 1.0);
    let started = m.sum("process_start_time_seconds", &[]);
    let served = m.sum("http_server_requests_seconds_count", &[]);

    // A request in flight (held 3 s by added latency) when the restart comes.
    c.post_json("/admin/faults", None, r#"{"added_latency_ms": 3000}"#);
    let in_flight = thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        std::io::Write::write_all(&mut s, b"GET /api/posts/1 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        got
    });
    thread::sleep(Duration::from_millis(300));
    c.post_json("/admin/faults", None, r#"{"added_latency_ms": 0}"#);

    let len = Duration::from_millis(800);
    let r = c.post_json("/admin/faults", None, r#"{"restart_ms": 800}"#);
    let posted = Instant::now();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["restart_ms"], 0, "one-shot: reads back 0");
    // The connection that asked is closed with the others.
    assert!(c.read_to_close().is_empty());
    // The request in flight gets no response at all.
    assert!(in_flight.join().unwrap().is_empty());

    // Refused from (about) the answer on, for the restart's length.
    let mut first_refused = None;
    let mut last_refused = None;
    let served_again = loop {
        let at = posted.elapsed();
        if refused(addr) {
            first_refused.get_or_insert(at);
            last_refused = Some(at);
        } else if first_refused.is_some() {
            break at;
        }
        assert!(at < Duration::from_secs(5), "not back after {at:?}");
        thread::sleep(Duration::from_millis(10));
    };
    let (first, last) = (first_refused.unwrap(), last_refused.unwrap());
    assert!(first < Duration::from_millis(200), "refused from {first:?}");
    assert!(
        last >= len - Duration::from_millis(100),
        "refused until {last:?}"
    );
    assert!(
        served_again < len + Duration::from_millis(600),
        "back after {served_again:?}"
    );

    // Back: same port, caches cold, the leak freed, counters kept, a new start time.
    let mut c = Client::new(addr);
    let m = scrape(&mut c);
    assert_eq!(m.sum("pado_target_leaked_bytes", &[]), 0.0);
    assert_eq!(m.sum("cache_size", &[("cache", "posts")]), 0.0);
    assert_eq!(m.sum("pado_target_restarts_total", &[]), 1.0);
    assert_eq!(m.sum("http_server_requests_seconds_count", &[]), served);
    let restarted = m.sum("process_start_time_seconds", &[]);
    assert!(restarted - started >= 0.7, "{started} -> {restarted}");
    assert!(m.sum("process_uptime_seconds", &[]) < 1.0);
    let f = c.get("/admin/faults").json();
    assert_eq!(f["restart_ms"], 0);
    assert_eq!(f["leak_kib_per_request"], 64, "the leak's cause stays");
    let misses = |m: &Exposition| {
        m.sum(
            "cache_gets_total",
            &[("cache", "posts"), ("result", "miss")],
        )
    };
    let before = misses(&m);
    assert_eq!(c.get("/api/posts/7").status, 200);
    let m = scrape(&mut c);
    assert_eq!(misses(&m) - before, 1.0, "cold cache");
    assert_eq!(m.sum("pado_target_leaked_bytes", &[]), 64.0 * 1024.0);

    // The library's handle restarts too, and the target keeps its address.
    target
        .set_faults(Faults {
            restart_ms: 200,
            ..Faults::default()
        })
        .unwrap();
    assert_eq!(target.faults().restart_ms, 0);
    let mut c = wait_restarted(target.addr(), 2.0);
    assert_eq!(c.get("/api/posts/1").status, 200);
    target.shutdown();
}

#[test]
fn the_leak_retains_exactly_its_kib_per_request_and_latency_creeps_with_it() {
    let target = start(TargetOptions {
        posts: 500,
        ..Default::default()
    })
    .unwrap();
    let mut c = Client::new(target.addr());
    let leaked = |c: &mut Client| scrape(c).sum("pado_target_leaked_bytes", &[]);
    assert_eq!(leaked(&mut c), 0.0);
    c.post_json("/admin/faults", None, r#"{"leak_kib_per_request": 24}"#);
    // API requests of every kind count; management endpoints do not.
    let paths = [
        "/api/posts/1",
        "/api/posts?size=2",
        "/api/search?q=test",
        "/nope",
    ];
    for i in 0..20 {
        c.get(paths[i % paths.len()]);
        assert_eq!(c.get("/health").status, 200);
    }
    assert_eq!(leaked(&mut c), 20.0 * 24.0 * 1024.0);

    // 1 MiB per request: resident memory really grows.
    let rss = |c: &mut Client| scrape(c).sum("process_resident_memory_bytes", &[]);
    let rss0 = rss(&mut c);
    assert!(rss0 > 0.0);
    c.post_json("/admin/faults", None, r#"{"leak_kib_per_request": 1024}"#);
    for _ in 0..96 {
        assert_eq!(c.get("/api/posts/1").status, 200);
    }
    let held = leaked(&mut c);
    assert_eq!(held, (20.0 * 24.0 + 96.0 * 1024.0) * 1024.0);
    let rss1 = rss(&mut c);
    assert!(rss1 - rss0 >= 64.0 * 1048576.0, "resident {rss0} -> {rss1}");

    // Setting 0 stops the growth and frees nothing.
    c.post_json("/admin/faults", None, r#"{"leak_kib_per_request": 0}"#);
    c.get("/api/posts/1");
    assert_eq!(leaked(&mut c), held);

    // Creep: ~96.5 MiB held × 5000 µs/MiB ≈ 480 ms on every API request.
    let creep = held / 1048576.0 * 5000.0 / 1e6;
    let t = Instant::now();
    c.get("/api/posts/1");
    let plain = t.elapsed().as_secs_f64();
    c.post_json("/admin/faults", None, r#"{"leak_creep_us_per_mib": 5000}"#);
    let t = Instant::now();
    assert_eq!(c.get("/api/posts/1").status, 200);
    let crept = t.elapsed().as_secs_f64();
    assert!(crept >= creep, "{crept} s with a creep of {creep} s");
    assert!(crept < plain + creep + 1.0, "{crept} s, creep {creep} s");
    let t = Instant::now();
    assert_eq!(c.get("/health").status, 200);
    assert!(t.elapsed().as_secs_f64() < creep / 2.0);
    // The service's own records show it too.
    let m = scrape(&mut c);
    let max = m.sum(
        "http_server_requests_seconds_max",
        &[("uri", "/api/posts/{id}")],
    );
    assert!(max >= creep, "{max}");
    assert_eq!(
        m.sum("pado_target_fault", &[("fault", "leak_creep_us_per_mib")]),
        5000.0
    );
    target.shutdown();
}

#[test]
fn the_pool_leak_takes_one_connection_per_period_until_a_restart() {
    let period = Duration::from_millis(400);
    let target = start(TargetOptions {
        posts: 500,
        pool_size: 3,
        pool_timeout: Duration::from_millis(300),
        ..Default::default()
    })
    .unwrap();
    let mut c = Client::new(target.addr());
    let posted = Instant::now();
    c.post_json("/admin/faults", None, r#"{"pool_leak_every_s": 0.4}"#);
    // Watch `active` (no load: only leaked connections are in use) as it climbs.
    let mut steps: Vec<(f64, Duration)> = Vec::new();
    let mut last = 0.0;
    while posted.elapsed() < period * 3 + Duration::from_millis(300) {
        let m = scrape(&mut c);
        let active = pool_gauge(&m, "hikaricp_connections_active");
        assert_eq!(m.sum("pado_target_pool_leaked_connections", &[]), active);
        if active != last {
            steps.push((active, posted.elapsed()));
            last = active;
        }
        thread::sleep(Duration::from_millis(10));
    }
    let values: Vec<f64> = steps.iter().map(|s| s.0).collect();
    assert_eq!(values, [1.0, 2.0, 3.0], "{steps:?}");
    for (i, (_, at)) in steps.iter().enumerate() {
        let due = period * (i as u32 + 1);
        assert!(
            *at >= due && *at < due + Duration::from_millis(200),
            "leak {} at {at:?}, due at {due:?}: {steps:?}",
            i + 1
        );
    }
    // Every connection leaked: DB requests time out (HikariCP's connectionTimeout).
    let r = c.get("/api/posts?size=1");
    assert_eq!(r.status, 500, "{}", r.text());
    let m = scrape(&mut c);
    assert_eq!(pool_gauge(&m, "hikaricp_connections_timeout_total"), 1.0);
    assert_eq!(pool_gauge(&m, "hikaricp_connections_idle"), 0.0);

    // A restart returns them (the fault switched off first, so none leak again).
    c.post_json("/admin/faults", None, r#"{"pool_leak_every_s": 0}"#);
    target
        .set_faults(Faults {
            restart_ms: 50,
            ..target.faults()
        })
        .unwrap();
    let mut c = wait_restarted(target.addr(), 1.0);
    let m = scrape(&mut c);
    assert_eq!(pool_gauge(&m, "hikaricp_connections_active"), 0.0);
    assert_eq!(pool_gauge(&m, "hikaricp_connections_idle"), 3.0);
    assert_eq!(c.get("/api/posts?size=1").status, 200);
    target.shutdown();
}

#[test]
fn bad_values_of_the_new_faults_are_refused_and_change_nothing() {
    let target = start(TargetOptions {
        posts: 200,
        ..Default::default()
    })
    .unwrap();
    let mut c = Client::new(target.addr());
    let before = c.get("/admin/faults").json();
    for (bad, field) in [
        (r#"{"pool_size": 10001}"#, "pool_size"),
        (r#"{"pool_size": -1}"#, "invalid faults"),
        (r#"{"workers": 10001}"#, "workers"),
        (r#"{"restart_ms": 600001}"#, "restart_ms"),
        (r#"{"leak_kib_per_request": 1025}"#, "leak_kib_per_request"),
        (
            r#"{"leak_creep_us_per_mib": 1000001}"#,
            "leak_creep_us_per_mib",
        ),
        (r#"{"pool_leak_every_s": -1}"#, "pool_leak_every_s"),
        (r#"{"pool_leak_every_s": 0.001}"#, "pool_leak_every_s"),
        (r#"{"pool_leak_every_s": 1e9}"#, "pool_leak_every_s"),
        (r#"{"restart_ms": 500, "pool_size": 20000}"#, "pool_size"),
    ] {
        let r = c.post_json("/admin/faults", None, bad);
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
        assert!(r.text().contains(field), "{bad}: {}", r.text());
    }
    // Nothing changed and no restart happened.
    assert_eq!(c.get("/admin/faults").json(), before);
    assert_eq!(scrape(&mut c).sum("pado_target_restarts_total", &[]), 0.0);
    // A restart is an action on a running service, not a start-up setting.
    let e = start(TargetOptions {
        faults: Faults {
            restart_ms: 100,
            ..Faults::default()
        },
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("restart_ms"), "{e}");
    // The other new faults may be set at start.
    let t = start(TargetOptions {
        posts: 200,
        pool_size: 4,
        faults: Faults {
            pool_size: 2,
            workers: 3,
            leak_kib_per_request: 8,
            ..Faults::default()
        },
        ..Default::default()
    })
    .unwrap();
    let mut c2 = Client::new(t.addr());
    c2.get("/api/posts/1");
    let m = scrape(&mut c2);
    assert_eq!(pool_gauge(&m, "hikaricp_connections_max"), 2.0);
    assert_eq!(worker_gauge(&m, "executor_pool_max_threads"), 3.0);
    assert_eq!(m.sum("pado_target_leaked_bytes", &[]), 8192.0);
    t.shutdown();
    target.shutdown();
}

#[test]
fn process_resources_are_exported() {
    let target = start(TargetOptions {
        posts: 200,
        ..Default::default()
    })
    .unwrap();
    let mut c = Client::new(target.addr());
    let m = scrape(&mut c);
    for (name, kind) in [
        ("process_resident_memory_bytes", "gauge"),
        ("process_virtual_memory_bytes", "gauge"),
        ("process_open_fds", "gauge"),
        ("process_max_fds", "gauge"),
        ("pado_target_leaked_bytes", "gauge"),
        ("pado_target_restarts_total", "counter"),
    ] {
        if !std::path::Path::new("/proc/self/statm").exists() && name.starts_with("process_") {
            continue;
        }
        assert_eq!(m.types.get(name).map(String::as_str), Some(kind), "{name}");
    }
    let rss = m.sum("process_resident_memory_bytes", &[]);
    assert!(rss > 1e6 && m.sum("process_virtual_memory_bytes", &[]) >= rss);
    // This test's own connections are among the open descriptors.
    let fds = m.sum("process_open_fds", &[]);
    let extra: Vec<Client> = (0..100).map(|_| Client::new(target.addr())).collect();
    thread::sleep(Duration::from_millis(200));
    // Each connection is two descriptors in this process, ours and the server's
    // (other tests of this binary open and close a few meanwhile).
    let more = scrape(&mut c).sum("process_open_fds", &[]) - fds;
    assert!((170.0..=230.0).contains(&more), "{more}");
    drop(extra);
    assert!(m.sum("process_max_fds", &[]) >= fds);
    target.shutdown();
}
