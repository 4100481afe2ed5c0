//! The labels a run's live outputs put on its series: the result directory's name,
//! the segment of a split test, and each step's scenario.

use std::collections::BTreeMap;
use std::path::Path;

use pado_engine::RunPlan;
use pado_outputs::RunLabels;

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
