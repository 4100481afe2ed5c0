//! What a run says before it starts: the scenario's notes, the plan's warnings, a
//! segment with nothing to send, a host that did not resolve, too few file
//! descriptors.

use pado_engine::RunPlan;

use crate::config::{Scenario, Share};

/// Apply the share's segment to `plan` and gather every warning of the run about
/// to start, in the order they are said.
pub(crate) fn prepare(plan: &mut RunPlan, scenario: &Scenario, share: &Share) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(seg) = &share.segment {
        for name in plan.apply_segment(seg) {
            warnings.push(format!(
                "scenario `{name}` has fewer VUs or arrivals than segments: {} gets none of them and sends nothing for it",
                seg.label()
            ));
        }
    }
    warnings.extend(scenario.notes.iter().cloned());
    warnings.extend(plan.warnings.clone());
    for o in &plan.origins {
        if o.addrs.is_empty() {
            warnings.push(format!(
                "host {} did not resolve: its requests will fail with `dns` errors",
                host_name(scenario, &o.host)
            ));
        }
    }
    warnings.extend(plan.warnings());
    let lim = pado_engine::limits::raise_nofile(plan.max_vus());
    if let Some(w) = lim.warning() {
        warnings.push(w);
    }
    warnings
}

/// A host as the user wrote it: one from the environment is named by the
/// template, not its value.
fn host_name(scenario: &Scenario, host: &str) -> String {
    let cfg = &scenario.config;
    let from_env = cfg.target_template.as_ref().filter(|_| {
        cfg.target
            .as_deref()
            .and_then(|t| url::Url::parse(t).ok())
            .and_then(|u| u.host_str().map(|h| h == host))
            .unwrap_or(false)
    });
    match from_env {
        Some(t) => format!("of target `{t}`"),
        None => format!("`{host}`"),
    }
}
