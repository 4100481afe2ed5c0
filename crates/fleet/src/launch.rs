//! How `pado agent` runs a job: this binary as a child, `pado run ARGS --out DIR
//! --quiet` in the job's directory (its output kept in `run.log` beside the
//! result), stopped with SIGINT as Ctrl-C would (in the agent's process group, so a
//! Ctrl-C at the agent's terminal stops the job gracefully too).
//!
//! An agent runs a job's `events:` commands only when started to
//! (`--allow-commands`): otherwise a job whose scenario has one is refused before it
//! starts ([`LaunchError::Refused`], answered `403`, the event named), and its run
//! gets `--refuse-commands` so that the run itself refuses what this check missed.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::agent::{Launch, LaunchError, Started};
use crate::bundle::{JobSpec, LOG_FILE};

/// The exit code of a job whose run could not be waited for.
pub const WAIT_FAILED: i32 = 1;

/// The scenario a job's arguments name and the `--target` they give it, as the
/// run will read them; `None` when they name none (quick mode) or do not parse
/// (then the run says why).
pub type ScenarioOf = Arc<dyn Fn(&[String]) -> Option<(PathBuf, Option<String>)> + Send + Sync>;

/// `Err` naming the first event of `config` that runs a command (`file` for the
/// message): for a run an agent started without `--allow-commands`.
pub fn refuse_commands(config: &pado_scenario::model::Config, file: &str) -> Result<(), String> {
    for (i, ev) in config.events.iter().enumerate() {
        if let Some(field) = ev.command_field() {
            return Err(format!(
                "{file}: events[{i}] (`{}`) runs a command (`{field}:`), and this agent runs a job's commands only when started with `pado agent --allow-commands`",
                ev.display_name(i)
            ));
        }
    }
    Ok(())
}

/// The agent's check of a job before its run starts: the scenario the job's
/// arguments name (`scenario_of`), loaded from its files as the run will load it,
/// must not run commands. A scenario that does not load is left to the run, which
/// says why (and refuses commands itself with `--refuse-commands`).
pub fn check_commands(
    job: &JobSpec,
    files: &Path,
    scenario_of: &ScenarioOf,
) -> Result<(), LaunchError> {
    let Some((scenario, target)) = scenario_of(&job.args) else {
        return Ok(());
    };
    let Ok(loaded) =
        pado_scenario::load::load_file_with_target(&files.join(&scenario), target.as_deref())
    else {
        return Ok(());
    };
    refuse_commands(&loaded.config, &scenario.display().to_string()).map_err(LaunchError::Refused)
}

/// Runs each job as `exe run ARGS [--refuse-commands] --out RESULTS --quiet`; with
/// `allow_commands` false, a job whose scenario runs commands is refused first.
pub fn child_launch(exe: PathBuf, allow_commands: bool, scenario_of: ScenarioOf) -> Launch {
    Arc::new(move |job: &JobSpec, files: &Path, results: &Path| {
        if !allow_commands {
            check_commands(job, files, &scenario_of)?;
        }
        let log = std::fs::File::create(files.with_file_name(LOG_FILE))?;
        // A change of the load reaches the run through a socket in its job's folder.
        let job_dir = files.parent().unwrap_or(files);
        let job_name = job_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let socket = crate::control_socket::socket_path(job_dir, &job_name);
        let mut child = std::process::Command::new(&exe);
        child.arg("run").args(&job.args);
        if !allow_commands {
            child.arg("--refuse-commands");
        }
        child
            .arg("--control-socket")
            .arg(&socket)
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
                    Err(_) => WAIT_FAILED,
                };
                ended.store(true, Ordering::SeqCst);
                code
            }),
            control: Some(Arc::new(move |body: &[u8]| {
                crate::control_socket::send(&socket, body)
            })),
        })
    })
}

#[cfg(test)]
mod tests;
