//! Where a run's result directory is: the one the user named (new, empty, or to be
//! overwritten), or a new `pado-results/<UTC time>-<name>` that sorts by start time.

use std::path::{Path, PathBuf};

use pado_results::{ClaimError, ResultDir};

use crate::SessionError;

/// Where default result directories go, relative to the working directory.
pub const RESULTS_PARENT: &str = "pado-results";

/// A name made safe for a file name: letters, digits, `-`, `_` and `.` kept, other
/// characters a `-`, at most 60 characters, `run` when nothing is left.
fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches('-').to_string();
    if s.is_empty() {
        "run".into()
    } else {
        s.chars().take(60).collect()
    }
}

/// A default result directory's name: UTC time to the millisecond, then the test's
/// name (`20261123T020304.567Z-board`), so that a listing sorts by start time.
fn out_stem(name: &str) -> String {
    format!("{}-{}", crate::stamp::compact_now(), sanitize(name))
}

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
    Ok(
        ResultDir::create_unique(Path::new(RESULTS_PARENT), &out_stem(name))
            .map_err(claim_error)?
            .path()
            .to_path_buf(),
    )
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
        None => ResultDir::create_unique(Path::new(RESULTS_PARENT), &out_stem(name)),
    }
    .map_err(claim_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_hangul_and_lose_separators() {
        assert_eq!(sanitize("결제 / checkout"), "결제---checkout");
        assert_eq!(sanitize("///"), "run");
        assert_eq!(sanitize(&"a".repeat(80)).len(), 60);
    }

    #[test]
    fn a_stem_starts_with_the_utc_time_and_ends_with_the_name() {
        let s = out_stem("board");
        assert!(s.ends_with("Z-board"), "{s}");
        assert_eq!(s.find('T'), Some(8), "{s}");
    }
}
