//! Which live outputs a run writes to: the scenario's `outputs:` (errors at their
//! line), then the `--output` flags, where `KIND=env:VAR` reads the URL from an
//! environment variable (never shown: errors about it show it masked) and the raw
//! per-request file (`raw-json=FILE`, `raw-csv=FILE`, k6's `json=` and `csv=`) is
//! told apart from the live stores. Checked before anything is sent: an InfluxDB v2
//! output without its token is an error now, not a run that sends nothing.

use pado_outputs::spec::{env_url_ref, ENV_URL_PREFIX};
use pado_outputs::OutputSpec;

use crate::prepare::Prepared;
use crate::SessionError;

/// Whether `name` can be an environment variable's name (letters, digits and `_`,
/// not starting with a digit).
fn is_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An `--output KIND=env:VAR` checked for shape: a kind pado writes and a
/// variable's name. `Ok(None)` when `flag` is not of that form.
pub fn check_env_url_ref(flag: &str) -> Result<Option<(&str, &str)>, SessionError> {
    let Some((kind, var)) = env_url_ref(flag) else {
        return Ok(None);
    };
    if pado_outputs::spec::Kind::parse(kind).is_none() {
        return Err(SessionError::Invalid(format!(
            "--output {flag}: unknown output kind `{kind}` (kinds: prometheus, influxdb, otlp)"
        )));
    }
    if !is_env_name(var) {
        return Err(SessionError::Invalid(format!(
            "--output {flag}: after `{ENV_URL_PREFIX}` give the name of an environment variable holding the URL (letters, digits, _)"
        )));
    }
    Ok(Some((kind, var)))
}

/// The `KIND=URL` an `--output` flag stands for: itself, or for `KIND=env:VAR`
/// the URL in variable `VAR` (never printed: errors about it show it masked).
fn resolved_flag(flag: &str) -> Result<String, SessionError> {
    let Some((kind, var)) = check_env_url_ref(flag)? else {
        return Ok(flag.to_string());
    };
    match std::env::var(var) {
        Ok(url) if !url.trim().is_empty() => Ok(format!("{kind}={}", url.trim())),
        _ => Err(SessionError::Invalid(format!(
            "--output {flag}: environment variable {var} is not set (it holds the output's URL)"
        ))),
    }
}

/// The raw per-request output among the `--output` flags (`raw-json=FILE`,
/// `raw-csv=FILE`, k6's `json=FILE` and `csv=FILE`), and the flags left for live
/// outputs.
pub fn raw_spec(
    flags: &[String],
) -> Result<(Option<pado_outputs::raw::RawSpec>, Vec<String>), SessionError> {
    let mut raw: Option<pado_outputs::raw::RawSpec> = None;
    let mut live = Vec::new();
    for f in flags {
        match pado_outputs::raw::RawSpec::parse_flag(f) {
            None => live.push(f.clone()),
            Some(Err(e)) => return Err(SessionError::Invalid(format!("--output {f}: {e}"))),
            Some(Ok(spec)) => {
                if let Some(first) = &raw {
                    let e = pado_outputs::raw::RawSpecError::Twice(first.label(), spec.label());
                    return Err(SessionError::Invalid(format!("--output {f}: {e}")));
                }
                raw = Some(spec);
            }
        }
    }
    Ok((raw, live))
}

/// The outputs of a run: the file's `outputs:` (errors at their line), then the
/// `--output` flags (`KIND=env:VAR` read from the environment). `resolve_env`
/// false is for a coordinator, which writes to no output itself: its
/// `KIND=env:VAR` flags are checked for shape only and left out, the variable
/// being the generators' to have.
pub fn specs(
    prep: &Prepared,
    flags: &[String],
    resolve_env: bool,
) -> Result<Vec<OutputSpec>, SessionError> {
    let mut out = Vec::new();
    for (i, o) in prep.config.outputs.iter().enumerate() {
        let spec =
            OutputSpec::new(o.kind.as_str(), &o.url, o.token_env.as_deref()).map_err(|e| {
                SessionError::Invalid(format!(
                    "{}: outputs[{i}]: {e}",
                    prep.at(&format!("outputs[{i}]"))
                ))
            })?;
        out.push(spec);
    }
    for f in flags {
        if !resolve_env && check_env_url_ref(f)?.is_some() {
            continue;
        }
        let resolved = resolved_flag(f)?;
        out.push(OutputSpec::parse_flag(&resolved).map_err(|e| {
            let shown = pado_outputs::spec::masked(&resolved);
            let named = if resolved == *f {
                String::new()
            } else {
                format!(" (from {f})")
            };
            SessionError::Invalid(format!("--output {shown}{named}: {e}"))
        })?);
    }
    // InfluxDB v2's token: missing is an error now, before anything is sent (its
    // value is read again when the run starts and never shown).
    for o in &out {
        if o.influx_api() == Some(pado_outputs::spec::InfluxApi::V2)
            && std::env::var(o.token_var()).map_or(true, |t| t.is_empty())
        {
            return Err(SessionError::Invalid(format!(
                "output {}: the InfluxDB v2 API needs a token: set environment variable {}",
                o.label(),
                o.token_var()
            )));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
