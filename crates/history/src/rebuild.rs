//! `pado history rebuild DIR...`'s rules: which directories under an argument are
//! results, and what recording one of them can end as (a segment of a split test
//! is skipped, its merge being the test). The command line prints and counts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::{History, HistoryError, RunRecord};

/// What one argument of `pado history rebuild` is. A file is skipped with a note:
/// `pado history rebuild pado-results/*` also matches what is kept beside the
/// results (`pado trend`'s charts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Argument {
    /// A file, not a result directory: skipped.
    File,
    /// A directory that is no result and holds none: an error of that argument.
    NoResults,
    /// The result directories it is or holds (see [`result_dirs_in`]).
    Results(Vec<PathBuf>),
}

/// What `path`, given to `pado history rebuild`, is.
pub fn argument(path: &Path) -> Argument {
    if path.is_file() {
        return Argument::File;
    }
    let found = result_dirs_in(path);
    if found.is_empty() {
        Argument::NoResults
    } else {
        Argument::Results(found)
    }
}

/// The first argument when every one is a file: then the user meant directories
/// (`pado history rebuild summary.json`), and that is an error, not a note.
pub fn only_files(args: &[PathBuf]) -> Option<&Path> {
    (!args.is_empty() && args.iter().all(|a| a.is_file())).then(|| args[0].as_path())
}

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
    fn files_are_skipped_unless_every_argument_is_one() {
        let t = tempfile::tempdir().unwrap();
        let chart = t.path().join("trend-검색.html");
        std::fs::write(&chart, "<html>").unwrap();
        let run = t.path().join("run");
        write_result(&run, "검색", "2026-11-01T10:00:00Z", 1.0, json!(null));
        let empty = t.path().join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        assert_eq!(argument(&chart), Argument::File);
        assert_eq!(argument(&empty), Argument::NoResults);
        assert_eq!(argument(&run), Argument::Results(vec![run.clone()]));
        assert_eq!(
            only_files(&[chart.clone(), chart.clone()]),
            Some(chart.as_path())
        );
        assert_eq!(only_files(&[chart.clone(), run.clone()]), None);
        assert_eq!(only_files(&[]), None);
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
