//! Fault windows a killed run left open: written down while they are open, put back
//! by the next pado.
//!
//! While a run has a fault window with an `undo` open, [`RunLedger`] keeps
//! `open-faults.json` in its result directory and a copy with the undo as written
//! (never an environment value) in the user's state directory
//! (`$XDG_STATE_HOME/pado/open-faults/`, else `~/.local/state/pado/open-faults/`).
//! A run that ends in any way pado controls removes both once the undo has run.
//!
//! A run killed in between (`kill -9`, the OOM killer, a second Ctrl-C) leaves them.
//! The next `pado run`, or `pado events undo-open`, finds the records whose process
//! is gone ([`recover`]): it says which fault of which run was left open, renders
//! the undo again from today's environment, runs it bounded by the event's timeout,
//! and appends the outcome to that run's `events.jsonl`, where `pado report` reads
//! it. Running the undo of a scenario the user already ran is what they asked for;
//! a record someone else could have written is not: a record (or its directory)
//! not owned by the user, open to others' writing or reading, or not a plain file
//! is named and left alone.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use pado_engine::events::{EventSpec, WindowLedger};
use pado_results::events::{ActionRecord, EventRecord, ExpectRecord, LeftOpen, Outcome};
use pado_results::open_faults::{
    read_record, remove_record, write_record, OpenFaults, OpenWindow, OPEN_FAULTS_FILE,
    OPEN_FAULTS_FORMAT,
};

use pado_base::stamp::utc_ms;

use crate::config::LedgerFactory;
use crate::notice;

/// The per-user directory of open-fault records: `$XDG_STATE_HOME/pado/open-faults`
/// (an absolute `XDG_STATE_HOME` only, as the XDG specification says), else
/// `$HOME/.local/state/pado/open-faults`; `None` without either.
pub fn state_dir() -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let base = xdg.or_else(|| {
        std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .map(|h| h.join(".local/state"))
    })?;
    Some(base.join("pado").join("open-faults"))
}

/// When process `pid` started (clock ticks after boot, `/proc/PID/stat` field 22);
/// `None` when there is no such process.
fn process_start(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces and `)`.
    let rest = &stat[stat.rfind(')')? + 1..];
    // Field 3 is the first after the name; field 22 is the 20th from there.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// This boot's id: a record from an earlier boot belongs to a process that is gone.
fn boot_id() -> String {
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Whether the process a record names still runs: same boot, same pid, same start
/// time (a pid reused by another program does not count).
fn owner_alive(f: &OpenFaults) -> bool {
    f.boot_id == boot_id() && process_start(f.pid) == Some(f.pid_start)
}

/// The current user's effective uid.
fn euid() -> u32 {
    // SAFETY: geteuid(2) cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

/// Why a path (a record or its directory) must not be trusted: not owned by the
/// current user, open to others, or not what it should be. `None` when it is safe.
fn unsafe_because(path: &Path, dir: bool) -> Option<String> {
    let m = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) => return Some(format!("cannot be read: {e}")),
    };
    let kind_ok = if dir {
        m.file_type().is_dir()
    } else {
        m.file_type().is_file()
    };
    if !kind_ok {
        return Some(if dir {
            "is not a directory (a link is not followed)".into()
        } else {
            "is not a plain file (a link is not followed)".into()
        });
    }
    if m.uid() != euid() {
        return Some(format!(
            "is owned by uid {}, not by you (uid {})",
            m.uid(),
            euid()
        ));
    }
    let open = if dir { 0o022 } else { 0o077 };
    if m.mode() & open != 0 {
        return Some(format!(
            "has mode {:o}: others may {}",
            m.mode() & 0o777,
            if dir {
                "write in it"
            } else {
                "read or write it"
            }
        ));
    }
    None
}

/// The ledger factory a run takes ([`crate::RunConfig::ledger`]): each run's
/// [`RunLedger`], keeping its copy with the undos in `state_dir` (see
/// [`state_dir`]; `None` when there is none, then only the result directory's copy
/// is kept and a warning says so once a window opens).
pub fn ledger_factory(state_dir: Option<PathBuf>) -> LedgerFactory {
    Box::new(move |name, started_at, dir, target| {
        RunLedger::new(name, started_at, dir, target, state_dir) as Arc<dyn WindowLedger>
    })
}

/// The record a run keeps of its open windows, in both places, rewritten whenever
/// a window opens or closes and removed when none is left.
pub struct RunLedger {
    faults: Mutex<OpenFaults>,
    result_file: PathBuf,
    state_file: Option<PathBuf>,
    target: Option<String>,
    /// The first failure to write, said once.
    warned: Mutex<bool>,
}

impl RunLedger {
    /// A ledger for the run `name` started at `started_at` writing `result_dir`,
    /// whose events join relative URLs to `target`, keeping its copy with the undos
    /// in `state_dir` (see [`state_dir`]).
    pub fn new(
        name: &str,
        started_at: &str,
        result_dir: &Path,
        target: Option<String>,
        state_dir: Option<PathBuf>,
    ) -> Arc<RunLedger> {
        let pid = std::process::id();
        let result_dir = fs::canonicalize(result_dir).unwrap_or_else(|_| result_dir.into());
        let state_file = state_dir.map(|d| d.join(format!("{pid}-{OPEN_FAULTS_FILE}")));
        Arc::new(RunLedger {
            faults: Mutex::new(OpenFaults {
                format: OPEN_FAULTS_FORMAT.into(),
                run_name: name.into(),
                result_dir: result_dir.display().to_string(),
                run_started_at: started_at.into(),
                pid,
                pid_start: process_start(pid).unwrap_or(0),
                boot_id: boot_id(),
                windows: Vec::new(),
            }),
            result_file: result_dir.join(OPEN_FAULTS_FILE),
            state_file,
            target,
            warned: Mutex::new(false),
        })
    }

    fn save(&self, f: &OpenFaults) {
        let mut errors = Vec::new();
        if f.windows.is_empty() {
            if let Some(p) = &self.state_file {
                errors.extend(remove_record(p).err());
            }
            errors.extend(remove_record(&self.result_file).err());
        } else {
            match &self.state_file {
                Some(p) => {
                    let dir_ok = p.parent().is_some_and(|d| {
                        fs::DirBuilder::new()
                            .recursive(true)
                            .mode(0o700)
                            .create(d)
                            .is_ok()
                    });
                    if dir_ok {
                        errors.extend(write_record(p, f).err());
                    } else {
                        errors.push(pado_results::ResultError::Io {
                            path: p.clone(),
                            source: std::io::Error::other("its directory cannot be created"),
                        });
                    }
                }
                None => errors.push(pado_results::ResultError::Io {
                    path: PathBuf::from("$XDG_STATE_HOME"),
                    source: std::io::Error::other("neither XDG_STATE_HOME nor HOME is set"),
                }),
            }
            errors.extend(write_record(&self.result_file, &f.without_undos()).err());
        }
        if let Some(e) = errors.first() {
            let mut w = pado_base::lock(&self.warned);
            if !*w {
                *w = true;
                notice::warning(&format!(
                    "the record of an open fault window could not be kept ({e}): if pado is killed while a window is open, its undo will not run by itself"
                ));
            }
        }
    }
}

impl WindowLedger for RunLedger {
    fn opened(&self, e: &EventSpec, started_ms: u64) {
        let mut f = pado_base::lock(&self.faults);
        f.windows.push(OpenWindow {
            index: e.index,
            name: e.name.clone(),
            kind: e.kind.clone(),
            planned_ms: e.at.as_millis() as u64,
            started_ms,
            opened_at: utc_ms(SystemTime::now()),
            undo_kind: e.undo.as_ref().map(|(k, _)| k.clone()).unwrap_or_default(),
            undo: e.undo_source.clone(),
            env: e.undo_env.clone(),
            target: self.target.clone(),
            timeout_ms: e.timeout.as_millis() as u64,
        });
        self.save(&f);
    }

    fn closed(&self, e: &EventSpec) {
        let mut f = pado_base::lock(&self.faults);
        f.windows.retain(|w| w.index != e.index);
        self.save(&f);
    }
}

/// What a recovery found and did, in lines for the user.
#[derive(Debug, Default)]
pub struct Recovery {
    /// Windows whose undo ran and succeeded.
    pub undone: usize,
    /// Windows whose undo ran and failed, or could not run.
    pub failed: usize,
    /// Records left alone as unsafe or unreadable.
    pub refused: usize,
    /// What to tell the user, one line each.
    pub lines: Vec<String>,
}

/// Finds the records in `dir` whose process is gone and runs their undos (`run`
/// false: only says what it found). `by` names the command in the killed run's
/// `events.jsonl` (`pado run`, `pado events undo-open`).
pub fn recover(dir: &Path, by: &str, run: bool) -> Recovery {
    let mut rec = Recovery::default();
    let Ok(entries) = fs::read_dir(dir) else {
        return rec;
    };
    if let Some(why) = unsafe_because(dir, true) {
        rec.refused += 1;
        rec.lines.push(format!(
            "warning: {} {why}: the open-fault records in it are not used",
            dir.display()
        ));
        return rec;
    }
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(OPEN_FAULTS_FILE))
        .collect();
    files.sort();
    for path in files {
        recover_file(&path, by, run, &mut rec);
    }
    rec
}

fn recover_file(path: &Path, by: &str, run: bool, rec: &mut Recovery) {
    if let Some(why) = unsafe_because(path, false) {
        rec.refused += 1;
        rec.lines.push(format!(
            "warning: open-fault record {} {why}: not run (remove it once you have checked it)",
            path.display()
        ));
        return;
    }
    let faults = match read_record(path) {
        Ok(Some(f)) => f,
        Ok(None) => return,
        Err(e) => {
            rec.refused += 1;
            rec.lines
                .push(format!("warning: open-fault record not used: {e}"));
            return;
        }
    };
    if owner_alive(&faults) {
        return; // A running pado holds these windows and will undo them itself.
    }
    let run_dir = PathBuf::from(&faults.result_dir);
    let mut kept = Vec::new();
    for w in &faults.windows {
        let said = format!(
            "run `{}` (started {}, results in {}) was killed with the fault window of event `{}` open since {}",
            pado_base::text::terminal_safe(&faults.run_name),
            faults.run_started_at,
            pado_base::text::terminal_safe(&faults.result_dir),
            pado_base::text::terminal_safe(&w.name),
            w.opened_at
        );
        if !run {
            rec.lines.push(format!(
                "warning: {said}; its undo was not run (`pado events undo-open` runs it)"
            ));
            kept.push(w.clone());
            continue;
        }
        let Some(source) = &w.undo else {
            rec.failed += 1;
            rec.lines.push(format!(
                "warning: {said}; the record has no undo to run: put it back yourself"
            ));
            continue;
        };
        let field = format!("events[{}].undo", w.index);
        let undo = match pado_engine::events::resolve_undo(source, w.target.as_deref(), &field) {
            Ok(u) => u,
            Err(e) => {
                rec.failed += 1;
                rec.lines.push(format!(
                    "warning: {said}; its undo cannot be run: {e} (set it and run `pado events undo-open`)"
                ));
                kept.push(w.clone());
                continue;
            }
        };
        rec.lines.push(format!(
            "warning: {said}; running its undo (`{}`) now",
            w.undo_kind
        ));
        let undone_at = utc_ms(SystemTime::now());
        let action = pado_engine::events::run_undo(&undo, Duration::from_millis(w.timeout_ms));
        let ok = action.outcome == Outcome::Ok;
        if ok {
            rec.undone += 1;
            rec.lines.push(format!(
                "  event `{}`: undone",
                pado_base::text::terminal_safe(&w.name)
            ));
        } else {
            rec.failed += 1;
            rec.lines.push(format!(
                "  event `{}`: the undo {}: put the fault back yourself (the undo is under the event's `undo:` in the scenario)",
                pado_base::text::terminal_safe(&w.name),
                describe_failure(&action)
            ));
        }
        let note = record_in_run_dir(&run_dir, &faults, w, action, undone_at, by);
        rec.lines.extend(note);
    }
    let remaining = OpenFaults {
        windows: kept,
        ..faults.clone()
    };
    let result_file = run_dir.join(OPEN_FAULTS_FILE);
    let outcome = if remaining.windows.is_empty() {
        remove_record(path).and_then(|()| {
            if result_file.exists() {
                remove_record(&result_file)
            } else {
                Ok(())
            }
        })
    } else {
        write_record(path, &remaining).and_then(|()| {
            if run_dir.is_dir() {
                write_record(&result_file, &remaining.without_undos())
            } else {
                Ok(())
            }
        })
    };
    if let Err(e) = outcome {
        rec.lines.push(format!(
            "warning: the open-fault record could not be updated: {e}"
        ));
    }
}

fn describe_failure(a: &ActionRecord) -> String {
    match (&a.error, a.exit_code, a.status) {
        (Some(e), _, _) => format!("failed: {e}"),
        (None, Some(c), _) => format!("failed with exit code {c}"),
        (None, None, Some(s)) => format!("was answered {s}"),
        _ => "failed".into(),
    }
}

/// Appends the late undo to the killed run's `events.jsonl`, on that run's clock
/// (the window's start plus the wall-clock time since it opened). Returns a line
/// to say when the directory is gone or cannot be written.
fn record_in_run_dir(
    run_dir: &Path,
    faults: &OpenFaults,
    w: &OpenWindow,
    mut action: ActionRecord,
    undone_at: String,
    by: &str,
) -> Option<String> {
    if !run_dir.join(pado_results::result_dir::RUN_FILE).is_file() {
        return Some(format!(
            "  (the run's result directory {} is gone: the undo is recorded nowhere else)",
            pado_base::text::terminal_safe(&faults.result_dir)
        ));
    }
    let since_open = since(&w.opened_at).unwrap_or(0);
    let len = action.ended_ms.saturating_sub(action.started_ms);
    action.started_ms = w.started_ms.saturating_add(since_open);
    action.ended_ms = action.started_ms.saturating_add(len);
    let e = EventRecord {
        name: w.name.clone(),
        kind: w.kind.clone(),
        planned_ms: w.planned_ms,
        started_ms: Some(w.started_ms),
        window_end_ms: Some(action.ended_ms),
        required: false,
        mark: None,
        action: None,
        undo: Some(action),
        expect: ExpectRecord::default(),
        left_open: Some(LeftOpen {
            undone_at,
            undone_by: by.into(),
        }),
    };
    pado_results::events::append_event(run_dir, &e)
        .err()
        .map(|e| format!("  (the undo could not be recorded in the run's events: {e})"))
}

/// Milliseconds from the RFC 3339 time `at` to now.
fn since(at: &str) -> Option<u64> {
    let t = time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339).ok()?;
    let now = time::OffsetDateTime::now_utc();
    Some(((now - t).whole_milliseconds()).max(0) as u64)
}

#[cfg(test)]
mod tests;
