//! `pado k8s`: wiring only. The scenario is read and compiled here as `pado run`
//! would (so a broken file fails before anything is created), turned into a
//! `pado_k8s::GeneratorSpec`, and handed to the manifests (`render`) or the
//! coordinator flow (`run`, with a [`LiveView`] of the whole test: one progress
//! line of the merged seconds, and the `abort_on_fail` thresholds judged on them);
//! `generator` is what the Job's pods run.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use pado_fleet::flow::{Collected, Say};
use pado_k8s::flow;
use pado_k8s::{FileEntry, FlowError, FlowOptions, GeneratorSpec, Resources};

use crate::args::{K8sCommand, K8sGeneratorArgs, K8sRunArgs, K8sTestArgs};
use crate::config::{LoadFlags as _, LoadSpec};
use crate::exit::{self, Failure};
use crate::live_view::LiveView;
use crate::out::out;

/// `pado k8s ...`.
pub(crate) fn command(what: &K8sCommand) -> Result<i32, Failure> {
    match what {
        K8sCommand::Render(a) => render(a),
        K8sCommand::Run(a) => run(a),
        K8sCommand::Generator(a) => generator(a),
    }
}

/// `pado k8s render`: the manifests a run would create, as YAML.
fn render(a: &K8sTestArgs) -> Result<i32, Failure> {
    let ns = a.namespace.clone().unwrap_or_else(|| "default".into());
    let (spec, _) = spec_from(a, ns)?;
    let yaml = pado_k8s::manifests::render_yaml(&spec, time::OffsetDateTime::now_utc())
        .map_err(Failure::other)?;
    out!("{yaml}");
    Ok(exit::OK)
}

/// `pado k8s run`: connect, build the spec, run the flow with Ctrl-C counted, merge.
fn run(a: &K8sRunArgs) -> Result<i32, Failure> {
    let pending = crate::parse_dur("pending-timeout", &a.pending_timeout)?;
    let history = crate::history_cmd::Recorder::from_args(&a.history)?;
    let dashboard =
        crate::dashboard_cmd::DashboardSpec::from_args(&a.dashboard, a.history.history.as_deref())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Failure::other)?;
    rt.block_on(async {
        let (clients, context_ns) =
            pado_k8s::cluster::connect(a.kubeconfig.as_deref(), a.context.as_deref())
                .await
                .map_err(|e| Failure::invalid(e.to_string()))?;
        let ns = a.test.namespace.clone().unwrap_or(context_ns);
        let (spec, live) = spec_from(&a.test, ns)?;
        let out = local_dir(a.out.as_deref(), &spec.test_id)?;
        let mut opts = FlowOptions::new(out.clone());
        opts.pending_timeout = pending;
        let n = spec.generators;
        let names: Vec<String> = (0..n)
            .map(|i| format!("generator {i}/{n} (pod {}-{i}-…)", spec.test_id))
            .collect();
        let steering = pado_k8s::live::PodSteering::default();
        let steered = Arc::new(steered_run(&live.plan, &names, &steering)?);
        steered.started(pado_fleet::flow::instant_of(std::time::SystemTime::from(
            spec.start_at,
        )));
        let view = LiveView::new(
            a.quiet,
            spec.planned.as_secs_f64(),
            live.stages.clone(),
            &live.thresholds,
            &live.steps,
            names,
        )
        .feeding(steered.clone());
        let page =
            crate::live_view::page(dashboard.as_ref(), &live.plan, &live.thresholds, &steered)?;
        let mut view = view.showing_scrapes(page.is_some());
        let (tx, rx) = tokio::sync::watch::channel(0u32);
        crate::signals::install(move |_| tx.send_modify(|n| *n += 1)).map_err(Failure::other)?;
        // On a terminal the progress line is redrawn in place: clear it first, so a
        // line said meanwhile (a result collected, a failed pod) stands alone.
        let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let say: Say = Arc::new(move |line: &str| {
            if tty {
                eprint!("\r\x1b[2K");
            }
            eprintln!("{line}");
        });
        opts.steering = steering.clone();
        let c = flow::run(clients, &spec, &opts, rx, say, &mut view)
            .await
            .map_err(|e| match e {
                FlowError::Spec(e) => Failure::invalid(e.to_string()),
                FlowError::Interrupted => Failure {
                    code: exit::INTERRUPTED,
                    message: e.to_string(),
                },
                e => Failure::other(e),
            })?;
        if let Some(why) = &c.stopped {
            eprintln!("the test was stopped ({why}): merging what the generators wrote as partial");
        }
        let changes = steered.changes();
        let code = merge_collected(&c, &out, a.quiet, &live.report, &history, &changes);
        if let (Some(d), Some(page)) = (&dashboard, &page) {
            page.finished(&out.join("merged"));
            d.linger(page);
        }
        code
    })
}

/// The test on its pods as a run a dashboard watches and steers: each change split
/// by segment (the pods' segments are even) and sent to each pod's `/control`
/// through `steering`.
fn steered_run(
    plan: &Arc<pado_engine::RunPlan>,
    names: &[String],
    steering: &pado_k8s::live::PodSteering,
) -> Result<pado_session::DistributedRun, Failure> {
    let n = names.len();
    let generators = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            Ok(pado_session::Generator {
                name: name.clone(),
                segment: crate::split::segment(&format!("{i}/{n}"), None)?,
            })
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    let steering = steering.clone();
    let send: pado_session::SendFn = Arc::new(move |i, cmd| {
        let body = serde_json::to_vec(cmd).map_err(|e| e.to_string())?;
        steering.send(i, &body)
    });
    Ok(pado_session::DistributedRun::new(
        plan.clone(),
        generators,
        send,
    ))
}

/// What the live view and the merge need of the compiled scenario and the `pado run`
/// flags after `--`.
struct LiveParts {
    stages: Vec<pado_results::StageMark>,
    thresholds: Vec<pado_analysis::thresholds::Threshold>,
    /// The plan's steps, which thresholds' `scenario`, `method` and `group` select.
    steps: pado_metrics::StepCatalog,
    /// report.html, `--export` files and `--window`s, for the merged result as a
    /// single `pado run` would write them into its own.
    report: pado_session::Output,
    /// The whole test's plan: what a change of the load is split by.
    plan: Arc<pado_engine::RunPlan>,
}

/// The collected segment directories merged as `pado merge` merges them, into
/// `merged/` beside them: the merged summary, report and exit code are the run's.
/// A stopped run (Ctrl-C, or an `abort_on_fail` threshold on the merged seconds) is
/// merged as partial (its missing segments were stopped on purpose; the merged
/// thresholds judge it); otherwise a missing segment fails the merge, which names
/// it.
fn merge_collected(
    c: &Collected,
    out: &Path,
    quiet: bool,
    report: &pado_session::Output,
    history: &crate::history_cmd::Recorder,
    changes: &[pado_results::events::EventRecord],
) -> Result<i32, Failure> {
    let merged = out.join("merged");
    crate::merge_cmd::merge(&crate::merge_cmd::MergeArgs {
        dirs: &c.dirs,
        out: &merged,
        allow_partial: c.is_partial(),
        overwrite: false,
        html: report.html,
        quiet,
        exports: &report.exports,
        windows: &report.windows,
        history,
        // The changes the coordinator made, once each; with none, the pods' own.
        control: (!changes.is_empty()).then_some(changes),
    })
}

/// The local directory for the segments' results: `--out` (new or empty) or a new
/// one under pado-results/.
fn local_dir(out: Option<&Path>, test_id: &str) -> Result<PathBuf, Failure> {
    let dir = match out {
        Some(p) => p.to_path_buf(),
        None => {
            PathBuf::from(pado_base::names::RESULTS_PARENT).join(pado_base::names::result_dir_stem(
                &format!("k8s-{test_id}"),
                std::time::SystemTime::now(),
            ))
        }
    };
    let io = |e: std::io::Error| Failure::other(format!("{}: {e}", dir.display()));
    std::fs::create_dir_all(&dir).map_err(io)?;
    if std::fs::read_dir(&dir).map_err(io)?.next().is_some() {
        return Err(Failure::invalid(format!(
            "--out {}: not empty (give a new or empty directory)",
            dir.display()
        )));
    }
    Ok(dir)
}

/// The test as the manifests need it: the scenario read with the `pado run` flags
/// after `--` and compiled (its errors at their lines, now), its data and body
/// files, the planned length; its stages and thresholds for the live view, and what
/// the merged result is to be written with.
fn spec_from(a: &K8sTestArgs, namespace: String) -> Result<(GeneratorSpec, LiveParts), Failure> {
    let run_flags = run_args_of(a)?;
    crate::secret_flags::refuse_credentials(
        &run_flags,
        crate::secret_flags::Destination::K8sJob {
            env_secret: a.env_from_secret.as_deref(),
            namespace: a.namespace.as_deref(),
        },
    )?;
    // The scenario as every pod will load it: the file with the flags after `--`
    // (a `--duration` there is the test's length here too).
    let prep = LoadSpec::from_run_args(&run_flags)?.load()?;
    // With a Secret for the pods' environment, a `{{ env.X }}` unset here is the
    // pods' to resolve; without one, the pods would have no value either.
    let plan = match &a.env_from_secret {
        Some(secret) => {
            let (plan, deferred) = prep.compile_for_elsewhere()?;
            if let Some(note) = deferred_env_note(&deferred, secret) {
                eprintln!("{note}");
            }
            plan
        }
        None => prep.compile()?,
    };
    if !prep.config.setup.is_empty() && a.setup_vars.is_none() {
        return Err(Failure::invalid(format!(
            "{}: the scenario has a global setup, which must run once for all generators: \
             run `pado setup {} --out vars.json`, then pass --setup-vars vars.json",
            prep.file,
            a.file.display()
        )));
    }
    let read = |p: &Path, what: &str| {
        pado_scenario::limits::read_capped(p, pado_k8s::spec::MAX_CONFIG_BYTES as u64 + 1)
            .map_err(|e| Failure::invalid(format!("{what} {}: {e}", p.display())))
    };
    let scenario_name = a
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scenario.yaml".into());
    let data_files =
        crate::bundle_files::data_files(&prep, pado_k8s::spec::MAX_CONFIG_BYTES as u64 + 1)?;
    let setup_vars = match &a.setup_vars {
        Some(p) => Some(read(p, "--setup-vars")?),
        None => None,
    };
    let test_name = a.name.clone().unwrap_or_else(|| {
        a.file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "test".into())
    });
    let spec = GeneratorSpec {
        test_id: pado_base::names::test_id(&test_name, &pado_base::names::run_suffix()),
        test_name,
        namespace,
        image: a.image.clone(),
        image_pull_policy: a.image_pull_policy.clone(),
        generators: a.generators,
        scenario: FileEntry {
            path: scenario_name,
            bytes: read(&a.file, "scenario")?,
        },
        data_files,
        setup_vars,
        start_at: start_at(&a.start_at)?,
        planned: plan.planned_duration(),
        graceful_stop: plan
            .scenarios
            .iter()
            .map(|s| s.graceful_stop)
            .max()
            .unwrap_or_default(),
        serve_timeout: std::time::Duration::from_secs(300),
        resources: Resources {
            cpu_request: a.cpu.clone(),
            cpu_limit: a.cpu_limit.clone(),
            memory_request: a.memory.clone(),
            memory_limit: Some(a.memory_limit.clone()),
        },
        extra_args: a.run_args.clone(),
        port: pado_k8s::spec::DEFAULT_PORT,
        env_from_secret: a.env_from_secret.clone(),
        token: pado_k8s::spec::Token::generate().map_err(Failure::other)?,
        results_size_limit: a.results_size_limit.trim().to_string(),
    };
    spec.check()
        .map_err(|e| Failure::invalid(format!("{}: {e}", a.file.display())))?;
    let live = LiveParts {
        stages: plan.stage_marks(),
        thresholds: prep.thresholds.clone(),
        steps: plan.steps.clone(),
        report: pado_session::Output {
            html: !run_flags.no_html,
            exports: run_flags.exports.clone(),
            windows: crate::parse_windows(&run_flags.windows)?,
            ..Default::default()
        },
        plan: Arc::new(plan),
    };
    Ok((spec, live))
}

/// The note telling which `{{ env.X }}` variables were not set here and so are
/// expected from the pods' Secret (`None` when every one was set here).
fn deferred_env_note(names: &[String], secret: &str) -> Option<String> {
    if names.is_empty() {
        return None;
    }
    let list = names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    Some(format!(
        "note: {list} not set here: each pod reads {} from Secret `{secret}` \
         (--env-from-secret); a pod without {} fails its run",
        if names.len() == 1 { "it" } else { "them" },
        if names.len() == 1 {
            "it"
        } else {
            "one of them"
        },
    ))
}

/// The `pado run` flags after `--`, read as `pado run FILE FLAGS...` reads them, so a
/// misspelt flag or a bad value is an error now, before any pod exists, and what
/// they change (the length, thresholds, exports, windows) is known here too. Flags
/// the Job sets for every pod itself, or that a pod cannot honour, are refused with
/// what to use instead.
fn run_args_of(a: &K8sTestArgs) -> Result<crate::args::RunArgs, Failure> {
    use clap::Parser;
    let argv = ["pado".into(), "run".into(), a.file.clone().into_os_string()]
        .into_iter()
        .chain(a.run_args.iter().map(Into::into));
    let run = match crate::args::Cli::try_parse_from(argv) {
        Ok(crate::args::Cli {
            command: crate::args::Command::Run(run),
        }) => *run,
        Ok(_) => {
            return Err(Failure::invalid(
                "the flags after `--` are not `pado run` flags".to_string(),
            ))
        }
        Err(e) => {
            // clap's message and its tip, without the usage lines.
            let text = e.to_string();
            let said: Vec<&str> = text
                .lines()
                .map(str::trim)
                .take_while(|l| !l.starts_with("Usage:"))
                .filter(|l| !l.is_empty())
                .collect();
            return Err(Failure::invalid(format!(
                "the `pado run` flags after `--`: {}",
                said.join("; ").trim_start_matches("error: ")
            )));
        }
    };
    let refused = [
        (
            run.segment.is_some(),
            "--segment",
            "each pod's segment is its Job index",
        ),
        (
            run.start_at.is_some(),
            "--start-at",
            "give `pado k8s run --start-at`",
        ),
        (
            run.out.is_some(),
            "--out",
            "give `pado k8s run --out` for the local results",
        ),
        (
            run.overwrite,
            "--overwrite",
            "each pod writes a new directory",
        ),
        (
            run.setup_vars.is_some(),
            "--setup-vars",
            "give `pado k8s run --setup-vars`",
        ),
        (
            !run.generators.is_empty(),
            "--generators",
            "the pods are the generators",
        ),
        (
            run.once,
            "--once",
            "try the flow locally with `pado run --once`",
        ),
        (
            run.http_debug.is_some(),
            "--http-debug",
            "debug locally with `pado run --http-debug`",
        ),
    ];
    if let Some((_, flag, instead)) = refused.iter().find(|(given, ..)| *given) {
        return Err(Failure::invalid(format!(
            "`{flag}` after `--`: the generator pods cannot take it ({instead})"
        )));
    }
    Ok(run)
}

/// `--start-at` by `pado_scenario::start_at`'s rule, a relative one rounded up to
/// a whole second (what the pods print reads plainly).
fn start_at(v: &str) -> Result<time::OffsetDateTime, Failure> {
    pado_scenario::start_at::parse_start_at_whole_second(v, std::time::SystemTime::now())
        .map(time::OffsetDateTime::from)
        .map_err(|e| Failure::invalid(e.to_string()))
}

/// The generator's token, from the run's Secret by way of its environment
/// ([`pado_k8s::manifests::TOKEN_ENV`]). Without one it does not start: any pod of
/// the cluster could stop its run or take its result.
fn generator_token() -> Result<pado_fleet::access::Token, Failure> {
    let var = pado_k8s::manifests::TOKEN_ENV;
    let text = std::env::var(var).unwrap_or_default();
    if text.trim().is_empty() {
        return Err(Failure::invalid(format!(
            "pado k8s generator needs the run's token in {var} (the Job sets it from the Secret `pado k8s run` creates)"
        )));
    }
    pado_fleet::access::Token::new(&text).map_err(|e| Failure::invalid(format!("{var}: {e}")))
}

/// The run the generator wraps, for the SIGTERM/SIGINT forwarder.
static CHILD: AtomicI32 = AtomicI32::new(0);

/// Stops the wrapped run gracefully (SIGINT, as Ctrl-C): the kubelet's SIGTERM, or
/// the coordinator's `POST /stop`.
fn interrupt_child() {
    let pid = CHILD.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill(2) with a pid we started and a valid signal.
        unsafe {
            libc::kill(pid, libc::SIGINT);
        }
    }
}

/// `pado k8s generator`: start the result server, run `pado <command>` as a child
/// (in its own process group; a SIGTERM from the kubelet or a Ctrl-C is passed to
/// it as SIGINT, so it stops gracefully and writes its result), then serve the
/// result until the coordinator has it. Exits with the run's code.
fn generator(a: &K8sGeneratorArgs) -> Result<i32, Failure> {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let serve_timeout = crate::parse_dur("serve-timeout", &a.serve_timeout)?;
    let token = generator_token()?;
    let exe = std::env::current_exe().map_err(Failure::other)?;
    // One SIGTERM delivered twice (to the pod's process and its group) is one
    // request: forwarded once, or the child would read it as Ctrl-C twice.
    let _ = crate::signals::install(|_| interrupt_child());
    // A `run` can be steered: the coordinator's `POST /control` reaches it through
    // a socket beside its results.
    let socket = (a.command.first().map(String::as_str) == Some("run")).then(|| {
        pado_fleet::control_socket::socket_path(
            a.results.parent().unwrap_or(&a.results),
            "generator",
        )
    });
    let opts = pado_fleet::generator::GeneratorOptions {
        listen: a.listen,
        results: a.results.clone(),
        serve_timeout,
        stop: std::sync::Arc::new(interrupt_child),
        token,
        control: socket.clone().map(|path| {
            std::sync::Arc::new(move |body: &[u8]| pado_fleet::control_socket::send(&path, body))
                as pado_fleet::job::ControlFn
        }),
    };
    let mut command = a.command.clone();
    if let Some(path) = &socket {
        command.push("--control-socket".into());
        command.push(path.display().to_string());
    }
    pado_fleet::generator::serve_after(&opts, || {
        let child = std::process::Command::new(&exe)
            .args(&command)
            // The run has no use for it, and a scenario's `{{ env.X }}` must not
            // be able to send it anywhere.
            .env_remove(pado_k8s::manifests::TOKEN_ENV)
            .process_group(0)
            .spawn();
        match child {
            Ok(mut c) => {
                CHILD.store(c.id() as i32, Ordering::SeqCst);
                match c.wait() {
                    Ok(st) => st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0)),
                    Err(_) => exit::ERROR,
                }
            }
            Err(e) => {
                eprintln!("error: cannot start {}: {e}", exe.display());
                exit::ERROR
            }
        }
    })
    .map_err(|e| Failure::other(format!("--listen {}: {e}", a.listen)))
}
