//! A change of a running test's load as data: the one shape the dashboard's JSON
//! API, an agent's control endpoint and a library caller all speak. Serialized
//! with an `action` tag, e.g. `{"action":"set_rate","per_s":200,"ramp_s":10}`,
//! so a CI job can drive a run with `curl`.

use serde::{Deserialize, Serialize};

/// One change of the load (see [`crate::RunHandle::apply`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum ControlCommand {
    /// Hold new iterations and arrivals; in-flight ones finish.
    Pause,
    /// Let iterations and arrivals start again.
    Resume,
    /// Run this many closed-model VUs, at once or ramped linearly over `ramp_s`.
    SetVus {
        /// The VU target (at most the plan's most).
        vus: u64,
        /// Seconds to reach it (0 or absent: at once).
        #[serde(default)]
        ramp_s: f64,
    },
    /// What a coordinator sends each generator of a split test for a ramped
    /// [`ControlCommand::SetVus`]: the whole test's ramp from `test_from` to
    /// `test_to` VUs over `ramp_s`, of which this generator runs its segment's
    /// share at every moment (its VUs among the whole test's first N, N rounded
    /// as a single run's ramp rounds it), so that the generators' VUs add up to
    /// the whole test's at every moment of the ramp, as planned load's segments
    /// do. `vus` is this generator's share at the end: what a run without a
    /// segment sets.
    SetSegmentVus {
        /// This generator's VUs once the ramp is done.
        vus: u64,
        /// Seconds the ramp takes.
        ramp_s: f64,
        /// The whole test's VUs when the ramp starts.
        test_from: u64,
        /// The whole test's VUs once it is done.
        test_to: u64,
    },
    /// Run open-model arrivals at this many a second in all, at once or ramped.
    SetRate {
        /// Arrivals a second over every open-model scenario.
        per_s: f64,
        /// Seconds to reach it (0 or absent: at once).
        #[serde(default)]
        ramp_s: f64,
    },
    /// Run open-model arrivals at `factor` times the plan's rate, at once or ramped.
    SetRateFactor {
        /// The multiple of the planned rate (1: as planned).
        factor: f64,
        /// Seconds to reach it (0 or absent: at once).
        #[serde(default)]
        ramp_s: f64,
    },
    /// End the current stage now and go on with the next one.
    NextStage,
    /// Keep the current load level for `seconds` more (the plan's clock waits).
    Hold {
        /// How long to hold.
        seconds: f64,
    },
    /// Stop gracefully, as Ctrl-C does.
    Stop,
}

impl ControlCommand {
    /// Parse a command from JSON, with a message that says which field is wrong.
    pub fn from_json(text: &str) -> Result<Self, crate::ControlError> {
        serde_json::from_str(text).map_err(|e| crate::ControlError::BadCommand(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_read_from_the_documented_json() {
        assert_eq!(
            ControlCommand::from_json(r#"{"action":"set_rate","per_s":200,"ramp_s":10}"#).unwrap(),
            ControlCommand::SetRate {
                per_s: 200.0,
                ramp_s: 10.0
            }
        );
        assert_eq!(
            ControlCommand::from_json(r#"{"action":"set_vus","vus":3}"#).unwrap(),
            ControlCommand::SetVus {
                vus: 3,
                ramp_s: 0.0
            }
        );
        assert_eq!(
            ControlCommand::from_json(r#"{"action":"pause"}"#).unwrap(),
            ControlCommand::Pause
        );
        let e = ControlCommand::from_json(r#"{"action":"set_vus","vuz":3}"#).unwrap_err();
        assert!(e.to_string().contains("vuz"), "{e}");
        assert!(ControlCommand::from_json(r#"{"action":"explode"}"#).is_err());
    }
}
