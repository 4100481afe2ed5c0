//! What a new user runs first works, unedited, against the demo target (started as
//! `pado target serve` starts it): the starter file of `pado init`, the first example
//! of the scenario docs, every file in `examples/` and the README's quick-mode
//! commands. Each runs short (its timeline compressed with `--fit-to`, so its model
//! is kept) and must exit 0 with no failure, no 404, and every request counted by the
//! target. Also: `pado plan`'s written scenario sends the planned load, and the
//! distribution helpers (docs, completions, man page, NO_COLOR).

use std::process::Command;

use pado_demo_target::{RunningTarget, TargetOptions};
use pado_testkit::TestServer;
use serde_json::Value;

use crate::harness::{demo_target, num, pado, pado_cmd, run, shared_machine, tmp};

/// The demo target as `pado target serve` runs it (its defaults), on a free port.
/// `pado run ARGS` against `t`: exit 0, nothing failed, no 404, every check passed,
/// and the target served exactly the requests pado counted. Returns summary.json.
fn passes_against(t: &RunningTarget, name: &str, args: &[&str]) -> Value {
    let before = t.requests_served();
    let r = run(name, args);
    let s = r.summary();
    assert_eq!(
        r.code(),
        0,
        "{name}: exit {}\nstdout:\n{}\nstderr:\n{}",
        r.code(),
        r.stdout(),
        r.stderr()
    );
    let requests = num(&s, "requests");
    assert!(requests > 0.0, "{name}: nothing sent: {s}");
    assert_eq!(num(&s, "failed"), 0.0, "{name}: {}", r.stdout());
    let status = s["status"].as_object().expect("status breakdown");
    assert!(
        !status.contains_key("404"),
        "{name}: 404s (a route the demo target lacks): {status:?}"
    );
    assert!(
        status.keys().all(|k| k.starts_with('2')),
        "{name}: {status:?}"
    );
    for (check, c) in s["checks"].as_object().unwrap() {
        assert_eq!(num(c, "fails"), 0.0, "{name}: check {check} failed");
    }
    let served = (t.requests_served() - before) as f64;
    assert_eq!(
        served, requests,
        "{name}: the target served {served}, pado counted {requests}"
    );
    s
}

fn step_requests(s: &Value, step: &str) -> f64 {
    s["steps"][step]["requests"].as_f64().unwrap_or(0.0)
}

#[test]
fn the_starter_file_of_pado_init_passes_against_the_demo_target() {
    let t = demo_target(TargetOptions::default());
    let dir = tmp("starter");
    let f = dir.join("pado.yaml");
    let out = pado(&["init", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("pado docs scenario"), "{said}");
    assert!(!said.contains("docs/scenario.md"), "{said}");
    // Its ramp, hold and ramp down, compressed to 10 s: long enough that the write
    // flow (10% of iterations) runs many times.
    let s = passes_against(
        &t,
        "starter",
        &[
            f.to_str().unwrap(),
            "--target",
            &t.base_url(),
            "--fit-to",
            "10s",
        ],
    );
    // The flow logged in and created posts with the token (201, not 401).
    assert!(step_requests(&s, "create") > 0.0, "{s}");
    assert!(s["thresholds_ok"].as_bool().unwrap());
}

/// The first ```yaml block of a Markdown file.
fn first_yaml_block(md: &str) -> String {
    let start = md.find("```yaml\n").expect("a yaml block") + "```yaml\n".len();
    let len = md[start..].find("```").unwrap();
    md[start..start + len].to_string()
}

#[test]
fn the_first_example_of_the_scenario_docs_passes_against_the_demo_target() {
    let t = demo_target(TargetOptions::default());
    let md = include_str!("../../docs/scenario.md");
    // `pado docs scenario` prints the same page.
    let out = pado(&["docs", "scenario"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), md);
    let dir = tmp("docs-example");
    let f = dir.join("example.yaml");
    std::fs::write(&f, first_yaml_block(md)).unwrap();
    let s = passes_against(
        &t,
        "docs-example",
        &[
            f.to_str().unwrap(),
            "--target",
            &t.base_url(),
            "--fit-to",
            "8s",
        ],
    );
    assert!(step_requests(&s, "search") > 0.0, "{s}");
}

#[test]
fn every_example_passes_unedited_against_the_demo_target() {
    let t = demo_target(TargetOptions::default());
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().and_then(|e| e.to_str()) != Some("yaml") {
            continue;
        }
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        let s = passes_against(
            &t,
            &name,
            &[
                p.to_str().unwrap(),
                "--target",
                &t.base_url(),
                "--fit-to",
                "5s",
            ],
        );
        // The file's own model ran (the executor was not replaced).
        let executor = s["scenarios"][0]["executor"].as_str().unwrap().to_string();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(
            text.contains(&format!("executor: {executor}")),
            "{name}: {executor}"
        );
        seen.push(name);
    }
    assert!(seen.len() >= 5, "{seen:?}");
    assert!(seen.iter().any(|n| n == "quickstart"));
}

/// The README's `pado run --url ...` commands, continuation lines joined.
fn readme_run_commands() -> Vec<Vec<String>> {
    let md = include_str!("../../README.md");
    let mut cmds = Vec::new();
    let mut cur = String::new();
    for line in md.lines() {
        let l = line.trim();
        if cur.is_empty() && !l.starts_with("pado run --url") {
            continue;
        }
        let l = l.split("   #").next().unwrap().trim();
        match l.strip_suffix('\\') {
            Some(more) => cur.push_str(more),
            None => {
                cur.push_str(l);
                cmds.push(shell_words(&cur));
                cur.clear();
            }
        }
    }
    cmds
}

/// Split a command line on spaces outside single quotes (all the README uses).
fn shell_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in s.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any {
                    out.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            c => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(word);
    }
    out
}

#[test]
fn the_readme_quick_mode_commands_pass_against_the_demo_target() {
    let t = demo_target(TargetOptions::default());
    let cmds = readme_run_commands();
    assert!(cmds.len() >= 5, "{cmds:?}");
    for (i, words) in cmds.iter().enumerate() {
        assert_eq!(&words[..2], ["pado", "run"], "{words:?}");
        let args: Vec<String> = words[2..]
            .iter()
            .map(|w| w.replace("http://127.0.0.1:8080", &t.base_url()))
            .collect();
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        // Each command's own shape, compressed to 2 s.
        args.extend(["--fit-to", "2s"]);
        passes_against(&t, &format!("readme-{i}"), &args);
    }
}

#[test]
fn the_scenario_pado_plan_writes_sends_the_planned_rate() {
    let srv = TestServer::start();
    let dir = tmp("plan");
    let f = dir.join("plan.yaml");
    // 864,000 users × 10 requests a day = 100 req/s on average, 200 at the peak; a
    // pass of 10 requests takes 2 s, so 20 and 40 VUs.
    let out = pado(&[
        "plan",
        "--dau",
        "864000",
        "--requests-per-user",
        "10",
        "--scenario-time",
        "2s",
        "--peak-factor",
        "2",
        "--target",
        &srv.base_url(),
        "--write-scenario",
        f.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("20 VUs sending ~100.00 req/s"), "{said}");
    assert!(said.contains("40 VUs sending ~200.00 req/s"), "{said}");
    assert!(said.contains("target TPS"), "{said}");
    let text = std::fs::read_to_string(&f).unwrap();
    assert!(
        text.contains(&format!("target: \"{}\"", srv.base_url())),
        "{text}"
    );
    // 26 minutes (average test, then peak test) compressed to 15.6 s: each hold
    // lasts 6 s. The pacing is not compressed, so the rates stay the plan's.
    let r = run("plan-run", &[f.to_str().unwrap(), "--fit-to", "15.6s"]);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    let stages = s["stages"].as_array().unwrap();
    for (scenario, planned) in [("average", 100.0), ("peak", 200.0)] {
        let hold = stages
            .iter()
            .find(|st| st["scenario"] == scenario && st["index"] == 1)
            .unwrap_or_else(|| panic!("no hold stage of {scenario}: {s}"));
        let rps = num(hold, "rps");
        assert!(
            (rps - planned).abs() <= planned * 0.15,
            "{scenario}: {rps} req/s sent, {planned} planned"
        );
    }
    assert_eq!(srv.stats().requests as f64, num(&s, "requests"));
}

#[test]
fn completions_name_the_subcommands_and_the_man_page_renders() {
    for shell in ["bash", "zsh", "fish"] {
        let out = pado(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let text = String::from_utf8_lossy(&out.stdout);
        for sub in ["run", "find-capacity", "compare", "docs", "completions"] {
            assert!(text.contains(sub), "{shell}: {sub} missing");
        }
    }
    // The bash script is valid bash.
    let out = pado(&["completions", "bash"]);
    let dir = tmp("completions");
    let f = dir.join("pado.bash");
    std::fs::write(&f, &out.stdout).unwrap();
    let check = Command::new("bash").arg("-n").arg(&f).output().unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );

    let out = pado(&["man"]);
    assert_eq!(out.status.code(), Some(0));
    let roff = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        roff.starts_with(".ie") || roff.contains(".TH pado"),
        "{roff}"
    );
    assert!(roff.contains("HTTP load testing and performance analysis"));
    // Rendered by the system's man when it is there.
    let m = dir.join("pado.1");
    std::fs::write(&m, &roff).unwrap();
    if let Ok(o) = Command::new("man")
        .arg("-l")
        .arg(&m)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
    {
        if o.status.success() {
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(
                text.contains("SUBCOMMANDS") || text.contains("pado-run"),
                "{text}"
            );
        }
    }
}

#[test]
fn help_speaks_of_the_product_and_documents_the_exit_codes() {
    let out = pado(&["--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("HTTP load testing and performance analysis in one binary"),
        "{text}"
    );
    assert!(!text.contains("wiring"), "{text}");
    assert!(text.contains("99 a threshold failed") && text.contains("130"));
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("107 a k6 script that cannot run"), "{text}");
    let out = pado(&["compare", "--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    // The candidates are optional: an experiment's directory alone compares its points.
    assert!(text.contains("<BASELINE> [CANDIDATE]..."), "{text}");
    let out = pado(&["report", "--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("-q, --quiet"), "{text}");
    // `--export json` did nothing (summary.json is always written): refused.
    let out = pado(&["report", "x", "--export", "json"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn no_color_wins_over_forced_colour() {
    let _machine = shared_machine();
    let srv = TestServer::start();
    let dir_tmp = tmp("color");
    let dir = dir_tmp.join("result");
    let out = pado_cmd([
        "run",
        "--url",
        &srv.url("/"),
        "--vus",
        "1",
        "--iterations",
        "3",
    ])
    .args(["--threshold", "p(95) < 60000", "--quiet", "--out"])
    .arg(&dir)
    .env_remove("NO_COLOR")
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let report = |env: &[(&str, &str)]| {
        let mut c = pado_cmd(["report"]);
        c.arg(&dir);
        c.env_remove("NO_COLOR").env_remove("CLICOLOR_FORCE");
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // The forced-colour path really colours (a pipe is not a terminal)...
    assert!(report(&[("CLICOLOR_FORCE", "1")]).contains('\x1b'));
    assert!(!report(&[]).contains('\x1b'));
    // ...and NO_COLOR turns it off.
    let plain = report(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(!plain.contains('\x1b'), "{plain}");
    assert!(plain.contains("thresholds"), "{plain}");
}
