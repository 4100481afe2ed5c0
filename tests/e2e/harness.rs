//! Running the binary and reading its result directory: the machine shared or held
//! alone, temporary directories, `pado run` and its result (`Run`), timing judged
//! against the generator's self-check. `process` starts the binary (and what a test
//! waits for, interrupts or kills); `fixture` fills the scenario files under
//! `tests/e2e/testdata/`.

use std::cell::Cell;
use std::ffi::OsStr;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, SystemTime};

use serde_json::Value;

mod fixture;
mod process;

pub(crate) use fixture::{fixture, write_fixture};
pub(crate) use process::{
    interrupt, pado, pado_cmd, pado_env, pado_under, say, serve_printing_url, spawn_piped, stderr,
    text, wait_within, wait_within_polling, Kid,
};

/// The binary under test. The first call points `XDG_STATE_HOME` and `PADO_HOME`
/// (inherited by every process the tests start) at directories under the target
/// directory, so that no test records its open fault windows in the user's own
/// state or its runs in the user's history; each
/// command gets a `PADO_HOME` of its test's own ([`test_home`], set by
/// [`pado_cmd`], [`pado_under`]), so that no test records its runs in another's.
pub(crate) fn pado_bin() -> &'static str {
    static ENV: std::sync::Once = std::sync::Once::new();
    ENV.call_once(|| {
        // Rust's own environment lock orders this with the spawns of other threads.
        // A pado started some other way still records nowhere near the user's own
        // history.
        std::env::set_var(
            "PADO_HOME",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("pado-home/shared"),
        );
        // Fault windows a test's killed pado leaves open are recorded here, not in
        // the user's own state directory (tests that kill pado use one of their own).
        std::env::set_var(
            "XDG_STATE_HOME",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("pado-state"),
        );
        // A developer's proxy must not change what the tests measure: children run
        // without one unless a test sets these on its command.
        for v in PROXY_VARS {
            std::env::remove_var(v);
        }
    });
    env!("CARGO_BIN_EXE_pado")
}

/// The `PADO_HOME` (history database) of the test running on this thread:
/// `pado-home/<test name>` under the target's temporary directory, emptied the
/// first time this process uses it. Tests run in parallel, each on a thread named
/// after it, so no two tests share a history database (a test about sharing sets
/// one home on each of its commands), and every test starts with an empty history.
/// A thread a test starts itself has no such name: its commands share
/// `pado-home/shared`.
pub(crate) fn test_home() -> PathBuf {
    static PREPARED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let name: String = std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .unwrap_or("shared")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let home = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("pado-home")
        .join(name);
    let mut prepared = PREPARED.lock().unwrap_or_else(|e| e.into_inner());
    if !prepared.contains(&home) {
        // What an earlier run of this test left is not this run's history.
        let _ = std::fs::remove_dir_all(&home);
        std::fs::create_dir_all(&home).expect("creating the test's PADO_HOME");
        prepared.push(home.clone());
    }
    home
}

/// The environment variables that choose a proxy (both cases, as curl reads them).
pub(crate) const PROXY_VARS: [&str; 8] = [
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
];

/// A fresh, empty temporary directory ([`tmp`]), removed with everything in it
/// when this value drops, so that a test leaves nothing behind, pass or fail. It
/// derefs to its [`Path`]: hold it (not a path joined to it) for as long as the
/// directory is used, and declare it before the processes that write into it, so
/// that they are stopped before it is removed.
pub(crate) struct Tmp(tempfile::TempDir);

impl Deref for Tmp {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for Tmp {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<OsStr> for Tmp {
    fn as_ref(&self) -> &OsStr {
        self.0.path().as_os_str()
    }
}

/// A fresh, empty temporary directory named after `name`, removed when dropped.
pub(crate) fn tmp(name: &str) -> Tmp {
    Tmp(tempfile::Builder::new()
        .prefix(&format!("pado-e2e-{name}-"))
        .tempdir()
        .unwrap())
}

/// The machine's CPUs, as far as the tests in this binary are concerned. Every test
/// that runs pado or a server holds it shared; the generator self-check tests hold it
/// exclusively, because they measure the machine itself (their busy loops would slow
/// the others' timing, and the others' load would starve their unstarved control).
static MACHINE: RwLock<()> = RwLock::new(());

thread_local! {
    static SHARED_DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// A share of the machine ([`shared_machine`]); re-entrant on one thread, so a test
/// that holds one can still call [`run`] (a nested read lock could deadlock behind a
/// waiting writer).
pub(crate) struct SharedMachine {
    _guard: Option<RwLockReadGuard<'static, ()>>,
}

impl Drop for SharedMachine {
    fn drop(&mut self) {
        SHARED_DEPTH.with(|d| d.set(d.get() - 1));
    }
}

/// Hold the machine shared with other ordinary tests for as long as the guard lives.
pub(crate) fn shared_machine() -> SharedMachine {
    SHARED_DEPTH.with(|d| {
        let n = d.get();
        d.set(n + 1);
        SharedMachine {
            _guard: (n == 0).then(|| MACHINE.read().unwrap_or_else(|e| e.into_inner())),
        }
    })
}

/// The machine held alone ([`exclusive_machine`]).
pub(crate) struct ExclusiveMachine {
    _guard: RwLockWriteGuard<'static, ()>,
}

impl Drop for ExclusiveMachine {
    fn drop(&mut self) {
        SHARED_DEPTH.with(|d| d.set(d.get() - 1));
    }
}

/// Hold the machine alone (no other test runs pado meanwhile). [`run`] and
/// [`shared_machine`] called while holding it take nothing more.
pub(crate) fn exclusive_machine() -> ExclusiveMachine {
    let g = MACHINE.write().unwrap_or_else(|e| e.into_inner());
    SHARED_DEPTH.with(|d| d.set(d.get() + 1));
    ExclusiveMachine { _guard: g }
}

/// Outcome of one run.
pub(crate) struct Run {
    /// Process output.
    pub out: Output,
    /// Result directory.
    pub dir: PathBuf,
    /// The temporary directory that holds `dir`, removed when the run drops; `None`
    /// when the caller owns the directory.
    pub _tmp: Option<Tmp>,
}

impl Run {
    /// Exit code.
    pub(crate) fn code(&self) -> i32 {
        self.out.status.code().unwrap_or(-1)
    }
    /// stdout.
    pub(crate) fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
    /// stderr.
    pub(crate) fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    /// summary.json.
    pub(crate) fn summary(&self) -> Value {
        let p = self.dir.join("summary.json");
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| {
            panic!(
                "{}: {e}\nstdout:\n{}\nstderr:\n{}",
                p.display(),
                self.stdout(),
                self.stderr()
            )
        });
        serde_json::from_str(&text).unwrap()
    }
    /// run.json.
    pub(crate) fn run_json(&self) -> Value {
        read_json(&self.dir.join("run.json"))
    }
    /// Lines of timeline.jsonl.
    pub(crate) fn timeline(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.join("timeline.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// Run `pado run ARGS --out <tmp> --quiet` and wait.
pub(crate) fn run(name: &str, args: &[&str]) -> Run {
    run_env(name, args, &[])
}

/// [`run`] with environment variables set for this run only (e.g. `HTTPS_PROXY`).
pub(crate) fn run_env(name: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let _machine = shared_machine();
    let tmp = tmp(name);
    let dir = tmp.join("result");
    let out = pado_cmd(["run"])
        .envs(env.iter().copied())
        .args(args)
        .arg("--out")
        .arg(&dir)
        .arg("--quiet")
        .output()
        .expect("running pado");
    Run {
        out,
        dir,
        _tmp: Some(tmp),
    }
}

/// Write a file into a temp dir and return its path.
pub(crate) fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A number from a JSON value (panics with context when missing).
pub(crate) fn num(v: &Value, path: &str) -> f64 {
    let mut cur = v;
    for part in path.split('.') {
        cur = &cur[part];
    }
    cur.as_f64()
        .unwrap_or_else(|| panic!("{path} missing in {v:#}"))
}

/// A loopback port nobody listens on (bound, then released), for refused
/// connections and for servers started by the tests.
pub(crate) fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// The path of program `bin` (found on `PATH`), which Debian package `package`
/// provides. Missing, a test that needs it is skipped with a message saying so,
/// unless `PADO_E2E_REQUIRE_ALL=1` (set by `scripts/test.sh`, which installs
/// every such package): then a missing program fails the test rather than let
/// a full run pass without it.
pub(crate) fn require_or_skip(bin: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(["/usr/bin", "/usr/sbin", "/usr/local/bin"].map(PathBuf::from))
        .map(|dir| dir.join(bin))
        .find(|p| p.is_file());
    if found.is_none() {
        let msg = format!(
            "{bin} is not installed (Debian package {package}; scripts/test.sh installs it)"
        );
        if std::env::var("PADO_E2E_REQUIRE_ALL").as_deref() == Ok("1") {
            panic!("{msg}, and PADO_E2E_REQUIRE_ALL=1 requires it");
        }
        eprintln!("skipped: {msg}");
    }
    found
}

/// Run `pado run ARGS` and judge its timing with `check`, which asserts what is not
/// about timing itself (a panic fails the test as always) and returns `Err` for a
/// timing tolerance that was missed. A missed tolerance fails the test unless pado's
/// own self-check in `summary.json` says the machine starved the generator
/// ([`machine_too_busy`]); then the run is tried once more, and if the tolerance is
/// missed again on a starved machine, the test is skipped with a loud message naming
/// the figures, rather than passed. On a quiet machine a regression still fails.
/// Returns the run whose timing was judged, `None` when skipped.
pub(crate) fn run_timed(
    name: &str,
    args: &[&str],
    mut check: impl FnMut(&Run) -> Result<(), String>,
) -> Option<Run> {
    let mut busy_before = None;
    for attempt in 0..2 {
        let r = run(&format!("{name}-{attempt}"), args);
        let Err(miss) = check(&r) else {
            return Some(r);
        };
        let Some(busy) = machine_too_busy(&r) else {
            panic!(
                "{name}: {miss} (the generator reported no starvation, so this is not the machine)"
            );
        };
        if let Some(first) = busy_before.take() {
            eprintln!(
                "\n*** SKIPPED {name}: machine too busy to judge timing, twice: {first} / {busy}\n*** missed: {miss}\n"
            );
            return None;
        }
        eprintln!("{name}: {miss}; machine too busy ({busy}): trying once more");
        busy_before = Some(busy);
    }
    unreachable!("the second attempt returns or panics")
}

/// `Some(figures)` when the run's generator self-check says pado was saturated or
/// starved of CPU (run-queue wait, event-loop stalls): its latencies then describe
/// the machine, not what was measured. `None` when pado had the CPU it needed.
pub(crate) fn machine_too_busy(r: &Run) -> Option<String> {
    machine_too_busy_in(&r.summary())
}

/// [`machine_too_busy`] read from a run's `summary.json` already parsed.
pub(crate) fn machine_too_busy_in(s: &Value) -> Option<String> {
    let g = &s["generator"];
    let saturated = g["saturated"].as_bool().unwrap_or(false);
    let wait_peak = g["run_queue_wait_peak"].as_f64().unwrap_or(0.0);
    let wait_seconds = g["wait_seconds"].as_u64().unwrap_or(0);
    let lag_seconds = g["lag_seconds"].as_u64().unwrap_or(0);
    let lag_max = g["lag_max_ms"].as_f64().unwrap_or(0.0);
    let starved = saturated || wait_seconds > 0 || wait_peak >= 0.10 || lag_seconds > 0;
    starved.then(|| {
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        format!(
            "generator saturated {saturated}, run-queue wait peak {:.0}%, {wait_seconds} starved s, event-loop lag max {lag_max:.0} ms, load average {}",
            wait_peak * 100.0,
            load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
        )
    })
}

/// A JSON file, parsed (panics naming the file when it cannot be read).
pub(crate) fn read_json(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `Err` naming `what` when `v` is outside `range`: a missed timing tolerance
/// ([`run_timed`] judges it).
pub(crate) fn within(what: &str, v: f64, range: std::ops::Range<f64>) -> Result<(), String> {
    if range.contains(&v) {
        Ok(())
    } else {
        Err(format!("{what} = {v:.2}, outside {range:?}"))
    }
}

/// An agreed start `secs` from now, RFC 3339 UTC with milliseconds (`--start-at`).
pub(crate) fn start_in(secs: u64) -> String {
    let t = time::OffsetDateTime::from(SystemTime::now() + Duration::from_secs(secs));
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

/// `pado merge DIRS --out OUT EXTRA` and wait.
pub(crate) fn merge(dirs: &[PathBuf], out: &Path, extra: &[&str]) -> Output {
    let _machine = shared_machine();
    pado_cmd(["merge"])
        .args(dirs)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .expect("running pado merge")
}

/// The demo target in this process with `options` (`TargetOptions::default()` is
/// the one `pado demo` starts).
pub(crate) fn demo_target(
    options: pado_demo_target::TargetOptions,
) -> pado_demo_target::RunningTarget {
    pado_demo_target::start(options).expect("demo target starts")
}

/// The demo target as its own process (so that its CPU figures are its own, not
/// those of the test process's other servers), with `args`, stopped within two
/// minutes even if the test is killed: the process, killed on drop, and its URL.
pub(crate) fn serve_demo_target(args: &[&str]) -> (Kid, String) {
    let mut all = vec!["target", "serve", "--port", "0", "--exit-after", "2m"];
    all.extend_from_slice(args);
    let (child, url) = serve_printing_url(&all);
    assert!(url.starts_with("http://127.0.0.1:"), "target did not start");
    (Kid(child), url)
}
