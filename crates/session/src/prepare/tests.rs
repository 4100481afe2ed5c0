use std::time::Duration;

use pado_scenario::{Dur, LoadShape};

use super::*;

/// A scenario file in its own temp directory.
fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("검색.yaml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

fn scenario(threshold: &str) -> String {
    format!(
        "target: http://127.0.0.1:9\nthresholds:\n  \"{threshold}\": [\"p(95) < 200\"]\nscenarios:\n  s:\n    executor: constant-vus\n    vus: 1\n    duration: 4s\n    flow:\n      - name: 검색\n        request: /search\n"
    )
}

#[test]
fn a_threshold_selecting_a_step_the_plan_lacks_is_an_error_at_its_line() {
    let (_d, path) = file(&scenario("http_req_duration{step:검섹}"));
    let prep = LoadSpec::file(path.clone(), None).load().unwrap();
    let e = prep.compile().unwrap_err();
    let SessionError::Invalid(m) = e else {
        panic!("not invalid input: {e:?}")
    };
    let at = format!(
        "{}:3:3: thresholds.http_req_duration{{step:검섹}}",
        path.display()
    );
    assert!(m.starts_with(&at), "{m}");
    assert!(
        m.contains("steps here: 검색"),
        "the steps it could name: {m}"
    );
    // The step it names exists: no problem.
    let (_d, path) = file(&scenario("http_req_duration{step:검색}"));
    let prep = LoadSpec::file(path, None).load().unwrap();
    assert_eq!(prep.compile().unwrap().series.len(), 1);
}

#[test]
fn fit_to_scales_the_length_the_other_settings_gave_and_not_without_it() {
    let (_d, path) = file(&scenario("http_req_duration"));
    let mut spec = LoadSpec::file(path, None);
    spec.overrides.shape = Some(LoadShape::Vus {
        vus: 2,
        duration: Dur(Duration::from_secs(8 * 3600)),
    });
    let length = |s: &LoadSpec| pado_scenario::planned_length(&s.load().unwrap().config);
    assert_eq!(length(&spec), Some(Duration::from_secs(8 * 3600)));
    spec.fit_to = Some(Duration::from_secs(2));
    assert_eq!(length(&spec), Some(Duration::from_secs(2)));
}

#[test]
fn a_file_read_once_is_prepared_again_with_other_settings() {
    let (_d, path) = file(&scenario("http_req_duration"));
    let spec = LoadSpec::file(path.clone(), None);
    let text = ScenarioText::read(&spec).unwrap();
    // The file changes after it was read: the reading is what is prepared.
    std::fs::write(&path, "not: [a scenario").unwrap();
    let mut faster = spec.clone();
    faster.overrides.shape = Some(LoadShape::Rate {
        rate: 50.0,
        duration: Dur(Duration::from_secs(3)),
    });
    let prep = Prepared::from_read(&text, &faster).unwrap();
    assert_eq!(
        pado_scenario::planned_length(&prep.config),
        Some(Duration::from_secs(3))
    );
    // Reading it now is an error naming the file.
    let e = ScenarioText::read(&spec).unwrap_err().to_string();
    assert!(e.contains("검색.yaml"), "{e}");
}

#[test]
fn quick_mode_is_named_the_command_line_and_its_scenario_carries_the_notes() {
    let spec = LoadSpec {
        source: Source::Url(QuickRequest {
            url: "http://127.0.0.1:9/파도".into(),
            method: None,
            body: None,
            body_file: None,
        }),
        overrides: Overrides::default(),
        fit_to: None,
    };
    let prep = spec.load().unwrap();
    assert_eq!(prep.file, "<command line>");
    assert_eq!(prep.at("thresholds"), "<command line>");
    let s = prep.scenario();
    assert_eq!(s.file, prep.file);
    assert_eq!(s.thresholds.len(), prep.thresholds.len());
}

#[test]
fn checking_a_file_counts_its_parts_and_stops_at_what_a_run_would_refuse() {
    let (_d, path) = file(&scenario("http_req_duration{step:검색}"));
    let c = check_file(path.clone(), None).unwrap();
    assert_eq!((c.scenarios, c.thresholds), (1, 1));
    assert_eq!(c.file, path.display().to_string());
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    // A selector naming no step is refused as the run would refuse it.
    let (_d, path) = file(&scenario("http_req_duration{step:없음}"));
    let e = check_file(path, None).unwrap_err();
    assert!(matches!(e, SessionError::Invalid(_)), "{e:?}");
    // `--target` replaces the file's: a file without one is checked with it.
    let (_d, path) =
        file(&scenario("http_req_duration").replace("target: http://127.0.0.1:9\n", ""));
    assert!(check_file(path.clone(), None).is_err());
    assert!(check_file(path, Some("http://127.0.0.1:9".into())).is_ok());
}
