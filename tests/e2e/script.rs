//! k6 scripts run unchanged (`pado run script.js`): the scripts under
//! `testdata/k6/` against the test kit's server, which counts what it received.
//! Request counts are the server's; check counts, thresholds and exceptions are
//! what each script's logic implies.

use std::path::PathBuf;

use pado_testkit::TestServer;

use crate::harness::{num, run, run_timed, tmp, within};

/// A script of `testdata/k6/`, run as it is written.
fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/e2e/testdata/k6")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn base(srv: &TestServer) -> String {
    format!("BASE={}", srv.base_url())
}

#[test]
fn a_k6_script_runs_unchanged_setup_data_reaches_vus_and_checks_count_as_k6() {
    let srv = TestServer::start();
    let r = run("k6-login", &[&script("login_items.js"), "-e", &base(&srv)]);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let recs = srv.records();
    let logins: Vec<_> = recs.iter().filter(|x| x.path == "/json/login").collect();
    let items: Vec<_> = recs.iter().filter(|x| x.path == "/json/item").collect();
    // setup() once; `iterations: 10` over 2 VUs: 10 iterations in all.
    assert_eq!(logins.len(), 1);
    assert_eq!(items.len(), 10);
    let body: serde_json::Value = serde_json::from_slice(&logins[0].body).unwrap();
    assert_eq!(body["user"], "파도", "Hangul intact in a script's body");
    // setup()'s token reached every VU.
    for it in &items {
        let auth = it
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
            .map(|(_, v)| v.as_str());
        assert_eq!(auth, Some("Bearer tok-1"), "{:?}", it.headers);
    }
    let s = r.summary();
    // pado counted what the server received: 11 requests.
    assert_eq!(num(&s, "requests"), 11.0);
    assert_eq!(num(&s, "iterations"), 10.0);
    let checks = &s["checks"];
    assert_eq!(num(&checks["::items::is 201"], "passes"), 10.0);
    assert_eq!(num(&checks["::items::is 201"], "fails"), 0.0);
    assert_eq!(num(&checks["::items::has an id"], "passes"), 10.0);
    assert_eq!(num(&checks["::items::is 200 (never)"], "passes"), 0.0);
    assert_eq!(num(&checks["::items::is 200 (never)"], "fails"), 10.0);
    // The threshold on checks: 20 of 30 held.
    let t = &s["thresholds"][0];
    assert_eq!(t["metric"], "checks");
    assert_eq!(t["ok"], true);
    assert!((num(t, "value") - 20.0 / 30.0).abs() < 1e-9, "{t}");
    // The request's `name` tag is its series, tagged with k6's group path.
    assert_eq!(num(&s["steps"]["item"], "requests"), 10.0);
    assert_eq!(num(&s["tagged"]["item{group=::items}"], "requests"), 10.0);
}

#[test]
fn iterations_on_the_command_line_are_shared_as_k6_shares_them() {
    // `k6 run --vus 5 --iterations 10` runs 10 iterations in all, shared by the
    // 5 VUs (a scenario file's `--iterations` is per VU: that would be 50).
    let srv = TestServer::start();
    let r = run(
        "k6-shared-iterations",
        &[
            &script("one_request.js"),
            "--vus",
            "5",
            "--iterations",
            "10",
            "-e",
            &base(&srv),
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert_eq!(srv.records().len(), 10, "{}", r.stdout());
    assert_eq!(num(&r.summary(), "requests"), 10.0);
}

#[test]
fn a_threshold_the_checks_cannot_meet_fails_the_run() {
    let srv = TestServer::start();
    let r = run(
        "k6-threshold",
        &[&script("thresholds_fail.js"), "-e", &base(&srv)],
    );
    assert_ne!(r.code(), 0, "{}", r.stdout());
    assert_ne!(
        r.code(),
        2,
        "a failed threshold, not a refused script: {}",
        r.stderr()
    );
    assert_eq!(srv.records().len(), 4);
    let s = r.summary();
    let t = &s["thresholds"][0];
    assert_eq!(t["ok"], false);
    assert!((num(t, "value") - 8.0 / 12.0).abs() < 1e-9, "{t}");
}

#[test]
fn an_exception_in_default_ends_its_iteration_is_sampled_and_the_run_goes_on() {
    let srv = TestServer::start();
    let r = run(
        "k6-exception",
        &[&script("exception.js"), "-e", &base(&srv)],
    );
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    // Every iteration sent its request before two of them threw.
    assert_eq!(srv.records().len(), 4);
    let s = r.summary();
    assert_eq!(num(&s, "requests"), 4.0);
    assert_eq!(num(&s, "failed"), 0.0);
    // k6 counts an iteration an exception ended among `iterations` (k6 v1.8.1
    // gives 4 for this script against the same server).
    assert_eq!(num(&s, "iterations"), 4.0);
    assert_eq!(num(&s, "iterations_interrupted"), 0.0);
    let failures = std::fs::read_to_string(r.dir.join("failures.jsonl")).unwrap();
    let line = failures
        .lines()
        .find(|l| l.contains("script_error"))
        .unwrap_or_else(|| panic!("{failures}"));
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    let reason = v["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("Error: planted failure 파도"),
        "{reason}"
    );
    assert!(
        reason.contains("exception.js:10:"),
        "the stack names the line: {reason}"
    );
}

#[test]
fn a_syntax_error_and_an_import_of_k6_browser_fail_at_start_naming_the_line() {
    let srv = TestServer::start();
    let r = run("k6-syntax", &[&script("syntax.js"), "-e", &base(&srv)]);
    // k6's ScriptException code (k6 v1.8.1 exits 107 on this file and on an
    // import it cannot resolve), so a CI job written for k6 reads the same.
    assert_eq!(r.code(), 107, "{}", r.stderr());
    let e = r.stderr();
    assert!(e.contains("syntax.js:4:"), "{e}");
    assert!(e.contains("SyntaxError"), "{e}");
    assert!(
        e.contains("http.get(`${__ENV.BASE}/` +);"),
        "the line as written: {e}"
    );
    let r = run("k6-browser", &[&script("browser.js"), "-e", &base(&srv)]);
    assert_eq!(r.code(), 107, "{}", r.stderr());
    let e = r.stderr();
    assert!(
        e.contains("browser.js:2: cannot import `k6/browser`"),
        "{e}"
    );
    let r = run_with_cache(&script("remote.js"), &srv);
    assert_eq!(r.code(), 107, "{}", r.stderr());
    let e = r.stderr();
    assert!(
        e.contains("https://jslib.k6.io/k6-utils/1.4.0/index.js") && e.contains("module cache"),
        "{e}"
    );
    assert!(
        srv.records().is_empty(),
        "nothing is sent by a refused script"
    );
}

#[test]
fn a_typescript_script_names_its_own_lines_in_a_syntax_error_and_an_exception() {
    let srv = TestServer::start();
    // k6 v1.8.1 exits 107 on this file too ("syntax.ts: Line 7:14 Unexpected
    // \"=\"", its column counted from 0).
    let r = run("k6-ts-syntax", &[&script("syntax.ts"), "-e", &base(&srv)]);
    assert_eq!(r.code(), 107, "{}", r.stderr());
    let e = r.stderr();
    assert!(e.contains("syntax.ts:7:15"), "{e}");
    assert!(e.contains("SyntaxError"), "{e}");
    assert!(
        e.contains("const target: = `${__ENV.BASE}/`;"),
        "the line as written: {e}"
    );
    assert!(srv.records().is_empty(), "nothing is sent");
    // k6 v1.8.1 against the same server: 4 requests, 4 iterations, the
    // exception at `exception.ts:16`.
    let r = run(
        "k6-ts-exception",
        &[&script("exception.ts"), "-e", &base(&srv)],
    );
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    assert_eq!(srv.records().len(), 4);
    let s = r.summary();
    assert_eq!(num(&s, "requests"), 4.0);
    assert_eq!(num(&s, "iterations"), 4.0);
    let failures = std::fs::read_to_string(r.dir.join("failures.jsonl")).unwrap();
    let errors: Vec<&str> = failures
        .lines()
        .filter(|l| l.contains("script_error"))
        .collect();
    assert!(!errors.is_empty(), "{failures}");
    let v: serde_json::Value = serde_json::from_str(errors[0]).unwrap();
    let reason = v["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("Error: planted failure 파도") && reason.contains("exception.ts:16:"),
        "{reason}"
    );
}

/// `remote.js` with an empty module cache of its own.
fn run_with_cache(file: &str, srv: &TestServer) -> crate::harness::Run {
    let cache = tmp("k6-cache");
    let c = cache.to_string_lossy().into_owned();
    crate::harness::run_env(
        "k6-remote",
        &[file, "-e", &base(srv)],
        &[("PADO_MODULE_CACHE", c.as_str())],
    )
}

#[test]
fn two_hundred_scripted_vus_waiting_on_slow_answers_do_not_block_the_workers() {
    let srv = TestServer::start();
    let (file, env) = (script("many_vus.js"), base(&srv));
    // Counts are judged every time; the rate (a matter of time) through pado's
    // own self-check: a starved machine is tried again, then skipped loudly.
    run_timed("k6-many", &[&file, "-e", &env], |r| {
        assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
        let served = srv.records().len() as f64;
        srv.reset_stats();
        let s = r.summary();
        // pado counted exactly what the server answered.
        assert_eq!(num(&s, "requests"), served);
        assert_eq!(num(&s, "vus_max"), 200.0);
        // 200 VUs x 3 s / 0.2 s = 3000 (a few more finish in the graceful stop);
        // a worker thread blocked by each waiting VU would give a few dozen.
        within("requests the server answered", served, 2400.0..3400.0)
    });
}
