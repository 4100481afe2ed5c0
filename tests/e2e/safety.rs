//! Unattended safety: a run always ends by its planned end plus the graceful stop, no
//! run overwrites or shares another run's result directory, secrets stay out of
//! results, and absurd input is refused before anything is allocated.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use pado_testkit::TestServer;
use serde_json::Value;

use crate::harness::{
    free_port, interrupt, num, pado, pado_cmd, read_json, run, shared_machine, spawn_piped, stderr,
    tmp, write_fixture,
};

#[test]
fn an_open_model_run_above_what_the_machine_can_start_still_ends_on_time() {
    // A million arrivals a second at a closed port: every iteration fails at once,
    // VUs are always free, and no scheduler keeps up. The run must still end by
    // duration + graceful stop, with what could not start counted as dropped.
    let d = tmp("overload");
    let port = free_port();
    let f = write_fixture(
        &d,
        "safety_an_open_model_run_above_what_the_machine_can_start_still_ends_on_time.yaml",
        "over.yaml",
        &[("port", port.to_string())],
    );
    let t = Instant::now();
    let r = run("overload", &[f.to_str().unwrap()]);
    let wall = t.elapsed();
    // Every request failed (nothing listens): the verdict's 99, not a quiet 0.
    assert_eq!(r.code(), 99, "{}", r.stderr());
    let run_json = read_json(&r.dir.join("run.json"));
    let ran = num(&run_json, "duration_s");
    assert!(ran <= 2.0 + 1.0 + 1.0, "ran {ran} s");
    // Start-up and report writing on a busy machine come on top of that.
    assert!(wall < Duration::from_secs(12), "took {wall:?}");
    let s = r.summary();
    let dropped = num(&s, "dropped_iterations");
    let started = num(&s, "iterations") + num(&s, "iterations_interrupted");
    // Every planned arrival was either started or counted as dropped, and the
    // machine could not start two million in two seconds.
    assert_eq!(dropped + started, 2_000_000.0, "{s}");
    assert!(dropped > 0.0, "{s}");
}

#[test]
fn quick_mode_rate_overload_ends_on_time() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/");
    let t = Instant::now();
    let r = run(
        "overload-quick",
        &["--url", &url, "--rate", "100000", "--duration", "2s"],
    );
    // Every request failed (nothing listens): the verdict's 99, not a quiet 0.
    assert_eq!(r.code(), 99, "{}", r.stderr());
    let ran = num(&read_json(&r.dir.join("run.json")), "duration_s");
    // Quick mode's graceful stop is the default 30 s: still, no iteration starts
    // after 2 s and each fails at once, so the run ends right after its duration.
    assert!(ran < 3.5, "ran {ran} s");
    assert!(
        t.elapsed() < Duration::from_secs(12),
        "took {:?}",
        t.elapsed()
    );
}

/// Run pado in `cwd` with the default result directory; returns the process.
fn spawn_in(cwd: &Path, url: &str) -> std::process::Child {
    pado_cmd([
        "run",
        "--url",
        url,
        "--iterations",
        "3",
        "--quiet",
        "--no-html",
    ])
    .current_dir(cwd)
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap()
}

fn result_dirs(cwd: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(cwd.join("pado-results"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

#[test]
fn runs_started_together_each_keep_their_own_results() {
    let _m = shared_machine();
    let srv = TestServer::start();
    let cwd = tmp("many-runs");
    let url = srv.url("/");
    // Three in a row, then two at once: well within one second of each other.
    for _ in 0..3 {
        let out = spawn_in(&cwd, &url).wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let a = spawn_in(&cwd, &url);
    let b = spawn_in(&cwd, &url);
    for c in [a, b] {
        let out = c.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let dirs = result_dirs(&cwd);
    assert_eq!(dirs.len(), 5, "{dirs:?}");
    let mut total = 0.0;
    for d in &dirs {
        let s = read_json(&d.join("summary.json"));
        assert_eq!(num(&s, "requests"), 3.0, "{}", d.display());
        total += num(&s, "requests");
        // Each timeline is one run's: parses line by line.
        for l in std::fs::read_to_string(d.join("timeline.jsonl"))
            .unwrap()
            .lines()
        {
            serde_json::from_str::<Value>(l).unwrap();
        }
    }
    assert_eq!(total as u64, srv.stats().requests);
}

#[test]
fn a_used_out_directory_is_refused_unless_overwrite() {
    let _m = shared_machine();
    let srv = TestServer::start();
    let url = srv.url("/");
    let out_tmp = tmp("reuse");
    let out = out_tmp.join("r");
    let o = out.to_str().unwrap();
    let first = pado(&["run", "--url", &url, "--iterations", "2", "-q", "--out", o]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let before = std::fs::read(out.join("summary.json")).unwrap();
    let second = pado(&["run", "--url", &url, "--iterations", "5", "-q", "--out", o]);
    assert_eq!(second.status.code(), Some(2));
    assert!(stderr(&second).contains("not empty"), "{}", stderr(&second));
    assert_eq!(std::fs::read(out.join("summary.json")).unwrap(), before);
    // --overwrite replaces pado's files and leaves the user's.
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    std::fs::write(out.join("timeline.csv"), "stale").unwrap();
    let third = pado(&[
        "run",
        "--url",
        &url,
        "--iterations",
        "5",
        "-q",
        "--out",
        o,
        "--overwrite",
    ]);
    assert_eq!(third.status.code(), Some(0), "{}", stderr(&third));
    assert_eq!(num(&read_json(&out.join("summary.json")), "requests"), 5.0);
    assert_eq!(
        std::fs::read_to_string(out.join("notes.txt")).unwrap(),
        "mine"
    );
    assert!(!out.join("timeline.csv").exists());
}

#[test]
fn a_directory_another_run_is_writing_is_refused_even_with_overwrite() {
    let _m = shared_machine();
    let srv = TestServer::start();
    let out_tmp = tmp("busy-dir");
    let out = out_tmp.join("r");
    let mut long = pado_cmd([
        "run",
        "--url",
        &srv.url("/delay/50"),
        "--vus",
        "2",
        "--duration",
        "3s",
        "-q",
    ])
    .arg("--out")
    .arg(&out)
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !out.join("run.json").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = out.to_str().unwrap();
    let other = pado(&[
        "run",
        "--url",
        &srv.url("/"),
        "--iterations",
        "1",
        "-q",
        "--out",
        o,
        "--overwrite",
    ]);
    assert_eq!(other.status.code(), Some(2), "{}", stderr(&other));
    assert!(
        stderr(&other).contains("another pado run"),
        "{}",
        stderr(&other)
    );
    assert_eq!(long.wait().unwrap().code(), Some(0));
    let s = read_json(&out.join("summary.json"));
    assert!(num(&s, "requests") > 10.0, "{s}");
}

#[test]
fn an_environment_value_in_a_tag_is_refused_and_never_printed() {
    let d = tmp("secret-tag");
    let secret = "s3cr3t-Value-7f2a";
    let f = write_fixture(
        &d,
        "safety_an_environment_value_in_a_tag_is_refused_and_never_printed.yaml",
        "t.yaml",
        &[],
    );
    let out = pado_cmd(["run", f.to_str().unwrap(), "-q", "--out"])
        .arg(d.join("r"))
        .env("PADO_TEST_SECRET", secret)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let all = format!("{}{}", stderr(&out), String::from_utf8_lossy(&out.stdout));
    assert!(all.contains("t.yaml:9"), "{all}");
    assert!(all.contains("cannot be used in a tag"), "{all}");
    assert!(!all.contains(secret), "{all}");
    assert!(!d.join("r").join("run.json").exists());
}

#[test]
fn secrets_in_urls_and_headers_stay_out_of_every_result_file() {
    let _m = shared_machine();
    let srv = TestServer::start();
    let d = tmp("secret-files");
    let secret = "tok-9d8e7f-SECRET";
    let f = write_fixture(
        &d,
        "safety_secrets_in_urls_and_headers_stay_out_of_every_result_file.yaml",
        "t.yaml",
        &[("target", srv.base_url())],
    );
    let out_dir = d.join("r");
    let out = pado_cmd([
        "run",
        f.to_str().unwrap(),
        "--export",
        "csv",
        "--export",
        "junit",
        "--out",
    ])
    .arg(&out_dir)
    .env("PADO_TEST_SECRET", secret)
    .output()
    .unwrap();
    // Every request answered 500: the verdict fails the run (and writes it all).
    assert_eq!(out.status.code(), Some(99), "{}", stderr(&out));
    let terminal = format!("{}{}", stderr(&out), String::from_utf8_lossy(&out.stdout));
    assert!(!terminal.contains(secret), "{terminal}");
    let mut files = 0;
    for e in std::fs::read_dir(&out_dir).unwrap() {
        let p = e.unwrap().path();
        let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
        assert!(!text.contains(secret), "{} holds the secret", p.display());
        files += 1;
    }
    assert!(files >= 5, "{files}");
    // The server did receive it: the secret was used, not dropped.
    assert_eq!(srv.stats().requests, 3);
}

#[test]
fn absurd_sizes_are_refused_before_allocating() {
    let d = tmp("absurd");
    let url = "http://127.0.0.1:9/";
    for args in [
        vec![
            "run",
            "--url",
            url,
            "--vus",
            "4294967295",
            "--duration",
            "1s",
        ],
        vec![
            "run",
            "--url",
            url,
            "--workers",
            "100000",
            "--duration",
            "1s",
        ],
        vec!["run", "--url", url, "--rate", "1e308", "--duration", "1s"],
    ] {
        let o = pado(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).starts_with("error: "), "{}", stderr(&o));
    }
    let f = write_fixture(
        &d,
        "safety_absurd_sizes_are_refused_before_allocating.yaml",
        "z.yaml",
        &[],
    );
    let o = pado(&["validate", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("pre_allocated_vus"), "{}", stderr(&o));
    let f = write_fixture(
        &d,
        "safety_absurd_sizes_are_refused_before_allocating_z2.yaml",
        "z2.yaml",
        &[],
    );
    let o = pado(&[
        "run",
        f.to_str().unwrap(),
        "-q",
        "--out",
        d.join("r").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
}

#[test]
fn a_closed_stdout_neither_crashes_nor_changes_the_exit_code() {
    let _m = shared_machine();
    let srv = TestServer::start();
    let d = tmp("pipe");
    let run_with_closed_stdout = |args: &[&str]| -> i32 {
        let mut c = spawn_piped(&mut pado_cmd(args));
        // The reader goes away at once, as `| head -0` would.
        drop(c.stdout.take());
        let out = c.wait_with_output().unwrap();
        assert!(
            !stderr(&out).contains("panicked"),
            "{args:?}: {}",
            stderr(&out)
        );
        out.status.code().unwrap_or(-1)
    };
    let a = d.join("a");
    let code = run_with_closed_stdout(&[
        "run",
        "--url",
        &srv.url("/status/500"),
        "--iterations",
        "3",
        "-q",
        "--threshold",
        "http_req_failed: rate < 0.01",
        "--out",
        a.to_str().unwrap(),
    ]);
    assert_eq!(code, 99, "a failed threshold still exits 99");
    let b = d.join("b");
    let o = pado(&[
        "run",
        "--url",
        &srv.url("/"),
        "--iterations",
        "3",
        "-q",
        "--out",
        b.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    assert_eq!(run_with_closed_stdout(&["compare", a, b]), 0);
    assert_eq!(run_with_closed_stdout(&["report", b]), 0);
    assert_eq!(run_with_closed_stdout(&["schema"]), 0);
    assert_eq!(
        run_with_closed_stdout(&[
            "plan",
            "--dau",
            "1000",
            "--requests-per-user",
            "5",
            "--scenario-time",
            "60s"
        ]),
        0
    );
}

/// A scenario against a target that never answers, with a short graceful stop.
fn hang_scenario(d: &Path, srv: &TestServer, duration: &str, grace: &str) -> PathBuf {
    write_fixture(
        d,
        "safety_hang_scenario.yaml",
        "hang.yaml",
        &[
            ("target", srv.base_url()),
            ("duration", duration.to_string()),
            ("grace", grace.to_string()),
        ],
    )
}

/// Start `pado run FILE` writing to `out`, and let it run for `for_`.
fn spawn_and_wait(f: &Path, out: &Path, for_: Duration) -> std::process::Child {
    let child = spawn_piped(pado_cmd(["run", f.to_str().unwrap(), "-q", "--out"]).arg(out));
    std::thread::sleep(for_);
    child
}

#[test]
fn ctrl_c_gives_in_flight_requests_the_graceful_stop_from_the_signal() {
    let _m = shared_machine();
    let srv = TestServer::start();
    let d = tmp("ctrlc-hang");
    let f = hang_scenario(&d, &srv, "60s", "2s");
    let child = spawn_and_wait(&f, &d.join("r"), Duration::from_millis(1500));
    let t = Instant::now();
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    // 2 s of graceful stop, not the 62 s of the planned end plus it.
    assert!(
        t.elapsed() < Duration::from_secs(8),
        "took {:?}",
        t.elapsed()
    );
    // No request completed (each hung until the graceful stop ended it): nothing
    // was measured, and the verdict says so with exit 99.
    assert_eq!(out.status.code(), Some(99), "{}", stderr(&out));
    let s = read_json(&d.join("r").join("summary.json"));
    assert_eq!(s["interrupted"], true);
    assert_eq!(num(&s, "iterations_interrupted"), 2.0, "{s}");
}

#[test]
fn a_run_stopped_before_its_end_is_interrupted_even_when_the_stop_outlasts_the_end() {
    let _m = shared_machine();
    let srv = TestServer::start();
    let d = tmp("ctrlc-late");
    // Stopped at 1.5 s of 3 s; the 3 s graceful stop for the hanging requests ends
    // at 4.5 s, after the planned end.
    let f = hang_scenario(&d, &srv, "3s", "3s");
    let child = spawn_and_wait(&f, &d.join("r"), Duration::from_millis(1500));
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    // No request completed: exit 99, as the verdict says (not 130: one signal).
    assert_eq!(out.status.code(), Some(99), "{}", stderr(&out));
    let s = read_json(&d.join("r").join("summary.json"));
    assert_eq!(s["interrupted"], true, "{s}");
}

/// A full disk behind both of pado's output streams (`/dev/full` answers every write
/// with ENOSPC): the run still ends with its own exit code and writes its results,
/// never a crash (exit 101) at its last message.
#[test]
fn full_output_streams_neither_crash_nor_change_the_exit_code() {
    let _machine = crate::harness::shared_machine();
    let srv = pado_testkit::TestServer::start();
    let t = crate::harness::tmp("full-streams");
    let dir = t.join("result");
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    // --http-debug: every exchange and a warning go to stderr.
    let status = pado_cmd([
        "run",
        "--url",
        &srv.url("/"),
        "--vus",
        "2",
        "--duration",
        "1s",
    ])
    .arg("--out")
    .arg(&dir)
    .arg("--http-debug")
    .stdout(full())
    .stderr(full())
    .status()
    .unwrap();
    assert_eq!(status.code(), Some(0));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert!(s["requests"].as_u64().unwrap() > 0, "{s}");
}
