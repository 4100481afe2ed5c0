//! The files a scenario reads besides itself (data feeds, request bodies, a CA
//! certificate; never a client key, which is a secret), read once on the
//! coordinator's machine for generators elsewhere: a Kubernetes ConfigMap
//! (`pado k8s`) or an agent's job bundle (`pado run --generators`).

use std::path::{Path, PathBuf};

use crate::Config;

/// One file for generators elsewhere: the path the scenario names it by (relative
/// to its directory, without a leading `./`) and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundledFile {
    /// Where it goes beside the scenario on the other machine.
    pub path: String,
    /// What it holds.
    pub bytes: Vec<u8>,
}

/// Why a scenario's files cannot be handed to other generators.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// A client key would be copied to other machines.
    #[error("{file}: a client key (defaults.tls.client_key or --client-key) is not sent to other generators: it is a secret. Start each generator with `pado run --segment i/N` and a key of its own, then `pado merge` (see `pado docs scaling-out`)")]
    ClientKey {
        /// The scenario, as messages name it.
        file: String,
    },
    /// A file that would land outside the scenario's directory once unpacked.
    #[error("{file}: file `{rel}` is outside the scenario's directory (absolute or with ..; a --ca-cert flag is absolute): other generators cannot be given it; move it beside the scenario (for a CA, name it in `defaults.tls.ca_cert`)")]
    Outside {
        /// The scenario, as messages name it.
        file: String,
        /// The file as the scenario names it.
        rel: String,
    },
    /// A file that cannot be read, or is larger than allowed.
    #[error("data file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Every data and body file of `config` (the scenario `file`, its relative paths
/// resolving against `base_dir`), each once, read with at most `cap` bytes. A path
/// for which `stays_inside` is false (the destination's rule for a file that
/// stays inside the directory it is unpacked into) is refused with its name, as
/// is a client key.
pub fn bundled_files(
    config: &Config,
    file: &str,
    base_dir: &Path,
    cap: u64,
    stays_inside: impl Fn(&str) -> bool,
) -> Result<Vec<BundledFile>, BundleError> {
    if config
        .defaults
        .tls
        .as_ref()
        .is_some_and(|t| t.client_key.is_some())
    {
        return Err(BundleError::ClientKey {
            file: file.to_string(),
        });
    }
    let mut out: Vec<BundledFile> = Vec::new();
    for rel in files_read(config) {
        let path = rel.trim_start_matches("./").to_string();
        if out.iter().any(|f| f.path == path) {
            continue;
        }
        if !stays_inside(&path) {
            return Err(BundleError::Outside {
                file: file.to_string(),
                rel,
            });
        }
        let full = base_dir.join(&rel);
        let bytes = crate::limits::read_capped(&full, cap)
            .map_err(|source| BundleError::Read { path: full, source })?;
        out.push(BundledFile { path, bytes });
    }
    Ok(out)
}

/// The files a scenario reads besides itself, as it names them: data feeds'
/// `file`, the CA certificate and every request's `body_file`, wherever it sits
/// (scenarios, groups, setup, teardown).
pub fn files_read(config: &Config) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra_defaults: serde_json::Value, body_file: &str) -> Config {
        serde_json::from_value(serde_json::json!({
            "target": "http://127.0.0.1:9",
            "defaults": extra_defaults,
            "data": {"users": {"file": "./users.csv"}},
            "setup": [{"request": {"method": "POST", "url": "/login", "body_file": "login.json"}}],
            "scenarios": {"s": {"executor": "constant-vus", "vus": 1, "duration": "1s",
                "flow": [{"group": "g", "steps": [{"request": {"method": "POST", "url": "/", "body_file": body_file}}]}]}}
        }))
        .unwrap()
    }

    fn inside(p: &str) -> bool {
        !p.starts_with('/') && !p.split('/').any(|c| c == "..")
    }

    #[test]
    fn every_file_read_is_bundled_once_with_its_bytes() {
        let d = tempfile::tempdir().unwrap();
        for (f, text) in [
            ("users.csv", "user\n김\n"),
            ("login.json", "{}"),
            ("본문.json", "[1]"),
        ] {
            std::fs::write(d.path().join(f), text).unwrap();
        }
        let cfg = config(serde_json::json!({}), "본문.json");
        assert_eq!(
            files_read(&cfg),
            vec!["./users.csv", "본문.json", "login.json"]
        );
        let got = bundled_files(&cfg, "t.yaml", d.path(), 1024, inside).unwrap();
        let paths: Vec<&str> = got.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, vec!["users.csv", "본문.json", "login.json"]);
        assert_eq!(got[0].bytes, "user\n김\n".as_bytes());
        // The same file named twice is sent once.
        let twice = config(serde_json::json!({}), "./login.json");
        assert_eq!(
            bundled_files(&twice, "t.yaml", d.path(), 1024, inside)
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn a_client_key_a_file_outside_and_a_file_too_large_are_refused() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("users.csv"), "user\n김\n").unwrap();
        std::fs::write(d.path().join("login.json"), "{}").unwrap();
        let key = config(
            serde_json::json!({"tls": {"client_cert": "c.pem", "client_key": "k.pem"}}),
            "login.json",
        );
        let e = bundled_files(&key, "t.yaml", d.path(), 1024, inside).unwrap_err();
        assert!(e.to_string().starts_with("t.yaml: a client key"), "{e}");
        let outside = config(serde_json::json!({}), "../secret.json");
        let e = bundled_files(&outside, "t.yaml", d.path(), 1024, inside).unwrap_err();
        assert!(
            e.to_string().contains("file `../secret.json` is outside"),
            "{e}"
        );
        let ok = config(serde_json::json!({}), "login.json");
        let e = bundled_files(&ok, "t.yaml", d.path(), 3, inside).unwrap_err();
        assert!(e.to_string().starts_with("data file "), "{e}");
    }
}
