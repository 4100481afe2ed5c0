//! `pado run FILE --generators URL,...`: one test on many agents (`pado agent`),
//! shown and judged as one. Wiring only: the scenario is read and checked here as
//! `pado run` would; each agent gets a job bundle (`pado_fleet::bundle`: the files
//! and its segment's `pado run` flags with one agreed start); the live loop
//! (`pado_fleet::coordinate`) merges their seconds for the progress line and the
//! `abort_on_fail` thresholds ([`crate::live_view`]); then every result is fetched
//! into `--out` and merged by `pado merge`'s code into `merged/` there, whose
//! summary and exit code are the run's.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use pado_fleet::bundle::{self, FileEntry, JobSpec};
use pado_fleet::client::GeneratorClient;
use pado_fleet::coordinate::{self, LiveOptions};
use pado_fleet::tls::{AgentTrust, Fingerprint};

use crate::args::RunArgs;
use crate::config::RunConfig;
use crate::exit::{self, Failure};

/// The agreed start when none is given (`--start-at +10s`): room to send every job.
const DEFAULT_START: Duration = Duration::from_secs(10);
/// Most bytes of files one job may carry.
const MAX_FILE_BYTES: u64 = bundle::MAX_BUNDLE_BYTES / 2;
/// How long a generator may send no new second before the live view goes on
/// without it.
const STALL_AFTER: Duration = Duration::from_secs(30);
/// After the planned end and the graceful stop: how long to wait for results.
const END_MARGIN: Duration = Duration::from_secs(60);

/// `pado run ... --generators`.
pub(crate) fn run(a: &RunArgs) -> Result<i32, Failure> {
    let cfg = RunConfig::from_run_args(a)?;
    let history = crate::history_cmd::Recorder::from_args(&a.history)?;
    let prep = &cfg.scenario;
    let plan = prep.compile()?;
    if !prep.config.setup.is_empty() && cfg.split.setup_vars.is_none() {
        return Err(Failure::invalid(format!(
            "{}: the scenario has a global setup, which must run once for all generators: run `pado setup` with the same file and flags and `--out vars.json`, then pass --setup-vars vars.json",
            prep.file
        )));
    }
    let n = a.generators.len();
    let weights = match &a.segment_weights {
        Some(w) => Some(crate::split::segment(&format!("0/{n}"), Some(w))?),
        None => None,
    };
    let start_at = cfg
        .split
        .start_at
        .unwrap_or_else(|| SystemTime::now() + DEFAULT_START);
    let token = crate::agent_cmd::coordinator_token()?;
    let trust = agent_trust(a, n)?;
    let mut clients = a
        .generators
        .iter()
        .zip(&trust)
        .map(|(u, t)| GeneratorClient::new(u.trim(), Some(token.expose().to_string()), t))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::invalid(format!("--generators: {e}")))?;
    let names: Vec<String> = clients
        .iter()
        .enumerate()
        .map(|(i, c)| format!("generator {i}/{n} ({})", c.label()))
        .collect();
    let (files, scenario_arg, body_arg) = job_files(a, &cfg)?;
    crate::secret_flags::refuse_credentials(a, crate::secret_flags::Destination::AgentJobs)?;
    let forwarded = forwarded_flags(a, scenario_arg, body_arg);
    let name = plan.name.clone();
    let out_dir = local_dir(a.out.as_deref(), &name)?;
    let quiet = a.quiet;
    // The first request stops every generator; a second distinct one quits.
    let _ = crate::signals::install(|n| {
        if n > 1 {
            std::process::exit(exit::INTERRUPTED);
        }
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Failure::other)?;
    let collected = rt.block_on(async {
        // Every agent idle and reachable before anything starts.
        for (c, nm) in clients.iter_mut().zip(&names) {
            let v = c
                .status()
                .await
                .map_err(|e| Failure::other(format!("{nm}: {e}")))?;
            if v != pado_fleet::status::Status::Idle {
                return Err(Failure::other(format!(
                    "{nm} is busy with another job (\"{}\"); wait for it or choose another agent",
                    v.state()
                )));
            }
        }
        let at = pado_session::utc_ms(start_at);
        let mut started = Vec::new();
        for (i, c) in clients.iter_mut().enumerate() {
            let mut job_args = forwarded.clone();
            job_args.extend(["--segment".into(), format!("{i}/{n}")]);
            if let Some(seg) = &weights {
                let w: Vec<String> = seg.weights().iter().map(|w| w.to_string()).collect();
                job_args.extend(["--segment-weights".into(), w.join(",")]);
            }
            job_args.extend(["--start-at".into(), at.clone()]);
            if i == 0 {
                for o in &a.load.observe {
                    job_args.extend(["--observe".into(), o.clone()]);
                }
                if let Some(v) = &a.load.observe_interval {
                    job_args.extend(["--observe-interval".into(), v.clone()]);
                }
            }
            let job = JobSpec {
                test_name: name.clone(),
                segment: format!("{i}/{n}"),
                args: job_args,
            };
            let sent = match bundle::pack(&job, &files) {
                Ok(tar) => c
                    .expect(
                        "POST",
                        "/job",
                        &tar,
                        pado_fleet::client::REQUEST_TIMEOUT,
                        201,
                    )
                    .await
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            if let Err(e) = sent {
                // Nothing half-started is left behind.
                for j in started {
                    let c: &mut GeneratorClient = &mut clients[j];
                    let _ = c
                        .request("POST", "/stop", b"", pado_fleet::client::REQUEST_TIMEOUT)
                        .await;
                }
                return Err(Failure::other(format!("{}: {e}", names[i])));
            }
            started.push(i);
        }
        if !quiet {
            eprintln!("{n} generators start at {at}; Ctrl-C stops them all");
        }
        let ahead = start_at
            .duration_since(SystemTime::now())
            .unwrap_or_default();
        let start = Instant::now() + ahead;
        let graceful = plan
            .scenarios
            .iter()
            .map(|s| s.graceful_stop)
            .max()
            .unwrap_or_default();
        let planned = plan.planned_duration();
        let opts = LiveOptions {
            poll_every: Duration::from_secs(1),
            start,
            stall_after: STALL_AFTER,
            deadline: start + planned + graceful + END_MARGIN,
        };
        let mut view = crate::live_view::LiveView::new(
            quiet,
            planned.as_secs_f64(),
            plan.stage_marks(),
            &prep.thresholds,
            &plan.steps,
            names.clone(),
        );
        let view = std::cell::RefCell::new(&mut view);
        let mut asked = false;
        let outcome = coordinate::watch(
            &mut clients,
            &opts,
            |s, totals| view.borrow_mut().second(s, totals),
            || {
                if !asked && crate::signals::requests() > 0 {
                    asked = true;
                    return Some("Ctrl-C".to_string());
                }
                None
            },
            |notice| view.borrow_mut().notice(&notice),
        )
        .await;
        view.borrow_mut().finish();
        let (dirs, failed) = collect(
            &mut clients,
            &names,
            &out_dir,
            opts.deadline + END_MARGIN,
            quiet,
        )
        .await;
        Ok::<_, Failure>((outcome, dirs, failed))
    })?;
    let (outcome, dirs, failed) = collected;
    if outcome.timed_out {
        eprintln!("warning: the live view ended at the planned end plus the graceful stop; some generators had not finished");
    }
    if dirs.is_empty() {
        return Err(Failure::other(format!(
            "no generator's result could be collected (see above); nothing to merge in {}",
            out_dir.display()
        )));
    }
    let merged = out_dir.join("merged");
    let code = crate::merge_cmd::merge(&crate::merge_cmd::MergeArgs {
        dirs: &dirs,
        out: &merged,
        allow_partial: outcome.stopped.is_some(),
        overwrite: false,
        html: cfg.output.html,
        quiet: false,
        exports: &cfg.output.exports,
        windows: &cfg.output.windows,
        history: &history,
    })?;
    if let Some(why) = &outcome.stopped {
        crate::out::outln!("  stopped: {why}: every generator was told to stop");
    }
    crate::out::outln!("  results: {}", merged.display());
    with_generator_exits(code, &failed)
}

/// How each of the `n` agents' certificates is verified: `--agent-fingerprint`
/// (one for all, or one per agent in order), `--agent-ca`, or the system's roots.
fn agent_trust(a: &RunArgs, n: usize) -> Result<Vec<AgentTrust>, Failure> {
    if let Some(ca) = &a.agent_ca {
        let t =
            AgentTrust::ca_file(ca).map_err(|e| Failure::invalid(format!("--agent-ca: {e}")))?;
        return Ok(vec![t; n]);
    }
    let pins = a
        .agent_fingerprint
        .iter()
        .map(|f| f.parse::<Fingerprint>().map(AgentTrust::Pinned))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::invalid(format!("--agent-fingerprint: {e}")))?;
    match pins.len() {
        0 => Ok(vec![AgentTrust::SystemRoots; n]),
        1 => Ok(vec![pins[0].clone(); n]),
        k if k == n => Ok(pins),
        k => Err(Failure::invalid(format!(
            "--agent-fingerprint: {k} fingerprints for {n} agents: give one for every agent, or one per agent in the order of --generators"
        ))),
    }
}

/// The coordinator's exit code from the merged result's (`merged`) and the
/// generators' own. A generator whose run failed (an exit code other than 0 or 99)
/// makes the whole test fail with exit 1 naming it, whatever the merged seconds
/// say: its share may be missing or wrong, and a script reading only the exit code
/// must not see success. A generator's 99 is not carried over: its thresholds were
/// judged on its share only, and the merged seconds' verdict (`merged`) is the
/// test's.
fn with_generator_exits(merged: i32, failed: &[(String, i64)]) -> Result<i32, Failure> {
    let errors: Vec<String> = failed
        .iter()
        .filter(|(_, code)| {
            *code != i64::from(exit::OK) && *code != i64::from(exit::THRESHOLD_FAILED)
        })
        .map(|(name, code)| format!("{name} (exit code {code})"))
        .collect();
    if errors.is_empty() {
        return Ok(merged);
    }
    Err(Failure::other(format!(
        "the run failed on {}: the merged result leaves out or cuts short what it measured",
        errors.join(", ")
    )))
}

/// Waits for each generator's run to end, fetches its result into
/// `out/segment-I-of-N`, and tells it so. Returns the directories fetched (one
/// that could not be is said, and the merge names its segment as missing) and each
/// generator whose run ended with a non-zero exit code, with that code.
async fn collect(
    clients: &mut [GeneratorClient],
    names: &[String],
    out: &Path,
    deadline: Instant,
    quiet: bool,
) -> (Vec<PathBuf>, Vec<(String, i64)>) {
    let n = clients.len();
    let mut dirs = Vec::new();
    let mut failed = Vec::new();
    for (i, c) in clients.iter_mut().enumerate() {
        let name = &names[i];
        let status = loop {
            match c.status().await {
                Ok(pado_fleet::status::Status::Done {
                    exit_code,
                    log_tail,
                    ..
                }) => break Some((exit_code, log_tail)),
                Ok(_) => {}
                Err(e) if Instant::now() >= deadline => {
                    eprintln!("warning: {name}: {e}");
                    break None;
                }
                Err(_) => {}
            }
            if Instant::now() >= deadline {
                eprintln!("warning: {name}: its run had not ended by the planned end plus the graceful stop and a margin");
                break None;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        let Some((code, log_tail)) = status else {
            continue;
        };
        if code != 0 {
            failed.push((name.clone(), i64::from(code)));
        }
        if let Some(tail) = log_tail.as_deref() {
            // The generator's output is its text, not ours: a hostile or broken agent
            // must not drive the terminal with escape sequences.
            eprintln!(
                "warning: {name}: its run failed (exit code {code}); its last output:\n{}",
                pado_metrics::fmt::terminal_safe(tail)
            );
        }
        let dir = out.join(format!("segment-{i}-of-{n}"));
        match c.result_tar().await {
            Ok(tar) => match pado_fleet::archive::unpack(
                &tar[..],
                &dir,
                pado_fleet::archive::DEFAULT_MAX_BYTES,
            ) {
                Ok(_) => {
                    let _ = c
                        .request("POST", "/done", b"", pado_fleet::client::REQUEST_TIMEOUT)
                        .await;
                    if dir.join("run.json").exists() {
                        dirs.push(dir);
                    } else if !quiet {
                        eprintln!("warning: {name}: its run wrote no result");
                    }
                }
                Err(e) => eprintln!("warning: {name}: its result could not be unpacked: {e}"),
            },
            Err(e) => eprintln!("warning: {name}: {e}"),
        }
    }
    (dirs, failed)
}

/// The files every generator needs, and how its `pado run` names the scenario
/// (none in quick mode) and a quick-mode `--body-file`.
type JobFiles = (Vec<FileEntry>, Option<String>, Option<String>);

/// The files every generator needs and how its `pado run` names them.
fn job_files(a: &RunArgs, cfg: &RunConfig) -> Result<JobFiles, Failure> {
    let mut files = Vec::new();
    let mut scenario_arg = None;
    let mut body_arg = None;
    if let Some(path) = &a.load.scenario {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "scenario.yaml".into());
        files.push(FileEntry {
            path: name.clone(),
            bytes: crate::bundle_files::read_capped(path, MAX_FILE_BYTES, "scenario")?,
        });
        for f in crate::bundle_files::data_files(&cfg.scenario, MAX_FILE_BYTES)? {
            if f.path != name {
                files.push(f);
            }
        }
        scenario_arg = Some(name);
    } else if let Some(b) = &a.load.body_file {
        files.push(FileEntry {
            path: "body".into(),
            bytes: crate::bundle_files::read_capped(b, MAX_FILE_BYTES, "--body-file")?,
        });
        body_arg = Some("body".to_string());
    }
    if let Some(v) = &a.setup_vars {
        files.push(FileEntry {
            path: "pado-setup-vars.json".into(),
            bytes: crate::bundle_files::read_capped(v, MAX_FILE_BYTES, "--setup-vars")?,
        });
    }
    let total: usize = files.iter().map(|f| f.bytes.len()).sum();
    if total as u64 > MAX_FILE_BYTES {
        return Err(Failure::invalid(format!(
            "the scenario and its files are {total} bytes; one job carries at most {MAX_FILE_BYTES}"
        )));
    }
    Ok((files, scenario_arg, body_arg))
}

/// The flags every segment runs with: the scenario (or URL), the load shape, the
/// request settings, thresholds, name, workers and live outputs, as given here
/// (results, reports, exports and the live view are the coordinator's; each
/// generator labels its outputs' series with its segment).
fn forwarded_flags(
    a: &RunArgs,
    scenario: Option<String>,
    body_file: Option<String>,
) -> Vec<String> {
    let mut v: Vec<String> = scenario.into_iter().collect();
    let l = &a.load;
    let mut opt = |flag: &str, val: Option<String>| {
        if let Some(x) = val {
            v.push(flag.into());
            v.push(x);
        }
    };
    opt("--url", l.url.clone());
    opt("--target", l.target.clone());
    opt("--method", l.method.clone());
    opt("--body", l.body.clone());
    opt("--body-file", body_file);
    opt("--max-vus", l.max_vus.map(|x| x.to_string()));
    opt("--timeout", l.timeout.clone());
    opt("--max-body", l.max_body.clone());
    opt("--vus", a.vus.map(|x| x.to_string()));
    opt("--duration", a.duration.clone());
    opt("--rate", a.rate.map(|x| x.to_string()));
    opt("--stages", a.stages.clone());
    opt("--step-ramp", a.step_ramp.clone());
    opt("--iterations", a.iterations.map(|x| x.to_string()));
    opt("--think", a.think.clone());
    opt("--name", a.name.clone());
    opt("--fit-to", a.fit_to.clone());
    if a.setup_vars.is_some() {
        opt("--setup-vars", Some("pado-setup-vars.json".into()));
    }
    for h in &l.headers {
        v.extend(["--header".into(), h.clone()]);
    }
    for t in &a.thresholds {
        v.extend(["--threshold".into(), t.clone()]);
    }
    for o in &a.outputs {
        v.extend(["--output".into(), o.clone()]);
    }
    if let Some(w) = a.workers {
        v.extend(["--workers".into(), w.to_string()]);
    }
    if l.insecure {
        v.push("--insecure".into());
    }
    if a.soak {
        v.push("--soak".into());
    }
    if l.no_follow_redirects {
        v.push("--no-follow-redirects".into());
    }
    if l.http2 {
        v.push("--http2".into());
    }
    if let Some(h) = &l.http {
        v.extend(["--http".into(), h.clone()]);
    }
    if let Some(c) = &l.connections {
        v.extend(["--connections".into(), c.clone()]);
    }
    if let Some(m) = l.max_streams {
        v.extend(["--max-streams".into(), m.to_string()]);
    }
    if let Some(p) = &l.proxy {
        v.extend(["--proxy".into(), p.clone()]);
    }
    if l.no_proxy {
        v.push("--no-proxy".into());
    }
    if let Some(c) = &l.compression {
        v.extend(["--compression".into(), c.clone()]);
    }
    v
}

/// The local directory for the segments' results and the merged one: `--out`
/// (new or empty) or a new one under pado-results/.
fn local_dir(out: Option<&Path>, name: &str) -> Result<PathBuf, Failure> {
    match out {
        Some(p) => pado_session::user_out_dir(p, false).map_err(Into::into),
        None => pado_session::new_out_dir(name).map_err(Into::into),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generator_that_failed_fails_the_test_naming_it() {
        let failed = vec![("agent-b:7700".to_string(), 1)];
        // Planted: the merged seconds passed (0) but one generator's run exited 1.
        let e = with_generator_exits(exit::OK, &failed).unwrap_err();
        assert_eq!(e.code, exit::ERROR);
        assert!(
            e.message.contains("agent-b:7700 (exit code 1)"),
            "{}",
            e.message
        );
        // Also over a failed threshold on the merged seconds: the error is said.
        assert_eq!(
            with_generator_exits(exit::THRESHOLD_FAILED, &failed)
                .unwrap_err()
                .code,
            exit::ERROR
        );
        // An unknown exit (a status without one) is a failure too.
        let unknown = vec![("a".to_string(), -1)];
        assert!(with_generator_exits(exit::OK, &unknown).is_err());
    }

    #[test]
    fn generators_that_ran_leave_the_merged_verdict_alone() {
        assert_eq!(with_generator_exits(exit::OK, &[]).unwrap(), exit::OK);
        assert_eq!(
            with_generator_exits(exit::THRESHOLD_FAILED, &[]).unwrap(),
            exit::THRESHOLD_FAILED
        );
        // A generator's 99 was judged on its share: the merged verdict decides.
        let share = vec![("a".to_string(), 99)];
        assert_eq!(with_generator_exits(exit::OK, &share).unwrap(), exit::OK);
        assert_eq!(
            with_generator_exits(exit::THRESHOLD_FAILED, &share).unwrap(),
            exit::THRESHOLD_FAILED
        );
    }

    fn run_args(extra: &[&str]) -> Result<RunArgs, clap::Error> {
        use clap::Parser;
        let argv = [
            "pado",
            "run",
            "--url",
            "http://127.0.0.1:9/",
            "--generators",
            "a:1,b:2",
        ];
        let cli = crate::args::Cli::try_parse_from(argv.iter().chain(extra))?;
        match cli.command {
            crate::args::Command::Run(r) => Ok(*r),
            _ => unreachable!("a run"),
        }
    }

    #[test]
    fn agent_fingerprints_are_one_for_all_or_one_per_agent_and_read_with_a_clear_error() {
        let a = pado_fleet::tls::Fingerprint::of(b"a");
        let b = pado_fleet::tls::Fingerprint::of(b"b");
        let pins = |extra: &[&str]| agent_trust(&run_args(extra).unwrap(), 2);
        let one = pins(&["--agent-fingerprint", &a.to_string()]).unwrap();
        assert!(one
            .iter()
            .all(|t| matches!(t, AgentTrust::Pinned(f) if *f == a)));
        let each = pins(&["--agent-fingerprint", &format!("{a},{b}")]).unwrap();
        assert!(matches!(each[1], AgentTrust::Pinned(f) if f == b));
        let none = pins(&[]).unwrap();
        assert!(none.iter().all(|t| !t.is_explicit()));
        let e = pins(&["--agent-fingerprint", &format!("{a},{b},{a}")]).unwrap_err();
        assert!(
            e.message.contains("3 fingerprints for 2 agents"),
            "{}",
            e.message
        );
        let e = pins(&["--agent-fingerprint", "sha1:AB:CD"]).unwrap_err();
        assert_eq!(e.code, exit::INVALID);
        assert!(
            e.message.starts_with("--agent-fingerprint: `sha1:AB:CD`"),
            "{}",
            e.message
        );
        let e = pins(&["--agent-ca", "/nonexistent/파도.pem"]).unwrap_err();
        assert!(e.message.contains("파도.pem"), "{}", e.message);
        // A pin and a CA are two answers to one question.
        assert!(run_args(&["--agent-ca", "x.pem", "--agent-fingerprint", &a.to_string()]).is_err());
    }
}
