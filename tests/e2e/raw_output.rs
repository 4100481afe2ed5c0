//! Raw per-request output (`--output raw-json=FILE`, `raw-csv=FILE`, k6's
//! `json=`/`csv=`): against the counting test server, every request the server
//! counted is one line, each line's status is what the server answered for its
//! path, its duration is at least the server's planted delay, CSV quoting keeps
//! Hangul and commas, `.gz` files decompress, secrets from the environment are
//! masked, and run.json / summary.json say how many lines were written.

use std::io::Read;
use std::path::Path;

use pado_testkit::TestServer;
use serde_json::Value;

use crate::harness::{fixture, run_env, tmp, write_file};

const SECRET: &str = "raw-s3cret-파도";

/// Two VUs × 6 iterations of: a delayed 200, a 503, a tagged 200 with a secret in
/// its query. 36 requests in all.
fn three_steps(server: &TestServer) -> String {
    fixture(
        "raw_output_three_steps.yaml",
        &[("target", server.base_url())],
    )
}

fn read_text(p: &Path) -> String {
    let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    if p.extension().is_some_and(|e| e == "gz") {
        let mut s = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut s)
            .unwrap();
        s
    } else {
        String::from_utf8(bytes).unwrap()
    }
}

#[test]
fn raw_json_has_one_line_per_request_with_the_servers_status_and_delay() {
    let server = TestServer::start();
    let t = tmp("raw-json");
    let file = write_file(&t, "s.yaml", &three_steps(&server));
    let raw = t.join("requests.jsonl.gz");
    let r = run_env(
        "raw-json-run",
        &[
            file.to_str().unwrap(),
            "--output",
            &format!("raw-json={}", raw.display()),
        ],
        &[("PADO_RAW_KEY", SECRET)],
    );
    // 503s fail requests: the run's exit code says so, the file is still complete.
    let stats = server.stats();
    assert_eq!(stats.requests, 36, "{}", r.stderr());
    let text = read_text(&raw);
    assert!(!text.contains(SECRET), "secret in the raw file");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(lines.len() as u64, stats.requests);
    let mut by_step = std::collections::BTreeMap::<String, u64>::new();
    for l in &lines {
        let step = l["step"].as_str().unwrap().to_string();
        let url = l["url"].as_str().unwrap();
        let status = l["status"].as_u64().unwrap();
        let duration = l["duration_ms"].as_f64().unwrap();
        match step.as_str() {
            "검색, 상품" => {
                assert_eq!(status, 200, "{l}");
                assert!(url.ends_with("/delay/40"), "{l}");
                assert!(duration >= 40.0, "{l}");
                assert!(l["waiting_ms"].as_f64().unwrap() >= 40.0, "{l}");
                assert_eq!(l["error"], Value::Null);
            }
            "down" => {
                assert_eq!(status, 503, "{l}");
                assert_eq!(l["error"], "status", "{l}");
                assert_eq!(l["failed"], true, "{l}");
            }
            "keyed" => {
                assert_eq!(status, 200, "{l}");
                assert!(url.ends_with("/status/200?key=***&page=1"), "{l}");
                assert_eq!(l["tags"]["region"], "seoul, busan");
            }
            other => panic!("unexpected step {other}"),
        }
        assert_eq!(l["scenario"], "main");
        assert_eq!(l["method"], "GET");
        assert_eq!(l["http"], "1.1");
        assert!(url.starts_with(&server.base_url()), "{l}");
        let vu = l["vu"].as_u64().unwrap();
        assert!((1..=2).contains(&vu), "{l}");
        assert!(l["iter"].as_u64().unwrap() < 6, "{l}");
        assert!(l["bytes_received"].as_u64().unwrap() > 0, "{l}");
        assert!(l["time"].as_str().unwrap().ends_with('Z'), "{l}");
        *by_step.entry(step).or_default() += 1;
    }
    assert_eq!(
        by_step.values().copied().collect::<Vec<_>>(),
        vec![12, 12, 12],
        "{by_step:?}"
    );
    // Each (vu, iter) made its three requests.
    let pairs: std::collections::BTreeSet<(u64, u64)> = lines
        .iter()
        .map(|l| (l["vu"].as_u64().unwrap(), l["iter"].as_u64().unwrap()))
        .collect();
    assert_eq!(pairs.len(), 12);
    let meta = r.run_json();
    assert_eq!(meta["raw_output"]["kind"], "raw-json");
    assert_eq!(meta["raw_output"]["lines_written"], 36);
    assert_eq!(meta["raw_output"]["lines_dropped"], 0);
    let summary = r.summary();
    assert_eq!(summary["raw_output"]["lines_written"], 36);
    assert!(!std::fs::read_to_string(r.dir.join("run.json"))
        .unwrap()
        .contains(SECRET));
}

#[test]
fn raw_csv_quotes_commas_and_keeps_hangul_under_k6s_name() {
    let server = TestServer::start();
    let t = tmp("raw-csv");
    let file = write_file(&t, "s.yaml", &three_steps(&server));
    let raw = t.join("requests.csv");
    let r = run_env(
        "raw-csv-run",
        &[
            file.to_str().unwrap(),
            "--output",
            &format!("csv={}", raw.display()),
        ],
        &[("PADO_RAW_KEY", SECRET)],
    );
    let stats = server.stats();
    assert_eq!(stats.requests, 36, "{}", r.stderr());
    let text = read_text(&raw);
    assert!(!text.contains(SECRET));
    let mut rd = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header[..6],
        ["time", "scenario", "step", "method", "url", "status"]
    );
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    assert_eq!(rows.len() as u64, stats.requests);
    let hangul = rows
        .iter()
        .filter(|r| &r[col("step")] == "검색, 상품")
        .count();
    assert_eq!(hangul, 12);
    let tagged: Vec<_> = rows
        .iter()
        .filter(|r| &r[col("tags")] == "region=seoul, busan")
        .collect();
    assert_eq!(tagged.len(), 12);
    assert!(tagged.iter().all(|r| &r[col("status")] == "200"));
    let down = rows.iter().filter(|r| &r[col("status")] == "503").count();
    assert_eq!(down, 12);
    // On the line itself the comma-holding cells are quoted.
    assert!(text.contains("\"검색, 상품\""));
    assert!(text.contains("\"region=seoul, busan\""));
    assert_eq!(r.run_json()["raw_output"]["kind"], "raw-csv");
}

#[test]
fn a_second_raw_output_or_an_empty_file_name_is_refused_before_any_request() {
    let server = TestServer::start();
    let t = tmp("raw-refused");
    let file = write_file(&t, "s.yaml", &three_steps(&server));
    let a = t.join("a.jsonl");
    let b = t.join("b.csv");
    let r = run_env(
        "raw-refused-run",
        &[
            file.to_str().unwrap(),
            "--output",
            &format!("raw-json={}", a.display()),
            "--output",
            &format!("raw-csv={}", b.display()),
        ],
        &[],
    );
    assert!(!r.out.status.success());
    assert!(
        r.stderr().contains("only one raw output per run"),
        "{}",
        r.stderr()
    );
    let r = run_env(
        "raw-empty-run",
        &[file.to_str().unwrap(), "--output", "raw-json="],
        &[],
    );
    assert!(!r.out.status.success());
    assert!(r.stderr().contains("needs a file name"), "{}", r.stderr());
    assert_eq!(server.stats().requests, 0);
}
