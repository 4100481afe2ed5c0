//! "Why did requests fail?": `--http-debug`, `pado run --once` and the failed-request
//! samples of every result directory, checked against the test server's known
//! responses; a value from `{{ env.X }}` never shows anywhere.

use std::path::Path;

use pado_demo_target::TargetOptions;
use pado_testkit::TestServer;

use crate::harness::{fixture, free_port, pado_env, run, text, tmp, write_file, write_fixture};

/// The secret every test here puts in a header, a URL and a body.
const SECRET: &str = "s3cr3t-e2e-7f3a";
const ENV: &str = "PADO_E2E_WHY_SECRET";

/// `pado ARGS` with the secret in the environment.
fn pado_with_secret(args: &[&str]) -> std::process::Output {
    pado_env(args, &[(ENV, SECRET)])
}

fn assert_no_secret_in_dir(dir: &Path) {
    let mut files = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            files += 1;
            let bytes = std::fs::read(&p).unwrap();
            assert!(
                memchr_find(&bytes, SECRET.as_bytes()).is_none(),
                "the secret is in {}",
                p.display()
            );
        }
    }
    assert!(files >= 4, "{files} files in {}", dir.display());
}

fn memchr_find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A scenario sending the secret in a header, in the query and in a JSON body; the
/// test server echoes request headers (`/headers`) and bodies (`/echo`), so the
/// secret also comes back in responses.
fn secret_scenario(base: &str, extra_steps: &str) -> String {
    fixture(
        "why_secret_everywhere.yaml",
        &[
            ("base", base.to_string()),
            ("extra_steps", extra_steps.to_string()),
        ],
    )
}

#[test]
fn http_debug_prints_exchanges_with_secrets_and_credentials_hidden() {
    let srv = TestServer::start();
    let d = tmp("why-debug");
    let f = write_fixture(
        &d,
        "why_http_debug_prints_exchanges_with_secrets_and_credentials_hidden.yaml",
        "t.yaml",
        &[("target", srv.base_url())],
    );
    let out_dir = d.join("r");
    let o = pado_with_secret(&[
        "run",
        f.to_str().unwrap(),
        "--http-debug",
        "--quiet",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("warning: --http-debug"), "{stderr}");
    // The known route: request line, status, its headers and its body bytes.
    let url = srv.url("/status/500");
    assert!(stderr.contains(&format!("> GET {url}")), "{stderr}");
    assert!(stderr.contains("< 500"), "{stderr}");
    assert!(stderr.contains("< Content-Type: text/plain"), "{stderr}");
    assert!(
        stderr.contains("< body: [11 bytes] status 500\\n"),
        "{stderr}"
    );
    assert!(stderr.contains("duration "), "{stderr}");
    // The env header and the credential are hidden, in requests and in echoes.
    assert!(stderr.contains("> X-Api-Key: ***"), "{stderr}");
    assert!(stderr.contains("> Authorization: ***"), "{stderr}");
    assert!(stderr.contains("/headers?k=***"), "{stderr}");
    assert!(
        stderr.contains(r#"> body: [25 bytes] {"key":"***"}"#),
        "{stderr}"
    );
    assert!(!stderr.contains("visible-bearer"), "{stderr}");
    assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET));
    assert_no_secret_in_dir(&out_dir);
    // Three requests, three exchanges printed: the server counts the same.
    assert_eq!(stderr.matches("\n--- s · ").count(), 3, "{stderr}");
    assert_eq!(srv.stats().requests, 3);

    // `=full` shows the credential, never the env value.
    let out_dir = d.join("r2");
    let o = pado_with_secret(&[
        "run",
        f.to_str().unwrap(),
        "--http-debug=full",
        "--quiet",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("> Authorization: Bearer visible-bearer"),
        "{stderr}"
    );
    assert!(stderr.contains("> X-Api-Key: ***"), "{stderr}");
    assert!(!stderr.contains(SECRET) && !text(&o.stdout).contains(SECRET));
}

#[test]
fn once_shows_each_step_and_its_exit_code_follows_the_checks() {
    let srv = TestServer::start();
    let d = tmp("why-once");
    let f = write_fixture(
        &d,
        "why_once_shows_each_step_and_its_exit_code_follows_the_checks.yaml",
        "ok.yaml",
        &[("target", srv.base_url())],
    );
    let o = pado_with_secret(&["run", f.to_str().unwrap(), "--once"]);
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("scenario s"), "{stdout}");
    assert!(stdout.contains("✓ login → 200"), "{stdout}");
    assert!(
        stdout.contains("✓ check status is 200: got 200"),
        "{stdout}"
    );
    // The server numbers logins: this was its only one.
    assert!(stdout.contains(r#"extracted token = "tok-1""#), "{stdout}");
    assert!(stdout.contains("> X-Api-Key: ***"), "{stdout}");
    assert!(stdout.contains("ok: 3 requests, 0 failed"), "{stdout}");
    assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET));
    // No result directory: a script check, not a run.
    assert!(!d.join("pado-results").exists());
    assert_eq!(srv.stats().requests, 3);

    let f = write_fixture(
        &d,
        "why_once_shows_each_step_and_its_exit_code_follows_the_checks_2.yaml",
        "bad.yaml",
        &[("target", srv.base_url())],
    );
    let o = pado_with_secret(&["run", f.to_str().unwrap(), "--once"]);
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(99), "{stdout}{stderr}");
    assert!(stdout.contains("✗ denied → 401"), "{stdout}");
    assert!(
        stdout.contains("✗ check status is 200: got 401"),
        "{stdout}"
    );
    assert!(
        stdout.contains("body: [11 bytes] status 401\\n"),
        "{stdout}"
    );
    // /json/item numbers items from 1: the first one ever made.
    assert!(stdout.contains("✗ check $.id == 999999: got 1"), "{stdout}");
    assert!(stdout.contains("FAILED: 4 requests, 2 failed"), "{stdout}");
    assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET));
}

#[test]
fn failed_request_samples_are_in_every_result() {
    let srv = TestServer::start();
    let refused = free_port();
    let d = tmp("why-samples");
    let steps = format!(
        "      - name: boom
        request: GET /status/500
      - name: login
        request: GET /json/login
        check: {{ json: {{ $.token: nope }} }}
      - name: nobody
        request: GET http://127.0.0.1:{refused}/x?k={{{{ env.{ENV} }}}}
"
    );
    let scenario = secret_scenario(&srv.base_url(), &steps)
        .replace("per-vu-iterations", "constant-vus")
        .replace("iterations: 1", "duration: 1s");
    let f = write_file(&d, "t.yaml", &scenario);
    let out_dir = d.join("r");
    let o = pado_with_secret(&[
        "run",
        f.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(out_dir.join("failures.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |cat: &str| -> Vec<&serde_json::Value> {
        lines.iter().filter(|l| l["category"] == cat).collect()
    };
    // Bounded: many failures each, three samples each.
    let (b, c, r) = (of("http_500"), of("check_failed"), of("connect_refused"));
    assert_eq!(
        (b.len(), c.len(), r.len(), lines.len()),
        (3, 3, 3, 9),
        "{lines:?}"
    );
    assert_eq!(b[0]["url"], "/status/500");
    assert_eq!(b[0]["method"], "GET");
    assert_eq!(b[0]["status"], 500);
    assert_eq!(b[0]["body"], "status 500\\n");
    assert_eq!(b[0]["step"], "boom");
    assert_eq!(c[0]["check"], r#"login: $.token == "nope""#);
    let actual = c[0]["actual"].as_str().unwrap();
    assert!(actual.starts_with(r#"got "tok-"#), "{actual}");
    // The body holds the same token the check saw.
    let token = actual.trim_start_matches("got ");
    assert!(c[0]["body"].as_str().unwrap().contains(token), "{:?}", c[0]);
    assert_eq!(r[0]["status"], 0);
    assert_eq!(r[0]["url"], "/x?k=***");
    assert!(r[0].get("body").is_none());
    // summary.json carries them; the terminal says why; the report has the table.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["failures"].as_array().unwrap().len(), 9);
    assert!(stdout.contains("why requests failed"), "{stdout}");
    assert!(
        stdout.contains("connect_refused") && stdout.contains("nobody: GET /x?k=*** → no response"),
        "{stdout}"
    );
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(html.contains("id=\"table-failures\""));
    assert!(html.contains("login: $.token == &quot;nope&quot;"));
    assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET));
    assert_no_secret_in_dir(&out_dir);
}

#[test]
fn a_clean_run_has_no_failure_file() {
    let srv = TestServer::start();
    let url = srv.url("/");
    let r = run(
        "why-clean",
        &["--url", &url, "--vus", "1", "--duration", "1s"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert!(!r.dir.join("failures.jsonl").exists());
    assert_eq!(r.summary()["failures"], serde_json::json!([]));
}

#[test]
fn every_example_passes_once_against_the_demo_target() {
    let t = pado_demo_target::start(TargetOptions {
        posts: 2_000,
        ..Default::default()
    })
    .expect("demo target starts");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().and_then(|e| e.to_str()) != Some("yaml") {
            continue;
        }
        seen += 1;
        // Every example is written for the demo target, the quick start included.
        let base = t.base_url();
        let o = pado_with_secret(&["run", p.to_str().unwrap(), "--once", "--target", &base]);
        let stdout = text(&o.stdout);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}: {stdout}{}",
            p.display(),
            text(&o.stderr)
        );
        assert!(stdout.contains("\nok: "), "{stdout}");
        assert!(stdout.contains(" → 200"), "{stdout}");
    }
    assert!(seen >= 5, "{seen} examples");
}
