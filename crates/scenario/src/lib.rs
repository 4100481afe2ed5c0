//! The scenario language of pado: the model users write ([`model`]), loading it with
//! errors that name file, line and field ([`load`]), durations ([`duration`]), the
//! threshold language written in it ([`thresholds`], with the k6 metric names it
//! refers to in [`metric_catalog`]), and the quick mode that turns command-line flags
//! into the same model ([`quick`]), so that everything downstream sees one kind of
//! input.

pub mod bundle;
pub mod duration;
pub mod error;
pub mod events;
pub mod experiment;
pub mod grpc_codes;
pub mod import;
pub mod init;
pub mod limits;
pub mod line_index;
pub mod load;
pub mod metric_catalog;
pub mod model;
pub mod naming;
pub mod plan_id;
pub mod quick;
pub mod refit_events;
pub mod size;
pub mod start_at;
pub mod structure;
pub mod template;
pub mod thresholds;

pub use duration::Dur;
pub use error::{Diagnostic, ScenarioError};
pub use load::{
    load_file, load_file_with_target, parse_status_class, parse_str, parse_str_with_target,
    split_request_line, validate, Loaded,
};
pub use model::*;
pub use quick::{
    apply_overrides, parse_header, parse_stages, parse_step_ramp, planned_length, quick_config,
    scale_timeline, threshold_list, LoadShape, Overrides, QuickRequest,
};
pub use refit_events::refit_events;
pub use size::ByteSize;
