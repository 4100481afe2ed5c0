use std::path::PathBuf;
use std::sync::atomic::AtomicU8;
use std::time::{Duration, Instant, SystemTime};

use pado_engine::executor::segment::Segment;
use pado_engine::{RUNNING, STOPPING};
use pado_testkit::TestServer;

use super::*;

const FLOW: &str = "scenarios:\n  s:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n    flow:\n      - request: \"/u/{{ token }}\"\n";

/// A scenario file in its own temp directory, prepared as written.
fn prepared(text: &str) -> (tempfile::TempDir, Prepared) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("분할.yaml");
    std::fs::write(&path, text).unwrap();
    let prep = LoadSpec::file(path, None).load().unwrap();
    (dir, prep)
}

fn with_setup(target: &str, login: &str) -> String {
    format!("target: {target}\nsetup:\n  - name: login\n    request: {login}\n    extract: {{ token: $.token }}\n{FLOW}")
}

#[test]
fn setup_variables_are_placed_in_the_plan_s_order_and_a_stranger_is_refused() {
    let (_d, prep) = prepared(&with_setup("http://127.0.0.1:9", "POST /json/login"));
    let plan = prep.compile().unwrap();
    let i = plan.vars.iter().position(|v| v == "token").unwrap();
    let vars = seed_vars(
        None,
        &[("token".into(), "파도-1".as_bytes().to_vec())],
        &plan,
    )
    .unwrap();
    assert_eq!(vars.len(), plan.vars.len());
    assert_eq!(vars[i].as_deref(), Some("파도-1".as_bytes()));
    let file = PathBuf::from("vars.json");
    let e = seed_vars(Some(&file), &[("tokne".into(), b"x".to_vec())], &plan)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--setup-vars vars.json: variable `tokne` is not one this scenario uses (")
            && e.contains("token")
            && e.ends_with("was the file made for another test?"),
        "{e}"
    );
}

#[test]
fn setup_vars_file_is_checked() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("v.json");
    std::fs::write(&p, r#"{"token": "tok-1", "name": "파도"}"#).unwrap();
    let v = read_setup_vars(&p).unwrap();
    assert!(v.contains(&("name".to_string(), "파도".as_bytes().to_vec())));
    std::fs::write(&p, r#"{"token": 5}"#).unwrap();
    let e = read_setup_vars(&p).unwrap_err();
    assert!(matches!(e, SessionError::Invalid(_)));
    assert!(e.to_string().contains("`token`"), "{e}");
    std::fs::write(&p, "[1]").unwrap();
    assert!(read_setup_vars(&p)
        .unwrap_err()
        .to_string()
        .contains("--setup-vars"));
}

#[test]
fn a_later_segment_of_a_test_with_a_setup_needs_its_variables_and_no_other() {
    let (_d, prep) = prepared(&with_setup("http://127.0.0.1:9", "POST /json/login"));
    let second = Segment::new(1, 2, None).unwrap();
    let first = Segment::new(0, 2, None).unwrap();
    let e = setup_vars_missing(&second, &prep, false).expect("refused");
    assert!(e.to_string().starts_with("--segment 1/2: "), "{e}");
    assert!(e.to_string().contains("pado setup"), "{e}");
    assert!(setup_vars_missing(&second, &prep, true).is_none());
    assert!(setup_vars_missing(&first, &prep, false).is_none());
    let (_d, plain) =
        prepared(&format!("target: http://127.0.0.1:9\n{FLOW}").replace("{{ token }}", "1"));
    assert!(setup_vars_missing(&second, &plain, false).is_none());
}

#[test]
fn the_setup_alone_hands_over_what_the_server_answered() {
    let server = TestServer::start();
    let (_d, prep) = prepared(&with_setup(&server.base_url(), "POST /json/login"));
    let out = run_setup(&prep).unwrap();
    assert_eq!(server.stats().requests, 1, "the setup only, not the load");
    assert_eq!((out.requests, out.failed, out.vars), (1, 0, 1));
    let v: serde_json::Value = serde_json::from_str(&out.json).unwrap();
    assert!(v["token"].as_str().unwrap().starts_with("tok-"), "{v}");
    assert!(out.incomplete().is_none());
    // A setup whose request fails did not complete, and says so.
    let (_d, prep) = prepared(&with_setup(&server.base_url(), "POST /status/500"));
    let out = run_setup(&prep).unwrap();
    let e = out.incomplete().expect("incomplete").to_string();
    assert!(
        e.starts_with("setup did not complete: 1 failed request"),
        "{e}"
    );
    assert!(e.contains("not set: token"), "{e}");
    // No setup: nothing to hand over.
    let (_d, plain) =
        prepared(&format!("target: {}\n{FLOW}", server.base_url()).replace("{{ token }}", "1"));
    let e = run_setup(&plain).unwrap_err().to_string();
    assert!(e.contains("has no global `setup:`"), "{e}");
}

#[test]
fn a_stop_ends_the_wait_for_the_start_and_a_past_start_is_not_waited_for() {
    let stop = AtomicU8::new(STOPPING);
    let at = SystemTime::now() + Duration::from_secs(30);
    let t = Instant::now();
    let e = wait_for_start(at, &stop, true).unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(5));
    assert!(matches!(e, SessionError::Interrupted(_)), "{e:?}");
    assert!(e.to_string().contains("nothing was sent"), "{e}");
    let running = AtomicU8::new(RUNNING);
    let t = Instant::now();
    let second0 =
        wait_for_start(SystemTime::now() - Duration::from_secs(3), &running, true).unwrap();
    assert!(t.elapsed() < Duration::from_millis(500));
    assert!(second0 <= Instant::now());
    // A start 1.3 s ahead is waited for until the lead before it.
    let t = Instant::now();
    let second0 = wait_for_start(
        SystemTime::now() + Duration::from_millis(1300),
        &running,
        true,
    )
    .unwrap();
    let waited = t.elapsed();
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_millis(1200),
        "{waited:?}"
    );
    assert!(second0 > Instant::now());
}

/// Weights alone are refused; with `--segment` or `--generators` they are taken;
/// a bad segment or weight names its flag.
#[test]
fn weights_need_a_segment_or_generators() {
    use super::{run_segment, segment};
    let e = run_segment(None, Some("1,2"), false).unwrap_err();
    assert!(
        e.to_string()
            .contains("--segment-weights: give it with --segment"),
        "{e}"
    );
    assert!(run_segment(None, Some("1,2"), true).unwrap().is_none());
    assert!(run_segment(None, None, false).unwrap().is_none());
    let s = run_segment(Some("1/2"), Some("1,3"), false)
        .unwrap()
        .unwrap();
    assert_eq!(s, segment("1/2", Some("1,3")).unwrap());
    assert_ne!(s, segment("1/2", None).unwrap());
    assert!(run_segment(Some("2/2"), None, false)
        .unwrap_err()
        .to_string()
        .starts_with("--segment:"));
    assert!(run_segment(Some("0/2"), Some("1,x"), false)
        .unwrap_err()
        .to_string()
        .starts_with("--segment-weights:"));
}
