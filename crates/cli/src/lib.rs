//! The `pado` command line: argument parsing, wiring of scenario → engine → result
//! directory → reports, terminal output and exit codes. No logic of its own beyond
//! that wiring; every decision lives in a library crate.

/// `eprintln!` that never panics, in place of std's for the whole crate (a
/// `macro_rules!` defined before the modules shadows the prelude's). std's panics when
/// stderr cannot be written, a full disk behind `2> run.log` or a closed pipe, and that
/// would turn a finished run into a crash (exit 101) at its last message, after its
/// results were written.
macro_rules! eprintln {
    () => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr());
    }};
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

/// `eprint!` that never panics (see `eprintln!` above).
// Only `pado k8s` prints without a line end.
#[cfg_attr(not(feature = "k8s"), allow(unused_macros))]
macro_rules! eprint {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($t)*);
    }};
}

mod agent_cmd;
mod allocator;
mod args;
mod built_in;
mod bundle_files;
mod config;
mod control_socket;
mod coordinator;
mod dashboard_cmd;
mod debugging;
mod demo;
mod exit;
mod experiment_cmd;
mod find_capacity;
mod history_cmd;
#[cfg(feature = "k8s")]
mod k8s_cmd;
mod live_outputs;
mod live_view;
mod merge_cmd;
mod open_faults;
mod out;
mod progress;
mod run_cmd;
mod script_summary;
mod secret_flags;
mod signals;
mod split;

use clap::Parser;

use out::{out, outln};

use args::{Cli, Command};

/// Run the CLI and return the process exit code.
pub fn main() -> i32 {
    allocator::tune();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::INVALID
            } else {
                exit::OK
            };
            let _ = e.print();
            return code;
        }
    };
    let result = match &cli.command {
        Command::Run(a) if !a.generators.is_empty() => coordinator::run(a),
        Command::Run(a) => {
            // A job's run on an agent refuses commands: it only says what it found.
            open_faults::recover_before_run(!a.refuse_commands);
            history_cmd::Recorder::from_args(&a.history).and_then(|h| {
                config::RunConfig::from_run_args(a).and_then(|c| run_cmd::run(&c, &h))
            })
        }
        Command::Events {
            what: args::EventsCommand::UndoOpen,
        } => open_faults::undo_open_cmd(),
        Command::Agent(a) => agent_cmd::agent(a),
        Command::Setup(a) => split::setup_cmd(a),
        Command::Validate { file, target } => validate(file, target.as_deref()),
        Command::Report {
            dir,
            shown,
            exports,
        } => report(dir, shown.quiet, exports, &shown.windows),
        Command::Merge {
            dirs,
            out,
            allow_partial,
            overwrite,
            no_html,
            shown,
            exports,
            history,
        } => history_cmd::Recorder::from_args(history).and_then(|h| {
            merge_cmd::merge(&merge_cmd::MergeArgs {
                dirs,
                out,
                allow_partial: *allow_partial,
                overwrite: *overwrite,
                html: !*no_html,
                quiet: shown.quiet,
                exports,
                windows: &parse_windows(&shown.windows)?,
                history: &h,
                control: None,
            })
        }),
        Command::Init { file, force } => init(file, *force),
        Command::Import { what } => import(what),
        Command::Demo(d) => demo_cmd(d),
        Command::Plan(p) => plan_cmd(p),
        Command::FindCapacity(f) => find_capacity_cmd(f),
        Command::Experiment(a) => experiment_cmd::run(a),
        Command::Compare {
            baseline,
            candidates,
            history,
            json,
            html,
            min_change,
        } => compare(
            baseline,
            candidates,
            history.as_deref(),
            *json,
            html.as_deref(),
            *min_change,
        ),
        Command::History { what, list } => match what {
            Some(args::HistoryCommand::Rebuild { dirs, history }) => {
                history_cmd::rebuild(dirs, history.as_deref())
            }
            None => history_cmd::list(list),
        },
        Command::Trend(t) => history_cmd::trend(t),
        Command::Docs { topic } => {
            docs(*topic);
            Ok(exit::OK)
        }
        Command::Completions { shell } => completions(*shell),
        Command::Man => man(),
        Command::Target {
            what: args::TargetCommand::Serve(t),
        } => target_serve(t),
        Command::K8s { what } => built_in::k8s(what),
        Command::Schema => {
            let s = pado_scenario::model::json_schema();
            outln!("{}", serde_json::to_string_pretty(&s).unwrap_or_default());
            Ok(exit::OK)
        }
    };
    match result {
        Ok(code) => code,
        Err(f) => {
            eprintln!("error: {}", f.message);
            f.code
        }
    }
}

/// `pado compare`: the arguments resolved (directories or run references), the
/// floor of a change from `--min-change` and the baseline's earlier runs.
fn compare(
    baseline: &std::path::Path,
    candidates: &[std::path::PathBuf],
    history: Option<&std::path::Path>,
    json: bool,
    html: Option<&std::path::Path>,
    min_change: f64,
) -> Result<i32, exit::Failure> {
    // An experiment's directory stands for its points' runs, in knob order.
    let args: Vec<std::path::PathBuf> = std::iter::once(baseline.to_path_buf())
        .chain(candidates.iter().cloned())
        .flat_map(|a| experiment_cmd::as_points(&a))
        .collect();
    if args.len() < 2 {
        return Err(exit::Failure::invalid(
            "compare needs two runs at least: a baseline and a candidate (or an experiment's directory with two points measured)",
        ));
    }
    let dirs = history_cmd::resolve_dirs(&args, history)?;
    let floor = pado_report::compare::NoiseFloor {
        min_change_pct: min_change,
        earlier_runs: history_cmd::earlier_runs(&dirs, history),
    };
    compare_cmd(&dirs, json, html, &floor)
}

/// `pado completions SHELL`: the shell's completion script.
fn completions(shell: clap_complete::Shell) -> Result<i32, exit::Failure> {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "pado", &mut buf);
    out!("{}", String::from_utf8_lossy(&buf));
    Ok(exit::OK)
}

/// `pado man`: the manual page (roff).
fn man() -> Result<i32, exit::Failure> {
    let cmd = <Cli as clap::CommandFactory>::command();
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut buf)
        .map_err(exit::Failure::other)?;
    out!("{}", String::from_utf8_lossy(&buf));
    Ok(exit::OK)
}

/// The documentation pages, embedded so that a binary-only install has them.
const DOCS: &[(args::DocTopic, &str, &str)] = &[
    (
        args::DocTopic::Scenario,
        "scenario",
        include_str!("../../../docs/scenario.md"),
    ),
    (
        args::DocTopic::DemoTarget,
        "demo-target",
        include_str!("../../../docs/demo-target.md"),
    ),
    (
        args::DocTopic::Results,
        "results",
        include_str!("../../../docs/result-format.md"),
    ),
    (
        args::DocTopic::Kubernetes,
        "kubernetes",
        include_str!("../../../docs/kubernetes.md"),
    ),
    (
        args::DocTopic::History,
        "history",
        include_str!("../../../docs/history.md"),
    ),
    (
        args::DocTopic::Outputs,
        "outputs",
        include_str!("../../../docs/outputs.md"),
    ),
    (
        args::DocTopic::Resilience,
        "resilience",
        include_str!("../../../docs/resilience.md"),
    ),
    (
        args::DocTopic::ScalingOut,
        "scaling-out",
        include_str!("../../../docs/scaling-out.md"),
    ),
    (
        args::DocTopic::Dashboard,
        "dashboard",
        include_str!("../../../docs/dashboard.md"),
    ),
    (
        args::DocTopic::Experiments,
        "experiments",
        include_str!("../../../docs/experiments.md"),
    ),
    (
        args::DocTopic::Llm,
        "llm",
        include_str!("../../../docs/llm.md"),
    ),
    (
        args::DocTopic::Scaling,
        "scaling",
        include_str!("../../../docs/scaling.md"),
    ),
    (
        args::DocTopic::K6,
        "k6",
        include_str!("../../../docs/coming-from-k6.md"),
    ),
];

/// `pado docs [TOPIC]`: a page, or the list of pages.
fn docs(topic: Option<args::DocTopic>) {
    match topic {
        Some(t) => {
            if let Some((_, _, text)) = DOCS.iter().find(|(k, _, _)| *k == t) {
                out!("{text}");
            }
        }
        None => {
            outln!("pado docs TOPIC prints one of these pages:");
            for (_, name, text) in DOCS {
                let title = text
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .trim_start_matches('#')
                    .trim();
                outln!("  {name:<12} {title}");
            }
        }
    }
}

/// `pado validate`: the scenario through stage two and compiled, as a run would
/// check it, without running.
fn validate(file: &std::path::Path, target: Option<&str>) -> Result<i32, exit::Failure> {
    let c = pado_session::prepare::check_file(file.to_path_buf(), target.map(str::to_string))?;
    for w in &c.warnings {
        eprintln!("warning: {w}");
    }
    outln!(
        "{}: ok ({} scenario{}, {} threshold{})",
        c.file,
        c.scenarios,
        if c.scenarios == 1 { "" } else { "s" },
        c.thresholds,
        if c.thresholds == 1 { "" } else { "s" }
    );
    Ok(exit::OK)
}

fn parse_dur(flag: &str, v: &str) -> Result<std::time::Duration, exit::Failure> {
    pado_base::units::parse_duration(v)
        .map_err(|e| exit::Failure::invalid(format!("--{flag}: {e}")))
}

/// `pado find-capacity`: flags checked (stage two), then the steps' directory,
/// then the search.
fn find_capacity_cmd(f: &args::FindCapacityArgs) -> Result<i32, exit::Failure> {
    let c = config::CapacityConfig::from_args(f)?;
    let history = history_cmd::Recorder::from_args(&f.history)?;
    let out = match &f.out {
        Some(p) => pado_session::user_out_dir(p, f.overwrite)?,
        None => pado_session::new_out_dir("capacity")?,
    };
    let search = pado_session::find_capacity::Search {
        load: c.load,
        overwrite: f.overwrite,
        plan: c.plan,
        hold: c.hold,
        sla: c.sla.clone(),
        max_dropped: pado_analysis::capacity::MAX_DROPPED,
        out,
        fault_state_dir: open_faults::state_dir(),
    };
    find_capacity::run(search, &c.sla, &history, f.json)
}

fn compare_cmd(
    dirs: &[std::path::PathBuf],
    json: bool,
    html: Option<&std::path::Path>,
    floor: &pado_report::compare::NoiseFloor,
) -> Result<i32, exit::Failure> {
    let loaded = pado_report::compare::load_runs(dirs).map_err(|e| match e {
        pado_report::compare::LoadError::NotResultDir(_) => exit::Failure::invalid(e.to_string()),
        pado_report::compare::LoadError::Unreadable(_) => exit::Failure::other(e),
    })?;
    let sides: Vec<_> = loaded.iter().map(|l| l.side()).collect();
    let c = pado_report::compare::compare_with(&sides, floor);
    if let Some(f) = html {
        std::fs::write(f, pado_report::compare::render_compare_html(&c))
            .map_err(|e| exit::Failure::other(format!("{}: {e}", f.display())))?;
    }
    if json {
        outln!("{}", pado_report::compare::render_compare_json(&c));
    } else {
        out!("{}", pado_report::compare::render_compare(&c));
    }
    Ok(exit::OK)
}

fn plan_cmd(p: &args::PlanArgs) -> Result<i32, exit::Failure> {
    use pado_analysis::planner::{plan, scenario_skeleton, PlanInput};
    let input = PlanInput {
        dau: p.dau,
        requests_per_user: p.requests_per_user,
        peak_factor: p.peak_factor,
        scenario_time_s: parse_dur("scenario-time", &p.scenario_time)?.as_secs_f64(),
        requests_per_scenario: p.requests_per_scenario,
        target_response_s: parse_dur("response-time", &p.response_time)?.as_secs_f64(),
    };
    let out = plan(&input).map_err(|e| exit::Failure::invalid(e.to_string()))?;
    outln!();
    for line in &out.formulas {
        outln!("  {line}");
    }
    outln!();
    outln!(
        "  average test: {} sending ~{:.2} req/s · peak test: {} sending ~{:.2} req/s",
        pado_base::units::vus(out.avg_vus as f64),
        out.avg_rps,
        pado_base::units::vus(out.peak_vus as f64),
        out.peak_rps
    );
    outln!(
        "    req/s is the planned load: what the users send, think time included; test with it."
    );
    outln!(
        "    target TPS ({:.0} at the peak) is VUs / response time: what the service would complete per",
        out.peak_target_tps
    );
    outln!("    second if those VUs sent requests back to back without thinking; a ceiling to stress-test");
    outln!("    towards, not the load users bring.");
    if let Some(f) = &p.write_scenario {
        std::fs::write(f, scenario_skeleton(&input, &out, &p.target))
            .map_err(|e| exit::Failure::other(format!("{}: {e}", f.display())))?;
        outln!(
            "  wrote {}: the average test, then the peak test, each sending its planned req/s as written",
            f.display()
        );
    }
    Ok(exit::OK)
}

fn demo_cmd(d: &args::DemoArgs) -> Result<i32, exit::Failure> {
    let duration = d
        .duration
        .as_deref()
        .map(|v| parse_dur("duration", v))
        .transpose()?;
    if duration.is_some_and(|x| x.is_zero()) {
        return Err(exit::Failure::invalid("--duration: must be more than 0"));
    }
    parse_dur("target-query-cost", &d.target_query_cost)?;
    demo::run(demo::DemoOptions {
        duration,
        out: d.out.clone(),
        quiet: d.quiet,
        soak: d.soak,
        scenario: d.scenario.clone(),
        exports: d.exports.clone(),
        dashboard: dashboard_cmd::DashboardSpec::from_args(&d.dashboard, None)?,
        target_args: vec![
            "--workers".into(),
            d.target_workers.to_string(),
            "--pool-size".into(),
            d.target_pool_size.to_string(),
            "--query-cost".into(),
            d.target_query_cost.clone(),
        ],
    })
}

fn target_serve(t: &args::TargetServeArgs) -> Result<i32, exit::Failure> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let mut opts = pado_demo_target::TargetOptions {
        port: t.port,
        host: t.host.clone(),
        allow_remote: t.allow_remote,
        workers: t.workers,
        max_queue: t.max_queue,
        pool_size: t.pool_size,
        query_cost: parse_dur("query-cost", &t.query_cost)?,
        posts: t.posts,
        tls: t.tls,
        ..Default::default()
    };
    if let Some(b) = &t.cpu_budget {
        opts.cpu_budget = Some(
            pado_demo_target::parse_cpu_budget(b)
                .map_err(|e| exit::Failure::invalid(format!("--cpu-budget: {e}")))?,
        );
    }
    opts.set_cache_size(t.cache_size);
    opts.faults.added_latency_ms = t.added_latency_ms;
    opts.faults.error_rate = t.error_rate;
    opts.faults.llm_batch_limit = t.llm_batch_limit;
    opts.faults.llm_prefill_ms_per_1k_tokens = t.llm_prefill_ms_per_1k_tokens;
    opts.faults.llm_decode_ms_per_token = t.llm_decode_ms_per_token;
    opts.faults.llm_batch_slowdown = t.llm_batch_slowdown;
    opts.validate().map_err(exit::Failure::invalid)?;
    let exit_after = t
        .exit_after
        .as_deref()
        .map(|v| parse_dur("exit-after", v))
        .transpose()?;
    let running = pado_demo_target::start(opts)
        .map_err(|e| exit::Failure::other(format!("demo target: {e}")))?;
    outln!("listening on {}", running.base_url());
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        let _ = crate::signals::install(move |_| stop.store(true, Ordering::SeqCst));
    }
    running.serve_until_stopped(&stop, exit_after);
    Ok(exit::OK)
}

fn init(file: &std::path::Path, force: bool) -> Result<i32, exit::Failure> {
    pado_scenario::init::write_example(file, force).map_err(|e| match e {
        pado_scenario::init::InitError::Exists(_) => exit::Failure::invalid(e.to_string()),
        pado_scenario::init::InitError::Write { .. } => exit::Failure::other(e),
    })?;
    outln!("wrote {}", file.display());
    outln!("  it runs as written against pado's demo target: start one with `pado target serve --port 8080`");
    outln!(
        "  in another terminal, then `pado run {0}` (`pado validate {0}` checks your edits)",
        file.display()
    );
    outln!(
        "  for your own service, edit `target` and the requests; the format: `pado docs scenario`"
    );
    Ok(exit::OK)
}

fn write_or_print(out: &Option<std::path::PathBuf>, text: &str) -> Result<i32, exit::Failure> {
    match out {
        Some(p) => {
            std::fs::write(p, text)
                .map_err(|e| exit::Failure::other(format!("{}: {e}", p.display())))?;
            eprintln!("wrote {}", p.display());
        }
        None => out!("{text}"),
    }
    Ok(exit::OK)
}

fn import(what: &args::ImportKind) -> Result<i32, exit::Failure> {
    use pado_scenario::import::{import_curl, import_har_file, to_yaml_with_source};
    use pado_scenario::import::{CurlContext, ImportOptions};
    let (imported, out, source) = match what {
        args::ImportKind::Har {
            file,
            out,
            include_static,
            no_checks,
            host,
        } => {
            let opts = ImportOptions {
                include_static: *include_static,
                checks: !*no_checks,
                host_filter: host.clone(),
            };
            let (imported, name) =
                import_har_file(file, &opts).map_err(|e| exit::Failure::invalid(e.to_string()))?;
            (imported, out, name)
        }
        args::ImportKind::Curl { command, out } => {
            let ctx = CurlContext::for_output(out.as_deref());
            let imported =
                import_curl(command, &ctx).map_err(|e| exit::Failure::invalid(e.to_string()))?;
            (imported, out, "curl".to_string())
        }
    };
    for n in &imported.notes {
        eprintln!("note: {n}");
    }
    write_or_print(out, &to_yaml_with_source(&imported.config, &source))
}

/// `peak=30s..60s` into stage marks.
pub(crate) fn parse_windows(
    windows: &[String],
) -> Result<Vec<pado_results::StageMark>, exit::Failure> {
    let mut out = Vec::new();
    for (i, w) in windows.iter().enumerate() {
        let bad = || {
            exit::Failure::invalid(format!(
                "--window `{w}`: write NAME=START..END, e.g. `peak=30s..60s`"
            ))
        };
        let (name, range) = w.split_once('=').ok_or_else(bad)?;
        let (a, b) = range.split_once("..").ok_or_else(bad)?;
        let start = parse_dur("window", a)?.as_secs_f64();
        let end = parse_dur("window", b)?.as_secs_f64();
        if name.trim().is_empty() || end <= start {
            return Err(bad());
        }
        out.push(pado_results::StageMark {
            scenario: "window".into(),
            index: i,
            start_s: start,
            end_s: end,
            label: name.trim().to_string(),
            target: 0.0,
            from: None,
        });
    }
    Ok(out)
}

fn report(
    dir: &std::path::Path,
    quiet: bool,
    exports: &[String],
    windows: &[String],
) -> Result<i32, exit::Failure> {
    if pado_session::experiment::record::is_experiment_dir(dir) {
        return experiment_cmd::print_table(dir);
    }
    let windows = parse_windows(windows)?;
    match pado_session::report(dir, exports, &windows)? {
        pado_session::Reported::Written(w) => print_and_judge(w, quiet),
        pado_session::Reported::InProgress(summary) => {
            if !quiet {
                let color = crate::out::color();
                out!(
                    "{}",
                    pado_report::render(&summary, pado_report::TextOptions { color })
                );
            }
            eprintln!(
                "note: {}: a run is writing this directory; nothing was written into it",
                dir.display()
            );
            Ok(if summary.passed() {
                exit::OK
            } else {
                exit::THRESHOLD_FAILED
            })
        }
    }
}

/// How a command that (re)wrote a result's reports ends, `pado report` and
/// `pado merge` alike: the summary printed (unless `quiet`), then a failed report
/// file as the error, else the exit code of the thresholds.
pub(crate) fn print_and_judge(
    pado_session::Written {
        summary,
        write_error,
    }: pado_session::Written,
    quiet: bool,
) -> Result<i32, exit::Failure> {
    if !quiet {
        let color = crate::out::color();
        out!(
            "{}",
            pado_report::render(&summary, pado_report::TextOptions { color })
        );
    }
    if let Some(e) = write_error {
        // Printed above (unless --quiet); the files are what failed.
        return Err(e.into());
    }
    Ok(if summary.passed() {
        exit::OK
    } else {
        exit::THRESHOLD_FAILED
    })
}
