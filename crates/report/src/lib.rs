//! Reports read result directories, never the engine: the end-of-run summary
//! ([`summary`], written as `summary.json`) and its terminal rendering ([`text`]), the
//! HTML report ([`html`]) and exports ([`csv_export`], [`junit`]). [`load`] streams
//! the timeline once ([`timeline::RunFold`]), keeping the run's totals, the stage rows
//! and a compact point per second, so memory stays bounded for any run length.

pub mod compare;
pub mod csv_export;
pub mod experiment;
pub mod hdr_export;
pub mod html;
pub mod junit;
pub mod k6_summary;
pub mod stability;
pub mod stages;
pub mod summary;
pub mod text;
pub mod timeline;
pub mod trend;

use pado_results::ResultDir;

pub use summary::{
    build, load, load_folded, load_with_windows, GeneratorSummary, LoadedRun, ReportError,
    StepSummary, Summary, WsSummary, GENERATOR_DELAYED, GENERATOR_SATURATED,
};
pub use text::{render, TextOptions};
pub use timeline::{PointLatency, PointStats, RunFold, SecondPoint};

/// Build the summary of a result directory, write `summary.json` into it and return it.
pub fn write_summary(dir: &ResultDir) -> Result<Summary, ReportError> {
    let run = load(dir)?;
    let s = build(&run)?;
    dir.write_json(pado_results::result_dir::SUMMARY_FILE, &s)?;
    Ok(s)
}
