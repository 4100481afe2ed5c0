//! The server over a real socket, driving a planted run: what each kind of
//! caller gets, and that a refused body is never read.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;
use std::time::Duration;

use pado_metrics::SecondRecord;
use pado_session::{ControlError, RunState, Subscribers, Subscription};

use crate::{Dashboard, DashboardOptions, RunInfo};

const TOKEN: &str = "0123456789abcdef-token";

/// A run that only records the commands it is given; `stop` it refuses.
#[derive(Default)]
struct Planted {
    subs: Subscribers,
    samples: Mutex<Vec<pado_metrics::FailureSample>>,
    applied: Mutex<Vec<pado_session::ControlCommand>>,
    /// Every subscriber's channel: each gets every scrape, as the session's feed
    /// hands them out.
    scrapes: Mutex<Vec<crossbeam_channel::Sender<std::sync::Arc<pado_session::ObservedScrape>>>>,
    /// A distributed run's generators: their parts of each second.
    parts: Mutex<std::collections::BTreeMap<u32, Vec<pado_session::GeneratorLive>>>,
}

impl Planted {
    /// Hand `s` to every subscriber of the scrapes.
    fn scrape(&self, s: pado_session::ObservedScrape) {
        let s = std::sync::Arc::new(s);
        for tx in self.scrapes.lock().unwrap().iter() {
            tx.send(s.clone()).unwrap();
        }
    }
}

impl pado_session::LiveRun for Planted {
    fn subscribe(&self, capacity: usize) -> Subscription {
        self.subs.add(capacity)
    }
    fn state(&self) -> RunState {
        RunState {
            elapsed: Duration::from_millis(2500),
            planned_end: Duration::from_secs(30),
            seconds_closed: 2,
            stage: None,
            active_vus: 3,
            vu_cap: None,
            rate_factor: 1.0,
            paused: false,
            stopping: false,
            thresholds_failing: 0,
            abort_reason: None,
            ended: false,
        }
    }
    fn subscribe_observed(
        &self,
        _capacity: usize,
    ) -> Option<crossbeam_channel::Receiver<std::sync::Arc<pado_session::ObservedScrape>>> {
        let (tx, rx) = crossbeam_channel::unbounded();
        self.scrapes.lock().unwrap().push(tx);
        Some(rx)
    }
    fn generators(&self) -> Vec<pado_session::GeneratorLive> {
        // The latest second's parts, whichever second a reader is at.
        let parts = self.parts.lock().unwrap();
        parts.values().last().cloned().unwrap_or_default()
    }
    fn generators_at(&self, t: u32) -> Vec<pado_session::GeneratorLive> {
        self.parts
            .lock()
            .unwrap()
            .get(&t)
            .cloned()
            .unwrap_or_default()
    }
    fn failure_samples(&self, from: usize) -> Vec<pado_metrics::FailureSample> {
        self.samples
            .lock()
            .unwrap()
            .get(from..)
            .map(<[_]>::to_vec)
            .unwrap_or_default()
    }
    fn apply(&self, cmd: &pado_session::ControlCommand) -> Result<(), ControlError> {
        if *cmd == pado_session::ControlCommand::Stop {
            return Err(ControlError::Ended);
        }
        self.applied.lock().unwrap().push(cmd.clone());
        Ok(())
    }
}

fn start() -> (Dashboard, std::sync::Arc<Planted>) {
    let run = std::sync::Arc::new(Planted::default());
    let d = Dashboard::start(
        DashboardOptions {
            token: Some(TOKEN.into()),
            ..Default::default()
        },
        run.clone(),
        RunInfo {
            name: "시험".into(),
            ..RunInfo::default()
        },
    )
    .unwrap();
    (d, run)
}

/// Sends `raw` (a request with `{host}` for the dashboard's address) and reads
/// the answer until the server closes or 3 s pass: status and body.
fn send(d: &Dashboard, raw: &str) -> (u16, String) {
    let addr = d.addr().to_string();
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    s.write_all(raw.replace("{host}", &addr).as_bytes())
        .unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn post(d: &Dashboard, headers: &str, body: &str) -> (u16, String) {
    send(
        d,
        &format!(
            "POST /api/control HTTP/1.1\r\nHost: {{host}}\r\nConnection: close\r\n{headers}Content-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    )
}

const JSON: &str = "Content-Type: application/json\r\n";
const AUTH: &str = "Authorization: Bearer 0123456789abcdef-token\r\n";

#[test]
fn control_needs_the_token_and_the_own_origin() {
    let (d, run) = start();
    let pause = r#"{"action":"pause"}"#;
    assert_eq!(post(&d, JSON, pause).0, 401);
    let wrong = "Authorization: Bearer 0123456789abcdef-tokeN\r\n";
    assert_eq!(post(&d, &format!("{JSON}{wrong}"), pause).0, 401);
    assert!(run.applied.lock().unwrap().is_empty());
    let (status, body) = post(&d, &format!("{JSON}{AUTH}"), pause);
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["state"]["events"][0]["what"], "paused");
    assert_eq!(v["state"]["events"][0]["t_s"], 2.5);
    assert_eq!(v["state"]["planned_end_s"], 30.0);
    let evil = "Origin: http://evil.example\r\n";
    assert_eq!(post(&d, &format!("{JSON}{AUTH}{evil}"), pause).0, 403);
    let own = format!("Origin: http://{}\r\n", d.addr());
    assert_eq!(post(&d, &format!("{JSON}{AUTH}{own}"), pause).0, 200);
    let form = "Content-Type: application/x-www-form-urlencoded\r\n";
    assert_eq!(post(&d, &format!("{form}{AUTH}"), "action=pause").0, 415);
    assert_eq!(run.applied.lock().unwrap().len(), 2);
}

#[test]
fn bad_and_refused_commands_say_why() {
    let (d, _run) = start();
    let (status, body) = post(
        &d,
        &format!("{JSON}{AUTH}"),
        r#"{"action":"set_vus","vuz":3}"#,
    );
    assert_eq!(status, 400);
    assert!(body.contains("vuz"), "{body}");
    let (status, body) = post(&d, &format!("{JSON}{AUTH}"), r#"{"action":"stop"}"#);
    assert_eq!(status, 409);
    assert!(body.contains("ended"), "{body}");
}

#[test]
fn an_oversized_body_is_refused_without_being_read() {
    let (d, run) = start();
    // 10 MB announced, none sent: an answer comes at once, so the server never
    // waited for the body.
    let t0 = std::time::Instant::now();
    let (status, _) = send(
        &d,
        &format!("POST /api/control HTTP/1.1\r\nHost: {{host}}\r\n{JSON}{AUTH}Content-Length: 10000000\r\n\r\n"),
    );
    assert_eq!(status, 413);
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert!(run.applied.lock().unwrap().is_empty());
}

/// Sends `head` (with `{host}`, announcing `len` bytes) and a body of `len` bytes
/// without waiting for the answer to the head (`late`: the body once it came).
fn send_with_body(
    d: &Dashboard,
    head: &str,
    len: usize,
    late: bool,
) -> Result<(u16, String), String> {
    let addr = d.addr().to_string();
    pado_h1server::body_anyway::send_body_anyway(&addr, &head.replace("{host}", &addr), len, late)
}

#[test]
fn a_refused_command_s_body_sent_anyway_does_not_reset_its_answer() {
    let (d, run) = start();
    let wrong = "Authorization: Bearer 0123456789abcdef-tokeN\r\n";
    // A wrong token (401) and a body too large for a command (413): 1 MiB with the
    // head in one write, far more than the server reads with the head; then a
    // body sent once the refusal has arrived.
    for (auth, want) in [(wrong, 401), (AUTH, 413)] {
        for (len, late) in [(1 << 20, false), (64 * 1024, true), (100, true)] {
            if want == 413 && len <= MAX_CONTROL_BODY_LEN {
                continue;
            }
            let head = format!(
                "POST /api/control HTTP/1.1\r\nHost: {{host}}\r\nConnection: close\r\n{JSON}{auth}Content-Length: {len}\r\n\r\n"
            );
            let (status, body) = send_with_body(&d, &head, len, late)
                .unwrap_or_else(|e| panic!("{want}, {len} bytes, late {late}: {e}"));
            assert_eq!(status, want, "{len} bytes, late {late}: {body}");
            assert!(
                !body.is_empty(),
                "the answer says why: {len} bytes, late {late}"
            );
        }
    }
    assert!(run.applied.lock().unwrap().is_empty());
    // The server still serves the caller with the token.
    assert_eq!(
        post(&d, &format!("{JSON}{AUTH}"), r#"{"action":"pause"}"#).0,
        200
    );
}

/// [`crate::access::MAX_CONTROL_BODY`] as a length.
const MAX_CONTROL_BODY_LEN: usize = crate::access::MAX_CONTROL_BODY as usize;

#[test]
fn a_foreign_host_is_refused_for_the_page_too() {
    let (d, _run) = start();
    let get = |host: &str, path: &str| {
        send(
            &d,
            &format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
        )
    };
    assert_eq!(get("evil.example", "/").0, 403);
    assert_eq!(get("evil.example", "/api/seconds").0, 403);
    let (status, page) = get(&d.addr().to_string(), "/");
    assert_eq!(status, 200);
    assert!(page.to_ascii_lowercase().contains("<html"), "{page}");
    assert_eq!(get("localhost", "/assets/app.js").0, 200);
    assert_eq!(get("localhost", "/assets/../Cargo.toml").0, 404);
    // HEAD of the stream: its head, no stream.
    let t0 = std::time::Instant::now();
    let (status, body) = send(
        &d,
        "HEAD /api/stream HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n",
    );
    assert_eq!((status, body.as_str()), (200, ""));
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
}

#[test]
fn run_says_whether_the_caller_may_steer() {
    let (d, _run) = start();
    let get = |auth: &str| {
        let (s, b) = send(
            &d,
            &format!("GET /api/run HTTP/1.1\r\nHost: {{host}}\r\n{auth}Connection: close\r\n\r\n"),
        );
        assert_eq!(s, 200, "{b}");
        serde_json::from_str::<serde_json::Value>(&b).unwrap()
    };
    let v = get("");
    assert_eq!(
        (v["name"].as_str(), v["control"].as_bool()),
        (Some("시험"), Some(false))
    );
    assert_eq!(v["baseline"], serde_json::Value::Null);
    assert_eq!(v["run_id"], serde_json::Value::Null, "not known yet");
    assert_eq!(get(AUTH)["control"], true);
}

#[test]
fn seconds_stream_and_files_come_after_the_end() {
    let (d, run) = start();
    // The feed thread subscribed at start: planted seconds reach the store.
    for t in 0..3 {
        run.subs.send(&SecondRecord::new(t));
    }
    let page = crate::server::tests::wait_seconds(&d, 3);
    assert_eq!(page["next"], 3);
    let (status, body) = send(
        &d,
        "GET /api/seconds?from=x HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 400, "{body}");
    // The stream starts with every second from `from`, then the state.
    let addr = d.addr().to_string();
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    write!(s, "GET /api/stream?from=1 HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut got = String::new();
    let mut buf = [0u8; 4096];
    while !got.contains("event: state") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "{got}");
        got.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(got.contains("text/event-stream"), "{got}");
    assert_eq!(got.matches("event: second").count(), 2, "{got}");
    assert!(
        got.contains("\"t\":1") && got.contains("\"t\":2") && !got.contains("\"t\":0"),
        "{got}"
    );
    assert!(got.contains("event: state\nid: 3\n"), "{got}");
    drop(s);
    // A browser's EventSource reconnecting goes on from the id it last got.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    write!(
        s,
        "GET /api/stream?from=0 HTTP/1.1\r\nHost: {addr}\r\nLast-Event-ID: 2\r\n\r\n"
    )
    .unwrap();
    let mut again = String::new();
    while !again.contains("event: state") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "{again}");
        again.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert_eq!(again.matches("event: second").count(), 1, "{again}");
    assert!(again.contains("\"t\":2"), "{again}");
    drop(s);
    let file = "GET /files/summary.json HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n";
    assert_eq!(send(&d, file).0, 409);
    // The result directory inside another that holds a file the page must not give.
    let outer = tempfile::tempdir().unwrap();
    let dir = outer.path().join("result");
    std::fs::create_dir(&dir).unwrap();
    let summary = r#"{"requests":7,"이름":"파도","bottlenecks":{"limit":"db pool (app)"}}"#;
    std::fs::write(dir.join("summary.json"), summary).unwrap();
    std::fs::write(outer.path().join("outside.json"), "x").unwrap();
    d.finished(&dir);
    let (status, body) = send(&d, file);
    assert_eq!((status, body.as_str()), (200, summary));
    for bad in [
        "/files/..%2Foutside.json",
        "/files/../outside.json",
        "/files/nothing.json",
    ] {
        let req = format!("GET {bad} HTTP/1.1\r\nHost: {{host}}\r\nConnection: close\r\n\r\n");
        assert_eq!(send(&d, &req).0, 404, "{bad}");
    }
    let (_, state) = send(
        &d,
        "GET /api/state HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n",
    );
    let v: serde_json::Value = serde_json::from_str(&state).unwrap();
    assert_eq!(v["ended"], true);
    assert_eq!(v["summary"]["requests"], 7);
    assert_eq!(v["bottleneck"], "db pool (app)");
    assert_eq!(v["files"][0]["url"], "/files/summary.json");
    let (_, run) = send(
        &d,
        "GET /api/run HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n",
    );
    let v: serde_json::Value = serde_json::from_str(&run).unwrap();
    assert_eq!(v["run_id"], "result", "the directory's name once known");
}

/// `/api/seconds?from=0` once it holds `n` seconds (within 3 s).
fn wait_seconds(d: &Dashboard, n: usize) -> serde_json::Value {
    for _ in 0..60 {
        let (_, b) = send(
            d,
            "GET /api/seconds?from=0 HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n",
        );
        let v: serde_json::Value = serde_json::from_str(&b).unwrap();
        if v["seconds"].as_array().unwrap().len() >= n {
            return v;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the store never held {n} seconds");
}

#[test]
fn the_target_s_metrics_land_on_the_second_they_were_read_in() {
    let (d, run) = start();
    let scrape = pado_session::ObservedScrape {
        t: 0.4,
        endpoint: "app".into(),
        values: vec![("db_pool_in_use{pool=\"주문\"}".into(), 7.0)],
        ms: 2.0,
        analysed: Vec::new(),
    };
    run.scrape(scrape);
    run.subs.send(&SecondRecord::new(0));
    run.subs.send(&SecondRecord::new(1));
    let page = wait_seconds(&d, 2);
    assert_eq!(
        page["seconds"][0]["observed"],
        serde_json::json!({"app/db_pool_in_use{pool=\"주문\"}": 7.0})
    );
    assert!(page["seconds"][1].get("observed").is_none(), "{page}");
}

#[test]
fn failures_show_their_samples_while_the_run_goes() {
    let (d, run) = start();
    let mut r = SecondRecord::new(0);
    let mut s = pado_metrics::SeriesStats::new(pado_metrics::SeriesKey::named("조회"));
    s.record(&pado_metrics::RequestSample {
        status: 503,
        failed: true,
        ..Default::default()
    });
    r.absorb(pado_metrics::Interval {
        series: vec![s],
        ..Default::default()
    });
    run.samples
        .lock()
        .unwrap()
        .push(pado_metrics::FailureSample {
            step: "조회".into(),
            category: "http_503".into(),
            second: 0,
            method: "GET".into(),
            url: "/status/503?key=***".into(),
            status: 503,
            body: "busy".into(),
            check: None,
            actual: None,
            reason: None,
            event: None,
        });
    run.subs.send(&r);
    run.subs.send(&SecondRecord::new(1));
    wait_seconds(&d, 2);
    let (_, state) = send(
        &d,
        "GET /api/state HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n",
    );
    let v: serde_json::Value = serde_json::from_str(&state).unwrap();
    let f = &v["failures"][0];
    assert_eq!(
        (
            f["category"].as_str(),
            f["first_s"].as_u64(),
            f["count"].as_u64()
        ),
        (Some("http_503"), Some(0), Some(1))
    );
    assert_eq!(
        f["samples"].as_array().unwrap().len(),
        1,
        "taken once, not each second"
    );
    assert_eq!(f["samples"][0]["url"], "/status/503?key=***");
}

#[test]
fn a_stream_nobody_reads_holds_up_neither_the_store_nor_other_callers() {
    let (d, run) = start();
    let addr = d.addr().to_string();
    // Two streams from second 0 whose reader never reads: their writes block once
    // the socket buffers are full (megabytes of seconds below).
    let mut idle = Vec::new();
    for _ in 0..2 {
        let mut s = TcpStream::connect(&addr).unwrap();
        write!(s, "GET /api/stream HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
        idle.push(s);
    }
    let n = 8_000u32;
    let kept = || pado_base::lock(&d.shared.store).len();
    for t in 0..n {
        let mut r = SecondRecord::new(t);
        r.vus = 1_000_000 + t;
        run.subs.send(&r);
        // The subscription holds 64 seconds, more than a run sends while the
        // store takes one: wait for the store every 32, and never long.
        if t % 32 == 31 {
            let until = std::time::Instant::now() + Duration::from_secs(10);
            while kept() < t as usize + 1 {
                assert!(
                    std::time::Instant::now() < until,
                    "the store is held up at {}",
                    kept()
                );
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
    assert_eq!(kept(), n as usize);
    // Another caller is answered meanwhile.
    let (status, _) = send(
        &d,
        "GET /api/state HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200);
    let page = wait_seconds(&d, 1);
    assert_eq!(page["seconds"][0]["vus"], 1_000_000);
    drop(idle);
}

/// Second `t` of a run that saturates at second 30: 4 VUs completing 400
/// requests of 10 ms until then, 16 VUs 800 of 20 ms for 15 s, then 32 VUs 810 of
/// 40 ms (throughput flat while latency rises: a knee at 16 VUs).
fn loaded(t: u32) -> SecondRecord {
    let (vus, n, us) = match t {
        0..30 => (4, 400, 10_000),
        30..45 => (16, 800, 20_000),
        _ => (32, 810, 40_000),
    };
    let mut s = pado_metrics::SeriesStats::new(pado_metrics::SeriesKey::named("조회"));
    for _ in 0..n {
        s.record(&pado_metrics::RequestSample {
            status: 200,
            phases: pado_metrics::Phases {
                duration_us: us,
                ..Default::default()
            },
            ..Default::default()
        });
    }
    let mut r = SecondRecord::new(t);
    r.absorb(pado_metrics::Interval {
        vus,
        series: vec![s],
        ..Default::default()
    });
    r
}

/// The scrape read at second `t` of a DB pool of 4 connections, all in use with
/// 4 requests waiting from second 30 on, 1 in use before.
fn pool_scrape(t: u32) -> pado_session::ObservedScrape {
    let full = t >= 30;
    let g = |name: &str, value: f64| pado_metrics::ScrapedSample {
        name: name.into(),
        labels: vec![("pool".into(), "HikariPool-1".into())],
        value,
        kind: pado_metrics::MetricType::Gauge,
    };
    pado_session::ObservedScrape {
        t: f64::from(t),
        endpoint: "app".into(),
        values: Vec::new(),
        ms: 0.0,
        analysed: vec![
            g("hikaricp_connections_max", 4.0),
            g("hikaricp_connections_active", if full { 4.0 } else { 1.0 }),
            g("hikaricp_connections_pending", if full { 4.0 } else { 0.0 }),
        ],
    }
}

fn state(d: &Dashboard) -> serde_json::Value {
    let (_, body) = send(
        d,
        "GET /api/state HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n",
    );
    serde_json::from_str(&body).unwrap()
}

/// Waits up to 20 s for the state's hint to have `status`.
fn hint_with(d: &Dashboard, status: &str) -> serde_json::Value {
    let until = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let v = state(d);
        if v["bottleneck_hint"]["status"] == status {
            return v;
        }
        assert!(
            std::time::Instant::now() < until,
            "no `{status}` hint: {:#}",
            v["bottleneck_hint"]
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_live_hint_says_none_before_the_knee_and_names_the_full_pool_at_the_end() {
    let (d, run) = start();
    assert!(state(&d)["bottleneck_hint"].is_null(), "nothing read yet");
    for t in 0..25 {
        run.scrape(pool_scrape(t));
        run.subs.send(&loaded(t));
    }
    // The hint is read again at most every 5 s: the next second after that.
    std::thread::sleep(super::super::hint::RECOMPUTE + Duration::from_millis(200));
    run.scrape(pool_scrape(25));
    run.subs.send(&loaded(25));
    let v = hint_with(&d, "no_limit");
    let h = &v["bottleneck_hint"];
    assert_eq!(h["loaded_seconds"], 26, "{h:#}");
    assert_eq!(h["final"], false);
    assert!(
        h["text"].as_str().unwrap().starts_with("no limit seen yet"),
        "{h:#}"
    );
    assert!(v["bottleneck"].is_null(), "{v:#}");
    for t in 26..60 {
        run.scrape(pool_scrape(t));
        run.subs.send(&loaded(t));
    }
    run.subs.close();
    // The run's result: its length, and the report's table.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("summary.json"),
        r#"{"duration_s":60.0,"bottlenecks":{"limit":"DB pool HikariPool-1 (app)"}}"#,
    )
    .unwrap();
    d.finished(dir.path());
    let v = hint_with(&d, "limit");
    let h = &v["bottleneck_hint"];
    assert_eq!(h["component"]["component"], "DB pool HikariPool-1", "{h:#}");
    assert_eq!(h["component"]["verdict"], "yes");
    assert_eq!(h["confidence"], "high");
    assert_eq!(h["final"], true, "read once more over the whole run");
    assert_eq!(
        (
            h["window"]["start_s"].as_f64(),
            h["window"]["end_s"].as_f64()
        ),
        (Some(30.0), Some(60.0))
    );
    assert!(
        h["text"]
            .as_str()
            .unwrap()
            .starts_with("likely limit: DB pool HikariPool-1 (app) (4/4 active, 4 pending"),
        "{h:#}"
    );
    assert_eq!(v["bottleneck"], "DB pool HikariPool-1 (app)");
}

#[test]
fn each_second_carries_every_generator_s_part_of_it_for_a_reload() {
    let (d, run) = start();
    let part = |name: &str, requests, cpu, reporting| pado_session::GeneratorLive {
        name: name.into(),
        segment: None,
        requests,
        cpu_pct: cpu,
        reporting,
    };
    {
        let mut parts = run.parts.lock().unwrap();
        parts.insert(
            0,
            vec![
                part("생성기-a", 30, Some(12.5), true),
                part("b", 10, Some(20.0), true),
            ],
        );
        parts.insert(
            1,
            vec![
                part("생성기-a", 25, Some(11.0), true),
                part("b", 0, None, false),
            ],
        );
    }
    // Both seconds are already in when the store reads the first: each must
    // carry its own parts, not the latest.
    let with = |t: u32, n: u64| {
        let mut r = SecondRecord::new(t);
        let mut s = pado_metrics::SeriesStats::new(pado_metrics::SeriesKey::named("조회"));
        for _ in 0..n {
            s.record(&pado_metrics::RequestSample {
                status: 200,
                ..Default::default()
            });
        }
        r.absorb(pado_metrics::Interval {
            series: vec![s],
            ..Default::default()
        });
        r
    };
    run.subs.send(&with(0, 40));
    run.subs.send(&with(1, 25));
    let page = wait_seconds(&d, 2);
    assert_eq!(
        page["seconds"][0]["generators"],
        serde_json::json!({
            "생성기-a": {"requests": 30, "share": 0.75, "cpu_pct": 12.5, "reporting": true},
            "b": {"requests": 10, "share": 0.25, "cpu_pct": 20.0, "reporting": true},
        })
    );
    assert_eq!(
        page["seconds"][1]["generators"],
        serde_json::json!({
            "생성기-a": {"requests": 25, "share": 1.0, "cpu_pct": 11.0, "reporting": true},
            "b": {"requests": 0, "share": 0.0, "reporting": false},
        })
    );
}
