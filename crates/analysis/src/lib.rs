//! Analyses computed from pado's measurements: pass/fail thresholds in k6 syntax
//! ([`thresholds`]), the catalogue of k6 metric names they refer to
//! ([`metric_catalog`]), and how those names map onto a run's totals ([`source`]),
//! kept in one crate so that thresholds and reports agree on what every metric is.

pub mod attribution;
pub mod capacity;
pub mod drift;
pub mod metric_catalog;
pub mod noise;
pub mod planner;
pub mod saturation;
pub mod self_check;
pub mod source;
pub mod thresholds;

pub use source::TotalsSource;
