//! The history's errors: each one a single line a run can print and carry on.

use std::path::{Path, PathBuf};

/// What went wrong with the history database or a result directory being recorded.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// No place for the database: neither `--history`, `PADO_HOME`,
    /// `XDG_DATA_HOME` nor `HOME` is set.
    #[error("no history location: set PADO_HOME, XDG_DATA_HOME or HOME, or pass --history DIR")]
    NoLocation,
    /// The database's directory could not be created.
    #[error("{path}: could not create the history directory: {source}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not an SQLite database or is damaged.
    #[error("{path}: the history database is corrupt ({detail}); move it away and run `pado history rebuild DIR...` to re-index result directories")]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// SQLite's words.
        detail: String,
    },
    /// Another process held the database longer than the busy timeout.
    #[error("{path}: the history database stayed locked by another process for {secs} s")]
    Locked {
        /// The database file.
        path: PathBuf,
        /// How long pado waited.
        secs: u64,
    },
    /// The database was made by a newer pado.
    #[error("{path}: the history database has schema version {found}, newer than this pado knows ({known}); use a newer pado")]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// Its `user_version`.
        found: i64,
        /// The newest this build knows.
        known: i64,
    },
    /// The device holding the database is full: SQLite's `SQLITE_FULL`, or one of
    /// its I/O errors while that device has no room left (a full disk surfaces as
    /// "disk I/O error" when growing the WAL index fails, which says nothing useful).
    #[error("{path}: no space left on the device holding the history ({dir}); free some space there, or record elsewhere with --history DIR")]
    NoSpace {
        /// The database file.
        path: PathBuf,
        /// Its directory, on the full device.
        dir: PathBuf,
    },
    /// Any other SQLite failure.
    #[error("{path}: history database: {source}")]
    Sql {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// A result directory that cannot be recorded (no or unreadable summary).
    #[error("{dir}: {reason}")]
    ResultDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        reason: String,
    },
    /// A run reference (`last~3`, `best`, `label:k=v`, an id) that matched nothing
    /// or could not be read.
    #[error("{0}")]
    Reference(String),
    /// A bad filter value (`--since`, `--label`).
    #[error("{0}")]
    BadFilter(String),
}

impl HistoryError {
    /// Classify an SQLite error on the database at `path`.
    pub(crate) fn sql(path: &Path, e: rusqlite::Error, busy_secs: u64) -> Self {
        use rusqlite::ErrorCode as C;
        if let rusqlite::Error::SqliteFailure(f, msg) = &e {
            match f.code {
                C::NotADatabase | C::DatabaseCorrupt => {
                    return HistoryError::Corrupt {
                        path: path.to_path_buf(),
                        detail: msg.clone().unwrap_or_else(|| f.to_string()),
                    }
                }
                C::DiskFull => return HistoryError::no_space(path),
                C::SystemIoFailure if device_full(path) => return HistoryError::no_space(path),
                C::DatabaseBusy | C::DatabaseLocked => {
                    return HistoryError::Locked {
                        path: path.to_path_buf(),
                        secs: busy_secs,
                    }
                }
                _ => {}
            }
        }
        HistoryError::Sql {
            path: path.to_path_buf(),
            source: e,
        }
    }

    fn no_space(path: &Path) -> Self {
        HistoryError::NoSpace {
            path: path.to_path_buf(),
            dir: dir_of(path).to_path_buf(),
        }
    }
}

/// The directory holding the database file.
fn dir_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Whether the device holding `path` has no room left for an unprivileged writer
/// (under 64 KiB free): an I/O error there is most likely the full disk's.
#[cfg(unix)]
fn device_full(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(dir) = std::ffi::CString::new(dir_of(path).as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `dir` is a NUL-terminated path and `st` a zeroed statvfs that
    // statvfs(3) fills; nothing else is read or kept.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(dir.as_ptr(), &mut st) };
    rc == 0 && (st.f_bavail as u128) * (st.f_frsize as u128) < 64 * 1024
}

/// Elsewhere: an I/O error is left as SQLite words it.
#[cfg(not(unix))]
fn device_full(_path: &Path) -> bool {
    false
}
