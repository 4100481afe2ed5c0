//! `pado find-capacity`: the breakpoint search users do by hand with nGrinder step
//! loads, automated in the open model. Step the arrival rate up (holding each step
//! long enough to be stable), stop when the SLA breaks, refine between the last good
//! and the first bad rate by bisection, and report the highest sustainable rate with
//! the table of steps as evidence.

use std::sync::atomic::AtomicU8;
use std::sync::Arc;
use std::time::Duration;

use pado_analysis::thresholds::{self, Threshold};
use pado_analysis::TotalsSource;
use pado_engine::{compile, RunOptions};
use pado_metrics::Phase;

use crate::args::RunArgs;
use crate::exit::{self, Failure};

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
}

fn try_rate(o: &CapacityOptions, rate: f64) -> Result<StepResult, Failure> {
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
        quiet: true,
        ..Default::default()
    };
    args.rate = Some(rate);
    args.duration = Some(format!("{}ms", o.hold.as_millis()));
    let prep = crate::run_cmd::prepare(&args)?;
    let plan =
        compile(&prep.config, &prep.base_dir).map_err(|e| Failure::invalid(e.to_string()))?;
    let plan = Arc::new(plan);
    pado_engine::limits::raise_nofile(plan.max_vus());
    let report = pado_engine::run(
        plan,
        RunOptions {
            workers: pado_engine::default_workers(),
            stop: Arc::new(AtomicU8::new(0)),
            on_start: None,
        },
        Box::new(|_, _| {}),
    );
    let t = &report.totals;
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
    })
}

fn print_step(s: &StepResult, quiet: bool) {
    if quiet {
        return;
    }
    eprintln!(
        "  {:>10.1}/s  achieved {:>10.1}/s  p95 {:>9.2} ms  errors {:>6.2}%  dropped {:>5.1}%  {}",
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
    while rate <= o.max {
        let s = try_rate(o, rate)?;
        print_step(&s, quiet);
        let ok = s.ok;
        steps.push(s);
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
            let mid = (lo + hi) / 2.0;
            let s = try_rate(o, mid)?;
            print_step(&s, quiet);
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
    if json {
        println!(
            "{}",
            serde_json::json!({ "max_sustainable_rate": good, "steps": steps })
        );
    } else {
        match good {
            Some(r) => println!(
                "maximum sustainable rate: {r:.1} iterations/s (SLA holds; the next rate tried broke it)"
            ),
            None if steps.first().is_some_and(|s| !s.ok) => println!(
                "the SLA already breaks at the start rate ({}/s): start lower",
                o.start
            ),
            None => println!("no break found up to {}/s", o.max),
        }
    }
    Ok(exit::OK)
}
