//! Runs a target on generated inputs for a bounded time. Each input runs on a worker
//! thread under `catch_unwind`, with the heap growth counted ([`crate::alloc`]) and a
//! per-input time limit enforced from the calling thread: a panic, a hang or an
//! oversized allocation stops the run and is reported with the target, the seed, the
//! input (hex and text) and a file under `target/fuzz-crashes/` that reproduces it.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Once;
use std::time::{Duration, Instant};

use crate::mutate::Mutator;
use crate::Target;

/// How long and how a target is fuzzed.
#[derive(Clone, Debug)]
pub struct Config {
    /// Total time for the run (the seed inputs always run, even past it).
    pub duration: Duration,
    /// PRNG seed; the same seed makes the same sequence of inputs.
    pub seed: u64,
    /// Longest one input may take before it counts as a hang.
    pub input_timeout: Duration,
    /// Largest heap growth one input may cause.
    pub alloc_limit: usize,
    /// Stop after this many inputs (seeds included), whatever the time.
    pub max_inputs: Option<u64>,
    /// Where failing inputs are saved (`None`: not saved).
    pub crash_dir: Option<PathBuf>,
}

impl Config {
    /// `seconds` of fuzzing with a fresh seed, unless the environment says otherwise:
    /// `PADO_FUZZ_SECONDS` (run length), `PADO_FUZZ_SEED` (reproduce a run),
    /// `PADO_FUZZ_CRASH_DIR` (where failing inputs go, default
    /// `target/fuzz-crashes`).
    pub fn from_env(seconds: f64) -> Config {
        let seconds = std::env::var("PADO_FUZZ_SECONDS")
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .unwrap_or(seconds);
        let seed = std::env::var("PADO_FUZZ_SEED")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or_else(|| fastrand::u64(..));
        let crash_dir = std::env::var_os("PADO_FUZZ_CRASH_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(default_crash_dir);
        Config {
            duration: Duration::from_secs_f64(seconds),
            seed,
            input_timeout: Duration::from_secs(10),
            alloc_limit: 256 << 20,
            max_inputs: None,
            crash_dir: Some(crash_dir),
        }
    }
}

/// `target/fuzz-crashes` of the workspace this crate was built in.
pub fn default_crash_dir() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = crate_dir.ancestors().nth(2).unwrap_or(crate_dir);
    workspace.join("target/fuzz-crashes")
}

/// What went wrong with one input.
#[derive(Clone, Debug, PartialEq)]
pub enum FailureKind {
    /// The target panicked (message and location).
    Panic(String),
    /// The input ran longer than the limit (the worker is abandoned).
    Hang(Duration),
    /// The heap grew by this many bytes, above the limit.
    Alloc(usize),
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailureKind::Panic(m) => write!(f, "panic: {m}"),
            FailureKind::Hang(d) => write!(f, "hang: still running after {d:?}"),
            FailureKind::Alloc(n) => write!(f, "allocation: the heap grew by {n} bytes"),
        }
    }
}

/// A failing input and how to reproduce it.
#[derive(Clone, Debug)]
pub struct Failure {
    /// Target name.
    pub target: &'static str,
    /// Seed of the run.
    pub seed: u64,
    /// 0-based number of the input in the run.
    pub iteration: u64,
    /// What happened.
    pub kind: FailureKind,
    /// The input.
    pub input: Vec<u8>,
    /// Where it was saved.
    pub saved: Option<PathBuf>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 512;
        writeln!(
            f,
            "fuzz target `{}` failed on input #{} (seed {}): {}",
            self.target, self.iteration, self.seed, self.kind
        )?;
        if let Some(p) = &self.saved {
            writeln!(
                f,
                "saved to {} — reproduce with `cargo run -p pado-fuzz -- {} --input {}`",
                p.display(),
                self.target,
                p.display()
            )?;
        }
        writeln!(f, "or rerun the sequence with PADO_FUZZ_SEED={}", self.seed)?;
        let shown = &self.input[..self.input.len().min(SHOWN)];
        let more = if self.input.len() > SHOWN {
            format!(" (first {SHOWN} of {} bytes)", self.input.len())
        } else {
            String::new()
        };
        writeln!(f, "input hex{more}: {}", hex(shown))?;
        write!(f, "input text{more}: {:?}", String::from_utf8_lossy(shown))
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The result of a run.
#[derive(Clone, Debug)]
pub struct Stats {
    /// Target name.
    pub target: &'static str,
    /// Seed of the run.
    pub seed: u64,
    /// Inputs run (the failing one included).
    pub inputs: u64,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// The first failure, which ended the run.
    pub failure: Option<Failure>,
}

impl Stats {
    /// Inputs per second.
    pub fn rate(&self) -> f64 {
        self.inputs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} inputs in {:.1} s ({:.0}/s), seed {}",
            self.target,
            self.inputs,
            self.elapsed.as_secs_f64(),
            self.rate(),
            self.seed
        )?;
        match &self.failure {
            None => write!(f, ", no failure"),
            Some(fail) => write!(f, "\n{fail}"),
        }
    }
}

thread_local! {
    static IN_WORKER: Cell<bool> = const { Cell::new(false) };
    static PANIC_AT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// On worker threads, panics are recorded (their location) instead of printed; other
/// threads keep the hook they had.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let prev = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if IN_WORKER.with(|w| w.get()) {
                let at = info.location().map(|l| l.to_string());
                PANIC_AT.with(|p| *p.borrow_mut() = at);
            } else {
                prev(info);
            }
        }));
    });
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let msg = if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    };
    match PANIC_AT.with(|p| p.borrow_mut().take()) {
        Some(at) => format!("{msg} at {at}"),
        None => msg,
    }
}

/// A thread that runs inputs one at a time and answers each.
struct Worker {
    inputs: mpsc::Sender<Vec<u8>>,
    results: mpsc::Receiver<Result<(), FailureKind>>,
}

impl Worker {
    fn spawn(target: &Target, alloc_limit: usize) -> Worker {
        install_panic_hook();
        let (in_tx, in_rx) = mpsc::channel::<Vec<u8>>();
        let (out_tx, out_rx) = mpsc::channel();
        let run = target.run;
        std::thread::Builder::new()
            .name(format!("fuzz-{}", target.name))
            // The main thread's stack, as the `pado` binary's parsers get.
            .stack_size(8 << 20)
            .spawn(move || {
                IN_WORKER.with(|w| w.set(true));
                for input in in_rx {
                    crate::alloc::start();
                    let r = panic::catch_unwind(AssertUnwindSafe(|| run(&input)));
                    let grew = crate::alloc::stop();
                    let out = match r {
                        Err(p) => Err(FailureKind::Panic(panic_message(p.as_ref()))),
                        Ok(()) if grew > alloc_limit => Err(FailureKind::Alloc(grew)),
                        Ok(()) => Ok(()),
                    };
                    drop(input);
                    if out_tx.send(out).is_err() {
                        break;
                    }
                }
            })
            .expect("spawn fuzz worker");
        Worker {
            inputs: in_tx,
            results: out_rx,
        }
    }

    /// Run one input. After a hang the worker is stuck and must not be used again.
    fn run(&self, input: &[u8], timeout: Duration) -> Result<(), FailureKind> {
        if self.inputs.send(input.to_vec()).is_err() {
            return Err(FailureKind::Panic("fuzz worker thread is gone".into()));
        }
        match self.results.recv_timeout(timeout) {
            Ok(r) => r,
            Err(RecvTimeoutError::Timeout) => Err(FailureKind::Hang(timeout)),
            Err(RecvTimeoutError::Disconnected) => {
                Err(FailureKind::Panic("fuzz worker thread is gone".into()))
            }
        }
    }
}

/// Run one input through `target` as the fuzzer does (worker thread, panic, time and
/// allocation checks).
pub fn run_input(target: &Target, input: &[u8], cfg: &Config) -> Result<(), FailureKind> {
    Worker::spawn(target, cfg.alloc_limit).run(input, cfg.input_timeout)
}

/// Fuzz `target`: its seed inputs unchanged, then mutations of them until the time is
/// up, stopping at the first failure.
pub fn fuzz(target: &Target, cfg: &Config) -> Stats {
    let corpus = (target.seeds)();
    let start = Instant::now();
    let worker = Worker::spawn(target, cfg.alloc_limit);
    let mut mutator = Mutator::new(cfg.seed, &corpus, target.dict, target.max_len);
    let mut iteration = 0u64;
    let mut failure = None;
    loop {
        if cfg.max_inputs.is_some_and(|m| iteration >= m) {
            break;
        }
        let input = match corpus.get(iteration as usize) {
            Some(seed_input) => seed_input.clone(),
            None if start.elapsed() >= cfg.duration => break,
            None => mutator.next_input(),
        };
        let r = worker.run(&input, cfg.input_timeout);
        iteration += 1;
        if let Err(kind) = r {
            let saved = cfg
                .crash_dir
                .as_deref()
                .and_then(|d| save(d, target.name, cfg.seed, iteration - 1, &input));
            failure = Some(Failure {
                target: target.name,
                seed: cfg.seed,
                iteration: iteration - 1,
                kind,
                input,
                saved,
            });
            break;
        }
    }
    Stats {
        target: target.name,
        seed: cfg.seed,
        inputs: iteration,
        elapsed: start.elapsed(),
        failure,
    }
}

fn save(dir: &Path, target: &str, seed: u64, iteration: u64, input: &[u8]) -> Option<PathBuf> {
    std::fs::create_dir_all(dir).ok()?;
    let p = dir.join(format!("{target}-seed{seed}-{iteration}.bin"));
    std::fs::write(&p, input).ok()?;
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn seeds() -> Vec<Vec<u8>> {
        vec![b"hello world".to_vec(), b"GET / HTTP/1.1".to_vec()]
    }

    fn cfg(dir: &str) -> Config {
        Config {
            duration: Duration::from_secs(20),
            seed: 42,
            input_timeout: Duration::from_secs(2),
            alloc_limit: 1 << 20,
            max_inputs: None,
            crash_dir: Some(
                std::env::temp_dir().join(format!("pado-fuzz-driver-{dir}-{}", std::process::id())),
            ),
        }
    }

    fn target(name: &'static str, run: fn(&[u8])) -> Target {
        Target {
            name,
            about: "planted bug",
            run,
            seeds,
            dict: &[],
            max_len: 256,
        }
    }

    fn contains(hay: &[u8], needle: &[u8]) -> bool {
        hay.windows(needle.len()).any(|w| w == needle)
    }

    /// Panics on the chunk size that overflows a `u64` sum.
    fn panics_on_huge_hex(data: &[u8]) {
        if contains(data, b"ffffffffffffffff") {
            panic!("planted panic");
        }
    }

    static RELEASE: AtomicBool = AtomicBool::new(false);

    /// Never returns on an input with a NUL byte (until the test releases it).
    fn loops_on_nul(data: &[u8]) {
        if data.contains(&0) {
            while !RELEASE.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }

    /// Allocates 24 MiB when there are three `{` in a row.
    fn allocates_on_braces(data: &[u8]) {
        if contains(data, b"{{{") {
            let v = vec![0u8; 3 << 23];
            std::hint::black_box(&v);
        }
    }

    fn fine(data: &[u8]) {
        std::hint::black_box(data.len());
    }

    #[test]
    fn planted_panic_is_reported_and_saved() {
        let t = target("planted_panic", panics_on_huge_hex);
        let stats = fuzz(&t, &cfg("panic"));
        let f = stats.failure.expect("the planted panic is found");
        assert!(
            matches!(&f.kind, FailureKind::Panic(m) if m.contains("planted panic") && m.contains("driver.rs")),
            "{f}"
        );
        assert!(contains(&f.input, b"ffffffffffffffff"));
        assert_eq!(f.seed, 42);
        let saved = f.saved.as_ref().expect("saved");
        assert_eq!(std::fs::read(saved).unwrap(), f.input);
        // The saved input reproduces it; the report shows it.
        assert!(matches!(
            run_input(&t, &f.input, &cfg("panic")),
            Err(FailureKind::Panic(_))
        ));
        let text = f.to_string();
        assert!(
            text.contains("planted_panic") && text.contains("seed 42"),
            "{text}"
        );
        assert!(
            text.contains("6666666666666666"),
            "hex of the input: {text}"
        );
        let _ = std::fs::remove_dir_all(cfg("panic").crash_dir.unwrap());
    }

    #[test]
    fn planted_hang_is_reported() {
        let t = target("planted_hang", loops_on_nul);
        let mut c = cfg("hang");
        c.input_timeout = Duration::from_millis(300);
        let stats = fuzz(&t, &c);
        RELEASE.store(true, Ordering::Relaxed);
        let f = stats.failure.expect("the planted loop is found");
        assert_eq!(f.kind, FailureKind::Hang(Duration::from_millis(300)), "{f}");
        assert!(f.input.contains(&0));
        assert!(stats.elapsed < Duration::from_secs(20));
        let _ = std::fs::remove_dir_all(cfg("hang").crash_dir.unwrap());
    }

    #[test]
    fn planted_allocation_is_reported() {
        let t = target("planted_alloc", allocates_on_braces);
        let stats = fuzz(&t, &cfg("alloc"));
        let f = stats.failure.expect("the planted allocation is found");
        assert!(
            matches!(f.kind, FailureKind::Alloc(n) if n >= 3 << 23),
            "{f}"
        );
        let _ = std::fs::remove_dir_all(cfg("alloc").crash_dir.unwrap());
    }

    #[test]
    fn a_clean_target_runs_for_the_time_given() {
        let t = target("fine", fine);
        let mut c = cfg("fine");
        c.duration = Duration::from_millis(300);
        let stats = fuzz(&t, &c);
        assert!(stats.failure.is_none());
        assert!(stats.inputs > 100, "{stats}");
        assert!(stats.elapsed >= Duration::from_millis(300));
        assert!(stats.elapsed < Duration::from_secs(5));
    }
}
