//! `pado find-capacity`: the breakpoint search users do by hand with nGrinder step
//! loads, automated in the open model. Step the arrival rate up (holding each step
//! long enough to be stable), stop when the SLA breaks, refine between the last good
//! and the first bad rate by bisection, and report the highest sustainable rate with
//! the table of steps as evidence.

use std::path::PathBuf;
use std::time::Duration;

use pado_analysis::thresholds::{self, Threshold};
use pado_analysis::TotalsSource;
use pado_metrics::Phase;

use crate::args::RunArgs;
use crate::exit::{self, Failure};
use crate::out::outln;

/// Search settings.
pub struct CapacityOptions {
    /// What to load (a URL or a scenario file), as `pado run` takes it.
    pub base: RunArgs,
    /// First rate (iterations per second).
    pub start: f64,
    /// Each step multiplies the rate by this.
    pub factor: f64,
    /// Highest rate to try.
    pub max: f64,
    /// How long each step holds its rate.
    pub hold: Duration,
    /// Bisection rounds between the last good and first bad rate.
    pub refine: u32,
    /// The SLA, in threshold syntax.
    pub sla: Vec<Threshold>,
    /// Largest share of dropped iterations a step may have.
    pub max_dropped: f64,
    /// Where each step's result directory goes (`step-NN-RATE`).
    pub out: PathBuf,
}

/// One tried rate.
#[derive(Clone, Debug, serde::Serialize)]
pub struct StepResult {
    /// Requested iterations per second.
    pub rate: f64,
    /// Achieved requests per second.
    pub rps: f64,
    /// p95 latency, ms.
    pub p95_ms: f64,
    /// Failed share.
    pub error_rate: f64,
    /// Dropped share of scheduled iterations.
    pub dropped: f64,
    /// Whether the SLA held.
    pub ok: bool,
    /// Which SLA parts failed.
    pub failing: Vec<String>,
    /// Whether pado itself was saturated or starved during the step (then the
    /// step measured pado, not the target).
    pub generator_saturated: bool,
    /// The self-check's sentence when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generator: Option<String>,
    /// The limiting component from the target's metrics (with `--observe`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    /// The step's result directory (`pado report` works on it).
    pub result_dir: PathBuf,
    /// Whether Ctrl-C cut the step short.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

fn try_rate(o: &CapacityOptions, rate: f64, n: usize) -> Result<StepResult, Failure> {
    let mut args = RunArgs {
        scenario: o.base.scenario.clone(),
        url: o.base.url.clone(),
        target: o.base.target.clone(),
        method: o.base.method.clone(),
        headers: o.base.headers.clone(),
        body: o.base.body.clone(),
        body_file: o.base.body_file.clone(),
        timeout: o.base.timeout.clone(),
        insecure: o.base.insecure,
        max_vus: o.base.max_vus,
        observe: o.base.observe.clone(),
        observe_interval: o.base.observe_interval.clone(),
        quiet: true,
        no_html: true,
        name: Some(format!("capacity-{rate:.1}")),
        out: Some(o.out.join(format!("step-{n:02}-{rate:.1}"))),
        overwrite: o.base.overwrite,
        ..Default::default()
    };
    args.rate = Some(rate);
    args.duration = Some(format!("{}ms", o.hold.as_millis()));
    let done = crate::run_cmd::execute(&args)?;
    // The SLA over the step's exact totals (not the file's own thresholds).
    let t = &done.totals;
    let all = t.overall();
    let sc = t.all_scenarios();
    let hold_s = o.hold.as_secs_f64();
    let src = TotalsSource::new(t, hold_s);
    let results = thresholds::evaluate(&o.sla, &src);
    let scheduled = (sc.iterations + sc.dropped + sc.interrupted).max(1) as f64;
    let dropped = sc.dropped as f64 / scheduled;
    let mut failing: Vec<String> = results
        .iter()
        .filter(|r| !r.ok)
        .map(|r| format!("{}: {}", r.metric, r.expr))
        .collect();
    if dropped > o.max_dropped {
        failing.push(format!("dropped {:.1}% of iterations", dropped * 100.0));
    }
    let g = done.summary.generator.as_ref().filter(|g| g.saturated);
    Ok(StepResult {
        rate,
        rps: all.requests as f64 / hold_s,
        p95_ms: all.phase(Phase::Duration).quantile_us(0.95) as f64 / 1000.0,
        error_rate: if all.requests > 0 {
            all.failed as f64 / all.requests as f64
        } else {
            1.0
        },
        dropped,
        ok: failing.is_empty(),
        failing,
        generator_saturated: g.is_some(),
        generator: g.map(|g| g.message.clone()),
        limit: done
            .summary
            .bottlenecks
            .as_ref()
            .and_then(|b| b.limit.clone()),
        result_dir: done.dir,
        interrupted: done.summary.interrupted,
    })
}

fn print_step(s: &StepResult, quiet: bool) {
    if quiet {
        return;
    }
    let mut tail = String::new();
    if let Some(l) = &s.limit {
        tail.push_str(&format!("  limit: {l}"));
    }
    if s.generator_saturated {
        tail.push_str("  !! GENERATOR SATURATED");
    }
    eprintln!(
        "  {:>10.1}/s  achieved {:>10.1}/s  p95 {:>9.2} ms  errors {:>6.2}%  dropped {:>5.1}%  {}{tail}",
        s.rate,
        s.rps,
        s.p95_ms,
        s.error_rate * 100.0,
        s.dropped * 100.0,
        if s.ok {
            "ok".to_string()
        } else {
            format!("breaks: {}", s.failing.join("; "))
        }
    );
}

/// Run the search; returns the steps and the highest good rate.
pub fn search(o: &CapacityOptions, quiet: bool) -> Result<(Vec<StepResult>, Option<f64>), Failure> {
    let mut steps = Vec::new();
    let mut good: Option<f64> = None;
    let mut bad: Option<f64> = None;
    let mut rate = o.start;
    while rate <= o.max && !crate::run_cmd::interrupted_by_user() {
        let s = try_rate(o, rate, steps.len() + 1)?;
        print_step(&s, quiet);
        let ok = s.ok && !s.interrupted;
        steps.push(s);
        if steps.last().is_some_and(|s| s.interrupted) {
            break;
        }
        if ok {
            good = Some(rate);
            rate *= o.factor;
        } else {
            bad = Some(rate);
            break;
        }
    }
    if let (Some(mut lo), Some(mut hi)) = (good, bad) {
        for _ in 0..o.refine {
            if crate::run_cmd::interrupted_by_user() {
                break;
            }
            let mid = (lo + hi) / 2.0;
            let s = try_rate(o, mid, steps.len() + 1)?;
            print_step(&s, quiet);
            if s.interrupted {
                steps.push(s);
                break;
            }
            if s.ok {
                lo = mid;
            } else {
                hi = mid;
            }
            steps.push(s);
        }
        good = Some(lo);
    }
    Ok((steps, good))
}

/// A break (or a plateau) while pado itself was saturated says nothing about the
/// target: the warning naming the lowest rate at which that happened.
fn generator_warning(steps: &[StepResult]) -> Option<String> {
    let from = steps
        .iter()
        .filter(|s| s.generator_saturated)
        .map(|s| s.rate)
        .fold(None, |a: Option<f64>, r| Some(a.map_or(r, |a| a.min(r))))?;
    Some(format!(
        "{}: from {from:.1}/s on, pado itself was saturated or starved (see each step's summary.json `generator`); the capacity found may be pado's, not the target's: give pado more cores or split the load over more generators",
        pado_report::GENERATOR_SATURATED
    ))
}

/// `pado find-capacity`.
pub fn run(o: CapacityOptions, json: bool) -> Result<i32, Failure> {
    if !json {
        eprintln!(
            "searching: from {}/s, ×{} per step, {} s each, SLA: {}",
            o.start,
            o.factor,
            o.hold.as_secs_f64(),
            o.sla
                .iter()
                .map(|t| format!("{}: {}", t.metric_key(), t.source))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let (steps, good) = search(&o, json)?;
    let warning = generator_warning(&steps);
    let limit_at_break = steps.iter().find(|s| !s.ok).and_then(|s| s.limit.clone());
    if json {
        outln!(
            "{}",
            serde_json::json!({
                "max_sustainable_rate": good,
                "steps": steps,
                "limit_at_break": limit_at_break,
                "generator_warning": warning,
                "results": o.out,
            })
        );
    } else {
        match good {
            Some(r) => outln!(
                "maximum sustainable rate: {r:.1} iterations/s (SLA holds; the next rate tried broke it)"
            ),
            None if steps.first().is_some_and(|s| !s.ok) => outln!(
                "the SLA already breaks at the start rate ({}/s): start lower",
                o.start
            ),
            None => outln!("no break found up to {}/s", o.max),
        }
        if let Some(l) = &limit_at_break {
            outln!("what limited the target where the SLA broke: {l}");
        }
        if let Some(w) = &warning {
            outln!("!! {w}");
        }
        outln!("steps' results: {}", o.out.display());
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(rate: f64, saturated: bool) -> StepResult {
        StepResult {
            rate,
            rps: rate,
            p95_ms: 1.0,
            error_rate: 0.0,
            dropped: 0.0,
            ok: true,
            failing: Vec::new(),
            generator_saturated: saturated,
            generator: None,
            limit: None,
            result_dir: PathBuf::new(),
            interrupted: false,
        }
    }

    #[test]
    fn the_warning_names_the_lowest_rate_pado_was_saturated_at() {
        assert!(generator_warning(&[step(100.0, false), step(150.0, false)]).is_none());
        let w =
            generator_warning(&[step(100.0, false), step(225.0, true), step(150.0, true)]).unwrap();
        assert!(w.starts_with("GENERATOR SATURATED"), "{w}");
        assert!(w.contains("from 150.0/s on"), "{w}");
    }
}
