//! Measurement model of pado: what one request produced ([`RequestSample`]), how
//! samples are summed without losing precision ([`SeriesStats`], HDR histograms), how a
//! run becomes a per-second series ([`SecondRecord`], the [`aggregator`]), what a
//! scrape of the target's own metrics produced ([`scrape`]) and what the outputs
//! delivered ([`delivery`]).
//!
//! Everything here lives in memory while a run goes on; how it is written to and read
//! back from a result directory is `pado-results`' business, so the hot path (the
//! HTTP client, the scraper, the outputs) depends on this crate only. Histograms are merged, never
//! resampled: totals computed from the per-second records are exact.

pub mod aggregator;
pub mod custom;
pub mod delivery;
pub mod error_kind;
pub mod failure;
pub mod generator;
pub mod latency;
pub mod protocols;
pub mod raw;
pub mod sample;
pub mod scrape;
pub mod series;
pub mod sse;
pub mod step_catalog;
pub mod websocket;

pub use aggregator::{Aggregator, AggregatorHandle, WorkerMessage, OTHER_TAG, TAG_SERIES_CAP};
pub use custom::{CustomKind, CustomStats};
pub use delivery::{OutputMeta, RawOutputMeta};
pub use error_kind::ErrorKind;
pub use failure::{FailedEvent, FailureSample};
pub use generator::{GeneratorSecond, GeneratorStats, LagHistogram, LAG_BUCKETS_US};
pub use latency::{HistogramDecoder, LatencyHistogram, LatencySummary};
pub use protocols::{HttpVersion, NewConnection, ProtocolCounts};
pub use sample::{Phases, RequestSample};
pub use scrape::{MetricType, ScrapeOutcome, ScrapeSink, ScrapedSample};
pub use series::{
    second_in_window, CheckCounts, Interval, Phase, ScenarioStats, SecondRecord, SeriesKey,
    SeriesStats, Totals,
};
pub use sse::{SseStats, SseStream};
pub use step_catalog::{GroupInfo, StepCatalog, StepInfo};
pub use websocket::{WsError, WsSession, WsStats};
