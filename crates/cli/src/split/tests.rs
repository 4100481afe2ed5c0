use std::path::Path;
use std::time::{Duration, SystemTime};

use clap::Parser;

use super::*;
use crate::args::{Cli, Command};
use crate::config::RunConfig;

const SCENARIO: &str = "target: http://127.0.0.1:9\ndata:\n  users: { file: users.csv, pick: unique }\nscenarios:\n  s:\n    executor: constant-vus\n    vus: 4\n    duration: 2s\n    flow:\n      - request: \"/u/{{ users.user }}\"\n";

fn write_test(dir: &Path, scenario: &str, users: &str) {
    std::fs::write(dir.join("t.yaml"), scenario).unwrap();
    std::fs::write(dir.join("users.csv"), users).unwrap();
}

/// The plan id `pado run DIR/t.yaml ARGS` records.
fn id(dir: &Path, args: &[&str]) -> String {
    let file = dir.join("t.yaml");
    let mut argv = vec!["pado", "run", file.to_str().unwrap()];
    argv.extend_from_slice(args);
    let Command::Run(a) = Cli::try_parse_from(argv).unwrap().command else {
        panic!("not run")
    };
    let cfg = RunConfig::from_run_args(&a).unwrap_or_else(|e| panic!("{}", e.message));
    cfg.split.plan_id.expect("a plan id with --segment")
}

#[test]
fn plan_id_is_the_whole_test_and_nothing_else() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    write_test(a.path(), SCENARIO, "user\nu1\nu2\n");
    write_test(b.path(), SCENARIO, "user\nu1\nu2\n");
    let base = id(a.path(), &["--segment", "0/3"]);
    assert_eq!(base.len(), 64);
    assert!(base.bytes().all(|c| c.is_ascii_hexdigit()));
    // Not the segment, the start, the output or the machine's paths.
    assert_eq!(
        id(
            a.path(),
            &[
                "--segment",
                "2/3",
                "--segment-weights",
                "1,1,2",
                "--start-at",
                "+5s",
                "--out",
                "/tmp/elsewhere",
                "--quiet",
                "--export",
                "csv",
                "--name",
                "gen-2",
            ]
        ),
        base
    );
    assert_eq!(
        id(b.path(), &["--segment", "1/3"]),
        base,
        "another directory"
    );
    // The load and the requests: flags, the file's bytes, the data's bytes.
    for args in [
        &["--vus", "5"][..],
        &["--duration", "3s"],
        &["--target", "http://127.0.0.1:10"],
        &["-H", "X-A: 1"],
        &["--threshold", "p(95) < 200"],
        &["--timeout", "5s"],
    ] {
        let mut v = vec!["--segment", "0/3"];
        v.extend_from_slice(args);
        assert_ne!(id(a.path(), &v), base, "{args:?}");
    }
    write_test(
        b.path(),
        &SCENARIO.replace("vus: 4", "vus: 5"),
        "user\nu1\nu2\n",
    );
    assert_ne!(id(b.path(), &["--segment", "0/3"]), base, "file bytes");
    write_test(b.path(), SCENARIO, "user\nu1\nu3\n");
    assert_ne!(id(b.path(), &["--segment", "0/3"]), base, "data bytes");
}

#[test]
fn start_at_names_its_flag() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    assert_eq!(
        start_at("+30s", now).unwrap(),
        now + Duration::from_secs(30)
    );
    let e = start_at("noon", now).unwrap_err();
    assert!(
        e.message.starts_with("--start-at `noon`: not an RFC 3339"),
        "{}",
        e.message
    );
    assert_eq!(e.code, exit::INVALID);
}
