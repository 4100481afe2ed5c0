//! The result directory: the only thing reports, comparisons and merges read.
//!
//! Layout (format version [`FORMAT_VERSION`], documented in `docs/result-format.md`):
//! - `run.json`: [`RunMeta`], what ran, when, with which stages and thresholds;
//! - `timeline.jsonl`: one JSON object per second of the run ([`SecondRecord`]), with
//!   exact HDR histograms so any span of seconds can be re-aggregated exactly;
//! - `summary.json`: the end-of-run summary (written by the report side).

use std::fs::{self, File};
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

mod run_view;
#[cfg(test)]
mod tests;
mod timeline;
mod wire;
mod wire_custom;

pub use run_view::{MergedView, RunView, SegmentView};
pub use timeline::{EncodedSecond, OwnFigures, TimelineRead, TimelineReader, TimelineWriter};
pub use wire::{parse_timeline_line, timeline_line};

use pado_metrics::{OutputMeta, RawOutputMeta, SecondRecord, Totals};

/// Version of the result-directory format written by this build.
pub const FORMAT_VERSION: u32 = 1;
/// File name of the run metadata.
pub const RUN_FILE: &str = "run.json";
/// File name of the per-second timeline.
pub const TIMELINE_FILE: &str = "timeline.jsonl";
/// File name of the end-of-run summary.
pub const SUMMARY_FILE: &str = "summary.json";

/// Why a result directory could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ResultError {
    /// File system trouble, with the path concerned.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file is not what this format says it should be.
    #[error("{path}:{line}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// 1-based line (1 for whole-file JSON).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// Written by a newer pado.
    #[error("{path}: result format version {found} is newer than this pado understands ({FORMAT_VERSION}); upgrade pado")]
    Version {
        /// The run file.
        path: PathBuf,
        /// Version found.
        found: u32,
    },
}

/// A time window of the run with a meaning for the user: a stage of an executor.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageMark {
    /// Scenario the stage belongs to.
    pub scenario: String,
    /// Position within the scenario's stages (0-based).
    pub index: usize,
    /// Start, seconds from run start.
    pub start_s: f64,
    /// End, seconds from run start.
    pub end_s: f64,
    /// Human label, e.g. `ramp 0→100 VUs` or `hold 200 req/s`.
    pub label: String,
    /// The target the stage ramps or holds to (VUs or iterations per second).
    pub target: f64,
    /// The level at the stage's start (VUs or iterations per second): equal to
    /// `target` for a hold, which is what tells the analysis where the load was
    /// steady (latency drift is measured only there). `None` for user windows
    /// (`--window`) and in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<f64>,
}

impl StageMark {
    /// Whether the load held steady through this stage: a hold of an executor
    /// (`from == target`; for files without `from`, the `hold …` label pado wrote).
    pub fn is_hold(&self) -> bool {
        match self.from {
            Some(f) => (f - self.target).abs() < 1e-9,
            None => self.label.starts_with("hold "),
        }
    }

    /// Whether this is a stage of an executor (not a window the user named).
    pub fn is_executor_stage(&self) -> bool {
        self.from.is_some() || self.label.starts_with("hold ") || self.label.starts_with("ramp ")
    }
}

/// Metadata of one run: what `run.json` holds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// Always `pado-result`.
    pub format: String,
    /// [`FORMAT_VERSION`] of the writer.
    pub version: u32,
    /// Test name.
    pub name: String,
    /// pado version that produced it.
    pub pado_version: String,
    /// Start, RFC 3339 UTC.
    pub started_at: String,
    /// Wall-clock length of the run in seconds.
    pub duration_s: f64,
    /// Whether the run was stopped early (Ctrl-C or an aborting threshold).
    pub interrupted: bool,
    /// Worker threads that generated load.
    pub workers: usize,
    /// Cores pado was allowed to use (`std::thread::available_parallelism`, which
    /// honours CPU affinity and cgroup quotas): what the generator's CPU use is a
    /// share of. 0 in files written before it was recorded (unknown).
    #[serde(default)]
    pub cores_allowed: usize,
    /// One line per scenario: name, executor, parameters.
    pub scenarios: Vec<ScenarioMeta>,
    /// Stage windows.
    pub stages: Vec<StageMark>,
    /// Thresholds as written (metric key -> expressions).
    pub thresholds: Vec<ThresholdSpec>,
    /// How latency was timed, in words, per scenario.
    pub notes: Vec<String>,
    /// Problems worth telling (file limits, generator overload, ...).
    pub warnings: Vec<String>,
    /// Bytes of a response body checks and extraction saw (`defaults.max_body`), for
    /// the summary's warning about cut bodies; absent in files written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_body: Option<u64>,
    /// This run's share of one test split across generators (`pado run --segment`);
    /// absent for a whole test. `pado merge` reads it to put the shares back together
    /// and to name a missing one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<SegmentMeta>,
    /// Result directories this one was merged from (`pado merge`), one per generator,
    /// in segment order; empty for a run of one generator.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<GeneratorMeta>,
    /// The live outputs the run streamed to (`--output`, `outputs:`) and what each
    /// delivered; absent when there were none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<OutputMeta>,
    /// The raw per-request file (`--output raw-json=FILE`, `raw-csv=FILE`) and how
    /// many of the run's requests it holds; absent when none was asked for.
    /// `pado merge` leaves raw files where they are and does not carry this over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<RawOutputMeta>,
    /// Soak mode, when the run is one: asked for (`--soak`), or planned to last
    /// [`SOAK_AUTO_S`] or more. The summary then always carries the soak verdict; with
    /// `--soak` the verdict is also part of the exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak: Option<SoakMode>,
    /// How long the run was planned to last, in seconds: what a report of a run still
    /// in progress measures how far it is against. Absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_s: Option<f64>,
    /// The scenarios, methods and groups of each step, from the plan: what a
    /// threshold's `scenario`, `method` and `group` tags select. Empty in files
    /// written before it was recorded (such thresholds then have no data).
    #[serde(default, skip_serializing_if = "pado_metrics::StepCatalog::is_empty")]
    pub steps: pado_metrics::StepCatalog,
}

/// A planned length from which a run is a soak without being asked: an hour.
pub const SOAK_AUTO_S: f64 = 3600.0;

/// Why a run is a soak.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SoakMode {
    /// `--soak`: the soak verdict decides the exit code with the thresholds.
    Requested,
    /// Planned for [`SOAK_AUTO_S`] or more: the verdict is shown, not judged.
    Long,
}

impl SoakMode {
    /// The mode of a run planned for `planned_s` seconds, `requested` or not.
    pub fn of(requested: bool, planned_s: f64) -> Option<SoakMode> {
        if requested {
            Some(SoakMode::Requested)
        } else if planned_s >= SOAK_AUTO_S {
            Some(SoakMode::Long)
        } else {
            None
        }
    }
}

/// Which share of a split test a run carried, and how it was started.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SegmentMeta {
    /// 0-based index of this segment (`--segment 2/8` is index 2 of count 8).
    pub index: u32,
    /// Number of segments the test was split into.
    pub count: u32,
    /// Relative weight of every segment (`--segment-weights 2,1,1`; all 1 when not
    /// given), `count` entries: this segment's share is `weights[index] / sum`.
    pub weights: Vec<u32>,
    /// Fingerprint of the whole test's plan (the scenario as loaded with every flag
    /// that changes the load, before splitting): segments with different fingerprints
    /// are not parts of one test, and `pado merge` refuses them.
    pub plan_id: String,
    /// The agreed start (`--start-at`), RFC 3339 UTC with milliseconds; absent when
    /// the segment started on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    /// How late second 0 began after `start_at`, in milliseconds (negative: early);
    /// absent without `start_at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_skew_ms: Option<f64>,
    /// Whether this segment ran the global setup and teardown (segment 0 does, once
    /// for the whole test; the others take setup's variables from a file).
    #[serde(default)]
    pub ran_setup: bool,
}

/// One generator of a merged result: where its directory was and what it did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorMeta {
    /// Its segment (index, count, weights, start skew).
    pub segment: SegmentMeta,
    /// The result directory it was merged from, as given to `pado merge`.
    pub source: String,
    /// Its own `started_at`.
    pub started_at: String,
    /// Its own wall-clock length, seconds.
    pub duration_s: f64,
    /// Whether it was stopped early.
    pub interrupted: bool,
    /// Worker threads and allowed cores of that generator.
    pub workers: usize,
    /// Cores that generator was allowed to use.
    pub cores_allowed: usize,
    /// Its own warnings (generator overload and the like).
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// One scenario as run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScenarioMeta {
    /// Scenario name.
    pub name: String,
    /// Executor name (k6's names).
    pub executor: String,
    /// Parameters in words, e.g. `64 VUs for 10s`.
    pub description: String,
    /// Whether latency is timed from the scheduled start (open model).
    pub open_model: bool,
    /// Open model: the most VUs the scenario may start (`max_vus`, this generator's
    /// share for a segment, the whole test's in a merge). When no VU is free an
    /// arrival is dropped, so this is the figure the dropped-arrivals sentence names;
    /// the allocated count may stay below it. Absent for the closed model and in
    /// files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_vus: Option<u32>,
    /// Its iterations run a script's function (a k6 script, `pado run script.js`)
    /// rather than a scenario file's steps: a script may rightly send no request
    /// (k6 passes such a run), so the requests rule does not ask for one. Absent
    /// (false) for a scenario file and in files written before it was recorded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub scripted: bool,
}

/// A threshold as the user wrote it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThresholdSpec {
    /// Metric key, possibly with tags: `http_req_duration{step:search}`.
    pub metric: String,
    /// Expression: `p(95) < 200`.
    pub expr: String,
    /// Stop the run when it fails.
    #[serde(default)]
    pub abort_on_fail: bool,
    /// For a threshold scoped to a stage or a window (`{stage:2}`,
    /// `{window:60s-120s}`): the seconds from the run's start it is judged on,
    /// `[start, end)`, placed when the run started (a stage's window comes from
    /// the scenario file, which reports do not read). Absent for the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_s: Option<[f64; 2]>,
}

/// Every file a run or `pado report` writes in a result directory: what
/// `--overwrite` clears, and nothing else.
pub const PADO_FILES: &[&str] = &[
    RUN_FILE,
    TIMELINE_FILE,
    SUMMARY_FILE,
    crate::observed::OBSERVE_FILE,
    crate::events::EVENTS_FILE,
    crate::open_faults::OPEN_FAULTS_FILE,
    crate::failures::FAILURES_FILE,
    crate::merge::GENERATORS_FILE,
    "report.html",
    "timeline.csv",
    "junit.xml",
    LOCK_FILE,
];

/// Held (an exclusive `flock`) by the run writing a directory, for as long as it
/// writes: a second run, or an `--overwrite`, cannot take a directory in use.
pub const LOCK_FILE: &str = ".pado.lock";

/// Why a directory could not be taken for a new run.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// Another pado process holds the directory's lock.
    #[error("{0}: another pado run is writing to this directory; choose another --out")]
    InUse(PathBuf),
    /// The directory already holds files (another run's results).
    #[error("{0}: the directory is not empty (it holds another run's results); choose another --out, or add --overwrite to replace pado's files in it")]
    NotEmpty(PathBuf),
    /// File system trouble.
    #[error(transparent)]
    Io(#[from] ResultError),
}

/// Handle on a result directory being written or read.
pub struct ResultDir {
    path: PathBuf,
    /// The lock of a directory this process writes (none when reading).
    _lock: Option<fs::File>,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ResultError + '_ {
    move |source| ResultError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl ResultDir {
    /// Create (or reuse) the directory.
    pub fn create(path: impl Into<PathBuf>) -> Result<Self, ResultError> {
        let path = path.into();
        fs::create_dir_all(&path).map_err(io_err(&path))?;
        Ok(ResultDir { path, _lock: None })
    }

    /// A new directory `parent/stem` for a run, never one that exists: the name is
    /// taken atomically (`mkdir` fails when another run took it first) and gets a
    /// `-2`, `-3`, … suffix until it is free, so runs started in the same instant,
    /// in the same or in different processes, each get their own.
    pub fn create_unique(parent: &Path, stem: &str) -> Result<Self, ClaimError> {
        fs::create_dir_all(parent).map_err(io_err(parent))?;
        for n in 1..10_000u32 {
            let path = if n == 1 {
                parent.join(stem)
            } else {
                parent.join(format!("{stem}-{n}"))
            };
            match fs::create_dir(&path) {
                Ok(()) => return Self::claim(&path, false),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io_err(&path)(e).into()),
            }
        }
        Err(ClaimError::InUse(parent.join(stem)))
    }

    /// Take a directory the user named for a new run: created when missing, refused
    /// when another run is writing it or when it already holds files (unless
    /// `overwrite`, which first removes pado's own files and leaves any other). The
    /// directory stays locked until this handle is dropped.
    pub fn claim(path: &Path, overwrite: bool) -> Result<Self, ClaimError> {
        fs::create_dir_all(path).map_err(io_err(path))?;
        let lock_path = path.join(LOCK_FILE);
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_err(&lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => return Err(ClaimError::InUse(path.into())),
            Err(fs::TryLockError::Error(e)) => return Err(io_err(&lock_path)(e).into()),
        }
        let others: Vec<PathBuf> = fs::read_dir(path)
            .map_err(io_err(path))?
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name() != LOCK_FILE)
            .map(|e| e.path())
            .collect();
        if !others.is_empty() {
            if !overwrite {
                return Err(ClaimError::NotEmpty(path.into()));
            }
            for f in PADO_FILES.iter().filter(|f| **f != LOCK_FILE) {
                let p = path.join(f);
                match fs::remove_file(&p) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io_err(&p)(e).into()),
                }
            }
        }
        Ok(ResultDir {
            path: path.into(),
            _lock: Some(lock),
        })
    }

    /// Open an existing directory for reading.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, ResultError> {
        let path = path.into();
        let run = path.join(RUN_FILE);
        if !run.is_file() {
            return Err(ResultError::Io {
                path: run,
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "not a pado result directory (run.json missing)",
                ),
            });
        }
        Ok(ResultDir { path, _lock: None })
    }

    /// Whether a run is writing this directory now (another process holds its lock):
    /// a report of it is of the seconds so far, and must not write files into it.
    /// A directory without a lock file, or whose lock cannot be read, is not being
    /// written (a run killed with `kill -9` releases its lock with its process).
    pub fn being_written(&self) -> bool {
        if self._lock.is_some() {
            return true;
        }
        let Ok(f) = fs::File::open(self.path.join(LOCK_FILE)) else {
            return false;
        };
        // A shared lock is refused while the writer holds its exclusive one.
        matches!(f.try_lock_shared(), Err(fs::TryLockError::WouldBlock))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Start the timeline file (truncating an old one).
    pub fn timeline_writer(&self) -> Result<TimelineWriter, ResultError> {
        let p = self.path.join(TIMELINE_FILE);
        let f = File::create(&p).map_err(io_err(&p))?;
        Ok(TimelineWriter {
            path: p,
            out: BufWriter::new(f),
        })
    }

    /// Write `run.json`.
    pub fn write_meta(&self, meta: &RunMeta) -> Result<(), ResultError> {
        self.write_json(RUN_FILE, meta)
    }

    /// Write any serialisable value as pretty JSON to `name` in the directory.
    pub fn write_json<T: Serialize>(&self, name: &str, v: &T) -> Result<(), ResultError> {
        let p = self.path.join(name);
        let text = serde_json::to_string_pretty(v).map_err(|e| ResultError::Format {
            path: p.clone(),
            line: 1,
            message: e.to_string(),
        })?;
        self.write_text(name, &(text + "\n"))
    }

    /// Write a text file in the directory (atomically: temp file then rename).
    pub fn write_text(&self, name: &str, text: &str) -> Result<(), ResultError> {
        let p = self.path.join(name);
        let tmp = self.path.join(format!(".{name}.tmp"));
        fs::write(&tmp, text).map_err(io_err(&tmp))?;
        fs::rename(&tmp, &p).map_err(io_err(&p))
    }

    /// Read `run.json`.
    pub fn read_meta(&self) -> Result<RunMeta, ResultError> {
        let p = self.path.join(RUN_FILE);
        let text = fs::read_to_string(&p).map_err(io_err(&p))?;
        let meta: RunMeta = serde_json::from_str(&text).map_err(|e| ResultError::Format {
            path: p.clone(),
            line: e.line(),
            message: e.to_string(),
        })?;
        if meta.format != "pado-result" {
            return Err(ResultError::Format {
                path: p,
                line: 1,
                message: format!("format is `{}`, expected `pado-result`", meta.format),
            });
        }
        if meta.version > FORMAT_VERSION {
            return Err(ResultError::Version {
                path: p,
                found: meta.version,
            });
        }
        Ok(meta)
    }

    /// Stream `timeline.jsonl`: decode one line at a time and hand each second to `f`,
    /// in file order, so only one [`SecondRecord`] (and one line of text) is alive at a
    /// time whatever the length of the run. An error from `f` stops the read and is
    /// reported as a format error on that line.
    ///
    /// A **last** line whose JSON ends early is what a writer killed mid-line leaves
    /// (`kill -9`, a crash, a full disk): it is left out and reported in
    /// [`TimelineRead::torn_line`] rather than making the whole run unreadable. The
    /// same damage on any other line, or a last line that is complete but wrong, is
    /// still an error naming the line.
    ///
    /// The lines are parsed and their histograms decoded on a thread of their own,
    /// a few seconds ahead of `f` (a bounded channel: memory stays bounded), so
    /// reading and what `f` does with the seconds use two cores.
    pub fn for_each_second(
        &self,
        mut f: impl FnMut(SecondRecord) -> Result<(), String>,
    ) -> Result<TimelineRead, ResultError> {
        let mut rd = self.timeline_reader()?;
        let (tx, rx) = crossbeam_channel::bounded::<Result<(SecondRecord, usize), ResultError>>(4);
        std::thread::scope(|scope| {
            let reader = scope.spawn(move || {
                loop {
                    let next = match rd.next_second() {
                        Ok(Some(rec)) => Ok((rec, rd.no)),
                        Ok(None) => break,
                        Err(e) => Err(e),
                    };
                    let failed = next.is_err();
                    if tx.send(next).is_err() || failed {
                        break;
                    }
                }
                rd.read
            });
            let mut read = TimelineRead::default();
            let mut error = None;
            for next in &rx {
                match next {
                    Ok((rec, line)) => {
                        let t = rec.t;
                        if let Err(message) = f(rec) {
                            error = Some(ResultError::Format {
                                path: self.path.join(TIMELINE_FILE),
                                line,
                                message,
                            });
                            break;
                        }
                        read.seconds += 1;
                        read.last_t = Some(t);
                    }
                    Err(e) => {
                        error = Some(e);
                        break;
                    }
                }
            }
            // The reader stops at its next send once nobody listens.
            drop(rx);
            let torn = reader
                .join()
                .expect("the timeline reader panicked")
                .torn_line;
            match error {
                Some(e) => Err(e),
                None => Ok(TimelineRead {
                    torn_line: torn,
                    ..read
                }),
            }
        })
    }

    /// Read `timeline.jsonl` one second at a time, pulled by the caller (what a
    /// merge of several timelines in step needs); same rules as
    /// [`ResultDir::for_each_second`] for a torn last line.
    pub fn timeline_reader(&self) -> Result<TimelineReader, ResultError> {
        let p = self.path.join(TIMELINE_FILE);
        let file = File::open(&p).map_err(io_err(&p))?;
        Ok(TimelineReader {
            rd: BufReader::with_capacity(256 * 1024, file),
            path: p,
            line: String::new(),
            no: 0,
            read: TimelineRead::default(),
            prev_t: None,
        })
    }

    /// Read every second of `timeline.jsonl` into memory. Each second holds full
    /// histograms (tens of KB per series), so this is for short timelines and tests;
    /// use [`ResultDir::for_each_second`] for anything of unbounded length.
    pub fn read_timeline(&self) -> Result<Vec<SecondRecord>, ResultError> {
        let mut out = Vec::new();
        self.for_each_second(|rec| {
            out.push(rec);
            Ok(())
        })?;
        Ok(out)
    }

    /// Sum the timeline, streaming it (memory bounded by the number of series, not
    /// by the length of the run).
    pub fn read_totals(&self) -> Result<Totals, ResultError> {
        let mut totals = Totals::default();
        self.for_each_second(|rec| {
            totals.add_second(&rec);
            Ok(())
        })?;
        Ok(totals)
    }
}
