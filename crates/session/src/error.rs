//! What can go wrong in a session, typed so that a caller (the CLI) can tell bad
//! input, which the user fixes, from a failure of the machine (a disk that is full).

/// An error of a session.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The configuration or a file it names is wrong (the CLI's exit code 2); the
    /// message names the file, flag or field.
    #[error("{0}")]
    Invalid(String),
    /// Anything else: reading or writing files, starting threads (exit code 1).
    #[error("{0}")]
    Io(String),
    /// The person running it stopped it before anything was sent (Ctrl-C while
    /// waiting for an agreed start; the CLI's exit code 130).
    #[error("{0}")]
    Interrupted(String),
    /// A k6 script that cannot run, with the exit code k6 gives for it (so a CI
    /// job written for `k6 run` reads the same): [`SCRIPT_EXCEPTION`] when the
    /// script does not parse, imports what pado cannot give or its init code
    /// throws; [`INVALID_CONFIG`] when its options cannot run.
    #[error("{message}")]
    Script {
        /// k6's exit code for it.
        code: i32,
        /// What is wrong, naming file, line and column.
        message: String,
    },
}

/// k6's `ScriptException` exit code: the script could not run.
pub const SCRIPT_EXCEPTION: i32 = 107;
/// k6's `InvalidConfig` exit code: the script's options cannot run.
pub const INVALID_CONFIG: i32 = 104;

impl SessionError {
    /// An error of the machine, from anything that says what went wrong.
    pub fn io(e: impl std::fmt::Display) -> Self {
        SessionError::Io(e.to_string())
    }

    /// Bad input, said in the user's words.
    pub fn invalid(message: impl Into<String>) -> Self {
        SessionError::Invalid(message.into())
    }
}

/// Why a change of the load was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ControlError {
    /// More VUs than the plan allows.
    #[error("{asked} VUs: the plan allows at most {max} (raise `vus`/`max_vus` in the scenario)")]
    AboveMax {
        /// What was asked.
        asked: u64,
        /// The planned maximum.
        max: u64,
    },
    /// The change needs a kind of executor the run does not have.
    #[error("{0}")]
    NotApplicable(String),
    /// A rate that is not a finite number of 0 or more.
    #[error("rate {0}: give a finite number of 0 or more")]
    BadRate(f64),
    /// A command that is not one of [`crate::ControlCommand`]'s shapes.
    #[error("bad control command: {0}")]
    BadCommand(String),
    /// The run has ended (or is ending): nothing to change.
    #[error("the run has ended")]
    Ended,
    /// A test split over generators: some of them did not take the change (each
    /// named with its words); the others did.
    #[error("{0}")]
    Generators(String),
}
