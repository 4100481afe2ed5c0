//! Ctrl-C stops gracefully and still writes the summary; nothing measured is lost.
//! One SIGTERM delivered twice (GNU `timeout`, `kill -TERM -PGID`) is one request: a
//! graceful stop with the summary, the report and an open fault window undone. A
//! long event action does not hold the stop up, and an event command dies with pado
//! when pado is killed.

use std::process::Stdio;
use std::time::{Duration, Instant};

use pado_testkit::TestServer;

use crate::harness::{interrupt, num, pado_cmd, pado_under, spawn_piped, tmp};

/// Start a 60 s run of `vus` VUs on `url` in the background, writing to `dir`.
fn spawn_long_run(url: &str, vus: &str, dir: &std::path::Path) -> std::process::Child {
    spawn_piped(
        pado_cmd([
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
        .arg(dir),
    )
}

#[test]
fn ctrl_c_stops_gracefully_and_writes_the_summary() {
    // Runs pado or a browser outside `harness::run`: hold the machine shared.
    let _machine = crate::harness::shared_machine();
    let srv = TestServer::start();
    let dir_tmp = tmp("sigint");
    let dir = dir_tmp.join("result");
    let child = spawn_long_run(&srv.url("/delay/100"), "4", &dir);
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
    let child = spawn_long_run(&srv.url("/hang"), "2", &dir);
    std::thread::sleep(Duration::from_millis(800));
    let t = Instant::now();
    interrupt(&child);
    // A second press a second later is a new request (not the first one delivered
    // again): it quits at once.
    std::thread::sleep(Duration::from_millis(1000));
    // The first press waits for the hanging requests; the second does not.
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(out.status.code(), Some(130));
}

/// A 20 s scenario against `url` with a fault window opened at 300 ms for an hour,
/// whose undo creates `marker`, plus `extra` events; returns the scenario file.
fn faulted_scenario(
    dir: &std::path::Path,
    url: &str,
    marker: &std::path::Path,
    extra: &str,
) -> std::path::PathBuf {
    crate::harness::write_fixture(
        dir,
        "signals_faulted_scenario.yaml",
        "s.yaml",
        &[
            ("url", url.to_string()),
            ("marker", marker.display().to_string()),
            ("extra", extra.to_string()),
        ],
    )
}

/// What a graceful stop leaves: exit 0, an interrupted summary, the report, the
/// window's undo done.
fn assert_graceful(out: &std::process::Output, dir: &std::path::Path, marker: &std::path::Path) {
    let say = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{say}");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["interrupted"], true, "{say}");
    assert!(dir.join("report.html").is_file(), "{say}");
    assert!(
        marker.is_file(),
        "the open fault window was not undone: {say}"
    );
}

#[test]
fn under_gnu_timeout_a_run_stops_gracefully_and_undoes_its_fault() {
    let _machine = crate::harness::shared_machine();
    let srv = TestServer::start();
    // The bug was intermittent: five runs, each must stop gracefully.
    for i in 0..5 {
        let tmp = tmp(&format!("timeout{i}"));
        let dir = tmp.join("result");
        let marker = tmp.join("undone");
        let scen = faulted_scenario(&tmp, &srv.base_url(), &marker, "");
        let t = Instant::now();
        // `timeout` signals pado and then its whole process group: SIGTERM twice.
        // --preserve-status: the exit code is pado's own; -k: a hung pado is killed.
        let out = pado_under(&["timeout", "--preserve-status", "-k", "30", "4"])
            .args(["run", scen.to_str().unwrap(), "--quiet", "--out"])
            .arg(&dir)
            .output()
            .unwrap();
        // Stopped, not run to its 20 s end nor killed by `-k` at 34 s: the wall
        // clock (a busy machine writes the report slowly) and the run's own
        // length, which is the 4 s until the signal and the graceful stop.
        assert!(
            t.elapsed() < Duration::from_secs(19),
            "run {i}: {:?}",
            t.elapsed()
        );
        assert_graceful(&out, &dir, &marker);
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap())
                .unwrap();
        assert!(num(&s, "duration_s") < 9.0, "run {i}: {s}");
    }
}

#[test]
fn sigterm_to_the_process_group_is_one_request() {
    use std::os::unix::process::CommandExt;
    let _machine = crate::harness::shared_machine();
    let srv = TestServer::start();
    let tmp = tmp("pgterm");
    let dir = tmp.join("result");
    let marker = tmp.join("undone");
    let scen = faulted_scenario(&tmp, &srv.base_url(), &marker, "");
    let child = spawn_piped(
        pado_cmd(["run", scen.to_str().unwrap(), "--quiet", "--out"])
            .arg(&dir)
            .process_group(0),
    );
    std::thread::sleep(Duration::from_millis(1500));
    let pid = child.id() as i32;
    let t = Instant::now();
    // SAFETY: signalling the process and the process group this test started.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
        libc::kill(-pid, libc::SIGTERM);
    }
    let out = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_graceful(&out, &dir, &marker);
}

#[test]
fn ctrl_c_during_a_long_event_action_ends_the_run_at_once() {
    let _machine = crate::harness::shared_machine();
    let srv = TestServer::start();
    let tmp = tmp("longaction");
    let dir = tmp.join("result");
    let marker = tmp.join("undone");
    let scen = faulted_scenario(
        &tmp,
        &srv.base_url(),
        &marker,
        "  - { name: slow, at: 200ms, run: [sleep, \"60\"], timeout: 2m }\n",
    );
    let child =
        spawn_piped(pado_cmd(["run", scen.to_str().unwrap(), "--quiet", "--out"]).arg(&dir));
    std::thread::sleep(Duration::from_millis(1500));
    let t = Instant::now();
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(6), "{:?}", t.elapsed());
    assert_graceful(&out, &dir, &marker);
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let slow: serde_json::Value = events
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["name"] == "slow")
        .unwrap();
    assert_eq!(slow["action"]["outcome"], "stopped", "{slow}");
}

/// Whether `pid` still runs (a zombie waiting for its new parent does not).
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[test]
fn an_event_command_dies_with_pado_killed() {
    let _machine = crate::harness::shared_machine();
    let srv = TestServer::start();
    let tmp = tmp("pdeath");
    let dir = tmp.join("result");
    let marker = tmp.join("undone");
    let pid_file = tmp.join("pid");
    // The shell writes its pid and becomes the `sleep` (exec keeps the pid and the
    // parent-death signal).
    let extra = format!(
        "  - {{ name: daemonish, at: 200ms, run: [sh, -c, \"echo $$ > {}; exec sleep 300\"], timeout: 10m }}\n",
        pid_file.display()
    );
    let scen = faulted_scenario(&tmp, &srv.base_url(), &marker, &extra);
    // A state directory of this test's own: the open window's record stays in it.
    let state = tmp.join("state");
    let mut child = pado_cmd(["run", scen.to_str().unwrap(), "--quiet", "--out"])
        .arg(&dir)
        .env("XDG_STATE_HOME", &state)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    let sleeper: i32 = loop {
        if let Some(p) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break p;
        }
        assert!(Instant::now() < until, "the event command never started");
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        running(sleeper),
        "the event command should run while pado does"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    while running(sleeper) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    let alive = running(sleeper);
    if alive {
        // SAFETY: kill(2) of the command this test's pado started, to clean up.
        unsafe {
            libc::kill(sleeper, libc::SIGKILL);
        }
    }
    assert!(!alive, "the event command outlived pado's kill -9");
    // Nothing ran the undo yet: pado was killed before it could. The window is on
    // record for the next pado (see events::a_fault_left_open_by_a_killed_pado_is_
    // undone_by_the_next_run).
    assert!(!marker.exists());
    assert!(!dir.join("summary.json").exists());
    assert!(dir.join("open-faults.json").exists());
    let records = std::fs::read_dir(state.join("pado/open-faults"))
        .unwrap()
        .count();
    assert_eq!(records, 1);
}
