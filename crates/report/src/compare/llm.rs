//! LLM streams compared like latency: time to first token, inter-token latency and
//! time per output token percentiles (lower is better) and tokens per second
//! (higher is better), for all `sse:` steps and per step, each judged on its
//! per-second values by the same rank test, the same floor between runs and the
//! same overlap of the runs' percentile intervals as the latency rows.

use pado_base::units::us_to_ms;
use pado_metrics::{LatencyHistogram, SseStats};

use super::compute::{full_seconds, row, Sampler};
use super::percentile_interval::interval_ms;
use super::{CompareRow, Side};
use crate::summary::{LlmSummary, Summary};
use crate::timeline::{LlmPoint, PointLatency, SecondPoint};

/// Which histogram a percentile row reads.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Figure {
    Ttft,
    Itl,
    Tpot,
}

impl Figure {
    fn of_point(self, l: &LlmPoint) -> Option<PointLatency> {
        match self {
            Figure::Ttft => l.ttft,
            Figure::Itl => l.itl,
            Figure::Tpot => l.tpot,
        }
    }

    fn of_stats(self, e: &SseStats) -> &LatencyHistogram {
        match self {
            Figure::Ttft => &e.ttft,
            Figure::Itl => &e.itl,
            Figure::Tpot => &e.tpot,
        }
    }

    fn of_summary(self, l: &LlmSummary) -> &pado_metrics::LatencySummary {
        match self {
            Figure::Ttft => &l.ttft_ms,
            Figure::Itl => &l.itl_ms,
            Figure::Tpot => &l.tpot_ms,
        }
    }
}

/// The percentile rows: name, figure, quantile.
const PERCENTILES: [(&str, Figure, f64); 8] = [
    ("ttft p50 ms", Figure::Ttft, 0.50),
    ("ttft p95 ms", Figure::Ttft, 0.95),
    ("ttft p99 ms", Figure::Ttft, 0.99),
    ("itl p50 ms", Figure::Itl, 0.50),
    ("itl p95 ms", Figure::Itl, 0.95),
    ("itl p99 ms", Figure::Itl, 0.99),
    ("tpot p50 ms", Figure::Tpot, 0.50),
    ("tpot p95 ms", Figure::Tpot, 0.95),
];

/// The throughput row's metric: output tokens per second of the run.
pub(super) const TOKENS_PER_S: &str = "output tokens/s";
/// The per-request rate row's metric: the median of `llm_tokens_per_s`.
pub(super) const TOKENS_PER_S_PER_REQUEST: &str = "tokens/s per request p50";

/// The name of the percentile row of `fig` at quantile `q` (one of
/// [`PERCENTILES`]); empty for a quantile no row shows.
pub(super) fn row_name(fig: Figure, q: f64) -> &'static str {
    PERCENTILES
        .iter()
        .find(|(_, f, pq)| *f == fig && *pq == q)
        .map_or("", |p| p.0)
}

/// A quantile of a summary, by the quantiles a summary keeps.
fn summary_q(l: &pado_metrics::LatencySummary, q: f64) -> f64 {
    match q {
        q if q <= 0.5 => l.p50,
        q if q <= 0.95 => l.p95,
        _ => l.p99,
    }
}

/// A quantile of a second's figures, by the quantiles a point keeps.
fn point_q(l: &PointLatency, q: f64) -> u64 {
    match q {
        q if q <= 0.5 => l.p50_us,
        q if q <= 0.95 => l.p95_us,
        _ => l.p99_us,
    }
}

/// Where one scope's figures are on a side: its LLM summary and its LLM point of
/// a second.
#[derive(Clone)]
enum Scope {
    Overall,
    Step(String),
}

impl Scope {
    fn label(&self) -> String {
        match self {
            Scope::Overall => "overall".into(),
            Scope::Step(n) => format!("step {n}"),
        }
    }

    fn summary<'s>(&self, s: &'s Summary) -> Option<&'s LlmSummary> {
        match self {
            Scope::Overall => s.sse.as_ref()?.llm.as_ref(),
            Scope::Step(n) => s.steps.get(n)?.sse.as_ref()?.llm.as_ref(),
        }
    }

    /// The scope's figures in each full second (`None` for a second in which it
    /// ended no stream).
    fn points<'r>(&self, s: &'r Side<'_>) -> Vec<Option<&'r LlmPoint>> {
        let idx = match self {
            Scope::Overall => None,
            Scope::Step(n) => match s.run.step_names.iter().position(|x| x == n) {
                Some(i) => Some(i as u32),
                None => return Vec::new(),
            },
        };
        full_seconds(s)
            .map(|p: &SecondPoint| match idx {
                None => p.llm.as_deref(),
                Some(i) => p.llm_step(i),
            })
            .collect()
    }

    /// The whole run's streams of this scope, all series merged.
    fn stats(&self, s: &Side<'_>) -> Option<SseStats> {
        let mut out: Option<SseStats> = None;
        for series in &s.run.totals.series {
            if matches!(self, Scope::Step(n) if *n != series.key.name) {
                continue;
            }
            if let Some(e) = series.sse.as_deref() {
                out.get_or_insert_with(SseStats::default).merge(e);
            }
        }
        out
    }
}

/// The scopes compared: all steps, then each `sse:` step of the baseline with LLM
/// figures.
fn scopes(sides: &[Side<'_>]) -> Vec<Scope> {
    let base = sides[0].summary;
    if base.sse.as_ref().and_then(|e| e.llm.as_ref()).is_none() {
        return Vec::new();
    }
    let mut v = vec![Scope::Overall];
    v.extend(
        base.steps
            .iter()
            .filter(|(_, st)| st.sse.as_ref().is_some_and(|e| e.llm.is_some()))
            .map(|(n, _)| Scope::Step(n.clone())),
    );
    v
}

/// Every LLM row: per scope, the percentiles, then both tokens per second.
pub(super) fn rows(sides: &[Side<'_>]) -> Vec<CompareRow> {
    let mut out = Vec::new();
    for scope in scopes(sides) {
        let label = scope.label();
        for (metric, fig, q) in PERCENTILES {
            let sc = scope.clone();
            let f: Sampler<'_> = Box::new(move |s| {
                let total = sc
                    .summary(s.summary)
                    .map(|l| summary_q(fig.of_summary(l), q));
                let smp = sc
                    .points(s)
                    .into_iter()
                    .flatten()
                    .filter_map(|l| fig.of_point(l))
                    .map(|l| us_to_ms(point_q(&l, q)))
                    .collect();
                (total, smp)
            });
            out.push(row(&label, metric, false, sides, f));
        }
        let sc = scope.clone();
        out.push(row(
            &label,
            TOKENS_PER_S,
            true,
            sides,
            Box::new(move |s| {
                let total = sc.summary(s.summary).map(|l| l.output_tokens_per_s);
                // A full second in which no stream ended delivered no tokens.
                let smp = sc
                    .points(s)
                    .into_iter()
                    .map(|l| l.map_or(0.0, |l| l.tokens as f64))
                    .collect();
                (total, smp)
            }),
        ));
        let sc = scope;
        out.push(row(
            &label,
            TOKENS_PER_S_PER_REQUEST,
            true,
            sides,
            Box::new(move |s| {
                let total = sc
                    .summary(s.summary)
                    .map(|l| l.tokens_per_s_per_request.p50);
                let smp = sc
                    .points(s)
                    .into_iter()
                    .flatten()
                    .filter_map(|l| l.tokens_per_s_p50)
                    .collect();
                (total, smp)
            }),
        ));
    }
    out
}

/// The percentile-interval rule of the latency rows on the LLM percentile rows:
/// a verdict stands only when the runs' 95% intervals of the percentile do not
/// overlap (another draw of the same tokens could have given the other figure).
pub(super) fn hold_back_overlapping(rows: &mut [CompareRow], sides: &[Side<'_>]) {
    if sides.len() < 2 {
        return;
    }
    for r in rows.iter_mut() {
        let Some(&(_, fig, q)) = PERCENTILES.iter().find(|p| p.0 == r.metric) else {
            continue;
        };
        let scope = match r.scope.strip_prefix("step ") {
            Some(n) => Scope::Step(n.to_string()),
            None if r.scope == "overall" => Scope::Overall,
            None => continue,
        };
        let intervals: Vec<_> = sides
            .iter()
            .map(|s| {
                scope
                    .stats(s)
                    .and_then(|e| interval_ms(fig.of_stats(&e), q))
            })
            .collect();
        super::percentile_interval::hold_back_overlapping(r, &intervals);
    }
}
