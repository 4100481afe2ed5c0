//! What a coordinator sends an agent to run: one segment of a test, as a tar of
//! `pado-job.json` (the `pado run` arguments) and `files/` (the scenario and the
//! files it reads, at the paths it names them by). The agent unpacks it into a
//! fresh directory and runs `pado run ARGS... --out <its own result directory>`
//! there, so the scenario finds its data files as on the coordinator's machine.

use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::archive::{self, ArchiveError};

/// Most bytes a bundle may unpack to (the scenario and its data files).
pub const MAX_BUNDLE_BYTES: u64 = 256 * 1024 * 1024;

/// The name of the job description inside a bundle.
pub const JOB_FILE: &str = "pado-job.json";

/// The run's output (stdout and stderr), beside `files/` in the job's directory.
pub const LOG_FILE: &str = "run.log";

/// Where the files go inside a bundle (and the run's working directory).
pub const FILES_DIR: &str = "files";

/// A file the run reads: the scenario or one of its data or body files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEntry {
    /// Path relative to the scenario's directory, `/`-separated (`users.csv`,
    /// `data/사용자.csv`), as the scenario names it; any UTF-8.
    pub path: String,
    /// The file's bytes.
    pub bytes: Vec<u8>,
}

/// The run an agent is asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSpec {
    /// The test's name, for the agent's log.
    pub test_name: String,
    /// Which segment, `i/N`, for the agent's log (the arguments carry it).
    pub segment: String,
    /// `pado run` arguments (without `run` and without `--out`, which the agent
    /// sets): the scenario's path among the files, `--segment`, `--start-at`,
    /// load flags.
    pub args: Vec<String>,
}

/// Why a bundle could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// The tar.
    #[error("{0}")]
    Archive(#[from] ArchiveError),
    /// Writing or reading.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// `pado-job.json` missing or not a job.
    #[error("{JOB_FILE}: {0}")]
    Job(String),
    /// Arguments the agent decides itself.
    #[error("the job's arguments may not set {0}: the agent chooses where results go")]
    Forbidden(String),
}

/// Whether `path` is relative, `/`-separated, with no empty, `.` or `..`
/// component: a file that stays inside the directory it is unpacked into on
/// another machine (an agent's job directory, a Kubernetes ConfigMap volume, whose
/// items' `path` accepts exactly these), so a scenario's data file can never land
/// outside it.
pub fn is_relative_inside(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}

/// A bundle as bytes (a tar).
pub fn pack(job: &JobSpec, files: &[FileEntry]) -> Result<Vec<u8>, BundleError> {
    let mut b = tar::Builder::new(Vec::new());
    let mut add = |path: &str, bytes: &[u8]| -> std::io::Result<()> {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, path, bytes)
    };
    let json = serde_json::to_vec(job).map_err(|e| BundleError::Job(e.to_string()))?;
    add(JOB_FILE, &json)?;
    for f in files {
        add(&format!("{FILES_DIR}/{}", f.path), &f.bytes)?;
    }
    Ok(b.into_inner()?)
}

/// Unpacks a bundle into `dest` (new or empty) and reads its job; the files are
/// under `dest/files`. Refuses unsafe paths (as [`archive::unpack`]) and
/// arguments that would choose the result directory.
pub fn unpack(tar: impl Read, dest: &Path) -> Result<JobSpec, BundleError> {
    archive::unpack(tar, dest, MAX_BUNDLE_BYTES)?;
    let text = std::fs::read(dest.join(JOB_FILE)).map_err(|e| BundleError::Job(e.to_string()))?;
    let job: JobSpec =
        serde_json::from_slice(&text).map_err(|e| BundleError::Job(e.to_string()))?;
    if let Some(a) = job
        .args
        .iter()
        .find(|a| *a == "-o" || *a == "--out" || a.starts_with("--out=") || *a == "--overwrite")
    {
        return Err(BundleError::Forbidden(a.clone()));
    }
    std::fs::create_dir_all(dest.join(FILES_DIR))?;
    Ok(job)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_relative_paths_without_dot_components_stay_inside() {
        for inside in [
            "users.csv",
            "data/사용자.csv",
            "a/b/c.json",
            "..hidden",
            "a.b/c",
        ] {
            assert!(is_relative_inside(inside), "{inside}");
        }
        for outside in [
            "",
            "/etc/passwd",
            "../users.csv",
            "data/../../x",
            "./users.csv",
            "data//x",
            "data/",
            "data\\x",
        ] {
            assert!(!is_relative_inside(outside), "{outside}");
        }
    }

    #[test]
    fn a_bundle_round_trips_with_hangul_paths() {
        let job = JobSpec {
            test_name: "게시판".into(),
            segment: "1/3".into(),
            args: vec!["s.yaml".into(), "--segment".into(), "1/3".into()],
        };
        let files = vec![
            FileEntry {
                path: "s.yaml".into(),
                bytes: b"name: x\n".to_vec(),
            },
            FileEntry {
                path: "data/사용자.csv".into(),
                bytes: "이름\n파도\n".as_bytes().to_vec(),
            },
        ];
        let tar = pack(&job, &files).unwrap();
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(unpack(&tar[..], dir.path()).unwrap(), job);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("files/data/사용자.csv")).unwrap(),
            "이름\n파도\n"
        );
    }

    #[test]
    fn a_job_may_not_choose_where_results_go() {
        let job = JobSpec {
            test_name: "t".into(),
            segment: "0/1".into(),
            args: vec!["s.yaml".into(), "--out=/etc".into()],
        };
        let tar = pack(&job, &[]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let e = unpack(&tar[..], dir.path()).unwrap_err();
        assert!(e.to_string().contains("--out=/etc"), "{e}");
    }
}
