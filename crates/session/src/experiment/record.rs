//! `experiment.json`: what an experiment did and found, the contract `pado report`,
//! `pado compare` and `pado trend` read an experiment's directory through (see
//! `docs/result-format.md`). Each point names its runs' result directories as paths
//! relative to the experiment's directory, so the whole folder can be moved.

use std::path::{Path, PathBuf};

use pado_report::experiment::{ExperimentRow, ExperimentTable};
use serde::{Deserialize, Serialize};

/// The file's name in the experiment's directory.
pub const FILE: &str = "experiment.json";
/// The table as text, beside it.
pub const TEXT_FILE: &str = "experiment.txt";
/// The table and its chart as a self-contained page, beside it.
pub const HTML_FILE: &str = "experiment.html";
/// The version of this file's layout.
pub const FORMAT: u32 = 1;

/// Why `experiment.json` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The directory has no `experiment.json` (it is not an experiment's).
    #[error("{0}: no experiment.json (not an experiment's directory)")]
    Missing(PathBuf),
    /// It could not be read or parsed.
    #[error("{file}: {message}")]
    Bad {
        /// The file.
        file: PathBuf,
        /// Why.
        message: String,
    },
}

/// The whole experiment.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ExperimentRecord {
    /// [`FORMAT`].
    pub format: u32,
    /// The experiment's name (the scenario's `name`, or the file's stem).
    pub name: String,
    /// The knob's name.
    pub knob: String,
    /// The knob's unit, when the file gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// `find_capacity` or `fixed`.
    pub mode: String,
    /// What each point measured (`capacity`, `p95`, `rps`…).
    pub metric: String,
    /// The measured figure's unit (`iterations/s`, `ms`, `req/s`, `share`).
    pub metric_unit: String,
    /// Cost of one unit of the knob, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_per_unit: Option<f64>,
    /// When it started (UTC, RFC 3339).
    pub started_at: String,
    /// When it ended (UTC, RFC 3339).
    pub finished_at: String,
    /// Whether Ctrl-C or SIGTERM stopped it.
    #[serde(default)]
    pub interrupted: bool,
    /// Why it stopped before its last value, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// The points, in the order they ran.
    pub points: Vec<PointRecord>,
    /// How `restore:` went, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore: Option<ActionRecord>,
    /// The scaling fit across the points and its checks, when there were enough.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaling: Option<serde_json::Value>,
}

/// One value of the knob.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct PointRecord {
    /// The knob's value.
    pub value: f64,
    /// `knob=value`, the label its runs carry in the history.
    pub label: String,
    /// The point's directory, relative to the experiment's.
    pub dir: String,
    /// Its runs (one for a fixed load; a search's steps), in order.
    pub runs: Vec<RunLink>,
    /// The figure measured (capacity, or the fixed load's metric); `None` when the
    /// point failed or found none.
    #[serde(default)]
    pub measured: Option<f64>,
    /// The highest rate the target completed at any step (a search's plateau).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_rps: Option<f64>,
    /// How the point's test ended, in words.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub outcome: String,
    /// What limited the target there (the bottleneck table's verdict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// Why the point failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How `apply:` went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply: Option<ActionRecord>,
    /// Seconds `ready:` took to hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_s: Option<f64>,
}

/// One run of a point.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RunLink {
    /// Its result directory, relative to the experiment's.
    pub dir: String,
    /// Its id in the history, when it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<i64>,
    /// For a search's step: its rate, iterations/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// For a search's step: whether the SLA held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<bool>,
}

/// An action as it went (what ran, how it ended); its output is in the point's
/// directory (`apply.log`, `restore.log`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ActionRecord {
    /// Whether it did what it should.
    pub ok: bool,
    /// What ran.
    pub what: String,
    /// How it ended.
    pub result: String,
}

impl From<&super::action::ActionOutcome> for ActionRecord {
    fn from(o: &super::action::ActionOutcome) -> Self {
        ActionRecord {
            ok: o.ok,
            what: o.what.clone(),
            result: o.result.clone(),
        }
    }
}

impl ExperimentRecord {
    /// The result directories of the points, absolute (under `dir`), in knob order:
    /// for a fixed load the point's run, for a search the highest step that held
    /// (the capacity's run). Points without one are left out.
    pub fn point_runs(&self, dir: &Path) -> Vec<(f64, PathBuf)> {
        let mut v: Vec<(f64, PathBuf)> = self
            .points
            .iter()
            .filter_map(|p| {
                let run = if self.mode == "fixed" {
                    p.runs.last()
                } else {
                    p.runs
                        .iter()
                        .filter(|r| r.held == Some(true))
                        .max_by(|a, b| a.rate.unwrap_or(0.0).total_cmp(&b.rate.unwrap_or(0.0)))
                }?;
                Some((p.value, dir.join(&run.dir)))
            })
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v
    }
}

impl ExperimentRecord {
    /// The table the presenters (`pado_report::experiment`) show: one row per
    /// point, in the order they ran.
    pub fn table(&self) -> ExperimentTable {
        let metric = if self.mode == "fixed" {
            format!("{} at fixed load ({})", self.metric, self.metric_unit)
        } else {
            pado_report::experiment::CAPACITY_METRIC.to_string()
        };
        ExperimentTable {
            knob: self.knob.clone(),
            unit: self.unit.clone(),
            metric,
            points: self
                .points
                .iter()
                .map(|p| ExperimentRow {
                    value: p.value,
                    label: String::new(),
                    measured: p.measured,
                    verdict: p.verdict.clone().unwrap_or_default(),
                    run_id: p
                        .runs
                        .iter()
                        .rev()
                        .find_map(|r| r.run_id)
                        .map(|id| id.to_string())
                        .or_else(|| Some(p.dir.clone())),
                    error: p.error.clone(),
                })
                .collect(),
            cost_per_unit: self.cost_per_unit,
        }
    }
}

/// Writes the table as text (`experiment.txt`) and as a page (`experiment.html`),
/// and puts the scaling fit and its checks into the record.
pub fn write_reports(dir: &Path, r: &mut ExperimentRecord) -> std::io::Result<()> {
    let t = r.table();
    let analysis = pado_report::experiment::json(&t);
    r.scaling = Some(analysis);
    std::fs::write(dir.join(TEXT_FILE), pado_report::experiment::text(&t))?;
    std::fs::write(dir.join(HTML_FILE), pado_report::experiment::html(&t))
}

/// Whether `dir` is an experiment's directory.
pub fn is_experiment_dir(dir: &Path) -> bool {
    dir.join(FILE).is_file()
}

/// Reads `dir/experiment.json`.
pub fn read(dir: &Path) -> Result<ExperimentRecord, RecordError> {
    let file = dir.join(FILE);
    if !file.is_file() {
        return Err(RecordError::Missing(dir.to_path_buf()));
    }
    let bad = |message: String| RecordError::Bad {
        file: file.clone(),
        message,
    };
    let text = std::fs::read_to_string(&file).map_err(|e| bad(e.to_string()))?;
    let r: ExperimentRecord = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if r.format > FORMAT {
        return Err(bad(format!(
            "format {} is newer than this pado reads ({FORMAT})",
            r.format
        )));
    }
    Ok(r)
}

/// Writes `dir/experiment.json` (through a temporary file, so a reader never sees
/// half of it).
pub fn write(dir: &Path, r: &ExperimentRecord) -> std::io::Result<()> {
    let tmp = dir.join(format!("{FILE}.tmp"));
    let text = serde_json::to_string_pretty(r).map_err(std::io::Error::other)?;
    std::fs::write(&tmp, text + "\n")?;
    std::fs::rename(&tmp, dir.join(FILE))
}
