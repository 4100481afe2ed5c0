//! The lines a session says to the person running it while it runs (warnings, an
//! abort's reason). Written to stderr without `eprintln!`, which panics when stderr
//! cannot be written (a closed pipe, a full disk, `2>/dev/full`): a run's results
//! matter more than its commentary, so a line that cannot be written is dropped.

use std::io::Write;

/// Writes one line to stderr, dropping it if stderr cannot take it.
pub(crate) fn line(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{text}");
}

/// Writes `warning: TEXT` to stderr, dropping it if stderr cannot take it.
pub(crate) fn warning(text: &dyn std::fmt::Display) {
    line(&format!("warning: {text}"));
}
