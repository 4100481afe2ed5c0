//! Exit codes (a contract, like k6's): 0 success, 99 a threshold failed (or, with
//! `--once`, a request or check), 2 invalid usage
//! or scenario, 1 anything else.

/// All good.
pub const OK: i32 = 0;
/// Another error (I/O, internal).
pub const ERROR: i32 = 1;
/// Invalid usage, scenario or threshold.
pub const INVALID: i32 = 2;
/// A threshold failed.
pub const THRESHOLD_FAILED: i32 = 99;
/// `pado run --once`: a request or a check failed (the same code as a failed
/// threshold: "the test ran, and what it checks did not hold").
pub const ONCE_FAILED: i32 = 99;
/// Interrupted twice (second Ctrl-C).
pub const INTERRUPTED: i32 = 130;

/// An error with the exit code it should produce.
#[derive(Debug)]
pub struct Failure {
    /// Exit code.
    pub code: i32,
    /// Message for stderr.
    pub message: String,
}

impl Failure {
    /// Invalid input (exit 2).
    pub fn invalid(message: impl Into<String>) -> Self {
        Failure {
            code: INVALID,
            message: message.into(),
        }
    }

    /// Any other failure (exit 1).
    pub fn other(e: impl std::fmt::Display) -> Self {
        Failure {
            code: ERROR,
            message: e.to_string(),
        }
    }
}
