//! The load engine: load models ([`executor`]), a compiled run ([`plan`]) and the
//! runtime that drives virtual users on one current-thread runtime per core
//! ([`runtime`]); requests go through pado's own HTTP/1.1 client, `pado-http`. It
//! emits measurements through `pado-metrics` only and knows nothing of terminals or
//! reports.
//!
//! Linux only: the precise timer is a timerfd and the self-check reads each worker's
//! `/proc/thread-self/schedstat`. Elsewhere the build stops with that said plainly
//! rather than failing deep inside libc.

#[cfg(not(target_os = "linux"))]
compile_error!(
    "pado runs on Linux only: its engine's timer is a timerfd and its self-check reads /proc/thread-self/schedstat"
);

pub mod cookies;
pub mod data;
pub mod events;
pub mod executor;
pub mod json_query;
pub mod limits;
pub mod plan;
pub mod prompt;
pub mod redact;
pub mod render;
pub mod response_view;
pub mod runtime;
pub mod script;
pub mod script_state;
pub mod trace;

pub use plan::{compile, compile_for_elsewhere, PlanError, RunPlan};
pub use runtime::{
    allowed_cores, default_workers, run, run_setup, run_single, ClockError, ClockMap, LoadControl,
    Ramp, RunOptions, RunReport, SetupRun, StopState, ABORT, MAX_HELD, MAX_RATE_FACTOR, RUNNING,
    STOPPING,
};
