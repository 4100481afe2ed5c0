//! `pado find-capacity`: the breakpoint search users do by hand with nGrinder step
//! loads, automated in the open model. The decisions (step up, bisect, how a step
//! is judged against the SLA, how the search ended) are `pado_analysis::capacity`'s;
//! this module only runs each step as a full `pado run` built by
//! [`crate::config`], hands its figures over, and prints the steps and the outcome.

use std::path::PathBuf;
use std::time::Duration;

use pado_analysis::capacity::{self, Outcome, SearchPlan, StepCounts, StepVerdict};
use pado_analysis::thresholds::{self, Threshold};
use pado_analysis::TotalsSource;
use pado_metrics::Phase;
use pado_scenario::{Dur, LoadShape};

use crate::config::{LoadSpec, RunConfig};
use crate::exit::{self, Failure};
use crate::out::outln;
use crate::prepared::{Prepared, ScenarioText};
use pado_session::Output;

/// Search settings.
pub(crate) struct CapacityOptions {
    /// What to load (a URL or a scenario file) and how requests are sent, as
    /// `pado run` takes it; each step sets its own rate and length.
    pub load: LoadSpec,
    /// Reuse non-empty step directories (`--overwrite`).
    pub overwrite: bool,
    /// The rates to try (start, factor, maximum, refinement rounds).
    pub plan: SearchPlan,
    /// First rate (iterations per second), for the messages.
    pub start: f64,
    /// Each step multiplies the rate by this, for the messages.
    pub factor: f64,
    /// How long each step holds its rate.
    pub hold: Duration,
    /// The SLA, in threshold syntax.
    pub sla: Vec<Threshold>,
    /// Largest share of dropped iterations a step may have.
    pub max_dropped: f64,
    /// Where each step's result directory goes (`step-NN-RATE`).
    pub out: PathBuf,
    /// Where each step is recorded.
    pub history: crate::history_cmd::Recorder,
}

/// One tried rate.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct StepResult {
    /// Requested iterations per second.
    pub rate: f64,
    /// Requests the target completed per second *within the hold* (its full
    /// seconds, not the graceful stop after it): what it sustained. Past capacity
    /// this stays at the capacity while the rate sent keeps growing.
    pub rps: f64,
    /// Requests that completed after the hold, during the graceful stop: the backlog
    /// the target had not worked off when the step's time was up.
    pub completed_after_hold: u64,
    /// Iterations still unfinished when the graceful stop ended (cut off).
    pub unfinished: u64,
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

/// What a step at `rate` loads: the search's flags with the step's rate and length.
fn step_spec(o: &CapacityOptions, rate: f64) -> LoadSpec {
    let mut spec = o.load.clone();
    spec.overrides.shape = Some(LoadShape::Rate {
        rate,
        duration: Dur(o.hold),
    });
    spec.overrides.name = Some(format!("capacity-{rate:.1}"));
    spec
}

/// Run one step at `rate` for the hold, as `pado run` would run the same flags with
/// `--rate RATE --duration HOLD`; its figures, and how it measured against the SLA.
fn try_rate(
    o: &CapacityOptions,
    text: &ScenarioText,
    rate: f64,
    n: usize,
) -> Result<(StepResult, capacity::StepJudgement), Failure> {
    let spec = step_spec(o, rate);
    let output = Output {
        dir: Some(o.out.join(format!("step-{n:02}-{rate:.1}"))),
        overwrite: o.overwrite,
        html: false,
        quiet: true,
        ..Default::default()
    };
    let prepared = Prepared::from_read(text, &spec)?;
    let done = crate::run_cmd::execute(&RunConfig::new(prepared, output))?;
    if let Some(e) = &done.write_error {
        // The step's figures are in memory; only its saved report is missing.
        eprintln!("warning: step at {rate:.1}/s: {e}");
    }
    o.history
        .record(&done.dir, pado_history::Kind::CapacityStep);
    // The SLA over the step's exact totals (not the file's own thresholds).
    let t = &done.totals;
    let all = t.overall();
    let sc = t.all_scenarios();
    let src = TotalsSource::new(t, o.hold.as_secs_f64()).with_steps(&done.steps);
    let judged = capacity::judge(
        &thresholds::evaluate(&o.sla, &src),
        StepCounts {
            iterations: sc.iterations,
            dropped: sc.dropped,
            interrupted: sc.interrupted,
        },
        o.max_dropped,
    );
    let g = done.summary.generator.as_ref().filter(|g| g.saturated);
    // The hold is the scenarios' stage window from second 0: its full seconds count
    // what completed while the rate was being sent, not the backlog after it.
    let window = done
        .summary
        .stages
        .iter()
        .filter(|w| w.start_s == 0.0)
        .max_by_key(|w| w.requests);
    let (in_hold, rps) = match window {
        Some(w) if w.seconds > 0 => (w.requests, w.requests as f64 / w.seconds as f64),
        _ => (0, 0.0),
    };
    let step = StepResult {
        rate,
        rps,
        completed_after_hold: all.requests.saturating_sub(in_hold),
        unfinished: sc.interrupted,
        p95_ms: all.phase(Phase::Duration).quantile_us(0.95) as f64 / 1000.0,
        error_rate: if all.requests > 0 {
            all.failed as f64 / all.requests as f64
        } else {
            1.0
        },
        dropped: judged.dropped,
        ok: judged.held(),
        failing: judged.failing.clone(),
        generator_saturated: g.is_some(),
        generator: g.map(|g| g.message.clone()),
        limit: done
            .summary
            .bottlenecks
            .as_ref()
            .and_then(|b| b.limit.clone()),
        result_dir: done.dir,
        interrupted: done.summary.interrupted,
    };
    Ok((step, judged))
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
    if s.completed_after_hold > 0 || s.unfinished > 0 {
        tail.push_str(&format!(
            "  after the hold: {} completed, {} unfinished",
            s.completed_after_hold, s.unfinished
        ));
    }
    eprintln!(
        "  {:>10.1}/s  completed {:>10.1}/s  p95 {:>9.2} ms  errors {:>6.2}%  dropped {:>5.1}%  {}{tail}",
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

/// Run the search; returns the steps and how it ended. The scenario is read once:
/// every step runs the same text with its own rate (an edit to the file during the
/// search does not change the test half-way).
pub(crate) fn search(
    o: &CapacityOptions,
    text: &ScenarioText,
    quiet: bool,
) -> Result<(Vec<StepResult>, Outcome), Failure> {
    let mut steps = Vec::new();
    let outcome = capacity::search(&o.plan, |n, rate| {
        if crate::run_cmd::interrupted_by_user() {
            return Ok::<_, Failure>(StepVerdict::Interrupted);
        }
        let (s, judged) = try_rate(o, text, rate, n)?;
        print_step(&s, quiet);
        // A press during the step stops the search even if the step's run had
        // already ended when it came.
        let verdict = judged.verdict(s.interrupted || crate::run_cmd::interrupted_by_user());
        steps.push(s);
        Ok(verdict)
    })?;
    Ok((steps, outcome))
}

/// The outcome in words: only a found capacity is called one.
fn outcome_lines(outcome: &Outcome, by_user: bool) -> Vec<String> {
    match *outcome {
        Outcome::Found { capacity, broke_at } => vec![format!(
            "maximum sustainable rate: {capacity:.1} iterations/s (the SLA held there and broke at {broke_at:.1}/s)"
        )],
        Outcome::NoBreakUpToMax { max } => vec![format!(
            "no break found up to --max-rate {max:.1}/s: the SLA held at every rate tried, so the capacity is above {max:.1}/s (raise --max-rate to find it)"
        )],
        Outcome::FirstStepFailed { start } => vec![format!(
            "the SLA already breaks at the start rate ({start:.1}/s): no capacity found, start lower"
        )],
        Outcome::Interrupted {
            step,
            rate,
            highest_held,
            lowest_broken,
        } => {
            let how = if by_user {
                format!("interrupted at step {step} ({rate:.1}/s)")
            } else {
                format!(
                    "step {step} ({rate:.1}/s) stopped early (an abort_on_fail threshold of the scenario failed; see its summary)"
                )
            };
            let what = match (highest_held, lowest_broken) {
                (Some(lo), Some(hi)) => format!(
                    "the SLA held at {lo:.1}/s and broke at {hi:.1}/s: the capacity lies between them, less refined than asked"
                ),
                (Some(lo), None) => format!(
                    "the highest rate that held so far is {lo:.1}/s, not a capacity: no rate had broken the SLA yet"
                ),
                _ => "no rate was completed: no capacity".to_string(),
            };
            vec![format!("{how}: {what}")]
        }
    }
}

/// A break (or a plateau) while pado itself was saturated says nothing about the
/// target: the warning naming the lowest rate at which that happened.
fn generator_warning(steps: &[StepResult]) -> Option<String> {
    let from =
        capacity::lowest_saturated_rate(steps.iter().map(|s| (s.rate, s.generator_saturated)))?;
    Some(format!(
        "{}: from {from:.1}/s on, pado itself was saturated or starved (see each step's summary.json `generator`); a break or limit seen from there on may be pado's, not the target's: give pado more cores or split the load over more generators",
        pado_report::GENERATOR_SATURATED
    ))
}

/// `pado find-capacity`.
pub(crate) fn run(o: CapacityOptions, json: bool) -> Result<i32, Failure> {
    // Read and check the scenario before the first step: a broken file is an error
    // of its own (file:line), not a failed step.
    let text = ScenarioText::read(&o.load)?;
    Prepared::from_read(&text, &step_spec(&o, o.start))?;
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
    let (steps, outcome) = search(&o, &text, json)?;
    let by_user = crate::run_cmd::interrupted_by_user();
    let warning = generator_warning(&steps);
    let limit_at_break = steps.iter().find(|s| !s.ok).and_then(|s| s.limit.clone());
    if json {
        outln!(
            "{}",
            serde_json::json!({
                "max_sustainable_rate": outcome.capacity(),
                "outcome": outcome,
                "summary": outcome_lines(&outcome, by_user).join(" "),
                "steps": steps,
                "limit_at_break": limit_at_break,
                "generator_warning": warning,
                "results": o.out,
            })
        );
    } else {
        for l in outcome_lines(&outcome, by_user) {
            outln!("{l}");
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
            completed_after_hold: 0,
            unfinished: 0,
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
