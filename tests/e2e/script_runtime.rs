//! A k6 script's own lifecycle on pado, as k6 v1.8.1 runs it (each truth below
//! was read off k6 itself against a local server): an exception in `setup()`
//! stops the test with exit 107 before any iteration, one in `teardown()` exits
//! 107 after the load, `exec.test.abort()` exits 108 with teardown still run,
//! `k6/execution`'s numbers are unique across VUs and across the segments of a
//! split test, and `handleSummary` writes what it returns. The test kit's server
//! counts what it received.

use std::collections::BTreeMap;
use std::path::PathBuf;

use pado_testkit::TestServer;

use crate::harness::{num, pado_cmd, run, tmp};

fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/e2e/testdata/k6/runtime")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn base(srv: &TestServer) -> String {
    format!("BASE={}", srv.base_url())
}

/// How many requests the server received, by path.
fn paths(srv: &TestServer) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for r in srv.records() {
        *m.entry(r.path).or_default() += 1;
    }
    m
}

#[test]
fn an_exception_in_setup_stops_the_test_with_107_before_any_iteration() {
    let srv = TestServer::start();
    let r = run(
        "k6-setup-throws",
        &[&script("setup_throws.js"), "-e", &base(&srv)],
    );
    // k6 v1.8.1 on this script: exit 107, setup's one request, no iteration, no teardown.
    assert_eq!(r.code(), 107, "{}\n{}", r.stdout(), r.stderr());
    assert_eq!(
        paths(&srv),
        BTreeMap::from([("/setup".to_string(), 1)]),
        "{}",
        r.stderr()
    );
    let e = r.stderr();
    assert!(e.contains("Error: setup broke 파도"), "{e}");
    assert!(e.contains("setup_throws.js:9:"), "file:line:column: {e}");
    assert!(
        e.contains("throw new Error('setup broke 파도');"),
        "the source line: {e}"
    );
    // The result directory is written all the same: no iteration in it.
    let s = r.summary();
    assert_eq!(num(&s, "iterations"), 0.0);
    assert_eq!(num(&s, "requests"), 1.0);
}

#[test]
fn an_exception_in_teardown_exits_107_after_the_load() {
    let srv = TestServer::start();
    let r = run(
        "k6-teardown-throws",
        &[&script("teardown_throws.js"), "-e", &base(&srv)],
    );
    assert_eq!(r.code(), 107, "{}\n{}", r.stdout(), r.stderr());
    assert_eq!(
        paths(&srv),
        BTreeMap::from([("/iteration".to_string(), 3), ("/teardown".to_string(), 1)])
    );
    let e = r.stderr();
    assert!(e.contains("teardown_throws.js:12:"), "{e}");
    assert_eq!(num(&r.summary(), "iterations"), 3.0);
}

#[test]
fn exec_test_abort_stops_the_run_with_108_and_teardown_still_runs() {
    let srv = TestServer::start();
    let r = run("k6-abort", &[&script("abort.js"), "-e", &base(&srv)]);
    // k6 v1.8.1: exit 108, three iterations counted, teardown run.
    assert_eq!(r.code(), 108, "{}\n{}", r.stdout(), r.stderr());
    assert_eq!(
        paths(&srv),
        BTreeMap::from([
            ("/after-abort-check".to_string(), 2),
            ("/iteration".to_string(), 3),
            ("/teardown".to_string(), 1),
        ])
    );
    assert!(r.stderr().contains("enough rows"), "{}", r.stderr());
    assert_eq!(num(&r.summary(), "iterations"), 3.0);
    // The abort is not an exception: no script error sampled.
    let failures = std::fs::read_to_string(r.dir.join("failures.jsonl")).unwrap_or_default();
    assert!(!failures.contains("script_error"), "{failures}");
}

/// The `i` of every `/row` request the server received.
fn rows(srv: &TestServer) -> Vec<(u64, BTreeMap<String, String>)> {
    srv.records()
        .into_iter()
        .filter(|r| r.path == "/row")
        .map(|r| {
            let q: BTreeMap<String, String> = r.query.into_iter().collect();
            (q["i"].parse().unwrap(), q)
        })
        .collect()
}

#[test]
fn iteration_in_test_is_unique_across_vus_and_execution_reads_the_run() {
    let srv = TestServer::start();
    let r = run("k6-unique", &[&script("unique_rows.js"), "-e", &base(&srv)]);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let got = rows(&srv);
    let mut ids: Vec<u64> = got.iter().map(|(i, _)| *i).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..30).collect::<Vec<_>>(), "each row once");
    let mut inst: Vec<u64> = got
        .iter()
        .map(|(_, q)| q["inst"].parse().unwrap())
        .collect();
    inst.sort_unstable();
    assert_eq!(
        inst,
        (0..30).collect::<Vec<_>>(),
        "one generator: instance = test"
    );
    for (_, q) in &got {
        assert_eq!(q["name"], "rows");
        assert_eq!(q["executor"], "shared-iterations");
        assert_eq!(q["vus"], "10", "test.options is the script's options");
        let vu: u64 = q["vu"].parse().unwrap();
        assert!((1..=10).contains(&vu), "{q:?}");
        let active: u64 = q["active"].parse().unwrap();
        let init: u64 = q["init"].parse().unwrap();
        assert!((1..=10).contains(&active), "{q:?}");
        assert!((1..=10).contains(&init), "{q:?}");
        for k in ["progress", "start", "dur"] {
            assert_eq!(q[k], "true", "{k}: {q:?}");
        }
    }
    // Each VU's own iteration numbers run 0, 1, 2, ... without a gap.
    let mut by_vu: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (_, q) in &got {
        by_vu
            .entry(q["vu"].clone())
            .or_default()
            .push(q["vuiter"].parse().unwrap());
    }
    for (vu, mut its) in by_vu {
        its.sort_unstable();
        assert_eq!(its, (0..its.len() as u64).collect::<Vec<_>>(), "VU {vu}");
    }
}

#[test]
fn iteration_in_test_is_unique_across_the_segments_of_a_split_test() {
    let srv = TestServer::start();
    let work = tmp("k6-unique-seg");
    let mut codes = Vec::new();
    for i in 0..3 {
        let out = pado_cmd(["run"])
            .arg(script("unique_rows.js"))
            .args(["-e", &base(&srv), "--segment", &format!("{i}/3"), "--quiet"])
            .arg("--out")
            .arg(work.join(format!("seg{i}")))
            .output()
            .expect("running pado");
        codes.push((
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ));
    }
    for (c, e) in &codes {
        assert_eq!(*c, Some(0), "{e}");
    }
    // The three segments' iterations together are the test's 30, each number once.
    let mut ids: Vec<u64> = rows(&srv).iter().map(|(i, _)| *i).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..30).collect::<Vec<_>>());
}

/// A stand-in for jslib's `k6-summary` module (its text is not ours to copy):
/// the same export, reading k6's summary object, in the module cache where the
/// script's URL resolves.
const TEXT_SUMMARY: &str = "export function textSummary(data, opts) {\n  \
    return `${opts.indent}requests: ${data.metrics.http_reqs.values.count}\\n` +\n    \
    `${opts.indent}iterations: ${data.metrics.iterations.values.count}\\n`;\n}\n";

#[test]
fn handle_summary_writes_stdout_and_files_as_k6_and_keeps_them_in_the_result() {
    let srv = TestServer::start();
    let work = tmp("k6-summary");
    let cache = work.join("cache");
    let module = cache.join("jslib.k6.io/k6-summary/0.1.0/index.js");
    std::fs::create_dir_all(module.parent().unwrap()).unwrap();
    std::fs::write(&module, TEXT_SUMMARY).unwrap();
    let dir = work.join("result");
    let out = pado_cmd(["run"])
        .current_dir(&work)
        .env("PADO_MODULE_CACHE", &cache)
        .arg(script("summary.js"))
        .args(["-e", &base(&srv), "--quiet"])
        .arg("--out")
        .arg(&dir)
        .output()
        .expect("running pado");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // stdout is exactly what handleSummary returned, in place of pado's summary.
    assert_eq!(stdout, " requests: 3\n iterations: 3\n", "{stderr}");
    // Files relative to the working directory, as k6 writes them.
    let data: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(work.join("summary.json")).unwrap()).unwrap();
    assert_eq!(data["metrics"]["http_reqs"]["values"]["count"], 3.0);
    assert_eq!(
        std::fs::read_to_string(work.join("nested/파도.txt")).unwrap(),
        "requests 3"
    );
    assert_eq!(std::fs::read(work.join("bytes.bin")).unwrap(), b"pado");
    // And kept in the result directory.
    let kept = dir.join("handle_summary");
    assert_eq!(
        std::fs::read_to_string(kept.join("stdout")).unwrap(),
        " requests: 3\n iterations: 3\n"
    );
    assert_eq!(
        std::fs::read_to_string(kept.join("nested_파도.txt")).unwrap(),
        "requests 3"
    );
    assert_eq!(std::fs::read(kept.join("bytes.bin")).unwrap(), b"pado");
    assert_eq!(srv.records().len(), 3);
}

#[test]
fn an_exception_in_handle_summary_is_said_and_pados_summary_printed_instead() {
    let srv = TestServer::start();
    let r = run(
        "k6-summary-throws",
        &[&script("summary_throws.js"), "-e", &base(&srv)],
    );
    // k6 v1.8.1: the error logged, its own summary printed, exit 0.
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    assert!(r.stderr().contains("summary broke"), "{}", r.stderr());
    assert!(
        r.stderr().contains("summary_throws.js:9:"),
        "{}",
        r.stderr()
    );
    assert!(r.stdout().contains("results:"), "{}", r.stdout());
    assert_eq!(num(&r.summary(), "requests"), 1.0);
}

#[test]
fn once_runs_setup_one_iteration_and_teardown_and_http_debug_shows_them_redacted() {
    let srv = TestServer::start();
    let out = pado_cmd(["run"])
        .arg(script("once_debug.js"))
        .args(["-e", &base(&srv), "--once", "--http-debug"])
        .output()
        .expect("running pado");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(
        paths(&srv),
        BTreeMap::from([
            ("/bye".to_string(), 1),
            ("/item".to_string(), 1),
            ("/login".to_string(), 1),
        ])
    );
    // setup()'s value reached the iteration.
    let item = srv
        .records()
        .into_iter()
        .find(|r| r.path == "/item")
        .unwrap();
    assert_eq!(item.query, vec![("t".to_string(), "tok-1".to_string())]);
    assert!(stdout.contains("3 requests, 0 failed"), "{stdout}");
    let both = format!("{stdout}\n{stderr}");
    assert!(both.contains("POST ") && both.contains("/login"), "{both}");
    assert!(both.contains("item"), "the request's name tag: {both}");
    assert!(both.contains("Authorization: ***"), "{both}");
    assert!(
        !both.contains("s3cr3t-token"),
        "the credential never shows: {both}"
    );
    assert!(
        both.contains("{\"user\":\"파도\"}"),
        "Hangul intact: {both}"
    );
}
