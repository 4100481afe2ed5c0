//! A run's part in a split test (one test on many generators): the plan's
//! fingerprint (`plan_id`) that tells segments of one test apart from others, the
//! global setup run alone and its variables handed over as a file (`pado setup
//! --out`, `pado run --setup-vars`), those variables placed in the plan's order, and
//! the wait for the agreed start.

use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant, SystemTime};

use pado_base::stamp::utc_ms;
use pado_engine::executor::segment::{parse_segment, parse_weights, Segment};
use pado_engine::RUNNING;
use pado_scenario::plan_id::PlanSource;

use crate::notice;
use crate::prepare::{LoadSpec, Prepared, Source};
use crate::SessionError;

/// `--segment i/N` with `--segment-weights` into the engine's [`Segment`]: the
/// one reading of both flags for `pado run`, the agent flow and Kubernetes.
pub fn segment(flag: &str, weights: Option<&str>) -> Result<Segment, SessionError> {
    let (i, n) =
        parse_segment(flag).map_err(|e| SessionError::Invalid(format!("--segment: {e}")))?;
    let w = weights
        .map(parse_weights)
        .transpose()
        .map_err(|e| SessionError::Invalid(format!("--segment-weights: {e}")))?;
    Segment::new(i, n, w.as_deref())
        .map_err(|e| SessionError::Invalid(format!("--segment-weights: {e}")))
}

/// A run's segment from its flags: none without `--segment`. Weights say how a
/// test is split, so they mean something only beside `--segment` or when the run
/// splits itself over `--generators` (`distributed`); alone they are refused
/// rather than silently ignored.
pub fn run_segment(
    flag: Option<&str>,
    weights: Option<&str>,
    distributed: bool,
) -> Result<Option<Segment>, SessionError> {
    if weights.is_some() && flag.is_none() && !distributed {
        return Err(SessionError::Invalid(
            "--segment-weights: give it with --segment i/N (or --generators)".to_string(),
        ));
    }
    flag.map(|f| segment(f, weights)).transpose()
}

/// The wait for the start ends this much before it: the rest (result directory,
/// global setup, worker threads) happens meanwhile, and the engine starts second 0
/// on the instant.
pub const START_LEAD: Duration = Duration::from_secs(1);

/// Wait for `at` (until [`START_LEAD`] before it), saying when the run starts
/// unless `quiet`. A stop requested meanwhile (`stop` no longer running: Ctrl-C)
/// ends the wait with [`SessionError::Interrupted`]: nothing was sent and no result
/// directory is written. Returns the instant of second 0 on this machine's
/// monotonic clock.
pub fn wait_for_start(
    at: SystemTime,
    stop: &AtomicU8,
    quiet: bool,
) -> Result<Instant, SessionError> {
    let instant = to_instant(at);
    let left = instant.saturating_duration_since(Instant::now());
    if !quiet {
        notice::line(&format!(
            "starting at {} (in {})",
            utc_ms(at),
            pado_base::units::duration_compact(Duration::from_secs(
                left.as_secs_f64().round() as u64
            ))
        ));
    }
    let until = instant.checked_sub(START_LEAD).unwrap_or(instant);
    while Instant::now() < until {
        if stop.load(Ordering::SeqCst) != RUNNING {
            return Err(SessionError::Interrupted(
                "interrupted while waiting for --start-at: nothing was sent, no result directory was written".into(),
            ));
        }
        std::thread::sleep(
            until
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(50)),
        );
    }
    Ok(instant)
}

/// A wall-clock time on the monotonic clock.
fn to_instant(at: SystemTime) -> Instant {
    let (now_i, now_s) = (Instant::now(), SystemTime::now());
    match at.duration_since(now_s) {
        Ok(ahead) => now_i + ahead,
        Err(e) => now_i.checked_sub(e.duration()).unwrap_or(now_i),
    }
}

/// The fingerprint of the whole test (`pado_scenario::plan_id`, which says what
/// counts) of the loaded scenario and the settings on top of it.
pub fn plan_id(spec: &LoadSpec, prep: &Prepared) -> Result<String, SessionError> {
    let source = match &spec.source {
        Source::File(p) => PlanSource::File(p),
        Source::Url(q) => PlanSource::Quick(q),
    };
    pado_scenario::plan_id::plan_id(
        source,
        &prep.config,
        &prep.base_dir,
        &spec.overrides,
        spec.fit_to,
    )
    .map_err(|e| SessionError::Invalid(e.to_string()))
}

/// A `--setup-vars FILE`: a JSON object of variable name → string value, (name,
/// value) in the file's order.
pub fn read_setup_vars(path: &Path) -> Result<Vec<(String, Vec<u8>)>, SessionError> {
    let bad =
        |why: String| SessionError::Invalid(format!("--setup-vars {}: {why}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let serde_json::Value::Object(map) = v else {
        return Err(bad(
            "expected a JSON object of variable names and values, as `pado setup --out` writes"
                .into(),
        ));
    };
    map.into_iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => Ok((k, s.into_bytes())),
            other => Err(bad(format!(
                "variable `{k}` is {other}, not a string (values are text, as setup extracted them)"
            ))),
        })
        .collect()
}

/// The variables of a `--setup-vars` file (`path`, for messages) in the plan's
/// order, refusing a name the scenario does not use (a file made for another test).
pub fn seed_vars(
    path: Option<&Path>,
    given: &[(String, Vec<u8>)],
    plan: &pado_engine::RunPlan,
) -> Result<Vec<Option<Vec<u8>>>, SessionError> {
    let mut vars = vec![None; plan.vars.len()];
    for (name, value) in given {
        let Some(i) = plan.vars.iter().position(|v| v == name) else {
            return Err(SessionError::Invalid(format!(
                "--setup-vars {}: variable `{name}` is not one this scenario uses ({}); was the file made for another test?",
                path.map(|p| p.display().to_string()).unwrap_or_default(),
                if plan.vars.is_empty() { "it uses none".to_string() } else { plan.vars.join(", ") }
            )));
        };
        vars[i] = Some(value.clone());
    }
    Ok(vars)
}

/// A segment after the first of a test with a global setup needs the setup's
/// variables from elsewhere (the setup runs once for the whole test): the error
/// saying how to get them, or `None` when nothing is missing.
pub fn setup_vars_missing(
    segment: &pado_engine::executor::segment::Segment,
    prep: &Prepared,
    have_setup_vars: bool,
) -> Option<SessionError> {
    (segment.index() > 0 && !prep.config.setup.is_empty() && !have_setup_vars).then(|| {
        SessionError::Invalid(format!(
            "--segment {}/{}: {} has a global setup, which runs once for the whole test; run `pado setup` with the same file and flags and `--out vars.json`, then pass `--setup-vars vars.json` to every segment (segment 0 may run the setup itself instead, but then the other segments cannot have its variables)",
            segment.index(),
            segment.count(),
            prep.file
        ))
    })
}

/// What running the global setup alone gave (`pado setup`).
#[derive(Debug)]
pub struct SetupOutcome {
    /// The variables as the JSON object `--setup-vars` reads, pretty, ending in a
    /// line end.
    pub json: String,
    /// How many variables it holds.
    pub vars: usize,
    /// The setup's requests.
    pub requests: u64,
    /// Those that failed.
    pub failed: u64,
    /// Variables the setup extracts that it did not set.
    pub missing: Vec<String>,
}

impl SetupOutcome {
    /// A setup with a failed request or an unset variable did not complete: its
    /// variables would send the segments something else than the test's.
    pub fn incomplete(&self) -> Option<SessionError> {
        if self.missing.is_empty() && self.failed == 0 {
            return None;
        }
        let what = if self.missing.is_empty() {
            String::new()
        } else {
            format!(" (not set: {})", self.missing.join(", "))
        };
        Some(SessionError::Io(format!(
            "setup did not complete: {} failed request{}{what}",
            self.failed,
            if self.failed == 1 { "" } else { "s" }
        )))
    }
}

/// Run only the global setup of `prep`, as the first thing of a run would, and
/// turn its variables into the file segments read. A scenario without a global
/// setup has nothing to hand over: an error.
pub fn run_setup(prep: &Prepared) -> Result<SetupOutcome, SessionError> {
    if prep.config.setup.is_empty() {
        return Err(SessionError::Invalid(format!(
            "{}: has no global `setup:`, so there is nothing to hand to the segments; run the segments without --setup-vars",
            prep.file
        )));
    }
    let plan = std::sync::Arc::new(prep.compile()?);
    let run = pado_engine::run_setup(plan, None);
    let mut obj = serde_json::Map::new();
    for (name, value) in &run.vars {
        let text = String::from_utf8(value.clone()).map_err(|_| {
            SessionError::Io(format!(
                "setup variable `{name}` is not UTF-8 text: it cannot be written as JSON"
            ))
        })?;
        obj.insert(name.clone(), serde_json::Value::String(text));
    }
    let json =
        serde_json::to_string_pretty(&serde_json::Value::Object(obj)).map_err(SessionError::io)?;
    Ok(SetupOutcome {
        json: json + "\n",
        vars: run.vars.len(),
        requests: run.totals.series.iter().map(|s| s.requests).sum(),
        failed: run.totals.series.iter().map(|s| s.failed).sum(),
        missing: run.missing,
    })
}

#[cfg(test)]
mod tests;
