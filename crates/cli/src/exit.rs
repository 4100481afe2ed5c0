//! Exit codes (a contract, like k6's): 0 success, 99 the run's verdict failed
//! (`pado_analysis::verdict`: a threshold, an event's expectation, the `--soak`
//! verdict, or every request failing / none completing; with `--once`, a request
//! or check), 2 invalid usage or scenario, 1 anything else.

/// All good.
pub(crate) const OK: i32 = 0;
/// Another error (I/O, internal).
pub(crate) const ERROR: i32 = 1;
/// Invalid usage, scenario or threshold.
pub(crate) const INVALID: i32 = 2;
/// The run's verdict failed (a threshold, an event's expectation, the soak, the
/// requests rule): the same code as the verdict's own
/// (`pado_analysis::verdict::EXIT_FAILED`).
pub(crate) const THRESHOLD_FAILED: i32 = pado_analysis::verdict::EXIT_FAILED;
/// `pado run --once`: a request or a check failed (the same code as a failed
/// threshold: "the test ran, and what it checks did not hold").
pub(crate) const ONCE_FAILED: i32 = 99;
/// Interrupted twice (second Ctrl-C).
pub(crate) const INTERRUPTED: i32 = 130;

/// An error with the exit code it should produce.
#[derive(Debug)]
pub(crate) struct Failure {
    /// Exit code.
    pub code: i32,
    /// Message for stderr.
    pub message: String,
}

impl Failure {
    /// Invalid input (exit 2).
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Failure {
            code: INVALID,
            message: message.into(),
        }
    }

    /// Any other failure (exit 1).
    pub(crate) fn other(e: impl std::fmt::Display) -> Self {
        Failure {
            code: ERROR,
            message: e.to_string(),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<pado_session::SessionError> for Failure {
    /// A session's bad input is invalid usage (exit 2), a stop before anything was
    /// sent exit 130, a k6 script that cannot run k6's code for it (104, 107);
    /// anything else exit 1.
    fn from(e: pado_session::SessionError) -> Self {
        match e {
            pado_session::SessionError::Invalid(m) => Failure::invalid(m),
            pado_session::SessionError::Io(m) => Failure::other(m),
            pado_session::SessionError::Interrupted(m) => Failure {
                code: INTERRUPTED,
                message: m,
            },
            pado_session::SessionError::Script { code, message } => Failure { code, message },
        }
    }
}

impl From<pado_fleet::agent_setup::SetupError> for Failure {
    /// A setting of an agent or a coordinator that is wrong is invalid usage
    /// (exit 2); a file that could not be written exit 1.
    fn from(e: pado_fleet::agent_setup::SetupError) -> Self {
        match e {
            pado_fleet::agent_setup::SetupError::Invalid(m) => Failure::invalid(m),
            pado_fleet::agent_setup::SetupError::Io(m) => Failure::other(m),
        }
    }
}
