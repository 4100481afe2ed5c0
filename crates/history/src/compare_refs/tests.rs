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
