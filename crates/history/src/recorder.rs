//! How a command records its finished runs (`pado run`, each `find-capacity` step,
//! `pado merge`, the coordinators' merges): never failing the run. The rules live
//! here so every caller records the same way: `--label` pairs checked before
//! anything runs, the working directory's git commit added as `commit` unless a
//! label gives one, and a database that failed once not asked again (a command
//! recording many runs says so once), while a result directory's own problem
//! concerns that run only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::{db_path, git_commit, parse_label, History, HistoryError, Kind, RunRecord};

/// Where and how a command records its runs, built from its flags before anything
/// runs. Clones share whether the database already failed.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    /// `--no-history`.
    off: bool,
    /// `--history DIR`.
    dir: Option<PathBuf>,
    /// `--label` pairs.
    labels: BTreeMap<String, String>,
    /// Whether the database already failed (and the caller said so).
    failed: Arc<AtomicBool>,
}

/// What became of one [`Recorder::record`].
#[derive(Debug)]
pub enum Recorded {
    /// Recorded under this id.
    Id(i64),
    /// Not asked: `--no-history`, or the database failed earlier in this command.
    Skipped,
    /// Could not be recorded: the caller says so in one line, the result
    /// directory being what counts.
    Failed(HistoryError),
}

impl Recorder {
    /// From the flags: `off` is `--no-history`, `dir` `--history`, `labels` the
    /// `--label KEY=VALUE` values (a malformed one is an error naming it).
    pub fn new(
        off: bool,
        dir: Option<PathBuf>,
        labels: &[String],
    ) -> Result<Recorder, HistoryError> {
        let mut pairs = BTreeMap::new();
        for l in labels {
            let (k, v) = parse_label(l)?;
            pairs.insert(k, v);
        }
        Ok(Recorder {
            off,
            dir,
            labels: pairs,
            failed: Arc::default(),
        })
    }

    /// This recorder with one more label (an experiment's `knob=value` on each of
    /// its runs); it shares whether the database already failed.
    pub fn with_label(&self, key: &str, value: &str) -> Recorder {
        let mut r = self.clone();
        r.labels.insert(key.to_string(), value.to_string());
        r
    }

    /// Record the finished result directory `dir` as a run of `kind`.
    pub fn record(&self, dir: &Path, kind: Kind) -> Recorded {
        if self.off || self.failed.load(Ordering::Relaxed) {
            return Recorded::Skipped;
        }
        let mut labels = self.labels.clone();
        if !labels.contains_key("commit") {
            if let Some(c) = std::env::current_dir().ok().and_then(|d| git_commit(&d)) {
                labels.insert("commit".into(), c);
            }
        }
        let done = RunRecord::from_result_dir(dir, Some(kind), labels).and_then(|r| {
            let mut h = History::open(&db_path(self.dir.as_deref())?)?;
            h.record(&r)
        });
        match done {
            Ok(id) => Recorded::Id(id),
            Err(e) => {
                // A result directory's own problem concerns that run only; the
                // database's, every later one.
                if !matches!(e, HistoryError::ResultDir { .. }) {
                    self.failed.store(true, Ordering::Relaxed);
                }
                Recorded::Failed(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::tests::write_result;

    #[test]
    fn a_malformed_label_is_refused_before_anything_runs() {
        let e = Recorder::new(false, None, &["env".into()]).unwrap_err();
        assert!(e.to_string().contains("--label `env`"), "{e}");
        assert!(Recorder::new(false, None, &["env=staging".into()]).is_ok());
    }

    #[test]
    fn no_history_records_nothing_and_creates_no_database() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("db");
        let r = Recorder::new(true, Some(db.clone()), &[]).unwrap();
        assert!(matches!(r.record(d.path(), Kind::Run), Recorded::Skipped));
        assert!(!db.exists());
    }

    #[test]
    fn a_bad_result_directory_fails_that_run_only_and_a_bad_database_every_later_one() {
        let d = tempfile::tempdir().unwrap();
        let not_a_result = d.path().join("empty");
        std::fs::create_dir(&not_a_result).unwrap();
        let r = Recorder::new(false, Some(d.path().join("db")), &[]).unwrap();
        assert!(matches!(
            r.record(&not_a_result, Kind::Run),
            Recorded::Failed(HistoryError::ResultDir { .. })
        ));
        assert!(
            matches!(r.record(&not_a_result, Kind::Run), Recorded::Failed(_)),
            "asked again: the directory's problem is its own"
        );
        // A history "directory" that is a file: the database cannot be opened.
        let file = d.path().join("a-file");
        std::fs::write(&file, "x").unwrap();
        let r = Recorder::new(false, Some(file), &[]).unwrap();
        let result = d.path().join("r");
        write_result(
            &result,
            "검색",
            "2026-11-20T10:00:00Z",
            30.0,
            serde_json::Value::Null,
        );
        assert!(matches!(r.record(&result, Kind::Run), Recorded::Failed(_)));
        let again = r.clone();
        assert!(
            matches!(again.record(&result, Kind::Run), Recorded::Skipped),
            "not asked twice"
        );
        // The same directory into a usable database: recorded, with the given label.
        let ok = Recorder::new(false, Some(d.path().join("db")), &["env=스테이징".into()]).unwrap();
        let Recorded::Id(id) = ok.record(&result, Kind::Run) else {
            panic!("not recorded")
        };
        let h = History::open(&db_path(Some(&d.path().join("db"))).unwrap()).unwrap();
        let run = h.get(id).unwrap().unwrap();
        assert_eq!(
            run.record.labels.get("env").map(String::as_str),
            Some("스테이징")
        );
    }
}
