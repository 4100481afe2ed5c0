//! The run history at the command line: recording a finished result directory
//! (`pado run`, each `find-capacity` step, `pado merge` and the coordinators'
//! merges: never failing the run, one line on stderr when the database cannot be
//! used), `pado history` (list, `rebuild`), run references for `pado compare`,
//! and `pado trend`. Wiring only: the database is `pado_history`, the trend's
//! judgement `pado_report::trend`.

use std::path::{Path, PathBuf};

use pado_history::{History, Kind, Rebuilt, Recorded};

use crate::args::{HistoryArgs, HistoryListArgs, TrendArgs};
use crate::exit::{self, Failure};
use crate::out::{out, outln};

/// Where and how a command records its runs, checked before anything runs (the
/// rules are `pado_history::Recorder`'s; this prints its one line).
#[derive(Clone, Debug, Default)]
pub(crate) struct Recorder(pado_history::Recorder);

impl Recorder {
    /// From the flags; a malformed `--label` is invalid usage.
    pub(crate) fn from_args(a: &HistoryArgs) -> Result<Recorder, Failure> {
        pado_history::Recorder::new(a.no_history, a.history.clone(), &a.labels)
            .map(Recorder)
            .map_err(|e| Failure::invalid(e.to_string()))
    }

    /// This recorder with one more label (`knob=value` for an experiment's runs).
    pub(crate) fn with_label(&self, key: &str, value: &str) -> Recorder {
        Recorder(self.0.with_label(key, value))
    }

    /// Record the finished result directory `dir`; its id, or `None` (after one
    /// line on stderr) when it could not be: the result directory is what counts.
    pub(crate) fn record(&self, dir: &Path, kind: Kind) -> Option<i64> {
        match self.0.record(dir, kind) {
            Recorded::Id(id) => Some(id),
            Recorded::Skipped => None,
            Recorded::Failed(e) => {
                eprintln!("warning: history: {e} (the result directory is complete; this run is not recorded)");
                None
            }
        }
    }
}

fn open(dir: Option<&Path>) -> Result<History, Failure> {
    pado_history::db_path(dir)
        .and_then(|p| History::open(&p))
        .map_err(|e| Failure::other(format!("history: {e}")))
}

/// `pado history`: the runs the filters select, newest first.
pub(crate) fn list(a: &HistoryListArgs) -> Result<i32, Failure> {
    let filter =
        pado_history::Filter::from_flags(a.name.clone(), a.limit, &a.labels, a.since.as_deref())
            .map_err(|e| Failure::invalid(e.to_string()))?;
    let h = open(a.history.as_deref())?;
    let runs = h
        .list(&filter)
        .map_err(|e| Failure::other(format!("history: {e}")))?;
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&runs).unwrap_or_default()
        );
        return Ok(exit::OK);
    }
    if runs.is_empty() {
        outln!("no runs recorded in {} match", h.path().display());
        return Ok(exit::OK);
    }
    outln!(
        "{:>5}  {:<20} {:<24} {:>9} {:>9} {:>7} {:>9} {:>9} {:>4}  labels / result directory",
        "id",
        "name",
        "started",
        "requests",
        "req/s",
        "failed",
        "p95 ms",
        "p99 ms",
        "exit"
    );
    for r in &runs {
        let x = &r.record;
        let labels: Vec<String> = x
            .labels
            .iter()
            .map(|(k, v)| {
                if k == "commit" && v.len() > 12 {
                    format!("{k}={}", &v[..12])
                } else {
                    format!("{k}={v}")
                }
            })
            .collect();
        let kind = match x.kind {
            Kind::Run => "",
            Kind::CapacityStep => " [capacity step]",
            Kind::Merge => " [merged]",
        };
        let line = format!(
            "{:>5}  {} {:<24} {:>9} {:>9} {:>6.2}% {:>9} {:>9} {:>4}  {}{kind}",
            r.id,
            pado_base::text::cell(&x.name, 20),
            x.started_at,
            x.requests,
            pado_base::units::rate(x.rps),
            x.failed_rate * 100.0,
            pado_base::units::value(x.p95_ms),
            pado_base::units::value(x.p99_ms),
            x.exit_code,
            labels.join(" ")
        );
        // Names, labels and paths are the runs' own text: escaped for the terminal.
        outln!("{}", pado_base::text::terminal_safe_line(&line));
        outln!(
            "{:>5}  {}",
            "",
            pado_base::text::terminal_safe_line(&x.result_dir.display().to_string())
        );
    }
    Ok(exit::OK)
}

/// `pado history rebuild DIR...`: record each result directory; a directory that
/// cannot be is named and the others still recorded (exit 1 when any failed). A
/// file is skipped with a note: `pado history rebuild pado-results/*` also matches
/// what is kept beside the results (`pado trend`'s charts); only arguments that
/// are all files are an error.
pub(crate) fn rebuild(dirs: &[PathBuf], db: Option<&Path>) -> Result<i32, Failure> {
    if let Some(file) = pado_history::only_files(dirs) {
        return Err(Failure::other(format!(
            "{}: a file, not a result directory (give the directories `pado run` wrote, e.g. pado-results/*)",
            file.display()
        )));
    }
    let mut h = open(db)?;
    let (mut ok, mut failed, mut skipped) = (0, 0, 0);
    let mut files_skipped = 0;
    for d in dirs {
        let found = match pado_history::argument(d) {
            pado_history::Argument::File => {
                files_skipped += 1;
                eprintln!(
                    "  skipped {}: a file, not a result directory",
                    pado_base::text::terminal_safe_line(&d.display().to_string())
                );
                continue;
            }
            pado_history::Argument::NoResults => {
                eprintln!(
                    "error: {}: not a result directory and holds none",
                    d.display()
                );
                failed += 1;
                continue;
            }
            pado_history::Argument::Results(found) => found,
        };
        for r in found {
            match pado_history::rebuild_one(&mut h, &r)
                .map_err(|e| Failure::other(format!("history: {e}")))?
            {
                Rebuilt::Recorded { id, record } => {
                    ok += 1;
                    outln!(
                        "{}",
                        pado_base::text::terminal_safe_line(&format!(
                            "  run {id}: {} ({})",
                            record.name,
                            record.result_dir.display()
                        ))
                    );
                }
                Rebuilt::Segment { dir, reason } => {
                    skipped += 1;
                    eprintln!("  skipped {}: {reason}", dir.display());
                }
                Rebuilt::Failed(e) => {
                    failed += 1;
                    eprintln!("error: {e}");
                }
            }
        }
    }
    outln!(
        "recorded {ok} run{} in {}{}{}{}",
        if ok == 1 { "" } else { "s" },
        h.path().display(),
        if skipped > 0 {
            format!(", {skipped} segment(s) skipped")
        } else {
            String::new()
        },
        if files_skipped > 0 {
            format!(", {files_skipped} file(s) skipped")
        } else {
            String::new()
        },
        if failed > 0 {
            format!(", {failed} failed")
        } else {
            String::new()
        }
    );
    Ok(if failed > 0 { exit::ERROR } else { exit::OK })
}

/// `pado compare`'s arguments as result directories (`pado_history::resolve_compared`).
pub(crate) fn resolve_dirs(args: &[PathBuf], db: Option<&Path>) -> Result<Vec<PathBuf>, Failure> {
    pado_history::resolve_compared(args, db).map_err(|e| {
        if e.is_usage() {
            Failure::invalid(e.to_string())
        } else {
            Failure::other(e.to_string())
        }
    })
}

/// The baseline's earlier runs for the spread between runs in `pado compare`;
/// none (after one warning line) when the history cannot be read: the comparison
/// goes on with `--min-change` alone.
pub(crate) fn earlier_runs(
    dirs: &[PathBuf],
    db: Option<&Path>,
) -> Vec<pado_report::compare::EarlierRun> {
    pado_history::earlier_runs(dirs, db).unwrap_or_else(|e| {
        eprintln!("warning: history: {e}; changes are judged against --min-change alone");
        Vec::new()
    })
}

/// `pado trend NAME`: the metric across the latest runs, the verdict, the chart;
/// exit 99 when the latest run regressed.
pub(crate) fn trend(a: &TrendArgs) -> Result<i32, Failure> {
    use pado_report::trend::{self as tr, TrendMetric, TrendVerdict};
    let metric = TrendMetric::parse(&a.metric).ok_or_else(|| {
        Failure::invalid(format!("--metric {}: give {}", a.metric, tr::METRIC_WORDS))
    })?;
    // An experiment's directory: its points in knob order, read from their runs.
    let experiment = crate::experiment_cmd::trend_dirs(Path::new(&a.name))?;
    let query = pado_history::TrendQuery {
        name: &a.name,
        metric,
        step: a.step.as_deref(),
        limit: a.limit,
        baseline: a.baseline,
    };
    query.check().map_err(|e| Failure::invalid(e.to_string()))?;
    let (name, runs) = match &experiment {
        Some((name, dirs)) => (
            name.clone(),
            pado_history::trend_of_dirs(dirs, metric, query.step),
        ),
        None => {
            let h = open(a.history.as_deref())?;
            let runs = pado_history::trend_runs(&h, &query).map_err(|e| {
                if e.is_usage() {
                    Failure::invalid(e.to_string())
                } else {
                    Failure::other(e.to_string())
                }
            })?;
            (a.name.clone(), runs)
        }
    };
    for w in &runs.warnings {
        eprintln!("warning: {w}");
    }
    let t = tr::trend(
        &name,
        metric,
        query.step,
        runs.points,
        a.baseline,
        a.min_change,
    );
    let html = a
        .html
        .clone()
        .unwrap_or_else(|| pado_history::default_chart_path(&name, &a.metric));
    if let Some(parent) = html.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| Failure::other(format!("{}: {e}", parent.display())))?;
    }
    std::fs::write(&html, tr::render_trend_html(&t))
        .map_err(|e| Failure::other(format!("{}: {e}", html.display())))?;
    if a.json {
        outln!("{}", tr::render_trend_json(&t));
    } else {
        out!("{}", tr::render_trend(&t));
        outln!("  chart: {}", html.display());
    }
    Ok(if t.verdict == TrendVerdict::Regression {
        exit::THRESHOLD_FAILED
    } else {
        exit::OK
    })
}
