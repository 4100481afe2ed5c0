//! The result directory: the only thing reports, comparisons and merges read.
//!
//! Layout (format version [`FORMAT_VERSION`], documented in `docs/result-format.md`):
//! - `run.json`: [`RunMeta`], what ran, when, with which stages and thresholds;
//! - `timeline.jsonl`: one JSON object per second of the run ([`SecondRecord`]), with
//!   exact HDR histograms so any span of seconds can be re-aggregated exactly;
//! - `summary.json`: the end-of-run summary (written by the report side).

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::series::Phase;
use crate::{
    CheckCounts, ErrorKind, GeneratorSecond, LagHistogram, LatencyHistogram, ScenarioStats,
    SecondRecord, SeriesKey, SeriesStats, Totals, LAG_BUCKETS_US,
};

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
}

/// Every file a run or `pado report` writes in a result directory: what
/// `--overwrite` clears, and nothing else.
pub const PADO_FILES: &[&str] = &[
    RUN_FILE,
    TIMELINE_FILE,
    SUMMARY_FILE,
    crate::observed::OBSERVE_FILE,
    crate::failure::FAILURES_FILE,
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

/// What a read of `timeline.jsonl` ([`ResultDir::for_each_second`]) found besides the
/// seconds themselves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimelineRead {
    /// Seconds read (lines handed on).
    pub seconds: usize,
    /// `t` of the last second read.
    pub last_t: Option<u32>,
    /// 1-based line number of a half-written last line that was left out (the writer
    /// was killed while writing it).
    pub torn_line: Option<usize>,
}

/// Whether nothing but whitespace is left in `rd`.
fn only_blank_left(rd: &mut impl BufRead) -> std::io::Result<bool> {
    loop {
        let buf = rd.fill_buf()?;
        if buf.is_empty() {
            return Ok(true);
        }
        if !buf.iter().all(u8::is_ascii_whitespace) {
            return Ok(false);
        }
        let n = buf.len();
        rd.consume(n);
    }
}

/// Handle on a result directory being written or read.
pub struct ResultDir {
    path: PathBuf,
    /// The lock of a directory this process writes (none when reading).
    _lock: Option<fs::File>,
}

/// Appends closed seconds to `timeline.jsonl`.
pub struct TimelineWriter {
    path: PathBuf,
    out: BufWriter<File>,
}

/// Pulls seconds from `timeline.jsonl` one at a time ([`ResultDir::timeline_reader`]):
/// one line of text and one decoded second alive at a time.
pub struct TimelineReader {
    rd: BufReader<File>,
    path: PathBuf,
    line: String,
    no: usize,
    read: TimelineRead,
}

impl TimelineReader {
    /// The next second, `None` at the end of the file (or at a torn last line, then
    /// recorded in [`TimelineReader::read`]).
    pub fn next_second(&mut self) -> Result<Option<SecondRecord>, ResultError> {
        match self.next_encoded()? {
            None => Ok(None),
            Some(e) => e
                .wire
                .into_record()
                .map(Some)
                .map_err(|m| self.error_here(m)),
        }
    }

    /// The next second with its histograms still encoded ([`EncodedSecond`]), `None`
    /// at the end (or at a torn last line, as [`TimelineReader::next_second`]).
    pub fn next_encoded(&mut self) -> Result<Option<EncodedSecond>, ResultError> {
        loop {
            self.line.clear();
            let p = &self.path;
            if self.rd.read_line(&mut self.line).map_err(io_err(p))? == 0 {
                return Ok(None);
            }
            self.no += 1;
            if self.line.trim().is_empty() {
                continue;
            }
            // Without the line end: a line torn inside a string must read as ending
            // early, not as a string holding a newline.
            return match serde_json::from_str::<WireSecond>(self.line.trim_end()) {
                Ok(wire) => Ok(Some(EncodedSecond {
                    wire,
                    line: self.no,
                })),
                Err(e) if e.is_eof() && only_blank_left(&mut self.rd).map_err(io_err(p))? => {
                    self.read.torn_line = Some(self.no);
                    Ok(None)
                }
                Err(e) => Err(self.error_here(e.to_string())),
            };
        }
    }

    /// A format error on the line read last.
    pub fn error_here(&self, message: String) -> ResultError {
        ResultError::Format {
            path: self.path.clone(),
            line: self.no,
            message,
        }
    }

    /// What the read found so far besides the seconds (the torn last line; `seconds`
    /// and `last_t` are counted by [`ResultDir::for_each_second`] only).
    pub fn read(&self) -> TimelineRead {
        self.read
    }
}

/// One second of a timeline as read, its histograms still encoded: what a merge adds
/// into the merged second, decoding each histogram straight into the sum instead of
/// into a histogram of its own first.
pub struct EncodedSecond {
    wire: WireSecond,
    line: usize,
}

/// What one second of one generator held besides what [`EncodedSecond::add_to`] adds
/// into the merged second: its own counts and figures, for its row in a merge.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OwnFigures {
    /// Requests completed.
    pub requests: u64,
    /// Of them, failed.
    pub failed: u64,
    /// Iterations started (completed or interrupted).
    pub iterations_started: u64,
    /// Open model: late starts.
    pub late: u64,
    /// Open model: dropped iterations.
    pub dropped: u64,
    /// The generator's own figures.
    pub generator: Option<GeneratorSecond>,
}

impl EncodedSecond {
    /// Second of the run it belongs to.
    pub fn t(&self) -> u32 {
        self.wire.t
    }

    /// 1-based line of the timeline it was read from.
    pub fn line(&self) -> usize {
        self.line
    }

    /// Add this second into `acc` (counters summed, histograms added exactly, VUs
    /// summed; `acc.generator` left alone) and its `http_req_duration` samples into
    /// `own_duration`. Counters are checked as [`ResultDir::for_each_second`] checks
    /// them; an error says what is wrong (the caller names the line).
    pub fn add_to(
        self,
        acc: &mut SecondRecord,
        dec: &mut crate::latency::HistogramDecoder,
        own_duration: &mut LatencyHistogram,
    ) -> Result<OwnFigures, String> {
        let w = self.wire;
        let mut own = OwnFigures::default();
        acc.vus = acc.vus.saturating_add(w.vus);
        acc.vus_max = acc.vus_max.saturating_add(w.vus_max);
        // One series' counters at a time, in a reused record whose histograms stay
        // empty (a fresh one allocates seven of them for nothing).
        let mut counters = SeriesStats::default();
        for mut ws in w.series {
            let hist = std::mem::take(&mut ws.hist);
            ws.counters_into(&mut counters)?;
            own.requests = own.requests.saturating_add(counters.requests);
            own.failed = own.failed.saturating_add(counters.failed);
            let i = match acc.series.binary_search_by(|x| x.key.cmp(&counters.key)) {
                Ok(i) => i,
                Err(i) => {
                    acc.series.insert(i, SeriesStats::new(counters.key.clone()));
                    i
                }
            };
            let into = &mut acc.series[i];
            into.merge(&counters);
            for (name, enc) in hist {
                let p = Phase::ALL
                    .into_iter()
                    .find(|p| p.as_str() == name)
                    .ok_or_else(|| format!("unknown histogram `{name}`"))?;
                let also = (p == Phase::Duration).then_some(&mut *own_duration);
                dec.add_encoded_to(&enc, &mut into.hist[p as usize], also)?;
            }
        }
        for sc in &w.scenarios {
            own.iterations_started = own
                .iterations_started
                .saturating_add(sc.iterations.saturating_add(sc.interrupted));
            own.late = own.late.saturating_add(sc.late);
            own.dropped = own.dropped.saturating_add(sc.dropped);
        }
        add_scenarios(w.scenarios, &mut acc.scenarios, dec)?;
        add_scenarios(w.flows, &mut acc.flows, dec)?;
        for (name, c) in w.checks {
            acc.checks.entry(name).or_default().merge(&c);
        }
        own.generator = w.generator.map(WireGenerator::into_second).transpose()?;
        Ok(own)
    }
}

/// Add scenarios (or flows) read from a line into a sorted list, their iteration
/// durations decoded straight into the sums.
fn add_scenarios(
    list: Vec<WireScenario>,
    into: &mut Vec<ScenarioStats>,
    dec: &mut crate::latency::HistogramDecoder,
) -> Result<(), String> {
    for mut sc in list {
        let enc = std::mem::take(&mut sc.iteration_duration);
        let counts = sc.into_stats()?;
        let i = match into.binary_search_by(|x| x.name.cmp(&counts.name)) {
            Ok(i) => i,
            Err(i) => {
                into.insert(i, ScenarioStats::new(counts.name.clone()));
                i
            }
        };
        into[i].merge(&counts);
        dec.add_encoded(&enc, &mut into[i].iteration_duration)?;
    }
    Ok(())
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

impl TimelineWriter {
    /// Append one second and flush it, so a crash loses at most the open second.
    pub fn write(&mut self, rec: &SecondRecord) -> Result<(), ResultError> {
        let format_err = |message: String| ResultError::Format {
            path: self.path.clone(),
            line: rec.t as usize + 1,
            message,
        };
        let wire = WireSecond::from_record(rec).map_err(format_err)?;
        let line = serde_json::to_string(&wire).map_err(|e| ResultError::Format {
            path: self.path.clone(),
            line: rec.t as usize + 1,
            message: e.to_string(),
        })?;
        let p = self.path.clone();
        self.out.write_all(line.as_bytes()).map_err(io_err(&p))?;
        self.out.write_all(b"\n").map_err(io_err(&p))?;
        self.out.flush().map_err(io_err(&p))
    }
}

// ---- wire form of one second -------------------------------------------------------

#[derive(Serialize, Deserialize)]
struct WireSecond {
    t: u32,
    vus: u32,
    vus_max: u32,
    #[serde(default)]
    series: Vec<WireSeries>,
    #[serde(default)]
    scenarios: Vec<WireScenario>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    flows: Vec<WireScenario>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    checks: BTreeMap<String, CheckCounts>,
    /// Absent in files written before pado measured itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    generator: Option<WireGenerator>,
}

/// [`GeneratorSecond`] on the wire: shares as numbers 0..=1, the lag histogram sparse
/// (bucket upper bound in µs -> samples; the open last bucket is `inf`).
#[derive(Serialize, Deserialize)]
struct WireGenerator {
    workers: u32,
    wall_ns: u64,
    span_ns: u64,
    cpu_ns: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    wait_ns: Option<u64>,
    busy_max: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    wait_max: Option<f64>,
    lag_p99_us: u64,
    lag_max_us: u64,
    #[serde(default)]
    lag_hist: BTreeMap<String, u64>,
}

impl WireGenerator {
    fn from_second(g: &GeneratorSecond) -> Self {
        let lag_hist = g
            .lag
            .counts
            .iter()
            .zip(LAG_BUCKETS_US)
            .filter(|(n, _)| **n > 0)
            .map(|(n, b)| {
                let key = if b == u64::MAX {
                    "inf".to_string()
                } else {
                    b.to_string()
                };
                (key, *n)
            })
            .collect();
        WireGenerator {
            workers: g.workers,
            wall_ns: g.wall_ns,
            span_ns: g.span_ns,
            cpu_ns: g.cpu_ns,
            wait_ns: g.wait_ns,
            busy_max: g.busy_max,
            wait_max: g.wait_max,
            lag_p99_us: g.lag_p99_us,
            lag_max_us: g.lag.max_us,
            lag_hist,
        }
    }

    fn into_second(self) -> Result<GeneratorSecond, String> {
        let mut lag = LagHistogram {
            max_us: self.lag_max_us,
            ..Default::default()
        };
        for (bound, n) in self.lag_hist {
            let b = if bound == "inf" {
                u64::MAX
            } else {
                bound
                    .parse()
                    .map_err(|_| format!("lag bucket `{bound}` is not a number"))?
            };
            let i = LagHistogram::bucket_of_bound(b)
                .ok_or_else(|| format!("lag bucket `{bound}` is not one of pado's bounds"))?;
            lag.counts[i] += n;
        }
        Ok(GeneratorSecond {
            workers: self.workers,
            wall_ns: self.wall_ns,
            span_ns: self.span_ns,
            cpu_ns: self.cpu_ns,
            wait_ns: self.wait_ns,
            busy_max: self.busy_max,
            wait_max: self.wait_max,
            lag_p99_us: self.lag_p99_us,
            lag,
        })
    }
}

#[derive(Serialize, Deserialize)]
struct WireSeries {
    #[serde(flatten)]
    key: SeriesKey,
    requests: u64,
    failed: u64,
    #[serde(default)]
    check_failed: u64,
    bytes_sent: u64,
    bytes_received: u64,
    /// Absent when 0 (and in files written before it existed).
    #[serde(default, skip_serializing_if = "is_zero")]
    reconnects: u64,
    /// Absent when 0 (and in files written before it existed).
    #[serde(default, skip_serializing_if = "is_zero")]
    body_cut: u64,
    #[serde(default)]
    status: BTreeMap<String, u64>,
    /// Statuses of 400 or more the step expected; absent when none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    expected_status: BTreeMap<String, u64>,
    #[serde(default)]
    errors: BTreeMap<String, u64>,
    #[serde(default)]
    hist: BTreeMap<String, String>,
    /// The step's WebSocket sessions; absent for HTTP steps (and in files written
    /// before pado spoke WebSocket).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ws: Option<WireWs>,
}

/// [`crate::WsStats`] on the wire: counters, failures by category, and the three
/// histograms by name (`connecting`, `session_duration`, `msg_latency`), each
/// absent when empty.
#[derive(Serialize, Deserialize)]
struct WireWs {
    sessions: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    failed: u64,
    msgs_sent: u64,
    msgs_received: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    errors: BTreeMap<String, u64>,
    #[serde(default)]
    hist: BTreeMap<String, String>,
}

/// The names of [`WireWs::hist`]'s histograms.
const WS_HISTS: [&str; 3] = ["connecting", "session_duration", "msg_latency"];

impl WireWs {
    fn from_stats(w: &crate::WsStats) -> Result<Self, String> {
        let mut hist = BTreeMap::new();
        for (name, h) in WS_HISTS
            .into_iter()
            .zip([&w.connecting, &w.session, &w.msg_latency])
        {
            if !h.is_empty() {
                hist.insert(name.to_string(), h.encode()?);
            }
        }
        Ok(WireWs {
            sessions: w.sessions,
            failed: w.failed,
            msgs_sent: w.msgs_sent,
            msgs_received: w.msgs_received,
            errors: w.errors.iter().cloned().collect(),
            hist,
        })
    }

    fn into_stats(self) -> Result<crate::WsStats, String> {
        let mut w = crate::WsStats {
            sessions: self.sessions,
            failed: self.failed,
            msgs_sent: self.msgs_sent,
            msgs_received: self.msgs_received,
            errors: self.errors.into_iter().collect(),
            ..Default::default()
        };
        for (name, enc) in self.hist {
            let h = match name.as_str() {
                "connecting" => &mut w.connecting,
                "session_duration" => &mut w.session,
                "msg_latency" => &mut w.msg_latency,
                _ => return Err(format!("unknown WebSocket histogram `{name}`")),
            };
            *h = LatencyHistogram::decode(&enc)?;
        }
        Ok(w)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Serialize, Deserialize)]
struct WireScenario {
    name: String,
    iterations: u64,
    #[serde(default)]
    interrupted: u64,
    #[serde(default)]
    dropped: u64,
    #[serde(default)]
    late: u64,
    #[serde(default)]
    iteration_duration: String,
}

/// One line of `timeline.jsonl` as a second: what a coordinator reads from a
/// generator's live feed (the same text the generator writes to its file).
pub fn parse_timeline_line(line: &str) -> Result<SecondRecord, String> {
    let wire: WireSecond = serde_json::from_str(line.trim_end()).map_err(|e| e.to_string())?;
    wire.into_record()
}

/// A second as one line of `timeline.jsonl` (without the line end), as a run
/// writes it.
pub fn timeline_line(rec: &SecondRecord) -> Result<String, String> {
    let wire = WireSecond::from_record(rec)?;
    serde_json::to_string(&wire).map_err(|e| e.to_string())
}

impl WireSecond {
    fn from_record(r: &SecondRecord) -> Result<Self, String> {
        Ok(WireSecond {
            t: r.t,
            vus: r.vus,
            vus_max: r.vus_max,
            series: r
                .series
                .iter()
                .map(WireSeries::from_stats)
                .collect::<Result<_, _>>()?,
            scenarios: r
                .scenarios
                .iter()
                .map(WireScenario::from_stats)
                .collect::<Result<_, _>>()?,
            flows: r
                .flows
                .iter()
                .map(WireScenario::from_stats)
                .collect::<Result<_, _>>()?,
            checks: r.checks.clone(),
            generator: r.generator.as_ref().map(WireGenerator::from_second),
        })
    }

    fn into_record(self) -> Result<SecondRecord, String> {
        let mut series = Vec::with_capacity(self.series.len());
        for s in self.series {
            series.push(s.into_stats()?);
        }
        series.sort_by(|a, b| a.key.cmp(&b.key));
        let decode = |v: Vec<WireScenario>| -> Result<Vec<ScenarioStats>, String> {
            let mut out = v
                .into_iter()
                .map(WireScenario::into_stats)
                .collect::<Result<Vec<_>, _>>()?;
            out.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(out)
        };
        let scenarios = decode(self.scenarios)?;
        let flows = decode(self.flows)?;
        let generator = self.generator.map(WireGenerator::into_second).transpose()?;
        Ok(SecondRecord {
            t: self.t,
            vus: self.vus,
            vus_max: self.vus_max,
            series,
            scenarios,
            flows,
            checks: self.checks,
            generator,
        })
    }
}

impl WireScenario {
    fn from_stats(s: &ScenarioStats) -> Result<Self, String> {
        Ok(WireScenario {
            name: s.name.clone(),
            iterations: s.iterations,
            interrupted: s.interrupted,
            dropped: s.dropped,
            late: s.late,
            iteration_duration: s.iteration_duration.encode()?,
        })
    }

    fn into_stats(self) -> Result<ScenarioStats, String> {
        Ok(ScenarioStats {
            name: self.name,
            iterations: self.iterations,
            interrupted: self.interrupted,
            dropped: self.dropped,
            late: self.late,
            iteration_duration: LatencyHistogram::decode(&self.iteration_duration)?,
        })
    }
}

impl WireSeries {
    fn from_stats(s: &SeriesStats) -> Result<Self, String> {
        let mut errors = BTreeMap::new();
        for k in ErrorKind::ALL {
            let n = s.errors[k.index()];
            if n > 0 {
                errors.insert(k.as_str().to_string(), n);
            }
        }
        let mut hist = BTreeMap::new();
        for p in Phase::ALL {
            let h = s.phase(p);
            if !h.is_empty() {
                hist.insert(p.as_str().to_string(), h.encode()?);
            }
        }
        Ok(WireSeries {
            key: s.key.clone(),
            requests: s.requests,
            failed: s.failed,
            check_failed: s.check_failed,
            bytes_sent: s.bytes_sent,
            bytes_received: s.bytes_received,
            reconnects: s.reconnects,
            body_cut: s.body_cut,
            status: s
                .status_sorted()
                .into_iter()
                .map(|(c, n)| (c.to_string(), n))
                .collect(),
            expected_status: s
                .expected_status
                .iter()
                .map(|(c, n)| (c.to_string(), *n))
                .collect(),
            errors,
            hist,
            ws: s.ws.as_deref().map(WireWs::from_stats).transpose()?,
        })
    }

    fn into_stats(mut self) -> Result<SeriesStats, String> {
        let hist = std::mem::take(&mut self.hist);
        let mut s = SeriesStats::default();
        self.counters_into(&mut s)?;
        for (name, enc) in hist {
            let p = Phase::ALL
                .into_iter()
                .find(|p| p.as_str() == name)
                .ok_or_else(|| format!("unknown histogram `{name}`"))?;
            s.hist[p as usize] = LatencyHistogram::decode(&enc)?;
        }
        Ok(s)
    }

    /// Everything but the histograms (left as they are) into `s`, checked: counters
    /// replaced, not added.
    fn counters_into(self, s: &mut SeriesStats) -> Result<(), String> {
        s.key = self.key;
        s.status.clear();
        s.expected_status.clear();
        s.errors = Default::default();
        s.requests = self.requests;
        s.failed = self.failed;
        s.check_failed = self.check_failed;
        s.bytes_sent = self.bytes_sent;
        s.bytes_received = self.bytes_received;
        s.reconnects = self.reconnects;
        s.body_cut = self.body_cut;
        s.ws = self.ws.map(WireWs::into_stats).transpose()?.map(Box::new);
        for (code, n) in self.status {
            let c: u16 = code
                .parse()
                .map_err(|_| format!("status `{code}` is not a number"))?;
            s.bump_status(c, n);
        }
        for (code, n) in self.expected_status {
            let c: u16 = code
                .parse()
                .map_err(|_| format!("expected status `{code}` is not a number"))?;
            s.bump_expected(c, n);
        }
        for (name, n) in self.errors {
            let k = ErrorKind::ALL
                .into_iter()
                .find(|k| k.as_str() == name)
                .ok_or_else(|| format!("unknown error kind `{name}`"))?;
            s.errors[k.index()] += n;
        }
        s.check_consistent()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Interval, Phases, RequestSample};

    /// A fresh directory, removed when the returned guard drops (pass or fail).
    fn tmpdir(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("pado-metrics-{name}-"))
            .tempdir()
            .unwrap()
    }

    #[test]
    fn websocket_figures_round_trip_and_add_exactly() {
        let tmp = tmpdir("ws");
        let dir = ResultDir::create(tmp.path()).unwrap();
        let mut s = SeriesStats::new(SeriesKey::named("채팅"));
        for i in 0..20u64 {
            s.record_ws(&crate::WsSession {
                connecting_us: 300 + i,
                duration_us: 5_000_000,
                msgs_sent: 4,
                msgs_received: 7,
                error: (i == 0).then_some(crate::WsError::HandshakeRefused(403)),
                connected: i != 0,
            });
            s.record_ws_latency(50_000 + i);
        }
        let mut rec = SecondRecord::new(0);
        rec.series.push(s.clone());
        let mut w = dir.timeline_writer().unwrap();
        w.write(&rec).unwrap();
        rec.t = 1;
        w.write(&rec).unwrap();
        drop(w);
        let back = dir.read_timeline().unwrap();
        assert_eq!(back[0].series[0], s);
        let ws = back[1].series[0].ws.as_deref().unwrap();
        assert_eq!(
            (ws.sessions, ws.failed, ws.msgs_sent, ws.msgs_received),
            (20, 1, 80, 140)
        );
        assert_eq!(ws.errors, vec![("ws_handshake_403".to_string(), 1)]);
        assert_eq!(ws.connecting.count(), 19);
        assert_eq!(ws.msg_latency.count(), 20);
        // The merge's path: encoded seconds added straight into one.
        let mut rd = dir.timeline_reader().unwrap();
        let mut acc = SecondRecord::new(0);
        let mut dec = crate::latency::HistogramDecoder::default();
        let mut own = LatencyHistogram::default();
        while let Some(e) = rd.next_encoded().unwrap() {
            e.add_to(&mut acc, &mut dec, &mut own).unwrap();
        }
        let ws = acc.series[0].ws.as_deref().unwrap();
        assert_eq!(
            (ws.sessions, ws.msgs_sent, ws.msgs_received),
            (40, 160, 280)
        );
        assert_eq!(ws.msg_latency.count(), 40);
        assert_eq!(acc.series[0].requests, 0);
        // HTTP series write no `ws` field.
        let line = timeline_line(&SecondRecord::new(3)).unwrap();
        assert!(!line.contains("\"ws\""), "{line}");
    }

    #[test]
    fn timeline_round_trips_exactly() {
        let tmp = tmpdir("rt");
        let dir = ResultDir::create(tmp.path()).unwrap();
        let mut rec = SecondRecord::new(0);
        let mut s = SeriesStats::new(SeriesKey {
            name: "검색".into(),
            tags: vec![("class".into(), "rare".into())],
        });
        for i in 0..500u64 {
            s.record(&RequestSample {
                status: if i % 50 == 0 { 503 } else { 200 },
                failed: i % 50 == 0,
                phases: Phases {
                    duration_us: 100 + i,
                    waiting_us: 50 + i,
                    ..Default::default()
                },
                bytes_received: 7,
                reconnected: i % 100 == 0,
                ..Default::default()
            });
        }
        assert_eq!(s.reconnects, 5);
        s.record(&RequestSample {
            error: Some(ErrorKind::Timeout),
            failed: true,
            ..Default::default()
        });
        let mut sc = ScenarioStats::new("default");
        sc.iterations = 500;
        sc.dropped = 2;
        sc.iteration_duration.record(1234);
        let mut fl = ScenarioStats::new("default/write");
        fl.iterations = 7;
        let mut gen = crate::GeneratorStats {
            wall_ns: 1_001_000_000,
            cpu_ns: 930_000_000,
            wait_ns: Some(12_345),
            ..Default::default()
        };
        for us in [0, 900, 10_000, 10_001, 61_000, 9_000_000] {
            gen.lag.record(us);
        }
        rec.absorb(Interval {
            series: vec![s],
            scenarios: vec![sc],
            flows: vec![fl],
            vus: 3,
            vus_max: 4,
            generator: Some(gen),
            ..Default::default()
        });
        assert!(rec.generator.is_some());
        let mut w = dir.timeline_writer().unwrap();
        w.write(&rec).unwrap();
        let mut rec1 = rec.clone();
        rec1.t = 1;
        w.write(&rec1).unwrap();
        drop(w);
        let back = dir.read_timeline().unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0], rec);
        let totals = dir.read_totals().unwrap();
        let mut ts = Vec::new();
        dir.for_each_second(|r| {
            ts.push(r.t);
            Ok(())
        })
        .unwrap();
        assert_eq!(ts, [0, 1]);
        let e = dir
            .for_each_second(|r| {
                if r.t == 1 {
                    Err("stop here".into())
                } else {
                    Ok(())
                }
            })
            .unwrap_err()
            .to_string();
        assert!(e.ends_with(":2: stop here"), "{e}");
        assert_eq!(totals.overall().requests, 1002);
        assert_eq!(totals.overall().error_breakdown()["http_503"], 20);
    }

    #[test]
    fn meta_version_is_checked() {
        let tmp = tmpdir("ver");
        let dir = ResultDir::create(tmp.path()).unwrap();
        let meta = RunMeta {
            format: "pado-result".into(),
            version: FORMAT_VERSION + 1,
            ..Default::default()
        };
        dir.write_meta(&meta).unwrap();
        let d = ResultDir::open(dir.path()).unwrap();
        assert!(matches!(d.read_meta(), Err(ResultError::Version { .. })));
        assert!(ResultDir::open(dir.path().join("nope")).is_err());
    }

    /// A timeline whose writer was killed mid-line: the complete seconds load, the
    /// torn last line is reported, not fatal.
    #[test]
    fn a_torn_last_line_is_left_out_and_reported() {
        let tmp = tmpdir("torn");
        let dir = ResultDir::create(tmp.path()).unwrap();
        let mut w = dir.timeline_writer().unwrap();
        let mut rec = SecondRecord::default();
        for t in 0..3 {
            rec.t = t;
            rec.vus = t + 1;
            w.write(&rec).unwrap();
        }
        drop(w);
        let full = fs::read_to_string(dir.path().join(TIMELINE_FILE)).unwrap();
        let third = full.lines().nth(2).unwrap();
        // Cut inside the last line at every position (with and without a newline
        // after the cut): two seconds and the torn line number.
        let two = full.len() - third.len() - 1;
        for cut in 1..third.len() {
            for tail in ["", "\n", " \n\n"] {
                let text = format!("{}{}{tail}", &full[..two], &third[..cut]);
                fs::write(dir.path().join(TIMELINE_FILE), &text).unwrap();
                let mut ts = Vec::new();
                let read = dir
                    .for_each_second(|r| {
                        ts.push(r.t);
                        Ok(())
                    })
                    .unwrap_or_else(|e| panic!("{text:?}: {e}"));
                assert_eq!(ts, [0, 1], "{text:?}");
                assert_eq!(
                    read,
                    TimelineRead {
                        seconds: 2,
                        last_t: Some(1),
                        torn_line: Some(3)
                    },
                    "{text:?}"
                );
            }
        }
        // An intact file reports no torn line.
        fs::write(dir.path().join(TIMELINE_FILE), &full).unwrap();
        let read = dir.for_each_second(|_| Ok(())).unwrap();
        assert_eq!(
            (read.seconds, read.last_t, read.torn_line),
            (3, Some(2), None)
        );
        // The same cut in the middle of the file is corruption, named by its line.
        let second = full.lines().nth(1).unwrap();
        let one = full.lines().next().unwrap().len() + 1;
        let text = format!("{}{}\n{third}\n", &full[..one], &second[..second.len() / 2]);
        fs::write(dir.path().join(TIMELINE_FILE), &text).unwrap();
        let e = dir.read_timeline().unwrap_err().to_string();
        assert!(e.contains(":2:"), "{e}");
        // A complete last line that is wrong is not a torn line either.
        let text = format!("{}{{\"t\":\"x\"}}\n", &full[..two]);
        fs::write(dir.path().join(TIMELINE_FILE), &text).unwrap();
        let e = dir.read_timeline().unwrap_err().to_string();
        assert!(e.contains(":3:"), "{e}");
    }

    #[test]
    fn corrupt_line_names_the_line() {
        let tmp = tmpdir("bad");
        let dir = ResultDir::create(tmp.path()).unwrap();
        fs::write(
            dir.path().join(TIMELINE_FILE),
            "{\"t\":0,\"vus\":0,\"vus_max\":0}\n{oops\n",
        )
        .unwrap();
        let e = dir.read_timeline().unwrap_err().to_string();
        assert!(e.contains(":2:"), "{e}");
    }

    #[test]
    fn corrupt_counters_are_an_error_naming_the_line_not_a_wrapped_sum() {
        let tmp = tmpdir("wrap");
        let dir = ResultDir::create(tmp.path()).unwrap();
        let ok = "{\"t\":0,\"vus\":1,\"vus_max\":1,\"series\":[{\"name\":\"a\",\"requests\":2,\"failed\":0,\"bytes_sent\":1,\"bytes_received\":1,\"status\":{\"200\":2}}]}";
        let huge = format!(
            "{{\"t\":1,\"vus\":1,\"vus_max\":1,\"series\":[{{\"name\":\"a\",\"requests\":{m},\"failed\":0,\"bytes_sent\":1,\"bytes_received\":1,\"status\":{{\"200\":{m},\"500\":2}}}}]}}",
            m = u64::MAX
        );
        fs::write(dir.path().join(TIMELINE_FILE), format!("{ok}\n{huge}\n")).unwrap();
        let e = dir.read_timeline().unwrap_err().to_string();
        assert!(e.contains(":2:") && e.contains("corrupt"), "{e}");
        let lying = "{\"t\":1,\"vus\":1,\"vus_max\":1,\"series\":[{\"name\":\"a\",\"requests\":5,\"failed\":9,\"bytes_sent\":1,\"bytes_received\":1,\"status\":{\"200\":5}}]}";
        fs::write(dir.path().join(TIMELINE_FILE), format!("{ok}\n{lying}\n")).unwrap();
        let e = dir.read_timeline().unwrap_err().to_string();
        assert!(e.contains(":2:") && e.contains("corrupt"), "{e}");
        // Consistent but huge counts saturate instead of wrapping.
        let mut a = SeriesStats::new(SeriesKey::named("a"));
        a.requests = u64::MAX - 1;
        let b = a.clone();
        a.merge(&b);
        assert_eq!(a.requests, u64::MAX);
    }

    /// Files written before pado measured itself still load: no `generator` in the
    /// timeline, no `cores_allowed` in run.json.
    #[test]
    fn older_files_without_generator_figures_load() {
        let tmp = tmpdir("old");
        let dir = ResultDir::create(tmp.path()).unwrap();
        fs::write(
            dir.path().join(TIMELINE_FILE),
            "{\"t\":0,\"vus\":1,\"vus_max\":1}\n",
        )
        .unwrap();
        let back = dir.read_timeline().unwrap();
        assert_eq!(back[0].generator, None);
        fs::write(
            dir.path().join(RUN_FILE),
            r#"{"format":"pado-result","version":1,"name":"old","pado_version":"0.1.0",
               "started_at":"","duration_s":1.0,"interrupted":false,"workers":2,
               "scenarios":[],"stages":[],"thresholds":[],"notes":[],"warnings":[]}"#,
        )
        .unwrap();
        let meta = dir.read_meta().unwrap();
        assert_eq!((meta.workers, meta.cores_allowed), (2, 0));
        // A lag bucket this pado does not know is an error on its line, not a guess.
        fs::write(
            dir.path().join(TIMELINE_FILE),
            "{\"t\":0,\"vus\":1,\"vus_max\":1,\"generator\":{\"workers\":1,\"wall_ns\":1,\"span_ns\":1,\"cpu_ns\":1,\"busy_max\":1.0,\"lag_p99_us\":0,\"lag_max_us\":0,\"lag_hist\":{\"123\":1}}}\n",
        )
        .unwrap();
        let e = dir.read_timeline().unwrap_err().to_string();
        assert!(e.contains(":1:") && e.contains("lag bucket `123`"), "{e}");
    }
}
