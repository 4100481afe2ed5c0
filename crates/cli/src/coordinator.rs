//! `pado run FILE --generators URL,...`: one test on many agents (`pado agent`),
//! shown and judged as one. Parsing and printing only: the scenario is read and
//! checked here as `pado run` would, the flags turned into the job every agent
//! runs, and the agents' trust into clients; the flow itself (jobs sent, the live
//! loop, results fetched, agents told) is `pado_fleet::flow::agents`, with
//! [`crate::live_view`]'s progress line and `abort_on_fail` thresholds as its live
//! view. What it collected is merged by `pado merge`'s code into `merged/` under
//! `--out`, whose summary and exit code are the run's.
//!
//! With `--dashboard`, the live page watches the merged seconds and steers every
//! agent through a [`DistributedRun`]: a change is split by segment and sent to
//! each agent's `POST /control`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pado_engine::executor::segment::Segment;
use pado_fleet::access::Token;
use pado_fleet::bundle::{self, FileEntry};
use pado_fleet::client::GeneratorClient;
use pado_fleet::coordinate::{Control, Notice};
use pado_fleet::flow::agents::{self, Agents, AgentsJob, AgentsOptions};
use pado_fleet::flow::{LiveSink, Say};
use pado_fleet::tls::{AgentTrust, Fingerprint};
use pado_metrics::Totals;
use pado_results::merge::live::LiveSecond;
use pado_session::{ControlCommand, DistributedRun, Generator, SendFn};

use crate::args::RunArgs;
use crate::config::RunConfig;
use crate::exit::{self, Failure};
use crate::live_view::LiveView;

/// The agreed start when none is given (`--start-at +10s`): room to send every job.
const DEFAULT_START: Duration = Duration::from_secs(10);
/// Most bytes of files one job may carry.
const MAX_FILE_BYTES: u64 = bundle::MAX_BUNDLE_BYTES / 2;

/// `pado run ... --generators`.
pub(crate) fn run(a: &RunArgs) -> Result<i32, Failure> {
    let cfg = RunConfig::from_run_args(a)?;
    let history = crate::history_cmd::Recorder::from_args(&a.history)?;
    let prep = &cfg.scenario;
    let plan = Arc::new(prep.compile()?);
    if !prep.config.setup.is_empty() && cfg.split.setup_vars.is_none() {
        return Err(Failure::invalid(format!(
            "{}: the scenario has a global setup, which must run once for all generators: run `pado setup` with the same file and flags and `--out vars.json`, then pass --setup-vars vars.json",
            prep.file
        )));
    }
    let n = a.generators.len();
    let segment_weights = match &a.segment_weights {
        Some(w) => {
            let seg = crate::split::segment(&format!("0/{n}"), Some(w))?;
            let w: Vec<String> = seg.weights().iter().map(|w| w.to_string()).collect();
            Some(w.join(","))
        }
        None => None,
    };
    let start_at = cfg
        .split
        .start_at
        .unwrap_or_else(|| SystemTime::now() + DEFAULT_START);
    let token = crate::agent_cmd::coordinator_token()?;
    let trust = agent_trust(a, n)?;
    let mut agents = Agents::new(clients(a, &token, &trust)?);
    let (files, scenario_arg, body_arg) = job_files(a, &cfg)?;
    crate::secret_flags::refuse_credentials(a, crate::secret_flags::Destination::AgentJobs)?;
    let graceful = plan
        .scenarios
        .iter()
        .map(|s| s.graceful_stop)
        .max()
        .unwrap_or_default();
    let planned = plan.planned_duration();
    let job = AgentsJob {
        test_name: plan.name.clone(),
        files,
        args: forwarded_flags(a, scenario_arg, body_arg),
        first_args: observe_flags(a),
        segment_weights,
        start_at,
        start_stamp: pado_base::stamp::utc_ms(start_at),
        run_for: planned + graceful,
    };
    let out_dir = local_dir(a.out.as_deref(), &plan.name)?;
    let mut opts = AgentsOptions::new(out_dir.clone());
    opts.quiet = a.quiet;
    // The first request stops every generator; a second distinct one quits.
    let (tx, interrupts) = tokio::sync::watch::channel(0u32);
    let _ = crate::signals::install(move |n| {
        if n > 1 {
            std::process::exit(exit::INTERRUPTED);
        }
        tx.send_replace(n);
    });
    let steered = Arc::new(DistributedRun::new(
        plan.clone(),
        generators(agents.names(), job.segment_weights.as_deref())?,
        agent_sender(&a.generators, &token, &trust),
    ));
    steered.started(pado_fleet::flow::instant_of(start_at));
    let page = crate::live_view::page(cfg.dashboard.as_ref(), &plan, &prep.thresholds, &steered)?;
    let mut view = LiveView::new(
        a.quiet,
        planned.as_secs_f64(),
        plan.stage_marks(),
        &prep.thresholds,
        &plan.steps,
        agents.names().to_vec(),
    )
    .feeding(steered.clone())
    .showing_scrapes(page.is_some());
    let say: Say = Arc::new(|line: &str| eprintln!("{line}"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Failure::other)?;
    let collected = rt
        .block_on(agents::run(
            &mut agents,
            &job,
            &opts,
            interrupts,
            say,
            &mut view,
        ))
        .map_err(Failure::other)?;
    let merged = out_dir.join("merged");
    let changes = steered.changes();
    let code = crate::merge_cmd::merge(&crate::merge_cmd::MergeArgs {
        dirs: &collected.dirs,
        out: &merged,
        allow_partial: collected.is_partial(),
        overwrite: false,
        html: cfg.output.html,
        quiet: false,
        exports: &cfg.output.exports,
        windows: &cfg.output.windows,
        history: &history,
        // The coordinator's own record of the changes it made, once each; with
        // none, what the generators recorded (a change sent to each directly).
        control: Some(&changes).filter(|c| !c.is_empty()).map(Vec::as_slice),
    })?;
    if let Some(why) = &collected.stopped {
        crate::out::outln!("  stopped: {why}: every generator was told to stop");
    }
    crate::out::outln!("  results: {}", merged.display());
    if let (Some(spec), Some(page)) = (&cfg.dashboard, &page) {
        page.finished(&merged);
        spec.linger(page);
    }
    // A generator whose run failed fails the test, whatever the merged seconds say.
    agents.judge_runs(&collected).map_err(Failure::other)?;
    Ok(code)
}

/// The live view of the whole test as the coordinator flows (agents, Kubernetes)
/// reach it.
impl LiveSink for LiveView {
    fn second(&mut self, s: &LiveSecond, totals: &Totals) -> Control {
        LiveView::second(self, s, totals)
    }
    fn notice(&mut self, n: &Notice) {
        LiveView::notice(self, n);
    }
    fn finish(&mut self) {
        LiveView::finish(self);
    }
    fn wants_scrapes(&self) -> bool {
        LiveView::wants_scrapes(self)
    }
    fn scrape(&mut self, endpoint: &str, s: &pado_metrics::ScrapeOutcome) {
        LiveView::scrape(self, endpoint, s);
    }
}

/// A client for each agent of `--generators`, with the coordinator's token and
/// the trust `--agent-fingerprint`/`--agent-ca` give (one per agent).
fn clients(
    a: &RunArgs,
    token: &Token,
    trust: &[AgentTrust],
) -> Result<Vec<GeneratorClient>, Failure> {
    a.generators
        .iter()
        .zip(trust)
        .map(|(u, t)| GeneratorClient::new(u.trim(), Some(token.expose().to_string()), t))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::invalid(format!("--generators: {e}")))
}

/// The segments of a test on `n` generators, weighted as the jobs are.
fn segments_of(n: usize, weights: Option<&str>) -> Result<Vec<Segment>, Failure> {
    (0..n)
        .map(|i| crate::split::segment(&format!("{i}/{n}"), weights))
        .collect()
}

/// The agents named `names`, in segment order, each with its segment.
fn generators(names: &[String], weights: Option<&str>) -> Result<Vec<Generator>, Failure> {
    Ok(names
        .iter()
        .zip(segments_of(names.len(), weights)?)
        .map(|(name, segment)| Generator {
            name: name.clone(),
            segment,
        })
        .collect())
}

/// How a change of the load reaches agent `i` of `urls`: its `POST /control`, on a
/// connection of its own (the live loop's are busy on another thread), within the
/// client's request timeout.
fn agent_sender(urls: &[String], token: &Token, trust: &[AgentTrust]) -> SendFn {
    let urls = urls.to_vec();
    let token = token.expose().to_string();
    let trust = trust.to_vec();
    Arc::new(move |i: usize, cmd: &ControlCommand| {
        let body = serde_json::to_vec(cmd).map_err(|e| e.to_string())?;
        let (Some(url), Some(trust)) = (urls.get(i), trust.get(i)) else {
            return Err(format!("no generator {i}"));
        };
        let mut client = GeneratorClient::new(url.trim(), Some(token.clone()), trust)
            .map_err(|e| e.to_string())?;
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?
            .block_on(client.control(&body))
    })
}

/// The flags only the first segment runs with: `--observe` (one scraper for the
/// whole test).
fn observe_flags(a: &RunArgs) -> Vec<String> {
    let mut v = Vec::new();
    for o in &a.load.observe {
        v.extend(["--observe".into(), o.clone()]);
    }
    if let Some(i) = &a.load.observe_interval {
        v.extend(["--observe-interval".into(), i.clone()]);
    }
    v
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
    use pado_fleet::agent::{self, AgentOptions, Started};
    use pado_fleet::bundle::JobSpec;
    use std::sync::Mutex;

    const TOKEN: &str = "control-token-0123456789abcdef";

    /// A running agent whose job's run records every control body it is handed.
    fn recording_agent(work: &Path) -> (agent::AgentHandle, Arc<Mutex<Vec<String>>>) {
        let got = Arc::new(Mutex::new(Vec::new()));
        let seen = got.clone();
        let launch: agent::Launch = Arc::new(move |_: &JobSpec, _: &Path, _: &Path| {
            let seen = seen.clone();
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let tx = Mutex::new(tx);
            Ok(Started {
                stop: Arc::new(move || {
                    let _ = tx.lock().unwrap().send(());
                }),
                wait: Box::new(move || {
                    let _ = rx.recv_timeout(Duration::from_secs(30));
                    0
                }),
                control: Some(Arc::new(move |body: &[u8]| {
                    seen.lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(body).into_owned());
                    Ok(())
                })),
            })
        });
        let opts = AgentOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            work_dir: work.to_path_buf(),
            token: Token::new(TOKEN).unwrap(),
            host_names: Vec::new(),
            patience: pado_fleet::job::PATIENCE,
            keep_for: Duration::from_secs(5),
            say: Arc::new(|_| {}),
            tls: None,
        };
        let handle = agent::start(opts, launch).unwrap();
        let job = JobSpec {
            test_name: "제어".into(),
            segment: "0/1".into(),
            args: vec!["s.yaml".into()],
        };
        let tar = bundle::pack(
            &job,
            &[FileEntry {
                path: "s.yaml".into(),
                bytes: b"x".to_vec(),
            }],
        )
        .unwrap();
        let mut c = GeneratorClient::new(
            &handle.addr.to_string(),
            Some(TOKEN.into()),
            &AgentTrust::SystemRoots,
        )
        .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(c.expect("POST", "/job", &tar, Duration::from_secs(5), 201))
            .unwrap();
        (handle, got)
    }

    #[test]
    fn a_change_reaches_every_agent_split_by_segment_and_one_that_is_down_is_named() {
        let (w0, w2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (a0, got0) = recording_agent(w0.path());
        let (a2, got2) = recording_agent(w2.path());
        // Generator 1's address has nothing listening.
        let down = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let urls = vec![a0.addr.to_string(), down.to_string(), a2.addr.to_string()];
        let trust = vec![AgentTrust::SystemRoots; 3];
        let send = agent_sender(&urls, &Token::new(TOKEN).unwrap(), &trust);
        let yaml = "name: 제어\ntarget: http://127.0.0.1:9\nscenarios:\n  s:\n    executor: constant-vus\n    vus: 10\n    duration: 10s\n    flow:\n      - request: /\n";
        let config = pado_scenario::parse_str(yaml, "t.yaml").unwrap();
        let plan = pado_engine::compile(&config, Path::new(".")).unwrap();
        let gens = segments_of(3, None)
            .unwrap()
            .into_iter()
            .zip(&urls)
            .map(|(segment, u)| Generator {
                name: format!("generator {}/3 ({u})", segment.index()),
                segment,
            })
            .collect();
        let run = DistributedRun::new(Arc::new(plan), gens, send);
        let t = std::time::Instant::now();
        let e = pado_session::LiveRun::apply(
            &run,
            &ControlCommand::SetVus {
                vus: 7,
                ramp_s: 0.0,
            },
        )
        .unwrap_err()
        .to_string();
        assert!(t.elapsed() < Duration::from_secs(12), "{:?}", t.elapsed());
        assert!(
            e.contains(&format!("generator 1/3 ({down})")) && e.contains("refused"),
            "{e}"
        );
        assert!(!e.contains(TOKEN), "{e}");
        // 7 VUs over three even segments: 3 + 2 + 2; the two that are up got theirs.
        assert_eq!(
            *got0.lock().unwrap(),
            vec![r#"{"action":"set_vus","vus":3,"ramp_s":0.0}"#.to_string()]
        );
        assert_eq!(
            *got2.lock().unwrap(),
            vec![r#"{"action":"set_vus","vus":2,"ramp_s":0.0}"#.to_string()]
        );
        assert_eq!(run.changes().len(), 1, "recorded once");
        a0.shutdown();
        a2.shutdown();
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
