//! `failures.jsonl`: the failed-request samples of a run
//! ([`FailureSample`](pado_metrics::FailureSample)), one JSON object a line, at
//! most [`SAMPLES_PER_KIND`](pado_metrics::failure::SAMPLES_PER_KIND) per (step,
//! category) whatever the run's length.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};

use pado_metrics::FailureSample;

use crate::result_dir::{ResultDir, ResultError};

/// The file in a result directory.
pub const FAILURES_FILE: &str = "failures.jsonl";

impl ResultDir {
    /// Write `failures.jsonl`: one sample per line, in the order given.
    pub fn write_failures(&self, samples: &[FailureSample]) -> Result<(), ResultError> {
        let p = self.path().join(FAILURES_FILE);
        let io = |e: std::io::Error| ResultError::Io {
            path: p.clone(),
            source: e,
        };
        let mut w = BufWriter::new(File::create(&p).map_err(io)?);
        for s in samples {
            let line = serde_json::to_string(s).map_err(|e| ResultError::Format {
                path: p.clone(),
                line: 0,
                message: e.to_string(),
            })?;
            writeln!(w, "{line}").map_err(io)?;
        }
        w.flush().map_err(io)
    }

    /// Read `failures.jsonl`; empty when the run wrote none (no failures, or a result
    /// directory from before pado kept samples).
    pub fn read_failures(&self) -> Result<Vec<FailureSample>, ResultError> {
        let p = self.path().join(FAILURES_FILE);
        let f = match File::open(&p) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(ResultError::Io { path: p, source: e }),
        };
        let mut out = Vec::new();
        for (i, line) in BufReader::new(f).lines().enumerate() {
            let line = line.map_err(|e| ResultError::Io {
                path: p.clone(),
                source: e,
            })?;
            if line.trim().is_empty() {
                continue;
            }
            let s = serde_json::from_str(&line).map_err(|e| ResultError::Format {
                path: p.clone(),
                line: i + 1,
                message: e.to_string(),
            })?;
            out.push(s);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_the_file() {
        let dir = tempfile::Builder::new()
            .prefix("pado-failures-")
            .tempdir()
            .unwrap();
        let rd = ResultDir::create(dir.path()).unwrap();
        assert!(rd.read_failures().unwrap().is_empty());
        let x = FailureSample {
            step: "GET /a".into(),
            category: "check_failed".into(),
            second: 3,
            check: Some("GET /a: status is 200".into()),
            actual: Some("got 401".into()),
            body: "no \"token\"".into(),
            ..Default::default()
        };
        let reset = FailureSample {
            step: "b".into(),
            category: "reset".into(),
            second: 1,
            ..Default::default()
        };
        rd.write_failures(&[x.clone(), reset.clone()]).unwrap();
        assert_eq!(rd.read_failures().unwrap(), vec![x, reset]);
    }
}
