//! Every example of the README, `docs/*.md` and `examples/` runs against the demo
//! target, as a reader would run it, and must do what it says.
//!
//! What is taken from the Markdown files: every fenced block marked `sh`, `bash` or
//! unmarked, line by line (continuation lines joined), whose command is `pado …`
//! (after `NAME=value` assignments); and every fenced `yaml` block. Other commands
//! (`curl`, `kubectl`, `docker`, `cargo`, `bash scripts/…`) are not pado's and are
//! not run. Every `examples/**/*.yaml` file is taken too.
//!
//! How they run: one demo target started by the docs' own `pado target serve
//! --port 8080` command (with `--port 0`), and the same with `--tls` for the docs'
//! `127.0.0.1:8443`. Each Markdown file's commands run in order in a directory of
//! their own through `sh -c` (so environment prefixes, `$(…)`, `>` and globs mean
//! what they mean in a terminal), with `pado` on `PATH` being the binary under test,
//! a `HOME` and `PADO_HOME` of their own, and `examples/` linked in. The rewrites,
//! all of them:
//! - `127.0.0.1:8080` / `localhost:8080` → the demo target, `127.0.0.1:8443` → the
//!   TLS demo target, the outputs' stores (`127.0.0.1:9090`, `:8086`, `:4318`) → a
//!   local server that accepts every write, `127.0.0.1:3128` → a local CONNECT
//!   proxy;
//! - `pado run` gets `--fit-to 2s` (its whole timeline compressed to 2 s, the model
//!   kept; not with `--once`) and a `--duration` becomes `2s`, `pado demo` gets
//!   `--duration 2s`, unless [`RULES`] says it needs another length and why;
//! - `--start-at T` becomes one instant a few seconds ahead, shared by the file's
//!   commands, and consecutive `--segment` commands of a block run at once (the docs
//!   run them on separate hosts);
//! - `pado k8s run` (a cluster is needed) is checked as `pado k8s render` with the
//!   same arguments, which parses and compiles them the same way without one;
//! - a scenario file a command names that the docs do not ship (`test.yaml`,
//!   `checkout.yaml`, `load.yaml`, …) is a small stand-in of that name against the
//!   demo target ([`stand_in`]); the shell variable `i` of the docs' "on each machine"
//!   loops is 0; `TOKEN`, `PASSWORD` and the InfluxDB token variables are set.
//!
//! A `yaml` block that is a whole scenario (it has `scenarios:`) runs with
//! `pado run FILE --fit-to 2s`; a block that is a part of one is run inside a
//! minimal scenario (a list of steps as its flow, top-level keys beside it) or,
//! where [`RULES`] says why, only validated (`pado validate`) or not run at all.
//!
//! An example fails on: an exit code other than 0 (or the one its block declares
//! with `<!-- expect: exit N -->` on a line before the fence), a panic, a line
//! starting `error:`, a failed check or (when it expects exit 0) a failed request in
//! any result directory it wrote. An example that failed while others ran beside
//! it runs once more alone (a latency threshold may fail on a busy shared machine);
//! only a failure then counts. Every rule of [`RULES`] must match exactly one
//! example, so a rule outlives no example and no example is skipped unnamed.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use pado_testkit::proxy::{ProxyOptions, ProxyServer};
use pado_testkit::TestServer;
use serde_json::Value;

use crate::harness::{pado_bin, serve_printing_url, shared_machine, tmp, Tmp};

/// How long a shortened run lasts (`--fit-to`, `pado demo --duration`).
const FIT: &str = "2s";
/// The longest any one command may take before it is stopped and failed.
const COMMAND_DEADLINE: Duration = Duration::from_secs(150);
/// How far ahead of a file's first command its `--start-at` instant is: room for
/// the commands before the segments (a setup).
const START_AHEAD_S: i64 = 10;
/// Examples run at once (the machine has two cores; each run is short).
const PARALLEL: usize = 4;

/// How an example is handled when it is not simply run.
#[derive(Clone, Copy, Debug)]
enum How {
    /// Only `pado validate` (a part of a file wrapped in a minimal scenario).
    Validate(&'static str),
    /// Not run: the reason.
    NotRun(&'static str),
    /// Not pado's file or command.
    NotPado(&'static str),
    /// A `pado demo` that keeps its full length: the reason.
    FullLength(&'static str),
    /// A command shortened to this `--duration` only (no `--fit-to`), or a scenario
    /// fitted to this length: the reason.
    Length(&'static str, &'static str),
}

impl How {
    /// Why the example is handled so, as the test's log says it.
    fn reason(self) -> String {
        match self {
            How::Validate(why) => format!("validated only: {why}"),
            How::NotRun(why) => format!("not run: {why}"),
            How::NotPado(why) => format!("not pado's: {why}"),
            How::FullLength(why) => format!("run at full length: {why}"),
            How::Length(d, why) => format!("run for {d}: {why}"),
        }
    }
}

/// An exception: the Markdown (or example) file, a text found in exactly one of its
/// examples, and what is done instead of running it as written.
struct Rule {
    doc: &'static str,
    marker: &'static str,
    how: How,
}

/// Every example not run as written, and why. Each must match exactly one example.
const RULES: &[Rule] = &[
    Rule {
        doc: "docs/llm.md",
        marker: "name: llm-chat",
        how: How::Validate(
            "it streams from an LLM server at 127.0.0.1:8000, which the demo target is \
             not; tests/e2e/sse.rs runs the same `sse:` step against the test kit's \
             paced `/sse` stream",
        ),
    },
    Rule {
        doc: "docs/llm.md",
        marker: "completion_id: \"$.id\"",
        how: How::Validate(
            "it streams from an LLM server's /v1/chat/completions; tests/e2e/llm_report.rs \
             runs the same checks and extraction on events against the test kit's `/sse`",
        ),
    },
    Rule {
        doc: "docs/demo-target.md",
        marker: "pado target serve --port 8080",
        how: How::NotRun("it is how this test starts the target (with --port 0)"),
    },
    Rule {
        doc: "docs/kubernetes.md",
        marker: "kind: Role",
        how: How::NotPado("a Kubernetes Role for kubectl"),
    },
    Rule {
        doc: "docs/outputs.md",
        marker: "/etc/grafana/provisioning",
        how: How::NotPado("Grafana's provisioning file"),
    },
    Rule {
        doc: "docs/resilience.md",
        marker: "events:",
        how: How::Validate(
            "its fault (30% errors) would hit the examples running beside it on the \
             shared target; tests/e2e/events.rs runs the same events \
             (examples/resilience/error-burst.yaml) on a target of its own",
        ),
    },
    Rule {
        doc: "docs/scenario.md",
        marker: "error burst",
        how: How::Validate("the same fault as docs/resilience.md's events: example"),
    },
    Rule {
        doc: "docs/resilience.md",
        marker: "leak.yaml --soak",
        how: How::FullLength(
            "the leak verdict needs the example's 60 s of memory growth; shortened, \
             there is no leak to see",
        ),
    },
    Rule {
        doc: "docs/resilience.md",
        marker: "pado run soak.yaml --soak",
        how: How::Length(
            "30s",
            "a soak is judged on at least 20 s of steady load after its first 5 s; \
             shorter, --soak exits 99 with `not judged`",
        ),
    },
    Rule {
        doc: "docs/scenario.md",
        marker: "name: board-stress",
        how: How::Length(
            "8s",
            "its 100 VUs ramped up within 2 s queue on the demo target's search on a \
             2-core machine (p99 of search over 300 ms); tests/e2e/first_run.rs fits \
             it to 8 s too",
        ),
    },
    Rule {
        doc: "docs/scenario.md",
        marker: "client_cert: client.pem",
        how: How::NotRun("it names the reader's own CA and client certificate files"),
    },
    Rule {
        doc: "docs/scenario.md",
        marker: "keywords: { file: keywords.csv",
        how: How::NotRun("it names the reader's own data files (keywords.csv, users.json)"),
    },
    Rule {
        doc: "docs/scenario.md",
        marker: "count: \"{{ iter | int }}\"",
        how: How::NotRun(
            "a request's json: body showing the filters; its values (item, wrap, cart) \
             come from the reader's own flow",
        ),
    },
    Rule {
        doc: "docs/scenario.md",
        marker: "csrf: { regex:",
        how: How::Validate(
            "it extracts a CSRF field, a Location header and a SESSION cookie that the \
             demo target's login does not send",
        ),
    },
    Rule {
        doc: "docs/scenario.md",
        marker: "\"http_reqs{status:503}\"",
        how: How::NotRun(
            "threshold keys of the reader's own scenarios (browse, buy) and group \
             (checkout); tests/e2e/thresholds.rs covers each filter",
        ),
    },
    Rule {
        doc: "docs/scenario.md",
        marker: "http_reqs{window:60s-120s}",
        how: How::Validate(
            "its thresholds judge a 3-minute stress test's holds and its seconds 60 to \
             120; fitted to seconds the window has no data and fails; \
             tests/e2e/verdict.rs judges stage and window thresholds against a target \
             that slows at a known second",
        ),
    },
    Rule {
        doc: "docs/scenario.md",
        marker: "node_exporter",
        how: How::Validate(
            "it scrapes a node_exporter on 127.0.0.1:9100 and a host of the reader's \
             own (10.0.0.7)",
        ),
    },
    Rule {
        doc: "docs/scaling-out.md",
        marker: "pado agent --listen",
        how: How::NotRun(
            "an agent serves on every interface until stopped, on each host; \
             tests/e2e/agents.rs runs agents on loopback",
        ),
    },
    Rule {
        doc: "docs/scaling-out.md",
        marker: "pado agent --tls",
        how: How::NotRun(
            "a TLS agent serves on every interface until stopped, on each host; \
             tests/e2e/agents.rs runs TLS agents on loopback with pinned fingerprints",
        ),
    },
    Rule {
        doc: "docs/scaling-out.md",
        marker: "load.yaml --generators host-a:7070",
        how: How::NotRun("it needs agents on hosts host-a, host-b and host-c"),
    },
    Rule {
        doc: "docs/scaling-out.md",
        marker: "--dashboard --generators host-a:7070",
        how: How::NotRun(
            "it needs agents on hosts host-a, host-b and host-c; tests/e2e/agents.rs \
             steers two agents on loopback from the dashboard",
        ),
    },
    Rule {
        doc: "docs/scaling-out.md",
        marker: "--generators https://host-a:7070",
        how: How::NotRun("it needs TLS agents on hosts host-a and host-b"),
    },
    Rule {
        doc: "docs/experiments.md",
        marker: "pado target serve --port 8080 --query-cost 5ms",
        how: How::NotRun(
            "it starts a demo target of its own for the experiment below, which is not run here",
        ),
    },
    Rule {
        doc: "docs/experiments.md",
        marker: "pado experiment examples/experiments/pool.yaml",
        how: How::NotRun(
            "it resizes the shared demo target's pool for minutes, which would change \
             what the examples beside it measure; tests/e2e/experiment.rs runs \
             experiments (search, fixed load, failures, Ctrl-C) on servers of their own",
        ),
    },
    Rule {
        doc: "docs/experiments.md",
        marker: "pool-experiment.yaml, beside load.yaml",
        how: How::NotRun(
            "it names a load.yaml beside it; tests/e2e/experiment.rs runs experiment \
             files of this form",
        ),
    },
    Rule {
        doc: "examples/resilience/cache-off.yaml",
        marker: "",
        how: How::Validate(RESILIENCE),
    },
    Rule {
        doc: "examples/resilience/error-burst.yaml",
        marker: "",
        how: How::Validate(RESILIENCE),
    },
    Rule {
        doc: "examples/resilience/latency.yaml",
        marker: "",
        how: How::Validate(RESILIENCE),
    },
    Rule {
        doc: "examples/resilience/leak.yaml",
        marker: "",
        how: How::Validate(RESILIENCE),
    },
    Rule {
        doc: "examples/resilience/pool-shrink.yaml",
        marker: "",
        how: How::Validate(RESILIENCE),
    },
    Rule {
        doc: "examples/resilience/restart.yaml",
        marker: "",
        how: How::Validate(RESILIENCE),
    },
    Rule {
        doc: "examples/resilience/stall.yaml",
        marker: "",
        how: How::Validate(RESILIENCE),
    },
];

const RESILIENCE: &str = "it switches a fault on the target it runs against, which would \
     fail the examples running beside it on the shared target; tests/e2e/events.rs and \
     tests/e2e/soak.rs run every one of them on a target of its own";

/// Commands run before a file's own, where its examples assume what an earlier
/// step of the reader's left behind: the file, the command, how many times, why.
const PREAMBLE: &[(&str, &str, usize, &str)] = &[
    (
        "docs/history.md",
        "pado run checkout.yaml --label commit=3f2a9c1 --quiet --fit-to 2s",
        2,
        "`compare last~1 last`, `compare label:commit=3f2a9c1` and `trend` assume \
         earlier runs of the test, one of them of that commit",
    ),
    (
        "docs/kubernetes.md",
        "printf '{}' > vars.json",
        1,
        "`--setup-vars vars.json` is the file `pado setup` wrote (docs/scaling-out.md); \
         checkout.yaml has no setup, so its variables are none",
    ),
];

/// One example.
#[derive(Clone, Debug)]
struct Example {
    /// The file it comes from, relative to the repository.
    doc: String,
    /// Its first line in that file.
    line: usize,
    /// The fenced block it belongs to (commands of one block share it).
    block: usize,
    /// A command line, or a YAML block.
    kind: Kind,
    text: String,
    /// The exit code the docs declare (`<!-- expect: exit N -->`), else 0.
    expect_exit: i32,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Command,
    Yaml,
}

/// The examples of one Markdown file.
fn examples_of(doc: &str, md: &str) -> Vec<Example> {
    let lines: Vec<&str> = md.lines().collect();
    let mut out = Vec::new();
    let mut expect_exit = None;
    let mut i = 0;
    let mut block = 0;
    while i < lines.len() {
        let l = lines[i].trim();
        if let Some(rest) = l.strip_prefix("<!-- expect: exit ") {
            let n = rest.trim_end_matches("-->").trim();
            expect_exit = Some(
                n.parse::<i32>()
                    .unwrap_or_else(|_| panic!("{doc}:{}: bad expect marker", i + 1)),
            );
            i += 1;
            continue;
        }
        let Some(lang) = l.strip_prefix("```") else {
            if !l.is_empty() {
                expect_exit = None;
            }
            i += 1;
            continue;
        };
        let lang = lang.trim().to_string();
        let start = i + 1;
        i += 1;
        while i < lines.len() && !lines[i].trim_start().starts_with("```") {
            i += 1;
        }
        let body = &lines[start..i.min(lines.len())];
        i += 1;
        block += 1;
        let exit = expect_exit.take().unwrap_or(0);
        match lang.as_str() {
            "yaml" => out.push(Example {
                doc: doc.to_string(),
                line: start + 1,
                block,
                kind: Kind::Yaml,
                text: body.join("\n") + "\n",
                expect_exit: exit,
            }),
            "sh" | "bash" | "" => {
                let mut cur = String::new();
                let mut first = 0;
                for (k, raw) in body.iter().enumerate() {
                    if cur.is_empty() {
                        first = start + k + 1;
                    }
                    let t = raw.trim();
                    match t.strip_suffix('\\') {
                        Some(more) => {
                            cur.push_str(more.trim_end());
                            cur.push(' ');
                        }
                        None => {
                            cur.push_str(t);
                            let line = strip_comment(&cur);
                            if is_pado(&line) {
                                out.push(Example {
                                    doc: doc.to_string(),
                                    line: first,
                                    block,
                                    kind: Kind::Command,
                                    text: line,
                                    expect_exit: exit,
                                });
                            }
                            cur.clear();
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// A shell line without its trailing `# comment` (a `#` that starts a word outside
/// quotes), trimmed.
fn strip_comment(line: &str) -> String {
    let mut quote = None;
    let mut prev = ' ';
    for (at, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if prev.is_whitespace() => return line[..at].trim().to_string(),
            _ => {}
        }
        prev = c;
    }
    line.trim().to_string()
}

/// The line without its leading `NAME=value` assignments (values may hold `$(…)`).
fn without_assignments(line: &str) -> &str {
    let mut rest = line.trim_start();
    loop {
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if name_len == 0 || !rest[name_len..].starts_with('=') {
            return rest;
        }
        let value = &rest[name_len + 1..];
        let mut depth = 0;
        let mut end = value.len();
        let bytes = value.as_bytes();
        let mut k = 0;
        while k < bytes.len() {
            match bytes[k] {
                b'$' if bytes.get(k + 1) == Some(&b'(') => {
                    depth += 1;
                    k += 1;
                }
                b')' if depth > 0 => depth -= 1,
                b' ' | b'\t' if depth == 0 => {
                    end = k;
                    break;
                }
                _ => {}
            }
            k += 1;
        }
        rest = value[end..].trim_start();
    }
}

fn is_pado(line: &str) -> bool {
    without_assignments(line).starts_with("pado ")
}

/// The pado subcommand words of a command line (`run`, `k8s run`, …).
fn subcommand(line: &str) -> Vec<&str> {
    without_assignments(line)
        .split_whitespace()
        .skip(1)
        .take(2)
        .collect()
}

/// The rule for `ex`, if any.
fn rule_for(ex: &Example) -> Option<&'static Rule> {
    RULES
        .iter()
        .find(|r| r.doc == ex.doc && ex.text.contains(r.marker))
}

/// What the test runs against: the servers and the binary.
struct World {
    /// `127.0.0.1:PORT` of the demo target, and of the one serving TLS.
    plain: String,
    tls: String,
    /// The stores of the live outputs: accepts every write.
    sink: TestServer,
    proxy: ProxyServer,
    /// A directory holding `pado`, first on every command's `PATH`.
    bin: PathBuf,
    repo: PathBuf,
}

/// `127.0.0.1:8080`-style addresses of the docs, pointed at this test's servers.
fn rewrite_addresses(text: &str, w: &World) -> String {
    let port = w.plain.rsplit(':').next().unwrap();
    let sink = w.sink.addr().to_string();
    let proxy = w.proxy.url();
    let proxy = proxy.trim_start_matches("http://").trim_end_matches('/');
    text.replace("127.0.0.1:8080", &w.plain)
        .replace("localhost:8080", &format!("localhost:{port}"))
        .replace("127.0.0.1:8443", &w.tls)
        .replace("127.0.0.1:9090", &sink)
        .replace("127.0.0.1:8086", &sink)
        .replace("127.0.0.1:4318", &sink)
        .replace("127.0.0.1:3128", proxy)
}

/// The command as this test runs it (see the module's rewrites).
fn rewrite_command(ex: &Example, w: &World, start_at: &str) -> String {
    let mut line = rewrite_addresses(&ex.text, w);
    if let Some(at) = line.find("--start-at ") {
        let from = at + "--start-at ".len();
        let end = line[from..]
            .find(char::is_whitespace)
            .map_or(line.len(), |e| from + e);
        line.replace_range(from..end, start_at);
    }
    // A `--duration` longer than the rule's becomes it, so the command line read in
    // a failure message says the length the example really ran.
    if let Some(at) = line.find("--duration ") {
        let from = at + "--duration ".len();
        let end = line[from..]
            .find(char::is_whitespace)
            .map_or(line.len(), |e| from + e);
        let length = match rule_for(ex).map(|r| r.how) {
            Some(How::Length(d, _)) => d,
            _ => FIT,
        };
        line.replace_range(from..end, length);
    }
    let sub = subcommand(&line);
    let own_length = matches!(rule_for(ex).map(|r| r.how), Some(How::Length(..)));
    match sub.as_slice() {
        ["run", ..] if !line.contains("--once") && !own_length => {
            line.push_str(&format!(" --fit-to {FIT}"))
        }
        ["demo", ..] if !matches!(rule_for(ex).map(|r| r.how), Some(How::FullLength(_))) => {
            line.push_str(&format!(" --duration {FIT}"))
        }
        ["k8s", "run"] => line = line.replacen("k8s run", "k8s render", 1),
        _ => {}
    }
    line
}

/// A scenario the docs name but do not ship: `name` against the demo target, two
/// VUs asking for a post; `load.yaml` (the split-test docs' file "with a global
/// setup") also logs in once in a global `setup:`.
fn stand_in(name: &str, w: &World) -> String {
    let setup = if name == "load" {
        "setup:\n  - name: admin login\n    request: { method: POST, url: /api/login, json: { user: admin, password: pw } }\n    extract: { admin_token: $.token }\n"
    } else {
        ""
    };
    format!(
        "name: {name}\ntarget: http://{}\n{setup}scenarios:\n  main:\n    executor: constant-vus\n    vus: 2\n    duration: 10s\n    flow:\n      - name: post\n        request: GET /api/posts/1\n        check: {{ status: 200 }}\n",
        w.plain
    )
}

/// A YAML block as a file pado can read: a whole scenario as it is, a list of steps
/// as the flow of a minimal scenario, top-level keys beside one.
fn as_scenario(yaml: &str, w: &World) -> String {
    let yaml = rewrite_addresses(yaml, w);
    let has = |key: &str| yaml.lines().any(|l| l.starts_with(key));
    if has("scenarios:") {
        return yaml;
    }
    if yaml.trim_start().starts_with("- ") {
        let flow: String = yaml.lines().map(|l| format!("      {l}\n")).collect();
        return format!(
            "name: docs-flow\ntarget: http://{}\nscenarios:\n  s:\n    executor: per-vu-iterations\n    vus: 2\n    iterations: 2\n    flow:\n{flow}",
            w.plain
        );
    }
    let target = if has("target:") {
        String::new()
    } else {
        format!("target: http://{}\n", w.plain)
    };
    format!(
        "name: docs-part\n{target}{yaml}scenarios:\n  s:\n    executor: constant-vus\n    vus: 2\n    duration: 3s\n    flow:\n      - {{ name: post, request: GET /api/posts/1, check: {{ status: 200 }} }}\n"
    )
}

/// One command's outcome, checked.
fn check_outcome(
    what: &str,
    code: Option<i32>,
    stdout: &str,
    stderr: &str,
    expect_exit: i32,
    results: &[PathBuf],
) -> Vec<String> {
    let mut bad = Vec::new();
    let shown = || format!("\n--- stdout:\n{stdout}\n--- stderr:\n{stderr}");
    if code != Some(expect_exit) {
        bad.push(format!(
            "{what}: exit {code:?}, expected {expect_exit}{}",
            shown()
        ));
        return bad;
    }
    for l in stdout.lines().chain(stderr.lines()) {
        let low = l.trim_start().to_lowercase();
        if l.contains("panicked at") || (expect_exit == 0 && low.starts_with("error:")) {
            bad.push(format!("{what}: `{l}`{}", shown()));
            return bad;
        }
    }
    for dir in results {
        let Ok(text) = std::fs::read_to_string(dir.join("summary.json")) else {
            continue;
        };
        let s: Value = serde_json::from_str(&text).unwrap();
        if let Some(checks) = s["checks"].as_object() {
            for (name, c) in checks {
                if c["fails"].as_f64().unwrap_or(0.0) > 0.0 {
                    bad.push(format!("{what}: check `{name}` failed: {c}"));
                }
            }
        }
        let failed = s["failed"].as_f64().unwrap_or(0.0);
        if expect_exit == 0 && failed > 0.0 {
            bad.push(format!(
                "{what}: {failed} requests failed: {} {}",
                s["errors"], s["status"]
            ));
        }
    }
    bad
}

/// Every `summary.json` under `dir` with its modification time.
fn summaries(dir: &Path) -> BTreeMap<PathBuf, SystemTime> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(meta) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if meta.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "summary.json") {
                out.insert(p.parent().unwrap().to_path_buf(), meta.modified().unwrap());
            }
        }
    }
    out
}

/// A shell running `line` in `cwd` with the test's environment, in a process group
/// of its own (stopped as a whole at the deadline).
fn spawn_shell(line: &str, cwd: &Path, w: &World) -> Child {
    let path = format!(
        "{}:{}",
        w.bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(cwd)
        .env("PATH", path)
        .env("HOME", cwd.join("home"))
        .env("PADO_HOME", cwd.join("pado-home"))
        .env("NO_COLOR", "1")
        .env("TOKEN", "t0ken")
        .env("PASSWORD", "pw")
        .env("INFLUX_TOKEN", "influx-t0ken")
        .env("PADO_INFLUXDB_TOKEN", "influx-t0ken")
        .env("i", "0")
        // The variable docs/kubernetes.md's Secret holds, set as the reader's shell
        // has it.
        .env("API_TOKEN", "api-t0ken")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("sh")
}

/// Waits for `child` within [`COMMAND_DEADLINE`]: exit code, stdout, stderr.
fn finish(mut child: Child) -> (Option<i32>, String, String) {
    let pid = child.id() as i32;
    let out = child.stdout.take().unwrap();
    let err = child.stderr.take().unwrap();
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = r.read_to_end(&mut s);
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let (o, e) = (read(Box::new(out)), read(Box::new(err)));
    let deadline = Instant::now() + COMMAND_DEADLINE;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            // SAFETY: a plain kill(2) of the process group this test started.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let code = status.and_then(|s| s.code());
    (code, o.join().unwrap(), e.join().unwrap())
}

/// Runs `cmds` (already rewritten) at once in `cwd`; each one's problems.
fn run_commands(cwd: &Path, cmds: &[(String, String, i32)], w: &World) -> Vec<String> {
    let before = summaries(cwd);
    let children: Vec<Child> = cmds
        .iter()
        .map(|(_, line, _)| spawn_shell(line, cwd, w))
        .collect();
    let outcomes: Vec<_> = children.into_iter().map(finish).collect();
    let after = summaries(cwd);
    let written: Vec<PathBuf> = after
        .iter()
        .filter(|(p, t)| before.get(*p) != Some(*t))
        .map(|(p, _)| p.clone())
        .collect();
    let mut bad = Vec::new();
    for ((what, line, expect), (code, out, err)) in cmds.iter().zip(outcomes) {
        let what = format!("{what}\n    ran: {line}");
        // Results of a group of commands are judged together (their own exits apart).
        bad.extend(check_outcome(&what, code, &out, &err, *expect, &written));
    }
    bad
}

/// A unit of work: a Markdown file's commands in order, or one YAML example.
enum Job {
    Commands(String, Vec<Example>),
    Yaml(Example),
}

fn run_job(job: &Job, w: &World) -> Vec<String> {
    let dir = tmp("docs-example");
    prepare(&dir, w);
    match job {
        Job::Commands(doc, exs) => run_doc_commands(&dir, doc, exs, w),
        Job::Yaml(ex) => run_yaml(&dir, ex, w),
    }
}

/// A working directory as a reader's: `examples/` at hand, an empty home with the
/// directories the install commands write into.
fn prepare(dir: &Tmp, w: &World) {
    std::os::unix::fs::symlink(w.repo.join("examples"), dir.join("examples")).unwrap();
    for d in [
        "home/.local/share/bash-completion/completions",
        "home/.local/share/man/man1",
        "pado-home",
    ] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
}

fn run_doc_commands(dir: &Tmp, doc: &str, exs: &[Example], w: &World) -> Vec<String> {
    let mut bad = Vec::new();
    // Stand-ins for the scenario files the commands name and the docs do not ship.
    for ex in exs {
        for word in ex.text.split_whitespace() {
            if let Some(stem) = word.strip_suffix(".yaml") {
                if !stem.contains('/') && !dir.join(word).exists() {
                    std::fs::write(dir.join(word), stand_in(stem, w)).unwrap();
                }
            }
        }
    }
    for (d, line, times, _why) in PREAMBLE {
        if *d == doc {
            for _ in 0..*times {
                let what = format!("{doc}: preamble");
                bad.extend(run_commands(dir, &[(what, line.to_string(), 0)], w));
            }
        }
    }
    // Every `--start-at` of the file: one instant, a little ahead.
    let start = time::OffsetDateTime::now_utc() + time::Duration::seconds(START_AHEAD_S);
    let start_at = start
        .replace_nanosecond(0)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let mut k = 0;
    while k < exs.len() {
        let ex = &exs[k];
        if rule_for(ex).is_some_and(|r| matches!(r.how, How::NotRun(_) | How::NotPado(_))) {
            k += 1;
            continue;
        }
        // Consecutive segments of one block run at once, as on separate hosts.
        let mut group = vec![ex];
        if ex.text.contains("--segment ") {
            while let Some(next) = exs.get(k + group.len()) {
                if next.block == ex.block && next.text.contains("--segment ") {
                    group.push(next);
                } else {
                    break;
                }
            }
        }
        let cmds: Vec<_> = group
            .iter()
            .map(|e| {
                (
                    format!("{}:{}: {}", e.doc, e.line, e.text),
                    rewrite_command(e, w, &start_at),
                    e.expect_exit,
                )
            })
            .collect();
        bad.extend(run_commands(dir, &cmds, w));
        k += group.len();
    }
    bad
}

fn run_yaml(dir: &Tmp, ex: &Example, w: &World) -> Vec<String> {
    let what = format!("{}:{}", ex.doc, ex.line);
    let file = dir.join("example.yaml");
    let how = rule_for(ex).map(|r| r.how);
    let text = if ex.doc.starts_with("examples/") {
        rewrite_addresses(&ex.text, w)
    } else {
        as_scenario(&ex.text, w)
    };
    std::fs::write(&file, &text).unwrap();
    if ex.doc.starts_with("examples/") {
        // Their data files are found next to them.
        let from = w.repo.join(&ex.doc);
        let data = from.parent().unwrap().join("data");
        if data.exists() {
            std::os::unix::fs::symlink(data, dir.join("data")).unwrap();
        }
    }
    let line = match how {
        Some(How::Validate(_)) => "pado validate example.yaml".to_string(),
        Some(How::NotRun(_) | How::NotPado(_)) => return Vec::new(),
        Some(How::Length(d, _)) => {
            format!("pado run example.yaml --fit-to {d} --quiet --out result")
        }
        _ => format!("pado run example.yaml --fit-to {FIT} --quiet --out result"),
    };
    run_commands(dir, &[(format!("{what}\n{text}"), line, ex.expect_exit)], w)
}

/// `pado target serve` as the docs start it, on a free port: its child and
/// `127.0.0.1:PORT`.
fn serve(doc_command: &str, extra: &[&str]) -> (Child, String) {
    let args: Vec<String> = strip_comment(doc_command)
        .split_whitespace()
        .skip(1)
        .map(|a| if a == "8080" { "0".into() } else { a.into() })
        .collect();
    let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
    all.extend_from_slice(extra);
    all.extend_from_slice(&["--exit-after", "300s"]);
    let (child, url) = serve_printing_url(&all);
    let addr = url.split("://").nth(1).unwrap().trim_end_matches('/');
    (child, addr.to_string())
}

/// Every example of the repository's Markdown files and `examples/`.
fn all_examples(repo: &Path) -> Vec<Example> {
    let mut docs = vec!["README.md".to_string()];
    let mut names: Vec<String> = std::fs::read_dir(repo.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    docs.extend(names.into_iter().map(|n| format!("docs/{n}")));
    let mut out = Vec::new();
    for doc in docs {
        let md = std::fs::read_to_string(repo.join(&doc)).unwrap();
        out.extend(examples_of(&doc, &md));
    }
    for sub in ["examples", "examples/experiments", "examples/resilience"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(repo.join(sub))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        files.sort();
        for p in files {
            out.push(Example {
                doc: format!("{sub}/{}", p.file_name().unwrap().to_string_lossy()),
                line: 1,
                block: 0,
                kind: Kind::Yaml,
                text: std::fs::read_to_string(&p).unwrap(),
                expect_exit: 0,
            });
        }
    }
    out
}

#[test]
fn the_extraction_finds_commands_yaml_and_expected_exits() {
    let md = "Intro\n\n```sh\n# a comment\nHTTPS_PROXY=$(cat p) NO=1 \\\n  pado run t.yaml   # note\ncurl -X POST x\n```\n\n<!-- expect: exit 99 -->\n```sh\npado run 'a #b' --x\n```\n```yaml\na: 1\n```\n```json\n{}\n```\n";
    let ex = examples_of("d.md", md);
    assert_eq!(ex.len(), 3, "{ex:?}");
    assert_eq!(ex[0].text, "HTTPS_PROXY=$(cat p) NO=1 pado run t.yaml");
    assert_eq!((ex[0].line, ex[0].expect_exit), (5, 0));
    assert_eq!(ex[1].text, "pado run 'a #b' --x");
    assert_eq!(ex[1].expect_exit, 99);
    assert_eq!(
        (ex[2].kind, ex[2].expect_exit, ex[2].text.as_str()),
        (Kind::Yaml, 0, "a: 1\n")
    );
    assert_eq!(subcommand(&ex[0].text), ["run", "t.yaml"]);
    assert!(!is_pado("curl pado"));
}

#[test]
fn every_example_of_the_readme_and_docs_runs_against_the_demo_target() {
    let _machine = shared_machine();
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let examples = all_examples(&repo);

    // Every rule names exactly one example; every example a rule skips says why.
    for r in RULES {
        let n = examples
            .iter()
            .filter(|e| e.doc == r.doc && e.text.contains(r.marker))
            .count();
        assert_eq!(n, 1, "rule {}: `{}` matches {n} examples", r.doc, r.marker);
        eprintln!("{} `{}`: {}", r.doc, r.marker, r.how.reason());
    }
    let commands = examples.iter().filter(|e| e.kind == Kind::Command).count();
    let yamls = examples.iter().filter(|e| e.kind == Kind::Yaml).count();
    assert!(
        commands >= 30 && yamls >= 25,
        "{commands} commands, {yamls} yaml"
    );

    // The target, started by the docs' own command.
    let serve_cmd = examples
        .iter()
        .find(|e| e.doc == "docs/demo-target.md" && e.text.starts_with("pado target serve"))
        .expect("docs/demo-target.md starts the target");
    let (mut plain_child, plain) = serve(&serve_cmd.text, &[]);
    let (mut tls_child, tls) = serve(&serve_cmd.text, &["--tls"]);
    let bin = tmp("docs-bin");
    std::os::unix::fs::symlink(pado_bin(), bin.join("pado")).unwrap();
    let world = World {
        plain,
        tls,
        sink: TestServer::start(),
        proxy: ProxyServer::start(ProxyOptions::default()),
        bin: bin.to_path_buf(),
        repo: repo.clone(),
    };

    // Jobs, the longest first.
    let mut by_doc: BTreeMap<String, Vec<Example>> = BTreeMap::new();
    let mut jobs = Vec::new();
    for ex in examples {
        match ex.kind {
            Kind::Command => by_doc.entry(ex.doc.clone()).or_default().push(ex),
            Kind::Yaml => jobs.push(Job::Yaml(ex)),
        }
    }
    let mut doc_jobs: Vec<Job> = by_doc
        .into_iter()
        .map(|(d, e)| Job::Commands(d, e))
        .collect();
    // A file with a full-length run first.
    doc_jobs.sort_by_key(|j| match j {
        Job::Commands(_, exs) => !exs.iter().any(|e| {
            matches!(
                rule_for(e).map(|r| r.how),
                Some(How::FullLength(_) | How::Length(..))
            )
        }),
        Job::Yaml(_) => true,
    });
    doc_jobs.append(&mut jobs);
    let queue = Mutex::new(doc_jobs.iter().enumerate().rev().collect::<Vec<_>>());
    let failed = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..PARALLEL {
            s.spawn(|| loop {
                let Some((k, job)) = queue.lock().unwrap().pop() else {
                    break;
                };
                let bad = run_job(job, &world);
                if !bad.is_empty() {
                    failed.lock().unwrap().push((k, bad));
                }
            });
        }
    });
    // A failure beside other runs may be the shared machine's (a latency threshold
    // on a busy target): each failed example runs once more, alone, and only what
    // fails then counts.
    let mut problems = Vec::new();
    for (k, bad) in failed.into_inner().unwrap() {
        eprintln!("failed beside others, run again alone:\n{}", bad.join("\n"));
        problems.extend(run_job(&doc_jobs[k], &world));
    }
    let _ = plain_child.kill();
    let _ = plain_child.wait();
    let _ = tls_child.kill();
    let _ = tls_child.wait();
    assert!(
        problems.is_empty(),
        "{} example(s) failed ({:?}):\n\n{}",
        problems.len(),
        started.elapsed(),
        problems.join("\n\n")
    );
    // The live-output examples wrote to the store they name.
    assert!(
        world.sink.stats().requests > 0,
        "no output reached the store"
    );
    assert!(
        world.proxy.stats().tunnels > 0,
        "the proxy example sent nothing through the proxy"
    );
}
