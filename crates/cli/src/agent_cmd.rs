//! `pado agent`: flags and printing only. The server is `pado_fleet::agent`; how it
//! runs a job (this binary's `pado run ARGS --out DIR --quiet` as a child, a
//! scenario whose events run commands refused unless `--allow-commands`) is
//! `pado_fleet::launch`; its token, host names and TLS identity are
//! `pado_fleet::agent_setup`'s. This module tells them where a job's arguments name
//! the scenario (they are `pado run`'s flags) and prints what the agent says.
//!
//! A coordinator's `POST /control` (a change of the load) reaches the job's run
//! through a Unix socket the run listens on (`--control-socket`,
//! `pado_fleet::control_socket`).

use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use pado_fleet::agent::{self, AgentOptions};
pub(crate) use pado_fleet::agent_setup::coordinator_token;
use pado_fleet::agent_setup::{
    agent_token, certificate_line, cleartext_warning, system_host_name, tls_identity, TlsSettings,
};
use pado_fleet::launch::{child_launch, ScenarioOf};

use crate::args::{AgentArgs, Cli, Command};
use crate::exit::{self, Failure};

/// The scenario a job's arguments (`pado run`'s flags) name, with their
/// `--target`: `None` in quick mode or when they do not parse (the run says why).
fn scenario_of(args: &[String]) -> Option<(PathBuf, Option<String>)> {
    let argv = ["pado", "run"]
        .into_iter()
        .map(String::from)
        .chain(args.iter().cloned());
    let Command::Run(run) = Cli::try_parse_from(argv).ok()?.command else {
        return None;
    };
    Some((run.load.scenario?, run.load.target))
}

/// `pado agent`: serve until Ctrl-C or SIGTERM.
pub(crate) fn agent(a: &AgentArgs) -> Result<i32, Failure> {
    let keep_for = crate::parse_dur("keep-for", &a.keep_for)?;
    let exe = std::env::current_exe().map_err(Failure::other)?;
    let token = agent_token(a.token_file.as_deref())?;
    let quiet = a.quiet;
    let launch = child_launch(exe, a.allow_commands, Arc::new(scenario_of) as ScenarioOf);
    // Absolute: each job's run starts in its own directory, and a relative path
    // (the default `pado-agent` is one) would point somewhere else from there.
    let work_dir = std::path::absolute(&a.work_dir)
        .map_err(|e| Failure::invalid(format!("--work-dir {}: {e}", a.work_dir.display())))?;
    let host_names: Vec<String> = a
        .host_name
        .iter()
        .cloned()
        .chain(system_host_name())
        .collect();
    let tls = TlsSettings {
        tls: a.tls,
        cert: a.tls_cert.clone(),
        key: a.tls_key.clone(),
        cert_out: a.tls_cert_out.clone(),
    };
    let identity = tls_identity(&tls, a.listen, &host_names)?;
    let opts = AgentOptions {
        listen: a.listen,
        work_dir: work_dir.clone(),
        token,
        host_names,
        patience: pado_fleet::job::PATIENCE,
        keep_for,
        say: Arc::new(move |line: &str| {
            if !quiet {
                eprintln!("{line}");
            }
        }),
        tls: identity.as_ref().map(|id| id.config.clone()),
    };
    let handle = agent::start(opts, launch)
        .map_err(|e| Failure::other(format!("--listen {}: {e}", a.listen)))?;
    if let Some(w) = cleartext_warning(handle.addr, identity.is_some()) {
        eprintln!("{w}");
    }
    if !quiet {
        eprintln!(
            "pado agent listening on {}://{} (work directory {}; a job's commands {}); Ctrl-C to stop",
            if identity.is_some() { "https" } else { "http" },
            handle.addr,
            work_dir.display(),
            if a.allow_commands {
                "run (--allow-commands)"
            } else {
                "refused"
            }
        );
    }
    // Printed even with --quiet: without it nobody can reach a generated one.
    if let Some(id) = &identity {
        eprintln!("{}", certificate_line(id));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn a_job_s_scenario_and_target_are_read_from_its_run_flags() {
        assert_eq!(
            scenario_of(&args(&["파도.yaml", "--segment", "0/2"])),
            Some((PathBuf::from("파도.yaml"), None))
        );
        assert_eq!(
            scenario_of(&args(&[
                "t.yaml",
                "--target",
                "http://127.0.0.1:9",
                "--vus",
                "2"
            ])),
            Some((PathBuf::from("t.yaml"), Some("http://127.0.0.1:9".into())))
        );
        // Quick mode has no scenario file; arguments that do not parse are the run's.
        assert_eq!(scenario_of(&args(&["--url", "http://127.0.0.1:9/"])), None);
        assert_eq!(scenario_of(&args(&["t.yaml", "--no-such-flag"])), None);
    }

    #[test]
    fn the_agent_refuses_a_job_whose_events_run_commands_as_its_run_would_load_it() {
        let files = tempfile::tempdir().unwrap();
        std::fs::write(
            files.path().join("t.yaml"),
            "events:\n  - at: 1s\n    run: [touch, x]\nscenarios:\n  s:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n    flow:\n      - request: /\n",
        )
        .unwrap();
        let job = |a: &[&str]| pado_fleet::bundle::JobSpec {
            test_name: "t".into(),
            segment: "0/1".into(),
            args: args(a),
        };
        let of: ScenarioOf = Arc::new(scenario_of);
        let check = |a: &[&str]| pado_fleet::launch::check_commands(&job(a), files.path(), &of);
        // Without `--target` the file is not valid: left to the run; with it, the
        // check sees the event.
        assert!(check(&["t.yaml"]).is_ok());
        let r = check(&["t.yaml", "--target", "http://127.0.0.1:9"]);
        assert!(matches!(r, Err(agent::LaunchError::Refused(_))), "{r:?}");
    }
}
