//! The files a scenario reads besides itself, as generators elsewhere get them
//! (a Kubernetes ConfigMap, an agent's job bundle): which files and the refusals
//! are `pado_scenario::bundle`'s, the path rule of the unpacked bundle
//! `pado_fleet::bundle`'s; this joins them.

use pado_fleet::bundle::{is_relative_inside, FileEntry};

use crate::config::Prepared;
use crate::exit::Failure;

/// Every data and body file of the scenario, at the path the scenario names it by
/// (relative to its directory), each read with at most `cap` bytes.
pub(crate) fn data_files(prep: &Prepared, cap: u64) -> Result<Vec<FileEntry>, Failure> {
    pado_scenario::bundle::bundled_files(
        &prep.config,
        &prep.file,
        &prep.base_dir,
        cap,
        is_relative_inside,
    )
    .map(|files| {
        files
            .into_iter()
            .map(|f| FileEntry {
                path: f.path,
                bytes: f.bytes,
            })
            .collect()
    })
    .map_err(|e| Failure::invalid(e.to_string()))
}

/// A file's bytes, refused past `cap` with its name.
pub(crate) fn read_capped(p: &std::path::Path, cap: u64, what: &str) -> Result<Vec<u8>, Failure> {
    pado_scenario::limits::read_capped(p, cap)
        .map_err(|e| Failure::invalid(format!("{what} {}: {e}", p.display())))
}
