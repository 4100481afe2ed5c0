//! Request-by-request reporting for people debugging a script (`--http-debug`,
//! `--once`): the engine describes each exchange as a [`Trace`] and hands it to an
//! [`Observer`], which decides how to show it (the engine knows nothing of terminals).
//!
//! Only built when an observer is installed: a load run without one pays a single
//! branch per request. Every text in a trace is already redacted ([`crate::redact`]).

use pado_metrics::{ErrorKind, Phases};

/// Receives one trace per finished exchange, from any worker thread.
pub trait Observer: Send + Sync {
    /// Whether credential headers (`Authorization`, `Cookie`...) are shown
    /// (`--http-debug=full`); their `env` values stay hidden all the same.
    fn full(&self) -> bool {
        false
    }
    /// One exchange finished.
    fn exchange(&self, t: Trace);
    /// A k6 script's `check` (made apart from any exchange) in `scope` (the
    /// scenario, `setup` or `teardown`), by its name (its k6 path inside a
    /// group) and whether it passed: `--once` judges it as a YAML check.
    fn script_check(&self, scope: &str, name: &str, ok: bool) {
        let _ = (scope, name, ok);
    }
}

/// A body as shown: the first bytes, redacted and made printable, and its length.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BodyShown {
    /// Printable text of the first [`TRACE_BODY_BYTES`] bytes.
    pub text: String,
    /// Length of the whole body (as kept: at most the body keep cap).
    pub total: usize,
}

/// Bytes of a body a full trace shows.
pub const TRACE_BODY_BYTES: usize = 1024;

/// One check's outcome with what it saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckOutcome {
    /// The check's name (`step: status is 200`).
    pub name: String,
    /// Whether it held.
    pub ok: bool,
    /// What it saw (`got 401`), redacted.
    pub actual: String,
}

/// One exchange, described for a person.
#[derive(Clone, Debug)]
pub struct Trace {
    /// Scenario name, or `setup` / `teardown`.
    pub scope: String,
    /// Step name.
    pub step: String,
    /// VU number (0 for the global setup and teardown).
    pub vu: u64,
    /// Request method.
    pub method: String,
    /// Origin and target (`http://127.0.0.1:8080/path?q`).
    pub url: String,
    /// Request headers as sent (redacted).
    pub request_headers: Vec<(String, String)>,
    /// Request body (first bytes), when there is one.
    pub request_body: Option<BodyShown>,
    /// Status, 0 when no response arrived.
    pub status: u16,
    /// Transport failure.
    pub error: Option<ErrorKind>,
    /// Why it failed, in words, when more than the category is known (a TLS
    /// failure's cause, what a template rendered), redacted.
    pub reason: Option<String>,
    /// Whether the request counts as failed.
    pub failed: bool,
    /// Response headers (redacted).
    pub response_headers: Vec<(String, String)>,
    /// Response body (first bytes), when there is one.
    pub response_body: Option<BodyShown>,
    /// Timing phases.
    pub phases: Phases,
    /// Checks in order.
    pub checks: Vec<CheckOutcome>,
    /// Extracted values by variable name (`None` when nothing matched), redacted.
    pub extracted: Vec<(String, Option<String>)>,
}
