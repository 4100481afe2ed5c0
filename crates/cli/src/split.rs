//! One test on many generators, the command line's part: `--segment` and
//! `--segment-weights` checked into an engine [`Segment`], `--start-at` into an
//! instant, the plan's fingerprint (`plan_id`) that tells segments of one test apart
//! from others, the global setup's variables handed over as a file
//! (`pado setup --out`, `pado run --setup-vars`), and the wait for the agreed start.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant, SystemTime};

use pado_base::stamp::utc_ms;
use pado_engine::executor::segment::{parse_segment, parse_weights, Segment};
use pado_engine::RUNNING;
use pado_scenario::plan_id::PlanSource;

use crate::config::{LoadSpec, Source};
use crate::exit::{self, Failure};
use crate::prepared::Prepared;

/// The wait for the start ends this much before it: the rest (result directory,
/// global setup, worker threads) happens meanwhile, and the engine starts second 0
/// on the instant.
const START_LEAD: Duration = Duration::from_secs(1);

/// How a run takes part in a split test (all `None`: a whole run started at once).
#[derive(Clone, Debug, Default)]
pub(crate) struct Split {
    /// `--segment` with its weights.
    pub segment: Option<Segment>,
    /// Fingerprint of the whole test (with `--segment`).
    pub plan_id: Option<String>,
    /// `--start-at`, resolved.
    pub start_at: Option<SystemTime>,
    /// `--setup-vars`, read: (name, value) in the file's order.
    pub setup_vars: Option<Vec<(String, Vec<u8>)>>,
    /// `--control-socket`: where the generator that started this run hands it
    /// changes of the load ([`crate::control_socket`]).
    pub control_socket: Option<std::path::PathBuf>,
}

/// `--segment` and `--segment-weights` into a [`Segment`].
pub(crate) fn segment(flag: &str, weights: Option<&str>) -> Result<Segment, Failure> {
    let (i, n) = parse_segment(flag).map_err(|e| Failure::invalid(format!("--segment: {e}")))?;
    let w = weights
        .map(parse_weights)
        .transpose()
        .map_err(|e| Failure::invalid(format!("--segment-weights: {e}")))?;
    Segment::new(i, n, w.as_deref())
        .map_err(|e| Failure::invalid(format!("--segment-weights: {e}")))
}

/// `--start-at` (`pado_scenario::start_at`'s one rule for every command).
pub(crate) fn start_at(v: &str, now: SystemTime) -> Result<SystemTime, Failure> {
    pado_scenario::start_at::parse_start_at(v, now).map_err(|e| Failure::invalid(e.to_string()))
}

/// Wait for `at` (until [`START_LEAD`] before it), printing when the run starts
/// unless `quiet`. Ctrl-C (which sets `stop`) ends the wait with an error: nothing
/// was sent and no result directory is written. Returns the instant of second 0 on
/// this machine's monotonic clock.
pub(crate) fn wait_for_start(
    at: SystemTime,
    stop: &AtomicU8,
    quiet: bool,
) -> Result<Instant, Failure> {
    let instant = to_instant(at);
    let left = instant.saturating_duration_since(Instant::now());
    if !quiet {
        eprintln!(
            "starting at {} (in {})",
            utc_ms(at),
            pado_base::units::duration_compact(Duration::from_secs(
                left.as_secs_f64().round() as u64
            ))
        );
    }
    let until = instant.checked_sub(START_LEAD).unwrap_or(instant);
    while Instant::now() < until {
        if stop.load(Ordering::SeqCst) != RUNNING {
            return Err(Failure {
                code: exit::INTERRUPTED,
                message: "interrupted while waiting for --start-at: nothing was sent, no result directory was written".into(),
            });
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
/// counts) of the loaded scenario and the flags on top of it.
pub(crate) fn plan_id(spec: &LoadSpec, prep: &Prepared) -> Result<String, Failure> {
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
    .map_err(|e| Failure::invalid(e.to_string()))
}

/// `--setup-vars FILE`: a JSON object of variable name → string value.
pub(crate) fn read_setup_vars(path: &Path) -> Result<Vec<(String, Vec<u8>)>, Failure> {
    let bad = |why: String| Failure::invalid(format!("--setup-vars {}: {why}", path.display()));
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

/// The variables of a `--setup-vars` file in the plan's order, refusing a name the
/// scenario does not use (a file made for another test).
pub(crate) fn seed_vars(
    path: Option<&PathBuf>,
    given: &[(String, Vec<u8>)],
    plan: &pado_engine::RunPlan,
) -> Result<Vec<Option<Vec<u8>>>, Failure> {
    let mut vars = vec![None; plan.vars.len()];
    for (name, value) in given {
        let Some(i) = plan.vars.iter().position(|v| v == name) else {
            return Err(Failure::invalid(format!(
                "--setup-vars {}: variable `{name}` is not one this scenario uses ({}); was the file made for another test?",
                path.map(|p| p.display().to_string()).unwrap_or_default(),
                if plan.vars.is_empty() { "it uses none".to_string() } else { plan.vars.join(", ") }
            )));
        };
        vars[i] = Some(value.clone());
    }
    Ok(vars)
}

/// `pado setup`: run only the global setup and write its variables.
pub(crate) fn setup_cmd(a: &crate::args::SetupArgs) -> Result<i32, Failure> {
    let spec = LoadSpec::from_load_args(&a.load)?;
    let prep = spec.load()?;
    if prep.config.setup.is_empty() {
        return Err(Failure::invalid(format!(
            "{}: has no global `setup:`, so there is nothing to hand to the segments; run the segments without --setup-vars",
            prep.file
        )));
    }
    let plan = std::sync::Arc::new(prep.compile()?);
    let run = pado_engine::run_setup(plan, None);
    let mut obj = serde_json::Map::new();
    for (name, value) in &run.vars {
        let text = String::from_utf8(value.clone()).map_err(|_| {
            Failure::other(format!(
                "setup variable `{name}` is not UTF-8 text: it cannot be written as JSON"
            ))
        })?;
        obj.insert(name.clone(), serde_json::Value::String(text));
    }
    let json =
        serde_json::to_string_pretty(&serde_json::Value::Object(obj)).map_err(Failure::other)?;
    std::fs::write(&a.out, json + "\n")
        .map_err(|e| Failure::other(format!("{}: {e}", a.out.display())))?;
    let requests: u64 = run.totals.series.iter().map(|s| s.requests).sum();
    let failed: u64 = run.totals.series.iter().map(|s| s.failed).sum();
    if !a.quiet {
        eprintln!(
            "setup: {requests} request{}, {failed} failed; {} variable{} written to {}",
            if requests == 1 { "" } else { "s" },
            run.vars.len(),
            if run.vars.len() == 1 { "" } else { "s" },
            a.out.display()
        );
    }
    if !run.missing.is_empty() || failed > 0 {
        let what = if run.missing.is_empty() {
            String::new()
        } else {
            format!(" (not set: {})", run.missing.join(", "))
        };
        return Err(Failure::other(format!(
            "setup did not complete: {failed} failed request{}{what}",
            if failed == 1 { "" } else { "s" }
        )));
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests;
