//! The run history at the command line: recording a finished result directory
//! (`pado run`, each `find-capacity` step, `pado merge` and the coordinators'
//! merges: never failing the run, one line on stderr when the database cannot be
//! used), `pado history` (list, `rebuild`), run references for `pado compare`,
//! and `pado trend`. Wiring only: the database is `pado_history`, the trend's
//! judgement `pado_report::trend`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pado_history::{History, HistoryError, Kind, RunRecord, RunRef};

use crate::args::{HistoryArgs, HistoryListArgs, TrendArgs};
use crate::exit::{self, Failure};
use crate::out::{out, outln};

/// Where and how a command records its runs, checked before anything runs.
#[derive(Clone, Debug, Default)]
pub(crate) struct Recorder {
    /// `--no-history`.
    off: bool,
    /// `--history DIR`.
    dir: Option<PathBuf>,
    /// `--label` pairs.
    labels: BTreeMap<String, String>,
    /// Whether the database already failed (and said so): a command recording
    /// many runs (`find-capacity`'s steps) prints its one line once.
    failed: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Recorder {
    /// From the flags; a malformed `--label` is invalid usage.
    pub(crate) fn from_args(a: &HistoryArgs) -> Result<Recorder, Failure> {
        let mut labels = BTreeMap::new();
        for l in &a.labels {
            let (k, v) =
                pado_history::parse_label(l).map_err(|e| Failure::invalid(e.to_string()))?;
            labels.insert(k, v);
        }
        Ok(Recorder {
            off: a.no_history,
            dir: a.history.clone(),
            labels,
            failed: Default::default(),
        })
    }

    /// Record the finished result directory `dir`; its id, or `None` (after one
    /// line on stderr) when it could not be: the result directory is what counts.
    pub(crate) fn record(&self, dir: &Path, kind: Kind) -> Option<i64> {
        use std::sync::atomic::Ordering;
        if self.off || self.failed.load(Ordering::Relaxed) {
            return None;
        }
        let mut labels = self.labels.clone();
        if !labels.contains_key("commit") {
            if let Some(c) = std::env::current_dir()
                .ok()
                .and_then(|d| pado_history::git_commit(&d))
            {
                labels.insert("commit".into(), c);
            }
        }
        let done = RunRecord::from_result_dir(dir, Some(kind), labels).and_then(|r| {
            let mut h = History::open(&pado_history::db_path(self.dir.as_deref())?)?;
            h.record(&r)
        });
        match done {
            Ok(id) => Some(id),
            Err(e) => {
                // A result directory's own problem concerns that run only; the
                // database's, every later one.
                if !matches!(e, HistoryError::ResultDir { .. }) {
                    self.failed.store(true, Ordering::Relaxed);
                }
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

fn now_ms() -> i64 {
    i64::try_from(time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000).unwrap_or(0)
}

/// `pado history`: the runs the filters select, newest first.
pub(crate) fn list(a: &HistoryListArgs) -> Result<i32, Failure> {
    let mut filter = pado_history::Filter {
        name: a.name.clone(),
        limit: Some(a.limit),
        ..Default::default()
    };
    for l in &a.labels {
        filter
            .labels
            .push(pado_history::parse_label(l).map_err(|e| Failure::invalid(e.to_string()))?);
    }
    if let Some(s) = &a.since {
        filter.since_unix_ms = Some(
            pado_history::parse_since(s, now_ms()).map_err(|e| Failure::invalid(e.to_string()))?,
        );
    }
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
            pado_metrics::fmt::cell(&x.name, 20),
            x.started_at,
            x.requests,
            pado_metrics::fmt::rate(x.rps),
            x.failed_rate * 100.0,
            pado_metrics::fmt::value(x.p95_ms),
            pado_metrics::fmt::value(x.p99_ms),
            x.exit_code,
            labels.join(" ")
        );
        // Names, labels and paths are the runs' own text: escaped for the terminal.
        outln!("{}", pado_metrics::fmt::terminal_safe_line(&line));
        outln!(
            "{:>5}  {}",
            "",
            pado_metrics::fmt::terminal_safe_line(&x.result_dir.display().to_string())
        );
    }
    Ok(exit::OK)
}

/// The result directories under `dir`: itself when it is one, else its
/// subdirectories that are (a find-capacity search, a coordinator's `merged/`).
fn result_dirs(dir: &Path) -> Vec<PathBuf> {
    if dir.join("run.json").is_file() {
        return vec![dir.to_path_buf()];
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.join("run.json").is_file())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// `pado history rebuild DIR...`: record each result directory; a directory that
/// cannot be is named and the others still recorded (exit 1 when any failed). A
/// file is skipped with a note: `pado history rebuild pado-results/*` also matches
/// what is kept beside the results (`pado trend`'s charts); only arguments that
/// are all files are an error.
pub(crate) fn rebuild(dirs: &[PathBuf], db: Option<&Path>) -> Result<i32, Failure> {
    let files: Vec<&PathBuf> = dirs.iter().filter(|d| d.is_file()).collect();
    if !dirs.is_empty() && files.len() == dirs.len() {
        return Err(Failure::other(format!(
            "{}: a file, not a result directory (give the directories `pado run` wrote, e.g. pado-results/*)",
            files[0].display()
        )));
    }
    let mut h = open(db)?;
    let (mut ok, mut failed, mut skipped) = (0, 0, 0);
    let mut files_skipped = 0;
    for d in dirs {
        if d.is_file() {
            files_skipped += 1;
            eprintln!(
                "  skipped {}: a file, not a result directory",
                pado_metrics::fmt::terminal_safe_line(&d.display().to_string())
            );
            continue;
        }
        let found = result_dirs(d);
        if found.is_empty() {
            eprintln!(
                "error: {}: not a result directory and holds none",
                d.display()
            );
            failed += 1;
        }
        for r in found {
            match RunRecord::from_result_dir(&r, None, BTreeMap::new()) {
                Ok(rec) => match h.record(&rec) {
                    Ok(id) => {
                        ok += 1;
                        outln!(
                            "{}",
                            pado_metrics::fmt::terminal_safe_line(&format!(
                                "  run {id}: {} ({})",
                                rec.name,
                                rec.result_dir.display()
                            ))
                        );
                    }
                    Err(e) => return Err(Failure::other(format!("history: {e}"))),
                },
                // A segment is recorded through its merge: not an error.
                Err(HistoryError::ResultDir { dir, reason }) if reason.contains("segment") => {
                    skipped += 1;
                    eprintln!("  skipped {}: {reason}", dir.display());
                }
                Err(e) => {
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

/// `pado compare`'s arguments as result directories: an existing directory as
/// given, else a run reference resolved in the history (`best` among runs of the
/// name of the other runs named). A recorded directory that is gone is an error
/// naming it.
pub(crate) fn resolve_dirs(args: &[PathBuf], db: Option<&Path>) -> Result<Vec<PathBuf>, Failure> {
    let refs: Vec<Option<RunRef>> = args
        .iter()
        .map(|a| {
            if a.is_dir() {
                None
            } else {
                a.to_str().and_then(RunRef::parse)
            }
        })
        .collect();
    if refs.iter().all(Option::is_none) {
        return Ok(args.to_vec());
    }
    let h = open(db)?;
    let resolve = |r: &RunRef, ctx: Option<&str>| -> Result<pado_history::Run, Failure> {
        let run = h
            .resolve(r, ctx)
            .map_err(|e| Failure::invalid(format!("history: {e}")))?;
        if !run.record.result_dir.join("run.json").is_file() {
            return Err(Failure::invalid(format!(
                "`{r}` is run {} ({}), whose result directory {} no longer exists",
                run.id,
                run.record.name,
                run.record.result_dir.display()
            )));
        }
        Ok(run)
    };
    // Names of the runs that are not `best`, for `best`'s context.
    let mut context: Option<String> = None;
    let mut out: Vec<Option<PathBuf>> = vec![None; args.len()];
    for (i, r) in refs.iter().enumerate() {
        match r {
            None => out[i] = Some(args[i].clone()),
            Some(RunRef::Best(None)) => {}
            Some(r) => {
                let run = resolve(r, None)?;
                context.get_or_insert(run.record.name.clone());
                out[i] = Some(run.record.result_dir);
            }
        }
    }
    for (i, r) in refs.iter().enumerate() {
        if let Some(r @ RunRef::Best(None)) = r {
            out[i] = Some(resolve(r, context.as_deref())?.record.result_dir);
        }
    }
    let dirs: Vec<PathBuf> = out.into_iter().map(Option::unwrap_or_default).collect();
    refuse_the_same_run_twice(args, &dirs)?;
    Ok(dirs)
}

/// Two references that name one run (`best` when the latest run is the best):
/// comparing a run with itself shows no change, which would read as "nothing
/// changed" where nothing was compared; refused (exit 2) with what each resolved to.
fn refuse_the_same_run_twice(args: &[PathBuf], dirs: &[PathBuf]) -> Result<(), Failure> {
    let key = |d: &PathBuf| std::fs::canonicalize(d).unwrap_or_else(|_| d.clone());
    for (j, b) in dirs.iter().enumerate() {
        if let Some(i) = dirs[..j].iter().position(|a| key(a) == key(b)) {
            return Err(Failure::invalid(format!(
                "`{}` and `{}` are the same run ({}): comparing a run with itself shows no change; compare it with another run, e.g. `pado compare last~1 last` (`pado history` lists the runs)",
                args[i].display(),
                args[j].display(),
                pado_metrics::fmt::terminal_safe(&b.display().to_string())
            )));
        }
    }
    Ok(())
}

/// Most earlier runs whose spread a comparison measures: the recent ones, as the
/// machine and the target are now.
const EARLIER_RUNS: usize = 10;

/// The recorded figures of the latest earlier runs of the baseline's test (same
/// name and scenario hash, not interrupted, none of the compared directories), for
/// the spread between runs in `pado compare`. Empty when there is no history yet
/// (none is created for this) or it cannot be read (one warning line: the
/// comparison goes on with `--min-change` alone).
pub(crate) fn earlier_runs(
    dirs: &[PathBuf],
    db: Option<&Path>,
) -> Vec<pado_report::compare::EarlierRun> {
    let Some(base) = dirs.first() else {
        return Vec::new();
    };
    let Ok(run_json) = std::fs::read(base.join("run.json")) else {
        return Vec::new();
    };
    let Ok(run): Result<pado_results::RunView, _> = serde_json::from_slice(&run_json) else {
        return Vec::new();
    };
    let Some(name) = run.name.as_deref() else {
        return Vec::new();
    };
    let hash = pado_history::scenario_hash(&run);
    let path = match pado_history::db_path(db) {
        Ok(p) if p.is_file() => p,
        _ => return Vec::new(),
    };
    let runs = match History::open(&path).and_then(|h| h.runs_named(name, None)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("warning: history: {e}; changes are judged against --min-change alone");
            return Vec::new();
        }
    };
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    };
    let mut out: Vec<pado_report::compare::EarlierRun> = runs
        .iter()
        .rev()
        .filter(|r| r.record.scenario_hash == hash && !r.record.interrupted)
        .filter(|r| !dirs.iter().any(|d| same(d, &r.record.result_dir)))
        .take(EARLIER_RUNS)
        .map(|r| {
            let rec = &r.record;
            rec.steps.iter().fold(
                pado_report::compare::EarlierRun::overall(
                    rec.p50_ms,
                    rec.p95_ms,
                    rec.p99_ms,
                    rec.rps,
                    rec.failed_rate * 100.0,
                ),
                |e, st| e.with_step(&st.step, st.rps, st.p95_ms),
            )
        })
        .collect();
    out.reverse();
    out
}

/// The recorded figure of `metric` (for a step, that step's).
fn recorded(
    r: &RunRecord,
    metric: pado_report::trend::TrendMetric,
    step: Option<&str>,
) -> Option<f64> {
    use pado_report::trend::TrendMetric as M;
    match step {
        None => match metric {
            M::P50 => r.p50_ms,
            M::P95 => r.p95_ms,
            M::P99 => r.p99_ms,
            M::Rps => Some(r.rps),
            M::Failed => Some(r.failed_rate * 100.0),
        },
        Some(s) => {
            let st = r.steps.iter().find(|x| x.step == s)?;
            match metric {
                M::P50 => st.p50_ms,
                M::P95 => st.p95_ms,
                M::P99 => st.p99_ms,
                M::Rps => Some(st.rps),
                M::Failed => Some(st.failed_rate * 100.0),
            }
        }
    }
}

/// The per-second values of a recorded run from its result directory, `None`
/// when the directory is gone or unreadable (said on stderr).
fn seconds_of(
    r: &RunRecord,
    metric: pado_report::trend::TrendMetric,
    step: Option<&str>,
) -> Option<Vec<f64>> {
    let dir = pado_results::ResultDir::open(&r.result_dir).ok()?;
    match pado_report::load(&dir) {
        Ok(run) => Some(pado_report::trend::per_second(&run, metric, step)),
        Err(e) => {
            eprintln!(
                "warning: {}: {e}; its recorded figure is used",
                r.result_dir.display()
            );
            None
        }
    }
}

/// A file name part from a test name: letters and digits kept (Hangul too),
/// anything else `-`.
fn file_part(s: &str) -> String {
    let p: String = s
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '-' })
        .collect();
    p.trim_matches('-').chars().take(60).collect()
}

/// `pado trend NAME`: the metric across the latest runs, the verdict, the chart;
/// exit 99 when the latest run regressed.
pub(crate) fn trend(a: &TrendArgs) -> Result<i32, Failure> {
    use pado_report::trend::{self as tr, TrendMetric, TrendVerdict};
    let metric = TrendMetric::parse(&a.metric).ok_or_else(|| {
        Failure::invalid(format!(
            "--metric {}: give p50, p95, p99, rps or failed",
            a.metric
        ))
    })?;
    if a.baseline == 0 {
        return Err(Failure::invalid("--baseline 0: give 1 or more runs"));
    }
    let h = open(a.history.as_deref())?;
    let runs = h
        .runs_named(&a.name, Some(a.limit.max(2)))
        .map_err(|e| Failure::other(format!("history: {e}")))?;
    if runs.is_empty() {
        return Err(Failure::invalid(format!(
            "no runs named `{}` in {} (`pado history` lists the names)",
            a.name,
            h.path().display()
        )));
    }
    let step = a.step.as_deref();
    if let Some(s) = step {
        if !runs
            .iter()
            .any(|r| r.record.steps.iter().any(|x| x.step == s))
        {
            return Err(Failure::invalid(format!(
                "--step {s}: no run of `{}` has this step",
                a.name
            )));
        }
    }
    // Only the runs the verdict reads need their seconds: the latest and the
    // `--baseline` runs before it that have a value (as `trend` picks them).
    let mut judged: Vec<usize> = (0..runs.len().saturating_sub(1))
        .rev()
        .filter(|&i| recorded(&runs[i].record, metric, step).is_some())
        .take(a.baseline)
        .collect();
    judged.push(runs.len() - 1);
    let points: Vec<tr::TrendPoint> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| tr::TrendPoint {
            id: r.id,
            started_at: r.record.started_at.clone(),
            labels: r
                .record
                .labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
            value: recorded(&r.record, metric, step),
            dir_gone: !r.record.result_dir.join("run.json").is_file(),
            seconds: if judged.contains(&i) {
                seconds_of(&r.record, metric, step)
            } else {
                None
            },
        })
        .collect();
    let t = tr::trend(&a.name, metric, step, points, a.baseline, a.min_change);
    let html = match &a.html {
        Some(p) => p.clone(),
        None => PathBuf::from("pado-results").join(format!(
            "trend-{}-{}.html",
            file_part(&a.name),
            a.metric
        )),
    };
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
