//! `pado trend`: one metric of a test across its recorded runs, and whether the
//! latest run regressed against the recent baseline, judged by the same rank test
//! on per-second values as `pado compare` ([`pado_analysis::noise`]), and only
//! when the change is beyond the noise between runs: `--min-change`, or the spread
//! of the baseline runs' figures when it is larger
//! ([`pado_analysis::between_runs`]). The data
//! only, with its text, JSON and HTML presentations; the runs come from the history
//! (the CLI reads them).

mod html;

pub use html::render_trend_html;

use pado_analysis::between_runs::{run_spread, ChangeFloor};
use pado_analysis::noise::{mann_whitney, METHOD};
use serde::Serialize;

use crate::summary::LoadedRun;
use crate::timeline::{LlmPoint, PointStats};

/// The metrics a trend follows: the run's latency, throughput and errors, and an
/// LLM endpoint's figures (`sse: {llm: true}` steps) in the names its thresholds
/// use (`llm_ttft.p95`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrendMetric {
    /// Latency median, ms.
    P50,
    /// Latency 95th percentile, ms.
    P95,
    /// Latency 99th percentile, ms.
    P99,
    /// Requests per second.
    Rps,
    /// Error rate, %.
    Failed,
    /// One of the LLM figures.
    Llm(LlmMetric),
}

/// The LLM figures a trend follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LlmMetric {
    /// `llm_ttft` median, ms.
    TtftP50,
    /// `llm_ttft` 95th percentile, ms.
    TtftP95,
    /// `llm_ttft` 99th percentile, ms.
    TtftP99,
    /// `llm_itl` median, ms.
    ItlP50,
    /// `llm_itl` 95th percentile, ms.
    ItlP95,
    /// `llm_itl` 99th percentile, ms.
    ItlP99,
    /// `llm_tpot` median, ms.
    TpotP50,
    /// `llm_tpot` 95th percentile, ms.
    TpotP95,
    /// Output tokens per second of the run (all streams).
    TokensPerS,
}

/// Each LLM metric: its `--metric` word and its label.
const LLM_METRICS: [(LlmMetric, &str, &str); 9] = [
    (LlmMetric::TtftP50, "llm_ttft.p50", "llm_ttft p50 ms"),
    (LlmMetric::TtftP95, "llm_ttft.p95", "llm_ttft p95 ms"),
    (LlmMetric::TtftP99, "llm_ttft.p99", "llm_ttft p99 ms"),
    (LlmMetric::ItlP50, "llm_itl.p50", "llm_itl p50 ms"),
    (LlmMetric::ItlP95, "llm_itl.p95", "llm_itl p95 ms"),
    (LlmMetric::ItlP99, "llm_itl.p99", "llm_itl p99 ms"),
    (LlmMetric::TpotP50, "llm_tpot.p50", "llm_tpot p50 ms"),
    (LlmMetric::TpotP95, "llm_tpot.p95", "llm_tpot p95 ms"),
    (LlmMetric::TokensPerS, "llm_tokens.rate", "output tokens/s"),
];

/// The `--metric` words, for the message that lists them.
pub const METRIC_WORDS: &str = "p50, p95, p99, rps, failed, llm_ttft.p50, llm_ttft.p95, \
llm_ttft.p99, llm_itl.p50, llm_itl.p95, llm_itl.p99, llm_tpot.p50, llm_tpot.p95 or llm_tokens.rate";

impl LlmMetric {
    fn entry(self) -> &'static (LlmMetric, &'static str, &'static str) {
        LLM_METRICS
            .iter()
            .find(|e| e.0 == self)
            .unwrap_or(&LLM_METRICS[0])
    }

    /// The percentile of a second's (or the run's) histograms, for the
    /// percentile metrics: which figure and which quantile; `None` for the
    /// throughput.
    pub fn percentile(self) -> Option<(LlmFigure, f64)> {
        use LlmFigure as F;
        use LlmMetric as M;
        Some(match self {
            M::TtftP50 => (F::Ttft, 0.50),
            M::TtftP95 => (F::Ttft, 0.95),
            M::TtftP99 => (F::Ttft, 0.99),
            M::ItlP50 => (F::Itl, 0.50),
            M::ItlP95 => (F::Itl, 0.95),
            M::ItlP99 => (F::Itl, 0.99),
            M::TpotP50 => (F::Tpot, 0.50),
            M::TpotP95 => (F::Tpot, 0.95),
            M::TokensPerS => return None,
        })
    }

    /// Its value in one second's LLM figures (`None` when the second has none).
    fn of_second(self, l: Option<&LlmPoint>) -> Option<f64> {
        let Some((fig, q)) = self.percentile() else {
            // A second in which no stream ended delivered no tokens.
            return Some(l.map_or(0.0, |l| l.tokens as f64));
        };
        let p = match fig {
            LlmFigure::Ttft => l?.ttft,
            LlmFigure::Itl => l?.itl,
            LlmFigure::Tpot => l?.tpot,
        }?;
        let us = match q {
            q if q <= 0.5 => p.p50_us,
            q if q <= 0.95 => p.p95_us,
            _ => p.p99_us,
        };
        Some(us as f64 / 1000.0)
    }
}

/// The LLM histograms a percentile metric reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LlmFigure {
    /// Time to first token.
    Ttft,
    /// Inter-token latency.
    Itl,
    /// Time per output token.
    Tpot,
}

impl Serialize for TrendMetric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.word())
    }
}

impl TrendMetric {
    /// The metric a `--metric` word names.
    pub fn parse(s: &str) -> Option<TrendMetric> {
        Some(match s {
            "p50" => TrendMetric::P50,
            "p95" => TrendMetric::P95,
            "p99" => TrendMetric::P99,
            "rps" => TrendMetric::Rps,
            "failed" => TrendMetric::Failed,
            _ => TrendMetric::Llm(LLM_METRICS.iter().find(|e| e.1 == s)?.0),
        })
    }

    /// The `--metric` word naming it (what `--json` shows).
    pub fn word(self) -> &'static str {
        match self {
            TrendMetric::P50 => "p50",
            TrendMetric::P95 => "p95",
            TrendMetric::P99 => "p99",
            TrendMetric::Rps => "rps",
            TrendMetric::Failed => "failed",
            TrendMetric::Llm(m) => m.entry().1,
        }
    }

    /// How people read it, with its unit.
    pub fn label(self) -> &'static str {
        match self {
            TrendMetric::P50 => "latency p50 ms",
            TrendMetric::P95 => "latency p95 ms",
            TrendMetric::P99 => "latency p99 ms",
            TrendMetric::Rps => "req/s",
            TrendMetric::Failed => "error rate %",
            TrendMetric::Llm(m) => m.entry().2,
        }
    }

    /// Whether a higher value is better (throughput) or worse (latency, errors).
    pub fn higher_is_better(self) -> bool {
        matches!(
            self,
            TrendMetric::Rps | TrendMetric::Llm(LlmMetric::TokensPerS)
        )
    }

    /// The metric of one second's figures (`None` when the second has none).
    fn of_second(self, p: &PointStats, llm: Option<&LlmPoint>) -> Option<f64> {
        let lat = |f: fn(&crate::timeline::PointLatency) -> u64| {
            p.latency.as_ref().map(|l| f(l) as f64 / 1000.0)
        };
        match self {
            TrendMetric::P50 => lat(|l| l.p50_us),
            TrendMetric::P95 => lat(|l| l.p95_us),
            TrendMetric::P99 => lat(|l| l.p99_us),
            TrendMetric::Rps => Some(p.requests as f64),
            TrendMetric::Failed => {
                (p.requests > 0).then(|| p.failed as f64 / p.requests as f64 * 100.0)
            }
            TrendMetric::Llm(m) => m.of_second(llm),
        }
    }
}

/// The per-second values of `metric` over a run's full seconds (the last, partial
/// second left out, as `pado compare` does), for the whole run or one step.
pub fn per_second(run: &LoadedRun, metric: TrendMetric, step: Option<&str>) -> Vec<f64> {
    let full = run.meta.duration_s.floor().max(1.0) as u32;
    let step_ix = step.map(|s| run.step_names.iter().position(|n| n == s));
    run.points
        .iter()
        .filter(|p| p.t < full)
        .filter_map(|p| match step_ix {
            None => metric.of_second(&p.all, p.llm.as_deref()),
            Some(None) => None,
            Some(Some(ix)) => match metric {
                TrendMetric::Llm(m) => m.of_second(p.llm_step(ix as u32)),
                _ => p
                    .steps
                    .iter()
                    .find(|(i, _)| *i as usize == ix)
                    .and_then(|(_, s)| metric.of_second(s, None)),
            },
        })
        .collect()
}

/// One run on the trend.
#[derive(Clone, Debug, Serialize)]
pub struct TrendPoint {
    /// The run's id in the history.
    pub id: i64,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// Its labels, `k=v` joined, for the tooltip and the table.
    pub labels: String,
    /// The recorded figure (`None` when the run had none, e.g. no requests).
    pub value: Option<f64>,
    /// Its per-second values from its result directory; `None` when the directory
    /// is gone (then only the recorded figure is known).
    #[serde(skip)]
    pub seconds: Option<Vec<f64>>,
    /// Whether its result directory no longer exists.
    pub dir_gone: bool,
}

/// What the trend says of the latest run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TrendVerdict {
    /// Significantly worse than the baseline, by at least the noise between runs.
    Regression,
    /// Significantly better, by at least the noise between runs.
    Improvement,
    /// No significant change, or one smaller than the noise between runs.
    WithinNoise,
    /// Too few runs or seconds to judge.
    NotJudged,
}

/// A metric across runs and the verdict on the latest.
#[derive(Clone, Debug, Serialize)]
pub struct Trend {
    /// The test's name.
    pub name: String,
    /// The metric.
    pub metric: TrendMetric,
    /// The step, when one step's figure is followed.
    pub step: Option<String>,
    /// Runs, oldest first; the last is the one judged.
    pub points: Vec<TrendPoint>,
    /// Ids of the runs that form the baseline.
    pub baseline_ids: Vec<i64>,
    /// The baseline's figure: the median of its runs' recorded figures.
    pub baseline_value: Option<f64>,
    /// The latest run's change against it, %.
    pub change_pct: Option<f64>,
    /// The verdict.
    pub verdict: TrendVerdict,
    /// The rank test's p-value, when the per-second values were tested.
    pub p_value: Option<f64>,
    /// What the verdict was computed from (per-second values, or the recorded
    /// figures when result directories are gone), in words.
    pub basis: String,
    /// What a change had to reach to count: `--min-change`, or the spread between
    /// the baseline runs' figures when there are enough and it is larger.
    pub floor: ChangeFloor,
    /// The same in words.
    pub noise_between_runs: String,
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The trend of `points` (oldest first): the latest against the up to `baseline`
/// runs before it. With every run's per-second values, they are tested as `pado
/// compare` tests two runs (the baseline runs' seconds pooled): significant, and
/// the recorded figures moving the same way. When a directory is gone, the
/// recorded figures alone decide: a change is flagged only when the latest lies
/// beyond every baseline run by more than their whole spread, with at least 3
/// baseline runs. Either way a regression or an improvement also needs the change
/// to reach the floor of `min_change_pct` or, with 3 or more baseline runs, the
/// spread between their recorded figures when larger: identical runs differ by a
/// few percent as wholes, and a CI gate on the trend must not fail on that.
pub fn trend(
    name: &str,
    metric: TrendMetric,
    step: Option<&str>,
    points: Vec<TrendPoint>,
    baseline: usize,
    min_change_pct: f64,
) -> Trend {
    let floor = ChangeFloor::new(min_change_pct, None);
    let mut t = Trend {
        name: name.to_string(),
        metric,
        step: step.map(str::to_string),
        baseline_ids: Vec::new(),
        baseline_value: None,
        change_pct: None,
        verdict: TrendVerdict::NotJudged,
        p_value: None,
        basis: String::new(),
        noise_between_runs: floor.describe(),
        floor,
        points,
    };
    let Some((latest, before)) = t.points.split_last() else {
        t.basis = "no runs".into();
        return t;
    };
    let base: Vec<&TrendPoint> = before
        .iter()
        .rev()
        .filter(|p| p.value.is_some())
        .take(baseline.max(1))
        .collect();
    t.baseline_ids = base.iter().rev().map(|p| p.id).collect();
    let Some(b) = latest.value else {
        t.basis = "the latest run has no value for this metric".into();
        return t;
    };
    if base.is_empty() {
        t.basis = "no earlier run to compare with".into();
        return t;
    }
    let mut base_values: Vec<f64> = base.iter().filter_map(|p| p.value).collect();
    let a = median(&mut base_values).unwrap_or(b);
    t.baseline_value = Some(a);
    t.change_pct = (a != 0.0).then(|| (b - a) / a * 100.0);
    t.floor = ChangeFloor::new(min_change_pct, run_spread(&base_values, base_values.len()));
    t.noise_between_runs = t.floor.describe();
    let reached = t.floor.reached_by(t.change_pct);
    let worse_when_up = !metric.higher_is_better();
    let direction = |up: bool| {
        if up == worse_when_up {
            TrendVerdict::Regression
        } else {
            TrendVerdict::Improvement
        }
    };
    let gone = base
        .iter()
        .chain([&latest])
        .filter(|p| p.seconds.is_none())
        .count();
    if gone == 0 {
        let pooled: Vec<f64> = base
            .iter()
            .flat_map(|p| p.seconds.iter().flatten().copied())
            .collect();
        let cand = latest.seconds.clone().unwrap_or_default();
        let test = mann_whitney(&pooled, &cand);
        t.basis = format!(
            "per-second values of the result directories ({} baseline seconds from {} run{}, {} of the latest); {METHOD}",
            test.n.0,
            base.len(),
            if base.len() == 1 { "" } else { "s" },
            test.n.1
        );
        if test.n.0 == 0 || test.n.1 == 0 || !test.judged {
            t.basis.insert_str(0, "too few seconds to judge: ");
            return t;
        }
        t.p_value = Some(test.p_value);
        t.verdict = match test.candidate_higher() {
            Some(up) if test.significant && reached && (b == a || (b > a) == up) => direction(up),
            _ => TrendVerdict::WithinNoise,
        };
        return t;
    }
    t.basis = format!(
        "the recorded figures ({gone} result director{} gone, so no per-second values): flagged only beyond every baseline run by more than their spread",
        if gone == 1 { "y is" } else { "ies are" }
    );
    if base_values.len() < 3 {
        t.basis
            .insert_str(0, "too few baseline runs (3 needed) to judge on ");
        return t;
    }
    let (lo, hi) = base_values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
            (l.min(*v), h.max(*v))
        });
    let spread = hi - lo;
    t.verdict = if !reached {
        TrendVerdict::WithinNoise
    } else if b > hi + spread {
        direction(true)
    } else if b < lo - spread {
        direction(false)
    } else {
        TrendVerdict::WithinNoise
    };
    t
}

/// The trend as text: one line per run, then the verdict (control characters in
/// names escaped).
pub fn render_trend(t: &Trend) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let scope = t
        .step
        .as_deref()
        .map(|st| format!(" (step {st})"))
        .unwrap_or_default();
    let _ = writeln!(s, "{} — {}{scope}", t.name, t.metric.label());
    let max = t
        .points
        .iter()
        .filter_map(|p| p.value)
        .fold(0.0_f64, f64::max);
    for p in &t.points {
        let bar = match p.value {
            Some(v) if max > 0.0 => "█".repeat(((v / max) * 30.0).round() as usize),
            _ => String::new(),
        };
        let mark = if t.baseline_ids.contains(&p.id) {
            "b"
        } else {
            " "
        };
        let _ = writeln!(
            s,
            "  {:>5} {mark} {:<24} {:>10}  {bar}{}",
            p.id,
            p.started_at,
            pado_base::units::value(p.value),
            if p.dir_gone { "  (directory gone)" } else { "" }
        );
    }
    let _ = writeln!(s, "  {}", verdict_line(t));
    let _ = writeln!(s, "  judged on {}", t.basis);
    let _ = writeln!(s, "  noise between runs: {}", t.noise_between_runs);
    // The test's and steps' names are other people's text: escaped for the terminal.
    pado_base::text::terminal_safe(&s).into_owned()
}

/// The verdict in one sentence.
pub fn verdict_line(t: &Trend) -> String {
    let change = t
        .change_pct
        .map(|c| format!("{c:+.1}%"))
        .unwrap_or_else(|| "-".into());
    let base = pado_base::units::value(t.baseline_value);
    let p = t
        .p_value
        .map(|p| format!(", p = {p:.3}"))
        .unwrap_or_default();
    match t.verdict {
        TrendVerdict::Regression => format!(
            "REGRESSION: the latest run is {change} against the baseline (median {base} of {} run(s)){p}",
            t.baseline_ids.len()
        ),
        TrendVerdict::Improvement => format!(
            "improvement: the latest run is {change} against the baseline (median {base}){p}"
        ),
        TrendVerdict::WithinNoise => {
            format!("within noise: {change} against the baseline (median {base}){p}")
        }
        TrendVerdict::NotJudged => "not judged".to_string(),
    }
}

/// The trend as JSON (the verdict, the runs with their values).
pub fn render_trend_json(t: &Trend) -> String {
    serde_json::to_string_pretty(t).unwrap_or_default()
}

#[cfg(test)]
mod tests;
