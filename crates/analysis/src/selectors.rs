//! Threshold tag selectors checked against the plan before a run: `{step:serch}`
//! is an error naming the field and a did-you-mean, not a threshold that silently
//! has no data. Every selector must name a step, scenario, method, group or check
//! the plan has, or a tag its steps set; a `scenario`, `method` or `group`
//! selector whose step is also used elsewhere is refused (series are per step
//! name, so it would count the other requests too); k6's system tags pado does not
//! set are refused with what to select instead.

use pado_metrics::StepCatalog;
use pado_scenario::Config;

use crate::thresholds::Threshold;

/// What the compiled plan names, as thresholds select it.
#[derive(Clone, Copy, Debug)]
pub struct PlanNames<'a> {
    /// The series' (steps') names.
    pub series: &'a [&'a str],
    /// The checks' names.
    pub checks: &'a [String],
    /// Each step's scenarios, methods and groups, and the groups.
    pub steps: &'a StepCatalog,
}

/// One selector that would select nothing (or more than it says).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectorProblem {
    /// The threshold's field (`thresholds.KEY`), for the caller to place in its file.
    pub field: String,
    /// `FIELD: what is wrong` with a `hint:` line.
    pub message: String,
}

impl SelectorProblem {
    fn new(field: &str, problem: String) -> SelectorProblem {
        SelectorProblem {
            field: field.to_string(),
            message: format!("{field}: {problem}"),
        }
    }
}

/// Every threshold's tag selector that names nothing the plan has, in the
/// thresholds' order. `config` is the loaded scenario (its steps' own tags).
pub fn selector_problems(
    config: &Config,
    thresholds: &[Threshold],
    plan: &PlanNames<'_>,
) -> Vec<SelectorProblem> {
    let steps: Vec<&str> = plan.series.to_vec();
    let scenarios: Vec<&str> = config.scenarios.iter().map(|(n, _)| n.as_str()).collect();
    let checks: Vec<&str> = plan.checks.iter().map(String::as_str).collect();
    let mut methods: Vec<&str> = Vec::new();
    for st in &plan.steps.steps {
        methods.extend(st.methods.iter().map(String::as_str));
    }
    methods.sort_unstable();
    methods.dedup();
    let groups: Vec<&str> = plan.steps.groups.iter().map(|g| g.path.as_str()).collect();
    let mut user_tags: Vec<&str> = Vec::new();
    fn step_tags<'c>(steps: &'c [pado_scenario::Step], out: &mut Vec<&'c str>) {
        for st in steps {
            out.extend(st.tags.keys().map(String::as_str));
            if let Some(inner) = &st.steps {
                step_tags(inner, out);
            }
        }
    }
    let c = config;
    step_tags(&c.setup, &mut user_tags);
    step_tags(&c.teardown, &mut user_tags);
    for (_, s) in &c.scenarios {
        for f in [&s.flow, &s.setup_per_vu, &s.teardown_per_vu] {
            step_tags(f, &mut user_tags);
        }
        for m in &s.mix {
            user_tags.extend(m.tags.keys().map(String::as_str));
            if let Some(f) = &m.flow {
                step_tags(f, &mut user_tags);
            }
        }
    }
    user_tags.sort_unstable();
    user_tags.dedup();
    let mut out = Vec::new();
    for t in thresholds {
        let field = format!("thresholds.{}", t.metric_key());
        if t.metric == "group_duration" && plan.steps.groups.is_empty() {
            out.push(SelectorProblem::new(&field, "the file has no `group:` block, so group_duration would have no data\n  hint: wrap steps in `{ group: NAME, steps: [...] }`, or use iteration_duration".to_string()));
            continue;
        }
        for (k, v) in &t.tags {
            let known: Option<&[&str]> = match k.as_str() {
                "step" | "name" => Some(&steps),
                "scenario" => Some(&scenarios),
                "method" => Some(&methods),
                "group" => Some(&groups),
                "check" => Some(&checks),
                // Their values are checked by the parser; any status may come.
                "status" | "expected_response" => None,
                _ if user_tags.contains(&k.as_str()) => None,
                _ => {
                    let mut names = vec![
                        "step",
                        "name",
                        "scenario",
                        "method",
                        "group",
                        "status",
                        "expected_response",
                        "check",
                    ];
                    names.extend(user_tags.iter().copied());
                    let guess = match k6_only_tag(k) {
                        Some(why) => format!("k6 sets `{k}`, pado does not: {why}; "),
                        None => pado_scenario::structure::did_you_mean(k, names.iter().copied())
                            .map(|g| format!("did you mean `{g}`? "))
                            .unwrap_or_default(),
                    };
                    out.push(SelectorProblem::new(&field, format!(
                        "`{k}` is not a tag pado sets or a step of this file tags with\n  hint: {guess}selectors are `step`, `name`, `scenario`, `method`, `group`, `status`, `expected_response`, `check`{}",
                        if user_tags.is_empty() {
                            String::new()
                        } else {
                            format!(" and your steps' tags: {}", user_tags.join(", "))
                        }
                    )));
                    continue;
                }
            };
            if let Some(problem) = shared_step(plan.steps, &t.metric, k, v) {
                out.push(SelectorProblem::new(&field, problem));
                continue;
            }
            if let Some(known) = known {
                if !known.contains(&v.as_str()) {
                    let hint =
                        match pado_scenario::structure::did_you_mean(v, known.iter().copied()) {
                            Some(g) => format!("did you mean `{g}`?"),
                            None => format!("{k}s here: {}", known.join(", ")),
                        };
                    out.push(SelectorProblem::new(
                        &field,
                        format!(
                        "no {k} is named `{v}`: the threshold would have no data\n  hint: {hint}"
                    ),
                    ));
                }
            }
        }
    }
    out
}

/// Why one of k6's system tags that pado does not set has no answer in pado's data,
/// so the refusal says what to select instead; `None` for any other tag.
fn k6_only_tag(tag: &str) -> Option<&'static str> {
    Some(match tag {
        "url" => "a step is one request, so select it with `step:NAME`",
        "proto" | "subproto" | "tls_version" | "ocsp_status" | "ip" => {
            "pado does not break requests down by connection properties"
        }
        "error" | "error_code" => {
            "errors are counted per step by category in the summary; use `http_req_failed`"
        }
        "vu" | "iter" => "pado does not keep figures per VU or per iteration",
        "service" | "rpc_type" | "grpc_code" => "select a `grpc:` call with `step:NAME`",
        _ => return None,
    })
}

/// Why a `scenario`, `method` or `group` filter would measure more than it says:
/// series are per step name, so a step of the scenario (method, group) that is
/// also used elsewhere brings those requests along. `None` when every selected
/// step lies wholly inside (or the tag is another, or the metric is not read from
/// the steps' series).
fn shared_step(steps: &StepCatalog, metric: &str, tag: &str, value: &str) -> Option<String> {
    if !matches!(tag, "scenario" | "method" | "group") {
        return None;
    }
    // These read the scenarios' and groups' own figures, not the steps' series.
    if matches!(
        metric,
        "iterations"
            | "dropped_iterations"
            | "late_iterations"
            | "iteration_duration"
            | "group_duration"
    ) {
        return None;
    }
    let step = steps
        .steps
        .iter()
        .find(|s| s.selected_by(tag, value) == Some(true) && !s.wholly(tag, value))?;
    let uses = match tag {
        "scenario" => &step.scopes,
        "method" => &step.methods,
        _ => &step.groups,
    };
    let uses: Vec<String> = uses
        .iter()
        .map(|u| {
            if u.is_empty() {
                "outside any group".to_string()
            } else {
                format!("`{u}`")
            }
        })
        .collect();
    Some(format!(
        "step `{}` is used in {} ({}): its requests are one series, so `{tag}:{value}` would count the others too\n  hint: give the step a different `name:` in each place",
        step.name,
        match tag {
            "scenario" => "more than one scenario",
            "method" => "requests of more than one method",
            _ => "and outside the group",
        },
        uses.join(", ")
    ))
}

#[cfg(test)]
mod tests;
