//! Which runs `pado trend` reads and what it reads of each: the latest runs of a
//! test, each one's recorded figure, and the per-second values (from its result
//! directory) of only the runs the verdict judges: the latest and the `--baseline`
//! runs before it that have a value. The judgement itself is
//! `pado_report::trend`'s; the command line prints. An experiment's points are
//! read from their directories instead ([`trend_of_dirs`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use pado_report::trend::{per_second, LlmMetric, TrendMetric, TrendPoint};

use crate::{History, HistoryError, LlmRecord, RunRecord};

/// What `pado trend NAME` asks for.
#[derive(Clone, Debug)]
pub struct TrendQuery<'a> {
    /// The test's name.
    pub name: &'a str,
    /// The metric followed.
    pub metric: TrendMetric,
    /// One step's figures instead of the whole run's.
    pub step: Option<&'a str>,
    /// At most this many of the latest runs (at least 2 are read).
    pub limit: usize,
    /// How many earlier runs with a value the latest is judged against (1 or more).
    pub baseline: usize,
}

/// Why the runs of a trend could not be selected.
#[derive(Debug, thiserror::Error)]
pub enum TrendError {
    /// `--baseline 0`.
    #[error("--baseline 0: give 1 or more runs")]
    NoBaseline,
    /// The database could not be read.
    #[error("history: {0}")]
    History(HistoryError),
    /// No run of that name is recorded.
    #[error("no runs named `{name}` in {} (`pado history` lists the names)", db.display())]
    NoRuns {
        /// The name asked for.
        name: String,
        /// The database read.
        db: PathBuf,
    },
    /// No run of the test has the step asked for.
    #[error("--step {step}: no run of `{name}` has this step")]
    NoSuchStep {
        /// The step asked for.
        step: String,
        /// The test's name.
        name: String,
    },
}

impl TrendError {
    /// Whether the arguments are at fault (invalid usage) rather than the database.
    pub fn is_usage(&self) -> bool {
        !matches!(self, TrendError::History(_))
    }
}

/// The trend's points, oldest first, and a warning line for each judged run whose
/// result directory could not be read (its recorded figure is used instead).
#[derive(Debug)]
pub struct TrendRuns {
    /// One point per run.
    pub points: Vec<TrendPoint>,
    /// What the caller tells on stderr, in order.
    pub warnings: Vec<String>,
}

impl TrendQuery<'_> {
    /// The query's own rules, checked before any database is opened (so a bad
    /// argument is said as such, whatever the history holds).
    pub fn check(&self) -> Result<(), TrendError> {
        if self.baseline == 0 {
            return Err(TrendError::NoBaseline);
        }
        Ok(())
    }
}

/// The runs of `q.name` in `h` as trend points.
pub fn trend_runs(h: &History, q: &TrendQuery<'_>) -> Result<TrendRuns, TrendError> {
    q.check()?;
    let runs = h
        .runs_named(q.name, Some(q.limit.max(2)))
        .map_err(TrendError::History)?;
    if runs.is_empty() {
        return Err(TrendError::NoRuns {
            name: q.name.to_string(),
            db: h.path().to_path_buf(),
        });
    }
    if let Some(s) = q.step {
        if !runs
            .iter()
            .any(|r| r.record.steps.iter().any(|x| x.step == s))
        {
            return Err(TrendError::NoSuchStep {
                step: s.to_string(),
                name: q.name.to_string(),
            });
        }
    }
    let records: Vec<&RunRecord> = runs.iter().map(|r| &r.record).collect();
    let judged = judged_runs(&records, q.metric, q.step, q.baseline);
    let mut warnings = Vec::new();
    let points = runs
        .iter()
        .enumerate()
        .map(|(i, r)| TrendPoint {
            id: r.id,
            started_at: r.record.started_at.clone(),
            labels: r
                .record
                .labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
            value: recorded(&r.record, q.metric, q.step),
            dir_gone: !r.record.result_dir.join("run.json").is_file(),
            seconds: if judged.contains(&i) {
                seconds_of(&r.record, q.metric, q.step, &mut warnings)
            } else {
                None
            },
        })
        .collect();
    Ok(TrendRuns { points, warnings })
}

/// Runs given by their result directories (an experiment's points, in knob order)
/// as trend points, read from the directories rather than the history: each
/// labelled with its `(key, value)` and numbered from 1 in the order given. A
/// directory that cannot be read is left out with a warning.
pub fn trend_of_dirs(
    dirs: &[((String, String), PathBuf)],
    metric: TrendMetric,
    step: Option<&str>,
) -> TrendRuns {
    let mut warnings = Vec::new();
    let mut points = Vec::new();
    for (i, ((k, v), dir)) in dirs.iter().enumerate() {
        let labels = BTreeMap::from([(k.clone(), v.clone())]);
        match RunRecord::from_result_dir(dir, None, labels) {
            Ok(r) => points.push(TrendPoint {
                id: i as i64 + 1,
                started_at: r.started_at.clone(),
                labels: format!("{k}={v}"),
                value: recorded(&r, metric, step),
                dir_gone: false,
                seconds: seconds_of(&r, metric, step, &mut warnings),
            }),
            Err(e) => warnings.push(format!("{k}={v}: {e}; left out")),
        }
    }
    TrendRuns { points, warnings }
}

/// The indexes of the runs the verdict reads (as `trend` picks them): the
/// `baseline` latest runs before the last that have a value, and the last.
fn judged_runs(
    runs: &[&RunRecord],
    metric: TrendMetric,
    step: Option<&str>,
    baseline: usize,
) -> Vec<usize> {
    let mut judged: Vec<usize> = (0..runs.len().saturating_sub(1))
        .rev()
        .filter(|&i| recorded(runs[i], metric, step).is_some())
        .take(baseline)
        .collect();
    judged.push(runs.len() - 1);
    judged
}

/// The recorded figure of `metric` (for a step, that step's).
fn recorded(r: &RunRecord, metric: TrendMetric, step: Option<&str>) -> Option<f64> {
    use TrendMetric as M;
    match step {
        None => match metric {
            M::P50 => r.p50_ms,
            M::P95 => r.p95_ms,
            M::P99 => r.p99_ms,
            M::Rps => Some(r.rps),
            M::Failed => Some(r.failed_rate * 100.0),
            M::Llm(m) => llm_recorded(r.llm.as_ref()?, m),
        },
        Some(s) => {
            let st = r.steps.iter().find(|x| x.step == s)?;
            match metric {
                M::P50 => st.p50_ms,
                M::P95 => st.p95_ms,
                M::P99 => st.p99_ms,
                M::Rps => Some(st.rps),
                M::Failed => Some(st.failed_rate * 100.0),
                M::Llm(m) => llm_recorded(st.llm.as_ref()?, m),
            }
        }
    }
}

/// The recorded LLM figure `m`.
fn llm_recorded(l: &LlmRecord, m: LlmMetric) -> Option<f64> {
    use LlmMetric as M;
    let l = &l.figures;
    match m {
        M::TtftP50 => l.ttft_p50_ms,
        M::TtftP95 => l.ttft_p95_ms,
        M::TtftP99 => l.ttft_p99_ms,
        M::ItlP50 => l.itl_p50_ms,
        M::ItlP95 => l.itl_p95_ms,
        M::ItlP99 => l.itl_p99_ms,
        M::TpotP50 => l.tpot_p50_ms,
        M::TpotP95 => l.tpot_p95_ms,
        M::TokensPerS => l.tokens_per_s,
    }
}

/// The per-second values of a recorded run from its result directory, `None`
/// when the directory is gone, or unreadable (with a warning).
fn seconds_of(
    r: &RunRecord,
    metric: TrendMetric,
    step: Option<&str>,
    warnings: &mut Vec<String>,
) -> Option<Vec<f64>> {
    let dir = pado_results::ResultDir::open(&r.result_dir).ok()?;
    match pado_report::load(&dir) {
        Ok(run) => Some(per_second(&run, metric, step)),
        Err(e) => {
            warnings.push(format!(
                "{}: {e}; its recorded figure is used",
                r.result_dir.display()
            ));
            None
        }
    }
}

/// Where `pado trend` writes its chart unless `--html` says:
/// `pado-results/trend-NAME-METRIC.html`, the name's letters and digits kept
/// (Hangul too), anything else `-`, at most 60 characters.
pub fn default_chart_path(name: &str, metric: &str) -> PathBuf {
    let part: String = name
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '-' })
        .collect();
    let part: String = part.trim_matches('-').chars().take(60).collect();
    PathBuf::from("pado-results").join(format!("trend-{part}-{metric}.html"))
}

#[cfg(test)]
mod tests;
