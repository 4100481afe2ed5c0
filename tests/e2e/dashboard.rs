//! `pado run --dashboard`: the live page's API watched and driven while a real run
//! goes, checked against the counting test server's own figures: seconds appear
//! while the run goes and a late reader sees them from second 0; a rate change
//! made through the API moves the server's count within 2 s and is written to
//! `events.jsonl` and `report.html`; pause stops new requests and resume restarts
//! them; a control call without the token gets 401; after the run the result
//! files download as they are on disk; a secret from the environment never shows;
//! `--baseline` serves an earlier run of the same test; `pado demo --dashboard`
//! serves its page to the end, its seconds adding up to its summary; the live
//! bottleneck hint names the demo target's small DB pool as the report's table
//! does, and no limit where it has room.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pado_testkit::TestServer;
use serde_json::Value;

use crate::harness::{pado_cmd, tmp, write_fixture, Kid};

/// The secret the scenario sends in a header and a query string.
const SECRET: &str = "PADO-DASH-SECRET-7f3a9c1e";

/// One request to the dashboard at `addr`: its status and body.
fn call(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no answer to {method} {path}: {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn get(addr: &str, path: &str) -> Value {
    let (status, body) = call(addr, "GET", path, &[], "");
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"))
}

/// POST a command with `token` (if any): the status and body.
fn control(addr: &str, token: Option<&str>, cmd: &str) -> (u16, String) {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut h = vec![("Content-Type", "application/json")];
    if let Some(b) = &bearer {
        h.push(("Authorization", b.as_str()));
    }
    call(addr, "POST", "/api/control", &h, cmd)
}

/// Waits up to `limit` for `f` to give something.
fn wait_for<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if let Some(v) = f() {
            return Some(v);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

/// The load's requests the server counted (its scrapes of `/metrics` left out).
fn load_requests(srv: &TestServer) -> u64 {
    let st = srv.stats();
    st.requests - st.by_path.get("/metrics").copied().unwrap_or(0)
}

/// The load's requests the server counted over `over`.
fn count_over(srv: &TestServer, over: Duration) -> u64 {
    let a = load_requests(srv);
    std::thread::sleep(over);
    load_requests(srv) - a
}

/// A `pado run --dashboard` going on in the background.
struct Live {
    child: Kid,
    addr: String,
    token: String,
    /// Everything pado printed on stderr, once it has ended.
    stderr: std::thread::JoinHandle<String>,
}

/// Start the scenario `scen` with the dashboard, its result in `dir`; wait for
/// the page's address.
fn start_live(scen: &std::path::Path, dir: &std::path::Path) -> Live {
    start_live_with(&[scen.as_os_str()], "4s", dir)
}

/// `pado run ARGS --dashboard` (the page kept `linger` after the end), its result
/// in `dir`; wait for the page's address.
fn start_live_with(args: &[&std::ffi::OsStr], linger: &str, dir: &std::path::Path) -> Live {
    let mut child = Kid(pado_cmd(["run"])
        .args(args)
        .args([
            "--quiet",
            "--dashboard",
            "--dashboard-linger",
            linger,
            "--no-history",
            "--out",
        ])
        .arg(dir)
        .env("PADO_E2E_DASH_KEY", SECRET)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap());
    let (tx, rx) = mpsc::channel();
    let stderr = child.0.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("dashboard: http://") {
                let _ = tx.send(url.to_string());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let url = rx
        .recv_timeout(Duration::from_secs(15))
        .expect("the dashboard's URL on stderr");
    let (addr, token) = url
        .split_once("/#token=")
        .expect("a token in the URL's fragment");
    assert!(
        addr.starts_with("127.0.0.1:"),
        "loopback by default: {addr}"
    );
    Live {
        child,
        addr: addr.to_string(),
        token: token.to_string(),
        stderr: reader,
    }
}

/// Seconds appear while the run goes, and a page opened at second 4 sees them
/// from second 0, each with the figures the server's count makes.
fn seconds_appear_from_the_first(live: &mut Live) {
    let addr = &live.addr;
    let first = wait_for(Duration::from_secs(5), || {
        let p = get(addr, "/api/seconds?from=0");
        (!p["seconds"].as_array().unwrap().is_empty()).then_some(p)
    })
    .expect("a closed second within 5 s");
    assert!(live.child.0.try_wait().unwrap().is_none(), "still running");
    assert_eq!(first["seconds"][0]["t"], 0);
    let run = get(addr, "/api/run");
    assert_eq!(run["name"], "대시보드-live");
    assert_eq!(run["control"], false, "no token presented");
    assert_eq!(run["scenarios"][0]["open_model"], true);
    wait_for(Duration::from_secs(6), || {
        (get(addr, "/api/state")["seconds_closed"].as_u64().unwrap() >= 4).then_some(())
    })
    .expect("4 seconds closed");
    let late = get(addr, "/api/seconds?from=0");
    let ts: Vec<u64> = late["seconds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["t"].as_u64().unwrap())
        .collect();
    assert!(ts.len() >= 4, "{ts:?}");
    assert_eq!(ts, (0..ts.len() as u64).collect::<Vec<_>>());
    assert_eq!(late["next"].as_u64(), Some(ts.len() as u64));
    // 20 iterations a second, 2 requests each.
    let sec1 = &late["seconds"][1];
    assert_eq!(sec1["requests"], 40, "{sec1}");
    assert_eq!(sec1["steps"]["조회"]["count"], 20, "{sec1}");
    assert_eq!(sec1["errors"]["http_503"], 20, "{sec1}");
    // The target's own metrics, scraped every 500 ms, on the seconds they were
    // read in: its count of requests (a Hangul label kept as it was).
    let key = "svc/testkit_requests_total{server=\"테스트\"}";
    let observed: Vec<f64> = late["seconds"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["observed"][key].as_f64())
        .collect();
    assert!(observed.len() >= 3, "{late}");
    assert!(observed.windows(2).all(|w| w[0] <= w[1]), "{observed:?}");
    assert!(*observed.last().unwrap() > 0.0, "{observed:?}");
}

/// Without the token nothing changes; with it a new rate reaches the server
/// within 2 s, pause holds every new request and resume lets them go again.
fn the_load_is_steered(live: &Live, srv: &TestServer) {
    let (addr, token) = (&live.addr, live.token.as_str());
    let (status, _) = control(addr, None, r#"{"action":"set_rate","per_s":60}"#);
    assert_eq!(status, 401);
    let (status, _) = control(
        addr,
        Some("0123456789abcdef-wrong"),
        r#"{"action":"pause"}"#,
    );
    assert_eq!(status, 401);
    // 20 → 60 iterations a second: the server then sees 120 requests a second.
    let (status, body) = control(addr, Some(token), r#"{"action":"set_rate","per_s":60}"#);
    assert_eq!(status, 200, "{body}");
    std::thread::sleep(Duration::from_millis(1000));
    let n = count_over(srv, Duration::from_secs(1));
    assert!(
        (100..=140).contains(&n),
        "requests in a second after the change: {n}"
    );
    let (status, body) = control(addr, Some(token), r#"{"action":"pause"}"#);
    assert_eq!(status, 200, "{body}");
    let paused: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(paused["state"]["paused"], true);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(count_over(srv, Duration::from_millis(1200)), 0, "paused");
    let (status, _) = control(addr, Some(token), r#"{"action":"resume"}"#);
    assert_eq!(status, 200);
    std::thread::sleep(Duration::from_millis(300));
    assert!(count_over(srv, Duration::from_millis(700)) > 0, "resumed");
    let state = get(addr, "/api/state");
    let events: Vec<&str> = state["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["what"].as_str().unwrap())
        .collect();
    assert_eq!(events.len(), 3, "{events:?}");
}

/// Once the run has ended the page has its summary, failures and files; the
/// files are the result directory's, and nothing holds the secret.
fn the_end_is_on_the_page(live: &Live, dir: &std::path::Path) {
    let addr = &live.addr;
    let ended = wait_for(Duration::from_secs(12), || {
        let s = get(addr, "/api/state");
        (s["ended"] == true && !s["files"].as_array().unwrap().is_empty()).then_some(s)
    })
    .expect("the end on the page");
    assert!(ended["summary"]["requests"].as_u64().unwrap() > 0);
    let (status, body) = call(addr, "GET", "/files/summary.json", &[], "");
    assert_eq!(status, 200);
    assert_eq!(
        body,
        std::fs::read_to_string(dir.join("summary.json")).unwrap()
    );
    let (status, _) = call(addr, "GET", "/files/..%2Frun.json", &[], "");
    assert_eq!(status, 404);
    let failures = &ended["failures"];
    assert!(failures.to_string().contains("http_503"), "{failures}");
    for path in [
        "/api/run",
        "/api/state",
        "/api/seconds?from=0",
        "/files/summary.json",
    ] {
        let (_, body) = call(addr, "GET", path, &[], "");
        assert!(!body.contains(SECRET), "{path} shows the secret");
    }
}

#[test]
fn a_run_is_watched_and_steered_from_its_page() {
    let _machine = crate::harness::shared_machine();
    let srv = TestServer::start();
    let t = tmp("dashboard");
    let scen = write_fixture(
        &t,
        "dashboard_a_run_is_watched_and_steered_from_its_page.yaml",
        "live.yaml",
        &[("target", srv.base_url())],
    );
    let dir = t.join("result");
    let mut live = start_live(&scen, &dir);
    seconds_appear_from_the_first(&mut live);
    the_load_is_steered(&live, &srv);
    the_end_is_on_the_page(&live, &dir);
    let status = crate::harness::wait_within(&mut live.child.0, Duration::from_secs(10));
    assert!(status.is_some(), "pado left after --dashboard-linger");
    let err = live.stderr.join().unwrap();
    assert!(!err.contains(SECRET), "{err}");
    // The changes are the run's events, in its result and its report.
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let control_lines: Vec<&str> = events
        .lines()
        .filter(|l| l.contains("\"control\""))
        .collect();
    assert_eq!(control_lines.len(), 3, "{events}");
    assert!(
        events.contains("paused") && events.contains("resumed"),
        "{events}"
    );
    let report = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        report.contains("resumed"),
        "the report shows the control events"
    );
}

/// `pado run` of `--rate 10` on `url` for `secs`, named `name`, recording into
/// the history at `home`, with `extra` flags; not waited for.
fn quick(
    url: &str,
    name: &str,
    secs: &str,
    home: &std::path::Path,
    out: &std::path::Path,
    extra: &[&str],
) -> std::process::Command {
    let mut cmd = pado_cmd([
        "run",
        "--url",
        url,
        "--rate",
        "10",
        "--duration",
        secs,
        "--name",
        name,
        "--quiet",
    ]);
    cmd.args(extra)
        .arg("--out")
        .arg(out)
        .env("PADO_HOME", home)
        .stdin(Stdio::null());
    cmd
}

#[test]
fn an_earlier_run_of_the_same_test_is_drawn_beside_and_a_bad_reference_stops_pado_first() {
    let _machine = crate::harness::shared_machine();
    let srv = TestServer::start();
    let t = tmp("dashboard-baseline");
    let home = t.join("home");
    let url = srv.url("/");
    let first = t.join("first");
    let out = quick(&url, "기준선", "2s", &home, &first, &[])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let timeline: Vec<Value> = std::fs::read_to_string(first.join("timeline.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();

    // A reference that names no run of this test: an error, nothing sent.
    let before = srv.stats().requests;
    for (reference, says) in [
        ("999", "no run with id 999"),
        ("yesterday", "give `last`, `best`"),
    ] {
        let none = t.join(format!("none-{reference}"));
        let out = quick(
            &url,
            "기준선",
            "2s",
            &home,
            &none,
            &["--dashboard", "--baseline", reference],
        )
        .output()
        .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("--baseline {reference}")) && err.contains(says),
            "{err}"
        );
        assert!(!none.join("run.json").exists());
    }
    let other = t.join("other");
    let out = quick(
        &url,
        "다른-시험",
        "2s",
        &home,
        &other,
        &["--dashboard", "--baseline", "1"],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not of this test"), "{err}");
    assert_eq!(srv.stats().requests, before, "nothing was sent");

    // `last`: the first run's seconds, as its timeline has them.
    let second = t.join("second");
    let mut cmd = quick(
        &url,
        "기준선",
        "3s",
        &home,
        &second,
        &[
            "--dashboard",
            "--baseline",
            "last",
            "--dashboard-linger",
            "1s",
        ],
    );
    let mut child = Kid(cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap());
    let mut lines = BufReader::new(child.0.stderr.take().unwrap()).lines();
    let addr = lines
        .find_map(|l| {
            l.ok()?
                .strip_prefix("dashboard: http://")
                .map(|u| u.split('/').next().unwrap().to_string())
        })
        .expect("the dashboard's address");
    let run = get(&addr, "/api/run");
    assert_eq!(run["baseline"]["run_id"], 1, "{run}");
    let b = get(&addr, "/api/baseline");
    assert_eq!(b["run_id"], 1);
    assert!(
        b["label"].as_str().unwrap().starts_with("last (run 1,"),
        "{b}"
    );
    let seconds = b["seconds"].as_array().unwrap();
    assert_eq!(seconds.len(), timeline.len());
    let sum = |xs: &[Value], k: &str| xs.iter().map(|s| s[k].as_u64().unwrap_or(0)).sum::<u64>();
    let file_requests: u64 = timeline
        .iter()
        .map(|s| {
            s["series"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x["requests"].as_u64().unwrap())
                .sum::<u64>()
        })
        .sum();
    assert_eq!(sum(seconds, "requests"), file_requests);
    assert!(file_requests >= 15, "{file_requests}");
    drop(lines);
    assert!(crate::harness::wait_within(&mut child.0, Duration::from_secs(15)).is_some());
}

#[test]
fn the_demo_serves_its_page_until_its_end() {
    let _machine = crate::harness::shared_machine();
    let t = tmp("dashboard-demo");
    let out = t.join("demo");
    let mut child = Kid(pado_cmd([
        "demo",
        "--duration",
        "4s",
        "--quiet",
        "--dashboard",
        "--dashboard-linger",
        "3s",
        "--out",
    ])
    .arg(&out)
    .env("PADO_HOME", t.join("home"))
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap());
    let mut lines = BufReader::new(child.0.stderr.take().unwrap()).lines();
    let addr = lines
        .find_map(|l| {
            l.ok()?
                .strip_prefix("dashboard: http://")
                .map(|u| u.split('/').next().unwrap().to_string())
        })
        .expect("the dashboard's address");
    let run = get(&addr, "/api/run");
    assert!(!run["steps"].as_array().unwrap().is_empty(), "{run}");
    let ended = wait_for(Duration::from_secs(20), || {
        let s = get(&addr, "/api/state");
        (s["ended"] == true && !s["files"].as_array().unwrap().is_empty()).then_some(s)
    })
    .expect("the end on the page");
    let names: Vec<&str> = ended["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"report.html") && names.contains(&"summary.json"),
        "{names:?}"
    );
    let page = get(&addr, "/api/seconds?from=0");
    let requests: u64 = page["seconds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(
        Some(requests),
        ended["summary"]["requests"].as_u64(),
        "the page's seconds add up to the summary"
    );
    drop(lines);
    assert!(crate::harness::wait_within(&mut child.0, Duration::from_secs(15)).is_some());
}

/// A ramp from 2 to 40 VUs on a DB-bound route of the demo target started with
/// `target` flags, observed every 500 ms, watched with the dashboard: `/api/state`
/// once the hint was read over the whole run, and `summary.json`.
fn hinted(name: &str, target: &[&str]) -> (Value, Value) {
    let (_kid, url) = crate::harness::serve_demo_target(target);
    let t = tmp(name);
    let dir = t.join("result");
    let args = [
        "--name".to_string(),
        name.to_string(),
        "--url".to_string(),
        format!("{url}/api/posts/5"),
        "--stages".to_string(),
        "2s:2,3s:2,1s:40,8s:40".to_string(),
        "--observe".to_string(),
        format!("{url}/metrics"),
        "--observe-interval".to_string(),
        "500ms".to_string(),
        "--target".to_string(),
        url.clone(),
    ];
    let os: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
    let mut live = start_live_with(&os, "30s", &dir);
    let addr = live.addr.clone();
    // While the run goes, the hint says something before the end.
    let during = wait_for(Duration::from_secs(14), || {
        let s = get(&addr, "/api/state");
        (s["ended"] == false && s["bottleneck_hint"].is_object()).then_some(s)
    });
    let last = wait_for(Duration::from_secs(40), || {
        let s = get(&addr, "/api/state");
        (s["ended"] == true && s["bottleneck_hint"]["final"] == true).then_some(s)
    })
    .expect("the hint read over the whole run");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let _ = live.child.0.kill();
    let _ = live.child.0.wait();
    let during = during.expect("a hint while the run went");
    assert_eq!(during["bottleneck_hint"]["final"], false, "{during:#}");
    (last, summary)
}

/// The report's table's first row about the target (pado's own self-check row
/// is the header's light on the page, not part of the live hint).
fn top_target_row(summary: &Value) -> Option<&Value> {
    summary["bottlenecks"]["components"]
        .as_array()?
        .iter()
        .find(|r| r["kind"] != "generator")
}

#[test]
fn the_live_hint_names_the_reports_limit_and_none_where_there_is_room() {
    let _machine = crate::harness::shared_machine();
    // 16 workers share 4 connections held 20 ms per query: at 40 VUs requests
    // wait for a connection.
    let (state, summary) = hinted(
        "대시보드-힌트-풀",
        &[
            "--workers",
            "16",
            "--pool-size",
            "4",
            "--query-cost",
            "20ms",
            "--cache-size",
            "0",
        ],
    );
    let h = &state["bottleneck_hint"];
    assert_eq!(h["status"], "limit", "{h:#}");
    let top = top_target_row(&summary).unwrap_or_else(|| panic!("{:#}", summary["bottlenecks"]));
    assert_eq!(
        top["component"], "DB pool HikariPool-1",
        "{:#}",
        summary["bottlenecks"]
    );
    assert_eq!(top["verdict"], "yes");
    for field in ["component", "endpoint", "verdict", "state", "evidence"] {
        assert_eq!(
            h["component"][field], top[field],
            "{field}: {h:#} vs {top:#}"
        );
    }
    assert_eq!(h["window"], summary["bottlenecks"]["window"], "{h:#}");
    assert!(
        h["text"]
            .as_str()
            .unwrap()
            .starts_with("likely limit: DB pool HikariPool-1 (app) ("),
        "{h:#}"
    );
    // The same target with room to spare (64 workers, 64 connections, 1 ms a
    // query): neither its pool nor its workers are a limit, in the report or in
    // the hint, and where the report names no limit the hint says none. (On a
    // machine other work keeps busy, the report and the hint both name its CPU
    // as busy throughout: the same row, never the pool or the workers.)
    let (state, summary) = hinted(
        "대시보드-힌트-여유",
        &[
            "--workers",
            "64",
            "--pool-size",
            "64",
            "--query-cost",
            "1ms",
            "--cache-size",
            "0",
        ],
    );
    let h = &state["bottleneck_hint"];
    let rows = summary["bottlenecks"]["components"].as_array().unwrap();
    for name in ["DB pool HikariPool-1", "Worker pool `http`"] {
        let r = rows
            .iter()
            .find(|r| r["component"] == name)
            .unwrap_or_else(|| panic!("no {name}"));
        assert_eq!(r["verdict"], "no", "{r:#}");
    }
    match top_target_row(&summary)
        .filter(|r| r["verdict"] == "yes" || r["verdict"] == "busy_throughout")
    {
        None => {
            assert_eq!(
                h["status"], "no_limit",
                "{h:#} / {:#}",
                summary["bottlenecks"]
            );
            assert!(h["component"].is_null());
            assert!(
                h["text"].as_str().unwrap().starts_with("no limit seen yet"),
                "{h:#}"
            );
        }
        Some(top) => {
            assert!(
                top["kind"].as_str().unwrap().ends_with("cpu"),
                "only a busy machine's CPU: {top:#}"
            );
            assert_eq!(h["component"]["component"], top["component"], "{h:#}");
            assert_eq!(h["component"]["verdict"], top["verdict"], "{h:#}");
        }
    }
}
