//! The live dashboard in a real browser: headless Chromium (Debian's `chromium`)
//! driven by playwright-core (`testing/browser/`, `npm ci` there) works the page of
//! a real `pado run --dashboard` against the counting test server. The page's
//! clicks must change what the server receives (its own per-second count is the
//! truth), and every change must be in the result's `events.jsonl` and report.
//! Skipped with a message when node, Chromium or the Node packages are missing,
//! unless `PADO_E2E_REQUIRE_ALL=1` (`scripts/test.sh` installs them).

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pado_testkit::TestServer;
use serde_json::Value;

use crate::harness::{interrupt, pado_cmd, tmp, wait_within, write_fixture, Kid};

/// The planned rate of the fixture and the one the page sets.
const RATE_FROM: f64 = 20.0;
const RATE_TO: f64 = 60.0;

pub(crate) fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testing/browser")
}

/// `node`, when it, Debian's Chromium and playwright-core (`npm ci` in
/// `testing/browser`) are all there; else skips (or fails under
/// `PADO_E2E_REQUIRE_ALL=1`).
pub(crate) fn browser_tools() -> Option<PathBuf> {
    let node = crate::harness::require_or_skip("node", "nodejs")?;
    let missing = if !Path::new("/usr/bin/chromium").is_file() {
        Some("/usr/bin/chromium is not installed (Debian package chromium)".to_string())
    } else if !browser_dir().join("node_modules/playwright-core").is_dir() {
        Some("testing/browser/node_modules/playwright-core is missing (run `npm ci` in testing/browser)".to_string())
    } else {
        None
    };
    if let Some(msg) = missing {
        if std::env::var("PADO_E2E_REQUIRE_ALL").as_deref() == Ok("1") {
            panic!("{msg}, and PADO_E2E_REQUIRE_ALL=1 requires it (scripts/test.sh installs it)");
        }
        eprintln!("skipped: {msg}; scripts/test.sh installs it");
        return None;
    }
    Some(node)
}

/// Every line a reader gives, with the moment it arrived.
fn lines_of<R: std::io::Read + Send + 'static>(r: R, tx: mpsc::Sender<(Instant, String)>) {
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines().map_while(Result::ok) {
            if tx.send((Instant::now(), line)).is_err() {
                break;
            }
        }
    });
}

/// The dashboard's address with its token, from what pado printed at start.
fn dashboard_url(rx: &mpsc::Receiver<(Instant, String)>, said: &mut Vec<String>) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let Ok((_, line)) = rx.recv_timeout(left) else {
            break;
        };
        said.push(line.clone());
        if let Some(at) = line.find("http://127.0.0.1:") {
            let url: String = line[at..]
                .chars()
                .take_while(|c| !c.is_whitespace())
                .collect();
            if url.contains("#token=") {
                return url;
            }
        }
    }
    panic!(
        "pado printed no dashboard address with #token= within 30 s:\n{}",
        said.join("\n")
    );
}

/// Requests the server received in `[from, to)`.
fn received(srv: &TestServer, from: Instant, to: Instant) -> usize {
    srv.records()
        .iter()
        .filter(|r| r.received_at >= from && r.received_at < to)
        .count()
}

/// The server's count in each second from `from`, `n` seconds: for a failure's message.
fn per_second(srv: &TestServer, from: Instant, n: u32) -> Vec<usize> {
    (0..n)
        .map(|i| {
            let a = from + Duration::from_secs(u64::from(i));
            received(srv, a, a + Duration::from_secs(1))
        })
        .collect()
}

fn within(got: usize, want: f64, tolerance: f64) -> bool {
    (got as f64 - want).abs() <= want * tolerance
}

/// `pado run FILE --dashboard` writing into `result`: the process and the address
/// it printed.
fn start_pado(file: &Path, result: &Path) -> (Kid, String) {
    let mut child = pado_cmd(["run"])
        .arg(file)
        .arg("--out")
        .arg(result)
        .arg("--dashboard")
        // The page is kept up after the run for the script to see the end and
        // download report.html; a Ctrl-C ends the wait.
        .args(["--dashboard-linger", "60s"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting pado");
    let (tx, pado_lines) = mpsc::channel();
    lines_of(child.stdout.take().unwrap(), tx.clone());
    lines_of(child.stderr.take().unwrap(), tx);
    let pado = Kid(child);
    let mut said = Vec::new();
    let url = dashboard_url(&pado_lines, &mut said);
    (pado, url)
}

/// What `live-run.mjs` printed on stdout, each line with when it arrived; fails
/// with its stderr unless it ended with `OK`.
fn run_page_script(node: &Path, url: &str) -> Vec<(Instant, String)> {
    let mut script = Command::new(node)
        .arg(browser_dir().join("live-run.mjs"))
        .current_dir(browser_dir())
        .env("PADO_DASHBOARD_URL", url)
        .env("RATE_TO", RATE_TO.to_string())
        .env("LATE_AFTER_S", "14")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting node");
    let (tx, script_lines) = mpsc::channel();
    lines_of(script.stdout.take().unwrap(), tx);
    let script_err = script.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut BufReader::new(script_err), &mut s);
        s
    });
    let status = wait_within(&mut script, Duration::from_secs(150));
    let script_said = err_reader.join().unwrap_or_default();
    let out: Vec<(Instant, String)> = script_lines.try_iter().collect();
    let printed: Vec<&str> = out.iter().map(|(_, l)| l.as_str()).collect();
    assert!(
        status.is_some_and(|s| s.success()),
        "the page's script failed ({status:?}):\n{script_said}\nstdout: {printed:?}"
    );
    assert_eq!(printed.last().copied(), Some("OK"), "{printed:?}");
    out
}

/// The moment the script said `MARK what` (just before its click).
fn mark(out: &[(Instant, String)], what: &str) -> Instant {
    out.iter()
        .find(|(_, l)| l == &format!("MARK {what}"))
        .unwrap_or_else(|| panic!("no MARK {what}: {out:?}"))
        .0
}

/// Where each change of the page stands on the server's clock, from the run's own
/// record of it (`events.jsonl`: the `control` event's `started_ms`, when pado
/// applied it), with the marks and the page's timing of each call beside it.
struct Changes {
    rate: Instant,
    pause: Instant,
    resume: Instant,
    /// For a failure's message: each change's mark, event and call timing.
    seen: String,
}

/// The `control` events of `result` placed on the server's clock. Second 0 of the
/// run is the server's first request: the open model's first arrival is due at
/// 0 ms, and pado's count is the server's (no other request came first).
fn changes(srv: &TestServer, result: &Path, out: &[(Instant, String)]) -> Changes {
    let records = srv.records();
    let t0 = records
        .iter()
        .map(|r| r.received_at)
        .min()
        .expect("the server received requests");
    let events = std::fs::read_to_string(result.join("events.jsonl")).expect("events.jsonl");
    let at = |prefix: &str| -> (u64, Instant) {
        let ms = events
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| {
                e["kind"] == "control" && e["name"].as_str().is_some_and(|n| n.starts_with(prefix))
            })
            .and_then(|e| e["started_ms"].as_u64())
            .unwrap_or_else(|| panic!("no control event `{prefix}…` in events.jsonl:\n{events}"));
        (ms, t0 + Duration::from_millis(ms))
    };
    let (rate_ms, rate) = at("arrival rate");
    let (pause_ms, pause) = at("paused");
    let (resume_ms, resume) = at("resumed");
    let timing = |what: &str| {
        out.iter()
            .find_map(|(_, l)| l.strip_prefix(&format!("TIMING {what} ")))
            .unwrap_or("(none)")
            .to_string()
    };
    let since = |i: Instant| i.saturating_duration_since(t0).as_secs_f64();
    let seen = [
        ("rate", rate_ms),
        ("pause", pause_ms),
        ("resume", resume_ms),
    ]
    .iter()
    .map(|(what, ms)| {
        format!(
            "{what}: mark at {:.2} s, event at {:.2} s, call (ms after the mark, ms it took) {}",
            since(mark(out, what)),
            *ms as f64 / 1000.0,
            timing(what)
        )
    })
    .collect::<Vec<_>>()
    .join("; ");
    Changes {
        rate,
        pause,
        resume,
        seen,
    }
}

/// The load the server received around the page's changes, each judged from when
/// pado applied it (its event), not from when the test read the page's marks: a
/// click a starved browser carries out late moves the event, not the verdict.
fn judge_the_load(srv: &TestServer, c: &Changes, out: &[(Instant, String)]) {
    let s = Duration::from_secs;
    let ms = Duration::from_millis;
    let from = c.rate - s(3);
    let seen = format!(
        "server's count per second from 3 s before the rate change: {:?}; pause at {:.1} s, resume at {:.1} s; {}",
        per_second(srv, from, 16),
        (c.pause - from).as_secs_f64(),
        (c.resume - from).as_secs_f64(),
        c.seen
    );
    // The marks come before the clicks, so before the events.
    for (what, event) in [("rate", c.rate), ("pause", c.pause), ("resume", c.resume)] {
        assert!(
            mark(out, what) <= event + s(1),
            "the {what} event is before its click's mark; {seen}"
        );
    }
    // Before the change the plan's rate; from 2 s after it the page's rate.
    let before = received(srv, c.rate - s(2), c.rate);
    assert!(
        within(before, 2.0 * RATE_FROM, 0.2),
        "{before} requests in the 2 s before the change (planned {RATE_FROM}/s); {seen}"
    );
    let after = received(srv, c.rate + s(2), c.rate + s(4));
    assert!(
        within(after, 2.0 * RATE_TO, 0.15),
        "{after} requests in seconds 2–4 after the change to {RATE_TO}/s; {seen}"
    );
    // Paused: nothing new from 1 s after the pause (requests in flight end) until
    // just before the resume (second 0's estimate may be a few ms late).
    assert!(
        c.resume > c.pause + s(2),
        "the page held the pause less than 2 s; {seen}"
    );
    let paused = received(srv, c.pause + s(1), c.resume - ms(250));
    assert_eq!(paused, 0, "requests arrived while paused; {seen}");
    // Resumed: the page's rate again (the pause owes no arrivals).
    let resumed = received(srv, c.resume + ms(1500), c.resume + ms(3500));
    assert!(
        within(resumed, 2.0 * RATE_TO, 0.2),
        "{resumed} requests in seconds 1.5–3.5 after the resume; {seen}"
    );
}

/// The result directory: pado's count is the server's, and every change made in
/// the page is a `control` event in `events.jsonl` and in `report.html`.
fn judge_the_result(srv: &TestServer, result: &Path) {
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(result.join("summary.json")).expect("summary.json"),
    )
    .unwrap();
    assert_eq!(
        summary["requests"].as_u64(),
        Some(srv.stats().requests),
        "pado's count is the server's"
    );
    // Every arrival the run offered started (the pool never ran dry) and is
    // counted in the second it started: the load its bottleneck table reads,
    // the page's changes included. An iteration that ran to its end sent the one
    // request the server got; one the page's stop cut sent it or not, by whether
    // its VU reached its step before the stop (on a busy machine an arrival can
    // start a VU that first runs after the stop).
    let timeline = std::fs::read_to_string(result.join("timeline.jsonl")).expect("timeline");
    let [started, dropped, ended, cut] = timeline
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .flat_map(|s| s["scenarios"].as_array().cloned().unwrap_or_default())
        .fold([0u64; 4], |mut n, sc| {
            for (i, k) in ["started", "dropped", "iterations", "interrupted"]
                .iter()
                .enumerate()
            {
                n[i] += sc[k].as_u64().unwrap_or(0);
            }
            n
        });
    let got = srv.stats().requests;
    let seen = format!(
        "timeline.jsonl: {started} started, {dropped} dropped, {ended} ended, {cut} cut; the server got {got}"
    );
    assert_eq!(dropped, 0, "{seen}");
    assert_eq!(
        ended + cut,
        started,
        "every started arrival ends or is cut; {seen}"
    );
    assert!(
        (ended..=started).contains(&got),
        "the server got a request from every ended iteration and at most one per arrival; {seen}"
    );
    assert!(
        cut <= 10,
        "the page's stop cut at most a moment's arrivals; {seen}"
    );
    let events = std::fs::read_to_string(result.join("events.jsonl")).expect("events.jsonl");
    let control: Vec<String> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["kind"] == "control")
        .map(|e| e["name"].as_str().unwrap_or_default().to_string())
        .collect();
    let want_rate = format!("arrival rate {RATE_FROM:.1}/s → {RATE_TO:.1}/s");
    assert_eq!(
        control,
        [want_rate.as_str(), "paused", "resumed", "stopped"],
        "{events}"
    );
    let report = std::fs::read_to_string(result.join("report.html")).expect("report.html");
    for what in [want_rate.as_str(), "paused", "resumed", "stopped"] {
        assert!(report.contains(what), "report.html lacks the event {what}");
    }
    assert!(
        report.contains("검색 &lt;b&gt;"),
        "the Hangul step name in the report"
    );
}

#[test]
fn the_page_steers_a_real_run_and_the_server_sees_it() {
    let Some(node) = browser_tools() else { return };
    let _machine = crate::harness::shared_machine();
    let srv = TestServer::start();
    let dir = tmp("dashboard-browser");
    let f = write_fixture(
        &dir,
        "dashboard_browser_steered_from_the_page.yaml",
        "live.yaml",
        &[("target", srv.base_url())],
    );
    let result = dir.join("result");
    let (mut pado, url) = start_pado(&f, &result);
    let out = run_page_script(&node, &url);
    // The page stopped the run and saw its end: a Ctrl-C ends the page's linger.
    interrupt(&pado.0);
    assert!(
        wait_within(&mut pado.0, Duration::from_secs(30)).is_some(),
        "pado did not end after the page's stop and a Ctrl-C"
    );
    judge_the_result(&srv, &result);
    let changes = changes(&srv, &result, &out);
    eprintln!("the page's changes: {}", changes.seen);
    judge_the_load(&srv, &changes, &out);
}

#[test]
fn the_page_shows_what_the_api_planted() {
    let Some(node) = browser_tools() else { return };
    let _machine = crate::harness::shared_machine();
    let out = Command::new(node)
        .args([
            "--test",
            "unit/format.test.mjs",
            "unit/model.test.mjs",
            "page.test.mjs",
        ])
        .current_dir(browser_dir())
        .output()
        .expect("running node --test");
    assert!(
        out.status.success(),
        "node --test failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
