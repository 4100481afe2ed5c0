//! Each fuzz target for a bounded time: `PADO_FUZZ_SECONDS` each (default 10), with a
//! fresh seed printed on the way, or `PADO_FUZZ_SEED` to replay one. A failure shows
//! the input and where it was saved.

use pado_fuzz::driver::{fuzz, Config};

fn fuzz_target(name: &str) {
    let target = pado_fuzz::by_name(name).expect("target exists");
    let cfg = Config::from_env(10.0);
    let stats = fuzz(target, &cfg);
    println!("{stats}");
    assert!(stats.inputs > 0, "{name}: no input ran");
    if let Some(f) = &stats.failure {
        panic!("{f}");
    }
}

#[test]
fn scenario() {
    fuzz_target("scenario");
}

#[test]
fn http_response() {
    fuzz_target("http_response");
}

#[test]
fn exposition() {
    fuzz_target("exposition");
}

#[test]
fn result_timeline() {
    fuzz_target("result_timeline");
}

#[test]
fn result_run() {
    fuzz_target("result_run");
}

#[test]
fn result_observe() {
    fuzz_target("result_observe");
}

#[test]
fn h1server_request() {
    fuzz_target("h1server_request");
}
