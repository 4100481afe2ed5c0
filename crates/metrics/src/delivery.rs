//! What a run's outputs delivered: the live outputs' seconds sent and dropped, the
//! raw per-request output's lines written and dropped. Measured while the run goes
//! on (by `pado-outputs`) and stored in `run.json` and `summary.json`; kept here so
//! the outputs report them without depending on the result-directory code.

use serde::{Deserialize, Serialize};

/// What one live output delivered during the run (`run.json` and `summary.json`
/// `outputs[]`): a store that was down or slow shows here, not in the run's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OutputMeta {
    /// `prometheus`, `influxdb` or `otlp`.
    pub kind: String,
    /// Where (without credentials).
    pub url: String,
    /// Seconds the store accepted.
    pub seconds_sent: u64,
    /// Seconds that never reached it: the buffer overflowed, the store refused them,
    /// or the end-of-run flush ran out of time.
    pub seconds_dropped: u64,
    /// Writes the store accepted.
    pub writes: u64,
    /// Writes that failed and were tried again.
    pub retries: u64,
    /// The last failure, if any (never holds a token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

impl OutputMeta {
    /// The warning line for an output that lost seconds or failed, if it did.
    pub fn warning(&self) -> Option<String> {
        if self.seconds_dropped == 0 && self.last_error.is_none() {
            return None;
        }
        let mut w = format!(
            "output {} {}: {} of {} seconds delivered, {} dropped",
            self.kind,
            self.url,
            self.seconds_sent,
            self.seconds_sent + self.seconds_dropped,
            self.seconds_dropped
        );
        if let Some(e) = &self.last_error {
            w.push_str(&format!(" (last error: {e})"));
        }
        Some(w)
    }
}

/// What the raw per-request output wrote (`run.json` and `summary.json`
/// `raw_output`): a line per request, unless the writer fell behind the load and
/// some were dropped (counted here, never waited for).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RawOutputMeta {
    /// `raw-json` or `raw-csv`.
    pub kind: String,
    /// The file, as given on the command line.
    pub path: String,
    /// Lines written, one per request.
    pub lines_written: u64,
    /// Requests that have no line: the writer had fallen behind, or writing failed.
    pub lines_dropped: u64,
    /// Why writing stopped, if it did (the file system's error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl RawOutputMeta {
    /// The warning line for a raw output that lost lines, if it did.
    pub fn warning(&self) -> Option<String> {
        if self.lines_dropped == 0 && self.error.is_none() {
            return None;
        }
        let mut w = format!(
            "output {} {}: {} of {} requests written, {} dropped (the writer could not keep up with the load{})",
            self.kind,
            self.path,
            self.lines_written,
            self.lines_written + self.lines_dropped,
            self.lines_dropped,
            if self.error.is_some() { " or writing failed" } else { "" }
        );
        if let Some(e) = &self.error {
            w.push_str(&format!(": {e}"));
        }
        Some(w)
    }
}
