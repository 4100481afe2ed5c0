//! What the page knows of a run before its first second: its name, scenarios,
//! stages, thresholds, steps and planned length (`GET /api/run`). Built from the
//! compiled plan, so the CLI, the agents' coordinator and a test describe a run the
//! same way.

use pado_analysis::offered_load::OfferedLoad;
use pado_analysis::thresholds::Threshold;
use pado_engine::RunPlan;
use pado_metrics::StepCatalog;
use serde::Serialize;

/// One scenario as the page shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScenarioInfo {
    /// Its name.
    pub name: String,
    /// Its executor (`constant-arrival-rate`, `ramping-vus`...).
    pub executor: String,
    /// Open model (arrivals a second) rather than closed (VUs).
    pub open_model: bool,
    /// The most VUs it may run.
    pub max_vus: u32,
}

/// One stage on the run's time axis.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageInfo {
    /// What it does (`ramp 0→100 VUs`, `hold 200 req/s`).
    pub label: String,
    /// Start, seconds from second 0.
    pub start_s: f64,
    /// End, seconds from second 0.
    pub end_s: f64,
}

/// One threshold as written.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThresholdInfo {
    /// The metric with its tags (`http_req_duration{step:login}`).
    pub metric: String,
    /// The expression (`p(95) < 300`).
    pub expression: String,
}

/// The static facts of a run (see the module's documentation).
#[derive(Clone, Debug, Default)]
pub struct RunInfo {
    /// The test's name.
    pub name: String,
    /// The result directory's name, when known before the run.
    pub run_id: Option<String>,
    /// Its scenarios.
    pub scenarios: Vec<ScenarioInfo>,
    /// Its stages, over every scenario.
    pub stages: Vec<StageInfo>,
    /// Its thresholds, parsed: the dashboard judges them on the seconds so far.
    pub thresholds: Vec<Threshold>,
    /// Its step names, in the plan's order.
    pub steps: Vec<String>,
    /// The plan's steps, which thresholds' `scenario`, `method` and `group` tags
    /// select.
    pub catalog: StepCatalog,
    /// Planned length, s.
    pub planned_s: f64,
    /// Split over generators.
    pub distributed: bool,
    /// How a second's load is read when every scenario is an open model (its
    /// arrivals, started or dropped): the load the live bottleneck hint splits
    /// low and peak by, as the report's table does (`None`: active VUs).
    pub offered: Option<OfferedLoad>,
}

impl RunInfo {
    /// The facts of a run of `plan` judged by `thresholds`.
    pub fn from_plan(plan: &RunPlan, thresholds: &[Threshold]) -> RunInfo {
        let mut steps: Vec<String> = Vec::new();
        for k in &plan.series {
            if !steps.contains(&k.name) {
                steps.push(k.name.clone());
            }
        }
        RunInfo {
            name: plan.name.clone(),
            run_id: None,
            scenarios: plan
                .scenarios
                .iter()
                .map(|s| ScenarioInfo {
                    name: s.name.clone(),
                    executor: s.executor.kind().as_str().into(),
                    open_model: s.executor.kind().is_open_model(),
                    max_vus: s.executor.max_vus(),
                })
                .collect(),
            stages: plan
                .stage_marks()
                .into_iter()
                .map(|m| StageInfo {
                    label: m.label,
                    start_s: m.start_s,
                    end_s: m.end_s,
                })
                .collect(),
            thresholds: thresholds.to_vec(),
            steps,
            catalog: plan.steps.clone(),
            planned_s: plan.planned_duration().as_secs_f64(),
            distributed: false,
            offered: open_model_rate(plan),
        }
    }

    /// The thresholds as the page lists them.
    pub fn threshold_infos(&self) -> Vec<ThresholdInfo> {
        self.thresholds
            .iter()
            .map(|t| ThresholdInfo {
                metric: t.metric_key(),
                expression: t.source.clone(),
            })
            .collect()
    }
}

/// How an all-open-model run's load is read: by the arrivals its seconds count
/// (a live run counts them, whatever steers its rate); `None` for a closed or
/// mixed run.
fn open_model_rate(plan: &RunPlan) -> Option<OfferedLoad> {
    let open = !plan.scenarios.is_empty()
        && plan
            .scenarios
            .iter()
            .all(|s| s.executor.kind().is_open_model());
    open.then_some(OfferedLoad::Counted)
}
