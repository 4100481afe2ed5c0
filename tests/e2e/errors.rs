//! A misbehaving target is counted by category and the run goes on; a run in
//! which every request failed then ends with exit 99, saying so.

use pado_testkit::{ServerOptions, TestServer};

use crate::harness::{num, pado_cmd, run, spawn_piped, tmp, write_file, write_fixture};

fn errors_of(path: &str, extra: &[&str]) -> (serde_json::Value, u64) {
    let srv = TestServer::start();
    let url = srv.url(path);
    let mut args = vec!["--url", url.as_str(), "--vus", "2", "--duration", "1s"];
    args.extend_from_slice(extra);
    let r = run("err", &args);
    every_request_failed(&r, path);
    (r.summary(), srv.stats().requests)
}

/// Every request failed: exit 99, and the verdict says so (never a quiet exit 0).
fn every_request_failed(r: &crate::harness::Run, what: &str) {
    assert_eq!(r.code(), 99, "{what}: {}", r.stderr());
    let s = r.summary();
    assert_eq!(s["judged"]["exit_code"], 99, "{what}: {s}");
    assert!(
        s["verdict"].to_string().contains("every request failed"),
        "{what}: {}",
        s["verdict"]
    );
}

#[test]
fn http_status_errors_are_failures_by_code() {
    let (s, received) = errors_of("/status/503", &[]);
    let n = num(&s, "requests");
    assert!(n > 10.0);
    assert_eq!(n as u64, received);
    assert_eq!(num(&s, "failed"), n);
    assert_eq!(num(&s, "errors.http_503"), n);
    assert_eq!(num(&s, "failed_rate"), 1.0);
}

#[test]
fn resets_are_counted_and_the_run_goes_on() {
    let (s, received) = errors_of("/reset", &[]);
    let n = num(&s, "requests");
    assert!(n > 10.0, "{s}");
    assert_eq!(num(&s, "errors.reset"), n);
    assert_eq!(n as u64, received);
}

#[test]
fn garbage_is_a_protocol_error() {
    let (s, received) = errors_of("/garbage", &[]);
    let n = num(&s, "requests");
    assert!(n > 10.0);
    assert_eq!(num(&s, "errors.protocol"), n);
    assert_eq!(n as u64, received);
}

#[test]
fn a_truncated_body_is_a_reset() {
    let (s, _) = errors_of("/partial", &[]);
    assert_eq!(num(&s, "errors.reset"), num(&s, "requests"));
}

#[test]
fn stalls_time_out_at_the_request_timeout() {
    let srv = TestServer::start();
    let url = srv.url("/hang");
    crate::harness::run_timed(
        "err-hang",
        &[
            "--url",
            &url,
            "--vus",
            "2",
            "--duration",
            "1s",
            "--timeout",
            "300ms",
        ],
        |r| {
            every_request_failed(r, "/hang");
            let s = r.summary();
            let received = srv.stats().requests;
            srv.reset_stats();
            let n = num(&s, "requests");
            assert_eq!(num(&s, "errors.timeout"), n);
            assert_eq!(n as u64, received);
            // Two VUs, one second, 300 ms each: 6 to 8 timeouts.
            if !(6.0..=8.0).contains(&n) {
                return Err(format!("{n} timeouts in 1 s, expected 6 to 8"));
            }
            let p50 = num(&s, "latency_ms.p50");
            if !(295.0..340.0).contains(&p50) {
                return Err(format!("p50 {p50}, expected 295..340"));
            }
            Ok(())
        },
    );
}

#[test]
fn refused_connections_are_counted() {
    let port = crate::harness::free_port();
    let url = format!("http://127.0.0.1:{port}/");
    let r = run(
        "refused",
        &["--url", &url, "--vus", "1", "--duration", "1s"],
    );
    every_request_failed(&r, "refused");
    let s = r.summary();
    assert!(num(&s, "requests") > 0.0);
    assert_eq!(num(&s, "errors.connect_refused"), num(&s, "requests"));
}

#[test]
fn tls_with_a_self_signed_certificate() {
    let srv = TestServer::start_with(ServerOptions {
        tls: true,
        ..Default::default()
    });
    let url = srv.url("/");
    assert!(url.starts_with("https://"));
    // Verified by default: the self-signed certificate is refused as a TLS error.
    let r = run(
        "tls-verify",
        &["--url", &url, "--vus", "1", "--duration", "1s"],
    );
    every_request_failed(&r, "refused");
    let s = r.summary();
    assert!(num(&s, "requests") > 0.0);
    assert_eq!(num(&s, "errors.tls"), num(&s, "requests"), "{s}");
    // Why, and what to do: in the failure samples, the warnings and the terminal.
    let sample = &s["failures"][0];
    assert_eq!(sample["category"], "tls", "{s}");
    assert!(
        sample["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("unknown issuer"),
        "{s}"
    );
    let warned = s["warnings"].as_array().unwrap().iter().any(|w| {
        let w = w.as_str().unwrap_or_default();
        w.contains("unknown issuer") && w.contains("--insecure")
    });
    assert!(warned, "{s}");
    assert!(r.stdout().contains("unknown issuer"), "{}", r.stdout());
    srv.reset_stats();
    // --insecure: the exchange works and is counted exactly.
    let r = run(
        "tls-ok",
        &[
            "--url",
            &url,
            "--vus",
            "2",
            "--duration",
            "1s",
            "--insecure",
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    assert_eq!(num(&s, "failed"), 0.0, "{s}");
    assert_eq!(num(&s, "requests") as u64, srv.stats().requests);
    assert!(num(&s, "phases_ms.http_req_tls_handshaking.max") > 0.0);
}

#[test]
fn http_framing_edge_cases_all_succeed() {
    let srv = TestServer::start();
    let dir = tmp("framing");
    let file = write_fixture(
        &dir,
        "errors_http_framing_edge_cases_all_succeed.yaml",
        "framing.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("framing", &[file.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    assert_eq!(num(&s, "requests"), 90.0, "{s}");
    assert_eq!(num(&s, "failed"), 0.0, "{s}");
    assert_eq!(srv.stats().requests, 90);
    assert!(num(&s, "data_received") > 2.0 * 5.0 * 3_000_000.0);
    for c in s["checks"].as_object().unwrap().values() {
        assert_eq!(c["fails"], 0, "{s}");
        assert_eq!(c["passes"], 10);
    }
}

#[test]
fn a_large_request_body_is_written_whole() {
    let srv = TestServer::start();
    let dir = tmp("bigbody");
    let body: String = "가나다라마바사".repeat(50_000); // 1 MiB of UTF-8
    let f = write_file(&dir, "body.txt", &body);
    let r = run(
        "bigbody",
        &[
            "--url",
            &srv.url("/echo"),
            "-X",
            "POST",
            "--body-file",
            f.to_str().unwrap(),
            "--iterations",
            "3",
            "--vus",
            "1",
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let recs = srv.records();
    assert_eq!(recs.len(), 3);
    for rec in recs {
        assert_eq!(rec.method, "POST");
        assert_eq!(rec.body.len(), body.len());
        assert_eq!(rec.body, body.as_bytes());
    }
}

#[test]
fn an_upload_refused_early_is_its_status_not_a_reset() {
    // The server answers 413 on the head alone and closes (then resets) without
    // reading the 4 MB body: the write fails after the answer has arrived.
    let srv = TestServer::start();
    let dir = tmp("reject-early");
    let f = write_file(&dir, "body.txt", &"x".repeat(4 * 1024 * 1024));
    let r = run(
        "reject-early",
        &[
            "--url",
            &srv.url("/reject-early"),
            "-X",
            "POST",
            "--body-file",
            f.to_str().unwrap(),
            "--iterations",
            "3",
            "--vus",
            "1",
        ],
    );
    every_request_failed(&r, "/reject-early");
    let s = r.summary();
    assert_eq!(srv.stats().requests, 3);
    assert_eq!(num(&s, "requests"), 3.0, "{s}");
    assert_eq!(num(&s, "errors.http_413"), 3.0, "{s}");
    assert!(s["errors"].get("reset").is_none(), "{s}");
}

#[test]
fn a_summary_that_cannot_be_written_is_still_printed_and_exits_1() {
    // Tests run as root, where a read-only directory stops nothing: a directory named
    // `summary.json`, made while the run goes on, is a file that cannot be replaced.

    use std::time::{Duration, Instant};
    let _machine = crate::harness::shared_machine();
    let srv = TestServer::start();
    let dir_tmp = tmp("unwritable");
    let dir = dir_tmp.join("result");
    let child = spawn_piped(
        pado_cmd([
            "run",
            "--url",
            &srv.url("/"),
            "--vus",
            "1",
            "--duration",
            "2s",
        ])
        .arg("--out")
        .arg(&dir)
        .arg("--quiet"),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !dir.join("run.json").exists() {
        assert!(Instant::now() < deadline, "run.json never appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::create_dir_all(dir.join("summary.json").join("in-the-way")).unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("http_reqs"),
        "no summary printed:\n{stdout}"
    );
    assert!(
        stderr.contains("could not write") && stderr.contains("summary.json"),
        "{stderr}"
    );
}

#[test]
fn pado_report_on_an_unwritable_directory_prints_the_summary_and_exits_1() {
    let srv = TestServer::start();
    let r = run("report-ro", &["--url", &srv.url("/"), "--iterations", "5"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    // report.html cannot be replaced when it is a (non-empty) directory.
    std::fs::remove_file(r.dir.join("report.html")).unwrap();
    std::fs::create_dir_all(r.dir.join("report.html").join("in-the-way")).unwrap();
    let out = crate::harness::pado(&["report", r.dir.to_str().unwrap()]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("http_reqs"),
        "no summary printed:\n{stdout}"
    );
    assert!(
        stderr.contains("could not write") && stderr.contains("report.html"),
        "{stderr}"
    );
}

/// `defaults.connections`: a VU keeps its connections for its life, an iteration or
/// a request; the server counts the connections it accepted.
#[test]
fn connection_reuse_follows_the_policy() {
    let srv = TestServer::start();
    let dir = tmp("reuse");
    for (policy, connections) in [("per-vu", 2), ("per-iteration", 10), ("per-request", 20)] {
        srv.reset_stats();
        let file = write_fixture(
            &dir,
            "errors_connection_policy.yaml",
            &format!("{policy}.yaml"),
            &[("target", srv.base_url()), ("policy", policy.to_string())],
        );
        let r = run("reuse", &[file.to_str().unwrap()]);
        assert_eq!(r.code(), 0, "{policy}: {}", r.stderr());
        let s = r.summary();
        assert_eq!(num(&s, "requests"), 20.0, "{policy}: {s}");
        assert_eq!(num(&s, "failed"), 0.0, "{policy}: {s}");
        let st = srv.stats();
        assert_eq!(st.requests, 20, "{policy}");
        assert_eq!(st.connections, connections, "{policy}");
        let closes = srv
            .records()
            .iter()
            .filter(|r| {
                r.headers
                    .iter()
                    .any(|(k, v)| k.eq_ignore_ascii_case("connection") && v == "close")
            })
            .count();
        let expected = if policy == "per-request" { 20 } else { 0 };
        assert_eq!(
            closes, expected,
            "{policy}: requests saying Connection: close"
        );
    }
    // The flag replaces the file's policy.
    srv.reset_stats();
    let per_vu = dir.join("per-vu.yaml");
    let r = run(
        "reuse-flag",
        &[per_vu.to_str().unwrap(), "--connections", "per-iteration"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert_eq!(srv.stats().connections, 10);
    // HTTP/2 shares a worker's connections: nothing per VU to renew.
    let file = write_fixture(
        &dir,
        "errors_connection_reuse_follows_the_policy.yaml",
        "h2.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("reuse-h2", &[file.to_str().unwrap()]);
    assert_eq!(r.code(), 2, "{}", r.stdout());
    assert!(r.stderr().contains("h2.yaml:4"), "{}", r.stderr());
    assert!(r.stderr().contains("max_streams: 1"), "{}", r.stderr());
}
