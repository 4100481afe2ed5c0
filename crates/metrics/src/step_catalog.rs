//! What each step of a run is, beyond its name: the scenarios it runs in, its HTTP
//! method and the `group:` blocks around it.
//!
//! Series are keyed by step name only (one series per step, however many flows use
//! it), so k6's `scenario`, `method` and `group` tags cannot be read off a series.
//! The plan knows them, and writes them here (into `run.json`), so a threshold such
//! as `http_req_duration{scenario:browse}` selects the series of that scenario's
//! steps, live and in a report read long after the run.

use serde::{Deserialize, Serialize};

/// Every step and `group:` block of a run, as the plan compiled them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepCatalog {
    /// One entry per series (step name), in the plan's order.
    #[serde(default)]
    pub steps: Vec<StepInfo>,
    /// One entry per `group:` path, in the plan's order.
    #[serde(default)]
    pub groups: Vec<GroupInfo>,
}

/// Where one step (series) runs: each a list because one name may be used in more
/// than one place, and then its requests are one series.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepInfo {
    /// The step's name, its series' name.
    pub name: String,
    /// The scenarios whose flows use it; `setup` / `teardown` for the global ones.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The HTTP methods of its requests (`GET`); empty for `ws:` and `grpc:` steps.
    #[serde(default)]
    pub methods: Vec<String>,
    /// The k6 group path of each place it is used: `::login`, `::a::b`, or `""`
    /// outside any group.
    #[serde(default)]
    pub groups: Vec<String>,
}

/// One `group:` block path and the flows its durations are recorded under.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupInfo {
    /// The k6 group path: `::login`, `::checkout::pay`.
    pub path: String,
    /// The flows (`scenario/name`) that carry this group's durations.
    pub flows: Vec<String>,
}

/// The scopes of the global setup and teardown, which are no scenario.
pub const GLOBAL_SCOPES: [&str; 2] = ["setup", "teardown"];

impl StepCatalog {
    /// Records one use of step `name` in `scope`, with `method` (none for `ws:`
    /// and `grpc:` steps) inside group `group` (`""` outside any).
    pub fn record(&mut self, name: &str, scope: &str, method: Option<&str>, group: &str) {
        let i = match self.steps.iter().position(|s| s.name == name) {
            Some(i) => i,
            None => {
                self.steps.push(StepInfo {
                    name: name.to_string(),
                    ..Default::default()
                });
                self.steps.len() - 1
            }
        };
        let s = &mut self.steps[i];
        push_new(&mut s.scopes, scope);
        if let Some(m) = method {
            push_new(&mut s.methods, m);
        }
        push_new(&mut s.groups, group);
    }

    /// Records that group `path` records its durations under `flow`.
    pub fn record_group(&mut self, path: &str, flow: &str) {
        match self.groups.iter_mut().find(|g| g.path == path) {
            Some(g) => push_new(&mut g.flows, flow),
            None => self.groups.push(GroupInfo {
                path: path.to_string(),
                flows: vec![flow.to_string()],
            }),
        }
    }

    /// The step called `name`, if the plan has one.
    pub fn step(&self, name: &str) -> Option<&StepInfo> {
        self.steps.iter().find(|s| s.name == name)
    }

    /// Whether the catalogue says nothing (a `run.json` written before it existed).
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty() && self.groups.is_empty()
    }
}

impl StepInfo {
    /// Whether a threshold's `tag:value` of `scenario`, `method` or `group` selects
    /// this step's series: some use of the step is in that scenario, has that
    /// method, or lies in that group (or a group nested in it). `None` for any
    /// other tag, which this catalogue does not answer.
    pub fn selected_by(&self, tag: &str, value: &str) -> Option<bool> {
        Some(match tag {
            "scenario" => self.scopes.iter().any(|s| s == value),
            "method" => self.methods.iter().any(|m| m == value),
            "group" => self.groups.iter().any(|g| in_group(g, value)),
            _ => return None,
        })
    }

    /// Whether every request of this step has `tag:value` (see
    /// [`Self::selected_by`]): only then does selecting its series measure exactly
    /// the requests k6 would, and not also those of another scenario, method or
    /// group that share the step's name.
    pub fn wholly(&self, tag: &str, value: &str) -> bool {
        match tag {
            "scenario" => self.scopes.iter().all(|s| s == value),
            "method" => self.methods.iter().all(|m| m == value),
            "group" => self.groups.iter().all(|g| in_group(g, value)),
            _ => false,
        }
    }
}

/// Whether group path `path` is `group` or nested in it (`::a::b` is in `::a`).
pub fn in_group(path: &str, group: &str) -> bool {
    path == group
        || (!group.is_empty() && path.starts_with(group) && path[group.len()..].starts_with("::"))
}

fn push_new(v: &mut Vec<String>, s: &str) {
    if !v.iter().any(|x| x == s) {
        v.push(s.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_used_in_two_scenarios_is_selected_by_both_but_wholly_by_neither() {
        let mut c = StepCatalog::default();
        c.record("home", "browse", Some("GET"), "");
        c.record("home", "buy", Some("GET"), "::checkout");
        c.record("pay", "buy", Some("POST"), "::checkout::pay");
        let home = c.step("home").unwrap();
        assert_eq!(home.selected_by("scenario", "browse"), Some(true));
        assert!(!home.wholly("scenario", "browse"));
        assert!(home.wholly("method", "GET"));
        let pay = c.step("pay").unwrap();
        assert_eq!(pay.selected_by("group", "::checkout"), Some(true));
        assert_eq!(pay.selected_by("group", "::check"), Some(false));
        assert!(pay.wholly("group", "::checkout"));
        assert_eq!(pay.selected_by("status", "200"), None);
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<StepCatalog>(&json).unwrap(), c);
    }
}
