//! Experiments (`experiment:`): one knob of the system under test swept over its
//! values, the same test rerun at each, so that capacity (or a latency at a fixed
//! load) can be charted against the knob. Users do this loop by hand today (ingress
//! pods 1 → 2 → 3, a pool size, thread counts), copying figures into a table.
//!
//! The model lives here beside [`crate::model::Config`]: an experiment is either a
//! block inside the scenario it loads with, or a file of its own whose
//! `experiment.scenario` names the scenario file. The runner is
//! `pado_session::experiment`; the validation rules are `load::experiment`'s.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::events::Action;
use crate::Dur;

/// Deadline of an `apply:` or `restore:` action when it sets none.
pub const DEFAULT_ACTION_TIMEOUT: Duration = Duration::from_secs(60);
/// How long `ready:` is waited for when it sets no `timeout`.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How often `ready:` is checked when it sets no `every`.
pub const DEFAULT_READY_EVERY: Duration = Duration::from_secs(1);
/// Most values one experiment may sweep: each is a full test, so more is a mistake.
pub const MAX_VALUES: usize = 100;
/// The text in an action that the knob's value replaces.
pub const VALUE_HOLE: &str = "value";

/// One experiment: the knob, its values, how a value is put in place and waited
/// for, what is measured at each value, and how the system is put back.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// The scenario file each point runs, relative to this file. Without it the
    /// scenario is this file's own (`scenarios:` beside `experiment:`).
    #[serde(default)]
    pub scenario: Option<String>,
    /// What is changed between points.
    pub knob: Knob,
    /// The knob's values, in the order they are tried: a list (`[1, 2, 4]`) or a
    /// range (`{ from: 1, to: 8, step: 1 }`).
    pub values: Values,
    /// What puts a value in place: a command or an HTTP call, `{{ value }}` replaced
    /// by the value.
    pub apply: Action,
    /// What must hold before a point's test starts (the change took effect).
    #[serde(default)]
    pub ready: Option<Ready>,
    /// At each value, search the highest rate the SLA holds at (as
    /// `pado find-capacity`). Give this or `fixed`.
    #[serde(default)]
    pub find_capacity: Option<FindCapacity>,
    /// At each value, run the scenario's own load and measure one figure.
    #[serde(default)]
    pub fixed: Option<Fixed>,
    /// What puts the system back when the experiment ends, however it ends (done,
    /// a failed point, Ctrl-C, SIGTERM). `{{ value }}` is the first value.
    #[serde(default)]
    pub restore: Option<Action>,
    /// What a failed point (its apply, ready or test) does to the rest: `continue`
    /// (default) or `stop`.
    #[serde(default)]
    pub on_failure: OnFailure,
    /// What one unit of the knob costs (a pod, a replica), for capacity per cost.
    #[serde(default)]
    pub cost_per_unit: Option<f64>,
}

/// The knob's name and unit, as tables and charts label it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Knob {
    /// Name (`ingress_pods`, `pool_size`); also the history label `name=value`.
    pub name: String,
    /// Unit (`pods`, `connections`).
    #[serde(default)]
    pub unit: Option<String>,
}

/// The knob's values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Values {
    /// These values, in this order.
    List(Vec<f64>),
    /// From `from` to `to` (included) by `step`.
    Range {
        /// First value.
        from: f64,
        /// Last value (included when the steps land on it).
        to: f64,
        /// Between values (default 1).
        #[serde(default)]
        step: Option<f64>,
    },
}

impl Default for Values {
    fn default() -> Self {
        Values::List(Vec::new())
    }
}

impl Values {
    /// The values in order; `None` when a range would never end or is too long
    /// (the validator says so first).
    pub fn expand(&self) -> Option<Vec<f64>> {
        match self {
            Values::List(v) => Some(v.clone()),
            Values::Range { from, to, step } => {
                let step = step.unwrap_or(1.0);
                if !(step.is_finite() && step > 0.0 && from.is_finite() && to.is_finite())
                    || to < from
                {
                    return None;
                }
                let n = ((to - from) / step + 1e-9).floor() as usize + 1;
                if n > MAX_VALUES {
                    return None;
                }
                // Each value from its index, so steps such as 0.1 do not drift.
                Some((0..n).map(|i| from + step * i as f64).collect())
            }
        }
    }
}

/// A value as it is written into commands, URLs and labels: an integer without a
/// decimal point (`2`, not `2.0`). Only digits, `-`, `.` and `e` can appear, so a
/// value substituted into a shell line cannot run anything.
pub fn value_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// What must hold before a point's test starts: exactly one of `http`, `run`,
/// `shell`, `metric`, checked every `every` until it holds or `timeout` passes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ready {
    /// An HTTP check: the answer's status (and body) as expected.
    #[serde(default)]
    pub http: Option<ReadyHttp>,
    /// A program that exits 0 when ready.
    #[serde(default)]
    pub run: Option<Vec<String>>,
    /// A shell line that exits 0 when ready.
    #[serde(default)]
    pub shell: Option<String>,
    /// A metric of the target's `/metrics` that has settled.
    #[serde(default)]
    pub metric: Option<ReadyMetric>,
    /// How long to wait before the point fails (default 60s).
    #[serde(default)]
    pub timeout: Option<Dur>,
    /// How often to check (default 1s).
    #[serde(default)]
    pub every: Option<Dur>,
}

/// An HTTP readiness check.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadyHttp {
    /// URL (`{{ value }}` and `{{ env.X }}` allowed); a path is joined to `target`.
    pub url: String,
    /// Expected status (default 200).
    #[serde(default)]
    pub status: Option<u16>,
    /// Text the body must contain (`{{ value }}` allowed).
    #[serde(default)]
    pub body_contains: Option<String>,
}

/// A metric that must settle: its value within `within` of its mean over `for`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadyMetric {
    /// The metrics endpoint (Prometheus text).
    pub url: String,
    /// The series: a name, optionally with labels (`pool_size{db="main"}`).
    pub name: String,
    /// Largest spread allowed, in % of the mean (default 5).
    #[serde(default)]
    pub within_pct: Option<f64>,
    /// How long it must stay within it (default 5s).
    #[serde(default, rename = "for")]
    pub hold: Option<Dur>,
    /// The value it must settle at (`{{ value }}` allowed), when it must be one.
    #[serde(default)]
    pub equals: Option<String>,
}

/// The search at each point, as `pado find-capacity` takes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindCapacity {
    /// SLA in threshold syntax (default `p(95) < 200` and
    /// `http_req_failed: rate < 0.01`).
    #[serde(default)]
    pub sla: Vec<String>,
    /// First rate, iterations per second (default 50).
    #[serde(default)]
    pub start_rate: Option<f64>,
    /// Each step multiplies the rate by this (default 1.5).
    #[serde(default)]
    pub factor: Option<f64>,
    /// Highest rate to try (default 100000).
    #[serde(default)]
    pub max_rate: Option<f64>,
    /// How long each step holds its rate (default 10s).
    #[serde(default)]
    pub hold: Option<Dur>,
    /// Bisection rounds after the first break (default 3).
    #[serde(default)]
    pub refine: Option<u32>,
}

/// The scenario's own load at each point, and the figure measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Fixed {
    /// `p50`, `p90`, `p95` (default), `p99`, `rps` or `error_rate`.
    #[serde(default)]
    pub metric: Option<String>,
}

/// The figures a fixed-load point can measure.
pub const FIXED_METRICS: [&str; 6] = ["p50", "p90", "p95", "p99", "rps", "error_rate"];

/// What a failed point does to the rest of the experiment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// Go on with the next value.
    #[default]
    Continue,
    /// Stop (restore still runs).
    Stop,
}

/// `{{ value }}` holes in `text` replaced by `value` (spaces inside the braces are
/// free); other templates (`{{ env.X }}`) are left for their own renderer.
pub fn fill_value(text: &str, value: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("{{") {
        let Some(j) = rest[i..].find("}}") else {
            break;
        };
        let inner = rest[i + 2..i + j].trim();
        out.push_str(&rest[..i]);
        if inner == VALUE_HOLE {
            out.push_str(value);
        } else {
            out.push_str(&rest[i..i + j + 2]);
        }
        rest = &rest[i + j + 2..];
    }
    out.push_str(rest);
    out
}

/// Whether `text` is exactly one `{{ value }}` hole.
pub fn is_value_hole(text: &str) -> bool {
    text.trim()
        .strip_prefix("{{")
        .and_then(|t| t.strip_suffix("}}"))
        .is_some_and(|t| t.trim() == VALUE_HOLE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_expands_by_index_without_drift() {
        let v = Values::Range {
            from: 0.1,
            to: 0.5,
            step: Some(0.1),
        };
        let got = v.expand().unwrap();
        assert_eq!(got.len(), 5, "{got:?}");
        assert!((got[4] - 0.5).abs() < 1e-12, "{got:?}");
        assert_eq!(
            Values::Range {
                from: 1.0,
                to: 8.0,
                step: Some(3.0)
            }
            .expand()
            .unwrap(),
            [1.0, 4.0, 7.0]
        );
        assert!(Values::Range {
            from: 1.0,
            to: 2.0,
            step: Some(0.0)
        }
        .expand()
        .is_none());
        assert!(Values::Range {
            from: 0.0,
            to: 1e9,
            step: None
        }
        .expand()
        .is_none());
    }

    #[test]
    fn the_value_fills_its_holes_and_leaves_other_templates() {
        assert_eq!(
            fill_value("--replicas={{ value }} {{value}} {{ env.X }}", "3"),
            "--replicas=3 3 {{ env.X }}"
        );
        assert_eq!(fill_value("no holes {{", "3"), "no holes {{");
        assert!(is_value_hole(" {{ value }} "));
        assert!(!is_value_hole("x{{ value }}"));
    }

    #[test]
    fn a_value_is_written_as_shell_inert_text() {
        assert_eq!(value_text(2.0), "2");
        assert_eq!(value_text(-3.0), "-3");
        assert_eq!(value_text(0.25), "0.25");
        for v in [1.0, 0.5, 1e20, -7.25, 123456.0] {
            let t = value_text(v);
            assert!(
                t.chars()
                    .all(|c| c.is_ascii_digit() || matches!(c, '-' | '.' | 'e' | '+')),
                "{t}"
            );
        }
    }
}
