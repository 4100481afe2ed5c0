//! Live outputs: a run's per-second metrics streamed while it runs to where people
//! already watch their services — Prometheus (remote write 1.0), InfluxDB (line
//! protocol, v1 and v2 APIs) and OpenTelemetry collectors (OTLP/HTTP protobuf).
//!
//! An output is a reader of the run's closed seconds: the CLI's sink hands each
//! [`pado_metrics::SecondRecord`] to [`Outputs::send`], which only tries a bounded
//! channel (never blocking the aggregator); each output's own thread folds the
//! second into cumulative counters and histograms ([`state`]), encodes it
//! ([`prometheus`], [`influx`], [`otlp`]) and delivers it over pado's own HTTP
//! client with batching, retries with backoff and a bounded buffer ([`sender`]).
//! What could not be delivered is counted and reported ([`OutputReport`]).
//! A k6 script's own metrics go to every output too ([`custom`]: the kinds, and
//! how each format names and represents them).
//!
//! Beside them, [`raw`] writes one line per request to a file when asked
//! (`--output raw-json=FILE`): fed by the workers, not by the closed seconds.

pub mod catalog;
pub mod credential_flags;
pub mod custom;
pub mod influx;
pub mod otlp;
pub mod prometheus;
pub mod raw;
mod sender;
pub mod spec;
pub mod state;

pub use sender::{
    OutputReport, Outputs, StartError, BUFFER_SECONDS, FLUSH_TIMEOUT, MAX_BATCH, WRITE_TIMEOUT,
};
pub use spec::{Kind, OutputSpec, SpecError};
pub use state::RunLabels;
