//! A result directory's reports: `summary.json`, `report.html` and the asked-for
//! exports, written from its files (after a run, for `pado report`, after a merge).

use std::path::Path;

use pado_report::hdr_export::{HdrExportError, HDR_LOG_FILE};
use pado_report::{LoadedRun, Summary};
use pado_results::result_dir::ResultError;
use pado_results::{ResultDir, StageMark};

use crate::SessionError;

/// The reports of a result directory: its summary, and the first file that could
/// not be written (full disk, read-only directory). The summary is still worth
/// printing then, and the error comes after it.
#[derive(Debug)]
pub struct Written {
    /// The summary (also in `summary.json` unless writing it failed).
    pub summary: Summary,
    /// The first result file that could not be written.
    pub write_error: Option<SessionError>,
}

/// Write summary.json, report.html (unless `html` is false) and the asked-for
/// exports into a result directory, from its files only. Only a directory that
/// cannot be read or summarised is an `Err`.
pub fn write_reports(
    d: &ResultDir,
    html: bool,
    exports: &[String],
    windows: &[StageMark],
) -> Result<Written, SessionError> {
    let run = pado_report::load_with_windows(d, windows).map_err(SessionError::io)?;
    write_loaded_reports(d, &run, html, exports)
}

/// [`write_reports`] of a run already loaded (a merge folds its seconds as it
/// writes them).
pub fn write_loaded_reports(
    d: &ResultDir,
    run: &LoadedRun,
    html: bool,
    exports: &[String],
) -> Result<Written, SessionError> {
    let summary = pado_report::build(run).map_err(SessionError::io)?;
    let written = write_files(d, run, &summary, html, exports);
    let write_error = written.err().map(|e| {
        SessionError::Io(format!(
            "could not write the result files ({e}); the summary printed above is not saved"
        ))
    });
    Ok(Written {
        summary,
        write_error,
    })
}

fn write_files(
    d: &ResultDir,
    run: &LoadedRun,
    summary: &Summary,
    html: bool,
    exports: &[String],
) -> Result<(), ResultError> {
    d.write_json(pado_results::result_dir::SUMMARY_FILE, summary)?;
    if html {
        d.write_text("report.html", &pado_report::html::render_html(run, summary))?;
    }
    for e in exports {
        match e.as_str() {
            "csv" => d.write_text("timeline.csv", &pado_report::csv_export::timeline_csv(run))?,
            "junit" => d.write_text("junit.xml", &pado_report::junit::junit_xml(summary))?,
            "hdr" => {
                let log = pado_report::hdr_export::interval_log(d, &run.meta)
                    .map_err(|e| hdr_error(d, e))?;
                d.write_text(HDR_LOG_FILE, &log)?
            }
            _ => {}
        }
    }
    Ok(())
}

/// An interval log that could not be made, as the result directory's error (a
/// directory that cannot be read is one already; a histogram or a start that does
/// not fit the format is the log's).
fn hdr_error(d: &ResultDir, e: HdrExportError) -> ResultError {
    match e {
        HdrExportError::Result(r) => r,
        other => ResultError::Format {
            path: d.path().join(HDR_LOG_FILE),
            line: 1,
            message: other.to_string(),
        },
    }
}

/// What `pado report` found in a result directory.
#[derive(Debug)]
pub enum Reported {
    /// A finished run: its reports were (re)written.
    Written(Written),
    /// A run is still writing the directory: the summary of the seconds so far,
    /// nothing written into it (its own reports come at its end).
    InProgress(Summary),
}

/// `pado report`: the reports of the result directory `dir` (re)written, with
/// `exports` and the named time `windows`, unless a run still owns it.
pub fn report(
    dir: &Path,
    exports: &[String],
    windows: &[StageMark],
) -> Result<Reported, SessionError> {
    let d = ResultDir::open(dir).map_err(|e| SessionError::invalid(e.to_string()))?;
    let run = pado_report::load_with_windows(&d, windows).map_err(SessionError::io)?;
    if run.in_progress {
        let summary = pado_report::build(&run).map_err(SessionError::io)?;
        return Ok(Reported::InProgress(summary));
    }
    Ok(Reported::Written(write_loaded_reports(
        &d, &run, true, exports,
    )?))
}
