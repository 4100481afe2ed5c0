//! What `--output raw-json=FILE` and `--output raw-csv=FILE` name (k6's
//! `--out json=FILE` and `--out csv=FILE` are accepted as the same): the format, the
//! file, and whether it is gzip-compressed (a name ending in `.gz`).

use std::fmt;
use std::path::PathBuf;

/// The line formats of the raw output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawFormat {
    /// One JSON object per line (JSON Lines).
    Json,
    /// CSV with a header line.
    Csv,
}

impl RawFormat {
    /// The kind users write (`raw-json`, `raw-csv`).
    pub fn kind(self) -> &'static str {
        match self {
            RawFormat::Json => "raw-json",
            RawFormat::Csv => "raw-csv",
        }
    }

    /// The format a `--output` kind names: `raw-json`/`json`, `raw-csv`/`csv`.
    pub fn parse(kind: &str) -> Option<RawFormat> {
        match kind {
            "raw-json" | "json" => Some(RawFormat::Json),
            "raw-csv" | "csv" => Some(RawFormat::Csv),
            _ => None,
        }
    }
}

impl fmt::Display for RawFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind())
    }
}

/// Why a raw output was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RawSpecError {
    /// `raw-json=` with nothing after it.
    #[error("`{0}=` needs a file name, e.g. {0}=requests.jsonl (add .gz to compress it)")]
    NoPath(String),
    /// A second raw output.
    #[error("only one raw output per run (`{0}` and `{1}`)")]
    Twice(String, String),
}

/// One raw output: its format and file.
#[derive(Clone, Debug, PartialEq)]
pub struct RawSpec {
    /// JSON lines or CSV.
    pub format: RawFormat,
    /// The file, as given (relative to the working directory).
    pub path: PathBuf,
}

impl RawSpec {
    /// `KIND=FILE` as `--output` takes it: `None` when KIND is not a raw kind (it is
    /// then a live output's), the spec or why it is refused otherwise.
    pub fn parse_flag(s: &str) -> Option<Result<RawSpec, RawSpecError>> {
        let (kind, path) = s.split_once('=')?;
        let format = RawFormat::parse(kind.trim())?;
        let path = path.trim();
        if path.is_empty() {
            return Some(Err(RawSpecError::NoPath(kind.trim().to_string())));
        }
        Some(Ok(RawSpec {
            format,
            path: PathBuf::from(path),
        }))
    }

    /// Whether the file is written gzip-compressed (its name ends in `.gz`).
    pub fn gzip(&self) -> bool {
        self.path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("gz"))
    }

    /// The label people read: `raw-json requests.jsonl`.
    pub fn label(&self) -> String {
        format!("{} {}", self.format, self.path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_kinds_and_their_k6_names_parse_and_live_kinds_are_left_alone() {
        let j = RawSpec::parse_flag("raw-json=out/requests.jsonl")
            .unwrap()
            .unwrap();
        assert_eq!(j.format, RawFormat::Json);
        assert_eq!(j.path, PathBuf::from("out/requests.jsonl"));
        assert!(!j.gzip());
        let c = RawSpec::parse_flag("csv=요청.csv.gz").unwrap().unwrap();
        assert_eq!(c.format, RawFormat::Csv);
        assert!(c.gzip());
        assert_eq!(c.label(), "raw-csv 요청.csv.gz");
        assert_eq!(
            RawSpec::parse_flag("json= ").unwrap(),
            Err(RawSpecError::NoPath("json".into()))
        );
        assert!(RawSpec::parse_flag("prometheus=http://127.0.0.1:9090/api/v1/write").is_none());
        assert!(RawSpec::parse_flag("raw-json").is_none());
    }
}
