//! The fingerprint of a whole split test (`plan_id`): what tells segments of one
//! test apart from segments of another when `pado merge` joins them, and what the
//! history groups a test's runs by. Defined once, here, beside the inputs it reads.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::{Config, Overrides, QuickRequest};

/// Where the test's scenario came from.
#[derive(Clone, Copy, Debug)]
pub enum PlanSource<'a> {
    /// A scenario file: its bytes count.
    File(&'a Path),
    /// Quick mode: its request (and its body file's bytes) count.
    Quick(&'a QuickRequest),
}

/// A file the fingerprint needs that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{}: cannot read {what}: {source}", path.display())]
pub struct PlanIdError {
    /// The file.
    pub path: PathBuf,
    /// What it is to the test (`the scenario file`, `a data file`, `--body-file`).
    pub what: &'static str,
    /// Why.
    pub source: std::io::Error,
}

/// The fingerprint of the whole test: SHA-256 (hex) over the scenario file's bytes
/// (quick mode: its request, the body file's bytes), the bytes of every data file
/// `config` reads (relative to `base_dir`), and every setting from flags that
/// changes the load or the requests (`overrides` — the load shape, target, headers,
/// timeout, TLS, redirects, body limit, think time, thresholds — and `fit_to`). Not
/// in it: paths, the test's name, `--observe`, and everything about where and how
/// one generator runs (`--segment`, `--start-at`, `--out`, `--quiet`, exports,
/// workers), which are not in `overrides`. Equal inputs give equal ids on any
/// machine running the same pado version.
pub fn plan_id(
    source: PlanSource<'_>,
    config: &Config,
    base_dir: &Path,
    overrides: &Overrides,
    fit_to: Option<Duration>,
) -> Result<String, PlanIdError> {
    let mut h = Sha256::new();
    let mut part = |label: &str, bytes: &[u8]| {
        h.update((label.len() as u64).to_le_bytes());
        h.update(label.as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    part("pado-plan", b"1");
    match source {
        PlanSource::File(p) => part("file", &read(p, "the scenario file")?),
        PlanSource::Quick(q) => {
            part("url", q.url.as_bytes());
            part("method", q.method.as_deref().unwrap_or("").as_bytes());
            part("body", q.body.as_deref().unwrap_or("").as_bytes());
            if let Some(f) = &q.body_file {
                part("body_file", &read(Path::new(f), "--body-file")?);
            }
        }
    }
    for (name, d) in &config.data {
        if let Some(f) = &d.file {
            part(
                &format!("data:{name}"),
                &read(&base_dir.join(f), "a data file")?,
            );
        }
    }
    let mut ov = overrides.clone();
    ov.name = None;
    ov.observe.clear();
    ov.observe_interval = None;
    part("flags", format!("{ov:?}").as_bytes());
    part("fit_to", format!("{fit_to:?}").as_bytes());
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

fn read(p: &Path, what: &'static str) -> Result<Vec<u8>, PlanIdError> {
    std::fs::read(p).map_err(|source| PlanIdError {
        path: p.to_path_buf(),
        what,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A configuration reading one data file.
    fn config(data_file: &str) -> Config {
        let json = serde_json::json!({
            "target": "http://127.0.0.1:9",
            "data": {"users": {"file": data_file}},
            "scenarios": {"s": {"executor": "constant-vus", "vus": 1, "duration": "1s",
                "flow": [{"request": "/"}]}}
        });
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn the_id_follows_the_bytes_and_the_load_not_the_name_or_place() {
        let a = tempfile::tempdir().unwrap();
        let file = a.path().join("t.yaml");
        std::fs::write(&file, "scenario bytes").unwrap();
        std::fs::write(a.path().join("users.csv"), "user\n김\n").unwrap();
        let cfg = config("users.csv");
        let ov = Overrides::default();
        let id = |ov: &Overrides, fit: Option<Duration>| {
            plan_id(PlanSource::File(&file), &cfg, a.path(), ov, fit).unwrap()
        };
        let base = id(&ov, None);
        assert_eq!(base.len(), 64);
        let named = Overrides {
            name: Some("gen-2".into()),
            ..Overrides::default()
        };
        assert_eq!(id(&named, None), base, "the name is not the test");
        assert_ne!(id(&ov, Some(Duration::from_secs(30))), base, "--fit-to");
        let headers = Overrides {
            headers: vec![("X-팀".into(), "검색".into())],
            ..Overrides::default()
        };
        assert_ne!(id(&headers, None), base, "-H");
        std::fs::write(a.path().join("users.csv"), "user\n이\n").unwrap();
        assert_ne!(id(&ov, None), base, "the data's bytes");
    }

    #[test]
    fn a_missing_file_is_named() {
        let a = tempfile::tempdir().unwrap();
        let file = a.path().join("t.yaml");
        std::fs::write(&file, "x").unwrap();
        let e = plan_id(
            PlanSource::File(&file),
            &config("없음.csv"),
            a.path(),
            &Overrides::default(),
            None,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("없음.csv: cannot read a data file"),
            "{e}"
        );
    }
}
