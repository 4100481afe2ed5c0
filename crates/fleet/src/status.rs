//! A generator's `GET /status` answer: the one type its servers write (a job's
//! run, an idle agent) and every coordinator reads (the agents' coordinator, the
//! Kubernetes flow through the pod proxy), so the fields cannot drift apart.
//!
//! On the wire it is a JSON object tagged by `state`, with its keys in sorted order
//! (as every pado release wrote it): `{"state":"idle"}`,
//! `{"seconds":12,"state":"running"}`,
//! `{"error":null,"exit_code":0,"log_tail":null,"state":"done"}`.

use serde::{Deserialize, Serialize};

/// What a generator is doing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum Status {
    /// An agent with no job: ready for one.
    Idle,
    /// The run is going on.
    Running {
        /// Seconds of the timeline written so far.
        #[serde(default)]
        seconds: u64,
    },
    /// The run ended; its result can be fetched.
    Done {
        /// The run's exit code (0 passed, 99 a failed verdict, anything else an error).
        exit_code: i32,
        /// Why its result could not be packed, if it could not.
        #[serde(default)]
        error: Option<String>,
        /// The last lines of its output, when it ended in error.
        #[serde(default)]
        log_tail: Option<String>,
    },
}

impl Status {
    /// The `state` word: `idle`, `running` or `done`.
    pub fn state(&self) -> &'static str {
        match self {
            Status::Idle => "idle",
            Status::Running { .. } => "running",
            Status::Done { .. } => "done",
        }
    }

    /// The answer's JSON, keys sorted as every release wrote them.
    pub fn to_json(&self) -> serde_json::Value {
        // A `Value`'s object keeps its keys sorted: the same bytes as before the type.
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// Read a `/status` body.
    pub fn parse(body: &[u8]) -> Result<Status, serde_json::Error> {
        serde_json::from_slice(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_the_bytes_coordinators_always_read() {
        assert_eq!(Status::Idle.to_json().to_string(), r#"{"state":"idle"}"#);
        assert_eq!(
            Status::Running { seconds: 12 }.to_json().to_string(),
            r#"{"seconds":12,"state":"running"}"#
        );
        let done = Status::Done {
            exit_code: 7,
            error: None,
            log_tail: Some("상태 boom".into()),
        };
        assert_eq!(
            done.to_json().to_string(),
            r#"{"error":null,"exit_code":7,"log_tail":"상태 boom","state":"done"}"#
        );
        assert_eq!(
            Status::parse(done.to_json().to_string().as_bytes()).unwrap(),
            done
        );
    }

    #[test]
    fn reads_the_short_forms_older_servers_and_the_docs_show() {
        assert_eq!(
            Status::parse(br#"{"state":"running"}"#).unwrap(),
            Status::Running { seconds: 0 }
        );
        assert_eq!(
            Status::parse(br#"{"state":"done","exit_code":99}"#).unwrap(),
            Status::Done {
                exit_code: 99,
                error: None,
                log_tail: None
            }
        );
        assert!(Status::parse(br#"{"state":"sleeping"}"#).is_err());
        assert!(
            Status::parse(br#"{"state":"done"}"#).is_err(),
            "no exit code"
        );
    }
}
