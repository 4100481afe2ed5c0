//! Live outputs (`--output KIND=URL`, the file's `outputs:`): which stores, the
//! labels of this run's series, and the end-of-run report. The streaming itself is
//! `pado_outputs`: the run's sink only hands it each closed second.

use std::collections::BTreeMap;
use std::path::Path;

use pado_engine::RunPlan;
use pado_outputs::{OutputSpec, RunLabels};

use crate::exit::Failure;
use crate::prepared::Prepared;

/// The raw per-request output among the `--output` flags (`raw-json=FILE`,
/// `raw-csv=FILE`, k6's `json=FILE` and `csv=FILE`), and the flags left for live
/// outputs.
pub(crate) fn raw_spec(
    flags: &[String],
) -> Result<(Option<pado_outputs::raw::RawSpec>, Vec<String>), Failure> {
    let mut raw: Option<pado_outputs::raw::RawSpec> = None;
    let mut live = Vec::new();
    for f in flags {
        match pado_outputs::raw::RawSpec::parse_flag(f) {
            None => live.push(f.clone()),
            Some(Err(e)) => return Err(Failure::invalid(format!("--output {f}: {e}"))),
            Some(Ok(spec)) => {
                if let Some(first) = &raw {
                    let e = pado_outputs::raw::RawSpecError::Twice(first.label(), spec.label());
                    return Err(Failure::invalid(format!("--output {f}: {e}")));
                }
                raw = Some(spec);
            }
        }
    }
    Ok((raw, live))
}

/// The line for the terminal about the raw output, after the summary.
pub(crate) fn raw_line(r: &pado_metrics::result_dir::RawOutputMeta) -> String {
    let mut l = format!(
        "  output {} {}: {} requests written, {} dropped",
        r.kind, r.path, r.lines_written, r.lines_dropped
    );
    if let Some(e) = &r.error {
        l.push_str(&format!(" (write error: {e})"));
    }
    l
}

/// The outputs of a run: the file's `outputs:` (errors at their line), then the
/// `--output` flags.
pub(crate) fn specs(prep: &Prepared, flags: &[String]) -> Result<Vec<OutputSpec>, Failure> {
    let mut out = Vec::new();
    for (i, o) in prep.config.outputs.iter().enumerate() {
        let spec =
            OutputSpec::new(o.kind.as_str(), &o.url, o.token_env.as_deref()).map_err(|e| {
                Failure::invalid(format!(
                    "{}: outputs[{i}]: {e}",
                    prep.at(&format!("outputs[{i}]"))
                ))
            })?;
        out.push(spec);
    }
    for f in flags {
        out.push(OutputSpec::parse_flag(f).map_err(|e| {
            let shown = pado_outputs::spec::masked(f);
            Failure::invalid(format!("--output {shown}: {e}"))
        })?);
    }
    // InfluxDB v2's token: missing is an error now, before anything is sent (its
    // value is read again when the run starts and never shown).
    for o in &out {
        if o.influx_api() == Some(pado_outputs::spec::InfluxApi::V2)
            && std::env::var(o.token_var()).map_or(true, |t| t.is_empty())
        {
            return Err(Failure::invalid(format!(
                "output {}: the InfluxDB v2 API needs a token: set environment variable {}",
                o.label(),
                o.token_var()
            )));
        }
    }
    Ok(out)
}

/// The labels of this run's series: the result directory's name as `run`, the
/// segment (`i/N`) as `generator`, and each step's scenario.
pub(crate) fn labels(plan: &RunPlan, dir: &Path, segment: Option<String>) -> RunLabels {
    let mut step_scenarios = BTreeMap::new();
    fn walk(
        steps: &[pado_engine::plan::StepPlan],
        plan: &RunPlan,
        scenario: &str,
        out: &mut BTreeMap<String, String>,
    ) {
        for s in steps {
            if let Some(k) = plan.series.get(s.series as usize) {
                out.entry(k.name.clone())
                    .or_insert_with(|| scenario.to_string());
            }
            if let Some((_, inner)) = &s.group {
                walk(inner, plan, scenario, out);
            }
        }
    }
    for sc in &plan.scenarios {
        walk(&sc.setup, plan, &sc.name, &mut step_scenarios);
        for e in &sc.entries {
            walk(&e.steps, plan, &sc.name, &mut step_scenarios);
        }
        walk(&sc.teardown, plan, &sc.name, &mut step_scenarios);
    }
    RunLabels {
        run: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| plan.name.clone()),
        generator: segment,
        step_scenarios,
    }
}

/// One line per output for the terminal, after the summary.
pub(crate) fn lines(reports: &[pado_outputs::OutputReport]) -> Vec<String> {
    reports
        .iter()
        .map(|r| {
            let mut l = format!(
                "  output {} {}: {} seconds sent, {} dropped",
                r.kind, r.url, r.seconds_sent, r.seconds_dropped
            );
            if let Some(e) = &r.last_error {
                l.push_str(&format!(" (last error: {e})"));
            }
            l
        })
        .collect()
}
