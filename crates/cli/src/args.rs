//! Command-line arguments, stage one: the raw flags as clap parses them, strings
//! included. Nothing here is interpreted; [`crate::config`] (stage two) turns them,
//! with the scenario file, into a typed and validated `RunConfig`, as ripgrep
//! separates its low-level and high-level arguments. Every field is a flag the user
//! can give: no hidden or skipped fields carry values between commands.

use std::path::PathBuf;

/// `pado k8s`'s default `--results-size-limit`: written here too so the flags parse
/// in a lean build without the k8s crate (a test keeps it equal to the crate's).
const DEFAULT_RESULTS_SIZE_LIMIT: &str = "1Gi";

use clap::{Args, Parser, Subcommand};

/// pado: HTTP load testing and performance analysis in one binary.
#[derive(Debug, Parser)]
#[command(
    name = "pado",
    version = crate::built_in::VERSION,
    about = "HTTP load testing and performance analysis in one binary",
    long_about = None,
    after_help = EXIT_CODES
)]
pub(crate) struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The exit codes, as `pado --help` ends.
pub(crate) const EXIT_CODES: &str =
    "Exit codes: 0 success · 99 a threshold failed (also from `pado report` when \
the result's thresholds failed, and from `pado trend` when the latest run regressed) · 2 invalid usage or scenario · \
107 a k6 script that cannot run, 104 its options cannot run (k6's codes) · 1 other error · 130 interrupted \
by a second Ctrl-C (after one Ctrl-C the run stops gracefully, writes its results and exits \
with the code of its thresholds).

Colour: the summary is coloured on a terminal; NO_COLOR=1 turns colour off, CLICOLOR_FORCE=1 \
turns it on elsewhere.

Documentation: `pado docs scenario` (scenario files), `pado docs demo-target` (the demo \
target's routes and faults), `pado docs results` (the result directory), `pado docs kubernetes` \
(`pado k8s`), `pado docs history` (the run history, `pado trend`), `pado docs outputs` (live metrics to \
Prometheus, InfluxDB, OTLP), `pado docs resilience` (faults on the timeline, recovery), `pado docs \
scaling-out` (one test across many generators), `pado docs dashboard` (the live page, its JSON API), \
`pado docs experiments` (a knob swept over its values, `pado experiment`), `pado docs scaling` (reading an \
experiment: the scaling fit), `pado docs llm` (streaming LLM endpoints: time to first token, inter-token \
latency, tokens per second), `pado docs k6` (coming from k6).";

/// Subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run a load test: a scenario file, or a single URL (quick mode).
    Run(Box<RunArgs>),
    /// Run only a scenario's global setup and write its variables as JSON, for the
    /// segments of a split test (`pado run --segment i/N --setup-vars FILE`).
    ///
    /// Exits 2 when the scenario has no global setup, 1 when a setup request or
    /// extraction failed (the variables it did set are still written).
    Setup(Box<SetupArgs>),
    /// Check a scenario file and list every problem with its line.
    Validate {
        /// The scenario file.
        file: PathBuf,
        /// Base URL replacing the file's `target`, as `pado run --target` would give it.
        #[arg(long)]
        target: Option<String>,
    },
    /// Write a commented example scenario to start from.
    Init {
        /// Where to write it.
        #[arg(default_value = "pado.yaml")]
        file: PathBuf,
        /// Overwrite an existing file.
        #[arg(long)]
        force: bool,
    },
    /// Turn a browser recording (HAR) or a curl command into a scenario file.
    Import {
        /// What to import.
        #[command(subcommand)]
        what: ImportKind,
    },
    /// Print the JSON Schema of scenario files (for editor autocompletion).
    Schema,
    /// Capacity planning: RPS, peak RPS, VUs (Little's law), target TPS and worker
    /// threads from daily active users, as load testers compute them by hand.
    Plan(PlanArgs),
    /// Find the highest arrival rate that holds the SLA (open-model breakpoint search).
    FindCapacity(Box<FindCapacityArgs>),
    /// Sweep one knob (pods, a pool size, threads) over its values and rerun the
    /// same test at each: capacity (or a latency) against the knob, the bottleneck
    /// at each point and the scaling fit (`pado docs experiments`).
    Experiment(Box<ExperimentArgs>),
    /// Compare result directories against the first (the baseline): throughput,
    /// errors, latency and TTFB overall, per step and per stage, each change marked
    /// significant or within noise.
    ///
    /// Each run is a result directory or a run recorded in the history: its id,
    /// `last`, `last~N` (the N-th before the latest), `best` (the lowest p95 among
    /// runs of the same name; `best:NAME` for another name) or `label:KEY=VALUE`
    /// (the latest run with that label; `commit` also matches a prefix).
    Compare {
        /// The baseline: a result directory or a recorded run.
        #[arg(value_name = "BASELINE")]
        baseline: PathBuf,
        /// Runs compared with the baseline (directories or recorded runs). An
        /// experiment's directory stands for its points' runs, so `pado compare
        /// EXPERIMENT_DIR` alone compares its points with the first.
        #[arg(value_name = "CANDIDATE", num_args = 0..)]
        candidates: Vec<PathBuf>,
        /// The history database's directory for run references (default: as runs
        /// record).
        #[arg(long, value_name = "DIR")]
        history: Option<PathBuf>,
        /// Print the comparison as JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Also write the comparison as an HTML page.
        #[arg(long)]
        html: Option<PathBuf>,
        /// The smallest change, in %, that can be called better or worse: identical
        /// runs differ by a few percent as wholes (another moment, another process
        /// on the machine), which the per-second test cannot see. With 3 or more
        /// earlier runs of the same test in the history, their spread is used where
        /// it is larger. 0 leaves the per-second test alone.
        #[arg(long, value_name = "PCT", default_value_t = pado_analysis::between_runs::DEFAULT_MIN_CHANGE_PCT, value_parser = min_change_pct)]
        min_change: f64,
    },
    /// List the runs recorded in the history (newest first), or re-index result
    /// directories (`pado history rebuild DIR...`).
    ///
    /// Every `pado run`, `find-capacity` step and merged distributed run is recorded
    /// in `history.db` under `--history DIR`, `PADO_HOME`, `$XDG_DATA_HOME/pado` or
    /// `~/.local/share/pado` (`pado docs history`).
    #[command(args_conflicts_with_subcommands = true)]
    History {
        /// What to do besides listing.
        #[command(subcommand)]
        what: Option<HistoryCommand>,
        /// The listing's filters.
        #[command(flatten)]
        list: HistoryListArgs,
    },
    /// A metric across the recorded runs of one test, as text and an HTML chart;
    /// flags a significant regression of the latest run against the recent baseline
    /// (the noise-aware method of `pado compare`) and then exits 99.
    Trend(TrendArgs),
    /// Run the whole product on the built-in demo target: start it, run a stress test
    /// shaped like a real one (normal load, past the limit, recovery), show the result.
    Demo(DemoArgs),
    /// Scenario events (`events:`): what a killed run left behind.
    Events {
        /// What to do.
        #[command(subcommand)]
        what: EventsCommand,
    },
    /// The built-in demo target (a wiki/board API with real, tunable capacity).
    Target {
        /// What to do with it.
        #[command(subcommand)]
        what: TargetCommand,
    },
    /// Rebuild a result directory's summary and report from its files (also on another
    /// machine).
    ///
    /// Rewrites summary.json and report.html and prints the summary. Exits 99 when the
    /// run's thresholds failed, like the run did. A directory a run is still writing
    /// is read as far as it goes (the seconds so far, marked in progress) and left
    /// untouched.
    Report {
        /// The result directory.
        dir: PathBuf,
        /// The summary printed or not, and the stage table's windows.
        #[command(flatten)]
        shown: ReportShownArgs,
        /// Also write `csv` (timeline.csv, per second and step), `junit` (junit.xml of
        /// thresholds and checks) or `hdr` (latency.hlog, HdrHistogram's interval log of
        /// the latencies, for HdrHistogram's tools) into the result directory;
        /// repeatable or comma-separated (`--export junit,csv`). summary.json and
        /// report.html are always rewritten.
        #[arg(long = "export", value_name = "FORMAT", value_parser = ["csv", "junit", "hdr"], value_delimiter = ',')]
        exports: Vec<String>,
    },
    /// Merge the result directories of the segments of one split test (`pado run
    /// --segment i/N` on each generator) into one result: histograms added (exact
    /// percentiles of every request), thresholds judged on the merged data.
    ///
    /// Writes the merged directory (run.json, timeline.jsonl, generators.json,
    /// summary.json, report.html) and prints the summary. Refuses directories that are
    /// not segments of one test (exit 2). A missing or cut-short segment fails the merge
    /// (exit 1, nothing written) unless --allow-partial. Exits 99 when a threshold fails
    /// on the merged data.
    Merge {
        /// The segments' result directories, in any order.
        #[arg(value_name = "DIR", required = true, num_args = 1..)]
        dirs: Vec<PathBuf>,
        /// Where to write the merged result (created; must be empty unless
        /// --overwrite).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Merge what is there when segments are missing or ended early; the result
        /// is marked partial.
        #[arg(long)]
        allow_partial: bool,
        /// Replace pado's files in a non-empty --out.
        #[arg(long)]
        overwrite: bool,
        /// Do not write report.html.
        #[arg(long)]
        no_html: bool,
        /// The summary printed or not, and the stage table's windows.
        #[command(flatten)]
        shown: ReportShownArgs,
        /// Also write `csv` (timeline.csv, per second and step), `junit` (junit.xml of
        /// thresholds and checks) or `hdr` (latency.hlog, HdrHistogram's interval log of
        /// the latencies) into the merged directory; repeatable or comma-separated
        /// (`--export junit,csv`).
        #[arg(long = "export", value_name = "FORMAT", value_parser = ["csv", "junit", "hdr"], value_delimiter = ',')]
        exports: Vec<String>,
        /// Recording the merged run in the history.
        #[command(flatten)]
        history: HistoryArgs,
    },
    /// Print pado's documentation (scenario files, the demo target, result directories).
    ///
    /// The same text as the repository's docs/ folder, for installs without it.
    Docs {
        /// What to print; without it, the list of topics.
        #[arg(value_enum)]
        topic: Option<DocTopic>,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    ///
    /// E.g. `pado completions bash > ~/.local/share/bash-completion/completions/pado`,
    /// `pado completions zsh > "${fpath[1]}/_pado"`,
    /// `pado completions fish > ~/.config/fish/completions/pado.fish`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print pado's manual page (roff), e.g. `pado man > pado.1 && man ./pado.1`.
    Man,
    /// Be a load generator for coordinators elsewhere: wait for `pado run FILE
    /// --generators ...` to send a segment of a test, run it, stream its seconds
    /// live, stop when told, hand over its result. One job at a time; only
    /// coordinators sending the agent's token (`PADO_AGENT_TOKEN` or --token-file)
    /// are served, and a job's `events:` commands run only with --allow-commands.
    /// Values of `{{ env.X }}` come from the agent's own environment. Plain HTTP is
    /// for loopback and trusted networks; --tls serves HTTPS and prints the
    /// certificate's fingerprint for coordinators to pin.
    Agent(AgentArgs),
    /// One test across N pods of a Kubernetes cluster: `run` it (create, follow,
    /// collect, merge, clean up) or `render` its manifests.
    K8s {
        /// What to do.
        #[command(subcommand)]
        what: K8sCommand,
    },
}

/// `pado k8s` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum K8sCommand {
    /// Run the test on N generator pods (an Indexed Job), stream their output,
    /// collect their result directories, merge them, and delete what it created
    /// (also on Ctrl-C: the first stops the generators and merges what they wrote,
    /// the second stops collecting).
    Run(Box<K8sRunArgs>),
    /// Print the ConfigMap and Job a run would create, as YAML.
    Render(Box<K8sTestArgs>),
    /// Inside a generator pod: run `pado run ARGS...`, then serve its result
    /// directory for the coordinator (internal: the Job's pods run it).
    #[command(hide = true)]
    Generator(K8sGeneratorArgs),
}

/// What a distributed test is: shared by `pado k8s run` and `pado k8s render`.
#[derive(Debug, Args)]
pub(crate) struct K8sTestArgs {
    /// The scenario file (its data files go with it).
    pub file: PathBuf,
    /// How many generator pods (segments) share the load.
    #[arg(long, short = 'n')]
    pub generators: u32,
    /// Namespace (default: the kubeconfig context's, else `default`).
    #[arg(long)]
    pub namespace: Option<String>,
    /// The pado image the pods run (see docs/kubernetes.md to build and push it).
    #[arg(long, default_value = concat!("pado:", env!("CARGO_PKG_VERSION")))]
    pub image: String,
    /// The pods' imagePullPolicy (Always, IfNotPresent, Never).
    #[arg(long, value_parser = ["Always", "IfNotPresent", "Never"])]
    pub image_pull_policy: Option<String>,
    /// When every segment starts: RFC 3339 (`2026-11-23T10:00:00Z`) or `+DURATION`
    /// from now, time for the pods to be scheduled and pull the image.
    #[arg(long, default_value = "+60s")]
    pub start_at: String,
    /// Variables from `pado setup FILE --out vars.json`, handed to every segment
    /// (required when the scenario has a global setup).
    #[arg(long, value_name = "FILE")]
    pub setup_vars: Option<PathBuf>,
    /// A Secret whose keys become the generators' environment (for `{{ env.X }}`).
    #[arg(long, value_name = "NAME")]
    pub env_from_secret: Option<String>,
    /// CPU each pod requests.
    #[arg(long, default_value = "1")]
    pub cpu: String,
    /// CPU limit per pod (none by default: a throttled generator sends late).
    #[arg(long)]
    pub cpu_limit: Option<String>,
    /// Memory each pod requests.
    #[arg(long, default_value = "512Mi")]
    pub memory: String,
    /// Memory limit per pod.
    #[arg(long, default_value = "1Gi")]
    pub memory_limit: String,
    /// Test name for the objects' names and labels (default: the scenario's file name).
    #[arg(long)]
    pub name: Option<String>,
    /// Size limit of each pod's results volume (a Kubernetes quantity): a pod whose
    /// result grows past it is evicted and its segment named missing.
    #[arg(long, default_value = DEFAULT_RESULTS_SIZE_LIMIT)]
    pub results_size_limit: String,
    /// More `pado run` arguments for every segment, after `--`.
    #[arg(last = true, value_name = "RUN ARGS")]
    pub run_args: Vec<String>,
}

/// `pado k8s run` flags.
#[derive(Debug, Args)]
pub(crate) struct K8sRunArgs {
    /// The test.
    #[command(flatten)]
    pub test: K8sTestArgs,
    /// Kubeconfig file (default: KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (default: the current one).
    #[arg(long)]
    pub context: Option<String>,
    /// Local directory for the segments' results and the merged result (default
    /// pado-results/<UTC time>-k8s-<test id>); must be new or empty.
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// Longest a pod may stay Pending before the run fails naming its reason.
    #[arg(long, default_value = "5m")]
    pub pending_timeout: String,
    /// Do not print the generators' output.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Recording the merged run in the history.
    #[command(flatten)]
    pub history: HistoryArgs,
    /// The live dashboard of the whole test, as `pado run --dashboard`: a change
    /// of the load made there reaches every generator pod.
    #[command(flatten)]
    pub dashboard: DashboardArgs,
}

/// `pado k8s generator` flags (the Job's pods).
#[derive(Debug, Args)]
pub(crate) struct K8sGeneratorArgs {
    /// Address the result server listens on.
    #[arg(long, default_value = "0.0.0.0:7070")]
    pub listen: std::net::SocketAddr,
    /// The run's result directory (its `--out`).
    #[arg(long)]
    pub results: PathBuf,
    /// How long to keep the result after the run when the coordinator does not
    /// fetch it.
    #[arg(long, default_value = "300s")]
    pub serve_timeout: String,
    /// The pado command to run (`run FILE --segment ...`), after `--`.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// `pado docs` topics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum DocTopic {
    /// Scenario files: executors, requests, checks, data feeds, templates, thresholds.
    Scenario,
    /// The built-in demo target: its routes and its run-time faults.
    DemoTarget,
    /// The result directory's files and format.
    Results,
    /// Running a test on Kubernetes (`pado k8s`): objects, collection, cleanup, RBAC, the image.
    Kubernetes,
    /// The run history: where it is kept, `pado history`, references in `pado compare`, `pado trend`.
    History,
    /// Live outputs (`--output`): Prometheus remote write, InfluxDB, OTLP; the Grafana dashboard.
    Outputs,
    /// Resilience tests: faults on the timeline (`events:`) with expectations, and the examples.
    Resilience,
    /// One test across many generators: `--segment`, `pado merge`, `pado agent`, `--generators`.
    ScalingOut,
    /// The live dashboard (`--dashboard`): what it shows, its JSON API for scripts, its safety rules.
    Dashboard,
    /// Experiments (`pado experiment`): a knob swept over its values, the file, what it writes.
    Experiments,
    /// Load-testing an LLM endpoint: `sse:` steps, time to first token, inter-token latency, tokens per second.
    Llm,
    /// Reading an experiment: the scaling fit (USL), its predictions, the limit at each point.
    Scaling,
    /// Coming from k6: what runs unchanged, what differs, how flags map.
    K6,
}

/// `pado find-capacity` flags.
#[derive(Debug, Args)]
pub(crate) struct FindCapacityArgs {
    /// What to load, as `pado run` takes it (a scenario file, whose executors are
    /// replaced by the search's rates, or a URL with the quick-mode flags).
    #[command(flatten)]
    pub load: LoadArgs,
    /// First rate (iterations per second).
    #[arg(long, default_value_t = 50.0)]
    pub start_rate: f64,
    /// Each step multiplies the rate by this.
    #[arg(long, default_value_t = 1.5)]
    pub factor: f64,
    /// Highest rate to try.
    #[arg(long, default_value_t = 100_000.0)]
    pub max_rate: f64,
    /// How long each step holds its rate.
    #[arg(long, default_value = "10s")]
    pub hold: String,
    /// Bisection rounds after the first break.
    #[arg(long, default_value_t = 3)]
    pub refine: u32,
    /// SLA in threshold syntax (repeatable); default `p(95) < 200` and
    /// `http_req_failed: rate < 0.01`.
    #[arg(long = "sla", value_name = "EXPR")]
    pub sla: Vec<String>,
    /// Directory for the steps' result directories (default
    /// pado-results/<UTC time>-capacity).
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// Reuse a non-empty --out directory: pado's files from an earlier search are
    /// replaced (without it, such a directory is refused).
    #[arg(long)]
    pub overwrite: bool,
    /// Print the steps as JSON.
    #[arg(long)]
    pub json: bool,
    /// Recording each step in the history.
    #[command(flatten)]
    pub history: HistoryArgs,
}

/// `pado experiment` flags.
#[derive(Debug, Args)]
pub(crate) struct ExperimentArgs {
    /// The experiment file (a scenario with an `experiment:` block, or a file of
    /// its own naming the scenario).
    pub file: PathBuf,
    /// Base URL replacing the scenario's `target`.
    #[arg(long)]
    pub target: Option<String>,
    /// The experiment's directory (default
    /// pado-results/<UTC time>-<name>-experiment).
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// Reuse a non-empty --out directory.
    #[arg(long)]
    pub overwrite: bool,
    /// Print experiment.json's content instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Only the table at the end, no progress lines.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Recording each run in the history (each also labelled `knob=value`).
    #[command(flatten)]
    pub history: HistoryArgs,
}

/// `pado plan` inputs.
#[derive(Debug, Args)]
pub(crate) struct PlanArgs {
    /// Daily active users.
    #[arg(long)]
    pub dau: f64,
    /// Requests one user makes per day.
    #[arg(long)]
    pub requests_per_user: f64,
    /// Time one pass of the scenario takes, think time included (e.g. `430s`).
    #[arg(long)]
    pub scenario_time: String,
    /// Requests in one pass of the scenario (default: requests per user).
    #[arg(long)]
    pub requests_per_scenario: Option<f64>,
    /// Peak-to-average (safety) factor.
    #[arg(long, default_value_t = 4.0)]
    pub peak_factor: f64,
    /// Target response time.
    #[arg(long, default_value = "500ms")]
    pub response_time: String,
    /// Write a scenario skeleton (average and peak tests) to this file.
    #[arg(long)]
    pub write_scenario: Option<PathBuf>,
    /// Base URL for the skeleton.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    pub target: String,
}

/// `pado demo` flags.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Fit the stress test into this length (default 70s), e.g. `20s` for a quick look.
    #[arg(long, short = 'd')]
    pub duration: Option<String>,
    /// Result directory (must be new or empty).
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// No live progress.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Run this scenario file against the demo target instead of the bundled
    /// stress test (its `target` is replaced by the demo target's URL), e.g. one of
    /// `examples/resilience/`.
    #[arg(long, short = 's', value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Judge the run as a soak, as `pado run --soak` does: the target's memory and
    /// pools must not drift under steady load (try it on
    /// `examples/resilience/leak.yaml`).
    #[arg(long)]
    pub soak: bool,
    /// Also write machine outputs into the result directory, as `pado run --export`
    /// does: `csv` (timeline.csv), `junit` (junit.xml), `hdr` (latency.hlog);
    /// repeatable or comma-separated (`--export junit,csv`).
    #[arg(long = "export", value_name = "FORMAT", value_parser = ["csv", "junit", "hdr"], value_delimiter = ',')]
    pub exports: Vec<String>,
    /// Demo target worker pool size (its capacity knob).
    #[arg(long, default_value_t = 4)]
    pub target_workers: usize,
    /// Demo target database pool size.
    #[arg(long, default_value_t = 2)]
    pub target_pool_size: usize,
    /// Demo target per-query cost (pool 2 at 20 ms: ~100 queries/s, so the stress
    /// stage of the demo goes past the limit).
    #[arg(long, default_value = "20ms")]
    pub target_query_cost: String,
    /// The live dashboard, as `pado run --dashboard`.
    #[command(flatten)]
    pub dashboard: DashboardArgs,
}

/// `pado events` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum EventsCommand {
    /// Run the undo of every fault window a killed pado left open (`kill -9`, the
    /// OOM killer, a second Ctrl-C), as the next `pado run` does by itself.
    ///
    /// Reads the records runs keep in `$XDG_STATE_HOME/pado/open-faults/` (else
    /// `~/.local/state/pado/open-faults/`) while a window is open; a record whose
    /// pado still runs is left to it. Each undo is rendered from today's environment
    /// and bounded by its event's timeout; its outcome goes into that run's
    /// `events.jsonl`. Records not owned by you or open to others are named and not
    /// run. Exits 1 when an undo failed, could not run, or a record was not used.
    UndoOpen,
}

/// `pado target` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum TargetCommand {
    /// Serve the demo target until Ctrl-C (or --exit-after).
    Serve(TargetServeArgs),
}

/// The demo target's knobs.
#[derive(Debug, Args)]
pub(crate) struct TargetServeArgs {
    /// Port (0: any free port; the address is printed as `listening on URL`).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Address to bind (loopback unless --allow-remote).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Allow binding a non-loopback address.
    #[arg(long)]
    pub allow_remote: bool,
    /// Also accept TLS on the port, with a self-signed certificate made at start:
    /// HTTP/2 (ALPN h2) and HTTP/1.1 over https, wss:// and grpcs:// (clients need
    /// `insecure: true` / --insecure). Plain http:// keeps working on the same port.
    #[arg(long)]
    pub tls: bool,
    /// Worker pool size: requests handled at once (the rest queue).
    #[arg(long, default_value_t = 4)]
    pub workers: usize,
    /// Longest worker queue before requests are refused with 503 (0: unbounded).
    #[arg(long, default_value_t = 0)]
    pub max_queue: usize,
    /// Database connection pool size.
    #[arg(long, default_value_t = 8)]
    pub pool_size: usize,
    /// Time a query holds a database connection, e.g. `2ms`.
    #[arg(long, default_value = "2ms")]
    pub query_cost: String,
    /// CPU cores the service may burn (e.g. `0.5`); unlimited by default.
    #[arg(long)]
    pub cpu_budget: Option<String>,
    /// Cache entries (0 disables caching).
    #[arg(long, default_value_t = 1000)]
    pub cache_size: usize,
    /// Posts generated at start.
    #[arg(long, default_value_t = 20_000)]
    pub posts: usize,
    /// Fault: latency added to every API response, in ms.
    #[arg(long, default_value_t = 0)]
    pub added_latency_ms: u64,
    /// Fault: share of API requests answered 500 (0..1).
    #[arg(long, default_value_t = 0.0)]
    pub error_rate: f64,
    /// The demo LLM (`POST /v1/chat/completions`): generations run at once, like
    /// vLLM's max_num_seqs (the rest wait in a queue).
    #[arg(long, default_value_t = 8)]
    pub llm_batch_limit: u32,
    /// The demo LLM's prefill: ms before the first token per 1,000 prompt tokens.
    #[arg(long, default_value_t = 50.0)]
    pub llm_prefill_ms_per_1k_tokens: f64,
    /// The demo LLM's decode: ms per generated token with the batch to itself.
    #[arg(long, default_value_t = 20.0)]
    pub llm_decode_ms_per_token: f64,
    /// The demo LLM's slowdown per other generation in the batch (0.02: each
    /// token 2% slower per other running request).
    #[arg(long, default_value_t = 0.02)]
    pub llm_batch_slowdown: f64,
    /// Stop by itself after this long (e.g. `10m`).
    #[arg(long)]
    pub exit_after: Option<String>,
}

/// Import sources.
#[derive(Debug, Subcommand)]
pub(crate) enum ImportKind {
    /// A HAR file saved from the browser's network panel.
    Har {
        /// The HAR file.
        file: PathBuf,
        /// Write the scenario here instead of standard output.
        #[arg(long, short = 'o')]
        out: Option<PathBuf>,
        /// Keep static assets (.js, .css, images, fonts).
        #[arg(long)]
        include_static: bool,
        /// Do not add a status check per request.
        #[arg(long)]
        no_checks: bool,
        /// Keep only requests to this host.
        #[arg(long)]
        host: Option<String>,
    },
    /// A curl command line (as "Copy as cURL" gives it).
    Curl {
        /// The command, quoted as one argument.
        command: String,
        /// Write the scenario here instead of standard output.
        #[arg(long, short = 'o')]
        out: Option<PathBuf>,
    },
}

/// What to load and how every request is sent: the scenario file or the quick-mode
/// URL with its flags. Shared by `pado run` and `pado find-capacity`, so that every
/// such flag works the same in both.
#[derive(Debug, Default, Args)]
pub(crate) struct LoadArgs {
    /// Scenario file (YAML or JSON), or a k6 script (`.js`) run unchanged. Without
    /// it, --url is required.
    pub scenario: Option<PathBuf>,
    /// `NAME=VALUE` for a k6 script's `__ENV` (repeatable), as k6's `--env`.
    #[arg(long = "env", short = 'e', value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// `NAME=VALUE`: a tag on every request and metric sample of a k6 script
    /// (repeatable), as k6's `--tag`; thresholds select by it
    /// (`http_req_duration{NAME:VALUE}`).
    #[arg(long = "tag", value_name = "NAME=VALUE")]
    pub tags: Vec<String>,
    /// Quick mode: the URL to load.
    #[arg(long, short = 'u')]
    pub url: Option<String>,
    /// Base URL replacing the file's `target` (run one scenario against several systems).
    #[arg(long)]
    pub target: Option<String>,
    /// HTTP method for quick mode.
    #[arg(long, short = 'X')]
    pub method: Option<String>,
    /// Header `Name: value` (repeatable); added to every request.
    #[arg(long = "header", short = 'H', value_name = "HEADER")]
    pub headers: Vec<String>,
    /// Request body for quick mode.
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// File with the request body for quick mode.
    #[arg(long)]
    pub body_file: Option<PathBuf>,
    /// Open model: most VUs the pool may grow to.
    #[arg(long)]
    pub max_vus: Option<u32>,
    /// Request timeout, e.g. 10s (default 60s).
    #[arg(long)]
    pub timeout: Option<String>,
    /// Accept any TLS certificate.
    #[arg(long, short = 'k')]
    pub insecure: bool,
    /// Trust the CA certificates of this PEM file too (besides the system's trust
    /// store and the bundled roots); replaces the file's `defaults.tls.ca_cert`.
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
    /// Present this client certificate (PEM) to servers that ask for one (mutual
    /// TLS); needs --client-key.
    #[arg(long, value_name = "FILE", requires = "client_key")]
    pub client_cert: Option<PathBuf>,
    /// The private key (PEM) of --client-cert.
    #[arg(long, value_name = "FILE", requires = "client_cert")]
    pub client_key: Option<PathBuf>,
    /// Do not follow redirects: a 3xx is the response checks see (replaces the
    /// file's `defaults.follow_redirects`; a request's own `follow_redirects` wins).
    #[arg(long)]
    pub no_follow_redirects: bool,
    /// Send requests over HTTP/2 (ALPN `h2` over https, h2c with prior knowledge
    /// over http); the same as `--http 2`.
    #[arg(long, conflicts_with = "http")]
    pub http2: bool,
    /// HTTP version: `1.1` (default), `2` or `auto` (over https the server chooses
    /// h2 or HTTP/1.1 in ALPN); replaces the file's `defaults.http`.
    #[arg(long, value_name = "VERSION")]
    pub http: Option<String>,
    /// HTTP/2: most concurrent streams per connection (default 100); the VUs of a
    /// worker share connections; 1 gives a connection per VU. Replaces the file's
    /// `defaults.max_streams`.
    #[arg(long, value_name = "N")]
    pub max_streams: Option<u32>,
    /// How long a VU keeps its HTTP/1.1 connections: per-vu (default, keep-alive),
    /// per-iteration (each iteration connects anew, as a new user; k6's
    /// --no-vu-connection-reuse) or per-request (k6's --no-connection-reuse).
    /// Replaces the file's `defaults.connections`.
    #[arg(long, value_name = "POLICY", value_parser = ["per-vu", "per-iteration", "per-request"])]
    pub connections: Option<String>,
    /// Send every connection through this HTTP proxy (`http://[user:pass@]host:port`,
    /// a CONNECT tunnel per connection), replacing the file's `defaults.proxy` and
    /// the environment's HTTPS_PROXY/HTTP_PROXY/ALL_PROXY (NO_PROXY still applies).
    #[arg(long, value_name = "URL", conflicts_with = "no_proxy")]
    pub proxy: Option<String>,
    /// Connect directly, ignoring the proxy of the file and of the environment.
    #[arg(long)]
    pub no_proxy: bool,
    /// Ask for compressed responses (Accept-Encoding), e.g. `gzip,br,zstd,deflate`
    /// (default none, as wrk and oha); encoded responses are decoded for checks and
    /// counted before and after. Replaces the file's `defaults.compression`.
    #[arg(long, value_name = "CODINGS")]
    pub compression: Option<String>,
    /// How much of a response body checks and extraction see, e.g. 16MiB
    /// (default 4MiB; replaces the file's `defaults.max_body`).
    #[arg(long, value_name = "SIZE")]
    pub max_body: Option<String>,
    /// Scrape this Prometheus/OpenMetrics endpoint during the run (repeatable),
    /// `URL` or `NAME=URL`, e.g. `--observe app=http://127.0.0.1:8080/actuator/prometheus`.
    /// Its series are charted in the report and feed the bottleneck analysis (in
    /// `find-capacity`, each step names the component that limited the target).
    #[arg(long = "observe", value_name = "[NAME=]URL")]
    pub observe: Vec<String>,
    /// Time between scrapes (default 2s).
    #[arg(long, value_name = "DURATION")]
    pub observe_interval: Option<String>,
}

/// The live dashboard (`pado run`, `pado demo`).
#[derive(Clone, Debug, Default, Args)]
pub(crate) struct DashboardArgs {
    /// Serve a live page of the run: VUs, req/s, percentiles, errors, each step,
    /// thresholds, the target's metrics, and controls to pause, resume, change the
    /// VUs or the arrival rate, skip a stage or stop. Alone: on 127.0.0.1 at a free
    /// port; `--dashboard=ADDR:PORT` elsewhere (`0.0.0.0:8089` lets other machines
    /// see it). The address is printed at start, with the token that control needs
    /// after `#token=`; the page's JSON API drives a run from scripts too (`pado
    /// docs dashboard`).
    #[arg(long, value_name = "ADDR:PORT", num_args = 0..=1, require_equals = true,
          default_missing_value = "127.0.0.1:0")]
    pub dashboard: Option<String>,
    /// The token control calls must send (`Authorization: Bearer TOKEN`), at least
    /// 16 characters, e.g. `openssl rand -hex 32`; or from PADO_DASHBOARD_TOKEN,
    /// which keeps it out of the process list. Default: a new random one, printed
    /// in the dashboard's address. Without it the page is read-only.
    #[arg(long, value_name = "TOKEN", requires = "dashboard")]
    pub dashboard_token: Option<String>,
    /// Open the dashboard in the browser (`xdg-open`, `open`).
    #[arg(long, requires = "dashboard")]
    pub open: bool,
    /// Draw an earlier run of the same test beside this one: `last` (the latest
    /// recorded run of this test's name), `best` (its lowest p95) or a run id from
    /// `pado history`.
    #[arg(long, value_name = "last|best|RUN_ID", requires = "dashboard")]
    pub baseline: Option<String>,
    /// How long the page stays up after the run has ended (Ctrl-C ends it sooner),
    /// e.g. `10m`; `0` exits at once. Default: until Ctrl-C when pado runs in a
    /// terminal (its input and its messages), 0 otherwise (a CI job is not kept
    /// waiting).
    #[arg(long, value_name = "DURATION", requires = "dashboard")]
    pub dashboard_linger: Option<String>,
}

/// `pado run` flags. Load-shape flags override the file's executors (k6-style).
#[derive(Debug, Default, Args)]
pub(crate) struct RunArgs {
    /// What to load and how requests are sent.
    #[command(flatten)]
    pub load: LoadArgs,
    /// Closed model: number of VUs (with --duration, constant-vus; with
    /// --iterations, per-vu-iterations). Quick mode default: 10. On a scenario file,
    /// --vus alone changes the VUs of constant-vus and per-vu-iterations scenarios
    /// (other executors refuse it); with --duration it replaces the file's executors.
    #[arg(long, conflicts_with_all = ["rate", "stages", "step_ramp"])]
    pub vus: Option<u32>,
    /// Test length, e.g. 30s, 1m30s. Quick mode default: 10s. On a scenario file,
    /// --duration alone changes the length of each scenario and keeps its executor
    /// (constant-vus, constant-arrival-rate, ramping-vus `steps`); stage-based
    /// executors refuse it (give --stages or edit the file).
    #[arg(long, short = 'd', conflicts_with_all = ["iterations", "stages"])]
    pub duration: Option<String>,
    /// Open model: iterations per second (constant-arrival-rate). On a scenario file,
    /// --rate alone changes the rate of constant-arrival-rate scenarios (others refuse
    /// it); with --duration it replaces the file's executors.
    #[arg(long, conflicts_with_all = ["stages", "step_ramp", "iterations"])]
    pub rate: Option<f64>,
    /// Ramping VUs: stages `30s:100,1m:100,30s:0`.
    #[arg(long, conflicts_with_all = ["step_ramp", "iterations"])]
    pub stages: Option<String>,
    /// Ramping VUs in k6's spelling, one stage per flag: `-s 30s:100 -s 1m:0` is
    /// `--stages 30s:100,1m:0` (k6 scripts take it as `k6 run` does).
    #[arg(long = "stage", short = 's', value_name = "DURATION:TARGET",
          conflicts_with_all = ["stages", "step_ramp", "iterations", "vus", "duration", "rate"])]
    pub stage: Vec<String>,
    /// Step ramp `START:ADD:EVERY:MAX`, e.g. `10:20:10s:130` (nGrinder style).
    #[arg(long, conflicts_with = "iterations")]
    pub step_ramp: Option<String>,
    /// Iterations per VU (per-vu-iterations). On a k6 script, as `k6 run` reads
    /// it: iterations in all, shared by the VUs (shared-iterations).
    #[arg(long)]
    pub iterations: Option<u64>,
    /// Pause after each iteration, e.g. `1s` (closed model), overriding the file's.
    /// Not with --rate: in the open model the arrival rate sets the pace.
    #[arg(long, conflicts_with = "rate")]
    pub think: Option<String>,
    /// Result directory (default pado-results/<UTC time>-<name>, always a new
    /// one). A directory that already holds files is refused unless --overwrite.
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// Reuse a non-empty --out directory: pado's files in it (an earlier run's
    /// results) are removed first; other files are left alone.
    #[arg(long)]
    pub overwrite: bool,
    /// A named time window for the stage table, `NAME=START..END` (e.g.
    /// `peak=30s..60s`); repeatable.
    #[arg(long = "window", value_name = "NAME=START..END")]
    pub windows: Vec<String>,
    /// Do not write report.html into the result directory.
    #[arg(long)]
    pub no_html: bool,
    /// Also write machine outputs: `csv` (timeline.csv, per second and step),
    /// `junit` (junit.xml of thresholds and checks), `hdr` (latency.hlog,
    /// HdrHistogram's interval log of the latencies, for HistogramLogProcessor,
    /// HistogramLogAnalyzer and hdr-plot); repeatable or comma-separated
    /// (`--export junit,csv`). summary.json is always written.
    #[arg(long = "export", value_name = "FORMAT", value_parser = ["csv", "junit", "hdr"], value_delimiter = ',')]
    pub exports: Vec<String>,
    /// Stream per-second metrics while the run goes, `KIND=URL` (repeatable):
    /// `prometheus=http://127.0.0.1:9090/api/v1/write` (remote write),
    /// `influxdb=http://127.0.0.1:8086/write?db=pado` (or the v2 API
    /// `.../api/v2/write?org=O&bucket=B`, token from PADO_INFLUXDB_TOKEN),
    /// `otlp=http://127.0.0.1:4318/v1/metrics`. Every request as one line in a file
    /// (k6's `--out json=`/`csv=`): `raw-json=requests.jsonl`, `raw-csv=requests.csv`
    /// (`.gz` compresses). Never slows the load: what a store or the file does not
    /// take is dropped and counted (`pado docs outputs`).
    #[arg(long = "output", value_name = "KIND=URL")]
    pub outputs: Vec<String>,
    /// Print nothing while running (the summary is still written).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Threshold, k6 syntax: `p(95) < 200` or `http_req_failed: rate < 0.01` (repeatable).
    #[arg(long = "threshold", value_name = "EXPR")]
    pub thresholds: Vec<String>,
    /// Test name.
    #[arg(long)]
    pub name: Option<String>,
    /// Worker threads (default: the cores available).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Print every request and response to stderr as it happens: method, URL,
    /// headers, status, response headers, first 1 KiB of bodies, timings.
    /// Credential headers (Authorization, Cookie, Set-Cookie, Proxy-Authorization)
    /// show as *** unless `--http-debug=full`; values from `{{ env.X }}` always do.
    /// Slows the run: for debugging, not for measuring.
    #[arg(long, value_name = "full", num_args = 0..=1, require_equals = true,
          default_missing_value = "headers", value_parser = ["headers", "full"])]
    pub http_debug: Option<String>,
    /// Check the script instead of loading the target: one VU runs the setup, one
    /// iteration of each scenario's flow (each flow of a mix), the teardown, without
    /// think times, and prints every step (request, status, timings, checks with the
    /// value they saw, extracted values). Exit 0 when every request and check
    /// passed, 99 otherwise. Writes no result directory.
    #[arg(long)]
    pub once: bool,
    /// k6's `--summary-trend-stats`: the statistics of each trend in a k6
    /// script's `handleSummary` data, comma-separated (`avg,min,med,max,p(90),p(95)`
    /// is k6's default; also `count` and any `p(N)`), over the script's
    /// `summaryTrendStats`.
    #[arg(long, value_name = "STATS")]
    pub summary_trend_stats: Option<String>,
    /// k6's `--summary-time-unit` (`s`, `ms` or `us`), over the script's
    /// `summaryTimeUnit`: handed to `handleSummary` as k6 hands it.
    #[arg(long, value_name = "UNIT")]
    pub summary_time_unit: Option<String>,
    /// A soak test: the summary judges whether the target's memory, descriptors,
    /// threads or pools drift under steady load (`leak suspected`, `pool drift`,
    /// `latency drift` or `stable`; give the target's metrics with `observe:`), and a
    /// verdict other than stable fails the run (exit 99) like a threshold. A run
    /// planned for an hour or more gets the verdict without this flag, but not the
    /// exit code. The result is written as it goes: `pado report DIR` reads it while
    /// it runs (`pado docs resilience`).
    #[arg(long, conflicts_with = "once")]
    pub soak: bool,
    /// Stretch or compress the whole test (stages, durations, start times, events'
    /// times) to this length, keeping its shape, e.g. `--fit-to 20s` for a quick
    /// look. It fits the test the other flags made: after `--duration`, so
    /// `--duration 8h --fit-to 2s` is planned for 2 s.
    /// Kept out of `--help` (a tool for quick looks and tests, not a load model).
    #[arg(long, value_name = "DURATION", hide = true)]
    pub fit_to: Option<String>,
    /// Refuse a scenario whose `events:` run commands (`run:`, `shell:`): what
    /// `pado agent` gives a job's run unless started with `--allow-commands`, so the
    /// run itself refuses what the agent's check might have missed. Kept out of
    /// `--help` (the agent's, not a user's).
    #[arg(long, hide = true)]
    pub refuse_commands: bool,
    /// Listen on this Unix socket for changes of the load (a `ControlCommand` as
    /// JSON, one line per connection): how `pado agent` and `pado k8s generator`
    /// hand a coordinator's `POST /control` to the run they started. Kept out of
    /// `--help` (theirs, not a user's).
    #[arg(long, hide = true, value_name = "PATH")]
    pub control_socket: Option<PathBuf>,
    /// Run only segment `i` of `N` of the test (numbered from 0: `0/3`, `1/3`, `2/3`
    /// on three generators): its share of the VUs (at every instant), of the
    /// arrivals (the N schedules interleave into the single one) and of `sequential`
    /// feed rows; VU ids and `unique` rows stay distinct across segments. Segment 0
    /// runs the global setup and teardown; the others need --setup-vars when the
    /// file has a setup. Thresholds are printed but judged by `pado merge`, so a
    /// segment's exit code ignores them.
    #[arg(long, value_name = "i/N", conflicts_with = "once")]
    pub segment: Option<String>,
    /// Relative share of each segment, N positive integers, e.g. `2,1,1` (the first
    /// generator takes half). Default: all 1.
    #[arg(long, value_name = "W0,W1,...")]
    pub segment_weights: Option<String>,
    /// Begin second 0 of the run at this instant: RFC 3339 (`2026-11-23T10:00:00Z`)
    /// or `+DURATION` from now (`+30s`). Give every generator the same instant. At
    /// most 1s in the past or 24h ahead. Ctrl-C while waiting exits without a result
    /// directory.
    #[arg(long, value_name = "RFC3339|+DURATION", conflicts_with = "once")]
    pub start_at: Option<String>,
    /// Seed every VU with the global setup's variables from this file (made by
    /// `pado setup ... --out FILE`) instead of running the setup.
    #[arg(long, value_name = "FILE", conflicts_with = "once")]
    pub setup_vars: Option<PathBuf>,
    /// Run the test on these agents (`pado agent` on each host), split into one
    /// segment per agent, and show it live as one test: `host:port,host:port` or
    /// URLs. pado sends each its segment, starts them together (--start-at, default
    /// `+10s`), shows one progress line for the whole test, stops every generator
    /// when an `abort_on_fail` threshold fails on the merged seconds (or on Ctrl-C),
    /// then collects their results into --out (default pado-results/<time>-<name>)
    /// and merges them into `merged/` there. A token in `PADO_AGENT_TOKEN` is sent to
    /// every agent. Agents started with `--tls` are `https://HOST:PORT`, verified
    /// with --agent-fingerprint or --agent-ca.
    #[arg(long, value_name = "URL,URL,...", value_delimiter = ',',
          conflicts_with_all = ["segment", "once", "http_debug", "overwrite"])]
    pub generators: Vec<String>,
    /// Verify `https://` agents by their certificate's SHA-256 fingerprint, as
    /// `pado agent --tls` prints it (`sha256:AB:CD:...`): one for every agent, or
    /// one per agent in the order of --generators. A certificate with another
    /// fingerprint stops the run before anything is sent. With it, `host:port`
    /// means `https://` and an `http://` agent is refused.
    #[arg(
        long,
        value_name = "sha256:...",
        value_delimiter = ',',
        requires = "generators",
        conflicts_with = "agent_ca"
    )]
    pub agent_fingerprint: Vec<String>,
    /// Verify `https://` agents against the CA certificates in FILE (PEM) only,
    /// e.g. your own CA, or an agent's certificate written with
    /// `pado agent --tls-cert-out`. Without this or --agent-fingerprint, https
    /// agents are verified against the system's trust store.
    #[arg(long, value_name = "FILE", requires = "generators")]
    pub agent_ca: Option<PathBuf>,
    /// Recording the run in the history.
    #[command(flatten)]
    pub history: HistoryArgs,
    /// The live dashboard.
    #[command(flatten)]
    pub dashboard: DashboardArgs,
}

/// What `pado report` and `pado merge` show of the result they (re)write.
#[derive(Clone, Debug, Default, Args)]
pub(crate) struct ReportShownArgs {
    /// Do not print the summary (the files are still written).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// A named time window for the stage table, `NAME=START..END`; repeatable.
    #[arg(long = "window", value_name = "NAME=START..END")]
    pub windows: Vec<String>,
}

/// Where a run is recorded, and with which labels (`pado run`, `find-capacity`,
/// `merge`, `k8s run`).
#[derive(Clone, Debug, Default, Args)]
pub(crate) struct HistoryArgs {
    /// Keep the run history in DIR/history.db (default: PADO_HOME, else
    /// $XDG_DATA_HOME/pado, else ~/.local/share/pado).
    #[arg(long, value_name = "DIR")]
    pub history: Option<PathBuf>,
    /// Do not record this run in the history.
    #[arg(long, conflicts_with = "history")]
    pub no_history: bool,
    /// A label recorded with the run, `KEY=VALUE` (repeatable), e.g.
    /// `--label env=staging`. Inside a git repository `commit` is added unless given.
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
}

/// `pado history` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum HistoryCommand {
    /// Record result directories (again): their figures from summary.json, so the
    /// same directory twice is one run. Directories holding result directories
    /// (find-capacity's, a coordinator's) are searched one level down.
    Rebuild {
        /// Result directories.
        #[arg(value_name = "DIR", required = true, num_args = 1..)]
        dirs: Vec<PathBuf>,
        /// The history database's directory (default: as runs record).
        #[arg(long, value_name = "DIR")]
        history: Option<PathBuf>,
    },
}

/// `pado history` listing flags.
#[derive(Debug, Args)]
pub(crate) struct HistoryListArgs {
    /// Only runs of this test name.
    #[arg(long)]
    pub name: Option<String>,
    /// Only runs with this label, `KEY=VALUE` (repeatable: all must match).
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// Only runs started since: a duration back from now (`12h`, `7d`, `2w`) or an
    /// RFC 3339 time.
    #[arg(long, value_name = "7d|RFC3339")]
    pub since: Option<String>,
    /// At most this many runs (the latest).
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// Print the runs as JSON.
    #[arg(long)]
    pub json: bool,
    /// The history database's directory (default: as runs record).
    #[arg(long, value_name = "DIR")]
    pub history: Option<PathBuf>,
}

/// `pado trend` flags.
#[derive(Debug, Args)]
pub(crate) struct TrendArgs {
    /// The test's name (as `pado history` lists it), or an experiment's directory
    /// (its points' runs in knob order, read from their result directories).
    pub name: String,
    /// The metric: p50, p95, p99 (latency, ms), rps, failed (error rate, %); for LLM
    /// streams llm_ttft.p50|p95|p99, llm_itl.p50|p95|p99, llm_tpot.p50|p95 (ms),
    /// llm_tokens.rate (output tokens/s).
    #[arg(long, default_value = "p95", value_parser = [
        "p50", "p95", "p99", "rps", "failed", "llm_ttft.p50", "llm_ttft.p95", "llm_ttft.p99",
        "llm_itl.p50", "llm_itl.p95", "llm_itl.p99", "llm_tpot.p50", "llm_tpot.p95",
        "llm_tokens.rate",
    ])]
    pub metric: String,
    /// One step's figure instead of the whole run's.
    #[arg(long, value_name = "STEP")]
    pub step: Option<String>,
    /// How many of the latest runs to show.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// How many runs before the latest form its baseline.
    #[arg(long, default_value_t = 5)]
    pub baseline: usize,
    /// The smallest change, in %, that counts as a regression or an improvement:
    /// identical runs differ by a few percent as wholes, and a CI gate must not
    /// fail on that. With 3 or more baseline runs, their spread is used when it is
    /// larger. 0 leaves the per-second test alone.
    #[arg(long, value_name = "PCT", default_value_t = pado_analysis::between_runs::DEFAULT_MIN_CHANGE_PCT, value_parser = min_change_pct)]
    pub min_change: f64,
    /// Where to write the HTML chart (default pado-results/trend-<name>-<metric>.html).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Print the trend as JSON.
    #[arg(long)]
    pub json: bool,
    /// The history database's directory (default: as runs record).
    #[arg(long, value_name = "DIR")]
    pub history: Option<PathBuf>,
}

/// `pado agent` flags.
#[derive(Debug, Args)]
pub(crate) struct AgentArgs {
    /// Where to listen. Another host's coordinator needs an address it can reach,
    /// e.g. `0.0.0.0:7070`.
    #[arg(long, default_value = "127.0.0.1:7070")]
    pub listen: std::net::SocketAddr,
    /// Read the token coordinators must send from this file (its first line),
    /// instead of `PADO_AGENT_TOKEN`. An agent always needs a token of 16 characters
    /// or more, e.g. `openssl rand -hex 32 > token`; the coordinator sends it from
    /// its own `PADO_AGENT_TOKEN`.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Run the commands a job's scenario gives in `events:` (`run:`, `shell:`, and
    /// those of `undo:`), as this agent's user. Without it such a job is refused
    /// before anything starts. Whoever holds the token can then run commands on
    /// this host.
    #[arg(long)]
    pub allow_commands: bool,
    /// A name coordinators use for this host in their --generators URLs, besides its
    /// IP addresses, `localhost` and its host name (repeatable). A request naming
    /// any other host is refused: a web page could point its own name at this
    /// address (DNS rebinding). A certificate --tls generates is valid for these
    /// names too (an IP address given here included).
    #[arg(long, value_name = "NAME")]
    pub host_name: Vec<String>,
    /// Serve HTTPS: the token and every job travel encrypted. With --tls-cert and
    /// --tls-key the agent presents that certificate; without them it generates a
    /// self-signed one at start (valid for the address it listens on, its host
    /// name, the --host-name names and localhost) and prints its fingerprint,
    /// even with --quiet, which coordinators pin with
    /// `pado run --generators https://HOST:PORT --agent-fingerprint sha256:...`.
    #[arg(long)]
    pub tls: bool,
    /// The certificate (PEM, the agent's own first, then intermediates) to
    /// present with --tls.
    #[arg(long, value_name = "FILE", requires_all = ["tls", "tls_key"])]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", requires_all = ["tls", "tls_cert"])]
    pub tls_key: Option<PathBuf>,
    /// Write the generated certificate (PEM) to FILE, for coordinators that verify
    /// it as a CA file (`--agent-ca FILE`) instead of by its fingerprint.
    #[arg(
        long,
        value_name = "FILE",
        requires = "tls",
        conflicts_with = "tls_cert"
    )]
    pub tls_cert_out: Option<PathBuf>,
    /// Where each job's files and result go while it runs (a new directory per
    /// job, removed once its coordinator has the result).
    #[arg(long, value_name = "DIR", default_value = "pado-agent")]
    pub work_dir: PathBuf,
    /// How long a finished job's result waits for its coordinator before the agent
    /// takes other jobs (the result then stays in --work-dir).
    #[arg(long, default_value = "1h")]
    pub keep_for: String,
    /// Print only errors.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// `pado setup` flags.
#[derive(Debug, Args)]
pub(crate) struct SetupArgs {
    /// What to load, as `pado run` takes it (the setup's requests use the same
    /// target, headers, timeout and TLS settings).
    #[command(flatten)]
    pub load: LoadArgs,
    /// Where to write the variables (a JSON object of name → value).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: PathBuf,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// `--min-change`: a percentage from 0 to 1000 (a change of more than ten times
/// the baseline is no noise floor anyone means).
fn min_change_pct(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("`{s}` is not a number of percent, e.g. 5 or 2.5"))?;
    if !(v.is_finite() && (0.0..=1000.0).contains(&v)) {
        return Err(format!("`{s}`: give a percentage from 0 to 1000"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "k8s")]
    #[test]
    fn the_results_size_default_is_the_k8s_crates() {
        assert_eq!(
            super::DEFAULT_RESULTS_SIZE_LIMIT,
            pado_k8s::spec::DEFAULT_RESULTS_SIZE_LIMIT
        );
    }

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("pado").chain(args.iter().copied()))
    }

    #[test]
    fn min_change_takes_a_percentage_and_refuses_nonsense() {
        let Ok(Cli {
            command: Command::Trend(t),
            ..
        }) = parse(&["trend", "x", "--min-change", "2.5%"])
        else {
            panic!("trend --min-change 2.5% refused");
        };
        assert_eq!(t.min_change, 2.5);
        let Ok(Cli {
            command: Command::Trend(t),
            ..
        }) = parse(&["trend", "x"])
        else {
            panic!("trend refused");
        };
        assert_eq!(t.min_change, 5.0);
        for bad in ["-1", "nan", "inf", "abc", "1001"] {
            let flag = format!("--min-change={bad}");
            let e = parse(&["compare", "a", "b", &flag]).unwrap_err();
            assert!(e.to_string().contains("--min-change"), "{bad}: {e}");
        }
        assert!(parse(&["compare", "a", "b", "--min-change", "0"]).is_ok());
    }

    #[test]
    fn flags_that_would_be_silently_ignored_are_refused() {
        for args in [
            &[
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "5",
                "--rate",
                "10",
            ][..],
            &[
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "5",
                "--stages",
                "1s:5",
            ],
            &[
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "5",
                "--step-ramp",
                "1:1:1s:2",
            ],
            &[
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--duration",
                "5s",
                "--iterations",
                "3",
            ],
            &[
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--duration",
                "5s",
                "--stages",
                "1s:5",
            ],
            &[
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--think",
                "1s",
                "--rate",
                "10",
            ],
        ] {
            let e = parse(args)
                .err()
                .unwrap_or_else(|| panic!("accepted {args:?}"));
            assert_eq!(
                e.kind(),
                clap::error::ErrorKind::ArgumentConflict,
                "{args:?}"
            );
            assert!(e.use_stderr());
        }
    }

    #[test]
    fn flags_that_go_together_are_accepted() {
        for args in [
            &[
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "5",
                "--duration",
                "3s",
            ][..],
            &[
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "5",
                "--iterations",
                "3",
            ],
            &[
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--rate",
                "10",
                "--duration",
                "3s",
            ],
            &[
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--step-ramp",
                "1:1:1s:2",
                "--duration",
                "9s",
            ],
            &[
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "2",
                "--think",
                "1s",
            ],
        ] {
            assert!(parse(args).is_ok(), "{args:?}");
        }
    }

    /// `--export junit,csv` means what `--export junit --export csv` means, for every
    /// command that writes exports; a bad name in the list is still refused.
    #[test]
    fn exports_are_accepted_comma_separated_on_every_command() {
        let exports = |args: &[&str]| -> Vec<String> {
            match parse(args)
                .unwrap_or_else(|e| panic!("{args:?}: {e}"))
                .command
            {
                Command::Run(r) => r.exports,
                Command::Report { exports, .. } | Command::Merge { exports, .. } => exports,
                Command::Demo(d) => d.exports,
                other => panic!("{other:?}"),
            }
        };
        let url = ["--url", "http://127.0.0.1:1/"];
        for (cmd, rest) in [
            ("run", &url[..]),
            ("report", &["dir"][..]),
            ("merge", &["a", "b", "--out", "m"][..]),
            ("demo", &[][..]),
        ] {
            let mut joined = vec![cmd];
            joined.extend_from_slice(rest);
            joined.extend_from_slice(&["--export", "junit,csv"]);
            assert_eq!(exports(&joined), ["junit", "csv"], "{cmd}");
            let mut apart = vec![cmd];
            apart.extend_from_slice(rest);
            apart.extend_from_slice(&["--export", "junit", "--export", "hdr"]);
            assert_eq!(exports(&apart), ["junit", "hdr"], "{cmd}");
            let mut bad = vec![cmd];
            bad.extend_from_slice(rest);
            bad.extend_from_slice(&["--export", "junit,xml"]);
            let e = parse(&bad)
                .err()
                .unwrap_or_else(|| panic!("{cmd}: xml accepted"));
            assert_eq!(e.kind(), clap::error::ErrorKind::InvalidValue, "{cmd}");
        }
    }

    /// Every page `pado docs` has is named by the top-level help, and the pages the
    /// README and messages point to exist.
    #[test]
    fn docs_topics_are_all_listed_in_the_help() {
        use clap::ValueEnum;
        for topic in DocTopic::value_variants() {
            let name = topic
                .to_possible_value()
                .map(|v| v.get_name().to_string())
                .unwrap_or_default();
            assert!(
                EXIT_CODES.contains(&format!("`pado docs {name}`")),
                "the help leaves out `pado docs {name}`"
            );
        }
        for name in ["scaling-out", "resilience"] {
            assert!(parse(&["docs", name]).is_ok(), "`pado docs {name}` refused");
        }
    }
}
