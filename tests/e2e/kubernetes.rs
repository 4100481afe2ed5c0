//! `pado k8s`: the generator wrapper the Job's pods run (a real run against the test
//! server, then its result served as a tar until fetched), the rendered manifests,
//! and `pado k8s run` against the mock API server of `crates/k8s/tests/common/mock.rs`
//! (whose flow tests cover failures and Ctrl-C); no cluster is needed here.

#[path = "../../crates/k8s/tests/common/mock.rs"]
mod k8s_mock;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use pado_testkit::TestServer;
use serde_json::Value;

use crate::harness::{
    free_port, num, pado, pado_cmd, pado_env, shared_machine, tmp, wait_within, write_file,
    write_fixture,
};

/// The generator's token in these tests (a pod gets its run's from the Secret).
const GEN_TOKEN: &str = "e2e-generator-token-0123456789abcdef";

/// One HTTP/1.1 exchange with the generator's result server, with the token:
/// (status, body).
fn generator_http(addr: SocketAddr, method: &str, path: &str) -> std::io::Result<(u16, Vec<u8>)> {
    http_as(addr, method, path, Some(GEN_TOKEN))
}

/// One exchange sending `token` as `X-Pado-Token` (or none).
fn http_as(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
) -> std::io::Result<(u16, Vec<u8>)> {
    let mut s = std::net::TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let auth = token
        .map(|t| format!("X-Pado-Token: {t}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\nContent-Length: 0\r\n\r\n"
    )?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)?;
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let status = std::str::from_utf8(&out[9..12]).unwrap().parse().unwrap();
    Ok((status, out[split + 4..].to_vec()))
}

#[test]
fn k8s_generator_runs_then_serves_its_result_until_fetched() {
    let _machine = shared_machine();
    let srv = TestServer::start();
    let t = tmp("k8s-generator");
    let results = t.join("run");
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut child = pado_cmd(["k8s", "generator", "--listen", &addr.to_string()])
        .arg("--results")
        .arg(&results)
        .args([
            "--serve-timeout",
            "60s",
            "--",
            "run",
            "--url",
            &srv.url("/"),
        ])
        .args(["--vus", "2", "--duration", "1s", "--quiet", "--out"])
        .arg(&results)
        .env("PADO_GENERATOR_TOKEN", GEN_TOKEN)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Poll /status (bounded) until the run is over.
    let deadline = Instant::now() + Duration::from_secs(60);
    let status: Value = loop {
        assert!(Instant::now() < deadline, "no result within 60 s");
        if let Ok((200, body)) = generator_http(addr, "GET", "/status") {
            let v: Value = serde_json::from_slice(&body).unwrap();
            if v["state"] == "done" {
                break v;
            }
            assert_eq!(v["state"], "running");
            // The tar is refused while running.
            assert_eq!(generator_http(addr, "GET", "/result.tar").unwrap().0, 409);
            // And to a stranger: no token, or another one.
            for t in [None, Some("e2e-generator-token-0123456789abcdeX")] {
                assert_eq!(http_as(addr, "POST", "/stop", t).unwrap().0, 401);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // The strangers' `/stop`s did not stop it: it ran its whole second.
    assert_eq!(status["exit_code"], 0, "{status}");
    for t in [None, Some("e2e-generator-token-0123456789abcdeX")] {
        assert_eq!(http_as(addr, "GET", "/result.tar", t).unwrap().0, 401);
        assert_eq!(http_as(addr, "POST", "/done", t).unwrap().0, 401);
    }
    let (code, tar) = generator_http(addr, "GET", "/result.tar").unwrap();
    assert_eq!(code, 200);
    let got = t.join("got");
    pado_fleet::archive::unpack(&tar[..], &got, 64 << 20).unwrap();
    // The served result is the run's own, and it counted what the server received.
    for f in ["run.json", "summary.json", "timeline.jsonl"] {
        assert_eq!(
            std::fs::read(got.join(f)).unwrap(),
            std::fs::read(results.join(f)).unwrap(),
            "{f}"
        );
    }
    let summary: Value =
        serde_json::from_slice(&std::fs::read(got.join("summary.json")).unwrap()).unwrap();
    assert_eq!(num(&summary, "requests") as u64, srv.stats().requests);
    assert!(srv.stats().requests > 0);
    // Told it is collected, it exits with the run's code.
    assert_eq!(generator_http(addr, "POST", "/done").unwrap().0, 200);
    let exit = wait_within(&mut child, Duration::from_secs(10))
        .expect("generator still running after /done");
    assert_eq!(exit.code(), Some(0));
}

/// `POST /control` with a command's JSON, sending `token` as `X-Pado-Token` as the
/// pod proxy does: (status, body).
fn control_as(addr: SocketAddr, body: &str, token: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST /control HTTP/1.1\r\nHost: x\r\nX-Pado-Token: {token}\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.get(9..12).and_then(|v| v.parse().ok()).unwrap_or(0);
    (
        status,
        text.split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_string(),
    )
}

#[test]
fn k8s_generator_hands_a_change_of_the_load_to_its_run() {
    let _machine = shared_machine();
    let srv = TestServer::start();
    let t = tmp("k8s-generator-control");
    let results = t.join("run");
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let mut child = pado_cmd(["k8s", "generator", "--listen", &addr.to_string()])
        .arg("--results")
        .arg(&results)
        .args([
            "--serve-timeout",
            "60s",
            "--",
            "run",
            "--url",
            &srv.url("/"),
        ])
        .args(["--rate", "40", "--duration", "8s", "--quiet", "--out"])
        .arg(&results)
        .env("PADO_GENERATOR_TOKEN", GEN_TOKEN)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while srv.stats().requests < 20 {
        assert!(Instant::now() < deadline, "the run never sent its load");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A stranger's change is refused; the run's own token pauses it.
    let pause = r#"{"action":"pause"}"#;
    assert_eq!(
        control_as(addr, pause, "e2e-generator-token-0123456789abcdeX").0,
        401
    );
    assert_eq!(
        control_as(addr, pause, GEN_TOKEN),
        (200, r#"{"ok":true}"#.into())
    );
    std::thread::sleep(Duration::from_millis(500));
    let held = srv.stats().requests;
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(srv.stats().requests, held, "requests went on while paused");
    // A command the run cannot take is answered with its words.
    let (st, body) = control_as(addr, r#"{"action":"set_vus","vus":3}"#, GEN_TOKEN);
    assert_eq!(st, 409, "{body}");
    assert!(
        body.contains("open-model") || body.contains("arrival rate"),
        "{body}"
    );
    assert_eq!(control_as(addr, r#"{"action":"resume"}"#, GEN_TOKEN).0, 200);
    std::thread::sleep(Duration::from_millis(1000));
    assert!(srv.stats().requests > held, "no request after resume");
    // The run's events say what happened to it.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(Instant::now() < deadline, "the run never ended");
        if let Ok((200, body)) = generator_http(addr, "GET", "/status") {
            if String::from_utf8_lossy(&body).contains("done") {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let events = std::fs::read_to_string(results.join("events.jsonl")).unwrap();
    let kinds: Vec<&str> = events
        .lines()
        .filter(|l| l.contains(r#""kind":"control""#))
        .collect();
    assert_eq!(kinds.len(), 2, "{events}");
    assert!(
        kinds[0].contains("paused") && kinds[1].contains("resumed"),
        "{events}"
    );
    assert_eq!(generator_http(addr, "POST", "/done").unwrap().0, 200);
    let exit = wait_within(&mut child, Duration::from_secs(10)).expect("generator still running");
    assert_eq!(exit.code(), Some(0));
}

#[test]
fn k8s_generator_without_its_token_does_not_start() {
    let t = tmp("k8s-generator-no-token");
    let port = free_port();
    let out = pado_cmd(["k8s", "generator", "--listen", &format!("127.0.0.1:{port}")])
        .arg("--results")
        .arg(t.join("run"))
        .args([
            "--",
            "run",
            "--url",
            "http://127.0.0.1:9/",
            "--duration",
            "1s",
        ])
        .env_remove("PADO_GENERATOR_TOKEN")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("PADO_GENERATOR_TOKEN"), "{err}");
    assert!(!t.join("run").exists(), "its run started");
}

/// The YAML documents `pado k8s render` printed, in order.
fn rendered_documents(stdout: &str) -> Vec<Value> {
    stdout
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_yaml_ng::from_str(d).unwrap())
        .collect()
}

/// `pado k8s render ARGS`.
fn k8s_render(args: &[&str]) -> std::process::Output {
    k8s_render_env(args, &[])
}

/// `pado k8s render ARGS` with the environment variables `env`.
fn k8s_render_env(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut all = vec!["k8s", "render"];
    all.extend_from_slice(args);
    pado_env(&all, env)
}

#[test]
fn k8s_render_prints_the_config_map_and_indexed_job() {
    let t = tmp("k8s-render");
    std::fs::create_dir(t.join("data")).unwrap();
    write_file(&t.join("data"), "사용자.csv", "id\n1\n2\n");
    let file = write_fixture(
        &t,
        "kubernetes_k8s_render_prints_the_config_map_and_indexed_job.yaml",
        "checkout.yaml",
        &[],
    );
    // The scenario is compiled here as every pod will compile it, so the variable
    // its header reads is set here too; its value stays here.
    let out = k8s_render_env(
        &[
            file.to_str().unwrap(),
            "--generators",
            "4",
            "--namespace",
            "perf",
            "--start-at",
            "2099-01-02T03:04:05Z",
            "--name",
            "결제",
            "--results-size-limit",
            "2Gi",
            "--env-from-secret",
            "checkout-env",
            "--",
            "--quiet",
            "--header",
            "Authorization: Bearer {{ env.API_TOKEN }}",
        ],
        &[("API_TOKEN", "local-value-never-sent")],
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("local-value-never-sent"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs = rendered_documents(&stdout);
    assert_eq!(docs.len(), 3, "{stdout}");
    let (cm, secret, job) = (&docs[0], &docs[1], &docs[2]);
    assert_eq!(cm["kind"], "ConfigMap");
    assert_eq!(cm["data"]["file-1"], "id\n1\n2\n");
    // The generators' token: fresh, in its Secret (the file says it holds one), and
    // read by the pods from it, never written into the Job.
    assert_eq!(secret["kind"], "Secret");
    assert!(
        stdout.contains("# This Secret holds the generators' token"),
        "{stdout}"
    );
    let token = secret["stringData"]["token"].as_str().unwrap();
    assert!(token.len() >= 32, "{token}");
    assert!(!serde_json::to_string(job).unwrap().contains(token));
    let again = k8s_render(&[
        file.to_str().unwrap(),
        "-n",
        "4",
        "--start-at",
        "2099-01-02T03:04:05Z",
    ]);
    assert!(
        !String::from_utf8_lossy(&again.stdout).contains(token),
        "a token is never reused"
    );
    let c = &job["spec"]["template"]["spec"]["containers"][0];
    let env = c["env"].as_array().unwrap();
    let from = env
        .iter()
        .find(|e| e["name"] == "PADO_GENERATOR_TOKEN")
        .unwrap();
    assert_eq!(
        from["valueFrom"]["secretKeyRef"]["name"],
        secret["metadata"]["name"]
    );
    let results = job["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "results")
        .unwrap()
        .clone();
    assert_eq!(results["emptyDir"]["sizeLimit"], "2Gi");
    assert_eq!(job["kind"], "Job");
    assert_eq!(job["metadata"]["namespace"], "perf");
    assert_eq!(job["metadata"]["annotations"]["pado.dev/test-name"], "결제");
    assert_eq!(job["spec"]["completions"], 4);
    let args: Vec<String> = job["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let joined = args.join(" ");
    assert!(
        joined.contains(
            "-- run /scenario/checkout.yaml --segment $(JOB_COMPLETION_INDEX)/4 --start-at 2099-01-02T03:04:05Z --out /results/run --quiet --header Authorization: Bearer {{ env.API_TOKEN }}"
        ),
        "{joined}"
    );
    let items = &job["spec"]["template"]["spec"]["volumes"][0]["configMap"]["items"];
    assert_eq!(items[1]["path"], "data/사용자.csv");
    // A `--duration` after `--` is the test's length for the Job's deadline too: 10
    // minutes instead of the file's 90 s moves it by 510 s (give or take the
    // seconds between the two renders).
    let longer = k8s_render(&[
        file.to_str().unwrap(),
        "-n",
        "4",
        "--start-at",
        "2099-01-02T03:04:05Z",
        "--",
        "--duration",
        "10m",
    ]);
    assert_eq!(longer.status.code(), Some(0), "{longer:?}");
    let longer = rendered_documents(&String::from_utf8_lossy(&longer.stdout));
    let deadline = |j: &Value| j["spec"]["activeDeadlineSeconds"].as_i64().unwrap();
    let moved = deadline(&longer[2]) - deadline(job);
    assert!((500..=510).contains(&moved), "moved by {moved} s");
    // The page about it ships in the binary.
    let docs = pado(&["docs", "kubernetes"]);
    assert_eq!(
        String::from_utf8_lossy(&docs.stdout),
        include_str!("../../docs/kubernetes.md")
    );
}

#[test]
fn k8s_render_refuses_what_the_pods_could_not_run() {
    let t = tmp("k8s-render-bad");
    let file = write_fixture(
        &t,
        "kubernetes_k8s_render_refuses_what_the_pods_could_not_run.yaml",
        "s.yaml",
        &[],
    );
    let f = file.to_str().unwrap();
    let out = k8s_render(&[f, "--generators", "2"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("global setup") && err.contains("--setup-vars"),
        "{err}"
    );
    let vars = write_file(&t, "vars.json", "{}");
    let out = k8s_render(&[
        f,
        "--generators",
        "0",
        "--setup-vars",
        vars.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--generators"), "{err}");
    let out = k8s_render(&[f, "-n", "2", "--start-at", "2001-01-01T00:00:00Z"]);
    assert_eq!(out.status.code(), Some(2));
    // The `pado run` flags after `--` are read now, not by every pod minutes later: a
    // misspelt flag, a bad value, or one the Job sets itself is refused by name.
    let plain = write_fixture(
        &t,
        "kubernetes_k8s_render_refuses_what_the_pods_could_not_run_plain.yaml",
        "plain.yaml",
        &[],
    );
    let plain = plain.to_str().unwrap();
    for (args, named) in [
        (&["--quite"][..], "--quite"),
        (&["--vus", "many"][..], "many"),
        (&["--out", "x"][..], "--out"),
        (&["--segment", "0/2"][..], "--segment"),
        (&["--once"][..], "--once"),
    ] {
        let mut argv = vec!["k8s", "render", plain, "-n", "2", "--"];
        argv.extend(args);
        let out = pado(&argv);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("after `--`") && err.contains(named),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // Credentials in the flags after `--` would be written into the Job in plain
    // text: refused, naming the flag (never its value) and the replacement.
    for (args, said) in [
        (
            &["--header", "Authorization: Bearer s3cr3t-value"][..],
            "--env-from-secret NAME -- --header 'Authorization: Bearer {{ env.AUTHORIZATION }}'",
        ),
        (
            &["--header", "X-Api-Key: s3cr3t-value"][..],
            "--header 'X-Api-Key: {{ env.X_API_KEY }}'",
        ),
        (
            &["--header", "Cookie: sid=s3cr3t-value"][..],
            "--header 'Cookie: {{ env.COOKIE }}'",
        ),
        (
            &["--proxy", "http://me:s3cr3t-value@proxy.corp:3128"][..],
            "`--proxy http://***@proxy.corp:3128`",
        ),
        (
            &[
                "--output",
                "influxdb=http://127.0.0.1:8086/write?db=pado&u=me&p=s3cr3t-value",
            ][..],
            "-- --output influxdb=env:PADO_OUTPUT_URL",
        ),
        (
            &[
                "--output",
                "prometheus=http://me:s3cr3t-value@127.0.0.1:9090/api/v1/write",
            ][..],
            "-- --output prometheus=env:PADO_OUTPUT_URL",
        ),
    ] {
        let mut argv = vec!["k8s", "render", plain, "-n", "2", "--"];
        argv.extend(args);
        let out = pado(&argv);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
        assert!(err.contains("Secret") && err.contains("kubectl"), "{err}");
        assert!(!err.contains("s3cr3t"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // The value read from the pods' environment instead passes.
    let out = k8s_render_env(
        &[
            plain,
            "-n",
            "2",
            "--env-from-secret",
            "env",
            "--",
            "--header",
            "X-Api-Key: {{ env.X_API_KEY }}",
            "--output",
            "prometheus=env:PADO_OUTPUT_URL",
        ],
        &[("X_API_KEY", "local-key")],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let rendered = String::from_utf8_lossy(&out.stdout);
    assert!(
        rendered.contains("X-Api-Key: {{ env.X_API_KEY }}") && !rendered.contains("local-key"),
        "{rendered}"
    );
    // A results volume size Kubernetes would not read.
    let out = k8s_render(&[plain, "-n", "2", "--results-size-limit", "1GB"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--results-size-limit `1GB`"), "{err}");
}

/// Two real segments of `file` run against the test server, as each pod would have
/// run its own: the tar of its result directory and its timeline's lines (its live
/// feed).
fn real_segments(t: &Path, file: &Path) -> Vec<(Vec<u8>, Vec<String>)> {
    (0..2u32)
        .map(|i| {
            let dir = t.join(format!("generator-{i}"));
            let o = pado(&[
                "run",
                file.to_str().unwrap(),
                "--segment",
                &format!("{i}/2"),
                "--quiet",
                "--out",
                dir.to_str().unwrap(),
            ]);
            assert_eq!(o.status.code(), Some(0), "{o:?}");
            let timeline = std::fs::read_to_string(dir.join("timeline.jsonl")).unwrap();
            (
                pado_fleet::archive::pack_dir(&dir).unwrap(),
                timeline.lines().map(|l| format!("{l}\n")).collect(),
            )
        })
        .collect()
}

/// `pado k8s run FILE -n 2 --start-at +1s` against `mock` (a kubeconfig naming it,
/// written into `t`), its result in `out_dir`, then `extra`.
fn k8s_run_on_mock(
    t: &Path,
    mock: &k8s_mock::Mock,
    file: &Path,
    out_dir: &Path,
    extra: &[&str],
) -> std::process::Output {
    let kubeconfig = write_fixture(
        t,
        "kubernetes_mock_kubeconfig.yaml",
        "kubeconfig",
        &[
            ("server", mock.addr.to_string()),
            ("namespace", k8s_mock::NS.to_string()),
        ],
    );
    pado_cmd(["k8s", "run"])
        .arg(file)
        .args(["-n", "2", "--start-at", "+1s", "--kubeconfig"])
        .arg(&kubeconfig)
        .arg("--out")
        .arg(out_dir)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn k8s_run_creates_collects_merges_and_cleans_up() {
    let _machine = shared_machine();
    let t = tmp("k8s-run");
    // The generators' results: two real segments of a test against the test server,
    // which the mock serves as the pods would.
    let srv = TestServer::start();
    let seg_file = write_fixture(
        &t,
        "kubernetes_k8s_run_creates_collects_merges_and_cleans_up.yaml",
        "seg.yaml",
        &[("target", srv.base_url())],
    );
    let pods = real_segments(&t, &seg_file)
        .into_iter()
        .enumerate()
        .map(|(i, (tar, live))| {
            let i = i as u32;
            k8s_mock::PodScript {
                tar,
                live,
                ..k8s_mock::running(i, Some(0))
            }
        })
        .collect();
    assert_eq!(srv.stats().requests, 6);
    let mock = k8s_mock::Mock::start(pods, None);
    write_file(&t, "users.csv", "id\n1\n");
    let file = write_fixture(
        &t,
        "kubernetes_k8s_run_creates_collects_merges_and_cleans_up_checkout.yaml",
        "checkout.yaml",
        &[],
    );
    let out_dir = t.join("out");
    let out = k8s_run_on_mock(
        &t,
        &mock,
        &file,
        &out_dir,
        &[
            "--",
            "--quiet",
            "--export",
            "junit",
            "--window",
            "처음=0s..1s",
            "--no-html",
        ],
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // What was created, in the context's namespace.
    let calls = mock.calls();
    let job: Value = serde_json::from_slice(&calls[0].body).unwrap();
    assert_eq!(calls[0].path, "/apis/batch/v1/namespaces/loadtest/jobs");
    assert_eq!(job["spec"]["completions"], 2);
    let args: Vec<&str> = job["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        args.join(" ")
            .contains("--segment $(JOB_COMPLETION_INDEX)/2"),
        "{args:?}"
    );
    assert!(
        args.join(" ")
            .ends_with("--quiet --export junit --window 처음=0s..1s --no-html"),
        "{args:?}"
    );
    // The token: generated for the run, in its Secret, never in the Job; the pods
    // (the mock's, as real ones) answered only requests carrying it.
    let secret: Value = serde_json::from_slice(&calls[1].body).unwrap();
    assert_eq!(calls[1].path, "/api/v1/namespaces/loadtest/secrets");
    let token = secret["stringData"]["token"].as_str().unwrap().to_string();
    assert!(token.len() >= 32, "{token}");
    assert!(!String::from_utf8_lossy(&calls[0].body).contains(&token));
    assert!(!stdout.contains(&token) && !stderr.contains(&token));
    assert_eq!(mock.state.lock().unwrap().refused, 0);
    let cm: Value = serde_json::from_slice(&calls[2].body).unwrap();
    assert_eq!(cm["data"]["file-1"], "id\n1\n");
    // Collected, and the merge command printed for them.
    let seg = |i: u32| out_dir.join(format!("segment-{i}"));
    for i in 0..2 {
        let run: Value =
            serde_json::from_slice(&std::fs::read(seg(i).join("run.json")).unwrap()).unwrap();
        assert_eq!(run["segment"]["index"], i);
        // The live view read each pod's feed; a pod's log is said only when it fails.
        let live = format!(
            "/api/v1/namespaces/loadtest/pods/{}-{i}-x{i}:7070/proxy/live",
            job["metadata"]["name"].as_str().unwrap()
        );
        assert!(!mock.called("GET", &live).is_empty(), "{live}");
        assert!(
            !stderr.contains(&format!("segment {i} 결과 ok")),
            "{stderr}"
        );
    }
    // Collected and merged like `pado merge`: the summary of the whole test, its
    // requests those the server counted from both generators.
    let merged: Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("merged/summary.json")).unwrap())
            .unwrap();
    assert_eq!(merged["requests"], 6, "{merged}");
    // The flags after `--` shape the merged result as they shape a single run's.
    assert!(!out_dir.join("merged/report.html").exists());
    assert!(out_dir.join("merged/junit.xml").is_file());
    assert!(
        merged["stages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["label"] == "처음"),
        "{}",
        merged["stages"]
    );
    // Every object of the run deleted.
    assert_run_objects_deleted(&mock, job["metadata"]["name"].as_str().unwrap());
}

/// The run `id`'s Job, ConfigMap and Secret were deleted from `mock`, in that order.
fn assert_run_objects_deleted(mock: &k8s_mock::Mock, id: &str) {
    let deleted: Vec<String> = mock
        .calls()
        .into_iter()
        .filter(|c| c.method == "DELETE")
        .map(|c| c.path)
        .collect();
    assert_eq!(
        deleted,
        [
            format!("/apis/batch/v1/namespaces/loadtest/jobs/{id}"),
            format!("/api/v1/namespaces/loadtest/configmaps/{id}"),
            format!("/api/v1/namespaces/loadtest/secrets/{id}")
        ]
    );
}

#[test]
fn k8s_run_stops_every_pod_when_an_abort_threshold_fails_on_the_merged_seconds() {
    let _machine = shared_machine();
    let t = tmp("k8s-abort");
    // Each generator's real segment: every request fails (500); a segment judges
    // the same threshold, never aborts on it, and its exit code ignores it.
    let srv = TestServer::start();
    let seg_file = write_fixture(&t, "kubernetes_k8s_run_stops_every_pod_when_an_abort_threshold_fails_on_the_merged_seconds.yaml", "seg.yaml", &[("target", srv.base_url())]);
    let pods = real_segments(&t, &seg_file)
        .into_iter()
        .enumerate()
        .map(|(i, (tar, live))| {
            let i = i as u32;
            k8s_mock::PodScript {
                tar,
                live,
                // Running until told to stop.
                on_stop: Some(0),
                ..k8s_mock::running(i, None)
            }
        })
        .collect();
    let mock = k8s_mock::Mock::start(pods, None);
    // The planned test is ten minutes: only the abort ends it early.
    let file = write_fixture(&t, "kubernetes_k8s_run_stops_every_pod_when_an_abort_threshold_fails_on_the_merged_seconds_checkout.yaml", "checkout.yaml", &[]);
    let out_dir = t.join("out");
    let started = Instant::now();
    let out = k8s_run_on_mock(&t, &mock, &file, &out_dir, &["--quiet"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(started.elapsed() < Duration::from_secs(120), "bounded");
    // The merged thresholds fail: exit 99, like `pado run`.
    assert_eq!(out.status.code(), Some(99), "{stderr}");
    assert!(
        stderr.contains(
            "threshold `http_req_failed: rate < 0.1` failed at 1s (abort_on_fail): stopping every generator"
        ),
        "{stderr}"
    );
    let id = serde_json::from_slice::<Value>(&mock.calls()[0].body).unwrap()["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    for i in 0..2 {
        let stop = format!("/api/v1/namespaces/loadtest/pods/{id}-{i}-x{i}:7070/proxy/stop");
        assert_eq!(mock.called("POST", &stop).len(), 1, "{stop}");
    }
    // What both wrote was collected and merged: 2 VUs (one per generator) × 2 iterations.
    let merged: Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("merged/summary.json")).unwrap())
            .unwrap();
    assert_eq!(merged["requests"], 4, "{merged}");
    assert_eq!(merged["failed"], 4, "{merged}");
    assert_eq!(merged["generators"].as_array().map(Vec::len), Some(2));
}

/// A `{{ env.X }}` the user keeps only in the pods' Secret: `pado k8s render` with
/// `--env-from-secret` accepts it unset here, says it is expected from the Secret
/// and puts the template, never a value, in the Job's arguments; without a Secret
/// (nothing would give the pods a value) and for `pado run` (the run is here) the
/// unset variable stays an error naming it.
#[test]
fn k8s_render_leaves_a_variable_unset_here_to_the_pods_secret() {
    const VAR: &str = "PADO_E2E_K8S_ONLY_IN_SECRET";
    let t = tmp("k8s-render-deferred-env");
    let file = write_fixture(
        &t,
        "kubernetes_k8s_render_leaves_a_variable_unset_here_to_the_pods_secret.yaml",
        "checkout.yaml",
        &[],
    );
    let header = format!("Authorization: Bearer {{{{ env.{VAR} }}}}");
    let run_without = |args: &[&str]| {
        let _machine = shared_machine();
        pado_cmd(args)
            .env_remove(VAR)
            .output()
            .expect("running pado")
    };
    let f = file.to_str().unwrap();
    let render = |secret: Option<&str>| {
        let mut args = vec!["k8s", "render", f, "-n", "2"];
        if let Some(s) = secret {
            args.extend(["--env-from-secret", s]);
        }
        args.extend(["--", "--header", header.as_str()]);
        run_without(&args)
    };
    let out = render(Some("checkout-env"));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("`{VAR}` not set here"))
            && stderr.contains("Secret `checkout-env`"),
        "{stderr}"
    );
    let job: Value = stdout
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_yaml_ng::from_str::<Value>(d).unwrap())
        .find(|d| d["kind"] == "Job")
        .expect("a Job");
    let args: Vec<&str> = job["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(args.contains(&header.as_str()), "{args:?}");
    // Without a Secret the pods would have no value either: refused, named.
    let out = render(None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("environment variable `{VAR}` is not set")),
        "{stderr}"
    );
    // `pado run` runs here: the unset variable is an error before any request.
    let out = run_without(&[
        "run",
        f,
        "--duration",
        "1s",
        "--header",
        header.as_str(),
        "--out",
        t.join("run").to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("environment variable `{VAR}` is not set")),
        "{stderr}"
    );
}

/// `POST /api/control` with `cmd` and the bearer `token` to the dashboard at
/// `page`: the status and body.
fn dashboard_control(page: &str, token: &str, cmd: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(page).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "POST /api/control HTTP/1.1\r\nHost: {page}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{cmd}",
        cmd.len()
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.get(9..12).and_then(|v| v.parse().ok()).unwrap_or(0);
    (
        status,
        text.split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_string(),
    )
}

#[test]
fn k8s_run_steered_from_its_dashboard_reaches_every_pod_and_a_stop_ends_the_test() {
    use std::io::BufRead;
    let _machine = shared_machine();
    let t = tmp("k8s-dashboard");
    let srv = TestServer::start();
    let seg = write_fixture(
        &t,
        "kubernetes_steered_segment.yaml",
        "seg.yaml",
        &[("target", srv.base_url())],
    );
    let pods = real_segments(&t, &seg)
        .into_iter()
        .enumerate()
        .map(|(i, (tar, live))| k8s_mock::PodScript {
            tar,
            live,
            // Running until told to stop.
            on_stop: Some(0),
            ..k8s_mock::running(i as u32, None)
        })
        .collect();
    let mock = k8s_mock::Mock::start(pods, None);
    // The planned test is ten minutes: only the stop from the page ends it early.
    let file = write_fixture(&t, "kubernetes_steered_checkout.yaml", "checkout.yaml", &[]);
    let kubeconfig = write_fixture(
        &t,
        "kubernetes_mock_kubeconfig.yaml",
        "kubeconfig",
        &[
            ("server", mock.addr.to_string()),
            ("namespace", k8s_mock::NS.to_string()),
        ],
    );
    let out_dir = t.join("out");
    let started = Instant::now();
    let mut child = pado_cmd(["k8s", "run"])
        .arg(&file)
        .args([
            "-n",
            "2",
            "--start-at",
            "+1s",
            "--quiet",
            "--dashboard",
            "--kubeconfig",
        ])
        .arg(&kubeconfig)
        .arg("--out")
        .arg(&out_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let err = child.stderr.take().unwrap();
    let said = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("dashboard: http://") {
                let _ = tx.send(url.to_string());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let url: String = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the dashboard's address on stderr");
    let (page, token) = url.split_once("/#token=").expect("a token");
    // Once the pods exist, a pause reaches both through the pod proxy.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (st, body) = dashboard_control(page, token, r#"{"action":"pause"}"#);
        if st == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "never taken: {st} {body}");
        assert!(
            body.contains("does not exist yet") || body.contains("pods are not running"),
            "{st} {body}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (st, body) = dashboard_control(page, token, r#"{"action":"stop"}"#);
    assert_eq!(st, 200, "{body}");
    let exit = wait_within(&mut child, Duration::from_secs(60)).expect("the run ended");
    let stderr = said.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(90), "bounded");
    assert_eq!(exit.code(), Some(0), "{stderr}");
    // Each pod got the pause, then the stop, and was then stopped the coordinator's
    // way too (`/stop`, once).
    let st = mock.state.lock().unwrap();
    for p in &st.pods {
        // (A pause sent while only one pod was listed is sent again to both.)
        let (last, before) = p.controls.split_last().expect("controls");
        assert_eq!(last, r#"{"action":"stop"}"#, "pod {}", p.index);
        assert!(
            !before.is_empty() && before.iter().all(|c| c == r#"{"action":"pause"}"#),
            "pod {}: {:?}",
            p.index,
            p.controls
        );
    }
    drop(st);
    let id = serde_json::from_slice::<Value>(&mock.calls()[0].body).unwrap()["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    for i in 0..2 {
        let stop = format!("/api/v1/namespaces/loadtest/pods/{id}-{i}-x{i}:7070/proxy/stop");
        assert_eq!(mock.called("POST", &stop).len(), 1, "{stop}");
    }
    // The merged result holds each change once, in the test's words.
    let events = std::fs::read_to_string(out_dir.join("merged/events.jsonl")).unwrap();
    let control: Vec<&str> = events
        .lines()
        .filter(|l| l.contains(r#""kind":"control""#))
        .collect();
    assert_eq!(control.len(), 2, "{events}");
    assert!(
        control[0].contains("paused") && control[1].contains("stopped"),
        "{events}"
    );
    assert_run_objects_deleted(&mock, &id);
}
