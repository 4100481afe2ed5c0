//! Flag combinations through stage two: what each gives, and the error each bad
//! one gets.

use clap::Parser;

use super::*;
use crate::args::{Cli, Command};

const URL: &str = "http://127.0.0.1:1/";

fn cli(args: &[&str]) -> Command {
    Cli::try_parse_from(std::iter::once("pado").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
        .command
}

fn run_args(args: &[&str]) -> RunArgs {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    match cli(&all) {
        Command::Run(a) => *a,
        other => panic!("{other:?}"),
    }
}

fn spec(args: &[&str]) -> Result<LoadSpec, Failure> {
    LoadSpec::from_run_args(&run_args(args))
}

fn error(args: &[&str]) -> String {
    match spec(args) {
        Ok(s) => panic!("{args:?} accepted: {s:?}"),
        Err(f) => {
            assert_eq!(f.code, crate::exit::INVALID, "{}", f.message);
            f.message
        }
    }
}

fn capacity(args: &[&str]) -> Result<CapacityConfig, Failure> {
    let mut all = vec!["find-capacity"];
    all.extend_from_slice(args);
    match cli(&all) {
        Command::FindCapacity(f) => CapacityConfig::from_args(&f),
        other => panic!("{other:?}"),
    }
}

/// A scenario file in a fresh directory of its own, which is removed when the
/// returned guard drops (hold it for as long as the file is used).
fn scenario_file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix(&format!("pado-cli-config-{name}-"))
        .tempdir()
        .unwrap();
    let f = dir.path().join("t.yaml");
    std::fs::write(&f, text).unwrap();
    (dir, f)
}

const FILE: &str = "target: http://127.0.0.1:9\nthresholds:\n  http_req_duration: [\"p(95) < 200\"]\nscenarios:\n  s: { executor: constant-vus, vus: 2, duration: 4s, flow: [ { request: / } ] }\n";

#[test]
fn quick_mode_flags_build_the_request_and_its_settings() {
    let s = spec(&[
        "--url",
        URL,
        "-X",
        "POST",
        "--body",
        "{\"a\":1}",
        "-H",
        "X-Token: abc",
        "--header",
        "Accept:text/plain",
        "-k",
        "--no-follow-redirects",
        "--max-body",
        "16MiB",
    ])
    .unwrap();
    assert_eq!(
        s.source,
        Source::Url(QuickRequest {
            url: URL.into(),
            method: Some("POST".into()),
            body: Some("{\"a\":1}".into()),
            body_file: None,
        })
    );
    assert_eq!(
        s.overrides.headers,
        [
            ("X-Token".to_string(), "abc".to_string()),
            ("Accept".to_string(), "text/plain".to_string())
        ]
    );
    assert!(s.overrides.insecure);
    assert!(s.overrides.no_follow_redirects);
    assert_eq!(s.overrides.max_body, Some(ByteSize(16 * 1024 * 1024)));
    // Without the flags: certificates are checked, redirects followed.
    let plain = spec(&["--url", URL]).unwrap();
    assert!(!plain.overrides.insecure && !plain.overrides.no_follow_redirects);
    assert!(plain.overrides.headers.is_empty());
    assert_eq!(plain.overrides.shape, None);
}

#[test]
fn a_file_or_a_url_exactly_one_and_quick_flags_only_with_a_url() {
    assert!(error(&["t.yaml", "--url", URL]).contains("not both"));
    assert!(error(&[]).starts_with("nothing to run"));
    for quick in [
        &["-X", "POST"][..],
        &["--body", "x"],
        &["--body-file", "b.json"],
    ] {
        let mut args = vec!["t.yaml"];
        args.extend_from_slice(quick);
        assert!(error(&args).contains("are for quick mode"), "{quick:?}");
    }
    let s = spec(&["t.yaml", "-H", "A: b", "--target", URL]).unwrap();
    assert_eq!(s.source, Source::File("t.yaml".into()));
    assert_eq!(s.overrides.target.as_deref(), Some(URL));
    assert_eq!(s.overrides.headers, [("A".to_string(), "b".to_string())]);
}

#[test]
fn bad_headers_name_the_flag() {
    assert!(error(&["--url", URL, "-H", "no colon"]).starts_with("--header: header `no colon`"));
    assert!(error(&["--url", URL, "-H", ": v"]).contains("has no name"));
}

#[test]
fn durations_are_parsed_into_durations_and_bad_ones_name_their_flag() {
    let s = spec(&[
        "--url",
        URL,
        "--vus",
        "3",
        "--duration",
        "1m30s",
        "--timeout",
        "2500ms",
        "--think",
        "1s",
        "--observe-interval",
        "5s",
        "--fit-to",
        "20s",
    ])
    .unwrap();
    assert_eq!(
        s.overrides.shape,
        Some(LoadShape::Vus {
            vus: 3,
            duration: Dur(Duration::from_secs(90))
        })
    );
    assert_eq!(s.overrides.timeout, Some(Dur(Duration::from_millis(2500))));
    assert_eq!(s.overrides.think, Some(Dur(Duration::from_secs(1))));
    assert_eq!(
        s.overrides.observe_interval,
        Some(Dur(Duration::from_secs(5)))
    );
    assert_eq!(s.fit_to, Some(Duration::from_secs(20)));
    assert!(error(&["--url", URL, "--duration", "ten"]).starts_with("--duration: "));
    assert!(error(&["--url", URL, "--think", "1x"]).starts_with("--think: "));
    assert_eq!(
        error(&["--url", URL, "--timeout", "0s"]),
        "--timeout: must be more than 0"
    );
    assert_eq!(
        error(&["--url", URL, "--fit-to", "0s"]),
        "--fit-to: must be more than 0"
    );
    assert!(error(&["--url", URL, "--max-body", "0"]).starts_with("--max-body: "));
}

#[test]
fn load_shapes_from_the_flags() {
    let shape = |args: &[&str]| spec(args).unwrap().overrides.shape;
    // Quick mode: defaults fill the shape (10 VUs, 10 s).
    assert_eq!(
        shape(&["--url", URL, "--rate", "20"]),
        Some(LoadShape::Rate {
            rate: 20.0,
            duration: Dur::from_secs(10)
        })
    );
    assert_eq!(
        shape(&["--url", URL, "--vus", "4"]),
        Some(LoadShape::Vus {
            vus: 4,
            duration: Dur::from_secs(10)
        })
    );
    assert_eq!(
        shape(&["--url", URL, "--vus", "4", "--iterations", "3"]),
        Some(LoadShape::Iterations {
            vus: 4,
            iterations: 3
        })
    );
    assert!(matches!(
        shape(&["--url", URL, "--stages", "1s:5,1s:0"]),
        Some(LoadShape::Stages(s)) if s.len() == 2
    ));
    // On a file, one lone parameter adjusts the file's own model...
    assert_eq!(
        shape(&["t.yaml", "--vus", "5"]),
        Some(LoadShape::Adjust {
            vus: Some(5),
            duration: None,
            rate: None
        })
    );
    // ...and a complete shape replaces it.
    assert_eq!(
        shape(&["t.yaml", "--rate", "7", "--duration", "3s"]),
        Some(LoadShape::Rate {
            rate: 7.0,
            duration: Dur::from_secs(3)
        })
    );
    assert_eq!(shape(&["t.yaml"]), None);
}

#[test]
fn out_of_range_load_values_are_refused_with_their_flag() {
    assert_eq!(
        error(&["--url", URL, "--rate", "0"]),
        "--rate 0: must be more than 0"
    );
    assert_eq!(
        error(&["--url", URL, "--vus", "0"]),
        "--vus: must be at least 1"
    );
    assert_eq!(
        error(&["--url", URL, "--iterations", "0"]),
        "--iterations: must be at least 1"
    );
    assert!(error(&["--url", URL, "--stages", "30s"]).starts_with("--stages: "));
    // k6's one-stage-per-flag spelling means the same as --stages.
    assert_eq!(
        spec(&["--url", URL, "--stage", "30s:10", "-s", "1m:0"])
            .unwrap()
            .overrides
            .shape,
        spec(&["--url", URL, "--stages", "30s:10,1m:0"])
            .unwrap()
            .overrides
            .shape
    );
    assert!(error(&["--url", URL, "--step-ramp", "1:1:1s"]).starts_with("--step-ramp: "));
    assert!(error(&["--url", URL, "--threshold", "p(95) < 200ms"])
        .starts_with("--threshold `p(95) < 200ms`: invalid number"));
    let f = RunConfig::from_run_args(&run_args(&["--url", URL, "--workers", "0"]))
        .err()
        .unwrap();
    assert!(
        f.message.starts_with("--workers 0: give 1 to 1024"),
        "{}",
        f.message
    );
    let f = RunConfig::from_run_args(&run_args(&["--url", URL, "--window", "peak"]))
        .err()
        .unwrap();
    assert!(f.message.starts_with("--window `peak`"), "{}", f.message);
}

#[test]
fn vus_with_rate_and_other_conflicts_are_usage_errors_before_stage_two() {
    for args in [
        &["run", "--url", URL, "--vus", "5", "--rate", "10"][..],
        &["run", "--url", URL, "--body", "x", "--body-file", "b"],
        &[
            "find-capacity",
            "--url",
            URL,
            "--body",
            "x",
            "--body-file",
            "b",
        ],
    ] {
        let e = Cli::try_parse_from(std::iter::once("pado").chain(args.iter().copied()))
            .err()
            .unwrap_or_else(|| panic!("accepted {args:?}"));
        assert_eq!(
            e.kind(),
            clap::error::ErrorKind::ArgumentConflict,
            "{args:?}"
        );
    }
}

#[test]
fn a_file_is_loaded_once_with_its_thresholds_and_the_flags_ones() {
    let (_dir, f) = scenario_file("ok", FILE);
    let path = f.to_str().unwrap();
    let c = RunConfig::from_run_args(&run_args(&[
        path,
        "--threshold",
        "http_req_failed: rate < 0.01",
        "--out",
        "somewhere",
        "--no-html",
        "--export",
        "csv",
        "--window",
        "peak=1s..2s",
        "-q",
        "--http-debug=full",
    ]))
    .unwrap_or_else(|f| panic!("{}", f.message));
    let keys: Vec<String> = c
        .scenario
        .thresholds
        .iter()
        .map(|t| t.to_string())
        .collect();
    assert_eq!(
        keys,
        [
            "http_req_duration: p(95) < 200",
            "http_req_failed: rate < 0.01"
        ]
    );
    assert_eq!(c.scenario.file, path);
    assert_eq!(c.output.dir, Some(PathBuf::from("somewhere")));
    assert!(!c.output.html && c.output.quiet);
    assert_eq!(c.output.exports, ["csv"]);
    assert_eq!(c.output.windows[0].label, "peak");
    assert_eq!(c.http_debug, Some(DebugLevel::Full));
    // --fit-to scales the file's 4 s to 2 s.
    let c = RunConfig::from_run_args(&run_args(&[path, "--fit-to", "2s"])).unwrap();
    assert_eq!(
        pado_scenario::planned_length(&c.scenario.config),
        Some(Duration::from_secs(2))
    );
}

#[test]
fn a_bad_threshold_in_a_file_names_its_line() {
    let (_dir, f) = scenario_file("bad", &FILE.replace("< 200", "< 200ms"));
    let path = f.to_str().unwrap();
    let e = crate::exit::Failure::from(LoadSpec::file(f.clone(), None).load().err().unwrap());
    assert_eq!(e.code, crate::exit::INVALID);
    assert!(
        e.message.starts_with(&format!(
            "{path}:3:3: thresholds.http_req_duration: `p(95) < 200ms`"
        )),
        "{}",
        e.message
    );
}

#[test]
fn find_capacity_reads_the_quick_mode_flags_as_run_does() {
    let c = capacity(&[
        "--url",
        URL,
        "-X",
        "PUT",
        "--body",
        "hi",
        "-H",
        "X-Api-Key: k",
        "--insecure",
        "--timeout",
        "3s",
        "--max-vus",
        "40",
    ])
    .unwrap_or_else(|f| panic!("{}", f.message));
    let from_run = spec(&[
        "--url",
        URL,
        "-X",
        "PUT",
        "--body",
        "hi",
        "-H",
        "X-Api-Key: k",
        "--insecure",
        "--timeout",
        "3s",
        "--max-vus",
        "40",
    ])
    .unwrap();
    assert_eq!(c.load, from_run);
    assert!(c.load.overrides.insecure);
    // The default SLA, and the hold as a duration.
    let sla: Vec<String> = c.sla.iter().map(|t| t.to_string()).collect();
    assert_eq!(
        sla,
        [
            "http_req_duration: p(95) < 200",
            "http_req_failed: rate < 0.01"
        ]
    );
    assert_eq!(c.hold, Duration::from_secs(10));
}

#[test]
fn find_capacity_refuses_bad_search_settings_by_flag() {
    let e = |args: &[&str]| {
        let mut all = vec!["--url", URL];
        all.extend_from_slice(args);
        capacity(&all).err().map(|f| f.message).unwrap_or_default()
    };
    assert!(e(&["--factor", "1"]).starts_with("--factor: "));
    assert!(e(&["--start-rate", "0"]).starts_with("--start-rate: "));
    assert!(e(&["--max-rate=-1"]).starts_with("--max-rate: "));
    assert!(
        e(&["--start-rate", "100", "--max-rate", "10"]).starts_with("--start-rate/--max-rate: ")
    );
    assert_eq!(e(&["--hold", "500ms"]), "--hold: at least 1s");
    assert!(e(&["--sla", "p(95) << 1"]).starts_with("--sla `p(95) << 1`: "));
    assert!(e(&["-H", "nope"]).starts_with("--header: "));
    assert!(capacity(&["t.yaml", "-X", "POST"])
        .err()
        .unwrap()
        .message
        .contains("are for quick mode"));
}

#[test]
fn http_version_flags_set_the_protocol_and_bad_ones_name_the_flag() {
    use pado_scenario::HttpVersion;
    let s = spec(&["--url", URL, "--http2", "--max-streams", "8"]).unwrap();
    assert_eq!(s.overrides.http, Some(HttpVersion::Http2));
    assert_eq!(s.overrides.max_streams, Some(8));
    let auto = spec(&["--url", URL, "--http", "auto"]).unwrap();
    assert_eq!(auto.overrides.http, Some(HttpVersion::Auto));
    assert_eq!(spec(&["--url", URL]).unwrap().overrides.http, None);
    assert!(error(&["--url", URL, "--http", "3"]).contains("--http: `3`"));
    assert!(error(&["--url", URL, "--max-streams", "0"]).contains("--max-streams"));
}

/// What `pado plan --write-scenario` writes goes through `pado validate`'s checks
/// with no warning (it used to give both tests' steps one name, which validate
/// warns about), and still holds the planned VUs.
#[test]
fn the_plan_skeleton_validates_without_warnings() {
    use pado_analysis::planner::{plan, scenario_skeleton, PlanInput};
    let input = PlanInput {
        dau: 25_000.0,
        requests_per_user: 7.5,
        peak_factor: 4.0,
        scenario_time_s: 430.0,
        requests_per_scenario: Some(7.5),
        target_response_s: 0.5,
    };
    let p = plan(&input).unwrap();
    let (_dir, f) = scenario_file("plan", &scenario_skeleton(&input, &p, "http://127.0.0.1:9"));
    let prep = LoadSpec::file(f, None).load().unwrap();
    let compiled = prep.compile().unwrap();
    assert_eq!(compiled.warnings, Vec::<String>::new());
    assert_eq!(compiled.warnings(), Vec::<String>::new());
    assert_eq!(prep.config.scenarios.len(), 2);
}

/// A file whose events are placed by stage runs with `--vus --duration` (a smoke
/// run of the real file): the stage events are left out, each named, instead of the
/// run being refused (exit 2) for stages that no longer exist.
#[test]
fn stage_events_do_not_stop_a_vus_and_duration_override() {
    let (_dir, f) = scenario_file(
        "stage-events",
        "target: http://127.0.0.1:9\nscenarios:\n  main:\n    executor: ramping-vus\n    stages: [ { duration: 30s, target: 10 }, { duration: 1m, target: 10 } ]\n    flow: [ { request: / } ]\nevents:\n  - { name: spike, at_stage: 2, mark: spike }\n  - { name: half, at: 45s, mark: half }\n",
    );
    let path = f.to_str().unwrap();
    let c = RunConfig::from_run_args(&run_args(&[path, "--vus", "2", "--duration", "9s"]))
        .unwrap_or_else(|e| panic!("{}", e.message));
    let names: Vec<_> = c
        .scenario
        .config
        .events
        .iter()
        .map(|e| e.name.clone().unwrap_or_default())
        .collect();
    assert_eq!(names, ["half"]);
    assert_eq!(
        c.scenario.config.events[0].at,
        // 45 s of a 90 s test is 4.5 s of a 9 s one.
        Some(pado_scenario::Dur(Duration::from_millis(4500)))
    );
    assert_eq!(c.scenario.notes.len(), 2, "{:?}", c.scenario.notes);
    assert!(c.scenario.notes[0].contains("`spike` (at_stage: 2) is left out"));
    // As written, nothing is moved or left out.
    let c = RunConfig::from_run_args(&run_args(&[path])).unwrap();
    assert!(c.scenario.notes.is_empty(), "{:?}", c.scenario.notes);
    assert_eq!(c.scenario.config.events.len(), 2);
}

/// `--fit-to` fits the whole test the other flags planned: after `--duration`, so
/// `--soak --duration 8h --fit-to 2s` is planned for 2 s, not 8 h. Without
/// `--fit-to` the `--duration` stands; with `--fit-to` alone the file's own
/// length is fitted.
#[test]
fn fit_to_fits_the_length_duration_gave() {
    let (_dir, f) = scenario_file(
        "fit-after-duration",
        "scenarios:\n  s:\n    executor: constant-vus\n    vus: 1\n    duration: 4s\n    flow:\n      - request: GET http://127.0.0.1:1/\n",
    );
    let path = f.to_str().unwrap();
    let planned = |args: &[&str]| {
        let mut all = vec![path];
        all.extend_from_slice(args);
        let c = RunConfig::from_run_args(&run_args(&all)).unwrap();
        pado_scenario::planned_length(&c.scenario.config).unwrap()
    };
    let soak = ["--soak", "--duration", "8h"];
    assert_eq!(planned(&soak), Duration::from_secs(8 * 3600));
    assert_eq!(
        planned(&[&soak[..], &["--fit-to", "2s"]].concat()),
        Duration::from_secs(2)
    );
    // The order on the command line does not matter.
    assert_eq!(
        planned(&["--fit-to", "2s", "--duration", "8h"]),
        Duration::from_secs(2)
    );
    assert_eq!(planned(&["--fit-to", "8s"]), Duration::from_secs(8));
}
