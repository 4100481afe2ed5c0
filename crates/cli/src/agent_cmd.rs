//! `pado agent`: wiring only. The server is `pado_fleet::agent`; a job's run is
//! this binary's `pado run ARGS --out DIR --quiet` as a child (stopped with SIGINT,
//! as Ctrl-C; in the agent's process group, so a Ctrl-C at the agent's terminal
//! stops the job gracefully too), its output kept in `run.log` beside the result.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pado_fleet::agent::{self, AgentOptions, Started};
use pado_fleet::bundle::JobSpec;

use crate::args::AgentArgs;
use crate::exit::{self, Failure};

/// The environment variable holding the token agents and coordinators share.
pub(crate) const TOKEN_ENV: &str = "PADO_AGENT_TOKEN";

/// The token from the environment (`None` when unset or empty).
pub(crate) fn token() -> Option<String> {
    std::env::var(TOKEN_ENV)
        .ok()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
}

/// `pado agent`: serve until Ctrl-C or SIGTERM.
pub(crate) fn agent(a: &AgentArgs) -> Result<i32, Failure> {
    let keep_for = crate::parse_dur("keep-for", &a.keep_for)?;
    let exe = std::env::current_exe().map_err(Failure::other)?;
    let token = token();
    if token.is_none() && !a.listen.ip().is_loopback() {
        eprintln!(
            "warning: --listen {} without {TOKEN_ENV}: anyone who reaches this port can make this host send load; set a token on the agent and the coordinator",
            a.listen
        );
    }
    let quiet = a.quiet;
    let launch: agent::Launch = Arc::new(move |job: &JobSpec, files: &Path, results: &Path| {
        let log = std::fs::File::create(files.with_file_name(pado_fleet::bundle::LOG_FILE))?;
        let mut child = std::process::Command::new(&exe);
        child
            .arg("run")
            .args(&job.args)
            .arg("--out")
            .arg(results)
            .arg("--quiet")
            .current_dir(files)
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let mut child = child.spawn()?;
        let pid = child.id() as i32;
        let ended = Arc::new(AtomicBool::new(false));
        let stop_ended = ended.clone();
        Ok(Started {
            stop: Arc::new(move || {
                if !stop_ended.load(Ordering::SeqCst) {
                    // SAFETY: kill(2) on the child we started, with a valid signal.
                    unsafe {
                        libc::kill(pid, libc::SIGINT);
                    }
                }
            }),
            wait: Box::new(move || {
                let code = match child.wait() {
                    Ok(st) => st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0)),
                    Err(_) => exit::ERROR,
                };
                ended.store(true, Ordering::SeqCst);
                code
            }),
        })
    });
    // Absolute: each job's run starts in its own directory, and a relative path
    // (the default `pado-agent` is one) would point somewhere else from there.
    let work_dir = std::path::absolute(&a.work_dir)
        .map_err(|e| Failure::invalid(format!("--work-dir {}: {e}", a.work_dir.display())))?;
    let opts = AgentOptions {
        listen: a.listen,
        work_dir: work_dir.clone(),
        token,
        keep_for,
        say: Arc::new(move |line: &str| {
            if !quiet {
                eprintln!("{line}");
            }
        }),
    };
    let handle = agent::start(opts, launch)
        .map_err(|e| Failure::other(format!("--listen {}: {e}", a.listen)))?;
    if !quiet {
        eprintln!(
            "pado agent listening on {} (work directory {}); Ctrl-C to stop",
            handle.addr,
            work_dir.display()
        );
    }
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    crate::signals::install(move |_| {
        let _ = tx.send(());
    })
    .map_err(Failure::other)?;
    let _ = rx.recv();
    handle.shutdown();
    Ok(exit::OK)
}
