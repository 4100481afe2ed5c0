//! How a k6 script's VUs start: each VU's context is made in turn on its
//! worker, and a VU made early sends its requests (and gets its answers) while
//! the later ones are still being made, instead of every VU of the worker
//! being made before the first request leaves (`testdata/k6/start/`). What a
//! script sees is k6's: every VU's init code runs once, `__VU` numbers 1..N.

use std::path::PathBuf;

use pado_testkit::TestServer;

use crate::harness::{num, run};

fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/e2e/testdata/k6/start")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// The number in query parameter `name` of `r`.
fn param(r: &pado_testkit::RequestRecord, name: &str) -> u64 {
    r.query
        .iter()
        .find(|(k, _)| k == name)
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {}", r.target))
}

#[test]
fn a_vu_made_first_gets_its_answers_while_the_others_are_still_being_made() {
    const VUS: u64 = 12;
    const INIT_MS: u64 = 60;
    let srv = TestServer::start();
    let s = script("made_in_turn.js");
    let env = [
        format!("BASE={}", srv.base_url()),
        format!("VUS={VUS}"),
        format!("INIT_MS={INIT_MS}"),
    ];
    let mut args = vec![s.as_str(), "--workers", "1"];
    for e in &env {
        args.extend(["-e", e.as_str()]);
    }
    let r = run("k6-start-in-turn", &args);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    assert_eq!(num(&r.summary(), "requests"), (2 * VUS) as f64);
    let recs = srv.records();
    let firsts: Vec<_> = recs.iter().filter(|r| r.path == "/first").collect();
    // Every VU's init code ran once, under its own number.
    let mut vus: Vec<u64> = firsts.iter().map(|r| param(r, "vu")).collect();
    vus.sort_unstable();
    assert_eq!(vus, (1..=VUS).collect::<Vec<_>>());
    let last_made = firsts.iter().map(|r| param(r, "made")).max().unwrap();
    let first_made = firsts.iter().map(|r| param(r, "made")).min().unwrap();
    // The inits ran one after another: the last ended (VUS - 1) inits after
    // the first.
    assert!(
        last_made - first_made >= (VUS - 1) * INIT_MS,
        "made from {first_made} to {last_made}"
    );
    // The first VU made had its first answer (its second request is built
    // after it) before the last VU's init code ran: it did not wait for every
    // VU to be made.
    let early = firsts
        .iter()
        .find(|r| param(r, "made") == first_made)
        .map(|r| param(r, "vu"))
        .unwrap();
    let second = recs
        .iter()
        .find(|r| r.path == "/second" && param(r, "vu") == early)
        .expect("the first VU's second request");
    let at = param(second, "at");
    assert!(
        at < last_made,
        "VU {early}'s answer came at {at}, the last VU was made at {last_made}"
    );
}
