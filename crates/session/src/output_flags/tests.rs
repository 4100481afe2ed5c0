use super::*;

#[test]
fn an_output_url_may_come_from_the_environment_and_is_never_shown() {
    let var = "PADO_TEST_OUTPUT_URL_LIVE_OUTPUTS";
    std::env::set_var(var, "http://me:s3cr3t@127.0.0.1:9090/api/v1/write");
    let flag = format!("prometheus=env:{var}");
    assert_eq!(
        resolved_flag(&flag).unwrap(),
        "prometheus=http://me:s3cr3t@127.0.0.1:9090/api/v1/write"
    );
    // A plain URL is itself.
    let plain = "otlp=http://127.0.0.1:4318/v1/metrics";
    assert_eq!(resolved_flag(plain).unwrap(), plain);
    // Unset, or no variable's name: an error naming the flag, never a value.
    let unset = "prometheus=env:PADO_TEST_OUTPUT_URL_NEVER_SET";
    let e = resolved_flag(unset).unwrap_err().to_string();
    assert!(
        e.contains("PADO_TEST_OUTPUT_URL_NEVER_SET is not set"),
        "{e}"
    );
    for bad in ["prometheus=env:", "prometheus=env:1X", "prometheus=env:A-B"] {
        let e = check_env_url_ref(bad).unwrap_err().to_string();
        assert!(e.contains("name of an environment variable"), "{bad}: {e}");
    }
    let e = check_env_url_ref(&format!("graphite=env:{var}"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown output kind `graphite`"), "{e}");
    assert!(!e.contains("s3cr3t"));
    assert_eq!(check_env_url_ref(plain).unwrap(), None);
}

#[test]
fn one_raw_file_is_told_apart_from_the_live_outputs_and_a_second_is_refused() {
    let flags = |v: &[&str]| v.iter().map(|f| f.to_string()).collect::<Vec<_>>();
    let (raw, live) = raw_spec(&flags(&[
        "prometheus=http://127.0.0.1:9090/api/v1/write",
        "raw-json=요청.jsonl",
    ]))
    .unwrap();
    assert!(raw.is_some());
    assert_eq!(live, ["prometheus=http://127.0.0.1:9090/api/v1/write"]);
    let (raw, live) = raw_spec(&flags(&["otlp=http://127.0.0.1:4318/v1/metrics"])).unwrap();
    assert!(raw.is_none() && live.len() == 1);
    let e = raw_spec(&flags(&["raw-json=a.jsonl", "raw-csv=b.csv"])).unwrap_err();
    assert!(matches!(e, SessionError::Invalid(_)));
    assert!(e.to_string().starts_with("--output raw-csv=b.csv: "), "{e}");
}

/// A scenario file with `outputs:` in its own temp directory, prepared.
fn prepared(outputs: &str) -> (tempfile::TempDir, Prepared) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("출력.yaml");
    std::fs::write(
        &path,
        format!("target: http://127.0.0.1:9\noutputs:\n{outputs}scenarios:\n  s:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n    flow:\n      - request: /\n"),
    )
    .unwrap();
    let prep = crate::prepare::LoadSpec::file(path, None).load().unwrap();
    (dir, prep)
}

#[test]
fn the_file_s_outputs_come_first_and_an_influxdb_v2_output_needs_its_token_now() {
    let (_d, prep) =
        prepared("  - { kind: prometheus, url: \"http://127.0.0.1:9090/api/v1/write\" }\n");
    let flags = ["otlp=http://127.0.0.1:4318/v1/metrics".to_string()];
    let out = specs(&prep, &flags, true).unwrap();
    let labels: Vec<String> = out.iter().map(|o| o.label()).collect();
    assert!(
        labels[0].starts_with("prometheus ") && labels[1].starts_with("otlp "),
        "{labels:?}"
    );
    // A coordinator leaves `KIND=env:VAR` to its generators, checked for shape only.
    let env_flag = ["prometheus=env:PADO_TEST_OUTPUT_FLAGS_NEVER_SET".to_string()];
    assert_eq!(specs(&prep, &env_flag, false).unwrap().len(), 1);
    assert!(specs(&prep, &env_flag, true).is_err());
    // InfluxDB v2 without its token variable: refused, naming the variable.
    let (_d, prep) = prepared(
        "  - { kind: influxdb, url: \"http://127.0.0.1:8086/api/v2/write?org=o&bucket=b\", token_env: PADO_TEST_INFLUX_TOKEN_NEVER_SET }\n",
    );
    let e = specs(&prep, &[], true).unwrap_err().to_string();
    assert!(
        e.contains("needs a token") && e.contains("PADO_TEST_INFLUX_TOKEN_NEVER_SET"),
        "{e}"
    );
    // A bad output in the file is placed at its line.
    let (_d, prep) = prepared("  - { kind: prometheus, url: \"not a url\" }\n");
    let e = specs(&prep, &[], true).unwrap_err().to_string();
    assert!(e.contains("출력.yaml:") && e.contains("outputs[0]"), "{e}");
}
