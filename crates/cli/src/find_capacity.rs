//! `pado find-capacity`: the breakpoint search users do by hand with nGrinder step
//! loads, automated in the open model. The search (each step a full run, judged
//! against the SLA, how it ended) is [`pado_session::find_capacity`]'s; this module
//! stops it on Ctrl-C, records each step in the history, and prints the steps and
//! the outcome.

use pado_analysis::capacity::Outcome;
use pado_analysis::thresholds::Threshold;
use pado_engine::StopState;
use pado_session::find_capacity::{limit_at_break, saturated_from, Search, StepResult, Steps};
use pado_session::SessionError;

use crate::exit::{self, Failure};
use crate::out::outln;

/// The command line's part in a search: Ctrl-C, the history, the steps' lines.
struct Shown<'a> {
    history: &'a crate::history_cmd::Recorder,
    quiet: bool,
}

impl Steps for Shown<'_> {
    fn starting(&mut self, stop: &StopState) {
        crate::run_cmd::watch_ctrl_c(stop.clone(), true);
    }

    fn stop_requested(&self) -> bool {
        crate::run_cmd::interrupted_by_user()
    }

    fn finished(&mut self, s: &StepResult, write_error: Option<&SessionError>) {
        if let Some(e) = write_error {
            // The step's figures are in memory; only its saved report is missing.
            eprintln!("warning: step at {:.1}/s: {e}", s.rate);
        }
        self.history
            .record(&s.result_dir, pado_history::Kind::CapacityStep);
        print_step(s, self.quiet);
    }
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
    let from = saturated_from(steps)?;
    Some(format!(
        "{}: from {from:.1}/s on, pado itself was saturated or starved (see each step's summary.json `generator`); a break or limit seen from there on may be pado's, not the target's: give pado more cores or split the load over more generators",
        pado_report::GENERATOR_SATURATED
    ))
}

/// `pado find-capacity`: the scenario read and checked before the first step,
/// then the search, then its outcome (`json`: one JSON object).
pub(crate) fn run(
    search: Search,
    sla: &[Threshold],
    history: &crate::history_cmd::Recorder,
    json: bool,
) -> Result<i32, Failure> {
    let text = search.read()?;
    if !json {
        eprintln!(
            "searching: from {}/s, ×{} per step, {} s each, SLA: {}",
            search.plan.start(),
            search.plan.factor(),
            search.hold.as_secs_f64(),
            sla.iter()
                .map(|t| format!("{}: {}", t.metric_key(), t.source))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let (steps, outcome) = search.run(
        &text,
        &mut Shown {
            history,
            quiet: json,
        },
    )?;
    let by_user = crate::run_cmd::interrupted_by_user();
    let warning = generator_warning(&steps);
    let limit_at_break = limit_at_break(&steps);
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
                "results": search.out,
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
        outln!("steps' results: {}", search.out.display());
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
            result_dir: Default::default(),
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
