//! The scrape loop against pado's test server, whose `/metrics` reports what it
//! counted: stored values must equal the server's own counts, failures must be
//! recorded by category without stopping the loop.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use pado_observe::{Endpoint, ObserveConfig, Scraper};
use pado_results::{read_observations, ObserveWriter};
use pado_testkit::{ServerOptions, TestServer};

/// A scratch directory removed when the test ends (hold it while it is used).
fn tmp(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("pado-observe-{name}-"))
        .tempdir()
        .unwrap()
}

fn endpoint(name: &str, url: &str) -> Endpoint {
    Endpoint {
        name: name.into(),
        url: url::Url::parse(url).unwrap(),
        headers: Vec::new(),
        shown: None,
    }
}

fn get(server: &TestServer, path: &str) {
    let mut s = TcpStream::connect(server.addr()).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
}

#[test]
fn scraped_values_match_the_servers_counts_and_failures_are_categorised() {
    let server = TestServer::start();
    // Misbehaving endpoints on a server of their own, so the first one's counter
    // holds only the requests made below.
    let bad = TestServer::start();
    let dir = tmp("counts");
    let refused = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let cfg = ObserveConfig {
        endpoints: vec![
            endpoint("app", &server.url("/metrics")),
            endpoint(
                "om",
                &format!("{}?format=openmetrics", server.url("/metrics")),
            ),
            endpoint("five", &bad.url("/status/503")),
            endpoint("hang", &bad.url("/hang")),
            endpoint("garbage", &bad.url("/garbage")),
            endpoint("refused", &format!("http://127.0.0.1:{refused}/metrics")),
            endpoint("html", &bad.url("/")),
        ],
        interval: Duration::from_millis(200),
        timeout: Duration::from_millis(150),
        insecure: false,
    };
    let t0 = Instant::now();
    let scraper = Scraper::start(cfg, t0, ObserveWriter::create(dir.path()).unwrap()).unwrap();
    for _ in 0..25 {
        get(&server, "/some/api");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let tally = scraper.finish();
    assert!(tally.write_error.is_none(), "{:?}", tally.write_error);

    let obs = read_observations(dir.path(), &|_| true).unwrap();
    let log = |n: &str| obs.endpoints.iter().find(|e| e.name == n).unwrap().clone();
    let app = log("app");
    // ~0.8 s at 200 ms, plus the final scrape.
    assert!(app.scrapes >= 4, "{app:?}");
    assert_eq!(app.failed, 0, "{app:?}");
    assert!(app.url.ends_with("/metrics"));
    // The last scrape happened after every request: the stored counter is exact.
    let api = server.stats().by_path.get("/some/api").copied().unwrap();
    assert_eq!(api, 25);
    let total = obs.named("app", "testkit_requests_total").next().unwrap();
    assert_eq!(
        total.labels.get("server").map(String::as_str),
        Some("테스트")
    );
    assert!(total.is_monotonic());
    assert_eq!(total.points.last().unwrap().1, 25.0);
    assert!(total.points.first().unwrap().1 < 25.0, "{:?}", total.points);
    assert!(total
        .points
        .windows(2)
        .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    // Scrapes land on the interval grid from t0.
    assert!(total.points[0].0.abs() < 0.1, "{:?}", total.points);
    assert!((total.points[1].0 - 0.2).abs() < 0.1, "{:?}", total.points);
    // The server saw exactly the scrapes pado recorded (two endpoints hit /metrics).
    let scrapes = server.stats().by_path.get("/metrics").copied().unwrap();
    assert_eq!(scrapes, app.scrapes + log("om").scrapes);

    let om = obs.named("om", "testkit_requests_total").next().unwrap();
    assert_eq!(om.points.last().unwrap().1, 25.0);
    assert!(
        om.is_monotonic(),
        "OpenMetrics counter family `testkit_requests`"
    );

    let cat = |n: &str| {
        let e = log(n);
        assert_eq!(e.failed, e.scrapes, "{e:?}");
        assert!(e.scrapes >= 4, "the loop went on: {e:?}");
        e.errors.keys().next().cloned().unwrap()
    };
    assert_eq!(cat("five"), "http_503");
    assert_eq!(cat("hang"), "timeout");
    assert_eq!(cat("garbage"), "protocol");
    assert_eq!(cat("refused"), "connect_refused");
    assert_eq!(cat("html"), "parse");
    assert!(log("hang").max_ms < 1000.0);
    assert!(tally.failed >= 5 * 4);
}

#[test]
fn scrapes_https_and_keeps_credentials_out_of_the_result() {
    let server = TestServer::start_with(ServerOptions {
        tls: true,
        ..Default::default()
    });
    let dir = tmp("tls");
    let url = server
        .url("/metrics")
        .replace("https://", "https://user:s3cret@");
    let mut e = endpoint("secure", &url);
    e.headers
        .push(("Authorization".into(), "Bearer hunter2".into()));
    let cfg = ObserveConfig {
        endpoints: vec![e],
        interval: Duration::from_millis(100),
        timeout: Duration::from_secs(2),
        insecure: true,
    };
    let scraper = Scraper::start(
        cfg,
        Instant::now(),
        ObserveWriter::create(dir.path()).unwrap(),
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(250));
    scraper.finish();
    let obs = read_observations(dir.path(), &|_| true).unwrap();
    assert_eq!(obs.endpoints[0].failed, 0, "{:?}", obs.endpoints[0]);
    assert!(obs.named("secure", "testkit_connections").next().is_some());
    let text = std::fs::read_to_string(dir.path().join(pado_results::OBSERVE_FILE)).unwrap();
    assert!(
        !text.contains("s3cret") && !text.contains("hunter2"),
        "{text}"
    );
    // Keep-alive: one connection for all scrapes.
    assert_eq!(server.stats().connections, 1);
}
