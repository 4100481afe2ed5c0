//! The files a scenario reads besides itself (data feeds, request bodies, a CA
//! certificate; never a client key, which is a secret), read
//! once on the coordinator's machine for generators elsewhere: a Kubernetes
//! ConfigMap (`pado k8s`) or an agent's job bundle (`pado run --generators`).

use pado_fleet::bundle::{is_relative_inside, FileEntry};

use crate::exit::Failure;
use crate::prepared::Prepared;

/// Every data and body file of the scenario, at the path the scenario names it by
/// (relative to its directory), each read with at most `cap` bytes. A path that
/// would leave the scenario's directory once unpacked elsewhere is refused here,
/// with the file's name.
pub(crate) fn data_files(prep: &Prepared, cap: u64) -> Result<Vec<FileEntry>, Failure> {
    let mut out: Vec<FileEntry> = Vec::new();
    if prep
        .config
        .defaults
        .tls
        .as_ref()
        .is_some_and(|t| t.client_key.is_some())
    {
        return Err(Failure::invalid(format!(
            "{}: a client key (defaults.tls.client_key or --client-key) is not sent to other generators: it is a secret. Start each generator with `pado run --segment i/N` and a key of its own, then `pado merge` (see `pado docs scaling-out`)",
            prep.file
        )));
    }
    for rel in referenced_files(&prep.config) {
        let path = rel.trim_start_matches("./").to_string();
        if out.iter().any(|f| f.path == path) {
            continue;
        }
        if !is_relative_inside(&path) {
            return Err(Failure::invalid(format!(
                "{}: file `{rel}` is outside the scenario's directory (absolute or with ..; a --ca-cert flag is absolute): other generators cannot be given it; move it beside the scenario (for a CA, name it in `defaults.tls.ca_cert`)",
                prep.file
            )));
        }
        let full = prep.base_dir.join(&rel);
        let bytes = read_capped(&full, cap, "data file")?;
        out.push(FileEntry { path, bytes });
    }
    Ok(out)
}

/// A file's bytes, refused past `cap` with its name.
pub(crate) fn read_capped(p: &std::path::Path, cap: u64, what: &str) -> Result<Vec<u8>, Failure> {
    pado_scenario::limits::read_capped(p, cap)
        .map_err(|e| Failure::invalid(format!("{what} {}: {e}", p.display())))
}

/// The files a scenario reads besides itself: data feeds' `file` and every
/// request's `body_file`, wherever it sits (scenarios, groups, setup, teardown).
fn referenced_files(config: &pado_scenario::model::Config) -> Vec<String> {
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    match (k.as_str(), x) {
                        ("body_file", serde_json::Value::String(s)) => out.push(s.clone()),
                        _ => walk(x, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out: Vec<String> = config
        .data
        .values()
        .filter_map(|d| d.file.clone())
        .collect();
    out.extend(config.defaults.tls.iter().filter_map(|t| t.ca_cert.clone()));
    if let Ok(v) = serde_json::to_value(config) {
        walk(&v, &mut out);
    }
    out
}
