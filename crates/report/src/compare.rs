//! `pado compare`: the comparison table (metric, baseline, candidate, change %,
//! better/worse) for throughput, error rate, latency and TTFB, overall, per step and
//! per stage, with each change tested against the noise of the per-second values
//! (the method is named in the output). Reads result directories only.

use std::fmt::Write as _;

use pado_analysis::noise::{mann_whitney, METHOD};
use serde::Serialize;

use crate::summary::{LoadedRun, Summary};
use crate::timeline::{PointStats, SecondPoint};

/// Whether a change is good news.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The seconds shifted significantly, in the good direction, and the run's
    /// overall figure moved the same way.
    Better,
    /// The seconds shifted significantly, in the bad direction, and the run's
    /// overall figure moved the same way.
    Worse,
    /// Not distinguishable from the per-second noise.
    WithinNoise,
    /// Too few (effective) seconds for the test to tell anything, however large the
    /// change: "within noise" would be a claim it cannot make.
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
    fn meaning(self) -> &'static str {
        match self {
            Verdict::Better | Verdict::Worse => {
                "the seconds shifted significantly and the overall figure moved the same way"
            }
            Verdict::WithinNoise => "no shift beyond the per-second noise",
            Verdict::TooFewSeconds => {
                "too few seconds to judge (even a complete separation would not be significant)"
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
}

/// The whole comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// Run labels (directory names), baseline first.
    pub runs: Vec<String>,
    /// How significance was decided.
    pub method: String,
    /// Rows.
    pub rows: Vec<CompareRow>,
    /// Per run, the component its bottleneck table named as the limit (runs that
    /// observed the target): a fix shows as the limit moving elsewhere.
    pub limits: Vec<Option<String>>,
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

type Sampler<'a> = Box<dyn Fn(&Side<'_>) -> (Option<f64>, Vec<f64>) + 'a>;

fn full_seconds<'r>(s: &'r Side<'_>) -> impl Iterator<Item = &'r SecondPoint> {
    let full = s.run.meta.duration_s.floor().max(1.0) as u32;
    s.run.points.iter().filter(move |p| p.t < full)
}

use pado_metrics::fmt::{us_to_ms as ms, value as fmt_v};

fn row(
    scope: &str,
    metric: &str,
    higher_is_better: bool,
    sides: &[Side<'_>],
    f: Sampler<'_>,
) -> CompareRow {
    let data: Vec<(Option<f64>, Vec<f64>)> = sides.iter().map(&f).collect();
    let base = &data[0];
    let mut changes = Vec::new();
    let mut verdicts = Vec::new();
    let mut p_values = Vec::new();
    for d in &data[1..] {
        let change = match (base.0, d.0) {
            (Some(a), Some(b)) if a != 0.0 && a.is_finite() && b.is_finite() => {
                Some((b - a) / a * 100.0)
            }
            _ => None,
        };
        changes.push(change);
        let (verdict, p) = judge(base, d, higher_is_better);
        verdicts.push(verdict);
        p_values.push(p);
    }
    CompareRow {
        scope: scope.to_string(),
        metric: metric.to_string(),
        values: data.iter().map(|d| d.0).collect(),
        changes,
        verdicts,
        p_values,
    }
}

/// The verdict on one row for one candidate: the rank test on the per-second
/// samples decides significance *and* direction; the overall figures must agree
/// with that direction to make it better or worse.
fn judge(
    base: &(Option<f64>, Vec<f64>),
    cand: &(Option<f64>, Vec<f64>),
    higher_is_better: bool,
) -> (Verdict, Option<f64>) {
    let (Some(a), Some(b)) = (base.0, cand.0) else {
        return (Verdict::NotTested, None);
    };
    if !(a.is_finite() && b.is_finite()) {
        return (Verdict::NotTested, None);
    }
    let test = mann_whitney(&base.1, &cand.1);
    if test.n.0 == 0 || test.n.1 == 0 {
        return (Verdict::NotTested, None);
    }
    if !test.judged {
        return (Verdict::TooFewSeconds, None);
    }
    let p = Some(test.p_value);
    if !test.significant {
        // The baseline's whole per-second range: an overall change beyond it is not
        // noise, even when most seconds did not move.
        let finite = base.1.iter().copied().filter(|v| v.is_finite());
        let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        let beyond = (b - a).abs() > (hi - lo) && b != a;
        return (
            if beyond {
                Verdict::FewSeconds
            } else {
                Verdict::WithinNoise
            },
            p,
        );
    }
    let Some(up) = test.candidate_higher() else {
        return (Verdict::WithinNoise, p);
    };
    if b != a && (b > a) != up {
        return (Verdict::Mixed, p);
    }
    (
        if up == higher_is_better {
            Verdict::Better
        } else {
            Verdict::Worse
        },
        p,
    )
}

/// Per-second samples of one row of a point (all, or one step).
fn samples(
    s: &Side<'_>,
    pick: impl Fn(&SecondPoint) -> Option<PointStats>,
    val: impl Fn(&PointStats) -> Option<f64>,
) -> Vec<f64> {
    full_seconds(s)
        .filter_map(|p| pick(p).as_ref().and_then(&val))
        .collect()
}

fn limits_of(sides: &[Side<'_>]) -> Vec<Option<String>> {
    sides
        .iter()
        .map(|s| s.summary.bottlenecks.as_ref().and_then(|b| b.limit.clone()))
        .collect()
}

/// Letter of run `i` in the output (A is the baseline).
fn letter(i: usize) -> char {
    (b'A' + (i.min(25)) as u8) as char
}

/// The load a run applied, in words: one entry per scenario (executor and its
/// parameters, which include VUs or rates and durations) and per stage window.
fn load_shape(m: &pado_metrics::RunMeta) -> Vec<String> {
    let mut out: Vec<String> = m
        .scenarios
        .iter()
        .map(|s| format!("{}: {} {}", s.name, s.executor, s.description))
        .collect();
    out.extend(m.stages.iter().map(|st| {
        format!(
            "{} stage {}: {} ({:.0}–{:.0} s)",
            st.scenario,
            st.index + 1,
            st.label,
            st.start_s,
            st.end_s
        )
    }));
    out
}

/// Differences between the baseline and each other run that are not the change
/// under test.
fn shape_warnings(sides: &[Side<'_>]) -> Vec<String> {
    let mut out = Vec::new();
    let Some(base) = sides.first() else {
        return out;
    };
    let bm = &base.run.meta;
    for (i, s) in sides.iter().enumerate().skip(1) {
        let (m, l) = (&s.run.meta, letter(i));
        if m.name != bm.name {
            out.push(format!(
                "the runs are different tests: A is `{}`, {l} is `{}`",
                bm.name, m.name
            ));
        }
        let (sa, sb) = (load_shape(bm), load_shape(m));
        if sa != sb {
            let only = |x: &[String], y: &[String]| {
                x.iter()
                    .filter(|v| !y.contains(v))
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            out.push(format!(
                "the load shapes differ: A ran {}, {l} ran {}",
                or_nothing(only(&sa, &sb)),
                or_nothing(only(&sb, &sa))
            ));
        }
        let (da, db) = (bm.duration_s, m.duration_s);
        if da.is_finite() && db.is_finite() && (da - db).abs() > (0.1 * da.max(db)).max(1.0) {
            out.push(format!(
                "the runs lasted differently: A {da:.1} s, {l} {db:.1} s"
            ));
        }
        if m.interrupted != bm.interrupted {
            let who = if m.interrupted { l } else { 'A' };
            out.push(format!("run {who} was stopped early"));
        }
    }
    out
}

fn or_nothing(s: String) -> String {
    if s.is_empty() {
        "nothing else".into()
    } else {
        format!("`{s}`")
    }
}

/// Compare runs against the first.
pub fn compare(sides: &[Side<'_>]) -> Comparison {
    let mut rows = Vec::new();
    if sides.len() < 2 {
        return Comparison {
            runs: sides.iter().map(|s| s.label.clone()).collect(),
            method: METHOD.into(),
            rows,
            limits: limits_of(sides),
            warnings: Vec::new(),
        };
    }
    let all = |p: &SecondPoint| Some(p.all);
    let rps = |ps: &PointStats| Some(ps.requests as f64);
    let err = |ps: &PointStats| (ps.requests > 0).then(|| ps.failed as f64 / ps.requests as f64);
    rows.push(row(
        "overall",
        "req/s (mean)",
        true,
        sides,
        Box::new(move |s| (Some(s.summary.rps), samples(s, all, rps))),
    ));
    rows.push(row(
        "overall",
        "req/s reached in 50% of seconds",
        true,
        sides,
        Box::new(move |s| (Some(s.summary.stability.rps_p50), samples(s, all, rps))),
    ));
    rows.push(row(
        "overall",
        "req/s reached in 95% of seconds",
        true,
        sides,
        Box::new(move |s| (Some(s.summary.stability.rps_p95), samples(s, all, rps))),
    ));
    rows.push(row(
        "overall",
        "req/s reached in 99% of seconds",
        true,
        sides,
        Box::new(move |s| (Some(s.summary.stability.rps_p99), samples(s, all, rps))),
    ));
    rows.push(row(
        "overall",
        "error rate %",
        false,
        sides,
        Box::new(move |s| (Some(s.summary.failed_rate * 100.0), samples(s, all, err))),
    ));
    type Q = fn(&crate::timeline::PointLatency) -> u64;
    type Total = fn(&Summary) -> f64;
    let quantiles: [(&str, Total, Q); 3] = [
        ("latency p50 ms", |s| s.latency_ms.p50, |l| l.p50_us),
        ("latency p95 ms", |s| s.latency_ms.p95, |l| l.p95_us),
        ("latency p99 ms", |s| s.latency_ms.p99, |l| l.p99_us),
    ];
    for (name, total, per_second) in quantiles {
        rows.push(row(
            "overall",
            name,
            false,
            sides,
            Box::new(move |s| {
                (
                    Some(total(s.summary)),
                    samples(s, all, |ps| ps.latency.map(|l| ms(per_second(&l)))),
                )
            }),
        ));
    }
    // The maximum is one request of the whole run: a single value with no spread
    // to test against, shown without a mark.
    rows.push(row(
        "overall",
        "latency max ms",
        false,
        sides,
        Box::new(move |s| (Some(s.summary.latency_ms.max), Vec::new())),
    ));
    // TTFB: the run's percentiles, tested on the per-second mean TTFB (what the
    // timeline keeps per second).
    type Ttfb = fn(&pado_metrics::LatencySummary) -> f64;
    let ttfb: [(&str, Ttfb); 4] = [
        ("ttfb mean ms", |l| l.mean),
        ("ttfb p50 ms", |l| l.p50),
        ("ttfb p95 ms", |l| l.p95),
        ("ttfb p99 ms", |l| l.p99),
    ];
    for (name, pick) in ttfb {
        rows.push(row(
            "overall",
            name,
            false,
            sides,
            Box::new(move |s| {
                let v = s.summary.phases_ms.get("http_req_waiting").map(pick);
                (v, samples(s, all, |ps| ps.ttfb_mean_us.map(|u| u / 1000.0)))
            }),
        ));
    }
    rows.push(row(
        "overall",
        "ttfb mean abs change ms",
        false,
        sides,
        Box::new(move |s| {
            (
                Some(s.summary.stability.ttfb_mean_abs_change_ms),
                Vec::new(),
            )
        }),
    ));
    // Per step (names present in the baseline).
    for name in sides[0].summary.steps.keys() {
        let step_rows = |metric: &str,
                         higher: bool,
                         f: fn(&PointStats) -> Option<f64>,
                         total: fn(&crate::summary::StepSummary) -> f64| {
            let name = name.clone();
            row(
                &format!("step {name}"),
                metric,
                higher,
                sides,
                Box::new(move |s| {
                    let idx = s.run.step_names.iter().position(|n| *n == name);
                    let value = s.summary.steps.get(&name).map(total);
                    let smp = match idx {
                        Some(i) => samples(s, |p| p.step(i as u32).copied(), f),
                        None => Vec::new(),
                    };
                    (value, smp)
                }),
            )
        };
        rows.push(step_rows(
            "req/s",
            true,
            |ps| Some(ps.requests as f64),
            |t| t.rps,
        ));
        rows.push(step_rows(
            "p95 ms",
            false,
            |ps| ps.latency.map(|l| ms(l.p95_us)),
            |t| t.latency_ms.p95,
        ));
    }
    // Per stage, matched by label.
    for st in &sides[0].summary.stages {
        let label = st.label.clone();
        let stage_rows = |metric: &str,
                          higher: bool,
                          f: fn(&PointStats) -> Option<f64>,
                          total: fn(&crate::stages::StageStats) -> f64| {
            let label = label.clone();
            row(
                &format!("stage {label}"),
                metric,
                higher,
                sides,
                Box::new(move |s| {
                    let Some(w) = s.summary.stages.iter().find(|x| x.label == label) else {
                        return (None, Vec::new());
                    };
                    let smp = s
                        .run
                        .points
                        .iter()
                        .filter(|p| crate::stages::second_in_window(p.t, w.start_s, w.end_s))
                        .filter_map(|p| f(&p.all))
                        .collect();
                    (Some(total(w)), smp)
                }),
            )
        };
        rows.push(stage_rows(
            "req/s",
            true,
            |ps| Some(ps.requests as f64),
            |w| w.rps,
        ));
        rows.push(stage_rows(
            "p95 ms",
            false,
            |ps| ps.latency.map(|l| ms(l.p95_us)),
            |w| w.latency_ms.p95,
        ));
    }
    Comparison {
        runs: sides.iter().map(|s| s.label.clone()).collect(),
        method: METHOD.into(),
        rows,
        limits: limits_of(sides),
        warnings: shape_warnings(sides),
    }
}


/// The comparison as a terminal table.
pub fn render_compare(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out);
    for (i, r) in c.runs.iter().enumerate() {
        let _ = writeln!(
            out,
            "  {}{} {}{}",
            letter(i),
            if i == 0 { " (baseline)" } else { "" },
            r,
            match c.limits.get(i).and_then(|l| l.as_ref()) {
                Some(l) => format!("   limit: {l}"),
                None => String::new(),
            }
        );
    }
    for w in &c.warnings {
        let _ = writeln!(out, "  !! {w}");
    }
    let _ = writeln!(out);
    let mw = c
        .rows
        .iter()
        .map(|r| r.metric.chars().count())
        .max()
        .unwrap_or(10)
        .max(10);
    let mut scope = String::new();
    for r in &c.rows {
        if r.scope != scope {
            scope = r.scope.clone();
            let _ = writeln!(out, "  {scope}");
        }
        let mut line = format!("    {:<mw$}", r.metric);
        for v in &r.values {
            let _ = write!(line, " {:>10}", fmt_v(*v));
        }
        for (ch, vd) in r.changes.iter().zip(&r.verdicts) {
            let change = ch.map_or("-".to_string(), |x| format!("{x:+.1}%"));
            let _ = write!(line, " {:>9} {:<17}", change, vd.mark());
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let _ = writeln!(out);
    for (mark, meaning) in legend(c) {
        let _ = writeln!(out, "  {mark}: {meaning}");
    }
    let _ = writeln!(out, "  significance: {}", c.method);
    out
}

/// The marks the table uses (beyond better/worse/within noise), with what they mean.
fn legend(c: &Comparison) -> Vec<(&'static str, &'static str)> {
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

/// The comparison as a self-contained HTML page (same table, for sharing).
pub fn render_compare_html(c: &Comparison) -> String {
    use crate::html::esc;
    let mut h = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>pado compare</title>\n<style>\nbody{font:14px/1.45 system-ui,sans-serif;margin:24px 32px;color:#1e293b}\ntable{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #e2e8f0;text-align:right}\ntd.name,th.name{text-align:left}.better{color:#15803d}.worse{color:#b91c1c}.noise{color:#64748b}tr.scope td{font-weight:600;text-align:left;padding-top:14px}\n</style></head><body>\n<h1>pado compare</h1>\n<ol>",
    );
    for (i, r) in c.runs.iter().enumerate() {
        let _ = write!(
            h,
            "<li>{}{}{}</li>",
            esc(r),
            if i == 0 { " (baseline)" } else { "" },
            match c.limits.get(i).and_then(|l| l.as_ref()) {
                Some(l) => format!(" — limit: {}", esc(l)),
                None => String::new(),
            }
        );
    }
    h.push_str("</ol>\n");
    for w in &c.warnings {
        let _ = writeln!(h, "<p class=\"worse\">{}</p>", esc(w));
    }
    h.push_str("<table id=\"table-compare\"><thead><tr><th class=\"name\">metric</th>");
    for r in &c.runs {
        let _ = write!(h, "<th>{}</th>", esc(r));
    }
    for r in c.runs.iter().skip(1) {
        let _ = write!(h, "<th>change ({})</th><th>verdict</th>", esc(r));
    }
    h.push_str("</tr></thead><tbody>\n");
    let mut scope = String::new();
    for r in &c.rows {
        if r.scope != scope {
            scope = r.scope.clone();
            let _ = writeln!(
                h,
                "<tr class=\"scope\"><td colspan=\"{}\">{}</td></tr>",
                1 + c.runs.len() * 3,
                esc(&scope)
            );
        }
        let _ = write!(h, "<tr><td class=\"name\">{}</td>", esc(&r.metric));
        for v in &r.values {
            let _ = write!(h, "<td>{}</td>", fmt_v(*v));
        }
        for (ch, vd) in r.changes.iter().zip(&r.verdicts) {
            let class = match vd {
                Verdict::Better => "better",
                Verdict::Worse => "worse",
                _ => "noise",
            };
            let word = vd.mark();
            let _ = write!(
                h,
                "<td>{}</td><td class=\"{class}\">{word}</td>",
                ch.map_or("-".to_string(), |x| format!("{x:+.1}%"))
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table>\n");
    for (mark, meaning) in legend(c) {
        let _ = writeln!(h, "<p>{}: {}</p>", esc(mark), esc(meaning));
    }
    let _ = write!(
        h,
        "<p>significance: {}</p>\n</body></html>\n",
        esc(&c.method)
    );
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use pado_metrics::{
        Interval, Phases, RequestSample, RunMeta, SecondRecord, SeriesKey, SeriesStats,
    };

    /// A 60-second run whose per-second request count and latency are drawn around
    /// `rps` and `lat_ms` (deterministic noise from `seed`).
    fn synthetic(seed: u64, rps: f64, lat_ms: f64) -> LoadedRun {
        shaped(seed, 60, "synthetic", |_| (rps, lat_ms))
    }

    /// A `secs`-second run named `name` whose second `t` has about `shape(t)` =
    /// (requests, latency ms), with ±3% / ±15% deterministic noise from `seed`.
    fn shaped(seed: u64, secs: u32, name: &str, shape: impl Fn(u32) -> (f64, f64)) -> LoadedRun {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut noise = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 10_000) as f64 / 10_000.0 - 0.5
        };
        let mut seconds = Vec::new();
        for t in 0..secs {
            let (rps, lat_ms) = shape(t);
            let n = (rps * (1.0 + 0.06 * noise())).round() as u64;
            let mut s = SeriesStats::new(SeriesKey::named("home"));
            for _ in 0..n {
                let us = (lat_ms * 1000.0 * (1.0 + 0.3 * noise())) as u64;
                s.record(&RequestSample {
                    status: 200,
                    phases: Phases {
                        duration_us: us,
                        waiting_us: us * 9 / 10,
                        ..Default::default()
                    },
                    ..Default::default()
                });
            }
            let mut r = SecondRecord::new(t);
            r.absorb(Interval {
                series: vec![s],
                ..Default::default()
            });
            seconds.push(r);
        }
        let meta = RunMeta {
            format: "pado-result".into(),
            version: 1,
            name: name.into(),
            duration_s: secs as f64,
            ..Default::default()
        };
        LoadedRun::from_seconds(meta, seconds)
    }

    /// Compare loaded runs (labels a, b, c, ...).
    fn cmp(runs: &[&LoadedRun]) -> Comparison {
        let summaries: Vec<Summary> = runs.iter().map(|r| crate::build(r).unwrap()).collect();
        let sides: Vec<Side<'_>> = runs
            .iter()
            .zip(&summaries)
            .enumerate()
            .map(|(i, (run, summary))| Side {
                label: format!("{}", (b'a' + i as u8) as char),
                run,
                summary,
            })
            .collect();
        compare(&sides)
    }

    fn verdict(c: &Comparison, scope: &str, metric: &str, run: usize) -> Verdict {
        c.rows
            .iter()
            .find(|r| r.scope == scope && r.metric == metric)
            .unwrap_or_else(|| panic!("{scope} {metric}"))
            .verdicts[run]
    }

    #[test]
    fn same_distribution_is_noise_and_a_ten_percent_shift_is_significant() {
        let a = synthetic(1, 1000.0, 20.0);
        let b = synthetic(2, 1000.0, 20.0);
        let c = synthetic(3, 1100.0, 22.0);
        let (sa, sb, sc) = (
            crate::build(&a).unwrap(),
            crate::build(&b).unwrap(),
            crate::build(&c).unwrap(),
        );
        let cmp = compare(&[
            Side {
                label: "a".into(),
                run: &a,
                summary: &sa,
            },
            Side {
                label: "b".into(),
                run: &b,
                summary: &sb,
            },
            Side {
                label: "c".into(),
                run: &c,
                summary: &sc,
            },
        ]);
        assert_eq!(
            verdict(&cmp, "overall", "req/s (mean)", 0),
            Verdict::WithinNoise
        );
        assert_eq!(
            verdict(&cmp, "overall", "latency p95 ms", 0),
            Verdict::WithinNoise
        );
        assert_eq!(verdict(&cmp, "overall", "req/s (mean)", 1), Verdict::Better);
        assert_eq!(
            verdict(&cmp, "overall", "latency p95 ms", 1),
            Verdict::Worse
        );
        assert_eq!(verdict(&cmp, "step home", "req/s", 1), Verdict::Better);
        let row = cmp
            .rows
            .iter()
            .find(|r| r.metric == "req/s (mean)")
            .unwrap();
        let change = row.changes[1].unwrap();
        assert!((change - 10.0).abs() < 2.0, "{change}");
        let text = render_compare(&cmp);
        assert!(
            text.contains("within noise") && text.contains("▲ better"),
            "{text}"
        );
        let html = render_compare_html(&cmp);
        assert!(html.contains("id=\"table-compare\"") && html.contains("class=\"better\""));
        assert!(text.contains("Mann-Whitney"));
    }

    #[test]
    fn the_maximum_is_a_single_value_and_gets_no_mark() {
        // Slower in every second: whatever the two maxima, no mark can be earned
        // from one request each.
        let a = synthetic(1, 1000.0, 20.0);
        let b = synthetic(2, 1000.0, 26.0);
        let c = cmp(&[&a, &b]);
        assert_eq!(
            verdict(&c, "overall", "latency max ms", 0),
            Verdict::NotTested
        );
        assert_eq!(verdict(&c, "overall", "latency p50 ms", 0), Verdict::Worse);
        let row = c
            .rows
            .iter()
            .find(|r| r.metric == "latency max ms")
            .unwrap();
        assert_eq!(row.p_values[0], None);
        let text = render_compare(&c);
        let line = text.lines().find(|l| l.contains("latency max ms")).unwrap();
        assert!(line.trim_end().ends_with('—'), "{line}");
        assert!(text.contains("—: a single value"), "{text}");
    }

    #[test]
    fn a_huge_change_over_three_seconds_is_too_few_to_judge() {
        let a = shaped(1, 3, "t", |_| (100.0, 20.0));
        let b = shaped(2, 3, "t", |_| (100.0, 6000.0));
        let c = cmp(&[&a, &b]);
        assert_eq!(
            verdict(&c, "overall", "latency p95 ms", 0),
            Verdict::TooFewSeconds
        );
        let change = c
            .rows
            .iter()
            .find(|r| r.metric == "latency p95 ms")
            .unwrap()
            .changes[0];
        assert!(change.unwrap() > 10_000.0, "{change:?}");
        let text = render_compare(&c);
        assert!(
            text.contains("? too few seconds") && !text.contains("within noise"),
            "{text}"
        );
        // Twenty seconds of the same: judged, and worse.
        let a = shaped(1, 20, "t", |_| (100.0, 20.0));
        let b = shaped(2, 20, "t", |_| (100.0, 6000.0));
        let c = cmp(&[&a, &b]);
        assert_eq!(verdict(&c, "overall", "latency p95 ms", 0), Verdict::Worse);
    }

    #[test]
    fn a_burst_of_slow_seconds_is_not_called_noise() {
        // Five stalled seconds of sixty: the run's p95 explodes, most seconds do not
        // move.
        let a = synthetic(1, 1000.0, 20.0);
        let b = shaped(2, 60, "synthetic", |t| {
            (1000.0, if t % 12 == 5 { 3000.0 } else { 20.0 })
        });
        let c = cmp(&[&a, &b]);
        assert_eq!(
            verdict(&c, "overall", "latency p95 ms", 0),
            Verdict::FewSeconds
        );
        assert!(render_compare(&c).contains("! a few seconds"));
        // Without the burst: within noise (see also the test above).
        let b = synthetic(3, 1000.0, 20.0);
        let c = cmp(&[&a, &b]);
        assert_eq!(
            verdict(&c, "overall", "latency p95 ms", 0),
            Verdict::WithinNoise
        );
    }

    #[test]
    fn direction_and_significance_come_from_the_same_seconds() {
        // Most seconds are 10% faster, but one in six nearly stops: the seconds
        // shifted up while the run's mean went down. Neither better nor worse.
        let a = synthetic(1, 1000.0, 20.0);
        let b = shaped(2, 60, "synthetic", |t| {
            (if t % 6 == 3 { 100.0 } else { 1100.0 }, 20.0)
        });
        let c = cmp(&[&a, &b]);
        let row = c.rows.iter().find(|r| r.metric == "req/s (mean)").unwrap();
        assert!(row.changes[0].unwrap() < 0.0, "{row:?}");
        assert_eq!(row.verdicts[0], Verdict::Mixed, "{row:?}");
        // Every second 10% faster: better, both ways.
        let b = synthetic(3, 1100.0, 20.0);
        let c = cmp(&[&a, &b]);
        assert_eq!(verdict(&c, "overall", "req/s (mean)", 0), Verdict::Better);
    }

    #[test]
    fn different_tests_and_load_shapes_are_warned_about() {
        let with_shape = |mut r: LoadedRun, desc: &str| {
            r.meta.scenarios = vec![pado_metrics::ScenarioMeta {
                name: "default".into(),
                executor: "constant-vus".into(),
                description: desc.into(),
                open_model: false,
            }];
            r
        };
        let a = with_shape(synthetic(1, 1000.0, 20.0), "8 VUs for 1m");
        let b = with_shape(synthetic(2, 1000.0, 20.0), "8 VUs for 1m");
        assert!(cmp(&[&a, &b]).warnings.is_empty());
        let c = with_shape(shaped(3, 30, "other", |_| (1000.0, 20.0)), "64 VUs for 30s");
        let cmp3 = cmp(&[&a, &b, &c]);
        let w = cmp3.warnings.join("\n");
        assert!(w.contains("A is `synthetic`, C is `other`"), "{w}");
        assert!(
            w.contains("64 VUs for 30s") && w.contains("8 VUs for 1m"),
            "{w}"
        );
        assert!(w.contains("A 60.0 s, C 30.0 s"), "{w}");
        assert!(!w.contains(" B "), "{w}");
        assert!(render_compare(&cmp3).contains("!! the load shapes differ"));
    }

    #[test]
    fn stability_rows_go_from_the_median_to_99_percent() {
        let a = synthetic(1, 1000.0, 20.0);
        let b = synthetic(2, 1000.0, 20.0);
        let c = cmp(&[&a, &b]);
        let at = |m: &str| c.rows.iter().position(|r| r.metric == m).unwrap();
        assert!(at("req/s reached in 50% of seconds") < at("req/s reached in 95% of seconds"));
        assert!(at("req/s reached in 95% of seconds") < at("req/s reached in 99% of seconds"));
    }
}
