//! Analyses computed from pado's measurements: whether pass/fail thresholds hold
//! ([`thresholds`]; their syntax is parsed by `pado_scenario::thresholds`), how k6
//! metric names map onto a run's totals ([`source`]), the capacity search's
//! decisions ([`capacity`]) and the run's diagnoses, kept in one crate so that
//! thresholds and reports agree on what every metric is. [`scoped`] judges
//! thresholds over one stage or window of the run; [`verdict`] gathers everything
//! judged into the one pass/fail every output reports.

pub mod attribution;
pub mod between_runs;
pub mod capacity;
pub mod custom_metrics;
pub mod drift;
pub mod events;
pub mod noise;
pub mod offered_load;
pub mod planner;
pub mod saturation;
pub mod scaling;
pub mod scoped;
pub mod selectors;
pub mod self_check;
pub mod soak;
pub mod source;
pub mod thresholds;
pub mod verdict;

pub use pado_scenario::grpc_codes;
/// The k6 metric names thresholds and reports use (defined beside the threshold
/// parser in `pado_scenario`, re-exported here where the measurements are read).
pub use pado_scenario::metric_catalog;
pub use source::TotalsSource;
