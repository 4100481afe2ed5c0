//! Ctrl-C stops gracefully and still writes the summary; nothing measured is lost.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pado_testkit::TestServer;

use crate::harness::{num, pado_bin, tmp};

/// Start a 60 s run of `vus` VUs on `url` in the background, writing to `dir`.
fn spawn_run(url: &str, vus: &str, dir: &std::path::Path) -> std::process::Child {
    Command::new(pado_bin())
        .args([
            "run",
            "--url",
            url,
            "--vus",
            vus,
            "--duration",
            "60s",
            "--quiet",
            "--out",
        ])
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Send SIGINT to a child, as Ctrl-C would.
fn interrupt(child: &std::process::Child) {
    // SAFETY: signalling our own child process.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
}

#[test]
fn ctrl_c_stops_gracefully_and_writes_the_summary() {
    // Runs pado or a browser outside `harness::run`: hold the machine shared.
    let _machine = crate::harness::shared_machine();
    let srv = TestServer::start();
    let dir_tmp = tmp("sigint");
    let dir = dir_tmp.join("result");
    let child = spawn_run(&srv.url("/delay/100"), "4", &dir);
    std::thread::sleep(Duration::from_millis(1500));
    let t = Instant::now();
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["interrupted"], true);
    // In-flight requests finished: everything the server answered was counted.
    let st = srv.stats();
    assert_eq!(num(&s, "requests") as u64, st.requests, "{s}");
    assert_eq!(num(&s, "failed"), 0.0);
    assert!(num(&s, "duration_s") < 5.0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("interrupted"));
}

#[test]
fn a_second_ctrl_c_exits_at_once() {
    // Runs pado or a browser outside `harness::run`: hold the machine shared.
    let _machine = crate::harness::shared_machine();
    let srv = TestServer::start();
    let dir_tmp = tmp("sigint2");
    let dir = dir_tmp.join("result");
    let child = spawn_run(&srv.url("/hang"), "2", &dir);
    std::thread::sleep(Duration::from_millis(800));
    let t = Instant::now();
    interrupt(&child);
    std::thread::sleep(Duration::from_millis(300));
    // The first press waits for the hanging requests; the second does not.
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(out.status.code(), Some(130));
}
