//! The result directory: the on-disk contract between a run and everything that reads
//! it afterwards (reports, comparisons, thresholds, the history, distributed merges).
//!
//! A run writes `run.json` ([`RunMeta`]), `timeline.jsonl` (one [`SecondRecord`] per
//! second, with exact HDR histograms: [`TimelineWriter`]), `failures.jsonl`
//! ([`failures`]), `events.jsonl` ([`events`]), `observe.jsonl` ([`observed`]; read back a line at a time as the scrapes
//! it was written from by [`observe_replay`]) and,
//! while faults are injected, `open_faults.json` ([`open_faults`]). [`merge`] turns
//! the result directories of a split test's segments into one, and adds generators'
//! streamed seconds live; [`summary`] and [`RunView`] are `summary.json` and
//! `run.json` as readers of many runs (the history) read them. The format is documented in `docs/result-format.md`.
//!
//! What a run measures in memory (samples, histograms, per-second records) is
//! `pado-metrics`; this crate only says how it is stored and read back, with typed
//! errors ([`ResultError`], [`ClaimError`], [`merge::MergeError`]) that name the file
//! and line.
//!
//! [`SecondRecord`]: pado_metrics::SecondRecord

pub mod events;
pub mod failures;
pub mod merge;
pub mod observe_replay;
pub mod observed;
pub mod open_faults;
pub mod result_dir;
pub mod summary;

pub use failures::FAILURES_FILE;
pub use observed::{
    answered_at, read_observations, EndpointLog, Observations, ObserveWriter, ObservedSeries,
    OBSERVE_FILE,
};
pub use result_dir::{
    ClaimError, GeneratorMeta, ResultDir, ResultError, RunMeta, RunView, ScenarioMeta, SegmentMeta,
    SoakMode, StageMark, ThresholdSpec, TimelineRead, TimelineReader, TimelineWriter,
    FORMAT_VERSION, LOCK_FILE, PADO_FILES, SOAK_AUTO_S,
};
