use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::*;
use crate::db_path;
use crate::record::tests::write_result;

fn record(root: &Path, i: usize, p95: Option<f64>) -> RunRecord {
    let d = root.join(format!("r{i}"));
    write_result(
        &d,
        "검색",
        &format!("2026-11-{:02}T10:00:00Z", i + 1),
        10.0,
        Value::Null,
    );
    let mut r = RunRecord::from_result_dir(&d, None, BTreeMap::new()).unwrap();
    r.p95_ms = p95;
    r
}

#[test]
fn the_verdict_reads_the_latest_and_the_baseline_runs_with_a_value() {
    let t = tempfile::tempdir().unwrap();
    let recs: Vec<RunRecord> = [Some(1.0), Some(2.0), None, Some(4.0), None, Some(6.0)]
        .iter()
        .enumerate()
        .map(|(i, v)| record(t.path(), i, *v))
        .collect();
    let refs: Vec<&RunRecord> = recs.iter().collect();
    // Baseline 2: the two latest earlier runs that have a p95 (3 and 1), and 5.
    assert_eq!(judged_runs(&refs, TrendMetric::P95, None, 2), vec![3, 1, 5]);
    // req/s is always recorded: the two runs just before the last.
    assert_eq!(judged_runs(&refs, TrendMetric::Rps, None, 2), vec![4, 3, 5]);
    // A step's figure comes from the step.
    assert_eq!(
        recorded(&recs[0], TrendMetric::Rps, Some("검색")),
        Some(40.0)
    );
    assert_eq!(recorded(&recs[0], TrendMetric::Rps, Some("없음")), None);
}

#[test]
fn runs_of_the_name_become_points_and_bad_asks_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let mut h = History::open(&db_path(Some(&t.path().join("db"))).unwrap()).unwrap();
    for i in 0..3 {
        let mut r = record(t.path(), i, Some(10.0 + i as f64));
        r.labels.insert("env".into(), "스테이징".into());
        h.record(&r).unwrap();
    }
    std::fs::remove_dir_all(t.path().join("r0")).unwrap();
    let q = TrendQuery {
        name: "검색",
        metric: TrendMetric::P95,
        step: None,
        limit: 20,
        baseline: 1,
    };
    let got = trend_runs(&h, &q).unwrap();
    let values: Vec<Option<f64>> = got.points.iter().map(|p| p.value).collect();
    assert_eq!(values, vec![Some(10.0), Some(11.0), Some(12.0)]);
    assert_eq!(got.points[0].labels, "env=스테이징");
    assert!(got.points[0].dir_gone && !got.points[2].dir_gone);
    // Not judged (baseline 1 reads runs 1 and 2 only): no seconds read.
    assert!(got.points[0].seconds.is_none());

    let e = trend_runs(
        &h,
        &TrendQuery {
            baseline: 0,
            ..q.clone()
        },
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "--baseline 0: give 1 or more runs");
    // The same rule, before any database is opened.
    let zero = TrendQuery {
        baseline: 0,
        ..q.clone()
    };
    assert!(zero.check().unwrap_err().is_usage());
    assert!(q.check().is_ok());
    let e = trend_runs(
        &h,
        &TrendQuery {
            name: "없는 시험",
            ..q.clone()
        },
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with("no runs named `없는 시험` in "),
        "{e}"
    );
    let e = trend_runs(
        &h,
        &TrendQuery {
            step: Some("x"),
            ..q.clone()
        },
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "--step x: no run of `검색` has this step");
    assert!(e.is_usage());
    assert!(trend_runs(
        &h,
        &TrendQuery {
            step: Some("검색"),
            ..q
        }
    )
    .is_ok());
}

#[test]
fn the_chart_is_named_after_the_test_in_letters_and_digits() {
    assert_eq!(
        default_chart_path("검색 / API v2!", "p95"),
        Path::new("pado-results").join("trend-검색---API-v2-p95.html")
    );
    let long = "a".repeat(80);
    let p = default_chart_path(&long, "rps");
    assert_eq!(
        p.file_name().unwrap().to_str().unwrap(),
        format!("trend-{}-rps.html", "a".repeat(60))
    );
}

/// A run of `채팅` whose summary plants LLM figures (ITL p50 `itl_ms`) for the run
/// and its step `답변`.
fn llm_record(root: &Path, i: usize, itl_ms: f64) -> RunRecord {
    let d = root.join(format!("llm{i}"));
    write_result(
        &d,
        "채팅",
        &format!("2026-11-{:02}T10:00:00Z", i + 1),
        10.0,
        Value::Null,
    );
    let path = d.join("summary.json");
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let llm = serde_json::json!({"streams": 40, "events": 800, "llm": {
        "requests": 40, "output_tokens": 800, "output_tokens_per_s": 80.0 + i as f64,
        "ttft_ms": {"p50": 100.0, "p95": 120.0, "p99": 130.0},
        "itl_ms": {"p50": itl_ms, "p95": itl_ms * 1.5, "p99": itl_ms * 2.0},
        "tpot_ms": {"p50": itl_ms, "p95": itl_ms},
        "tokens_per_s_per_request": {"p50": 30.0}}});
    s["sse"] = llm.clone();
    s["steps"]["답변"] = serde_json::json!({"requests": 40, "failed": 0, "rps": 4.0,
        "latency_ms": {"p50": 300.0}, "sse": llm});
    std::fs::write(&path, s.to_string()).unwrap();
    RunRecord::from_result_dir(&d, None, BTreeMap::new()).unwrap()
}

#[test]
fn llm_figures_are_recorded_per_run_and_step_and_trend_reads_them() {
    let t = tempfile::tempdir().unwrap();
    let mut h = History::open(&db_path(Some(&t.path().join("db"))).unwrap()).unwrap();
    for (i, itl) in [10.0, 11.0, 30.0].into_iter().enumerate() {
        h.record(&llm_record(t.path(), i, itl)).unwrap();
    }
    // A run without streams records no LLM figures.
    let plain = record(t.path(), 9, Some(5.0));
    assert!(plain.llm.is_none() && plain.steps.iter().all(|s| s.llm.is_none()));
    for (word, step, want) in [
        ("llm_itl.p50", None, [10.0, 11.0, 30.0]),
        ("llm_itl.p99", Some("답변"), [20.0, 22.0, 60.0]),
        ("llm_tokens.rate", None, [80.0, 81.0, 82.0]),
        ("llm_ttft.p95", Some("답변"), [120.0, 120.0, 120.0]),
    ] {
        let q = TrendQuery {
            name: "채팅",
            metric: TrendMetric::parse(word).expect(word),
            step,
            limit: 20,
            baseline: 2,
        };
        let got = trend_runs(&h, &q).unwrap();
        let values: Vec<Option<f64>> = got.points.iter().map(|p| p.value).collect();
        assert_eq!(values, want.map(Some).to_vec(), "{word} {step:?}");
    }
    let run = &h.runs_named("채팅", None).unwrap()[0].record;
    assert_eq!(run.llm.as_ref().unwrap().output_tokens, 800);
    let step = run.steps.iter().find(|s| s.step == "답변").unwrap();
    assert_eq!(step.llm.as_ref().unwrap().figures.tpot_p95_ms, Some(10.0));
    // The other step streamed nothing.
    assert!(run
        .steps
        .iter()
        .filter(|s| s.step != "답변")
        .all(|s| s.llm.is_none()));
    assert_eq!(TrendMetric::parse("llm_bogus.p95"), None);
}
