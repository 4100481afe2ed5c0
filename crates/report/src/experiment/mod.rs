//! An experiment's table: one row per value of the knob that was changed (pods,
//! threads, a pool's size), each with what its run measured (capacity found, or p95
//! at a fixed load), the bottleneck table's verdict at that point and the run's id;
//! then, for capacities, the scaling fit across the points
//! ([`pado_analysis::scaling`]: the Universal Scalability Law), how well each point
//! was predicted from the ones before it, the value beyond which more of the knob
//! buys little, what the next step would buy, and capacity per cost when the knob
//! has a cost per unit. Presented as text ([`text`]), JSON ([`json`]) and a
//! self-contained HTML page ([`html`]) with the same inline SVG chart style as
//! `pado trend`'s page.
//!
//! The presenters only format: [`analyse`] computes every figure they show once, so
//! the three outputs always agree.

mod html;
mod text;

#[cfg(test)]
mod tests;

pub use html::html;
pub use text::text;

use pado_analysis::scaling::{check_predictions, fit_usl, PredictionCheck, ScalingPoint, UslFit};
use serde::{Deserialize, Serialize};

/// The metric name of an experiment that finds the capacity under an SLA at each
/// point: the scaling fit is made on it.
pub const CAPACITY_METRIC: &str = "capacity (req/s)";

/// The metric name of an experiment that runs one fixed load at each point: a
/// latency, so no scaling fit (the law is about throughput).
pub const P95_METRIC: &str = "p95 at fixed load (ms)";

/// The smallest gain per step still worth buying, for [`ExperimentAnalysis::diminishing_from`]:
/// 5%, below the noise between two runs of most services.
pub const MIN_GAIN: f64 = 0.05;

/// How far beyond the measured points the fit's peak or ceiling may lie and still be
/// stated (4× the largest value or best capacity measured): further out, a fit of a
/// few points says nothing reliable.
const REACH: f64 = 4.0;

/// What an experiment measured, one row per knob value, in the order it ran. It reads
/// back from [`json`]'s output (the computed fields are ignored), so a saved
/// experiment can be presented again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentTable {
    /// The knob's name as the experiment file gave it (`replicas`, `풀 크기`).
    pub knob: String,
    /// The knob's unit (`pods`), when it has one.
    pub unit: Option<String>,
    /// What each point measured, with its unit in parentheses: [`CAPACITY_METRIC`]
    /// or [`P95_METRIC`] (any name saying `req/s`, `capacity` or `throughput` is
    /// taken as a throughput and fitted).
    pub metric: String,
    /// The points, in the order they ran (the predictions follow this order).
    pub points: Vec<ExperimentRow>,
    /// Cost of one unit of the knob (per pod, per core), for capacity per cost.
    pub cost_per_unit: Option<f64>,
}

/// One point of the experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentRow {
    /// The knob's value (the USL's N).
    pub value: f64,
    /// How the value is shown (`3 pods`); the value itself when empty.
    pub label: String,
    /// What the point measured (capacity in req/s, or p95 in ms); `None` when the
    /// point failed or found no capacity.
    pub measured: Option<f64>,
    /// The bottleneck table's verdict at this point, with its evidence ("DB pool:
    /// 10/10 connections in use, 42 waiting"), or why the point has none.
    pub verdict: String,
    /// The run's id in the history (or its result directory's name).
    pub run_id: Option<String>,
    /// Why the point failed, when it did (its `ready:` never held, its run broke).
    pub error: Option<String>,
}

impl ExperimentTable {
    /// Whether the metric is a throughput (so the scaling fit and capacity per cost
    /// apply) rather than a latency.
    pub fn is_throughput(&self) -> bool {
        let m = self.metric.to_lowercase();
        m.contains("req/s") || m.contains("capacity") || m.contains("throughput")
    }

    /// The metric's unit: the text in its last parentheses (`req/s`), else empty.
    pub fn metric_unit(&self) -> &str {
        match (self.metric.rfind('('), self.metric.rfind(')')) {
            (Some(a), Some(b)) if a < b => &self.metric[a + 1..b],
            _ => "",
        }
    }

    /// A knob value as a sentence says it: the row's label when that value has a
    /// row with one, else the number and the unit (`5 pods`).
    pub fn value_label(&self, x: f64) -> String {
        if let Some(r) = self
            .points
            .iter()
            .find(|r| r.value == x && !r.label.is_empty())
        {
            return r.label.clone();
        }
        let n = pado_base::units::plain(x);
        match &self.unit {
            Some(u) if !u.is_empty() => format!("{n} {u}"),
            _ => n,
        }
    }
}

/// What the next step of the knob would buy, by the fit: the prediction the next
/// point of the experiment would check.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct NextStep {
    /// The next value: the last measured one plus the last step.
    pub value: f64,
    /// The fit's capacity there.
    pub predicted: f64,
    /// Gain over the last measured point's capacity, % (negative past the peak).
    pub gain_pct: f64,
}

/// One row's capacity per unit of cost.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PerCost {
    /// The row's knob value.
    pub value: f64,
    /// measured / (value × cost per unit).
    pub per_cost: f64,
}

/// Every figure the presenters show beyond the rows, computed once.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExperimentAnalysis {
    /// The scaling fit over the measured points, when the metric is a throughput and
    /// at least two distinct values measured one.
    pub fit: Option<UslFit>,
    /// A sentence about the fit for someone who has not read the law: why there is
    /// none, or that κ could not be fitted from two points.
    pub fit_note: Option<String>,
    /// Each point from the third on, as predicted from the points before it.
    pub predictions: Vec<PredictionCheck>,
    /// The step between the last two measured values.
    pub step: Option<f64>,
    /// The value beyond which one more step buys less than [`MIN_GAIN`].
    pub diminishing_from: Option<f64>,
    /// What the next step would buy.
    pub next: Option<NextStep>,
    /// Capacity per cost of each measured point, when a cost per unit was given.
    pub per_cost: Vec<PerCost>,
}

/// The points a fit can use: measured, not failed, value and measurement above 0,
/// in the order they ran.
fn measured_points(t: &ExperimentTable) -> Vec<ScalingPoint> {
    t.points
        .iter()
        .filter(|r| r.error.is_none())
        .filter_map(|r| {
            let m = r.measured?;
            (r.value.is_finite() && r.value > 0.0 && m.is_finite() && m > 0.0).then_some(
                ScalingPoint {
                    x: r.value,
                    throughput: m,
                },
            )
        })
        .collect()
}

/// Everything beyond the rows: the fit, its checks, where more stops paying, the next
/// step and capacity per cost.
pub fn analyse(t: &ExperimentTable) -> ExperimentAnalysis {
    let pts = measured_points(t);
    let mut a = ExperimentAnalysis {
        fit: None,
        fit_note: None,
        predictions: Vec::new(),
        step: None,
        diminishing_from: None,
        next: None,
        per_cost: Vec::new(),
    };
    if !t.is_throughput() {
        a.fit_note = Some(format!(
            "No scaling fit: the law describes throughput, and this experiment measured {}.",
            t.metric
        ));
        return a;
    }
    if let Some(cost) = t.cost_per_unit.filter(|c| c.is_finite() && *c > 0.0) {
        a.per_cost = pts
            .iter()
            .map(|p| PerCost {
                value: p.x,
                per_cost: p.throughput / (p.x * cost),
            })
            .collect();
    }
    let fit = match fit_usl(&pts) {
        Ok(fit) => fit,
        Err(e) => {
            a.fit_note = Some(format!("No scaling fit: {e}."));
            return a;
        }
    };
    if !fit.kappa_fitted() {
        a.fit_note = Some(
            "Two points fit contention only (crosstalk κ held at 0): a third point \
             would show whether capacity peaks and falls."
                .to_string(),
        );
    }
    a.fit = Some(fit);
    a.predictions = check_predictions(&pts);
    a.step = pts
        .windows(2)
        .next_back()
        .map(|w| (w[1].x - w[0].x).abs())
        .filter(|s| *s > 0.0);
    if let (Some(step), Some(last)) = (a.step, pts.last()) {
        a.diminishing_from = fit.diminishing_from(step, MIN_GAIN);
        let value = last.x + step;
        let predicted = fit.predict(value);
        a.next = Some(NextStep {
            value,
            predicted,
            gain_pct: (predicted - last.throughput) / last.throughput * 100.0,
        });
    }
    a
}

/// The sentence for one prediction check: "predicted 412 req/s at 3 pods, measured
/// 398: error +3.5%".
pub fn prediction_line(t: &ExperimentTable, c: &PredictionCheck) -> String {
    let unit = t.metric_unit();
    let sp = if unit.is_empty() { "" } else { " " };
    format!(
        "predicted {}{sp}{unit} at {}, measured {}: error {}",
        pado_base::units::rate(c.predicted),
        t.value_label(c.x),
        pado_base::units::rate(c.measured),
        signed_pct(c.error_pct)
    )
}

/// The fit in one sentence: its parameters, named for what they mean.
pub fn fit_line(t: &ExperimentTable, f: &UslFit) -> String {
    let unit = t.metric_unit();
    let per = t
        .unit
        .as_deref()
        .filter(|u| !u.is_empty())
        .unwrap_or("unit");
    format!(
        "Scaling fit (Universal Scalability Law, {} points): {} {unit} at 1 {per}, contention σ {:.4}, crosstalk κ {:.6}, R² {:.3}",
        f.points,
        pado_base::units::rate(f.lambda),
        f.sigma,
        f.kappa,
        f.r2
    )
}

/// What the fit says about the limit: where capacity peaks, or that it only
/// flattens; and beyond which value a step buys less than [`MIN_GAIN`].
pub fn limit_lines(t: &ExperimentTable, a: &ExperimentAnalysis) -> Vec<String> {
    let Some(f) = a.fit else {
        return Vec::new();
    };
    let unit = t.metric_unit();
    let mut out = Vec::new();
    let pts = measured_points(t);
    let top_x = pts.iter().map(|p| p.x).fold(0.0, f64::max);
    let best = pts.iter().map(|p| p.throughput).fold(0.0, f64::max);
    let ceiling = (f.sigma > 0.0).then(|| f.lambda / f.sigma);
    match (f.peak_x, ceiling) {
        (Some(p), _) if p <= REACH * top_x => out.push(format!(
            "Capacity peaks at {} ({} {unit}); past it, more makes it fall (crosstalk).",
            t.value_label(round_to(p)),
            pado_base::units::rate(f.predict(p))
        )),
        (Some(p), _) => out.push(format!(
            "The fit's peak, at {}, is far beyond the values measured: too far out to trust.",
            t.value_label(round_to(p))
        )),
        (None, Some(c)) if c <= REACH * best => out.push(format!(
            "Capacity flattens towards {} {unit} (contention) and does not fall.",
            pado_base::units::rate(c)
        )),
        _ => out.push(
            "Capacity grew nearly in proportion to the knob: no limit in sight within the values measured."
                .to_string(),
        ),
    }
    if let (Some(d), Some(step)) = (a.diminishing_from, a.step) {
        out.push(format!(
            "Beyond {}, each step of {} buys less than {:.0}%.",
            t.value_label(round_to(d)),
            pado_base::units::plain(step),
            MIN_GAIN * 100.0
        ));
    }
    if let Some(n) = a.next {
        out.push(format!(
            "Next step: at {} the fit predicts {} {unit} ({} over the last point).",
            t.value_label(n.value),
            pado_base::units::rate(n.predicted),
            signed_pct(n.gain_pct)
        ));
    }
    out
}

/// A signed percentage with one decimal (`+3.5%`, `-1.2%`); a value that rounds to
/// zero reads `+0.0%`, never `-0.0%`.
fn signed_pct(p: f64) -> String {
    let r = (p * 10.0).round() / 10.0 + 0.0;
    format!("{r:+.1}%")
}

/// A knob value rounded for a sentence (2 decimals).
fn round_to(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The table and everything [`analyse`] found, as JSON: the rows as given, the fit,
/// the prediction checks, the limit and the next step.
pub fn json(t: &ExperimentTable) -> serde_json::Value {
    let a = analyse(t);
    serde_json::json!({
        "knob": t.knob,
        "unit": t.unit,
        "metric": t.metric,
        "cost_per_unit": t.cost_per_unit,
        "points": t.points,
        "fit": a.fit.map(|f| serde_json::json!({
            "lambda": f.lambda,
            "sigma": f.sigma,
            "kappa": f.kappa,
            "r2": f.r2,
            "points": f.points,
            "peak_x": f.peak_x,
            "kappa_fitted": f.kappa_fitted(),
        })),
        "fit_note": a.fit_note,
        "predictions": a.predictions,
        "step": a.step,
        "diminishing_from": a.diminishing_from,
        "min_gain": MIN_GAIN,
        "next": a.next,
        "per_cost": a.per_cost,
    })
}
