//! Where a run's result directory is: the one the user named (new, empty, or to be
//! overwritten), or a new `pado-results/<UTC time>-<name>` that sorts by start time.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use pado_base::names::{result_dir_stem, RESULTS_PARENT};
use pado_results::{ClaimError, ResultDir};

use crate::SessionError;

/// A directory that could not be claimed: in use or not empty is the user's to fix.
fn claim_error(e: ClaimError) -> SessionError {
    match e {
        ClaimError::Io(_) => SessionError::io(e),
        _ => SessionError::invalid(e.to_string()),
    }
}

/// A new, empty `pado-results/<UTC time>-<name>` directory for commands that put
/// more than one run's files under one folder (`demo`, `find-capacity`); never one
/// that another run made.
pub fn new_out_dir(name: &str) -> Result<PathBuf, SessionError> {
    Ok(ResultDir::create_unique(
        Path::new(RESULTS_PARENT),
        &result_dir_stem(name, SystemTime::now()),
    )
    .map_err(claim_error)?
    .path()
    .to_path_buf())
}

/// A directory the user named for a command that writes several runs under it:
/// refused when it holds files, unless `overwrite`.
pub fn user_out_dir(p: &Path, overwrite: bool) -> Result<PathBuf, SessionError> {
    ResultDir::claim(p, overwrite).map_err(claim_error)?;
    Ok(p.to_path_buf())
}

/// The directory a run writes: `dir` (new, empty, or `overwrite`), or a new one
/// under `pado-results/`. Locked for the run.
pub(crate) fn result_dir(
    dir: Option<&Path>,
    overwrite: bool,
    name: &str,
) -> Result<ResultDir, SessionError> {
    match dir {
        Some(p) => ResultDir::claim(p, overwrite),
        None => ResultDir::create_unique(
            Path::new(RESULTS_PARENT),
            &result_dir_stem(name, SystemTime::now()),
        ),
    }
    .map_err(claim_error)
}
