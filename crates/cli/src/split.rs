//! One test on many generators, the command line's part: `--segment` and
//! `--segment-weights` checked into an engine [`Segment`], `--start-at` into a
//! time, and `pado setup` printed. What they mean (the plan's fingerprint, the
//! setup's variables, the wait for the agreed start) is [`pado_session::split`]'s.

use std::time::SystemTime;

use pado_engine::executor::segment::Segment;

use crate::config::{LoadFlags as _, LoadSpec};
use crate::exit::{self, Failure};

/// How a run takes part in a split test (all `None`: a whole run started at once).
#[derive(Clone, Debug, Default)]
pub(crate) struct Split {
    /// `--segment` with its weights.
    pub segment: Option<Segment>,
    /// Fingerprint of the whole test (with `--segment`).
    pub plan_id: Option<String>,
    /// `--start-at`, resolved.
    pub start_at: Option<SystemTime>,
    /// `--setup-vars`, read: (name, value) in the file's order.
    pub setup_vars: Option<Vec<(String, Vec<u8>)>>,
    /// `--control-socket`: where the generator that started this run hands it
    /// changes of the load ([`crate::control_socket`]).
    pub control_socket: Option<std::path::PathBuf>,
}

/// `--segment` and `--segment-weights` into a [`Segment`]
/// ([`pado_session::split::segment`]).
pub(crate) fn segment(flag: &str, weights: Option<&str>) -> Result<Segment, Failure> {
    Ok(pado_session::split::segment(flag, weights)?)
}

/// `--start-at` (`pado_scenario::start_at`'s one rule for every command).
pub(crate) fn start_at(v: &str, now: SystemTime) -> Result<SystemTime, Failure> {
    pado_scenario::start_at::parse_start_at(v, now).map_err(|e| Failure::invalid(e.to_string()))
}

/// `pado setup`: run only the global setup and write its variables.
pub(crate) fn setup_cmd(a: &crate::args::SetupArgs) -> Result<i32, Failure> {
    let spec = LoadSpec::from_load_args(&a.load)?;
    let setup = pado_session::split::run_setup(&spec.load()?)?;
    std::fs::write(&a.out, &setup.json)
        .map_err(|e| Failure::other(format!("{}: {e}", a.out.display())))?;
    if !a.quiet {
        eprintln!(
            "setup: {} request{}, {} failed; {} variable{} written to {}",
            setup.requests,
            if setup.requests == 1 { "" } else { "s" },
            setup.failed,
            setup.vars,
            if setup.vars == 1 { "" } else { "s" },
            a.out.display()
        );
    }
    if let Some(e) = setup.incomplete() {
        return Err(e.into());
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests;
