//! `pado compare`: the comparison table (metric, baseline, candidate, change %,
//! better/worse) for throughput, error rate, latency and TTFB, overall, per step and
//! per stage, with each change tested against the noise of the per-second values
//! (the method is named in the output) and against the noise between runs (a
//! minimum practical change, or the spread of earlier runs of the same test:
//! `floor`); LLM streams' time to first token, inter-token latency, time per
//! output token and tokens per second, overall and per step (`llm`); events' impact and soak runs' drift side by side. Reads result
//! directories only (the earlier runs' figures come from the caller).
//!
//! Computing and presenting are apart: [`compare`] turns the runs into a plain
//! [`Comparison`] (rows of values, changes and verdicts); [`render_compare`],
//! [`render_compare_json`] and [`render_compare_html`] each present that one value;
//! [`load_runs`] reads the compared directories.

mod compute;
mod floor;
mod html;
mod llm;
mod loaded;
mod percentile_interval;
mod shape;
mod soak;
#[cfg(test)]
mod tests;
mod text;

use pado_analysis::between_runs::ChangeFloor;
use serde::Serialize;

use crate::summary::{LoadedRun, Summary};

pub use compute::{compare, compare_with};
pub use floor::{EarlierLlm, EarlierRun, NoiseFloor};
pub use html::render_compare_html;
pub use loaded::{load_runs, LoadError, Loaded};
pub use text::render_compare;

/// Whether a change is good news.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The seconds shifted significantly, in the good direction, the run's
    /// overall figure moved the same way, and by at least the row's floor (the
    /// noise between runs).
    Better,
    /// The seconds shifted significantly, in the bad direction, the run's overall
    /// figure moved the same way, and by at least the row's floor.
    Worse,
    /// Not distinguishable from the per-second noise, or a change smaller than the
    /// noise between runs (the row's floor).
    WithinNoise,
    /// Too few (effective) seconds for the rank test to tell anything, and a t-test
    /// on the means did not find the gap beyond the seconds' spread: "within noise"
    /// would be a claim neither can make.
    TooFewSeconds,
    /// Most seconds did not shift, but the overall figure moved by more than the
    /// baseline's whole per-second spread: the change comes from a few seconds
    /// (an error burst, a stall), which the rank test does not weigh.
    FewSeconds,
    /// The seconds shifted significantly one way while the run's overall figure
    /// moved the other: neither better nor worse.
    Mixed,
    /// No per-second samples to test (a single value such as the maximum, or no
    /// value).
    NotTested,
}

impl Verdict {
    /// The mark printed beside the change.
    pub fn mark(self) -> &'static str {
        match self {
            Verdict::Better => "▲ better",
            Verdict::Worse => "▼ worse",
            Verdict::WithinNoise => "~ within noise",
            Verdict::TooFewSeconds => "? too few seconds",
            Verdict::FewSeconds => "! a few seconds",
            Verdict::Mixed => "≠ mixed",
            Verdict::NotTested => "—",
        }
    }

    /// What the mark means, for the legend under the table.
    pub fn meaning(self) -> &'static str {
        match self {
            Verdict::Better | Verdict::Worse => {
                "the seconds shifted significantly and the overall figure moved the same way, by more than the noise between runs"
            }
            Verdict::WithinNoise => {
                "no shift beyond the per-second noise, or a change smaller than the noise between runs"
            }
            Verdict::TooFewSeconds => {
                "too few seconds to judge: even a complete separation of their ranks would not be significant, and the means are not far enough apart for the seconds' spread"
            }
            Verdict::FewSeconds => {
                "most seconds did not shift, but the overall figure moved by more than the baseline's whole per-second range: the change comes from a few seconds"
            }
            Verdict::Mixed => "the seconds shifted one way and the overall figure the other",
            Verdict::NotTested => "a single value (such as the maximum) or no value: not tested",
        }
    }
}

/// One metric across the runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompareRow {
    /// `overall`, `step <name>` or `stage <label>`.
    pub scope: String,
    /// Metric name with its unit.
    pub metric: String,
    /// Value per run (the first is the baseline).
    pub values: Vec<Option<f64>>,
    /// Change against the baseline in %, per run after the first.
    pub changes: Vec<Option<f64>>,
    /// Verdict per run after the first.
    pub verdicts: Vec<Verdict>,
    /// p-values per run after the first.
    pub p_values: Vec<Option<f64>>,
    /// The change a better or worse verdict had to reach (the noise between
    /// runs), and where it came from; `None` for rows not tested.
    pub floor: Option<ChangeFloor>,
}

/// The whole comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// Run labels (directory names), baseline first.
    pub runs: Vec<String>,
    /// How significance was decided.
    pub method: String,
    /// The minimum practical change in % (`--min-change`).
    pub min_change_pct: f64,
    /// The noise between runs, in words: what a change had to reach to be called
    /// better or worse, and where that came from.
    pub noise_between_runs: String,
    /// Rows.
    pub rows: Vec<CompareRow>,
    /// Per run, the component its bottleneck table named as the limit (runs that
    /// observed the target): a fix shows as the limit moving elsewhere.
    pub limits: Vec<Option<String>>,
    /// Per run with a soak analysis (`--soak`, or a run of an hour or more): its
    /// verdict and the finding behind it, e.g. `leak suspected
    /// (process_resident_memory_bytes +8.8 GiB/hour)`: a fixed leak shows as the
    /// verdict turning stable.
    pub soak: Vec<Option<String>>,
    /// Ways the runs differ other than the change under test (name, load shape,
    /// duration): a comparison of different tests measures the tests, not the change.
    pub warnings: Vec<String>,
}

/// One run as the comparison reads it.
pub struct Side<'a> {
    /// Label.
    pub label: String,
    /// Loaded result directory.
    pub run: &'a LoadedRun,
    /// Its summary.
    pub summary: &'a Summary,
}

/// The comparison as pretty JSON (what `pado compare --json` prints): the
/// [`Comparison`] value itself, for scripts.
pub fn render_compare_json(c: &Comparison) -> String {
    serde_json::to_string_pretty(c).unwrap_or_default()
}

/// Letter of run `i` in the output (A is the baseline).
pub(crate) fn letter(i: usize) -> char {
    (b'A' + (i.min(25)) as u8) as char
}

/// The marks the table uses (beyond better/worse/within noise), with what they mean.
pub(crate) fn legend(c: &Comparison) -> Vec<(&'static str, &'static str)> {
    let mut seen = Vec::new();
    for v in c.rows.iter().flat_map(|r| &r.verdicts) {
        if !matches!(v, Verdict::Better | Verdict::Worse | Verdict::WithinNoise)
            && !seen.contains(v)
        {
            seen.push(*v);
        }
    }
    seen.iter().map(|v| (v.mark(), v.meaning())).collect()
}
