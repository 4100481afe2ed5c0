//! What `pado compare` compares: its arguments resolved to result directories
//! (an existing directory as given, else a run reference looked up in the
//! history), and the baseline's earlier runs whose spread sets how large a change
//! must be to count. Typed results; the command line prints.

use std::path::{Path, PathBuf};

use pado_report::compare::EarlierRun;

use crate::{db_path, scenario_hash, History, HistoryError, Run, RunRef};

/// Most earlier runs whose spread a comparison measures: the recent ones, as the
/// machine and the target are now.
pub const EARLIER_RUNS: usize = 10;

/// Why `pado compare`'s arguments could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum CompareRefError {
    /// The history database could not be opened (a problem of the machine, not of
    /// the arguments).
    #[error("history: {0}")]
    Open(HistoryError),
    /// A reference matched no recorded run.
    #[error("history: {0}")]
    Resolve(HistoryError),
    /// A reference names a run whose result directory was removed since.
    #[error("`{reference}` is run {id} ({name}), whose result directory {} no longer exists", dir.display())]
    Gone {
        /// The reference as given.
        reference: String,
        /// The run it named.
        id: i64,
        /// That run's test name.
        name: String,
        /// Its recorded directory.
        dir: PathBuf,
    },
    /// Two arguments name one run: comparing a run with itself shows no change,
    /// which would read as "nothing changed" where nothing was compared.
    #[error("`{}` and `{}` are the same run ({}): comparing a run with itself shows no change; compare it with another run, e.g. `pado compare last~1 last` (`pado history` lists the runs)", first.display(), second.display(), pado_base::text::terminal_safe(&dir.display().to_string()))]
    SameRun {
        /// The first argument.
        first: PathBuf,
        /// The later argument naming the same run.
        second: PathBuf,
        /// The directory both resolved to.
        dir: PathBuf,
    },
}

impl CompareRefError {
    /// Whether the arguments are at fault (invalid usage) rather than the machine.
    pub fn is_usage(&self) -> bool {
        !matches!(self, CompareRefError::Open(_))
    }
}

/// `pado compare`'s arguments as result directories: an existing directory as
/// given, else a run reference resolved in the history database of `db` (`best`:
/// the best of the other runs of the name the other references name, never one
/// of them). The database is opened only
/// when some argument is a reference.
pub fn resolve_compared(
    args: &[PathBuf],
    db: Option<&Path>,
) -> Result<Vec<PathBuf>, CompareRefError> {
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
    let h = db_path(db)
        .and_then(|p| History::open(&p))
        .map_err(CompareRefError::Open)?;
    let resolve = |r: &RunRef, ctx: Option<&str>, except: &[i64]| -> Result<Run, CompareRefError> {
        let run = h
            .resolve_except(r, ctx, except)
            .map_err(CompareRefError::Resolve)?;
        if !run.record.result_dir.join("run.json").is_file() {
            return Err(CompareRefError::Gone {
                reference: r.to_string(),
                id: run.id,
                name: run.record.name,
                dir: run.record.result_dir,
            });
        }
        Ok(run)
    };
    // Names of the runs that are not `best`, for `best`'s context, and their
    // ids: `best` is the best of the other runs.
    let mut context: Option<String> = None;
    let mut named: Vec<i64> = Vec::new();
    let mut out: Vec<Option<PathBuf>> = vec![None; args.len()];
    for (i, r) in refs.iter().enumerate() {
        match r {
            None => out[i] = Some(args[i].clone()),
            Some(RunRef::Best(None)) => {}
            Some(r) => {
                let run = resolve(r, None, &[])?;
                context.get_or_insert(run.record.name.clone());
                named.push(run.id);
                out[i] = Some(run.record.result_dir);
            }
        }
    }
    for (i, r) in refs.iter().enumerate() {
        if let Some(r @ RunRef::Best(None)) = r {
            out[i] = Some(resolve(r, context.as_deref(), &named)?.record.result_dir);
        }
    }
    let dirs: Vec<PathBuf> = out.into_iter().map(Option::unwrap_or_default).collect();
    refuse_the_same_run_twice(args, &dirs)?;
    Ok(dirs)
}

/// Two references that name one run (`last last`, an id and the directory it
/// names).
fn refuse_the_same_run_twice(args: &[PathBuf], dirs: &[PathBuf]) -> Result<(), CompareRefError> {
    let key = |d: &PathBuf| std::fs::canonicalize(d).unwrap_or_else(|_| d.clone());
    for (j, b) in dirs.iter().enumerate() {
        if let Some(i) = dirs[..j].iter().position(|a| key(a) == key(b)) {
            return Err(CompareRefError::SameRun {
                first: args[i].clone(),
                second: args[j].clone(),
                dir: b.clone(),
            });
        }
    }
    Ok(())
}

/// The recorded runs whose spread `pado compare` measures: the latest
/// [`EARLIER_RUNS`] earlier runs of the baseline's test (same name and scenario
/// hash, not interrupted, none of the compared directories), oldest first. Empty
/// when the baseline cannot be read or there is no history yet (none is created
/// for this); an `Err` when the history exists but cannot be read.
pub fn earlier_records(dirs: &[PathBuf], db: Option<&Path>) -> Result<Vec<Run>, HistoryError> {
    let Some(base) = dirs.first() else {
        return Ok(Vec::new());
    };
    let Ok(run_json) = std::fs::read(base.join("run.json")) else {
        return Ok(Vec::new());
    };
    let Ok(run): Result<pado_results::RunView, _> = serde_json::from_slice(&run_json) else {
        return Ok(Vec::new());
    };
    let Some(name) = run.name.as_deref() else {
        return Ok(Vec::new());
    };
    let hash = scenario_hash(&run);
    let path = match db_path(db) {
        Ok(p) if p.is_file() => p,
        _ => return Ok(Vec::new()),
    };
    let runs = History::open(&path).and_then(|h| h.runs_named(name, None))?;
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    };
    let mut out: Vec<Run> = runs
        .into_iter()
        .rev()
        .filter(|r| r.record.scenario_hash == hash && !r.record.interrupted)
        .filter(|r| !dirs.iter().any(|d| same(d, &r.record.result_dir)))
        .take(EARLIER_RUNS)
        .collect();
    out.reverse();
    Ok(out)
}

/// [`earlier_records`] as the figures the comparison's noise floor reads.
pub fn earlier_runs(dirs: &[PathBuf], db: Option<&Path>) -> Result<Vec<EarlierRun>, HistoryError> {
    Ok(earlier_records(dirs, db)?
        .iter()
        .map(|r| {
            let rec = &r.record;
            let mut e = EarlierRun::overall(
                rec.p50_ms,
                rec.p95_ms,
                rec.p99_ms,
                rec.rps,
                rec.failed_rate * 100.0,
            );
            if let Some(l) = &rec.llm {
                e = e.with_llm(None, &l.figures);
            }
            rec.steps.iter().fold(e, |e, st| {
                let e = e.with_step(&st.step, st.rps, st.p95_ms);
                match &st.llm {
                    Some(l) => e.with_llm(Some(&st.step), &l.figures),
                    None => e,
                }
            })
        })
        .collect())
}

#[cfg(test)]
mod tests;
