//! Reports read result directories, never the engine: the end-of-run summary
//! ([`summary`], written as `summary.json`) and its terminal rendering ([`text`]).

pub mod summary;
pub mod text;

use pado_metrics::ResultDir;

pub use summary::{build, load, LoadedRun, ReportError, StepSummary, Summary};
pub use text::{render, TextOptions};

/// Build the summary of a result directory, write `summary.json` into it and return it.
pub fn write_summary(dir: &ResultDir) -> Result<Summary, ReportError> {
    let run = load(dir)?;
    let s = build(&run)?;
    dir.write_json(pado_metrics::result_dir::SUMMARY_FILE, &s)?;
    Ok(s)
}
