//! Events on the timeline (`events:`): the resilience examples' expectations pass
//! when the fault heals and fail (exit 99) when it never does, recovery is measured
//! within a second of the time the test heals the fault, a hanging command is killed
//! at its timeout while the run ends on time, and secrets in a command's output stay
//! out of the result files.

use std::path::Path;
use std::time::{Duration, Instant};

use pado_demo_target::{RunningTarget, TargetOptions};
use serde_json::Value;

use crate::harness::{
    demo_target, num, pado_cmd, run, shared_machine, tmp, write_file, write_fixture,
};

fn small_target() -> RunningTarget {
    demo_target(TargetOptions {
        posts: 2_000,
        ..Default::default()
    })
}

/// The target `pado demo` starts (4 workers, a pool of 2 connections at 20 ms: 100
/// queries/s), which the pool-shrink example is sized for.
fn pado_demo_sized_target() -> RunningTarget {
    demo_target(TargetOptions {
        posts: 2_000,
        workers: 4,
        pool_size: 2,
        query_cost: Duration::from_millis(20),
        ..Default::default()
    })
}

fn events_jsonl(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `examples/resilience/latency.yaml` shortened to 10 s of load: the fault at 3 s
/// for 3 s; `heal` is what the undo sets the added latency to.
fn short_latency_example(heal_ms: u32) -> String {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/resilience/latency.yaml"),
    )
    .unwrap();
    let mut out = text.clone();
    for (from, to) in [
        // The event's window first: the load's duration becomes `10s` after it.
        ("    duration: 10s\n", "    duration: 3s\n".to_string()),
        ("    duration: 30s\n", "    duration: 10s\n".to_string()),
        ("    at: 10s\n", "    at: 3s\n".to_string()),
        (
            "json: { added_latency_ms: 0 } }",
            format!("json: {{ added_latency_ms: {heal_ms} }} }}"),
        ),
    ] {
        assert!(
            out.contains(from),
            "the example changed: `{from}` not in it"
        );
        out = out.replacen(from, &to, 1);
    }
    out
}

#[test]
fn example_expectations_pass_when_the_fault_heals_and_fail_when_it_never_does() {
    let t = small_target();
    let url = t.base_url();
    let dir = tmp("events-example");
    let healed = write_file(&dir, "healed.yaml", &short_latency_example(0));
    let r = run(
        "events-healed",
        &[healed.to_str().unwrap(), "--target", &url],
    );
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    assert_eq!(s["events_ok"], true, "{s}");
    let e = &s["events"][0];
    assert_eq!(e["name"], "slow network");
    assert_eq!(e["outcome"], "ok");
    // The window shows the 300 ms the target added; before it did not.
    assert!(num(e, "during.p50_ms") >= 250.0, "{e}");
    assert!(num(e, "before.p95_ms") < 100.0, "{e}");
    // Requests delayed when the heal came finish 300 ms into the next second: the
    // first clean second starts within 1 s of the heal.
    let rec = num(e, "time_to_recovery_s");
    assert!(rec <= 1.5, "recovered {rec} s after the heal: {e}");
    assert!(r.stdout().contains("slow network"), "{}", r.stdout());
    // The record on the run's clock: the action at 3 s, the undo 3 s later.
    let ev = &events_jsonl(&r.dir)[0];
    let started = ev["started_ms"].as_u64().unwrap();
    assert!((3000..3500).contains(&started), "{ev}");
    let end = ev["window_end_ms"].as_u64().unwrap();
    assert!((started + 3000..started + 3500).contains(&end), "{ev}");
    assert_eq!(ev["action"]["status"], 200);
    // `pado report` on the directory gives the same verdict.
    let rep = pado_cmd(["report", "--quiet"])
        .arg(&r.dir)
        .output()
        .unwrap();
    assert_eq!(rep.status.code(), Some(0));

    // The undo "heals" to the same 300 ms: the fault never ends, `recovers` fails.
    let stuck = write_file(&dir, "stuck.yaml", &short_latency_example(300));
    let r = run("events-stuck", &[stuck.to_str().unwrap(), "--target", &url]);
    assert_eq!(r.code(), 99, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    assert_eq!(s["events_ok"], false);
    let x = s["events"][0]["expectations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["kind"] == "recovers")
        .unwrap()
        .clone();
    assert_eq!(x["ok"], false, "{x}");
    assert!(x["value"].is_null(), "{x}");
    assert!(s["events"][0]["time_to_recovery_s"].is_null());
    let rep = pado_cmd(["report", "--quiet"])
        .arg(&r.dir)
        .output()
        .unwrap();
    assert_eq!(rep.status.code(), Some(99));
}

#[test]
fn recovery_time_is_within_a_second_of_the_heal() {
    // The fault's window ends at 4 s, but the target stays slow until another
    // event heals it at 6 s: the truth is 2 s.
    let t = small_target();
    let dir = tmp("events-recovery");
    let scen = write_fixture(
        &dir,
        "events_recovery_time_is_within_a_second_of_the_heal.yaml",
        "s.yaml",
        &[("target", t.base_url())],
    );
    let r = run("events-recovery", &[scen.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    let e = &s["events"][0];
    let ev = events_jsonl(&r.dir);
    let heal_ms = ev[1]["action"]["ended_ms"].as_u64().unwrap() as f64;
    let end_ms = ev[0]["window_end_ms"].as_u64().unwrap() as f64;
    let truth = (heal_ms - end_ms) / 1000.0;
    let rec = num(e, "time_to_recovery_s");
    assert!(
        (rec - truth).abs() <= 1.0,
        "measured {rec} s, truth {truth} s: {e}"
    );
    assert!((truth - 2.0).abs() < 0.5, "{ev:?}");
}

#[test]
fn a_hanging_command_is_killed_at_its_timeout_and_secrets_stay_out() {
    let _machine = shared_machine();
    let server = pado_testkit::TestServer::start();
    let dir = tmp("events-hang");
    let scen = write_fixture(
        &dir,
        "events_a_hanging_command_is_killed_at_its_timeout_and_secrets_stay_out.yaml",
        "s.yaml",
        &[("target", server.base_url())],
    );
    let out = dir.join("result");
    let t0 = Instant::now();
    let o = pado_cmd(["run", scen.to_str().unwrap(), "--quiet", "--out"])
        .arg(&out)
        .env("PADO_E2E_EVENT_TOKEN", "s3cr3t-value-81")
        .output()
        .unwrap();
    let took = t0.elapsed();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    // 4 s of load; the 60 s sleep did not hold the run.
    assert!(took < Duration::from_secs(15), "{took:?}");
    let ev = events_jsonl(&out);
    let hang = ev.iter().find(|e| e["name"] == "hang").unwrap();
    assert_eq!(hang["action"]["outcome"], "timeout", "{hang}");
    let ran = hang["action"]["ended_ms"].as_u64().unwrap()
        - hang["action"]["started_ms"].as_u64().unwrap();
    assert!((1000..3000).contains(&ran), "{hang}");
    assert!(stderr.contains("event `hang`"), "{stderr}");
    let secret = ev.iter().find(|e| e["name"] == "secret").unwrap();
    assert_eq!(secret["action"]["stdout"], "token=***\n", "{secret}");
    assert_eq!(secret["action"]["stderr"], "***\n", "{secret}");
    for f in ["events.jsonl", "summary.json", "run.json", "report.html"] {
        let text = std::fs::read_to_string(out.join(f)).unwrap();
        assert!(!text.contains("s3cr3t-value-81"), "{f} holds the secret");
    }
    assert!(!stdout.contains("s3cr3t") && !stderr.contains("s3cr3t"));
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let h = s["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "hang")
        .unwrap();
    assert_eq!(h["outcome"], "timeout");
    assert_eq!(s["events_ok"], true, "not required: {s}");
}

#[test]
fn a_required_failing_event_stops_the_run_cleanly() {
    let server = pado_testkit::TestServer::start();
    let dir = tmp("events-required");
    let scen = write_fixture(
        &dir,
        "events_a_required_failing_event_stops_the_run_cleanly.yaml",
        "s.yaml",
        &[("target", server.base_url())],
    );
    let t0 = Instant::now();
    let r = run("events-required", &[scen.to_str().unwrap()]);
    assert_eq!(r.code(), 99, "{}\n{}", r.stdout(), r.stderr());
    assert!(t0.elapsed() < Duration::from_secs(15));
    assert!(
        r.stderr()
            .contains("event `broken`: its action failed: exit code 3"),
        "{}",
        r.stderr()
    );
    let s = r.summary();
    assert_eq!(s["interrupted"], true);
    assert!(num(&s, "duration_s") < 10.0, "{s}");
    let ev = events_jsonl(&r.dir);
    let w = ev.iter().find(|e| e["name"] == "window").unwrap();
    // The open window was undone when the run stopped.
    assert_eq!(w["undo"]["exit_code"], 0, "{w}");
}

/// `pado run FILE --target URL --fit-to FIT` (events move with the load).
fn run_fitted(name: &str, file: &Path, url: &str, fit: &str) -> crate::harness::Run {
    run(
        name,
        &[file.to_str().unwrap(), "--target", url, "--fit-to", fit],
    )
}

/// Runs `examples/resilience/NAME.yaml` unedited, fitted to 10 s of load (events
/// move with the load), against a fresh demo target; returns its summary.
fn example_passes(name: &str) -> Value {
    example_passes_on(name, small_target()).0
}

/// [`example_passes`] against the target `t`; also returns `events.jsonl`.
fn example_passes_on(name: &str, t: RunningTarget) -> (Value, Vec<Value>) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/resilience")
        .join(format!("{name}.yaml"));
    let r = run_fitted(&format!("events-{name}"), &file, &t.base_url(), "10s");
    assert_eq!(r.code(), 0, "{name}\n{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    assert_eq!(s["events_ok"], true, "{s}");
    let ev = events_jsonl(&r.dir);
    assert!(!ev.is_empty());
    for e in &ev {
        assert!(e["started_ms"].as_u64().is_some(), "{name}: {e}");
    }
    (s, ev)
}

#[test]
fn the_error_burst_example_passes() {
    let s = example_passes("error-burst");
    let e = &s["events"][0];
    // 30% answered 500 in the window, about none outside it.
    let rate = num(e, "during.error_rate");
    assert!((0.15..0.45).contains(&rate), "{e}");
    assert_eq!(num(e, "before.failed"), 0.0, "{e}");
    // The first error comes in the window's first second; a generator starved of
    // CPU (its self-check says so) may send that second's requests late.
    let first = num(e, "time_to_first_error_s");
    match crate::harness::machine_too_busy_in(&s) {
        None => assert_eq!(first, 0.0, "{e}"),
        Some(busy) => assert!(first <= 1.0, "{e}; {busy}"),
    }
    assert_eq!(num(e, "failed_requests"), num(e, "during.failed"), "{e}");
}

#[test]
fn the_stall_example_passes() {
    let s = example_passes("stall");
    let e = &s["events"][0];
    // The 3 s pause held the requests that came during it.
    assert!(num(e, "during.p95_ms") > 1000.0, "{e}");
    assert_eq!(num(&s, "failed"), 0.0);
}

#[test]
fn the_cache_off_example_passes() {
    let (s, _) = example_passes_on("cache-off", pado_demo_sized_target());
    let ev = s["events"].as_array().unwrap();
    assert_eq!(ev[0]["name"], "steady");
    assert_eq!(ev[0]["outcome"], "mark");
    // at_stage 2 of 5s + 25s fitted to 10 s: the mark at 1.67 s.
    assert!((num(&ev[0], "start_s") - 1.667).abs() < 0.3, "{}", ev[0]);
    assert_eq!(ev[1]["outcome"], "ok");
}

#[test]
fn the_pool_shrink_example_passes() {
    let (s, _) = example_passes_on("pool-shrink", pado_demo_sized_target());
    let e = &s["events"][0];
    assert_eq!(e["outcome"], "ok", "{e}");
    // One connection of 20 ms for 60 queries/s: requests queue in the window, not
    // before it; nothing fails.
    assert!(num(e, "before.p95_ms") < 100.0, "{e}");
    assert!(num(e, "during.p95_ms") > 200.0, "{e}");
    assert_eq!(num(&s, "failed"), 0.0, "{s}");
    assert!(e["time_to_recovery_s"].as_f64().is_some(), "{e}");
}

/// The kinds of an event's expectations that failed (`during`, `recovers`, ...).
fn failed_kinds(e: &Value) -> Vec<&str> {
    e["expectations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["ok"] == false)
        .map(|x| x["kind"].as_str().unwrap())
        .collect()
}

/// `examples/resilience/NAME.yaml` with its fault never healing: the `undo:` of its
/// event removed, and each `(from, to)` replaced.
fn never_healing(name: &str, edits: &[(&str, &str)]) -> String {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/resilience")
            .join(format!("{name}.yaml")),
    )
    .unwrap();
    let mut out = String::new();
    let mut in_undo = false;
    for line in text.lines() {
        if line.trim_start().starts_with("undo:") {
            in_undo = true;
            continue;
        }
        // The undo's own lines are indented deeper than `undo:` (6 spaces).
        if in_undo && line.starts_with("      ") {
            continue;
        }
        in_undo = false;
        out.push_str(line);
        out.push('\n');
    }
    assert_ne!(out, text, "{name}: no undo to remove");
    for (from, to) in edits {
        assert!(out.contains(from), "{name} changed: `{from}` not in it");
        out = out.replacen(from, to, 1);
    }
    out
}

/// Every example whose fault heals by its undo fails (exit 99, `recovers` among the
/// failed expectations) when the fault never heals: its expectations tell a service
/// that recovered from one that did not.
#[test]
fn every_example_fails_when_its_fault_never_heals() {
    let cases: [(&str, &[(&str, &str)]); 4] = [
        ("error-burst", &[]),
        // One pause, made a pause every 4 s of 3 s each.
        (
            "stall",
            &[(
                "json: { stall_ms: 3000 }",
                "json: { stall_ms: 3000, stall_every_s: 4 }",
            )],
        ),
        ("cache-off", &[]),
        ("pool-shrink", &[]),
    ];
    let runs: Vec<_> = cases
        .into_iter()
        .map(|(name, edits)| {
            let text = never_healing(name, edits);
            std::thread::spawn(move || {
                let t = pado_demo_sized_target();
                let dir = tmp(&format!("events-never-{name}"));
                let file = write_file(&dir, "never.yaml", &text);
                let r = run_fitted(&format!("events-never-{name}"), &file, &t.base_url(), "10s");
                (name, r.code(), r.summary())
            })
        })
        .collect();
    for h in runs {
        let (name, code, s) = h.join().unwrap();
        assert_eq!(code, 99, "{name}: {:#}", s["events"]);
        assert_eq!(s["events_ok"], false, "{name}");
        let e = s["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["end_s"].is_number())
            .unwrap();
        let failed = failed_kinds(e);
        assert!(failed.contains(&"recovers"), "{name}: {e}");
        // What happened in the window still held: only the healing failed. (Not for
        // the stall: periodic pauses start a period after they are set, so the
        // shortened window itself sees none.)
        if name != "stall" {
            assert!(!failed.contains(&"during"), "{name}: {e}");
        }
    }
}

/// `examples/resilience/restart.yaml` with its restart lasting `restart_ms`.
fn restart_example(restart_ms: u32) -> String {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/resilience/restart.yaml"),
    )
    .unwrap();
    let from = "json: { restart_ms: 2000 } }";
    assert!(
        text.contains(from),
        "the example changed: `{from}` not in it"
    );
    text.replacen(from, &format!("json: {{ restart_ms: {restart_ms} }} }}"), 1)
}

#[test]
fn the_restart_example_passes_and_fails_when_the_service_never_comes_back() {
    let (s, ev) = example_passes_on("restart", small_target());
    let e = &s["events"][0];
    assert_eq!(e["outcome"], "ok", "{e}");
    // Refused while it was down, nothing before; all failures are the connection's.
    assert_eq!(num(e, "before.failed"), 0.0, "{e}");
    assert!(num(e, "during.failed") > 0.0, "{e}");
    let errors = s["errors"].as_object().unwrap();
    assert!(
        errors
            .get("connect_refused")
            .is_some_and(|n| n.as_u64() > Some(0)),
        "{errors:?}"
    );
    for (kind, n) in errors {
        assert!(
            ["connect_refused", "reset"].contains(&kind.as_str()),
            "{kind}: {n} in {errors:?}"
        );
    }
    // Fitted to 10 s the window is 0.67 s, the restart still 2 s from its answer:
    // the service is back about 1.33 s after the window's end, measured to a second.
    let rec = num(e, "time_to_recovery_s");
    let ev = &ev[0];
    let back_ms = ev["action"]["ended_ms"].as_u64().unwrap() as f64 + 2000.0;
    let truth = (back_ms - ev["window_end_ms"].as_u64().unwrap() as f64) / 1000.0;
    assert!(
        (rec - truth).abs() <= 1.0,
        "measured {rec} s, truth {truth} s: {e}"
    );

    // The same restart, longer than the run: the service never comes back.
    let t = small_target();
    let dir = tmp("events-restart");
    let stuck = write_file(&dir, "stuck.yaml", &restart_example(60_000));
    let r = run_fitted("events-restart-stuck", &stuck, &t.base_url(), "10s");
    assert_eq!(r.code(), 99, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    assert_eq!(s["events_ok"], false);
    let e = &s["events"][0];
    let failed = failed_kinds(e);
    assert!(failed.contains(&"recovers"), "{e}");
    assert!(e["time_to_recovery_s"].is_null(), "{e}");
    // Shut down in the middle of its restart.
    t.shutdown();
}

#[test]
fn the_leak_example_runs_and_the_target_keeps_what_each_request_leaked() {
    let t = small_target();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/resilience/leak.yaml");
    let r = run_fitted("events-leak", &file, &t.base_url(), "5s");
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    assert_eq!(s["failed"], 0, "{s}");
    // 64 KiB for every request served once the event at 0 s had switched the leak
    // on (the very first ones may have come before it).
    let served = t.requests_served() as f64;
    let faults = t.faults();
    assert_eq!(faults.leak_kib_per_request, 64);
    assert_eq!(faults.leak_creep_us_per_mib, 100);
    let leaked = std::fs::read_to_string(r.dir.join("observe.jsonl")).unwrap();
    assert!(leaked.contains("\"process_resident_memory_bytes\""));
    assert!(leaked.contains("\"pado_target_leaked_bytes\""));
    let m = leaked_bytes(&t);
    let kib = m / 1024.0;
    assert!(
        kib <= served * 64.0 && kib >= (served - 10.0) * 64.0,
        "{kib} KiB leaked by {served} requests"
    );
}

/// `pado_target_leaked_bytes` from the target's `/metrics`.
fn leaked_bytes(t: &RunningTarget) -> f64 {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(t.addr()).unwrap();
    c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    c.read_to_string(&mut text).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("pado_target_leaked_bytes "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Issue #29.4: pado killed (`kill -9`) while a fault window is open leaves the fault
/// in place (the start command's marker file stays); the next `pado run` by the same
/// user says which fault of which run was left open, runs its undo (the marker goes)
/// and records it in the killed run's directory, whose report then says so.
#[test]
fn a_fault_left_open_by_a_killed_pado_is_undone_by_the_next_run() {
    let _machine = shared_machine();
    let srv = pado_testkit::TestServer::start();
    let tmp = tmp("left-open");
    let state = tmp.join("state");
    let marker = tmp.join("fault-injected");
    let killed = tmp.join("killed");
    let scen = write_fixture(
        &tmp,
        "events_a_fault_left_open_by_a_killed_pado_is_undone_by_the_next_run.yaml",
        "fault.yaml",
        &[
            ("target", srv.base_url()),
            ("marker", marker.display().to_string()),
        ],
    );
    let mut child = pado_cmd(["run", scen.to_str().unwrap(), "--quiet", "--out"])
        .arg(&killed)
        .env("XDG_STATE_HOME", &state)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(15);
    while !marker.exists() {
        assert!(Instant::now() < until, "the fault was never injected");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap(); // SIGKILL: nothing of pado runs after it.
    child.wait().unwrap();
    assert!(marker.exists(), "nothing should have undone the fault yet");
    let records = || {
        std::fs::read_dir(state.join("pado/open-faults"))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    assert_eq!(records(), 1);

    // The killed run's report says the window was open when it died.
    let report = |dir: &Path| -> String {
        let out = pado_cmd(["report"])
            .arg(dir)
            .env("XDG_STATE_HOME", &state)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = report(&killed);
    assert!(
        text.contains("event `지연 주입`: its fault window was still open when the run died"),
        "{text}"
    );
    assert!(marker.exists(), "a report runs nothing");

    // The next run, of anything, puts the fault back first.
    let next = pado_cmd([
        "run",
        "--url",
        &srv.url("/"),
        "--vus",
        "1",
        "--duration",
        "1s",
    ])
    .args(["--quiet", "--out"])
    .arg(tmp.join("next"))
    .env("XDG_STATE_HOME", &state)
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&next.stderr);
    assert_eq!(next.status.code(), Some(0), "{err}");
    assert!(
        err.contains("run `결제 장애`")
            && err.contains("was killed with the fault window of event `지연 주입` open"),
        "{err}"
    );
    assert!(err.contains("event `지연 주입`: undone"), "{err}");
    assert!(!marker.exists(), "the undo did not run");
    assert_eq!(records(), 0);
    assert!(!killed.join("open-faults.json").exists());
    let ev = events_jsonl(&killed);
    let undone = ev.iter().find(|e| e["name"] == "지연 주입").unwrap();
    assert_eq!(undone["left_open"]["undone_by"], "pado run", "{undone}");
    assert_eq!(undone["undo"]["exit_code"], 0, "{undone}");
    let text = report(&killed);
    assert!(
        text.contains("left open by a killed run")
            && text.contains("a later `pado run` ran its undo at"),
        "{text}"
    );
}
