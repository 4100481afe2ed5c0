//! The noise between runs in a comparison: each row's floor (the larger of
//! `--min-change` and, when the history holds enough earlier runs of the test, the
//! spread of their recorded figures), and the verdicts it holds back. The rank test
//! sees only the seconds within each run; identical runs also differ as wholes,
//! and a change smaller than that is no finding.

use std::collections::BTreeMap;

use pado_analysis::between_runs::{run_spread, ChangeFloor, DEFAULT_MIN_CHANGE_PCT};

use super::{CompareRow, Verdict};

/// The recorded figures of one earlier run of the same test, by the rows that
/// show them (the history records the overall and each step's figures, not every
/// row's).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EarlierRun {
    figures: BTreeMap<(String, String), f64>,
}

impl EarlierRun {
    /// A run's overall figures: latency percentiles in ms, mean req/s and its
    /// error rate in % (as `pado history` records them).
    pub fn overall(
        p50_ms: Option<f64>,
        p95_ms: Option<f64>,
        p99_ms: Option<f64>,
        rps: f64,
        error_pct: f64,
    ) -> EarlierRun {
        let mut r = EarlierRun::default();
        for (metric, v) in [
            ("latency p50 ms", p50_ms),
            ("latency p95 ms", p95_ms),
            ("latency p99 ms", p99_ms),
            ("req/s (mean)", Some(rps)),
            ("error rate %", Some(error_pct)),
        ] {
            r.put("overall", metric, v);
        }
        r
    }

    /// Adds one step's figures: its req/s and p95 in ms.
    pub fn with_step(mut self, step: &str, rps: f64, p95_ms: Option<f64>) -> EarlierRun {
        let scope = format!("step {step}");
        self.put(&scope, "req/s", Some(rps));
        self.put(&scope, "p95 ms", p95_ms);
        self
    }

    /// Adds the LLM figures of all `sse:` steps (`step` `None`) or of one step, as
    /// the history records them, under the rows `pado compare` shows them in: so
    /// an LLM row's floor is the spread of its own figure between earlier runs,
    /// not `--min-change` alone.
    pub fn with_llm(mut self, step: Option<&str>, l: &EarlierLlm) -> EarlierRun {
        let scope = match step {
            Some(s) => format!("step {s}"),
            None => "overall".to_string(),
        };
        for (metric, v) in l.by_row() {
            self.put(&scope, metric, v);
        }
        self
    }

    fn put(&mut self, scope: &str, metric: &str, v: Option<f64>) {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            self.figures.insert((scope.into(), metric.into()), v);
        }
    }

    fn get(&self, scope: &str, metric: &str) -> Option<f64> {
        self.figures
            .get(&(scope.to_string(), metric.to_string()))
            .copied()
    }
}

/// One earlier run's LLM figures of one scope (all `sse:` steps, or one step), as
/// the history records them: the percentiles in ms and both tokens per second.
/// The history's own record (`pado_history::LlmRecord`) is this and the token count.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct EarlierLlm {
    /// `llm_ttft` median, ms.
    pub ttft_p50_ms: Option<f64>,
    /// `llm_ttft` 95th percentile, ms.
    pub ttft_p95_ms: Option<f64>,
    /// `llm_ttft` 99th percentile, ms.
    pub ttft_p99_ms: Option<f64>,
    /// `llm_itl` median, ms.
    pub itl_p50_ms: Option<f64>,
    /// `llm_itl` 95th percentile, ms.
    pub itl_p95_ms: Option<f64>,
    /// `llm_itl` 99th percentile, ms.
    pub itl_p99_ms: Option<f64>,
    /// `llm_tpot` median, ms.
    pub tpot_p50_ms: Option<f64>,
    /// `llm_tpot` 95th percentile, ms.
    pub tpot_p95_ms: Option<f64>,
    /// Output tokens per second of the run.
    pub tokens_per_s: Option<f64>,
    /// Median of `llm_tokens_per_s` per request.
    pub tokens_per_s_per_request_p50: Option<f64>,
}

impl EarlierLlm {
    /// Each figure under the name of the compare row that shows it.
    fn by_row(&self) -> [(&'static str, Option<f64>); 10] {
        use super::llm::{row_name, Figure, TOKENS_PER_S, TOKENS_PER_S_PER_REQUEST};
        [
            (row_name(Figure::Ttft, 0.50), self.ttft_p50_ms),
            (row_name(Figure::Ttft, 0.95), self.ttft_p95_ms),
            (row_name(Figure::Ttft, 0.99), self.ttft_p99_ms),
            (row_name(Figure::Itl, 0.50), self.itl_p50_ms),
            (row_name(Figure::Itl, 0.95), self.itl_p95_ms),
            (row_name(Figure::Itl, 0.99), self.itl_p99_ms),
            (row_name(Figure::Tpot, 0.50), self.tpot_p50_ms),
            (row_name(Figure::Tpot, 0.95), self.tpot_p95_ms),
            (TOKENS_PER_S, self.tokens_per_s),
            (TOKENS_PER_S_PER_REQUEST, self.tokens_per_s_per_request_p50),
        ]
    }
}

/// The recorded figure whose spread between runs stands for a row's: the history
/// keeps latency, not TTFB (most of latency on the same server), the whole run's
/// figures, not each stage's, and the mean req/s, not the per-second ones.
fn recorded_as<'a>(scope: &'a str, metric: &'a str) -> (&'a str, &'a str) {
    if scope == "overall" {
        return match metric {
            "ttfb mean ms" | "ttfb p50 ms" => ("overall", "latency p50 ms"),
            "ttfb p95 ms" => ("overall", "latency p95 ms"),
            "ttfb p99 ms" => ("overall", "latency p99 ms"),
            m if m.starts_with("req/s") => ("overall", "req/s (mean)"),
            m => ("overall", m),
        };
    }
    if scope.starts_with("stage ") {
        return match metric {
            "p95 ms" => ("overall", "latency p95 ms"),
            "req/s" => ("overall", "req/s (mean)"),
            m => (scope, m),
        };
    }
    (scope, metric)
}

/// What a change must reach to be called better or worse, for a whole
/// comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct NoiseFloor {
    /// The minimum practical change in % (`--min-change`).
    pub min_change_pct: f64,
    /// Earlier runs of the same test (not the compared ones), for the spread
    /// between runs where they record the row's figure.
    pub earlier_runs: Vec<EarlierRun>,
}

impl Default for NoiseFloor {
    fn default() -> Self {
        NoiseFloor {
            min_change_pct: DEFAULT_MIN_CHANGE_PCT,
            earlier_runs: Vec::new(),
        }
    }
}

impl NoiseFloor {
    /// The floor of one row: the spread of the earlier runs' figures for it (one
    /// run against one, as compare judges) when enough of them record it, else
    /// `--min-change` alone. A row the history does not record takes the spread
    /// of the nearest figure it does ([`recorded_as`]).
    pub fn of_row(&self, scope: &str, metric: &str) -> ChangeFloor {
        let (scope, metric) = recorded_as(scope, metric);
        let figures: Vec<f64> = self
            .earlier_runs
            .iter()
            .filter_map(|r| r.get(scope, metric))
            .collect();
        ChangeFloor::new(self.min_change_pct, run_spread(&figures, 1))
    }

    /// The floor for the whole comparison, in words: `--min-change`, and where the
    /// earlier runs' spread took over.
    pub fn describe(&self, rows: &[CompareRow]) -> String {
        let base = ChangeFloor::new(self.min_change_pct, None).describe();
        let wider: Vec<String> = rows
            .iter()
            .filter_map(|r| {
                let f = r.floor?;
                f.from_earlier_runs()
                    .then(|| format!("{} {} ±{:.1}%", r.scope, r.metric, f.pct))
            })
            .collect();
        let measured = rows
            .iter()
            .filter_map(|r| r.floor?.earlier_runs.map(|s| s.runs))
            .max();
        match measured {
            None if !self.earlier_runs.is_empty()
                && self.earlier_runs.len() < pado_analysis::between_runs::MIN_EARLIER_RUNS =>
            {
                format!(
                    "{base}; the history holds {} earlier run{} of this test, {} needed to measure the spread between runs",
                    self.earlier_runs.len(),
                    if self.earlier_runs.len() == 1 { "" } else { "s" },
                    pado_analysis::between_runs::MIN_EARLIER_RUNS
                )
            }
            None => base,
            Some(n) if wider.is_empty() => format!(
                "{base}; the spread between the {n} earlier runs of this test is smaller for every row it was measured on"
            ),
            Some(n) => format!(
                "{base}, except where the spread between the {n} earlier runs of this test is larger: {}",
                wider.join(", ")
            ),
        }
    }
}

/// Sets each tested row's floor and turns a verdict whose change does not reach
/// it into "within noise": however sure the per-second test is, identical runs
/// differ by that much.
pub(super) fn apply(rows: &mut [CompareRow], floor: &NoiseFloor) {
    for r in rows {
        if r.verdicts.iter().all(|v| *v == Verdict::NotTested) {
            continue;
        }
        let f = floor.of_row(&r.scope, &r.metric);
        r.floor = Some(f);
        for (v, ch) in r.verdicts.iter_mut().zip(&r.changes) {
            let held_back = matches!(
                v,
                Verdict::Better
                    | Verdict::Worse
                    | Verdict::FewSeconds
                    | Verdict::Mixed
                    | Verdict::TooFewSeconds
            ) && !f.reached_by(*ch);
            if held_back {
                *v = Verdict::WithinNoise;
            }
        }
    }
}
