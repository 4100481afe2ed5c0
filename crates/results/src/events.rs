//! `events.jsonl`: what each event of the scenario's `events:` did, on the run's
//! clock (milliseconds since second 0 of the timeline), so that reports judge an
//! event's expectations and measure its impact from the result directory alone.
//!
//! One JSON object per event, written when the event is over (its action and, for a
//! window, its undo done), so an interrupted run keeps the events that finished.
//! Readers sort by `planned_ms`. Outputs are already redacted (values of
//! `{{ env.X }}` are `***`) and cut to their last few KiB by the writer's caller.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::result_dir::ResultError;

/// File name inside the result directory.
pub const EVENTS_FILE: &str = "events.jsonl";

/// How an action ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Exit code 0, or an HTTP status 2xx.
    Ok,
    /// A non-zero exit code, an HTTP status that is not 2xx, or a command that
    /// could not be started or a request that got no answer.
    Failed,
    /// Past its timeout: killed (with its process group), or the request given up.
    Timeout,
    /// Never ran: the run stopped before its time came.
    Skipped,
    /// Cut short: still running when the run ended (its planned end, Ctrl-C or
    /// SIGTERM), so it was killed with its process group rather than left to hold
    /// the run up to its timeout. Not a failure of the event.
    Stopped,
}

/// One command or HTTP call of an event (its action or its undo).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    /// `run`, `shell` or `http`.
    pub kind: String,
    /// Start, ms since second 0.
    pub started_ms: u64,
    /// End, ms since second 0.
    pub ended_ms: u64,
    /// How it ended.
    pub outcome: Outcome,
    /// A command's exit code (`None` when killed by a signal or not a command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// An HTTP call's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Why it failed, when there is no exit code or status to say it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The last bytes of stdout (or of the response body), redacted.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stdout: String,
    /// The last bytes of stderr, redacted.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
}

/// What is expected of an event, as written in the scenario (parsed again by the
/// analysis, with the scenario's own parser).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExpectRecord {
    /// Metric key → threshold expressions, judged over the window.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub during: BTreeMap<String, Vec<String>>,
    /// `recovers` expressions (`p(95) < 200 within 30s`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recovers: Vec<String>,
    /// How long a `recovers` condition must hold, s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_s: Option<f64>,
    /// `no_errors_after`, s after the window's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_errors_after_s: Option<f64>,
}

impl ExpectRecord {
    /// Whether nothing is expected.
    pub fn is_empty(&self) -> bool {
        self.during.is_empty() && self.recovers.is_empty() && self.no_errors_after_s.is_none()
    }
}

/// One event of the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// Its name (`event N` when the scenario gave none).
    pub name: String,
    /// `run`, `shell`, `http` or `mark`.
    pub kind: String,
    /// When it was planned, ms since second 0.
    pub planned_ms: u64,
    /// When its action started (a mark: when it was placed); `None` when it never
    /// ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<u64>,
    /// End of its fault window (the undo's end, or without an undo `duration` after
    /// its action ended, a mark's after its start); `None` for a point event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_end_ms: Option<u64>,
    /// Whether a failed action stops the run.
    pub required: bool,
    /// The mark's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<String>,
    /// The action (none for a mark).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<ActionRecord>,
    /// The undo, when the event has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo: Option<ActionRecord>,
    /// What is expected of it.
    #[serde(default, skip_serializing_if = "ExpectRecord::is_empty")]
    pub expect: ExpectRecord,
    /// Set when the run died with this event's fault window open and a later pado
    /// ran its undo (then `undo` is that run of it, on this run's clock): the fault
    /// stayed in place from the run's death until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_open: Option<LeftOpen>,
}

/// How a fault window left open by a killed run was closed later.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeftOpen {
    /// When the undo ran, RFC 3339 UTC.
    pub undone_at: String,
    /// The command that ran it (`pado run`, `pado events undo-open`).
    pub undone_by: String,
}

impl EventRecord {
    /// Whether its action (or its undo) failed or timed out.
    pub fn failed(&self) -> bool {
        [&self.action, &self.undo]
            .into_iter()
            .flatten()
            .any(|a| matches!(a.outcome, Outcome::Failed | Outcome::Timeout))
    }

    /// Start of the event on the run's clock, s (planned when it never ran).
    pub fn start_s(&self) -> f64 {
        self.started_ms.unwrap_or(self.planned_ms) as f64 / 1000.0
    }

    /// End of its window, s (its start for a point event).
    pub fn end_s(&self) -> f64 {
        self.window_end_ms
            .map_or_else(|| self.start_s(), |e| e as f64 / 1000.0)
    }
}

/// Appends events to `events.jsonl` as they end.
pub struct EventsWriter {
    path: PathBuf,
    out: BufWriter<File>,
}

/// Appends one event to `dir`'s `events.jsonl` (created when missing): how a later
/// pado records the undo of a window a killed run left open. A half line a killed
/// writer left at the end (which readers leave out) is cut off first, so the file
/// stays one object per line.
pub fn append_event(dir: &Path, e: &EventRecord) -> Result<(), ResultError> {
    let path = dir.join(EVENTS_FILE);
    let io = |source| ResultError::Io {
        path: path.clone(),
        source,
    };
    let f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(io)?;
    let old = fs::read(&path).map_err(io)?;
    if old.last().is_some_and(|c| *c != b'\n') {
        let keep = old.iter().rposition(|c| *c == b'\n').map_or(0, |i| i + 1);
        f.set_len(keep as u64).map_err(io)?;
    }
    let mut w = EventsWriter {
        path: path.clone(),
        out: BufWriter::new(f),
    };
    w.write(e)
}

impl EventsWriter {
    /// Creates (truncates) `events.jsonl` in `dir`.
    pub fn create(dir: &Path) -> Result<Self, ResultError> {
        let path = dir.join(EVENTS_FILE);
        let f = File::create(&path).map_err(|source| ResultError::Io {
            path: path.clone(),
            source,
        })?;
        Ok(EventsWriter {
            path,
            out: BufWriter::new(f),
        })
    }

    /// Writes one event and flushes it.
    pub fn write(&mut self, e: &EventRecord) -> Result<(), ResultError> {
        let io = |source| ResultError::Io {
            path: self.path.clone(),
            source,
        };
        let line = serde_json::to_string(e).map_err(|e| ResultError::Format {
            path: self.path.clone(),
            line: 0,
            message: e.to_string(),
        })?;
        self.out.write_all(line.as_bytes()).map_err(io)?;
        self.out.write_all(b"\n").map_err(io)?;
        self.out.flush().map_err(io)
    }
}

/// Reads `events.jsonl` from `dir`, sorted by planned time; empty when the file is
/// absent (a run without events). A half-written last line (a killed writer) is
/// left out; damage elsewhere is an error naming the line.
pub fn read_events(dir: &Path) -> Result<Vec<EventRecord>, ResultError> {
    let path = dir.join(EVENTS_FILE);
    let f = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(ResultError::Io { path, source }),
    };
    let lines: Vec<String> = BufReader::new(f)
        .lines()
        .collect::<Result<_, _>>()
        .map_err(|source| ResultError::Io {
            path: path.clone(),
            source,
        })?;
    let mut out = Vec::new();
    let last = lines.len();
    for (i, l) in lines.iter().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<EventRecord>(l) {
            Ok(e) => out.push(e),
            Err(e) if i + 1 == last && e.is_eof() => {}
            Err(e) => {
                return Err(ResultError::Format {
                    path: path.clone(),
                    line: i + 1,
                    message: e.to_string(),
                })
            }
        }
    }
    out.sort_by_key(|e| (e.planned_ms, e.started_ms));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(name: &str, planned_ms: u64) -> EventRecord {
        EventRecord {
            name: name.into(),
            kind: "run".into(),
            planned_ms,
            started_ms: Some(planned_ms + 1),
            window_end_ms: Some(planned_ms + 5000),
            required: true,
            mark: None,
            action: Some(ActionRecord {
                kind: "run".into(),
                started_ms: planned_ms + 1,
                ended_ms: planned_ms + 20,
                outcome: Outcome::Ok,
                exit_code: Some(0),
                status: None,
                error: None,
                stdout: "done\n".into(),
                stderr: String::new(),
            }),
            undo: None,
            expect: ExpectRecord {
                recovers: vec!["p(95) < 200 within 10s".into()],
                ..Default::default()
            },
            left_open: None,
        }
    }

    #[test]
    fn round_trip_sorted_and_cut_last_line_tolerated() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_events(dir.path()).unwrap().is_empty());
        let mut w = EventsWriter::create(dir.path()).unwrap();
        w.write(&ev("b", 9000)).unwrap();
        w.write(&ev("a", 3000)).unwrap();
        drop(w);
        let got = read_events(dir.path()).unwrap();
        assert_eq!(got, vec![ev("a", 3000), ev("b", 9000)]);
        assert_eq!(got[0].end_s(), 8.0);
        assert!(!got[0].failed());
        // A killed writer's half line is left out; a bad middle line is an error.
        let p = dir.path().join(EVENTS_FILE);
        let mut text = std::fs::read_to_string(&p).unwrap();
        text.push_str("{\"name\":\"c\",\"ki");
        std::fs::write(&p, &text).unwrap();
        assert_eq!(read_events(dir.path()).unwrap().len(), 2);
        // An event appended later (a window a killed run left open, undone by a
        // later pado) cuts the half line off and stays readable.
        let mut late = ev("late", 5000);
        late.left_open = Some(LeftOpen {
            undone_at: "2026-01-01T01:00:00.000Z".into(),
            undone_by: "pado run".into(),
        });
        append_event(dir.path(), &late).unwrap();
        let got = read_events(dir.path()).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[1], late);
        std::fs::write(&p, format!("nope\n{text}")).unwrap();
        let e = read_events(dir.path()).unwrap_err().to_string();
        assert!(e.contains(":1:"), "{e}");
    }
}
