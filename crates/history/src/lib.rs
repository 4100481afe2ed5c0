//! Run history: every run pado makes (and every `find-capacity` step, every merged
//! distributed run) recorded in an embedded SQLite database under the user's data
//! directory, so runs can be listed, compared by id (`last`, `best`, `label:k=v`)
//! and followed over time without finding their directories again by hand.
//!
//! What is recorded comes from the result directory alone (`run.json`,
//! `summary.json`), so a live run, a merge and `pado history rebuild` of old
//! directories record the same thing. The database is WAL-journalled, each write is
//! one transaction, and a busy database is waited for: many runs may record at
//! once. Schema changes are versioned migrations (`PRAGMA user_version`).

mod compare_refs;
mod db;
mod error;
mod git;
mod location;
mod query;
mod rebuild;
mod record;
mod recorder;
mod refs;
mod schema;
mod trend_runs;

pub use compare_refs::{
    earlier_records, earlier_runs, resolve_compared, CompareRefError, EARLIER_RUNS,
};
pub use db::History;
pub use error::HistoryError;
pub use git::git_commit;
pub use location::{db_path, DB_FILE};
pub use query::{parse_label, parse_since, Filter};
pub use rebuild::{argument, only_files, rebuild_one, result_dirs_in, Argument, Rebuilt};
pub use record::{scenario_hash, Kind, LlmRecord, RunRecord, StepFigures};
pub use recorder::{Recorded, Recorder};
pub use refs::RunRef;
pub use schema::SCHEMA_VERSION;
pub use trend_runs::{
    default_chart_path, trend_of_dirs, trend_runs, TrendError, TrendQuery, TrendRuns,
};

/// One recorded run as read back: its id and what was recorded.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Run {
    /// The run's id in this database (what `pado compare 12` takes).
    pub id: i64,
    /// What was recorded.
    #[serde(flatten)]
    pub record: RunRecord,
}
