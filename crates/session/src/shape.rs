//! The load shape the command line asks for, if any: on a scenario file one lone
//! parameter (`--vus`, `--duration` or `--rate`) adjusts the file's own load model,
//! a complete shape (`--vus` with `--duration`, `--rate` with `--duration`,
//! `--stages`, ...) replaces it; quick mode has no model of its own, so defaults
//! (10 VUs, 10 s) fill the shape. Every refusal names its flag.

use pado_scenario::quick::{parse_stages, parse_step_ramp};
use pado_scenario::{Dur, LoadShape};

use crate::SessionError;

/// The load flags as given (durations already read).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShapeFlags<'a> {
    /// `--vus`.
    pub vus: Option<u32>,
    /// `--duration`.
    pub duration: Option<Dur>,
    /// `--rate` (iterations per second).
    pub rate: Option<f64>,
    /// `--stages`, as written (`30s:10,1m:10`).
    pub stages: Option<&'a str>,
    /// `--step-ramp`, as written.
    pub step_ramp: Option<&'a str>,
    /// `--iterations`.
    pub iterations: Option<u64>,
}

/// The shape `f` asks for on a scenario file (`is_file`) or in quick mode; `None`:
/// the file's own.
pub fn load_shape(f: &ShapeFlags<'_>, is_file: bool) -> Result<Option<LoadShape>, SessionError> {
    let invalid = |m: String| SessionError::Invalid(m);
    if let Some(r) = f.rate.filter(|r| !(r.is_finite() && *r > 0.0)) {
        return Err(invalid(format!("--rate {r}: must be more than 0")));
    }
    if f.vus == Some(0) {
        return Err(invalid("--vus: must be at least 1".into()));
    }
    let lone = [f.vus.is_some(), f.duration.is_some(), f.rate.is_some()]
        .iter()
        .filter(|x| **x)
        .count()
        == 1;
    let whole = f.stages.is_none() && f.step_ramp.is_none() && f.iterations.is_none();
    Ok(if is_file && lone && whole {
        Some(LoadShape::Adjust {
            vus: f.vus,
            duration: f.duration,
            rate: f.rate,
        })
    } else if let Some(r) = f.rate {
        Some(LoadShape::Rate {
            rate: r,
            duration: f.duration.unwrap_or(Dur::from_secs(10)),
        })
    } else if let Some(s) = f.stages {
        if f.duration.is_some() {
            return Err(invalid(
                "--duration does not go with --stages: the stages set the length".into(),
            ));
        }
        Some(LoadShape::Stages(
            parse_stages(s).map_err(|e| invalid(format!("--stages: {e}")))?,
        ))
    } else if let Some(s) = f.step_ramp {
        Some(LoadShape::StepRamp(
            parse_step_ramp(s).map_err(|e| invalid(format!("--step-ramp: {e}")))?,
            f.duration,
        ))
    } else if let Some(n) = f.iterations {
        if n == 0 {
            return Err(invalid("--iterations: must be at least 1".into()));
        }
        Some(LoadShape::Iterations {
            vus: f.vus.unwrap_or(1),
            iterations: n,
        })
    } else if f.vus.is_some() || f.duration.is_some() {
        Some(LoadShape::Vus {
            vus: f.vus.unwrap_or(10),
            duration: f.duration.unwrap_or(Dur::from_secs(10)),
        })
    } else {
        None
    })
}

#[cfg(test)]
mod tests;
