//! Events on the run's timeline (`events:`): faults injected, endpoints called or
//! moments marked while the load runs, each with what is expected of the target
//! during the fault's window and after it.
//!
//! The model lives here beside [`crate::model::Config`]; the engine runs the actions
//! on the run's clock, the result directory records them (`events.jsonl`) and the
//! analysis judges the expectations from the directory alone. The `recovers`
//! expression (`p(95) < 200 within 30s`) is parsed here so that its errors name the
//! file and line like a threshold's.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::thresholds::{self, Threshold, ThresholdError};
use crate::Dur;

/// Timeout of an event's command or HTTP call when the event sets none.
pub const DEFAULT_EVENT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a `recovers` condition must hold, second after second, to count as
/// recovered when the event sets no `hold:`.
pub const DEFAULT_HOLD: Duration = Duration::from_secs(5);

/// One event: when it happens, what it does (exactly one of `run`, `shell`, `http`,
/// `mark`), an optional end (`duration`, with `undo`) that makes it a fault window,
/// and what is expected during and after that window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Event {
    /// Name in results and reports (default `event N`, counting from 1).
    #[serde(default)]
    pub name: Option<String>,
    /// When, from second 0 of the run (`30s`).
    #[serde(default)]
    pub at: Option<Dur>,
    /// When stage N (counting from 1) of a scenario starts: of `scenario`, or of the
    /// first scenario with stages.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub at_stage: Option<u32>,
    /// With `at_stage`: the scenario whose stages are counted.
    #[serde(default)]
    pub scenario: Option<String>,
    /// Run a program: argv, no shell (`["docker", "restart", "db"]`). `{{ env.X }}`
    /// allowed; its values are hidden in what is recorded.
    #[serde(default)]
    pub run: Option<Vec<String>>,
    /// Run a shell command line (`sh -c`), when a pipe or redirect is needed.
    #[serde(default)]
    pub shell: Option<String>,
    /// Call an HTTP endpoint through pado's own client.
    #[serde(default)]
    pub http: Option<EventHttp>,
    /// Only mark the timeline with this text.
    #[serde(default)]
    pub mark: Option<String>,
    /// Length of the fault window, counted from when its action finished (the fault
    /// is surely in force then); `undo` runs at its end. Without it the event is a
    /// point in time.
    #[serde(default)]
    pub duration: Option<Dur>,
    /// What ends the fault (`run`, `shell` or `http`), run when `duration` is over,
    /// and also when the run stops early, so a fault is never left behind.
    #[serde(default)]
    pub undo: Option<Action>,
    /// Deadline of the command or HTTP call (default 30s); a command past it is
    /// killed with its process group.
    #[serde(default)]
    pub timeout: Option<Dur>,
    /// Whether the run stops when the action fails (non-zero exit, timeout, status
    /// not 2xx); default true.
    #[serde(default)]
    pub required: Option<bool>,
    /// Thresholds over the seconds of the window, in the threshold language
    /// (`http_req_failed: rate < 0.05`, `"http_req_failed{step:checkout}": rate > 0.5`).
    #[serde(default)]
    pub during: BTreeMap<String, Exprs>,
    /// What is expected after the window (or after a point event).
    #[serde(default)]
    pub after: Option<AfterExpect>,
}

/// A command or an HTTP call that pado runs beside the load (exactly one of `run`,
/// `shell`, `http`): an event's `undo`, an experiment's `apply:` and `restore:`.
/// One type for all of them so that they are written, checked and run alike.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Action {
    /// Run a program: argv, no shell (`["kubectl", "scale", "deploy/api",
    /// "--replicas={{ value }}"]`).
    #[serde(default)]
    pub run: Option<Vec<String>>,
    /// Run a shell command line (`sh -c`).
    #[serde(default)]
    pub shell: Option<String>,
    /// Call an HTTP endpoint (in an experiment, a `json:` string that is exactly
    /// `{{ value }}` becomes the number).
    #[serde(default)]
    pub http: Option<EventHttp>,
    /// Deadline; a command past it is killed with its process group. An
    /// experiment's action: default 60s. An event's `undo` takes its event's
    /// `timeout` and may not set its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Dur>,
}

impl Action {
    /// How many of `run`, `shell`, `http` it sets (exactly one is valid).
    pub fn kinds_set(&self) -> usize {
        [
            self.run.is_some(),
            self.shell.is_some(),
            self.http.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count()
    }
}

/// An HTTP call made by an event.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventHttp {
    /// Method (default GET, or POST with a body).
    #[serde(default)]
    pub method: Option<String>,
    /// URL; a path is joined to `target`. `{{ env.X }}` allowed.
    pub url: String,
    /// Body text (`{{ env.X }}` allowed).
    #[serde(default)]
    pub body: Option<String>,
    /// JSON body (sent with `Content-Type: application/json`).
    #[serde(default)]
    pub json: Option<serde_json::Value>,
    /// Request headers (`{{ env.X }}` allowed; values never recorded).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

/// One expression or a list of them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Exprs {
    /// One expression.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl Exprs {
    /// The expressions.
    pub fn list(&self) -> Vec<String> {
        match self {
            Exprs::One(s) => vec![s.clone()],
            Exprs::Many(v) => v.clone(),
        }
    }
}

/// Expectations after a window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AfterExpect {
    /// `p(95) < 200 within 30s` (metric `http_req_duration` unless named:
    /// `http_req_failed: rate < 0.01 within 10s`): the condition, judged per second,
    /// holds from some second on for `hold` seconds in a row, and that second is
    /// at most the given time after the window's end.
    #[serde(default)]
    pub recovers: Option<Exprs>,
    /// How long the condition must hold to count as recovered (default 5s).
    #[serde(default)]
    pub hold: Option<Dur>,
    /// No failed request from this long after the window's end to the end of the
    /// run (or the next event's start).
    #[serde(default)]
    pub no_errors_after: Option<Dur>,
}

/// A parsed `recovers` expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Recovers {
    /// The condition judged per second.
    pub condition: Threshold,
    /// The longest acceptable time from the window's end to recovery.
    pub within: Duration,
}

/// Why a `recovers` expression could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecoversError {
    /// No `within DURATION` at its end.
    #[error("`{0}` has no `within DURATION` at its end (write e.g. `p(95) < 200 within 30s`)")]
    NoWithin(String),
    /// The duration after `within`.
    #[error("`{0}`: {1}")]
    Duration(String, String),
    /// The condition.
    #[error("`{0}`: {1}")]
    Condition(String, ThresholdError),
}

/// Parses `p(95) < 200 within 30s` or `http_req_failed: rate < 0.01 within 10s`.
pub fn parse_recovers(text: &str) -> Result<Recovers, RecoversError> {
    let t = text.trim();
    let Some(i) = t.rfind(" within ") else {
        return Err(RecoversError::NoWithin(t.to_string()));
    };
    let (cond, within) = (&t[..i], t[i + " within ".len()..].trim());
    let within = pado_base::units::parse_duration(within)
        .map_err(|e| RecoversError::Duration(t.to_string(), e.to_string()))?;
    let condition =
        thresholds::parse_cli(cond).map_err(|e| RecoversError::Condition(t.to_string(), e))?;
    Ok(Recovers { condition, within })
}

impl Event {
    /// The name given, or `event N` for the `index`-th event (0-based).
    pub fn display_name(&self, index: usize) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("event {}", index + 1))
    }

    /// The kind of its action: `run`, `shell`, `http` or `mark`.
    pub fn kind(&self) -> &'static str {
        if self.run.is_some() {
            "run"
        } else if self.shell.is_some() {
            "shell"
        } else if self.http.is_some() {
            "http"
        } else {
            "mark"
        }
    }

    /// Whether a failed action stops the run (default true).
    pub fn is_required(&self) -> bool {
        self.required.unwrap_or(true)
    }

    /// The first field of this event that runs a program on the generator's host
    /// (`run`, `shell`, `undo.run`, `undo.shell`), if any: what a `pado agent` runs
    /// only when its operator allowed it, since a job comes from the network.
    pub fn command_field(&self) -> Option<&'static str> {
        let undo = self.undo.as_ref();
        if self.run.is_some() {
            Some("run")
        } else if self.shell.is_some() {
            Some("shell")
        } else if undo.is_some_and(|u| u.run.is_some()) {
            Some("undo.run")
        } else if undo.is_some_and(|u| u.shell.is_some()) {
            Some("undo.shell")
        } else {
            None
        }
    }
}

impl Action {
    /// The kind of the action: `run`, `shell` or `http`.
    pub fn kind(&self) -> &'static str {
        if self.run.is_some() {
            "run"
        } else if self.shell.is_some() {
            "shell"
        } else {
            "http"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_reads_condition_and_within() {
        let r = parse_recovers("p(95) < 200 within 30s").unwrap();
        assert_eq!(r.condition.metric, "http_req_duration");
        assert_eq!(r.condition.bound, 200.0);
        assert_eq!(r.within, Duration::from_secs(30));
        let r = parse_recovers("http_req_failed{step:checkout}: rate < 0.01 within 1m").unwrap();
        assert_eq!(r.condition.metric_key(), "http_req_failed{step:checkout}");
        assert_eq!(r.within, Duration::from_secs(60));
        assert!(matches!(
            parse_recovers("p(95) < 200"),
            Err(RecoversError::NoWithin(_))
        ));
        assert!(matches!(
            parse_recovers("p(95) < 200 within soon"),
            Err(RecoversError::Duration(..))
        ));
        assert!(matches!(
            parse_recovers("p(95) << 200 within 5s"),
            Err(RecoversError::Condition(..))
        ));
    }

    #[test]
    fn command_fields_are_found_in_the_action_and_its_undo_only() {
        let ev = |yaml: &str| -> Event { serde_yaml_ng::from_str(yaml).unwrap() };
        assert_eq!(ev("at: 1s\nrun: [touch, x]").command_field(), Some("run"));
        assert_eq!(ev("at: 1s\nshell: touch x").command_field(), Some("shell"));
        assert_eq!(
            ev("at: 1s\nhttp: {url: /a}\nduration: 2s\nundo: {run: [touch, 파도]}").command_field(),
            Some("undo.run")
        );
        assert_eq!(
            ev("at: 1s\nmark: m\nduration: 2s\nundo: {shell: touch x}").command_field(),
            Some("undo.shell")
        );
        assert_eq!(ev("at: 1s\nhttp: {url: /a}").command_field(), None);
        assert_eq!(ev("at: 1s\nmark: 파도").command_field(), None);
        assert_eq!(
            ev("at: 1s\nhttp: {url: /a}\nduration: 2s\nundo: {http: {url: /b}}").command_field(),
            None
        );
    }
}
