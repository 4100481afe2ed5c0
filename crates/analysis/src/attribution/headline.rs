//! The bottleneck table of one run in a line: its top verdict as a short phrase
//! with its evidence ("DB pool HikariPool-1: 10/10 active, 42 pending" / "every
//! connection in use with requests waiting for one"), or "no limit found" and why.
//! An experiment shows one such line per point, so that the limit can be seen
//! moving as the knob changes ("at 1 pod: ingress CPU; at 3 pods: the database
//! pool"). It reads the table the run's report already computed (`bottlenecks` in
//! `summary.json`), never a second analysis of its own.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Attribution, Component, Verdict};

/// The phrase of a run whose table found nothing saturated, or that had none.
pub const NO_LIMIT: &str = "no limit found";

/// One run's limit in a line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Headline {
    /// The limit and its state (`DB pool HikariPool-1: 4/4 active, 4 pending`), or
    /// [`NO_LIMIT`].
    pub phrase: String,
    /// The limiting component's name, when there is one.
    pub component: Option<String>,
    /// Why: the table's evidence for the limit, or why there is none.
    pub evidence: String,
}

/// Why a run's verdict could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HeadlineError {
    /// The run wrote no `summary.json`: it did not finish writing its report.
    #[error("{}: no summary.json: the run did not finish writing its report", .dir.display())]
    NoSummary {
        /// The result directory.
        dir: PathBuf,
    },
    /// `summary.json` could not be read.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// `summary.json` is not the JSON pado writes.
    #[error("{}:{line}:{column}: {message}", .path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Line of the error (1-based).
        line: usize,
        /// Column of the error (1-based).
        column: usize,
        /// What was wrong, in serde's words (it names the field).
        message: String,
    },
}

/// The part of `summary.json` this reads.
#[derive(Deserialize)]
struct WithBottlenecks {
    #[serde(default)]
    bottlenecks: Option<Attribution>,
}

/// The headline of the finished run in result directory `dir`, from the bottleneck
/// table in its `summary.json` (a run without `observe:` has none: "no limit
/// found", saying so).
pub fn headline_of_run(dir: &Path) -> Result<Headline, HeadlineError> {
    let path = dir.join(pado_results::result_dir::SUMMARY_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(HeadlineError::NoSummary {
                dir: dir.to_path_buf(),
            })
        }
        Err(source) => return Err(HeadlineError::Io { path, source }),
    };
    let s: WithBottlenecks = serde_json::from_str(&text).map_err(|e| HeadlineError::Parse {
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
        path,
    })?;
    Ok(headline(s.bottlenecks.as_ref()))
}

/// The headline of a bottleneck table: its first limit (a component saturated with
/// nothing it waits on saturated), else its first component busy throughout, else
/// [`NO_LIMIT`] with the reason. Other limits at the same point are counted in the
/// phrase (`… (and 1 more)`).
pub fn headline(table: Option<&Attribution>) -> Headline {
    let Some(a) = table else {
        return Headline {
            phrase: NO_LIMIT.into(),
            component: None,
            evidence: "the target was not observed (no `observe:` endpoints), so nothing says what was full".into(),
        };
    };
    let many_endpoints = a.endpoints.len() > 1;
    let named = |c: &Component| {
        if many_endpoints {
            format!("{} ({})", c.component, c.endpoint)
        } else {
            c.component.clone()
        }
    };
    let of = |v: Verdict| a.components.iter().filter(move |c| c.verdict == v);
    let (top, others, suffix) = match of(Verdict::Yes).next() {
        Some(top) => (top, of(Verdict::Yes).count() - 1, ""),
        None => match of(Verdict::BusyThroughout).next() {
            Some(top) => (
                top,
                of(Verdict::BusyThroughout).count() - 1,
                " (busy throughout)",
            ),
            None => {
                let evidence = if a.saturated_run {
                    "no observed component was saturated where throughput stopped growing: the limit is in something not scraped"
                } else {
                    "the run never saturated, and no observed component was full at its peak load"
                };
                return Headline {
                    phrase: NO_LIMIT.into(),
                    component: None,
                    evidence: evidence.into(),
                };
            }
        },
    };
    let more = if others > 0 {
        format!(" (and {others} more)")
    } else {
        String::new()
    };
    let state = if top.state.is_empty() {
        String::new()
    } else {
        format!(": {}", top.state)
    };
    Headline {
        phrase: format!("{}{state}{suffix}{more}", named(top)),
        component: Some(named(top)),
        evidence: top.evidence.clone(),
    }
}

#[cfg(test)]
mod tests;
