//! `pado demo`: the whole product on one command. Starts the built-in demo target as a
//! child process (`pado target serve`), runs the bundled stress scenario (shaped like
//! seed 000: normal load, past the limit, recovery) against it with live progress,
//! prints the summary and stops the target.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::config::{LoadSpec, RunConfig};
use crate::exit::Failure;
use pado_session::Output;

/// The bundled scenario (also `examples/board-stress.yaml`).
const SCENARIO: &str = include_str!("../../../examples/board-stress.yaml");
/// Its keyword feed.
const KEYWORDS: &str = include_str!("../../../examples/data/keywords.csv");

/// Demo options.
pub(crate) struct DemoOptions {
    /// Fit the stress test into this length (default: as written, 70 s).
    pub duration: Option<Duration>,
    /// Result directory.
    pub out: Option<PathBuf>,
    /// No live progress.
    pub quiet: bool,
    /// Judge the run as a soak (`--soak`).
    pub soak: bool,
    /// A scenario file of the user's to run instead of the bundled one.
    pub scenario: Option<PathBuf>,
    /// Machine outputs to write beside the summary (`--export`), as `pado run`'s.
    pub exports: Vec<String>,
    /// Extra `pado target serve` arguments (capacity knobs).
    pub target_args: Vec<String>,
    /// The live page (`--dashboard`), if asked.
    pub dashboard: Option<crate::dashboard_cmd::DashboardSpec>,
}

struct TargetChild(Child);

impl Drop for TargetChild {
    fn drop(&mut self) {
        // SAFETY: signalling our own child process.
        unsafe {
            libc::kill(self.0.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_target(extra: &[String]) -> Result<(TargetChild, String), Failure> {
    let exe = std::env::current_exe().map_err(Failure::other)?;
    let mut child = Command::new(exe)
        .args(["target", "serve", "--port", "0", "--exit-after", "1h"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| Failure::other(format!("starting the demo target: {e}")))?;
    let stdout = child.stdout.take();
    let guard = TargetChild(child);
    let Some(stdout) = stdout else {
        return Err(Failure::other("the demo target has no output"));
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("listening on ") {
                let _ = tx.send(url.trim().to_string());
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .map_err(|_| Failure::other("the demo target did not start within 30 s"))?;
    Ok((guard, url))
}

/// Run the demo.
pub(crate) fn run(o: DemoOptions) -> Result<i32, Failure> {
    let out = match &o.out {
        Some(p) => pado_session::user_out_dir(p, false)?,
        None => pado_session::new_out_dir("demo")?,
    };
    let scen = match &o.scenario {
        Some(path) => path.clone(),
        None => {
            let scen_dir = out.join("scenario");
            std::fs::create_dir_all(scen_dir.join("data"))
                .map_err(|e| Failure::other(format!("{}: {e}", scen_dir.display())))?;
            let scen = scen_dir.join("board-stress.yaml");
            std::fs::write(&scen, SCENARIO).map_err(Failure::other)?;
            std::fs::write(scen_dir.join("data").join("keywords.csv"), KEYWORDS)
                .map_err(Failure::other)?;
            scen
        }
    };
    let (target, url) = start_target(&o.target_args)?;
    if !o.quiet {
        eprintln!("demo target (a wiki/board API with a bounded worker and DB pool) at {url}");
        eprintln!("running {} against it", scen.display());
    }
    let spec = LoadSpec {
        fit_to: o.duration,
        ..LoadSpec::file(scen, Some(url))
    };
    let output = Output {
        dir: Some(out),
        // The directory was new or empty (checked above) and holds only the
        // scenario written just now: the run may write beside it.
        overwrite: true,
        html: true,
        quiet: o.quiet,
        exports: o.exports.clone(),
        ..Default::default()
    };
    let code = spec.load().and_then(|scenario| {
        crate::run_cmd::run(
            &RunConfig {
                soak: o.soak,
                dashboard: o.dashboard.clone(),
                ..RunConfig::new(scenario, output)
            },
            &crate::history_cmd::Recorder::default(),
        )
    });
    drop(target);
    code
}
