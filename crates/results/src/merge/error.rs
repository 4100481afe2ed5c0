//! Why result directories could not be merged: each error names the directories
//! concerned, so the user knows which generator to look at.

use std::path::PathBuf;

use crate::ResultError;

/// Why `pado merge` refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A directory could not be read (or the merged one written).
    #[error(transparent)]
    Result(#[from] ResultError),
    /// A directory holds a whole run, not one share of a split test.
    #[error("{0}: is not one segment of a split test (run with --segment)")]
    NotASegment(PathBuf),
    /// Two directories come from different tests (plan, segment count or weights).
    #[error("{a} and {b} are segments of different tests: {what}")]
    DifferentTests {
        /// The first directory given.
        a: PathBuf,
        /// The one that differs.
        b: PathBuf,
        /// What differs, e.g. `plan ab12… vs cd34…`.
        what: String,
    },
    /// The same segment was given twice.
    #[error("{a} and {b} are both segment {index}/{count}")]
    DuplicateSegment {
        /// One directory.
        a: PathBuf,
        /// The other.
        b: PathBuf,
        /// The segment index.
        index: u32,
        /// Segments of the test.
        count: u32,
    },
    /// A `started_at` that is not an RFC 3339 time (needed to align the seconds).
    #[error("{dir}: run.json started_at `{value}` is not an RFC 3339 time, so its seconds cannot be aligned with the others")]
    BadStart {
        /// The directory.
        dir: PathBuf,
        /// What it holds.
        value: String,
    },
    /// A file of a result directory is a FIFO, a device or a socket: opening or
    /// reading it could block for ever (a FIFO nobody writes to) or read without end
    /// (`/dev/zero`), so a merge refuses it before opening anything.
    #[error(
        "{path}: is a {kind}, not a regular file; a result directory holds only regular files"
    )]
    NotARegularFile {
        /// The file.
        path: PathBuf,
        /// What it is instead: `FIFO`, `socket`, `device`.
        kind: &'static str,
    },
    /// Segments are missing or ended early, and a partial merge was not allowed.
    #[error("{}; merge what is there with --allow-partial", .0.join("; "))]
    Incomplete(Vec<String>),
}
