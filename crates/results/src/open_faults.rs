//! `open-faults.json`: the fault windows a run has open right now, so that a run
//! killed before it could undo them (`kill -9`, the OOM killer, a second Ctrl-C)
//! leaves behind what a later pado needs to say so and to put things back.
//!
//! A run writes the file when an event with an `undo` starts its action and rewrites
//! it as windows close; it removes it when the last one is undone. The same content
//! goes twice: into the result directory (what `pado report` reads to say a window
//! was left open) and into a per-user state directory (what the next `pado run` or
//! `pado events undo-open` scans, since it cannot know every result directory).
//! Only the state directory's copy carries the undo as written in the scenario:
//! result directories get copied around (CI artifacts), and an undo's literal
//! headers have no business there. No value of `{{ env.X }}` is ever written; the
//! undo is rendered again from the environment when it is run.
//!
//! Both copies are written whole to a temporary file and renamed into place, with
//! mode `0600`, so a reader never sees half a record and nobody else can read one.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::result_dir::ResultError;

/// File name inside the result directory (and the suffix of the state directory's
/// files).
pub const OPEN_FAULTS_FILE: &str = "open-faults.json";

/// The only `format` a reader accepts.
pub const OPEN_FAULTS_FORMAT: &str = "pado-open-faults";

/// The largest record a reader takes: a hostile or damaged file costs no more.
pub const MAX_RECORD_BYTES: u64 = 1 << 20;

/// One run's open fault windows, and what identifies the process that holds them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenFaults {
    /// Always [`OPEN_FAULTS_FORMAT`].
    pub format: String,
    /// The test's name.
    pub run_name: String,
    /// The run's result directory, absolute.
    pub result_dir: String,
    /// When the run started, RFC 3339 UTC (`run.json`'s `started_at`).
    pub run_started_at: String,
    /// The pado process holding the windows.
    pub pid: u32,
    /// That process's start time (clock ticks after boot, `/proc/PID/stat` field
    /// 22): a pid reused by another process after pado died does not pass for it.
    pub pid_start: u64,
    /// The boot the process ran in (`/proc/sys/kernel/random/boot_id`): after a
    /// reboot the process is gone whatever pid runs now.
    pub boot_id: String,
    /// The windows open now, in the order they opened.
    pub windows: Vec<OpenWindow>,
}

/// One open fault window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenWindow {
    /// The event's position in the scenario's `events:`.
    pub index: usize,
    /// The event's name.
    pub name: String,
    /// The event's kind (`run`, `shell`, `http`).
    pub kind: String,
    /// When it was planned, ms on the run's clock.
    pub planned_ms: u64,
    /// When its action started, ms on the run's clock.
    pub started_ms: u64,
    /// The same instant on the wall clock, RFC 3339 UTC: what a later pado places
    /// the undo on the run's clock by.
    pub opened_at: String,
    /// The undo's kind (`run`, `shell`, `http`).
    pub undo_kind: String,
    /// The undo as the scenario wrote it (its `undo:` mapping, templates unrendered);
    /// only in the state directory's copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo: Option<serde_json::Value>,
    /// The environment variables the undo reads (`{{ env.NAME }}`), by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// The scenario's `target`, which a relative `http:` URL is joined to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The undo's deadline, ms.
    pub timeout_ms: u64,
}

impl OpenFaults {
    /// These windows without their undos, as the result directory keeps them.
    pub fn without_undos(&self) -> OpenFaults {
        let mut c = self.clone();
        for w in &mut c.windows {
            w.undo = None;
        }
        c
    }
}

/// Writes `faults` to `path` whole (a temporary file renamed into place), readable
/// and writable by its owner only.
pub fn write_record(path: &Path, faults: &OpenFaults) -> Result<(), ResultError> {
    let io = |source| ResultError::Io {
        path: path.to_path_buf(),
        source,
    };
    let text = serde_json::to_vec_pretty(faults).map_err(|e| ResultError::Format {
        path: path.to_path_buf(),
        line: 0,
        message: e.to_string(),
    })?;
    let tmp = tmp_path(path);
    let _ = fs::remove_file(&tmp);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io)?;
    f.write_all(&text).map_err(io)?;
    f.sync_all().map_err(io)?;
    drop(f);
    fs::rename(&tmp, path).map_err(io)
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// Removes the record at `path`; a record already gone is fine.
pub fn remove_record(path: &Path) -> Result<(), ResultError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(ResultError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Reads the record at `path` (at most [`MAX_RECORD_BYTES`]); `None` when there is
/// none. A record of another format, too long or damaged is an error naming it.
pub fn read_record(path: &Path) -> Result<Option<OpenFaults>, ResultError> {
    let f = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ResultError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let mut text = Vec::new();
    f.take(MAX_RECORD_BYTES + 1)
        .read_to_end(&mut text)
        .map_err(|source| ResultError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    let bad = |message: String| ResultError::Format {
        path: path.to_path_buf(),
        line: 0,
        message,
    };
    if text.len() as u64 > MAX_RECORD_BYTES {
        return Err(bad(format!(
            "longer than {MAX_RECORD_BYTES} bytes: not a record pado wrote"
        )));
    }
    let faults: OpenFaults = serde_json::from_slice(&text).map_err(|e| ResultError::Format {
        path: path.to_path_buf(),
        line: e.line(),
        message: e.to_string(),
    })?;
    if faults.format != OPEN_FAULTS_FORMAT {
        return Err(bad(format!(
            "format `{}`, expected `{OPEN_FAULTS_FORMAT}`",
            faults.format
        )));
    }
    Ok(Some(faults))
}

/// The windows a result directory says were open when its run last wrote it: for a
/// finished or killed run, those whose undo never ran.
pub fn read_open_faults(dir: &Path) -> Result<Vec<OpenWindow>, ResultError> {
    Ok(read_record(&dir.join(OPEN_FAULTS_FILE))?
        .map(|f| f.windows)
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn faults() -> OpenFaults {
        OpenFaults {
            format: OPEN_FAULTS_FORMAT.into(),
            run_name: "장애 주입".into(),
            result_dir: "/tmp/r".into(),
            run_started_at: "2026-01-01T00:00:00.000Z".into(),
            pid: 42,
            pid_start: 1234,
            boot_id: "b".into(),
            windows: vec![OpenWindow {
                index: 1,
                name: "지연".into(),
                kind: "run".into(),
                planned_ms: 1000,
                started_ms: 1003,
                opened_at: "2026-01-01T00:00:01.003Z".into(),
                undo_kind: "shell".into(),
                undo: Some(serde_json::json!({ "shell": "rm -f {{ env.MARK }}" })),
                env: vec!["MARK".into()],
                target: None,
                timeout_ms: 30_000,
            }],
        }
    }

    #[test]
    fn a_record_round_trips_private_and_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(OPEN_FAULTS_FILE);
        assert_eq!(read_record(&p).unwrap(), None);
        write_record(&p, &faults()).unwrap();
        let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(read_record(&p).unwrap(), Some(faults()));
        assert!(!tmp_path(&p).exists());
        // The result directory's copy keeps no undo.
        write_record(&p, &faults().without_undos()).unwrap();
        let w = read_open_faults(dir.path()).unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!((w[0].name.as_str(), w[0].undo.as_ref()), ("지연", None));
        remove_record(&p).unwrap();
        remove_record(&p).unwrap();
        assert!(read_open_faults(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn damaged_foreign_and_huge_records_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(OPEN_FAULTS_FILE);
        fs::write(&p, "{ not json").unwrap();
        let e = read_record(&p).unwrap_err().to_string();
        assert!(e.contains(OPEN_FAULTS_FILE), "{e}");
        let mut other = faults();
        other.format = "something-else".into();
        fs::write(&p, serde_json::to_vec(&other).unwrap()).unwrap();
        let e = read_record(&p).unwrap_err().to_string();
        assert!(e.contains("something-else"), "{e}");
        fs::write(&p, vec![b' '; MAX_RECORD_BYTES as usize + 10]).unwrap();
        let e = read_record(&p).unwrap_err().to_string();
        assert!(e.contains("longer than"), "{e}");
    }
}
