//! `pado agent`: wiring only. The server is `pado_fleet::agent`; a job's run is
//! this binary's `pado run ARGS --out DIR --quiet` as a child (stopped with SIGINT,
//! as Ctrl-C; in the agent's process group, so a Ctrl-C at the agent's terminal
//! stops the job gracefully too), its output kept in `run.log` beside the result.
//!
//! A coordinator's `POST /control` (a change of the load) reaches the job's run
//! through a Unix socket the run listens on (`--control-socket`,
//! [`crate::control_socket`]).
//!
//! With `--tls` it serves HTTPS (`pado_fleet::tls`): its certificate from
//! `--tls-cert`/`--tls-key`, or generated at start, its fingerprint printed for
//! coordinators to pin. Without TLS on an address others can reach, it warns.
//!
//! The agent never starts without a token, and runs a job's `events:` commands only
//! when started with `--allow-commands`: otherwise a job whose scenario has one is
//! refused before it starts (`403`, the event named), and its run gets
//! `--refuse-commands` so that the run itself refuses what this check missed.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Parser;
use pado_fleet::access::Token;
use pado_fleet::agent::{self, AgentOptions, LaunchError, Started, TOKEN_ENV};
use pado_fleet::bundle::JobSpec;
use pado_fleet::tls::AgentIdentity;

use crate::args::{AgentArgs, Cli, Command};
use crate::exit::{self, Failure};

/// Most bytes a token file may have (a token is a line).
const MAX_TOKEN_FILE: u64 = 4096;

/// The coordinator's token from the environment: every agent requires one, so its
/// absence or a malformed one is said before any agent is asked.
pub(crate) fn coordinator_token() -> Result<Token, Failure> {
    let text = std::env::var(TOKEN_ENV).unwrap_or_default();
    if text.trim().is_empty() {
        return Err(Failure::invalid(format!(
            "--generators: set {TOKEN_ENV} to the agents' token (each `pado agent` was started with one)"
        )));
    }
    Token::new(&text).map_err(|e| Failure::invalid(format!("{TOKEN_ENV}: {e}")))
}

/// The agent's token: `--token-file`'s first line, or `PADO_AGENT_TOKEN`. Without
/// one the agent does not start: whoever reaches its port could send it jobs.
fn agent_token(a: &AgentArgs) -> Result<Token, Failure> {
    let (text, from) = match &a.token_file {
        Some(path) => {
            let from = format!("--token-file {}", path.display());
            let text = pado_scenario::limits::read_capped_string(path, MAX_TOKEN_FILE)
                .map_err(|e| Failure::invalid(format!("{from}: {e}")))?;
            let first = text.lines().next().unwrap_or("").to_string();
            (first, from)
        }
        None => (
            std::env::var(TOKEN_ENV).unwrap_or_default(),
            TOKEN_ENV.to_string(),
        ),
    };
    if text.trim().is_empty() {
        return Err(Failure::invalid(format!(
            "pado agent needs a token that coordinators must send: set {TOKEN_ENV} (e.g. `export {TOKEN_ENV}=$(openssl rand -hex 32)`) or give --token-file FILE, and set the same {TOKEN_ENV} where you run `pado run --generators`"
        )));
    }
    Token::new(&text).map_err(|e| Failure::invalid(format!("{from}: {e}")))
}

/// This host's name as the system has it (allowed in `Host` besides addresses).
fn system_host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname(2) writes at most `buf.len()` bytes into our buffer.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    let name = std::str::from_utf8(&buf[..end]).ok()?.trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// `Err` naming the first event of `config` that runs a command (`file` for the
/// message): for a run an agent started without `--allow-commands`.
pub(crate) fn refuse_commands(
    config: &pado_scenario::model::Config,
    file: &str,
) -> Result<(), String> {
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
/// arguments name, loaded from its files as the run will load it, must not run
/// commands. A scenario that does not load is left to the run, which says why (and
/// refuses commands itself with `--refuse-commands`).
fn check_commands(job: &JobSpec, files: &Path) -> Result<(), LaunchError> {
    let argv = ["pado", "run"]
        .into_iter()
        .map(String::from)
        .chain(job.args.iter().cloned());
    let Ok(cli) = Cli::try_parse_from(argv) else {
        return Ok(());
    };
    let Command::Run(run) = cli.command else {
        return Ok(());
    };
    let Some(scenario) = &run.load.scenario else {
        return Ok(());
    };
    let Ok(loaded) = pado_scenario::load::load_file_with_target(
        &files.join(scenario),
        run.load.target.as_deref(),
    ) else {
        return Ok(());
    };
    let name = scenario.display().to_string();
    refuse_commands(&loaded.config, &name).map_err(LaunchError::Refused)
}

/// The agent's TLS identity with `--tls`: `--tls-cert`/`--tls-key`, or a new
/// self-signed certificate for `host_names` and the listening address (written to
/// `--tls-cert-out` when asked).
fn tls_identity(a: &AgentArgs, host_names: &[String]) -> Result<Option<AgentIdentity>, Failure> {
    if !a.tls {
        return Ok(None);
    }
    let id = match (&a.tls_cert, &a.tls_key) {
        (Some(cert), Some(key)) => AgentIdentity::from_files(cert, key),
        _ => {
            let mut names = host_names.to_vec();
            if !a.listen.ip().is_unspecified() {
                names.push(a.listen.ip().to_string());
            }
            AgentIdentity::generate(&names)
        }
    }
    .map_err(|e| Failure::invalid(format!("--tls: {e}")))?;
    if let (Some(out), Some(pem)) = (&a.tls_cert_out, &id.generated_pem) {
        std::fs::write(out, pem)
            .map_err(|e| Failure::other(format!("--tls-cert-out {}: {e}", out.display())))?;
    }
    Ok(Some(id))
}

/// What the agent says of its certificate at start: the fingerprint coordinators
/// pin, and for a generated one the names it is valid for.
fn certificate_line(id: &AgentIdentity) -> String {
    let fp = id.fingerprint;
    if id.generated_for.is_empty() {
        format!("TLS certificate {fp}; coordinators pin it with --agent-fingerprint {fp}, or verify it with --agent-ca")
    } else {
        format!(
            "TLS certificate {fp} (generated for {}; new at every start); coordinators pin it with --agent-fingerprint {fp}",
            id.generated_for.join(", ")
        )
    }
}

/// A warning for an agent that others can reach in clear text: its token and
/// jobs would cross the network unencrypted. `None` with TLS or on loopback.
fn cleartext_warning(listen: std::net::SocketAddr, tls: bool) -> Option<String> {
    (!tls && !listen.ip().is_loopback()).then(|| {
        format!(
            "warning: pado agent listens on {listen} without TLS: the token and every job cross the network in clear text; use --tls (and --agent-fingerprint on the coordinator), or keep plain HTTP to loopback and networks you trust (`pado docs scaling-out`)"
        )
    })
}

/// `pado agent`: serve until Ctrl-C or SIGTERM.
pub(crate) fn agent(a: &AgentArgs) -> Result<i32, Failure> {
    let keep_for = crate::parse_dur("keep-for", &a.keep_for)?;
    let exe = std::env::current_exe().map_err(Failure::other)?;
    let token = agent_token(a)?;
    let allow_commands = a.allow_commands;
    let quiet = a.quiet;
    let launch: agent::Launch = Arc::new(move |job: &JobSpec, files: &Path, results: &Path| {
        if !allow_commands {
            check_commands(job, files)?;
        }
        let log = std::fs::File::create(files.with_file_name(pado_fleet::bundle::LOG_FILE))?;
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
                    Err(_) => exit::ERROR,
                };
                ended.store(true, Ordering::SeqCst);
                code
            }),
            control: Some(Arc::new(move |body: &[u8]| {
                crate::control_socket::send(&socket, body)
            })),
        })
    });
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
    let identity = tls_identity(a, &host_names)?;
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
            if allow_commands {
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

    fn job(args: &[&str]) -> JobSpec {
        JobSpec {
            test_name: "t".into(),
            segment: "0/1".into(),
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }

    const LOAD: &str = "scenarios:\n  s:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n    flow:\n      - request: /\n";

    #[test]
    fn a_job_whose_events_run_commands_is_refused_naming_the_event() {
        let files = tempfile::tempdir().unwrap();
        let with = |events: &str| {
            std::fs::write(
                files.path().join("파도.yaml"),
                format!("target: http://127.0.0.1:9\nevents:\n{events}{LOAD}"),
            )
            .unwrap();
            check_commands(&job(&["파도.yaml", "--segment", "0/2"]), files.path())
        };
        let refused = with("  - name: 재시작\n    at: 1s\n    shell: touch x\n").unwrap_err();
        let text = refused.to_string();
        assert!(matches!(refused, LaunchError::Refused(_)));
        assert!(
            text.contains("파도.yaml")
                && text.contains("`재시작`")
                && text.contains("`shell:`")
                && text.contains("--allow-commands"),
            "{text}"
        );
        let refused =
            with("  - at: 1s\n    mark: m\n    duration: 1s\n    undo: { run: [touch, x] }\n")
                .unwrap_err()
                .to_string();
        assert!(
            refused.contains("`event 1`") && refused.contains("`undo.run:`"),
            "{refused}"
        );
        // HTTP calls and marks are not commands.
        assert!(with("  - at: 1s\n    http: { url: /admin }\n  - at: 2s\n    mark: m\n").is_ok());
    }

    #[test]
    fn a_job_s_target_flag_is_used_to_load_its_scenario_as_the_run_would() {
        let files = tempfile::tempdir().unwrap();
        std::fs::write(
            files.path().join("t.yaml"),
            format!("events:\n  - at: 1s\n    run: [touch, x]\n{LOAD}"),
        )
        .unwrap();
        // Without `--target` the file is not valid: left to the run (which refuses
        // its commands itself); with it, the check sees the event.
        assert!(check_commands(&job(&["t.yaml"]), files.path()).is_ok());
        let r = check_commands(
            &job(&["t.yaml", "--target", "http://127.0.0.1:9"]),
            files.path(),
        );
        assert!(matches!(r, Err(LaunchError::Refused(_))), "{r:?}");
        // Quick mode has no events.
        assert!(check_commands(&job(&["--url", "http://127.0.0.1:9/"]), files.path()).is_ok());
    }

    fn args(token_file: Option<std::path::PathBuf>) -> AgentArgs {
        AgentArgs {
            listen: "127.0.0.1:0".parse().unwrap(),
            token_file,
            allow_commands: false,
            host_name: Vec::new(),
            work_dir: "w".into(),
            keep_for: "1h".into(),
            quiet: true,
            tls: false,
            tls_cert: None,
            tls_key: None,
            tls_cert_out: None,
        }
    }

    #[test]
    fn the_agent_s_token_comes_from_its_file_and_must_be_long_enough() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "0123456789abcdef\nsecond line ignored\n").unwrap();
        let t = agent_token(&args(Some(file.clone()))).unwrap();
        assert!(t.matches(b"0123456789abcdef"));
        std::fs::write(&file, "s3cret\n").unwrap();
        let e = agent_token(&args(Some(file.clone()))).unwrap_err();
        assert_eq!(e.code, exit::INVALID);
        assert!(e.message.contains("at least 16"), "{}", e.message);
        assert!(!e.message.contains("s3cret"), "{}", e.message);
        std::fs::write(&file, "\n").unwrap();
        let e = agent_token(&args(Some(file.clone()))).unwrap_err();
        assert!(e.message.contains("needs a token"), "{}", e.message);
        let e = agent_token(&args(Some(dir.path().join("missing")))).unwrap_err();
        assert!(e.message.contains("--token-file"), "{}", e.message);
    }

    #[test]
    fn an_agent_others_reach_without_tls_is_warned_about_and_no_other() {
        for (listen, tls, warned) in [
            ("0.0.0.0:7070", false, true),
            ("10.0.0.5:7070", false, true),
            ("[::]:7070", false, true),
            ("0.0.0.0:7070", true, false),
            ("127.0.0.1:7070", false, false),
            ("[::1]:7070", false, false),
        ] {
            let w = cleartext_warning(listen.parse().unwrap(), tls);
            assert_eq!(w.is_some(), warned, "{listen} tls={tls}: {w:?}");
            if let Some(w) = w {
                assert!(w.contains("--tls") && w.contains("clear text"), "{w}");
            }
        }
    }

    #[test]
    fn a_generated_certificate_is_written_when_asked_and_is_the_one_printed() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("에이전트.pem");
        let mut a = args(None);
        a.listen = "10.1.2.3:7070".parse().unwrap();
        a.tls = true;
        a.tls_cert_out = Some(out.clone());
        let id = tls_identity(&a, &["gen-1.internal".into()])
            .unwrap()
            .unwrap();
        let pem = std::fs::read_to_string(&out).unwrap();
        assert_eq!(Some(pem.as_str()), id.generated_pem.as_deref());
        // The file read back is the certificate whose fingerprint is printed.
        let again = AgentIdentity::from_files(&out, &out);
        assert!(again.is_err(), "a certificate is not its own key");
        let line = certificate_line(&id);
        assert!(line.contains(&id.fingerprint.to_string()), "{line}");
        assert!(
            line.contains("gen-1.internal") && line.contains("10.1.2.3"),
            "{line}"
        );
        // Without --tls there is no identity, and a missing key file is named.
        assert!(tls_identity(&args(None), &[]).unwrap().is_none());
        let mut a = args(None);
        a.tls = true;
        a.tls_cert = Some(out.clone());
        a.tls_key = Some(dir.path().join("없는.key"));
        let e = tls_identity(&a, &[]).unwrap_err();
        assert_eq!(e.code, exit::INVALID);
        assert!(e.message.contains("없는.key"), "{}", e.message);
    }
}
