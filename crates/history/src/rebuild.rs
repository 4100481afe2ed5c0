//! `pado history rebuild DIR...`'s rules: which directories under an argument are
//! results, and what recording one of them can end as (a segment of a split test
//! is skipped, its merge being the test). The command line prints and counts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::{History, HistoryError, RunRecord};

/// The result directories under `dir`: itself when it is one, else its
/// subdirectories that are (a find-capacity search, a coordinator's `merged/`),
/// sorted.
pub fn result_dirs_in(dir: &Path) -> Vec<PathBuf> {
    if dir.join("run.json").is_file() {
        return vec![dir.to_path_buf()];
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.join("run.json").is_file())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// What became of one result directory given to `rebuild`.
#[derive(Debug)]
pub enum Rebuilt {
    /// Recorded under `id`.
    Recorded {
        /// Its id.
        id: i64,
        /// What was recorded.
        record: Box<RunRecord>,
    },
    /// A segment of a split test: recorded through its merge, not an error.
    Segment {
        /// The directory.
        dir: PathBuf,
        /// Why it was skipped.
        reason: String,
    },
    /// The directory cannot be recorded (the others still are).
    Failed(HistoryError),
}

/// Record the result directory `dir` into `h`. `Err` is the database's failure,
/// which ends the rebuild.
pub fn rebuild_one(h: &mut History, dir: &Path) -> Result<Rebuilt, HistoryError> {
    match RunRecord::from_result_dir(dir, None, BTreeMap::new()) {
        Ok(rec) => Ok(Rebuilt::Recorded {
            id: h.record(&rec)?,
            record: Box::new(rec),
        }),
        Err(HistoryError::ResultDir { dir, reason }) if reason.contains("segment") => {
            Ok(Rebuilt::Segment { dir, reason })
        }
        Err(e) => Ok(Rebuilt::Failed(e)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::db_path;
    use crate::record::tests::write_result;

    #[test]
    fn a_directory_is_itself_or_the_results_inside_it() {
        let t = tempfile::tempdir().unwrap();
        let search = t.path().join("capacity");
        for s in ["step-02", "step-01"] {
            write_result(
                &search.join(s),
                "검색",
                "2026-11-01T10:00:00Z",
                1.0,
                json!(null),
            );
        }
        std::fs::create_dir_all(search.join("not-a-result")).unwrap();
        assert_eq!(
            result_dirs_in(&search),
            vec![search.join("step-01"), search.join("step-02")]
        );
        assert_eq!(
            result_dirs_in(&search.join("step-01")),
            vec![search.join("step-01")]
        );
        assert!(result_dirs_in(&t.path().join("missing")).is_empty());
    }

    #[test]
    fn a_segment_is_skipped_a_broken_result_fails_a_result_is_recorded() {
        let t = tempfile::tempdir().unwrap();
        let mut h = History::open(&db_path(Some(&t.path().join("db"))).unwrap()).unwrap();
        let seg = t.path().join("seg");
        write_result(
            &seg,
            "검색",
            "2026-11-01T10:00:00Z",
            1.0,
            json!({"segment": {"index": 0}}),
        );
        assert!(matches!(
            rebuild_one(&mut h, &seg).unwrap(),
            Rebuilt::Segment { .. }
        ));
        let broken = t.path().join("broken");
        std::fs::create_dir_all(&broken).unwrap();
        assert!(matches!(
            rebuild_one(&mut h, &broken).unwrap(),
            Rebuilt::Failed(_)
        ));
        let ok = t.path().join("ok");
        write_result(&ok, "검색", "2026-11-01T10:00:00Z", 1.0, json!(null));
        let Rebuilt::Recorded { id, record } = rebuild_one(&mut h, &ok).unwrap() else {
            panic!("not recorded")
        };
        assert_eq!((id, record.name.as_str()), (1, "검색"));
    }
}
