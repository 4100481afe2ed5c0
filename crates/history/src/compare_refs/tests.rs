use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::*;
use crate::record::tests::write_result;
use crate::RunRecord;

/// A history under `root/db` with the runs `(dir name, test name, extra run.json)`
/// recorded in order; their directories.
fn planted(root: &Path, runs: &[(&str, &str, Value)]) -> Vec<PathBuf> {
    let mut h = History::open(&db_path(Some(&root.join("db"))).unwrap()).unwrap();
    runs.iter()
        .enumerate()
        .map(|(i, (dir, name, extra))| {
            let d = root.join(dir);
            let at = format!("2026-11-{:02}T10:00:00Z", i + 1);
            write_result(&d, name, &at, 10.0 + i as f64, extra.clone());
            let r = RunRecord::from_result_dir(&d, None, BTreeMap::new()).unwrap();
            h.record(&r).unwrap();
            d.canonicalize().unwrap()
        })
        .collect()
}

#[test]
fn directories_are_taken_as_given_and_no_database_is_made_for_them() {
    let t = tempfile::tempdir().unwrap();
    let (a, b) = (t.path().join("a"), t.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let db = t.path().join("db");
    let got = resolve_compared(&[a.clone(), b.clone()], Some(&db)).unwrap();
    assert_eq!(got, vec![a, b]);
    assert!(!db.exists());
}

#[test]
fn references_resolve_to_the_recorded_directories() {
    let t = tempfile::tempdir().unwrap();
    let dirs = planted(
        t.path(),
        &[("r0", "검색", Value::Null), ("r1", "검색", Value::Null)],
    );
    let db = t.path().join("db");
    let got = resolve_compared(&["last~1".into(), "last".into()], Some(&db)).unwrap();
    assert_eq!(got, dirs);
}

#[test]
fn a_removed_directory_and_the_same_run_twice_are_refused_by_name() {
    let t = tempfile::tempdir().unwrap();
    let dirs = planted(
        t.path(),
        &[("r0", "검색", Value::Null), ("r1", "검색", Value::Null)],
    );
    let db = t.path().join("db");
    let e = resolve_compared(&["last".into(), dirs[1].clone()], Some(&db)).unwrap_err();
    assert!(matches!(e, CompareRefError::SameRun { .. }), "{e}");
    assert!(e.to_string().contains("`last` and `"), "{e}");
    assert!(e.is_usage());
    std::fs::remove_dir_all(&dirs[0]).unwrap();
    let e = resolve_compared(&["last~1".into(), "last".into()], Some(&db)).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("`last~1` is run 1 (검색), whose result directory"),
        "{e}"
    );
    assert!(e.to_string().ends_with("no longer exists"), "{e}");
}

#[test]
fn earlier_runs_are_the_same_test_not_interrupted_not_compared_latest_ten() {
    let t = tempfile::tempdir().unwrap();
    let other_shape = json!({"scenarios": [{"name": "other", "executor": "constant-vus"}]});
    let mut runs: Vec<(String, &str, Value)> = vec![
        ("other-name".into(), "다른 시험", Value::Null),
        ("other-shape".into(), "검색", other_shape),
        ("cut".into(), "검색", json!({"interrupted": true})),
    ];
    for i in 0..12 {
        runs.push((format!("r{i:02}"), "검색", Value::Null));
    }
    let borrowed: Vec<(&str, &str, Value)> = runs
        .iter()
        .map(|(d, n, v)| (d.as_str(), *n, v.clone()))
        .collect();
    let dirs = planted(t.path(), &borrowed);
    let db = t.path().join("db");
    // Compared: the last two; earlier: the ten same-test runs before them.
    let compared = [dirs[14].clone(), dirs[13].clone()];
    let got: Vec<PathBuf> = earlier_records(&compared, Some(&db))
        .unwrap()
        .into_iter()
        .map(|r| r.record.result_dir)
        .collect();
    assert_eq!(got, dirs[3..13].to_vec());
    assert_eq!(earlier_runs(&compared, Some(&db)).unwrap().len(), 10);
}

#[test]
fn no_history_yet_means_no_earlier_runs_and_none_is_created() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("r");
    write_result(&d, "검색", "2026-11-01T10:00:00Z", 10.0, Value::Null);
    let db = t.path().join("db");
    assert!(earlier_records(&[d], Some(&db)).unwrap().is_empty());
    assert!(!db.exists());
}

/// Runs of one LLM test whose recorded TTFT p95 (overall and of step `검색`)
/// wandered as planted: the comparison's floor of the TTFT rows is their spread.
#[test]
fn earlier_runs_carry_the_llm_figures_the_floor_of_llm_rows_reads() {
    let t = tempfile::tempdir().unwrap();
    let ttft_p95 = [80.0, 120.0, 95.0, 130.0, 70.0];
    let runs: Vec<(String, &str, Value)> = (0..ttft_p95.len() + 2)
        .map(|i| (format!("r{i}"), "채팅 시험", Value::Null))
        .collect();
    let borrowed: Vec<(&str, &str, Value)> = runs
        .iter()
        .map(|(d, n, v)| (d.as_str(), *n, v.clone()))
        .collect();
    let root = t.path();
    let mut h = History::open(&db_path(Some(&root.join("db"))).unwrap()).unwrap();
    let mut dirs = Vec::new();
    for (i, (dir, name, extra)) in borrowed.iter().enumerate() {
        let d = root.join(dir);
        write_result(
            &d,
            name,
            &format!("2026-11-{:02}T10:00:00Z", i + 1),
            10.0,
            extra.clone(),
        );
        // The planted spread for the earlier runs, 100 ms for the two compared.
        let p95 = ttft_p95.get(i).copied().unwrap_or(100.0);
        let llm = json!({"requests": 100, "output_tokens": 3200, "output_tokens_per_s": 400.0,
            "ttft_ms": {"p50": p95 * 0.9, "p95": p95, "p99": p95 * 1.1},
            "itl_ms": {"p50": 20.0, "p95": 21.0, "p99": 22.0},
            "tpot_ms": {"p50": 20.0, "p95": 21.0},
            "tokens_per_s_per_request": {"p50": 40.0}});
        let path = d.join("summary.json");
        let mut sum: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        sum["sse"] = json!({ "llm": llm.clone() });
        sum["steps"]["검색"]["sse"] = json!({ "llm": llm });
        std::fs::write(&path, sum.to_string()).unwrap();
        let r = RunRecord::from_result_dir(&d, None, BTreeMap::new()).unwrap();
        h.record(&r).unwrap();
        dirs.push(d.canonicalize().unwrap());
    }
    drop(h);
    let db = root.join("db");
    let n = dirs.len();
    let compared = [dirs[n - 2].clone(), dirs[n - 1].clone()];
    let earlier = earlier_runs(&compared, Some(&db)).unwrap();
    assert_eq!(earlier.len(), ttft_p95.len());
    let floor = pado_report::compare::NoiseFloor {
        min_change_pct: 5.0,
        earlier_runs: earlier,
    };
    for scope in ["overall", "step 검색"] {
        let f = floor.of_row(scope, "ttft p95 ms");
        let s = f.earlier_runs.expect("TTFT p95 read from the history");
        assert_eq!(s.runs, ttft_p95.len(), "{scope}");
        // 70..130 around 99: far wider than --min-change, so it sets the floor.
        assert!(f.from_earlier_runs() && f.pct > 30.0, "{scope} {f:?}");
        // ITL did not vary between the runs: --min-change holds there.
        let itl = floor.of_row(scope, "itl p50 ms");
        assert!(
            itl.earlier_runs.is_some() && !itl.from_earlier_runs(),
            "{scope} {itl:?}"
        );
        let tps = floor.of_row(scope, "output tokens/s");
        assert!(tps.earlier_runs.is_some(), "{scope} {tps:?}");
    }
}
