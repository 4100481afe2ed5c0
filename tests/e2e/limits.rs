//! Nothing lost, nothing runaway: what pado cannot see in full it says, what the
//! user expected is not a failure, and what comes from outside is bounded.

use pado_testkit::TestServer;

use crate::harness::{fixture, num, run, tmp, write_file, write_fixture};

/// A check on text past 4 MiB: failed with a warning naming the step at the default
/// limit, passed once `max_body` is raised (file or flag).
#[test]
fn a_body_longer_than_max_body_is_named_and_max_body_can_be_raised() {
    let srv = TestServer::start();
    let d = tmp("max-body");
    let scenario = |defaults: &str| {
        fixture(
            "limits_big_body.yaml",
            &[
                ("target", srv.base_url()),
                ("defaults", defaults.to_string()),
            ],
        )
    };
    let f = write_file(&d, "default.yaml", &scenario(""));
    let r = run("max-body-default", &[f.to_str().unwrap()]);
    // Both checks failed, so both requests did: the verdict fails the run.
    assert_eq!(r.code(), 99, "{}", r.stderr());
    let s = r.summary();
    assert_eq!(num(&s, "errors.check_failed"), 2.0, "{s}");
    let w = s["warnings"].to_string();
    assert!(
        w.contains("2 responses of step `big` were longer than max_body (4 MiB)")
            && w.contains("saw only the first 4 MiB"),
        "{w}"
    );

    let f = write_file(
        &d,
        "raised.yaml",
        &scenario("defaults: { max_body: 8MiB }\n"),
    );
    let r = run("max-body-raised", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    assert_eq!(num(&s, "failed"), 0.0, "{s}");
    assert!(!s["warnings"].to_string().contains("max_body"), "{s}");

    let f = write_file(&d, "flag.yaml", &scenario(""));
    let r = run(
        "max-body-flag",
        &[f.to_str().unwrap(), "--max-body", "5000000"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert_eq!(num(&r.summary(), "failed"), 0.0);
    // Exactly the body's size is enough: the limit is not off by one.
    assert_eq!(srv.stats().requests, 6);

    let r = run("max-body-bad", &[f.to_str().unwrap(), "--max-body", "lots"]);
    assert_eq!(r.code(), 2, "{}", r.stderr());
    assert!(r.stderr().contains("--max-body"), "{}", r.stderr());
}

/// A status the step's check expects is not an `http_<code>` failure.
#[test]
fn an_expected_error_status_is_not_in_the_error_breakdown() {
    let srv = TestServer::start();
    let d = tmp("expected-500");
    let f = write_fixture(
        &d,
        "limits_an_expected_error_status_is_not_in_the_error_breakdown.yaml",
        "s.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("expected-500", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    assert_eq!(num(&s, "status.500"), 5.0, "{s}");
    assert_eq!(num(&s, "failed"), 5.0, "{s}");
    assert!(s["errors"].get("http_500").is_none(), "{s}");
    assert!(
        s["steps"]["boom"]["errors"].get("http_500").is_none(),
        "{s}"
    );
    assert_eq!(num(&s, "errors.http_503"), 5.0, "{s}");
}

/// A fragment is never sent; `user:pass@` becomes `Authorization: Basic` and the
/// password appears nowhere in the result directory or the output.
#[test]
fn fragments_stay_home_and_userinfo_becomes_basic_auth() {
    let srv = TestServer::start();
    let addr = srv.addr();
    let d = tmp("userinfo");
    let f = write_fixture(
        &d,
        "limits_fragments_stay_home_and_userinfo_becomes_basic_auth.yaml",
        "s.yaml",
        &[("addr", addr.to_string())],
    );
    let r = run("userinfo", &[f.to_str().unwrap(), "--export", "csv"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let recs = srv.records();
    assert_eq!(recs.len(), 4);
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    for rec in &recs {
        assert!(!rec.target.contains('#'), "{}", rec.target);
        let auth: Vec<&str> = rec
            .headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("authorization"))
            .map(|(_, v)| v.as_str())
            .collect();
        let want = if rec.path == "/a" {
            assert_eq!(rec.target, "/a?x=1");
            format!("Basic {}", b64("al ice:s3cr:t"))
        } else {
            assert_eq!(rec.target, "/b/1");
            format!("Basic {}", b64("bob:hunter2"))
        };
        assert_eq!(auth, vec![want.as_str()], "{}", rec.target);
    }
    let mut seen = r.stdout() + &r.stderr();
    for e in std::fs::read_dir(&r.dir).unwrap() {
        seen.push_str(&String::from_utf8_lossy(
            &std::fs::read(e.unwrap().path()).unwrap(),
        ));
    }
    for secret in ["s3cr", "hunter2", "al%20ice", "bob:"] {
        assert!(!seen.contains(secret), "`{secret}` written somewhere");
    }
    assert!(
        r.summary()["steps"].get("GET /a").is_some(),
        "{}",
        r.summary()
    );

    // Quick mode too.
    let url = format!("http://carol:pw9@{addr}/q#x");
    let r = run("userinfo-quick", &["--url", &url, "--iterations", "1"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let last = srv.records().pop().unwrap();
    assert_eq!(last.target, "/q");
    assert!(
        last.headers
            .iter()
            .any(|(k, v)| k == "Authorization" && *v == format!("Basic {}", b64("carol:pw9"))),
        "{:?}",
        last.headers
    );
    assert!(!std::fs::read_to_string(r.dir.join("summary.json"))
        .unwrap()
        .contains("pw9"));
}

/// The timing judge excuses a missed tolerance only when pado says the machine
/// starved it, never on a quiet run.
#[test]
fn the_timing_judge_reads_the_generator_self_check() {
    let d = tmp("judge");
    let fake = |g: &str| {
        let dir = d.join(format!("r{}", g.len()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("summary.json"), format!("{{\"generator\":{g}}}")).unwrap();
        crate::harness::Run {
            out: std::process::Command::new("true").output().unwrap(),
            dir,
            _tmp: None,
        }
    };
    let quiet = fake(
        r#"{"saturated":false,"run_queue_wait_peak":0.01,"wait_seconds":0,"lag_seconds":0,"lag_max_ms":3.0}"#,
    );
    assert_eq!(crate::harness::machine_too_busy(&quiet), None);
    let starved = fake(
        r#"{"saturated":false,"run_queue_wait_peak":0.41,"wait_seconds":2,"lag_seconds":1,"lag_max_ms":180.0,"x":0}"#,
    );
    let why = crate::harness::machine_too_busy(&starved).expect("starved");
    assert!(
        why.contains("run-queue wait peak 41%") && why.contains("lag max 180 ms"),
        "{why}"
    );
    let saturated = fake(r#"{"saturated":true,"lag_max_ms":3.0,"padding":"........."}"#);
    assert!(crate::harness::machine_too_busy(&saturated).is_some());
}
