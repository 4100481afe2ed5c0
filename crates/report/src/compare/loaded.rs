//! The runs `pado compare` reads: each result directory opened, its timeline
//! streamed and its summary computed, labelled by the directory's name (the name
//! users gave with `--out`, or the stamped one `pado run` made).

use std::path::{Path, PathBuf};

use super::Side;
use crate::summary::{LoadedRun, Summary};
use crate::ReportError;

/// Why a run could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The path is not a result directory (the user named the wrong one).
    #[error("{0}")]
    NotResultDir(pado_results::ResultError),
    /// A result directory whose files could not be read into a summary.
    #[error("{0}")]
    Unreadable(ReportError),
}

/// One run, loaded for the comparison.
pub struct Loaded {
    /// Its label: the directory's name.
    pub label: String,
    /// Its timeline and files.
    pub run: LoadedRun,
    /// Its summary.
    pub summary: Summary,
}

impl Loaded {
    /// The run as a side of the comparison.
    pub fn side(&self) -> Side<'_> {
        Side {
            label: self.label.clone(),
            run: &self.run,
            summary: &self.summary,
        }
    }
}

/// The label of a compared directory: its last name, else the path as given.
fn label(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string())
}

/// Loads every directory, in order; the first that cannot be is the error.
pub fn load_runs(dirs: &[PathBuf]) -> Result<Vec<Loaded>, LoadError> {
    dirs.iter()
        .map(|d| {
            let rd = pado_results::ResultDir::open(d).map_err(LoadError::NotResultDir)?;
            let run = crate::load(&rd).map_err(LoadError::Unreadable)?;
            let summary = crate::build(&run).map_err(LoadError::Unreadable)?;
            Ok(Loaded {
                label: label(d),
                run,
                summary,
            })
        })
        .collect()
}
