//! Measurement model of pado: what one request produced ([`RequestSample`]), how
//! samples are summed without losing precision ([`SeriesStats`], HDR histograms), how a
//! run becomes a per-second series ([`SecondRecord`], the [`aggregator`]) and how that
//! series is written to and read back from a result directory ([`result_dir`]), and
//! how the target's own metrics scraped during the run are stored ([`observed`]).
//!
//! Everything downstream (thresholds, reports, comparisons, distributed merges) reads
//! the result directory only, so this crate is the contract between the engine and the
//! rest of the product. Histograms are merged, never resampled: totals computed from
//! the per-second records are exact.

pub mod aggregator;
pub mod error_kind;
pub mod events;
pub mod failure;
pub mod generator;
pub mod latency;
pub mod merge;
pub mod observed;
pub mod open_faults;
pub mod protocols;
pub mod raw;
pub mod result_dir;
pub mod sample;
pub mod series;
pub mod step_catalog;
pub mod websocket;

pub use aggregator::{Aggregator, AggregatorHandle, WorkerMessage, OTHER_TAG, TAG_SERIES_CAP};
pub use error_kind::ErrorKind;
pub use failure::{FailureSample, FAILURES_FILE};
pub use generator::{GeneratorSecond, GeneratorStats, LagHistogram, LAG_BUCKETS_US};
pub use latency::{HistogramDecoder, LatencyHistogram, LatencySummary};
pub use observed::{
    answered_at, read_observations, EndpointLog, MetricType, Observations, ObserveWriter,
    ObservedSeries, ScrapeOutcome, ScrapedSample, OBSERVE_FILE,
};
pub use protocols::{HttpVersion, NewConnection, ProtocolCounts};
pub use result_dir::{
    ClaimError, GeneratorMeta, ResultDir, ResultError, RunMeta, ScenarioMeta, SegmentMeta,
    SoakMode, StageMark, ThresholdSpec, TimelineRead, TimelineReader, TimelineWriter,
    FORMAT_VERSION, LOCK_FILE, PADO_FILES, SOAK_AUTO_S,
};
pub use sample::{Phases, RequestSample};
pub use series::{
    CheckCounts, Interval, Phase, ScenarioStats, SecondRecord, SeriesKey, SeriesStats, Totals,
};
pub use step_catalog::{GroupInfo, StepCatalog, StepInfo};
pub use websocket::{WsError, WsSession, WsStats};
