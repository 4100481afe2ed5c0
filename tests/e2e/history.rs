//! The run history (`pado history`, run references in `pado compare`, `pado
//! trend`): recording from concurrent runs, faults of the database, migration,
//! Hangul round trips. Every test has a `PADO_HOME` of its own.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pado_metrics::{Interval, Phases, RequestSample, SecondRecord, SeriesKey, SeriesStats};
use pado_results::{ResultDir, RunMeta, FORMAT_VERSION};
use pado_testkit::TestServer;
use serde_json::Value;

use crate::harness::{fixture, pado_cmd, read_json, say, shared_machine, spawn_piped, tmp};

/// `pado ARGS` with `PADO_HOME=home`, run from `home` (no git repository: no
/// `commit` label unless given).
fn pado_at(home: &Path, args: &[&str]) -> Output {
    let _machine = shared_machine();
    pado_cmd(args)
        .env("PADO_HOME", home)
        .current_dir(home)
        .output()
        .expect("running pado")
}

/// Start a 1 s run of `url` in the background, as [`pado_at`] runs pado.
fn spawn_run_at(home: &Path, out: &Path, url: &str, extra: &[&str]) -> std::process::Child {
    spawn_piped(
        pado_cmd([
            "run",
            "--url",
            url,
            "--vus",
            "1",
            "--duration",
            "1s",
            "--quiet",
            "--no-html",
        ])
        .args(extra)
        .arg("--out")
        .arg(out)
        .env("PADO_HOME", home)
        .current_dir(home),
    )
}

fn history_json(home: &Path, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["history", "--json", "--limit", "1000"];
    args.extend_from_slice(extra);
    let o = pado_at(home, &args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice::<Value>(&o.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn history_lines(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.contains("history"))
        .map(str::to_string)
        .collect()
}

#[test]
fn eight_concurrent_runs_record_eight_rows_in_a_sound_database() {
    let _machine = shared_machine();
    let srv = TestServer::start();
    let home = tmp("hist-conc");
    let url = srv.url("/");
    let children: Vec<_> = (0..8)
        .map(|i| {
            spawn_run_at(
                &home,
                &home.join(format!("r{i}")),
                &url,
                &["--name", "동시"],
            )
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            history_lines(&o.stderr).is_empty(),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let runs = history_json(&home, &["--name", "동시"]);
    assert_eq!(runs.len(), 8);
    let mut dirs: Vec<&str> = runs
        .iter()
        .map(|r| r["result_dir"].as_str().unwrap())
        .collect();
    dirs.sort();
    dirs.dedup();
    assert_eq!(dirs.len(), 8);
    // Each row's figures are its summary's.
    for r in &runs {
        let s: Value = serde_json::from_str(
            &std::fs::read_to_string(
                Path::new(r["result_dir"].as_str().unwrap()).join("summary.json"),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(r["requests"], s["requests"]);
        assert!(r["requests"].as_u64().unwrap() > 0);
    }
    let h = pado_history::History::open(&home.join("history.db")).unwrap();
    assert_eq!(h.integrity_check().unwrap(), "ok");
}

#[test]
fn a_corrupt_database_costs_one_line_and_nothing_else() {
    let _machine = shared_machine();
    let srv = TestServer::start();
    let home = tmp("hist-corrupt");
    let garbage: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 13) as u8).collect();
    std::fs::write(home.join("history.db"), &garbage).unwrap();
    let out = home.join("r");
    // A failing threshold: the run's own exit code (99) must survive.
    let o = spawn_run_at(
        &home,
        &out,
        &srv.url("/"),
        &["--threshold", "http_reqs: count < 1"],
    )
    .wait_with_output()
    .unwrap();
    assert_eq!(
        o.status.code(),
        Some(99),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let lines = history_lines(&o.stderr);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("corrupt") && lines[0].contains("history.db"),
        "{}",
        lines[0]
    );
    for f in ["run.json", "timeline.jsonl", "summary.json"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    assert_eq!(
        std::fs::read(home.join("history.db")).unwrap(),
        garbage,
        "left as it was"
    );
    // Listing says the same in one line and fails.
    let o = pado_at(&home, &["history"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&o.stderr).lines().count(), 1);
    // A database from a newer pado: the same, one line.
    let newer = tmp("hist-newer");
    {
        let c = rusqlite::Connection::open(newer.join("history.db")).unwrap();
        c.execute_batch("PRAGMA user_version = 1000").unwrap();
    }
    let o = spawn_run_at(&newer, &newer.join("r"), &srv.url("/"), &[])
        .wait_with_output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let lines = history_lines(&o.stderr);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("newer"), "{}", lines[0]);
}

/// The previous schema version is 0: a database SQLite made (here with a table
/// of someone's own, as a hand-made file would have) and no pado tables yet.
#[test]
fn a_database_of_the_previous_schema_version_migrates() {
    let _machine = shared_machine();
    let srv = TestServer::start();
    let home = tmp("hist-migrate");
    {
        let c = rusqlite::Connection::open(home.join("history.db")).unwrap();
        c.execute_batch("CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('메모'); PRAGMA user_version = 0;")
            .unwrap();
    }
    let o = spawn_run_at(&home, &home.join("r"), &srv.url("/"), &[])
        .wait_with_output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(history_lines(&o.stderr).is_empty());
    assert_eq!(history_json(&home, &[]).len(), 1);
    let c = rusqlite::Connection::open(home.join("history.db")).unwrap();
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, pado_history::SCHEMA_VERSION);
    let note: String = c
        .query_row("SELECT t FROM notes", [], |r| r.get(0))
        .unwrap();
    assert_eq!(note, "메모");
}

#[test]
fn compare_takes_last_best_and_labels_and_hangul_round_trips() {
    let _machine = shared_machine();
    let srv = TestServer::start();
    let home = tmp("hist-refs");
    let (fast, slow) = (home.join("fast"), home.join("slow"));
    let o = spawn_run_at(
        &home,
        &fast,
        &srv.url("/delay/2"),
        &[
            "--name",
            "검색 시험",
            "--label",
            "commit=aaaa1111",
            "--label",
            "환경=스테이징",
        ],
    )
    .wait_with_output()
    .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = spawn_run_at(
        &home,
        &slow,
        &srv.url("/delay/30"),
        &["--name", "검색 시험", "--label", "commit=bbbb2222"],
    )
    .wait_with_output()
    .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("history: run 2"));
    let runs = |args: &[&str]| -> Vec<String> {
        let mut a = vec!["compare", "--json"];
        a.extend_from_slice(args);
        let o = pado_at(&home, &a);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let c: Value = serde_json::from_slice(&o.stdout).unwrap();
        c["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(runs(&["last~1", "last"]), ["fast", "slow"]);
    assert_eq!(runs(&["1", "2"]), ["fast", "slow"]);
    // The lowest p95 of the name is the 2 ms run.
    assert_eq!(runs(&["best", "last"]), ["fast", "slow"]);
    // `best` beside the best run itself is the best of the others: a job that
    // compares each run with the best does not fail on the best one.
    assert_eq!(runs(&["last~1", "best"]), ["fast", "slow"]);
    // Two references to one run: refused with both names.
    let o = pado_at(&home, &["compare", "last~1", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", say(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("`last~1` and `1` are the same run") && err.contains("fast"),
        "{err}"
    );
    assert_eq!(
        runs(&["label:commit=bbbb", "label:commit=aaaa1111"]),
        ["slow", "fast"]
    );
    assert_eq!(runs(&[fast.to_str().unwrap(), "last"]), ["fast", "slow"]);
    // Hangul name and label, filtered and read back.
    let listed = history_json(&home, &["--name", "검색 시험", "--label", "환경=스테이징"]);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["name"], "검색 시험");
    assert_eq!(listed[0]["labels"]["환경"], "스테이징");
    assert_eq!(listed[0]["labels"]["commit"], "aaaa1111");
    let text = String::from_utf8_lossy(&pado_at(&home, &["history"]).stdout).into_owned();
    assert!(
        text.contains("검색 시험") && text.contains("환경=스테이징"),
        "{text}"
    );
    // A reference to nothing, and a recorded directory that is gone: one clear error.
    let o = pado_at(&home, &["compare", "last~5", "last"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("only 2 runs"));
    std::fs::remove_dir_all(&fast).unwrap();
    let o = pado_at(&home, &["compare", "last~1", "last"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no longer exists") && err.contains("fast"),
        "{err}"
    );
    // --no-history records nothing.
    let o = spawn_run_at(&home, &home.join("off"), &srv.url("/"), &["--no-history"])
        .wait_with_output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(history_json(&home, &[]).len(), 2);
}

/// A result directory of `seconds` seconds whose requests take `level_us` ±5%
/// (deterministic), started on day `day`.
fn synthetic(root: &Path, dir: &str, name: &str, day: u32, level_us: u64, seed: u64) -> PathBuf {
    let path = root.join(dir);
    let rd = ResultDir::create(&path).unwrap();
    let seconds = 20;
    rd.write_meta(&RunMeta {
        format: "pado-result".into(),
        version: FORMAT_VERSION,
        name: name.into(),
        started_at: format!("2026-11-{day:02}T10:00:00.000Z"),
        duration_s: seconds as f64,
        workers: 1,
        cores_allowed: 1,
        ..Default::default()
    })
    .unwrap();
    let mut w = rd.timeline_writer().unwrap();
    let mut x = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    for t in 0..seconds {
        let mut s = SeriesStats::new(SeriesKey::named("get"));
        for _ in 0..200 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let jitter = (x >> 33) % (level_us / 10 + 1);
            s.record(&RequestSample {
                status: 200,
                phases: Phases {
                    duration_us: level_us - level_us / 20 + jitter,
                    waiting_us: level_us / 2,
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        let mut rec = SecondRecord::new(t);
        rec.absorb(Interval {
            series: vec![s],
            vus: 10,
            vus_max: 10,
            ..Default::default()
        });
        w.write(&rec).unwrap();
    }
    drop(w);
    path
}

/// `pado trend ARGS --html HTML` as [`pado_at`] runs pado.
fn trend_with_chart(home: &Path, html: &Path, args: &[&str]) -> Output {
    let mut all = vec!["trend"];
    all.extend_from_slice(args);
    all.extend(["--html", html.to_str().unwrap()]);
    pado_at(home, &all)
}

#[test]
fn trend_flags_a_planted_regression_and_not_an_aa_pair() {
    let home = tmp("hist-trend");
    let root = home.join("results");
    std::fs::create_dir_all(&root).unwrap();
    for (i, level) in [100_000, 100_000, 100_000, 100_000, 120_000]
        .iter()
        .enumerate()
    {
        synthetic(
            &root,
            &format!("planted-{i}"),
            "심은 회귀",
            10 + i as u32,
            *level,
            i as u64,
        );
    }
    synthetic(&root, "aa-0", "aa", 1, 100_000, 7);
    synthetic(&root, "aa-1", "aa", 2, 100_000, 8);
    for d in std::fs::read_dir(&root).unwrap() {
        let o = pado_at(
            &home,
            &["report", "--quiet", d.unwrap().path().to_str().unwrap()],
        );
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let o = pado_at(&home, &["history", "rebuild", root.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Again: the same directories are the same runs.
    assert_eq!(
        pado_at(&home, &["history", "rebuild", root.to_str().unwrap()])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(history_json(&home, &[]).len(), 7);
    let html = home.join("trend.html");
    let o = trend_with_chart(&home, &html, &["심은 회귀", "--metric", "p95"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(99),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        text.contains("REGRESSION") && text.contains("per-second values"),
        "{text}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("trend-chart") && page.contains("심은 회귀"));
    let o = trend_with_chart(&home, &html, &["aa", "--metric", "p95", "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let t: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(t["verdict"], "within_noise", "{t}");
    // One step's figure: the synthetic runs' only step.
    let o = trend_with_chart(&home, &html, &["심은 회귀", "--step", "get"]);
    assert_eq!(
        o.status.code(),
        Some(99),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("(step get)"));
    let o = trend_with_chart(&home, &html, &["심은 회귀", "--step", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    // The baseline's directories gone: judged on the recorded figures, and said so.
    for i in 0..4 {
        std::fs::remove_dir_all(root.join(format!("planted-{i}"))).unwrap();
    }
    let o = trend_with_chart(&home, &html, &["심은 회귀"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(99), "{text}");
    assert!(
        text.contains("recorded figures") && text.contains("directory gone"),
        "{text}"
    );
}

#[test]
fn the_history_page_is_in_pado_docs() {
    let home = tmp("hist-docs");
    let o = pado_at(&home, &["docs", "history"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        include_str!("../../docs/history.md")
    );
    let o = pado_at(&home, &["docs"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("history      Run history"));
}

/// Segments are not recorded; their merge is, once, as a merge with the test's
/// plan id; `history rebuild` of the lot skips the segments and keeps one run.
#[test]
fn a_merged_split_test_is_one_run() {
    let _machine = shared_machine();
    let srv = TestServer::start();
    let home = tmp("hist-merge");
    let url = srv.url("/");
    let segs: Vec<PathBuf> = (0..2).map(|i| home.join(format!("seg{i}"))).collect();
    let children: Vec<_> = segs
        .iter()
        .enumerate()
        .map(|(i, d)| spawn_run_at(&home, d, &url, &["--segment", &format!("{i}/2")]))
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert!(
        history_json(&home, &[]).is_empty(),
        "segments are not recorded"
    );
    let merged = home.join("merged");
    let o = pado_at(
        &home,
        &[
            "merge",
            segs[0].to_str().unwrap(),
            segs[1].to_str().unwrap(),
            "--out",
            merged.to_str().unwrap(),
            "--quiet",
            "--label",
            "replicas=2",
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let runs = history_json(&home, &[]);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["kind"], "merge");
    assert_eq!(runs[0]["labels"]["replicas"], "2");
    let seg_run: Value =
        serde_json::from_str(&std::fs::read_to_string(segs[0].join("run.json")).unwrap()).unwrap();
    assert_eq!(runs[0]["scenario_hash"], seg_run["segment"]["plan_id"]);
    let o = pado_at(&home, &["history", "rebuild", home.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("1 run in")
            && String::from_utf8_lossy(&o.stdout).contains("2 segment(s) skipped"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let again = history_json(&home, &[]);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0]["id"], runs[0]["id"]);
    assert_eq!(
        again[0]["labels"]["replicas"], "2",
        "a rebuild keeps the labels"
    );
}

/// Each find-capacity step is a run of its own, with the search's labels; a
/// corrupt database is said once for the whole search, not once per step.
#[test]
fn find_capacity_records_each_step() {
    let _machine = shared_machine();
    let srv = TestServer::start();
    let home = tmp("hist-capacity");
    let url = srv.url("/");
    let search = |out: &str| {
        pado_at(
            &home,
            &[
                "find-capacity",
                "--url",
                &url,
                "--start-rate",
                "20",
                "--factor",
                "2",
                "--max-rate",
                "40",
                "--hold",
                "1s",
                "--json",
                "--label",
                "tuning=풀 크기",
                "--out",
                home.join(out).to_str().unwrap(),
            ],
        )
    };
    let o = search("cap");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let steps = serde_json::from_slice::<Value>(&o.stdout).unwrap()["steps"]
        .as_array()
        .unwrap()
        .len();
    let runs = history_json(&home, &["--label", "tuning=풀 크기"]);
    assert!(steps >= 2);
    assert_eq!(runs.len(), steps);
    assert!(
        runs.iter().all(|r| r["kind"] == "capacity-step"),
        "{runs:?}"
    );
    std::fs::write(
        home.join("history.db"),
        b"garbage, not SQLite: garbage, not SQLite: garbage",
    )
    .unwrap();
    let o = search("cap2");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        history_lines(&o.stderr).len(),
        1,
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Busy loops on every core this test may use (not pinned), killed when dropped
/// (also when the test fails): a machine as busy as a shared CI runner.
struct BusyCores(Vec<std::process::Child>);

impl BusyCores {
    fn start(n: usize) -> BusyCores {
        let spin = |_| {
            Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("spawning a busy loop")
        };
        BusyCores((0..n).map(spin).collect())
    }
}

impl Drop for BusyCores {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A scenario named `같은 서버` (one name for the fast and the slow server, as a
/// service before and after a change) of 100 requests a second for 5 s to
/// `/delay/{delay_ms}` (five full seconds: fewer cannot be judged at all).
fn fixed_delay_scenario(dir: &Path, delay_ms: u32, seconds: u32) -> PathBuf {
    let path = dir.join(format!("delay-{delay_ms}.yaml"));
    std::fs::write(
        &path,
        fixture(
            "history_fixed_rate.yaml",
            &[
                ("seconds", seconds.to_string()),
                ("delay_ms", delay_ms.to_string()),
            ],
        ),
    )
    .unwrap();
    path
}

/// `pado ARGS` with its history in `home`, which must exit 0; its output.
fn pado_ok_in(home: &Path, args: &[&std::ffi::OsStr]) -> std::process::Output {
    let o = pado_cmd(args)
        .env("PADO_HOME", home)
        .current_dir(home)
        .output()
        .expect("running pado");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// One recorded run of `scenario` against `url` into `out`.
fn fixed_delay_run(home: &Path, scenario: &Path, url: &str, out: &Path) {
    let args = ["run", "--target", url, "--quiet", "--no-html", "--out"].map(std::ffi::OsStr::new);
    let mut all = vec![args[0], scenario.as_os_str()];
    all.extend_from_slice(&args[1..]);
    all.push(out.as_os_str());
    pado_ok_in(home, &all);
}

/// `pado compare a b --json` in `home`, parsed.
fn compare_json(home: &Path, a: &Path, b: &Path) -> Value {
    let args = [
        "compare".as_ref(),
        a.as_os_str(),
        b.as_os_str(),
        "--json".as_ref(),
    ];
    serde_json::from_slice(&pado_ok_in(home, &args).stdout).unwrap()
}

/// What pado's own self-check says of a run's timings: the scheduling delay (ms)
/// they may carry (its event-loop lag p99), the longest stall (the latest
/// wake-up, which a tail percentile may carry), and whether arrivals started
/// late; the delays are zero when pado had the CPU it needed (not delayed, not
/// saturated).
#[derive(Clone, Copy, Debug, Default)]
struct MachineNoise {
    delay_ms: f64,
    stall_ms: f64,
    late: bool,
}

impl MachineNoise {
    /// The self-check in `dir`'s `summary.json`.
    fn of(dir: &Path) -> MachineNoise {
        let s = read_json(&dir.join("summary.json"));
        let g = &s["generator"];
        let pressed =
            g["delayed"].as_bool().unwrap_or(false) || g["saturated"].as_bool().unwrap_or(false);
        let figure = |k: &str| {
            if pressed {
                g[k].as_f64().unwrap_or(0.0)
            } else {
                0.0
            }
        };
        MachineNoise {
            delay_ms: figure("scheduling_delay_ms"),
            stall_ms: figure("lag_max_ms"),
            late: g["late_share"].as_f64().unwrap_or(0.0) > 0.0,
        }
    }

    /// With the server's own lateness in the run (`TestServer`'s count of how
    /// late its `/delay` answers came, ms): what pado measured of the target
    /// moved by that much without pado's doing.
    fn and_server(self, late_ms: f64) -> MachineNoise {
        MachineNoise {
            delay_ms: self.delay_ms + late_ms,
            stall_ms: self.stall_ms + late_ms,
            late: self.late,
        }
    }

    /// The noise of two runs together.
    fn and(self, o: MachineNoise) -> MachineNoise {
        MachineNoise {
            delay_ms: self.delay_ms + o.delay_ms,
            stall_ms: self.stall_ms + o.stall_ms,
            late: self.late || o.late,
        }
    }

    /// Whether this noise alone can explain a row's difference: a latency (ms)
    /// that moved by no more than the scheduling delay the self-checks name (for
    /// p99, the longest stall), or a rate whose arrivals started late. Nothing else
    /// is ever the machine's.
    fn explains(self, row: &Value) -> bool {
        let metric = row["metric"].as_str().unwrap_or("");
        let values: Vec<f64> = row["values"]
            .as_array()
            .map(|v| v.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let moved = match values.as_slice() {
            [a, b] => (a - b).abs(),
            _ => return false,
        };
        let delay = if metric.contains("p99") {
            self.stall_ms
        } else {
            self.delay_ms
        };
        (metric.ends_with(" ms") && moved <= delay) || (metric == "req/s" && self.late)
    }
}

/// Rows of a compare JSON the candidate was called different on, except those
/// `noise` (pado's self-checks of the two runs) explains.
fn rows_called_different(c: &Value, noise: MachineNoise) -> Vec<String> {
    let mut out = Vec::new();
    for r in c["rows"].as_array().unwrap() {
        let different = r["verdicts"].as_array().unwrap().iter().any(|v| {
            ["better", "worse", "few_seconds", "mixed"].contains(&v.as_str().unwrap_or(""))
        });
        if !different {
            continue;
        }
        let row = format!(
            "{} {} {} {}",
            r["scope"], r["metric"], r["changes"], r["values"]
        );
        if noise.explains(r) {
            eprintln!("*** called different, explained by pado's self-check ({noise:?}): {row}");
        } else {
            out.push(row);
        }
    }
    out
}

/// `verdict_of`'s verdict, or `Ok(())` (said loudly) when `noise` could hide a
/// change of `change_ms`: the machine's scheduling delay was at least that large.
fn verdict_unless_noise(
    c: &Value,
    scope: &str,
    metric: &str,
    noise: MachineNoise,
    change_ms: f64,
) -> Result<(), String> {
    let v = verdict_of(c, scope, metric);
    if noise.delay_ms >= change_ms {
        eprintln!(
            "*** {scope} {metric}: {v}, not judged: pado's self-check names {:.0} ms of scheduling delay, as large as the {change_ms} ms change",
            noise.delay_ms
        );
        return Ok(());
    }
    Err(v)
}

fn verdict_of(c: &Value, scope: &str, metric: &str) -> String {
    c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["scope"] == scope && r["metric"] == metric)
        .map(|r| r["verdicts"][0].as_str().unwrap_or("").to_string())
        .unwrap_or_default()
}

/// Five identical runs of a 100 ms server and one of a 110 ms server, all
/// recorded in `home`: every pair of the five is within noise in `pado compare`,
/// `pado trend` passes the fifth; the 10% slower run is worse in `pado compare`
/// at `--min-change`, and a run 50% slower fails `pado trend` (exit 99).
/// Returns the A/A pairs checked.
fn aa_pairs_and_a_slower_server(home: &Path, server: &TestServer) -> usize {
    let fast = fixed_delay_scenario(home, 100, 5);
    let slow = fixed_delay_scenario(home, 110, 5);
    let url = server.base_url();
    // Each run with the noise its generator's self-check and the server name.
    let run = |scenario: &Path, out: PathBuf| {
        server.reset_stats();
        fixed_delay_run(home, scenario, &url, &out);
        let late_ms = server.stats().delay_late_max_us as f64 / 1000.0;
        let noise = MachineNoise::of(&out).and_server(late_ms);
        (out, noise)
    };
    let (runs, noises): (Vec<PathBuf>, Vec<MachineNoise>) = (0..5)
        .map(|i| run(&fast, home.join(format!("a{i}"))))
        .unzip();
    let mut pairs = 0;
    for i in 0..runs.len() {
        for j in i + 1..runs.len() {
            let c = compare_json(home, &runs[i], &runs[j]);
            let noise = noises[i].and(noises[j]);
            let different = rows_called_different(&c, noise);
            assert!(
                different.is_empty(),
                "a{i} against a{j}: {different:#?}\n{}",
                c["noise_between_runs"]
            );
            assert!(
                c["noise_between_runs"]
                    .as_str()
                    .unwrap()
                    .starts_with("changes under 5% are treated as noise (--min-change)"),
                "{}",
                c["noise_between_runs"]
            );
            pairs += 1;
        }
    }
    let trend = |metric: &str| {
        pado_cmd(["trend", "같은 서버", "--metric", metric, "--html"])
            .arg(home.join("trend.html"))
            .env("PADO_HOME", home)
            .current_dir(home)
            .output()
            .expect("running pado")
    };
    for metric in ["p50", "p95", "p99"] {
        let o = trend(metric);
        let text = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{metric}: {text}");
        assert!(text.contains("noise between runs: "), "{text}");
    }
    // The 10% slower server, against the first run with --min-change's floor
    // (a history of its own, empty): worse.
    let (s, slow_noise) = run(&slow, home.join("slow"));
    let fresh = home.join("no-history");
    std::fs::create_dir_all(&fresh).unwrap();
    let c = compare_json(&fresh, &runs[0], &s);
    // Unless pado's self-checks say the machine delayed these runs by as much as
    // the 10 ms the server added (then the change cannot be told from the noise).
    let noise = noises[0].and(slow_noise);
    if let Err(v) = verdict_unless_noise(&c, "overall", "latency p50 ms", noise, 10.0) {
        assert_eq!(v, "worse", "{c:#}");
    }
    // Five seconds of a machine that stalls now and then can be too few for the
    // tail's per-second values: then it says so, never "within noise".
    for (scope, metric) in [("overall", "latency p95 ms"), ("step 고정 지연", "p95 ms")] {
        if let Err(v) = verdict_unless_noise(&c, scope, metric, noise, 10.0) {
            assert!(v == "worse" || v == "too_few_seconds", "{metric}: {c:#}");
        }
    }
    let text = pado_cmd(["compare"])
        .arg(&runs[0])
        .arg(&s)
        .env("PADO_HOME", &fresh)
        .current_dir(&fresh)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("noise between runs: changes under 5% are treated as noise (--min-change)"),
        "{text}"
    );
    assert!(
        text.contains("▼ worse") || noise.delay_ms >= 10.0,
        "{noise:?}\n{text}"
    );
    // With the history's earlier runs, the floor is theirs where wider: worse,
    // or within noise only below a stated floor from those runs (or, as above,
    // too few seconds to judge the tail: never "within noise" then).
    let c = compare_json(home, &runs[0], &s);
    let row = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["scope"] == "overall" && r["metric"] == "latency p95 ms")
        .unwrap();
    let change = row["changes"][0].as_f64().unwrap();
    let judged = verdict_unless_noise(&c, "overall", "latency p95 ms", noise, 10.0).is_err();
    assert!(change > 5.0 || !judged, "{row:#}");
    if judged && row["verdicts"][0] != "worse" && row["verdicts"][0] != "too_few_seconds" {
        assert!(
            row["floor"]["earlier_runs"]["pct"].as_f64().unwrap() > change
                && c["noise_between_runs"]
                    .as_str()
                    .unwrap()
                    .contains("earlier runs of this test is larger"),
            "{c:#}"
        );
    }
    // A server half again as slow: a regression in the trend over the history
    // (exit 99), whatever the spread between these runs. Ten seconds, so a machine
    // that stalls now and then still leaves enough seconds to judge.
    let (_, much_noise) = run(
        &fixed_delay_scenario(home, 150, 10),
        home.join("much-slower"),
    );
    let o = trend("p95");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("noise between runs: "), "{text}");
    // The 50 ms the server added is a regression unless pado's self-checks say the
    // machine delayed the runs by as much.
    let earlier_ms = noises.iter().map(|n| n.delay_ms).fold(0.0, f64::max);
    let delay_ms = earlier_ms + much_noise.delay_ms;
    if delay_ms < 50.0 {
        assert_eq!(o.status.code(), Some(99), "{text}");
        assert!(text.contains("REGRESSION"), "{text}");
    } else {
        eprintln!("*** trend not judged: pado's self-checks name {delay_ms:.0} ms of scheduling delay\n{text}");
    }
    pairs
}

#[test]
fn identical_runs_are_never_different_quiet_or_busy_and_a_ten_percent_slower_server_is_worse() {
    // Twenty A/A pairs from ten real runs (five on a quiet machine, five beside
    // busy loops on every core, each set paired within itself), each of 5 s at
    // 100 req/s against a server that answers in exactly 100 ms; then the same
    // server answering in 110 ms in each setting. (A 20 ms server was tried: on a
    // machine shared by several builds, scheduling alone moved its p95 by 3 ms,
    // 14%, between identical runs; at 100 ms the same is 3%.)
    let server = TestServer::start();
    let quiet = tmp("hist-aa-quiet");
    let busy = tmp("hist-aa-busy");
    let mut pairs = {
        // Alone on the machine too: other tests' runs beside these would make the
        // server (in this process) and pado slower at times, and "quiet" untrue.
        let _machine = crate::harness::exclusive_machine();
        aa_pairs_and_a_slower_server(&quiet, &server)
    };
    {
        // Alone on the machine: the busy loops slow this test, not the others.
        let _machine = crate::harness::exclusive_machine();
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let _spin = BusyCores::start(cores);
        pairs += aa_pairs_and_a_slower_server(&busy, &server);
    }
    assert_eq!(pairs, 20);
}

/// A run named with terminal escape sequences (a title change, a colour, a bell, a
/// carriage return that would overwrite the line): `pado history`, `pado compare` and
/// `pado trend` print the name escaped, never the raw control characters, and keep
/// its Hangul.
#[test]
fn names_with_control_characters_are_printed_escaped() {
    let home = tmp("hist-escapes");
    let root = home.join("results");
    std::fs::create_dir_all(&root).unwrap();
    let name = "evil\u{1b}]0;pwn\u{7}\u{1b}[31m\r파도\u{9b}2J";
    // `pado compare` names runs by their directories: those carry an escape too.
    let a = synthetic(&root, "a\u{1b}[2J", name, 1, 100_000, 1);
    let b = synthetic(&root, "b\u{1b}[2J", name, 2, 100_000, 2);
    for d in [&a, &b] {
        let o = pado_at(&home, &["report", "--quiet", d.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{}", say(&o));
    }
    let whole = r"evil\x1b]0;pwn\x07\x1b[31m\x0d파도\u{9b}2J";
    let check = |what: &str, o: &Output, want: &str| {
        let all = [&o.stdout[..], &o.stderr[..]].concat();
        let text = String::from_utf8(all).unwrap();
        assert!(
            !text.contains(['\u{1b}', '\u{7}', '\r', '\u{9b}']),
            "{what} printed a raw control character: {text:?}"
        );
        assert!(text.contains(want), "{what}: {text}");
    };
    let o = pado_at(&home, &["history", "rebuild", root.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", say(&o));
    check("history rebuild", &o, whole);
    let o = pado_at(&home, &["history"]);
    assert_eq!(o.status.code(), Some(0), "{}", say(&o));
    // The list's name column is 20 columns wide: the name is cut, escaped.
    check("history", &o, r"evil\x1b]0;pwn\x07\…");
    check("history", &o, r"results/a\x1b[2J");
    let o = pado_at(
        &home,
        &["compare", a.to_str().unwrap(), b.to_str().unwrap()],
    );
    check("compare", &o, r"b\x1b[2J");
    let html = home.join("trend.html");
    let o = pado_at(&home, &["trend", name, "--html", html.to_str().unwrap()]);
    check("trend", &o, whole);
}

/// `pado trend` keeps its chart beside the results (`pado-results/trend-….html`), so
/// the shell's `pado history rebuild pado-results/*` hands rebuild that file too:
/// it is skipped with a note and both runs are recorded. A directory that holds no
/// result is still an error, and so are arguments that are all files.
#[test]
fn history_rebuild_of_the_results_glob_skips_trend_charts() {
    let home = tmp("hist-rebuild-glob");
    let root = home.join("pado-results");
    std::fs::create_dir_all(&root).unwrap();
    for (i, dir) in ["첫-run", "second-run"].iter().enumerate() {
        let d = synthetic(&root, dir, "글롭", 3 + i as u32, 100_000, i as u64);
        let o = pado_at(&home, &["report", "--quiet", d.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{o:?}");
    }
    let o = pado_at(&home, &["history", "rebuild", root.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    // The chart lands beside the results, where the glob below finds it.
    let o = pado_at(&home, &["trend", "글롭", "--metric", "p95"]);
    assert!(matches!(o.status.code(), Some(0 | 99)), "{o:?}");
    let chart = root.join("trend-글롭-p95.html");
    assert!(chart.is_file(), "{}", String::from_utf8_lossy(&o.stdout));
    // What `pado-results/*` expands to.
    let mut glob: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path().to_str().unwrap().to_string())
        .collect();
    glob.sort();
    assert_eq!(glob.len(), 3, "{glob:?}");
    let mut args = vec!["history", "rebuild"];
    args.extend(glob.iter().map(String::as_str));
    let o = pado_at(&home, &args);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!(
            "skipped {}: a file, not a result directory",
            chart.display()
        )),
        "{stderr}"
    );
    assert!(
        stdout.contains("recorded 2 runs") && stdout.contains("1 file(s) skipped"),
        "{stdout}"
    );
    assert_eq!(history_json(&home, &[]).len(), 2);
    // A directory with no result in it is still named as an error (exit 1).
    let empty = root.join("not-a-result");
    std::fs::create_dir(&empty).unwrap();
    let o = pado_at(
        &home,
        &[
            "history",
            "rebuild",
            glob[0].as_str(),
            empty.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a result directory and holds none"),
        "{o:?}"
    );
    // Only files: nothing to record is an error, not a silent success.
    let o = pado_at(&home, &["history", "rebuild", chart.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("a file, not a result directory"),
        "{o:?}"
    );
}
