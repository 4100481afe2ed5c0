//! The run's metadata (`run.json`): written before the load so a reader knows what
//! is running, and patched after it with what happened (when it really started,
//! how long it ran, whether it was stopped, what went wrong beside it).

use std::time::SystemTime;

use pado_engine::{RunPlan, RunReport};
use pado_results::result_dir::SegmentMeta;
use pado_results::{RunMeta, ScenarioMeta, SoakMode, ThresholdSpec, FORMAT_VERSION};

use crate::config::{Scenario, Share};
use pado_base::stamp::utc_ms;

/// The metadata of a run of `plan` about to start.
pub(crate) fn initial(
    plan: &RunPlan,
    scenario: &Scenario,
    share: &Share,
    workers: usize,
    soak: bool,
    warnings: Vec<String>,
) -> RunMeta {
    let total_s = plan.planned_duration().as_secs_f64();
    RunMeta {
        format: "pado-result".into(),
        version: FORMAT_VERSION,
        name: plan.name.clone(),
        pado_version: env!("CARGO_PKG_VERSION").into(),
        started_at: utc_ms(SystemTime::now()),
        duration_s: 0.0,
        interrupted: false,
        workers,
        cores_allowed: pado_engine::allowed_cores(),
        scenarios: plan.scenarios.iter().map(scenario_meta).collect(),
        stages: plan.stage_marks(),
        thresholds: scenario.thresholds.iter().map(threshold_spec).collect(),
        notes: share
            .segment
            .iter()
            .map(|s| {
                format!(
                    "{} of the test (plan {})",
                    s.label(),
                    share.plan_id.as_deref().unwrap_or("")
                )
            })
            .collect(),
        warnings,
        max_body: Some(plan.max_body as u64),
        segment: share.segment.as_ref().map(|s| SegmentMeta {
            index: s.index(),
            count: s.count(),
            weights: s.weights().to_vec(),
            plan_id: share.plan_id.clone().unwrap_or_default(),
            start_at: share.start_at.map(|(at, _)| utc_ms(at)),
            start_skew_ms: None,
            ran_setup: false,
        }),
        merged_from: Vec::new(),
        outputs: Vec::new(),
        raw_output: None,
        soak: SoakMode::of(soak, total_s),
        planned_s: Some(total_s),
        steps: plan.steps.clone(),
    }
}

fn scenario_meta(s: &pado_engine::plan::ScenarioPlan) -> ScenarioMeta {
    let open = s.executor.kind().is_open_model();
    ScenarioMeta {
        name: s.name.clone(),
        executor: s.executor.kind().as_str().into(),
        description: s.executor.describe(),
        open_model: open,
        max_vus: open.then(|| s.executor.max_vus()),
        scripted: s.script_exec.is_some(),
    }
}

fn threshold_spec(t: &pado_analysis::thresholds::Threshold) -> ThresholdSpec {
    ThresholdSpec {
        metric: t.metric_key(),
        expr: t.source.clone(),
        abort_on_fail: t.abort_on_fail,
        window_s: t
            .scope
            .as_ref()
            .and_then(|s| s.window_s)
            .map(|(a, b)| [a, b]),
    }
}

/// What the load did, into the metadata: its real start and length, whether it
/// was stopped, the agreed start's skew, and why it stopped itself.
pub(crate) fn patch(
    meta: &mut RunMeta,
    report: &RunReport,
    share: &Share,
    abort_reason: Option<String>,
) {
    meta.started_at = utc_ms(report.started_at);
    meta.duration_s = report.elapsed.as_secs_f64().max(0.001);
    meta.interrupted = report.interrupted;
    let skew_ms = report.start_skew.map(|d| d.as_secs_f64() * 1000.0);
    match meta.segment.as_mut() {
        Some(seg) => {
            seg.start_skew_ms = skew_ms;
            seg.ran_setup = report.ran_setup;
        }
        None => {
            if let (Some((at, _)), Some(ms)) = (share.start_at, skew_ms) {
                meta.notes.push(format!(
                    "agreed start (--start-at) {}: second 0 began {ms:.1} ms after it",
                    utc_ms(at)
                ));
            }
        }
    }
    if let Some(r) = abort_reason {
        crate::notice::line(&r);
        meta.warnings.push(r);
        meta.interrupted = true;
    }
}

/// A warning said now and kept in the metadata.
pub(crate) fn warn(meta: &mut RunMeta, w: String) {
    crate::notice::warning(&w);
    meta.warnings.push(w);
}
