//! `pado merge`: the segments of a split test into one result directory, then the
//! same reports and exit code as `pado report` on it. Wiring only: the merge and
//! its reports are `pado_session::merge_and_report`.

use std::path::{Path, PathBuf};

use crate::exit;

/// The flags of `pado merge`.
pub(crate) struct MergeArgs<'a> {
    pub dirs: &'a [PathBuf],
    pub out: &'a Path,
    pub allow_partial: bool,
    pub overwrite: bool,
    pub html: bool,
    pub quiet: bool,
    /// Extra files to write beside the summary (`csv`, `junit`, `hdr`), as `pado run
    /// --export` writes them.
    pub exports: &'a [String],
    /// Named time windows with rows of their own in the stage table.
    pub windows: &'a [pado_results::StageMark],
    /// Where the merged run is recorded.
    pub history: &'a crate::history_cmd::Recorder,
    /// The changes of the load the coordinator made (`pado run --generators`, `pado
    /// k8s run`), in place of the generators' copies; `None` for `pado merge`.
    pub control: Option<&'a [pado_results::events::EventRecord]>,
}

/// Merge, write the reports, print the summary; exit 99 when a threshold failed on
/// the merged data.
pub(crate) fn merge(a: &MergeArgs<'_>) -> Result<i32, exit::Failure> {
    let written = pado_session::merge_and_report(&pado_session::MergeSpec {
        dirs: a.dirs,
        out: a.out,
        allow_partial: a.allow_partial,
        overwrite: a.overwrite,
        html: a.html,
        exports: a.exports,
        windows: a.windows,
        control: a.control,
    })?;
    let code = crate::print_and_judge(written, a.quiet);
    if let Some(id) = a.history.record(a.out, pado_history::Kind::Merge) {
        if !a.quiet {
            crate::out::outln!("  history: run {id}");
        }
    }
    code
}
