//! Each fuzz target for a bounded time: `PADO_FUZZ_SECONDS` each (default 10). The
//! seed is fixed unless `PADO_FUZZ_SEED` gives one (`PADO_FUZZ_SEED=random` for a fresh
//! one), so that a test run passes or fails the same way on every machine and a
//! failure in CI replays at once; exploring new inputs is the job of the `pado-fuzz`
//! binary's longer runs. A failure shows the input and where it was saved.

use pado_fuzz::driver::{fuzz, Config};

/// The sequence `cargo test` runs when no seed is given.
const CI_SEED: u64 = 0x7061_646f_2d66_757a;

fn fuzz_target(name: &str) {
    let target = pado_fuzz::by_name(name).expect("target exists");
    let mut cfg = Config::from_env(10.0);
    // `PADO_FUZZ_SEED=random` (anything not a number) makes `from_env` draw one.
    if std::env::var_os("PADO_FUZZ_SEED").is_none() {
        cfg.seed = CI_SEED;
    }
    let stats = fuzz(target, &cfg);
    println!("{stats}");
    assert!(stats.inputs > 0, "{name}: no input ran");
    if let Some(f) = &stats.failure {
        panic!("{f}");
    }
}

#[cfg(feature = "engine")]
#[test]
fn scenario() {
    fuzz_target("scenario");
}

#[cfg(feature = "engine")]
#[test]
fn http_response() {
    fuzz_target("http_response");
}

#[cfg(feature = "observe")]
#[test]
fn exposition() {
    fuzz_target("exposition");
}

#[cfg(feature = "report")]
#[test]
fn result_timeline() {
    fuzz_target("result_timeline");
}

#[cfg(feature = "report")]
#[test]
fn result_run() {
    fuzz_target("result_run");
}

#[cfg(feature = "report")]
#[test]
fn result_observe() {
    fuzz_target("result_observe");
}

#[cfg(feature = "report")]
#[test]
fn result_events() {
    fuzz_target("result_events");
}

#[test]
fn h1server_request() {
    fuzz_target("h1server_request");
}

#[cfg(feature = "fleet")]
#[test]
fn merge() {
    fuzz_target("merge");
}

#[cfg(feature = "fleet")]
#[test]
fn live() {
    fuzz_target("live");
}

#[cfg(feature = "fleet")]
#[test]
fn bundle() {
    fuzz_target("bundle");
}

#[test]
fn h2_response() {
    fuzz_target("h2_response");
}

#[test]
fn grpc_response() {
    fuzz_target("grpc_response");
}

#[cfg(feature = "engine")]
#[test]
fn websocket() {
    fuzz_target("websocket");
}
