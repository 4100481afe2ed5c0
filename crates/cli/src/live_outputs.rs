//! Live outputs (`--output KIND=URL`, the file's `outputs:`): which stores, and the
//! end-of-run report (the labels of a run's series are the session's). The streaming itself is
//! `pado_outputs`: the run's sink only hands it each closed second.

use pado_outputs::spec::{env_url_ref, ENV_URL_PREFIX};
use pado_outputs::OutputSpec;

use crate::config::Prepared;
use crate::exit::Failure;

/// Whether `name` can be an environment variable's name (letters, digits and `_`,
/// not starting with a digit).
fn is_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An `--output KIND=env:VAR` checked for shape: a kind pado writes and a
/// variable's name. `Ok(None)` when `flag` is not of that form.
pub(crate) fn check_env_url_ref(flag: &str) -> Result<Option<(&str, &str)>, Failure> {
    let Some((kind, var)) = env_url_ref(flag) else {
        return Ok(None);
    };
    if pado_outputs::spec::Kind::parse(kind).is_none() {
        return Err(Failure::invalid(format!(
            "--output {flag}: unknown output kind `{kind}` (kinds: prometheus, influxdb, otlp)"
        )));
    }
    if !is_env_name(var) {
        return Err(Failure::invalid(format!(
            "--output {flag}: after `{ENV_URL_PREFIX}` give the name of an environment variable holding the URL (letters, digits, _)"
        )));
    }
    Ok(Some((kind, var)))
}

/// The `KIND=URL` an `--output` flag stands for: itself, or for `KIND=env:VAR`
/// the URL in variable `VAR` (never printed: errors about it show it masked).
fn resolved_flag(flag: &str) -> Result<String, Failure> {
    let Some((kind, var)) = check_env_url_ref(flag)? else {
        return Ok(flag.to_string());
    };
    match std::env::var(var) {
        Ok(url) if !url.trim().is_empty() => Ok(format!("{kind}={}", url.trim())),
        _ => Err(Failure::invalid(format!(
            "--output {flag}: environment variable {var} is not set (it holds the output's URL)"
        ))),
    }
}

/// The raw per-request output among the `--output` flags (`raw-json=FILE`,
/// `raw-csv=FILE`, k6's `json=FILE` and `csv=FILE`), and the flags left for live
/// outputs.
pub(crate) fn raw_spec(
    flags: &[String],
) -> Result<(Option<pado_outputs::raw::RawSpec>, Vec<String>), Failure> {
    let mut raw: Option<pado_outputs::raw::RawSpec> = None;
    let mut live = Vec::new();
    for f in flags {
        match pado_outputs::raw::RawSpec::parse_flag(f) {
            None => live.push(f.clone()),
            Some(Err(e)) => return Err(Failure::invalid(format!("--output {f}: {e}"))),
            Some(Ok(spec)) => {
                if let Some(first) = &raw {
                    let e = pado_outputs::raw::RawSpecError::Twice(first.label(), spec.label());
                    return Err(Failure::invalid(format!("--output {f}: {e}")));
                }
                raw = Some(spec);
            }
        }
    }
    Ok((raw, live))
}

/// The line for the terminal about the raw output, after the summary.
pub(crate) fn raw_line(r: &pado_metrics::RawOutputMeta) -> String {
    let mut l = format!(
        "  output {} {}: {} requests written, {} dropped",
        r.kind, r.path, r.lines_written, r.lines_dropped
    );
    if let Some(e) = &r.error {
        l.push_str(&format!(" (write error: {e})"));
    }
    l
}

/// The outputs of a run: the file's `outputs:` (errors at their line), then the
/// `--output` flags (`KIND=env:VAR` read from the environment). `resolve_env`
/// false is for a coordinator, which writes to no output itself: its
/// `KIND=env:VAR` flags are checked for shape only and left out, the variable
/// being the generators' to have.
pub(crate) fn specs(
    prep: &Prepared,
    flags: &[String],
    resolve_env: bool,
) -> Result<Vec<OutputSpec>, Failure> {
    let mut out = Vec::new();
    for (i, o) in prep.config.outputs.iter().enumerate() {
        let spec =
            OutputSpec::new(o.kind.as_str(), &o.url, o.token_env.as_deref()).map_err(|e| {
                Failure::invalid(format!(
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
            Failure::invalid(format!("--output {shown}{named}: {e}"))
        })?);
    }
    // InfluxDB v2's token: missing is an error now, before anything is sent (its
    // value is read again when the run starts and never shown).
    for o in &out {
        if o.influx_api() == Some(pado_outputs::spec::InfluxApi::V2)
            && std::env::var(o.token_var()).map_or(true, |t| t.is_empty())
        {
            return Err(Failure::invalid(format!(
                "output {}: the InfluxDB v2 API needs a token: set environment variable {}",
                o.label(),
                o.token_var()
            )));
        }
    }
    Ok(out)
}

/// One line per output for the terminal, after the summary.
pub(crate) fn lines(reports: &[pado_outputs::OutputReport]) -> Vec<String> {
    reports
        .iter()
        .map(|r| {
            let mut l = format!(
                "  output {} {}: {} seconds sent, {} dropped",
                r.kind, r.url, r.seconds_sent, r.seconds_dropped
            );
            if let Some(e) = &r.last_error {
                l.push_str(&format!(" (last error: {e})"));
            }
            l
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_url_may_come_from_the_environment_and_is_never_shown() {
        let var = "PADO_TEST_OUTPUT_URL_LIVE_OUTPUTS";
        std::env::set_var(var, "http://me:s3cr3t@127.0.0.1:9090/api/v1/write");
        let flag = format!("prometheus=env:{var}");
        assert_eq!(
            resolved_flag(&flag).unwrap(),
            "prometheus=http://me:s3cr3t@127.0.0.1:9090/api/v1/write"
        );
        // A plain URL is itself.
        let plain = "otlp=http://127.0.0.1:4318/v1/metrics";
        assert_eq!(resolved_flag(plain).unwrap(), plain);
        // Unset, or no variable's name: an error naming the flag, never a value.
        let unset = "prometheus=env:PADO_TEST_OUTPUT_URL_NEVER_SET";
        let e = resolved_flag(unset).unwrap_err().message;
        assert!(
            e.contains("PADO_TEST_OUTPUT_URL_NEVER_SET is not set"),
            "{e}"
        );
        for bad in ["prometheus=env:", "prometheus=env:1X", "prometheus=env:A-B"] {
            let e = check_env_url_ref(bad).unwrap_err().message;
            assert!(e.contains("name of an environment variable"), "{bad}: {e}");
        }
        let e = check_env_url_ref(&format!("graphite=env:{var}"))
            .unwrap_err()
            .message;
        assert!(e.contains("unknown output kind `graphite`"), "{e}");
        assert!(!e.contains("s3cr3t"));
        assert_eq!(check_env_url_ref(plain).unwrap(), None);
    }
}
