//! `find-capacity`: the breakpoint search users do by hand with nGrinder step
//! loads, automated in the open model. Which rates to try, how a step is judged
//! against the SLA and how the search ended are `pado_analysis::capacity`'s; this
//! runs each step as a full run ([`crate::run`]) of the one reading of the scenario
//! with the step's rate and length, measures what the target sustained within the
//! hold, and hands each step to the caller ([`Steps`]) to print and record.

use std::path::PathBuf;
use std::time::Duration;

use pado_analysis::capacity::{self, Outcome, SearchPlan, StepCounts, StepVerdict};
use pado_analysis::thresholds::{self, Threshold};
use pado_analysis::TotalsSource;
use pado_engine::StopState;
use pado_metrics::Phase;
use pado_scenario::{Dur, LoadShape};

use crate::config::{Output, RunConfig};
use crate::prepare::{LoadSpec, Prepared, ScenarioText};
use crate::run::Finished;
use crate::SessionError;

/// What to search, checked before the first step.
pub struct Search {
    /// What to load (a URL or a scenario file) and how requests are sent, as a
    /// run takes it; each step sets its own rate and length.
    pub load: LoadSpec,
    /// Reuse non-empty step directories.
    pub overwrite: bool,
    /// The rates to try (start, factor, maximum, refinement rounds).
    pub plan: SearchPlan,
    /// How long each step holds its rate.
    pub hold: Duration,
    /// The SLA, in threshold syntax.
    pub sla: Vec<Threshold>,
    /// Largest share of dropped iterations a step may have.
    pub max_dropped: f64,
    /// Where each step's result directory goes (`step-NN-RATE`).
    pub out: PathBuf,
    /// Where each step's run keeps the record of the fault windows its events open
    /// (see [`crate::open_faults::state_dir`]); `None`: no record outside the step's
    /// result directory.
    pub fault_state_dir: Option<PathBuf>,
}

/// One tried rate.
#[derive(Clone, Debug, serde::Serialize)]
pub struct StepResult {
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
    /// Whether a stop (Ctrl-C) cut the step short.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

/// The caller's part in a search: it stops steps (the CLI's Ctrl-C), and it shows
/// and records each step.
pub trait Steps {
    /// A step is about to run with `stop` as its stop state: whoever stops the
    /// search (Ctrl-C) stops this step's run through it.
    fn starting(&mut self, stop: &StopState);
    /// Whether the person running the search asked it to stop: no further step
    /// starts, and the step that was running counts as interrupted.
    fn stop_requested(&self) -> bool;
    /// A step ended; `write_error` is a report file of its directory that could not
    /// be written (its figures are still good).
    fn finished(&mut self, step: &StepResult, write_error: Option<&SessionError>);
}

impl Search {
    /// What a step at `rate` loads: the search's settings with the step's rate and
    /// length.
    pub fn step_spec(&self, rate: f64) -> LoadSpec {
        let mut spec = self.load.clone();
        spec.overrides.shape = Some(LoadShape::Rate {
            rate,
            duration: Dur(self.hold),
        });
        spec.overrides.name = Some(format!("capacity-{rate:.1}"));
        spec
    }

    /// Read the scenario once and check it as the first step will run it: a broken
    /// file is an error of its own (file:line), not a failed step.
    pub fn read(&self) -> Result<ScenarioText, SessionError> {
        let text = ScenarioText::read(&self.load)?;
        Prepared::from_read(&text, &self.step_spec(self.plan.start()))?;
        Ok(text)
    }

    /// Run the search over `text` (from [`Search::read`]: every step runs the same
    /// reading with its own rate, so an edit to the file during the search does not
    /// change the test half-way); returns the steps and how it ended.
    pub fn run(
        &self,
        text: &ScenarioText,
        steps: &mut dyn Steps,
    ) -> Result<(Vec<StepResult>, Outcome), SessionError> {
        let mut done = Vec::new();
        let outcome = capacity::search(&self.plan, |n, rate| {
            if steps.stop_requested() {
                return Ok::<_, SessionError>(StepVerdict::Interrupted);
            }
            let (s, judged, write_error) = self.try_rate(text, rate, n, steps)?;
            steps.finished(&s, write_error.as_ref());
            // A stop asked during the step stops the search even if the step's run
            // had already ended when it came.
            let verdict = judged.verdict(s.interrupted || steps.stop_requested());
            done.push(s);
            Ok(verdict)
        })?;
        Ok((done, outcome))
    }

    /// Run one step at `rate` for the hold, as a run of the same settings with that
    /// rate and length; its figures, how it measured against the SLA, and a report
    /// file that could not be written.
    fn try_rate(
        &self,
        text: &ScenarioText,
        rate: f64,
        n: usize,
        steps: &mut dyn Steps,
    ) -> Result<(StepResult, capacity::StepJudgement, Option<SessionError>), SessionError> {
        let prepared = Prepared::from_read(text, &self.step_spec(rate))?;
        let output = Output {
            dir: Some(self.out.join(format!("step-{n:02}-{rate:.1}"))),
            overwrite: self.overwrite,
            html: false,
            quiet: true,
            ..Default::default()
        };
        let mut cfg = RunConfig::new(prepared.compile()?, prepared.scenario(), output);
        cfg.ledger = Some(crate::open_faults::ledger_factory(
            self.fault_state_dir.clone(),
        ));
        steps.starting(&cfg.stop);
        let done = crate::run(cfg)?;
        let judged = self.judge(&done);
        let step = step_result(rate, &done, &judged);
        Ok((step, judged, done.write_error))
    }

    /// The SLA over the step's exact totals (not the file's own thresholds).
    fn judge(&self, done: &Finished) -> capacity::StepJudgement {
        let t = &done.totals;
        let sc = t.all_scenarios();
        let src = TotalsSource::new(t, self.hold.as_secs_f64()).with_steps(&done.steps);
        capacity::judge(
            &thresholds::evaluate(&self.sla, &src),
            StepCounts {
                iterations: sc.iterations,
                dropped: sc.dropped,
                interrupted: sc.interrupted,
            },
            self.max_dropped,
        )
    }
}

/// A step's figures from its finished run.
fn step_result(rate: f64, done: &Finished, judged: &capacity::StepJudgement) -> StepResult {
    let all = done.totals.overall();
    let sc = done.totals.all_scenarios();
    let g = done.summary.generator.as_ref().filter(|g| g.saturated);
    let (in_hold, rps) = held_rate(&done.summary);
    StepResult {
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
        result_dir: done.dir.clone(),
        interrupted: done.summary.interrupted,
    }
}

/// Requests completed within the hold and their rate per second. The hold is the
/// scenarios' stage window from second 0: its full seconds count what completed
/// while the rate was being sent, not the backlog after it.
fn held_rate(summary: &pado_report::Summary) -> (u64, f64) {
    let window = summary
        .stages
        .iter()
        .filter(|w| w.start_s == 0.0)
        .max_by_key(|w| w.requests);
    match window {
        Some(w) if w.seconds > 0 => (w.requests, w.requests as f64 / w.seconds as f64),
        _ => (0, 0.0),
    }
}

/// The lowest rate at which pado itself was saturated or starved: a break (or a
/// plateau) from there on says nothing sure about the target.
pub fn saturated_from(steps: &[StepResult]) -> Option<f64> {
    capacity::lowest_saturated_rate(steps.iter().map(|s| (s.rate, s.generator_saturated)))
}

/// The share of a broken rate below which a rate that held is clearly below the
/// capacity: the low load the limit is read against ([`limit_between`]).
pub const CLEAR_BELOW: f64 = 0.8;

/// What limited the target where the SLA broke (with observe endpoints), if it was
/// found: [`limit_between`], else the first broken step's own table.
pub fn limit_at_break(steps: &[StepResult]) -> Option<String> {
    limit_between(steps).or_else(|| steps.iter().find(|s| !s.ok).and_then(|s| s.limit.clone()))
}

/// The lowest rate that broke read against a rate below it that held
/// (`attribution::between_steps`): what filled up between the two is the limit,
/// and what was as full where the target kept up (a machine's CPU kept busy by
/// other work) is not. The rates that held are tried from the highest at most
/// [`CLEAR_BELOW`] of the broken rate down, then the ones above it: a rate just
/// under the capacity has the limit about as full as the rate that broke (what
/// grew between them is what waits on it), one clearly below shows it filling.
/// `None` when no rate held below a broken one, or no pair shows a component
/// that filled up.
pub fn limit_between(steps: &[StepResult]) -> Option<String> {
    use pado_analysis::attribution::{between_steps::between_steps, headline::headline, Verdict};
    let broke = steps
        .iter()
        .filter(|s| !s.ok && !s.interrupted)
        .min_by(|a, b| a.rate.total_cmp(&b.rate))?;
    let mut held: Vec<&StepResult> = steps
        .iter()
        .filter(|s| s.ok && !s.interrupted && s.rate < broke.rate)
        .collect();
    let clear = |s: &StepResult| s.rate <= broke.rate * CLEAR_BELOW;
    held.sort_by(|a, b| clear(b).cmp(&clear(a)).then(b.rate.total_cmp(&a.rate)));
    held.iter()
        .filter_map(|h| {
            between_steps(&h.result_dir, &broke.result_dir)
                .ok()
                .flatten()
        })
        .find(|t| t.components.iter().any(|c| c.verdict == Verdict::Yes))
        .map(|t| headline(Some(&t)).phrase)
}

#[cfg(test)]
mod tests;
