//! One test split over several `pado run --segment i/N` processes started together
//! (`--start-at`) against one test server: the server's own count is the truth the
//! segments must add up to, exactly as one process would send it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Output;

use pado_testkit::TestServer;
use serde_json::Value;

use crate::harness::{
    merge, pado_cmd, read_json, run, shared_machine, spawn_piped, start_in, tmp, write_file,
    write_fixture,
};

/// Run the segments `0/n .. n-1/n` of `file` as `n` processes at once, all with the
/// same `--start-at`, each writing its result under `dir`. Returns each process's
/// output and result directory, in segment order.
fn run_segments(dir: &Path, file: &Path, n: u32, extra: &[&str]) -> Vec<(Output, PathBuf)> {
    let _machine = shared_machine();
    let at = start_in(3);
    let children: Vec<_> = (0..n)
        .map(|i| {
            let out = dir.join(format!("seg{i}"));
            let child = spawn_piped(
                pado_cmd(["run"])
                    .arg(file)
                    .args(["--segment", &format!("{i}/{n}"), "--start-at", &at])
                    .args(extra)
                    .arg("--out")
                    .arg(&out)
                    .arg("--quiet"),
            );
            (child, out)
        })
        .collect();
    children
        .into_iter()
        .map(|(c, out)| (c.wait_with_output().unwrap(), out))
        .collect()
}

fn ok(o: &Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn requests(dir: &Path) -> f64 {
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    s["requests"].as_f64().unwrap()
}

#[test]
fn per_vu_iterations_split_in_three_sends_exactly_the_whole_plan() {
    let srv = TestServer::start();
    let dir = tmp("seg-iter");
    let f = write_fixture(
        &dir,
        "segments_per_vu_iterations_split_in_three_sends_exactly_the_whole_plan.yaml",
        "t.yaml",
        &[("target", srv.base_url())],
    );
    // The whole test in one process: 35 requests (and a threshold that fails: 99).
    let whole = run("seg-iter-whole", &[f.to_str().unwrap()]);
    assert_eq!(whole.code(), 99, "{}", whole.stderr());
    assert_eq!(srv.stats().requests, 35);
    srv.reset_stats();
    let runs = run_segments(&dir, &f, 3, &[]);
    let mut plan_ids = BTreeSet::new();
    let mut sent = 0.0;
    for (i, (o, out)) in runs.iter().enumerate() {
        // A segment's exit code ignores thresholds (judged on the merged result),
        // and says so.
        ok(o);
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("judged on the merged result"),
            "{}",
            String::from_utf8_lossy(&o.stdout)
        );
        let meta = read_json(&out.join("run.json"));
        let seg = &meta["segment"];
        assert_eq!(seg["index"], i as u64);
        assert_eq!(seg["count"], 3);
        assert_eq!(seg["weights"], serde_json::json!([1, 1, 1]));
        assert_eq!(seg["ran_setup"], false, "no setup in this file");
        assert!(seg["start_at"].as_str().unwrap().ends_with('Z'));
        let skew = seg["start_skew_ms"].as_f64().expect("a measured skew");
        assert!((0.0..1000.0).contains(&skew), "skew {skew} ms");
        // started_at carries milliseconds and is second 0, at or after the start.
        let started = meta["started_at"].as_str().unwrap();
        assert_eq!(started.len(), "2026-11-23T10:00:00.000Z".len(), "{started}");
        let parse = |t: &str| {
            time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).unwrap()
        };
        let late = parse(started) - parse(seg["start_at"].as_str().unwrap());
        assert!(
            late.whole_milliseconds() >= -2 && late.whole_milliseconds() < 1000,
            "{started} vs {}",
            seg["start_at"]
        );
        let desc = meta["scenarios"][0]["description"].as_str().unwrap();
        assert!(
            desc.starts_with(&format!("segment {i}/3 (1/3 of the load)")),
            "{desc}"
        );
        plan_ids.insert(seg["plan_id"].as_str().unwrap().to_string());
        sent += requests(out);
    }
    assert_eq!(plan_ids.len(), 1, "one test, one plan id: {plan_ids:?}");
    assert_eq!(plan_ids.first().unwrap().len(), 64);
    // VUs 0,3 / 1,4 / 2 of 5, 7 iterations each.
    assert_eq!(srv.stats().requests, 35);
    assert_eq!(sent, 35.0);
}

#[test]
fn arrival_rate_segments_add_up_to_the_single_run() {
    let srv = TestServer::start();
    let dir = tmp("seg-rate");
    let f = write_fixture(
        &dir,
        "segments_arrival_rate_segments_add_up_to_the_single_run.yaml",
        "t.yaml",
        &[("target", srv.base_url())],
    );
    let whole = run("seg-rate-whole", &[f.to_str().unwrap()]);
    assert_eq!(whole.code(), 0, "{}", whole.stderr());
    let single = srv.stats().requests;
    assert_eq!(single, 60);
    srv.reset_stats();
    let runs = run_segments(&dir, &f, 3, &[]);
    let mut per_segment = Vec::new();
    for (o, out) in &runs {
        ok(o);
        per_segment.push(requests(out));
    }
    assert_eq!(srv.stats().requests, single);
    assert_eq!(per_segment, vec![20.0, 20.0, 20.0]);
}

#[test]
fn unique_rows_never_repeat_across_segments_and_sequential_rows_are_partitioned() {
    let srv = TestServer::start();
    let dir = tmp("seg-feeds");
    let rows: String = (0..200).map(|i| format!("u{i:03}\n")).collect();
    write_file(&dir, "users.csv", &format!("user\n{rows}"));
    let f = write_fixture(&dir, "segments_unique_rows_never_repeat_across_segments_and_sequential_rows_are_partitioned.yaml", "t.yaml", &[("target", srv.base_url())]);
    let runs = run_segments(&dir, &f, 3, &[]);
    for (o, _) in &runs {
        ok(o);
    }
    let recs = srv.records();
    assert_eq!(recs.len(), 30);
    let mut users = BTreeMap::new();
    let mut seqs = BTreeMap::new();
    let mut vus = BTreeSet::new();
    for r in &recs {
        let parts: Vec<&str> = r.path.trim_start_matches("/u/").split('/').collect();
        assert_eq!(parts.len(), 3, "{}", r.path);
        *users.entry(parts[0].to_string()).or_insert(0) += 1;
        *seqs.entry(parts[1].parse::<u32>().unwrap()).or_insert(0) += 1;
        vus.insert(parts[2].parse::<u32>().unwrap());
    }
    // `unique`: 30 requests, 30 different rows, over all three processes.
    assert_eq!(users.len(), 30, "a unique row was sent twice: {users:?}");
    // `sequential`: 30 rows, 30 picks, each row exactly once across segments.
    assert_eq!(seqs.len(), 30, "{seqs:?}");
    assert!(seqs.values().all(|&n| n == 1));
    // VU ids are global: 1..=6 across the processes, not 1..=2 in each.
    assert_eq!(vus, (1..=6).collect::<BTreeSet<u32>>());
}

#[test]
fn setup_runs_once_and_its_variables_reach_every_segment() {
    let srv = TestServer::start();
    let dir = tmp("seg-setup");
    let f = write_fixture(
        &dir,
        "segments_setup_runs_once_and_its_variables_reach_every_segment.yaml",
        "t.yaml",
        &[("target", srv.base_url())],
    );
    // A segment other than 0 cannot run the setup, and says what to do.
    let refused = crate::harness::pado(&["run", f.to_str().unwrap(), "--segment", "1/3"]);
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("pado setup") && err.contains("--setup-vars"),
        "{err}"
    );
    assert_eq!(srv.stats().requests, 0);

    let vars = dir.join("vars.json");
    let o = crate::harness::pado(&[
        "setup",
        f.to_str().unwrap(),
        "--out",
        vars.to_str().unwrap(),
        "--quiet",
    ]);
    ok(&o);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&vars).unwrap()).unwrap();
    let token = v["token"].as_str().expect("token in vars.json").to_string();
    assert!(token.starts_with("tok-"), "{v}");
    assert_eq!(srv.stats().requests, 1);

    let runs = run_segments(&dir, &f, 3, &["--setup-vars", vars.to_str().unwrap()]);
    for (o, out) in &runs {
        ok(o);
        assert_eq!(
            read_json(&out.join("run.json"))["segment"]["ran_setup"],
            false
        );
    }
    let stats = srv.stats();
    // One setup request in all: `pado setup`'s.
    assert_eq!(stats.by_path.get("/json/login"), Some(&1));
    assert_eq!(stats.by_path.get(&format!("/use/{token}")), Some(&6));
    assert_eq!(stats.requests, 7);

    // A file without a global setup has nothing to hand over.
    let plain = write_fixture(
        &dir,
        "segments_setup_runs_once_and_its_variables_reach_every_segment_plain.yaml",
        "plain.yaml",
        &[("target", srv.base_url())],
    );
    let o = crate::harness::pado(&[
        "setup",
        plain.to_str().unwrap(),
        "--out",
        vars.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no global `setup:`"));
}

#[test]
fn segment_zero_runs_the_setup_itself_and_bad_flags_are_refused() {
    let srv = TestServer::start();
    let dir = tmp("seg-flags");
    let f = write_fixture(
        &dir,
        "segments_segment_zero_runs_the_setup_itself_and_bad_flags_are_refused.yaml",
        "t.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("seg-zero", &[f.to_str().unwrap(), "--segment", "0/4"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert_eq!(r.run_json()["segment"]["ran_setup"], true);
    let stats = srv.stats();
    // Setup, VU 0 of 3 (positions 0 of 0,1,2,3), teardown.
    assert_eq!(stats.by_path.get("/json/login"), Some(&1));
    assert_eq!(stats.by_path.get("/bye"), Some(&1));
    assert_eq!(stats.requests, 3);
    // Segment 3/4 of 3 VUs has none: it runs, sends nothing and says so.
    srv.reset_stats();
    let vars = write_file(&dir, "vars.json", r#"{"token": "tok-x"}"#);
    let r = run(
        "seg-empty",
        &[
            f.to_str().unwrap(),
            "--segment",
            "3/4",
            "--setup-vars",
            vars.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert!(r.stderr().contains("sends nothing"), "{}", r.stderr());
    assert_eq!(srv.stats().requests, 0, "no setup, no VUs, no teardown");

    for (args, flag) in [
        (vec!["--segment", "3/3"], "--segment"),
        (vec!["--segment", "0/0"], "--segment"),
        (vec!["--segment", "one/3"], "--segment"),
        (
            vec!["--segment", "0/3", "--segment-weights", "1,1"],
            "--segment-weights",
        ),
        (
            vec!["--segment", "0/2", "--segment-weights", "1,0"],
            "--segment-weights",
        ),
        (vec!["--start-at", "+25h"], "--start-at"),
        (vec!["--start-at", "2020-01-01T00:00:00Z"], "--start-at"),
        (vec!["--start-at", "tomorrow"], "--start-at"),
    ] {
        let mut a = vec!["run", f.to_str().unwrap()];
        a.extend(args.iter().copied());
        let o = crate::harness::pado(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(flag), "{args:?}: {err}");
    }
    assert_eq!(srv.stats().requests, 0);
}

#[test]
fn a_whole_run_can_start_at_an_agreed_instant_too() {
    let srv = TestServer::start();
    let r = run(
        "start-at-whole",
        &[
            "--url",
            &srv.url("/"),
            "--vus",
            "2",
            "--iterations",
            "3",
            "--start-at",
            "+1500ms",
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert_eq!(srv.stats().requests, 6);
    let meta = r.run_json();
    // No segment: the agreed start and its measured skew are a note.
    assert!(meta["segment"].is_null(), "{meta}");
    let notes: Vec<&str> = meta["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("agreed start (--start-at)") && n.contains("ms after it")),
        "{notes:?}"
    );
}

/// `shared-iterations`: 4 VUs share 23 iterations. One process sends exactly 23;
/// split in two segments (12 + 11, as k6's execution segments split them), the
/// processes together send exactly 23 again, and their merged result says 23.
#[test]
fn shared_iterations_run_exactly_alone_and_in_two_merged_segments() {
    let srv = TestServer::start();
    let dir = tmp("seg-shared");
    let f = write_fixture(
        &dir,
        "segments_shared_iterations_run_exactly_alone_and_in_two_merged_segments.yaml",
        "t.yaml",
        &[("target", srv.base_url())],
    );
    let whole = run("seg-shared-whole", &[f.to_str().unwrap()]);
    assert_eq!(whole.code(), 0, "{}", whole.stderr());
    assert_eq!(srv.stats().requests, 23);
    assert_eq!(whole.summary()["requests"].as_f64(), Some(23.0));
    let desc = whole.run_json()["scenarios"][0]["description"].clone();
    assert_eq!(desc, "23 iterations shared by 4 VUs (at most 30s)");
    srv.reset_stats();

    let runs = run_segments(&dir, &f, 2, &[]);
    let mut each = Vec::new();
    for (o, out) in &runs {
        ok(o);
        each.push(requests(out));
    }
    assert_eq!(each, [12.0, 11.0], "the stripe's 1,1 split of 23");
    assert_eq!(srv.stats().requests, 23);
    let merged = dir.join("merged");
    let dirs: Vec<PathBuf> = runs.iter().map(|(_, d)| d.clone()).collect();
    ok(&merge(&dirs, &merged, &[]));
    assert_eq!(requests(&merged), 23.0);
}

/// More segments than VUs (what `pado k8s run -n 3` does with a 2-VU test): the
/// segment given no VU lasts the test's planned length as the others do, so the
/// merge is whole (not "ended early") and its count equals the server's.
#[test]
fn a_segment_given_no_vu_lasts_the_test_and_the_merge_is_whole() {
    let srv = TestServer::start();
    let dir = tmp("seg-idle");
    let f = write_file(
        &dir,
        "t.yaml",
        &format!(
            "name: seg-idle\ntarget: {}\nscenarios:\n  s:\n    executor: constant-vus\n    vus: 2\n    duration: 3s\n    flow:\n      - request: GET /delay/20\n",
            srv.base_url()
        ),
    );
    let runs = run_segments(&dir, &f, 3, &[]);
    let mut outs = Vec::new();
    for (o, out) in &runs {
        ok(o);
        outs.push(out.clone());
    }
    let idle = &outs[2];
    assert_eq!(requests(idle), 0.0, "segment 2/3 has no VU");
    let meta = read_json(&idle.join("run.json"));
    let lasted = meta["duration_s"].as_f64().unwrap();
    assert!(
        lasted >= 3.0,
        "the idle segment ended after {lasted} s, before the test's 3 s"
    );
    let merged = dir.join("merged");
    let m = merge(&outs, &merged, &[]);
    ok(&m);
    let total: f64 = outs.iter().map(|o| requests(o)).sum();
    assert!(total > 0.0);
    assert_eq!(requests(&merged), total);
    assert_eq!(srv.stats().requests as f64, total);
}
