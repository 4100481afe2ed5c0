//! Runs that end badly: pado killed mid-run; servers that close connections.

use std::process::Stdio;
use std::time::{Duration, Instant};

use pado_testkit::TestServer;

use crate::harness::{num, pado, pado_cmd, shared_machine, tmp};

/// `kill -9` during a run leaves `run.json` with `duration_s: 0` and maybe a torn last
/// timeline line. `pado report` still reads it: rates over the seconds written (checked
/// against the server's own count of the same seconds), and it says the run was cut
/// short. `pado compare` reads it the same way.
#[test]
fn a_killed_run_is_reported_over_the_seconds_it_wrote() {
    let _machine = shared_machine();
    let srv = TestServer::start();
    let url = srv.url("/delay/20");
    let dir_tmp = tmp("killed");
    let dir = dir_tmp.join("result");
    let mut child = pado_cmd(["run", "--url", &url, "--vus", "2", "--duration", "60s"])
        .arg("--out")
        .arg(&dir)
        .arg("--quiet")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("running pado");
    let timeline = dir.join("timeline.jsonl");
    let lines = |p: &std::path::Path| {
        std::fs::read_to_string(p)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while lines(&timeline) < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().expect("SIGKILL"); // std sends SIGKILL on Unix
    child.wait().unwrap();
    assert!(lines(&timeline) >= 4, "pado wrote no timeline in 30 s");
    let records = srv.records();

    // Tear the last line as a kill in the middle of a write would.
    let text = std::fs::read_to_string(&timeline).unwrap();
    let complete: Vec<&str> = text.lines().collect();
    let written = complete.len() - 1;
    let last = complete[written];
    let torn = format!(
        "{}\n{}",
        complete[..written].join("\n"),
        &last[..last.len() / 2]
    );
    std::fs::write(&timeline, torn).unwrap();
    let run_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(num(&run_json, "duration_s"), 0.0, "{run_json}");

    let out = pado(&["report", dir.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!(
            "the run was cut short at {written} s (pado did not finish writing it: killed or crashed)"
        )),
        "{stdout}"
    );
    assert!(stdout.contains("interrupted"), "{stdout}");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(num(&s, "duration_s"), written as f64);
    let requests = num(&s, "requests");
    let rps = num(&s, "rps");
    assert!((rps - requests / written as f64).abs() < 1e-6, "{s}");
    // The server's count over the same seconds (from its first request, which pado
    // sends right at its second 0). Each second of two VUs on a 20 ms route holds
    // about 100 requests; a boundary moves by at most a request per VU or so.
    let t0 = records.iter().map(|r| r.received_at).min().unwrap();
    let window = Duration::from_secs(written as u64);
    let served = records
        .iter()
        .filter(|r| r.received_at.duration_since(t0) < window)
        .count() as f64;
    assert!(
        (requests - served).abs() <= 0.03 * served + 4.0,
        "pado {requests} vs server {served} in {written} s"
    );
    // At most 2 VUs × 50 requests a second.
    assert!(rps > 20.0 && rps < 101.0, "{rps}");
    assert_eq!(num(&s, "failed"), 0.0);

    // compare: against a twin that finished normally with the same seconds, the
    // throughput is the same (it was +274,588,082,904% when duration_s stayed 0).
    let twin_tmp = tmp("killed-twin");
    let twin = twin_tmp.join("result");
    std::fs::create_dir_all(&twin).unwrap();
    let mut meta = run_json.clone();
    meta["duration_s"] = serde_json::json!(written as f64);
    std::fs::write(twin.join("run.json"), meta.to_string()).unwrap();
    std::fs::write(
        twin.join("timeline.jsonl"),
        complete[..written].join("\n") + "\n",
    )
    .unwrap();
    let out = pado(&[
        "compare",
        "--json",
        twin.to_str().unwrap(),
        dir.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["scope"] == "overall" && r["metric"].as_str().unwrap().contains("req/s"))
        .unwrap_or_else(|| panic!("{c:#}"));
    assert_eq!(row["values"][0], row["values"][1], "{row}");
    assert!(row["changes"][0].as_f64().unwrap().abs() < 1e-9, "{row}");
}

/// A server that closes every connection after one response without saying
/// `Connection: close`: pado finds each reused connection dead before any answer and
/// sends the (idempotent) request again on a new one. No failures, and exactly as many
/// requests as the server answered; the reconnects are counted.
#[test]
fn a_server_closing_kept_alive_connections_is_not_a_failure() {
    let srv = TestServer::start();
    let url = srv.url("/close-silently");
    let r = crate::harness::run(
        "close-silently",
        &["--url", &url, "--vus", "2", "--duration", "2s"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    let requests = num(&s, "requests");
    assert!(requests > 20.0, "{s}");
    assert_eq!(num(&s, "failed"), 0.0, "{s}");
    assert_eq!(requests as u64, srv.stats().requests);
    // Every VU's first request opened a fresh connection; the rest mostly met a dead one.
    let reconnects = num(&s, "reconnects");
    assert!(reconnects > requests / 2.0, "{reconnects} of {requests}");
    assert!(
        s["warnings"]
            .to_string()
            .contains("sent again on a new connection"),
        "{s}"
    );
    // The new connection's time is reported as connecting.
    assert!(num(&s, "phases_ms.http_req_connecting.p50") > 0.0, "{s}");
    // The timeline carries the counter, so `pado report` finds it again.
    let per_second: f64 = r
        .timeline()
        .iter()
        .flat_map(|sec| sec["series"].as_array().cloned().unwrap_or_default())
        .map(|series| series["reconnects"].as_f64().unwrap_or(0.0))
        .sum();
    assert_eq!(per_second, reconnects);

    // A POST is not safe to send twice (the server may have acted on it): it keeps
    // its `reset`, and the server saw exactly the requests that succeeded.
    let srv = TestServer::start();
    let url = srv.url("/close-silently");
    let r = crate::harness::run(
        "close-silently-post",
        &[
            "--url",
            &url,
            "-X",
            "POST",
            "--body",
            "x",
            "--vus",
            "1",
            "--duration",
            "1s",
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    let (requests, failed) = (num(&s, "requests"), num(&s, "failed"));
    assert!(failed > 0.0, "{s}");
    assert_eq!(num(&s, "errors.reset"), failed, "{s}");
    assert_eq!(num(&s, "reconnects"), 0.0, "{s}");
    assert_eq!((requests - failed) as u64, srv.stats().requests, "{s}");
}
