//! After a k6 script's run: its `handleSummary(data)` called as k6 calls it (with
//! k6's summary object, built from the result directory), what it returned written
//! as k6 writes it (`stdout` and `stderr` printed, any other key a file relative
//! to the working directory) and kept in the result directory too
//! (`handle_summary/`), and the script's own end (an exception in `setup()` or
//! `teardown()`, `exec.test.abort()`) said in the user's words with k6's exit code.

use std::io::Write;
use std::path::Path;

use pado_engine::script::ScriptRef;
use pado_engine::script_state::ScriptEnd;
use pado_report::k6_summary::K6SummaryOptions;

use crate::exit::Failure;

/// The result directory's folder for what `handleSummary` returned.
const KEPT: &str = "handle_summary";

/// Call the script's `handleSummary` on the run in `dir`: what it returned as
/// `stdout` (printed in place of pado's summary), `None` when the script has no
/// `handleSummary`, it returned no `stdout`, or it threw (said on stderr; k6 then
/// prints its own summary and the exit code stays the run's).
pub(crate) fn handle_summary(
    script: &ScriptRef,
    dir: &Path,
    summary: &K6SummaryOptions,
) -> Option<Vec<u8>> {
    let data = match pado_results::ResultDir::open(dir)
        .map_err(|e| e.to_string())
        .and_then(|rd| {
            let opts = K6SummaryOptions {
                no_color: !crate::out::color(),
                stdout_tty: std::io::IsTerminal::is_terminal(&std::io::stdout()),
                stderr_tty: std::io::IsTerminal::is_terminal(&std::io::stderr()),
                ..summary.clone()
            };
            pado_report::k6_summary::data_with(&rd, &opts).map_err(|e| e.to_string())
        }) {
        Ok(d) => d.to_string(),
        Err(e) => {
            eprintln!(
                "error: handleSummary: k6's summary object of {}: {e}",
                dir.display()
            );
            return None;
        }
    };
    let files = match script.0.handle_summary(&data)? {
        Ok(f) => f,
        Err(fault) => {
            eprintln!(
                "error: handleSummary threw (pado's summary is printed instead; the results are written):\n{}",
                script.0.describe_fault(&fault)
            );
            return None;
        }
    };
    let mut stdout = None;
    for (key, bytes) in files {
        match key.as_str() {
            "stdout" => stdout = Some(bytes.clone()),
            "stderr" => {
                let _ = std::io::stderr().write_all(&bytes);
            }
            path => {
                if let Err(e) = write_file(Path::new(path), &bytes) {
                    eprintln!("error: handleSummary: writing {path}: {e}");
                }
            }
        }
        let kept = dir.join(KEPT).join(kept_name(&key));
        if let Err(e) = write_file(&kept, &bytes) {
            eprintln!(
                "warning: handleSummary: keeping {key} in {}: {e}",
                kept.display()
            );
        }
    }
    stdout
}

/// k6's summary options of a run: `--summary-trend-stats` and
/// `--summary-time-unit` over a script's `summaryTrendStats` and
/// `summaryTimeUnit`, over k6's defaults; judged now, as k6 judges them before
/// the test starts (a bad statistic is k6's message, naming the script or flag).
pub(crate) fn options(
    scenario: &pado_session::prepare::Prepared,
    a: &crate::args::RunArgs,
) -> Result<K6SummaryOptions, Failure> {
    let mut o = K6SummaryOptions::default();
    if let Some(script) = &scenario.script {
        let from = script
            .0
            .summary_options()
            .map_err(|e| Failure::invalid(format!("{}: {e}", scenario.file)))?;
        if let Some(stats) = from.trend_stats {
            o.trend_stats = stats;
        }
        if let Some(unit) = from.time_unit {
            o.time_unit = unit;
        }
        o.check()
            .map_err(|e| Failure::invalid(format!("{}: options.{e}", scenario.file)))?;
    }
    if let Some(stats) = &a.summary_trend_stats {
        o.trend_stats = stats
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
    }
    if let Some(unit) = &a.summary_time_unit {
        o.time_unit = unit.trim().to_string();
    }
    o.check().map_err(|e| {
        // The flag's own name in the message, k6's words after it.
        Failure::invalid(
            e.to_string()
                .replacen("summaryTrendStats", "--summary-trend-stats", 1)
                .replacen("summaryTimeUnit", "--summary-time-unit", 1),
        )
    })?;
    Ok(o)
}

/// A script's own trends in pado's terminal summary with the statistics its
/// `summaryTrendStats` (or `--summary-trend-stats`) chose, as k6's summary
/// shows them: taken from k6's summary object of the run, so both agree. With
/// k6's default statistics nothing changes.
pub(crate) fn chosen_trend_stats(
    summary: &mut pado_report::Summary,
    dir: &Path,
    opts: &K6SummaryOptions,
) {
    if opts.trend_stats == K6SummaryOptions::default().trend_stats {
        return;
    }
    let data = match pado_results::ResultDir::open(dir)
        .map_err(|e| e.to_string())
        .and_then(|rd| pado_report::k6_summary::data_with(&rd, opts).map_err(|e| e.to_string()))
    {
        Ok(d) => d,
        Err(e) => {
            eprintln!("warning: summaryTrendStats: k6's summary object of the run: {e}");
            return;
        }
    };
    for (name, c) in summary.custom.iter_mut() {
        if c.kind != pado_metrics::CustomKind::Trend {
            continue;
        }
        if let Some(values) = data["metrics"][name.as_str()]["values"].as_object() {
            c.values = values
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                .collect();
        }
    }
}

/// Write `bytes` to `path`, making its folders.
fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, bytes)
}

/// A key as one file name inside the result directory (`reports/out.json` is
/// `reports_out.json`; never a path out of the folder).
fn kept_name(key: &str) -> String {
    let flat: String = key
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '_'
            } else {
                c
            }
        })
        .collect();
    let flat = flat.trim_start_matches('.');
    if flat.is_empty() {
        "_".to_string()
    } else {
        flat.to_string()
    }
}

/// Say how the script's own part ended, as k6 would: its exit code.
pub(crate) fn report_end(script: &ScriptRef, end: &ScriptEnd) -> i32 {
    match end {
        ScriptEnd::Setup(f) => eprintln!(
            "error: the script's setup() threw, so no iteration ran:\n{}",
            script.0.describe_fault(f)
        ),
        ScriptEnd::Teardown(f) => eprintln!(
            "error: the script's teardown() threw:\n{}",
            script.0.describe_fault(f)
        ),
        ScriptEnd::Aborted(reason) => {
            eprintln!("the script aborted the test (exec.test.abort): {reason}")
        }
    }
    end.exit_code()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_names_stay_inside_the_folder() {
        assert_eq!(kept_name("summary.json"), "summary.json");
        assert_eq!(kept_name("reports/out.json"), "reports_out.json");
        assert_eq!(kept_name("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(kept_name("/abs/파도.txt"), "_abs_파도.txt");
        assert_eq!(kept_name(".."), "_");
    }
}
