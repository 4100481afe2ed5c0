//! One test on several `pado agent`s, coordinated by `pado run FILE --generators`:
//! the test server's own count is the truth the merged result must equal; an
//! `abort_on_fail` threshold judged on the merged seconds stops every agent; with
//! `--dashboard`, a change made on the page reaches every agent, and the page shows
//! the target's metrics scraped by generator 0 with a live bottleneck hint that
//! names the demo target's full DB pool, and not where the pool has room.

use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use pado_testkit::TestServer;

use crate::harness::{
    pado_cmd, read_json, say, shared_machine, tmp, wait_within_polling, write_file, write_fixture,
    Tmp,
};

/// A `pado agent` on a free loopback port, killed when dropped.
struct Agent {
    child: Child,
    addr: String,
    work: Tmp,
}

/// The token the tests' agents and coordinators share.
const TOKEN: &str = "e2e-token-0123456789abcdef";

impl Agent {
    fn start(token: &str) -> Agent {
        Agent::start_with(token, &[])
    }

    /// An agent with more flags (`--allow-commands`, `--token-file FILE`).
    fn start_with(token: &str, extra: &[&str]) -> Agent {
        Agent::start_env(token, extra, &[])
    }

    /// An agent with more flags and environment variables (its jobs' runs have them).
    fn start_env(token: &str, extra: &[&str], env: &[(&str, &str)]) -> Agent {
        Agent::spawn(token, extra, env, Stdio::null())
    }

    /// An agent serving HTTPS with a certificate it generates (`--tls`), and the
    /// fingerprint it printed at start.
    fn start_tls(token: &str, extra: &[&str]) -> (Agent, String) {
        let mut flags = vec!["--tls"];
        flags.extend_from_slice(extra);
        let mut agent = Agent::spawn(token, &flags, &[], Stdio::piped());
        let err = agent.child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        // Read on to the end, so the agent never blocks on a full pipe.
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                if let Some(fp) = line.split_whitespace().find(|w| w.starts_with("sha256:")) {
                    let _ = tx.send(fp.trim_end_matches([';', ',']).to_string());
                }
            }
        });
        let fp = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the agent printed no fingerprint");
        (agent, fp)
    }

    fn spawn(token: &str, extra: &[&str], env: &[(&str, &str)], stderr: Stdio) -> Agent {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let work = tmp("agent");
        // A relative work directory, as the default `pado-agent` is: the job's run
        // starts elsewhere, and must still find it.
        let mut cmd = pado_cmd(["agent", "--listen", &addr, "--quiet", "--work-dir", "jobs"]);
        cmd.args(extra)
            .current_dir(&*work)
            .stdout(Stdio::null())
            .stderr(stderr);
        cmd.env("PADO_AGENT_TOKEN", token);
        cmd.envs(env.iter().copied());
        let child = cmd.spawn().expect("starting pado agent");
        let t0 = Instant::now();
        while std::net::TcpStream::connect(&addr).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "agent never listened"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Agent { child, addr, work }
    }

    /// Files left in the agent's work directory (none once a job is collected).
    fn leftovers(&self) -> usize {
        std::fs::read_dir(self.work.join("jobs")).unwrap().count()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn coordinate(
    file: &Path,
    agents: &[&Agent],
    out: &Path,
    token: &str,
    extra: &[&str],
) -> (Output, Duration) {
    let _machine = shared_machine();
    let list: Vec<&str> = agents.iter().map(|a| a.addr.as_str()).collect();
    let mut cmd = pado_cmd(["run"]);
    cmd.arg(file)
        .args([
            "--generators",
            &list.join(","),
            "--start-at",
            "+2s",
            "--out",
        ])
        .arg(out)
        .args(extra);
    cmd.env("PADO_AGENT_TOKEN", token);
    let t0 = Instant::now();
    let o = cmd.output().expect("running pado");
    (o, t0.elapsed())
}

#[test]
fn two_agents_send_exactly_the_plan_and_show_one_live_line() {
    let srv = TestServer::start();
    let a = Agent::start(TOKEN);
    let b = Agent::start(TOKEN);
    let dir = tmp("agents-exact");
    write_file(&dir, "사용자.csv", "id\n하나\n둘\n셋\n");
    let f = write_fixture(
        &dir,
        "agents_two_agents_send_exactly_the_plan_and_show_one_live_line.yaml",
        "t.yaml",
        &[("target", srv.base_url())],
    );
    let out = dir.join("out");
    let (o, _) = coordinate(&f, &[&a, &b], &out, TOKEN, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", say(&o));
    // The server saw exactly the whole plan, and the merged result says the same.
    assert_eq!(srv.stats().requests, 200, "{}", say(&o));
    let merged = out.join("merged");
    assert_eq!(read_json(&merged.join("summary.json"))["requests"], 200);
    let gens = read_json(&merged.join("generators.json"));
    let per: Vec<u64> = gens["generators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["requests"].as_u64().unwrap())
        .collect();
    assert_eq!(per, vec![100, 100]);
    // Hangul data reached the agents intact.
    let stats = srv.stats();
    assert!(
        stats.by_path.keys().any(|p| p.contains("하나")),
        "{:?}",
        stats.by_path
    );
    // One progress line for the whole test: second 10 carries both generators'
    // arrivals (each sends 10 a second).
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err
        .lines()
        .find(|l| l.starts_with("[   10s/"))
        .unwrap_or_else(|| panic!("no progress line at 10 s\n{}", say(&o)));
    let rps: u64 = line
        .split("req/s")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no req/s in `{line}`"));
    assert!(
        rps > 10,
        "the live line is one generator's, not the test's: {line}"
    );
    // Collected: the agents kept nothing.
    assert_eq!((a.leftovers(), b.leftovers()), (0, 0));
}

#[test]
fn a_coordinator_without_the_token_is_refused_before_anything_runs() {
    let srv = TestServer::start();
    let a = Agent::start(TOKEN);
    let dir = tmp("agents-token");
    let f = write_fixture(
        &dir,
        "agents_a_coordinator_without_the_token_is_refused_before_anything_runs.yaml",
        "t.yaml",
        &[("target", srv.base_url())],
    );
    let (o, _) = coordinate(
        &f,
        &[&a],
        &dir.join("out"),
        "wrong-token-0123456789abcdef",
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", say(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("401"),
        "{}",
        say(&o)
    );
    assert_eq!(srv.stats().requests, 0);
}

#[test]
fn an_abort_threshold_failing_on_the_merged_seconds_stops_every_agent() {
    let srv = TestServer::start();
    let a = Agent::start(TOKEN);
    let b = Agent::start(TOKEN);
    let dir = tmp("agents-abort");
    let f = write_fixture(
        &dir,
        "agents_an_abort_threshold_failing_on_the_merged_seconds_stops_every_agent.yaml",
        "t.yaml",
        &[("target", srv.base_url())],
    );
    let out = dir.join("out");
    let (o, took) = coordinate(&f, &[&a, &b], &out, TOKEN, &[]);
    assert_eq!(o.status.code(), Some(99), "{}", say(&o));
    assert!(
        took < Duration::from_secs(45),
        "not stopped early: {took:?}\n{}",
        say(&o)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("abort_on_fail") && err.contains("stopping every generator"),
        "{}",
        say(&o)
    );
    // Both segments were stopped by the coordinator, not by themselves.
    for i in 0..2 {
        let seg = read_json(&out.join(format!("segment-{i}-of-2")).join("run.json"));
        assert_eq!(seg["interrupted"], true, "segment {i}: {seg}");
        assert!(
            !seg["warnings"].to_string().contains("abort_on_fail"),
            "segment {i} judged its share alone: {seg}"
        );
    }
    assert_eq!(
        read_json(&out.join("merged").join("run.json"))["interrupted"],
        true
    );
}

/// What a single run does with `--export`, `--window` and `--output`, a coordinated
/// one does too: the exports and the window's row in the merged result, and every
/// agent writing the live output under its own `generator` label, whose counts add
/// up to what the server received.
#[test]
fn exports_windows_and_outputs_reach_the_merged_result_and_every_agent() {
    let srv = TestServer::start();
    let a = Agent::start(TOKEN);
    let b = Agent::start(TOKEN);
    let dir = tmp("agents-flags");
    let f = write_fixture(
        &dir,
        "agents_exports_windows_and_outputs_reach_the_merged_result_and_every_agent.yaml",
        "t.yaml",
        &[("target", srv.base_url())],
    );
    let out = dir.join("out");
    let influx = format!("influxdb={}", srv.url("/write?db=pado"));
    let (o, _) = coordinate(
        &f,
        &[&a, &b],
        &out,
        TOKEN,
        &[
            "--export",
            "junit",
            "--export",
            "csv",
            "--window",
            "처음=0s..2s",
            "--output",
            &influx,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", say(&o));
    let load = srv.stats().by_path.get("/load").copied().unwrap_or(0);
    assert_eq!(load, 40, "{}", say(&o));
    let merged = out.join("merged");
    assert!(merged.join("junit.xml").is_file(), "{}", say(&o));
    assert!(merged.join("timeline.csv").is_file(), "{}", say(&o));
    let summary = read_json(&merged.join("summary.json"));
    assert!(
        summary["stages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["label"] == "처음"),
        "no window row: {}",
        summary["stages"]
    );
    // Each agent wrote its own series; their counts add up to the server's.
    let mut counted = [0u64; 2];
    for w in srv.records().into_iter().filter(|r| r.path == "/write") {
        for l in String::from_utf8_lossy(&w.body)
            .lines()
            .filter(|l| l.starts_with("pado_http_reqs,"))
        {
            let g = (0..2)
                .find(|i| l.contains(&format!("generator={i}/2")))
                .unwrap_or_else(|| panic!("no generator label: {l}"));
            let fields = l.rsplit(' ').nth(1).unwrap();
            let c = fields
                .split(',')
                .find_map(|kv| kv.strip_prefix("count="))
                .unwrap();
            counted[g] += c.trim_end_matches('i').parse::<u64>().unwrap();
        }
    }
    assert_eq!(counted, [20, 20], "{}", say(&o));
}

/// An output URL with a password is refused before any job is sent (the job and
/// the agent's `pado run` arguments would carry it in plain text); given as
/// `KIND=env:VAR`, the URL is read from each agent's own environment: the writes
/// carry its credentials, and nothing the coordinator keeps does.
#[test]
fn an_output_url_s_credentials_never_travel_in_a_job() {
    let srv = TestServer::start();
    let dir = tmp("agents-output-secret");
    let f = write_fixture(
        &dir,
        "agents_an_output_url_s_credentials_never_travel_in_a_job.yaml",
        "t.yaml",
        &[("target", srv.base_url())],
    );
    let url = srv.url("/write?db=pado&u=me&p=s3cr3t-pass");
    let a = Agent::start(TOKEN);
    let (o, _) = coordinate(
        &f,
        &[&a],
        &dir.join("refused"),
        TOKEN,
        &["--output", &format!("influxdb={url}")],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", say(&o));
    assert!(
        err.contains("--output influxdb=env:PADO_OUTPUT_URL"),
        "{err}"
    );
    assert!(!err.contains("s3cr3t"), "{err}");
    assert_eq!(srv.stats().requests, 0, "nothing ran");
    assert_eq!(a.leftovers(), 0, "no job reached the agent");
    drop(a);
    let b = Agent::start_env(TOKEN, &[], &[("PADO_OUTPUT_URL", &url)]);
    let out = dir.join("out");
    let (o, _) = coordinate(
        &f,
        &[&b],
        &out,
        TOKEN,
        &["--output", "influxdb=env:PADO_OUTPUT_URL"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", say(&o));
    let writes: Vec<_> = srv
        .records()
        .into_iter()
        .filter(|r| r.path == "/write")
        .collect();
    assert!(!writes.is_empty(), "{}", say(&o));
    assert!(
        writes.iter().all(|w| w
            .query
            .contains(&("p".to_string(), "s3cr3t-pass".to_string()))),
        "the agent's run wrote with the URL from its environment"
    );
    // Nothing the coordinator wrote holds the password.
    let mut stack = vec![out.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
                assert!(!text.contains("s3cr3t"), "{}", p.display());
            }
        }
    }
    assert!(!say(&o).contains("s3cr3t"));
}

/// A scenario of one second's load whose first event runs a command that would
/// leave `planted` behind (`how`: a `shell:` line, or a `run:` in an `undo:`).
fn commanding_scenario(dir: &Path, target: &str, planted: &Path, how: &str) -> std::path::PathBuf {
    let p = planted.display();
    let event = match how {
        "shell" => format!("  - name: 심기\n    at: 0s\n    shell: \"touch '{p}'\"\n"),
        _ => format!(
            "  - name: 심기\n    at: 0s\n    mark: 창\n    duration: 1s\n    undo: {{ run: [touch, \"{p}\"] }}\n"
        ),
    };
    write_fixture(
        dir,
        "agents_commanding.yaml",
        &format!("{how}.yaml"),
        &[("target", target.to_string()), ("event", event.to_string())],
    )
}

/// An agent runs a job's `events:` commands only when started with
/// `--allow-commands`: otherwise the coordinator is told why before anything runs,
/// and the planted command leaves no file.
#[test]
fn a_job_s_commands_run_only_on_an_agent_started_to_allow_them() {
    let srv = TestServer::start();
    let dir = tmp("agents-commands");
    let refusing = Agent::start(TOKEN);
    for how in ["shell", "undo-run"] {
        let planted = dir.join(format!("planted-by-{how}"));
        let f = commanding_scenario(&dir, &srv.base_url(), &planted, how);
        let (o, _) = coordinate(
            &f,
            &[&refusing],
            &dir.join(format!("out-{how}")),
            TOKEN,
            &[],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{how}: {}", say(&o));
        assert!(
            err.contains("403") && err.contains("--allow-commands") && err.contains("심기"),
            "{how}: {}",
            say(&o)
        );
        assert_eq!(refusing.leftovers(), 0, "{how}: nothing stays");
    }
    // Past the start the coordinator would have agreed (`+2s`): still nothing.
    std::thread::sleep(Duration::from_secs(3));
    for how in ["shell", "undo-run"] {
        assert!(
            !dir.join(format!("planted-by-{how}")).exists(),
            "{how}: the command ran"
        );
    }
    assert_eq!(srv.stats().requests, 0, "no load was sent either");

    // Allowed (the token from a file this time): the same job runs its command.
    let token_file = write_file(&dir, "token", &format!("{TOKEN}\n"));
    let token_arg = token_file.display().to_string();
    let allowing = Agent::start_with(
        "not-this-one-0123456789",
        &["--allow-commands", "--token-file", &token_arg],
    );
    let planted = dir.join("planted-allowed");
    let f = commanding_scenario(&dir, &srv.base_url(), &planted, "shell");
    let (o, _) = coordinate(&f, &[&allowing], &dir.join("out-allowed"), TOKEN, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", say(&o));
    assert!(planted.exists(), "{}", say(&o));
}

/// The run an agent starts gets `--refuse-commands`: the run itself refuses a
/// scenario with a command, whatever reached it.
#[test]
fn a_run_told_to_refuse_commands_runs_none() {
    let srv = TestServer::start();
    let dir = tmp("refuse-commands");
    let planted = dir.join("planted");
    let f = commanding_scenario(&dir, &srv.base_url(), &planted, "undo-run");
    let o = crate::harness::pado(&[
        "run",
        &f.display().to_string(),
        "--refuse-commands",
        "--out",
        &dir.join("out").display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", say(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("`undo.run:`"),
        "{}",
        say(&o)
    );
    assert!(!planted.exists());
    assert_eq!(srv.stats().requests, 0);
}

/// An agent never starts without a token (nor with one short enough to guess),
/// and says how to make one.
#[test]
fn an_agent_without_a_token_refuses_to_start() {
    let work = tmp("agent-no-token");
    for token in [None, Some("s3cret")] {
        let port = crate::harness::free_port();
        let mut cmd = pado_cmd(["agent", "--listen", &format!("127.0.0.1:{port}")]);
        cmd.current_dir(&*work);
        match token {
            Some(t) => cmd.env("PADO_AGENT_TOKEN", t),
            None => cmd.env_remove("PADO_AGENT_TOKEN"),
        };
        let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
        let status = wait_within_polling(
            &mut child,
            Duration::from_secs(10),
            Duration::from_millis(20),
        )
        .unwrap_or_else(|| panic!("{token:?}: the agent started"));
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(2), "{token:?}: {err}");
        assert!(
            err.contains("PADO_AGENT_TOKEN") || err.contains("16"),
            "{err}"
        );
        assert!(!err.contains("s3cret"), "the token is never printed: {err}");
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    }
}

/// A stranger's request to a real agent (no token, a huge body announced and never
/// sent) is answered 401 at once; a browser's, 403.
#[test]
fn a_stranger_is_answered_before_its_body_is_read() {
    use std::io::{Read, Write};
    let a = Agent::start(TOKEN);
    for (extra, want) in [
        (String::new(), "401"),
        (
            format!("Authorization: Bearer {TOKEN}\r\nOrigin: http://evil.example\r\n"),
            "403",
        ),
    ] {
        let mut s = std::net::TcpStream::connect(&a.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(
            s,
            "POST /job HTTP/1.1\r\nHost: {}\r\n{extra}Content-Length: 268435456\r\n\r\n",
            a.addr
        )
        .unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).expect("an answer before the body");
        let text = String::from_utf8_lossy(&out);
        assert!(text.starts_with(&format!("HTTP/1.1 {want}")), "{text}");
    }
    assert_eq!(a.leftovers(), 0);
}

/// A scenario of exactly 20 requests (10 a second for 2 s) to `srv`.
fn twenty_requests(dir: &Path, srv: &TestServer) -> std::path::PathBuf {
    write_fixture(
        dir,
        "agents_twenty_requests.yaml",
        "t.yaml",
        &[("target", srv.base_url())],
    )
}

/// `pado agent --tls` generates a certificate and prints its fingerprint; a
/// coordinator that pins it runs the test through HTTPS and gets its results. The
/// same certificate written with `--tls-cert-out` serves as a coordinator's
/// `--agent-ca`.
#[test]
fn a_tls_agent_runs_the_test_of_a_coordinator_that_pinned_its_fingerprint() {
    let srv = TestServer::start();
    let certs = tmp("agents-tls-cert");
    let cert = certs.join("agent.pem").display().to_string();
    let (a, fp) = Agent::start_tls(TOKEN, &["--tls-cert-out", &cert]);
    assert_eq!(fp.len(), "sha256:".len() + 32 * 3 - 1, "{fp}");
    let dir = tmp("agents-tls");
    let f = twenty_requests(&dir, &srv);
    let out = dir.join("out");
    let url = format!("https://{}", a.addr);
    let (o, _) = coordinate_urls(&f, &url, &out, &["--agent-fingerprint", &fp]);
    assert_eq!(o.status.code(), Some(0), "{}", say(&o));
    assert_eq!(srv.stats().requests, 20, "{}", say(&o));
    let merged = out.join("merged");
    assert_eq!(read_json(&merged.join("summary.json"))["requests"], 20);
    assert_eq!(read_json(&merged.join("run.json"))["name"], "파도-tls");
    assert_eq!(a.leftovers(), 0, "collected");

    // Its certificate as the only CA: the same agent, by its address, again.
    let (o, _) = coordinate_urls(&f, &a.addr, &dir.join("out-ca"), &["--agent-ca", &cert]);
    assert_eq!(o.status.code(), Some(0), "{}", say(&o));
    assert_eq!(srv.stats().requests, 40, "{}", say(&o));
}

/// A pin that is not the agent's certificate stops the coordinator before anything
/// is sent, naming the agent and both fingerprints; a coordinator speaking plain
/// HTTP to the TLS agent is refused and told to use https://. Nothing runs.
#[test]
fn a_wrong_pin_or_plain_http_runs_nothing_on_a_tls_agent() {
    use std::io::{Read, Write};
    let srv = TestServer::start();
    let (a, fp) = Agent::start_tls(TOKEN, &[]);
    let dir = tmp("agents-tls-refused");
    let f = twenty_requests(&dir, &srv);
    // The same fingerprint with its first byte changed.
    let first = &fp["sha256:".len().."sha256:".len() + 2];
    let wrong = fp.replacen(first, if first == "00" { "01" } else { "00" }, 1);
    let url = format!("https://{}", a.addr);
    let (o, _) = coordinate_urls(
        &f,
        &url,
        &dir.join("out-pin"),
        &["--agent-fingerprint", &wrong],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{}", say(&o));
    assert!(
        err.contains(&fp) && err.contains(&wrong) && err.contains(&a.addr),
        "{}",
        say(&o)
    );
    assert!(!err.contains(TOKEN), "{}", say(&o));

    let plain = format!("http://{}", a.addr);
    let (o, _) = coordinate_urls(&f, &plain, &dir.join("out-plain"), &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{}", say(&o));
    assert!(
        err.contains("400") && err.contains("https://"),
        "{}",
        say(&o)
    );
    // Asked to verify, the coordinator refuses an http:// agent itself (exit 2).
    let (o, _) = coordinate_urls(
        &f,
        &plain,
        &dir.join("out-never"),
        &["--agent-fingerprint", &fp],
    );
    assert_eq!(o.status.code(), Some(2), "{}", say(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("clear text"),
        "{}",
        say(&o)
    );

    // A plain request with the token is refused unread, its announced body too.
    let mut s = std::net::TcpStream::connect(&a.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "POST /job HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 268435456\r\n\r\n",
        a.addr
    )
    .unwrap();
    let mut answer = Vec::new();
    s.read_to_end(&mut answer)
        .expect("an answer before the body");
    let text = String::from_utf8_lossy(&answer);
    assert!(
        text.starts_with("HTTP/1.1 400") && text.contains("https://"),
        "{text}"
    );

    // Past the start the coordinators would have agreed (`+2s`): still nothing.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(srv.stats().requests, 0, "no load was sent");
    assert_eq!(a.leftovers(), 0, "no job reached the agent");
}

/// `pado run FILE --generators URL` with the tests' token and `extra` flags.
fn coordinate_urls(file: &Path, urls: &str, out: &Path, extra: &[&str]) -> (Output, Duration) {
    let _machine = shared_machine();
    let mut cmd = pado_cmd(["run"]);
    cmd.arg(file)
        .args(["--generators", urls, "--start-at", "+2s", "--out"])
        .arg(out)
        .args(extra)
        .env("PADO_AGENT_TOKEN", TOKEN);
    let t0 = Instant::now();
    let o = cmd.output().expect("running pado");
    (o, t0.elapsed())
}

/// Issue #29.10: a generator whose run fails makes the coordinated test fail. The
/// scenario sends a key from the environment; the second agent's machine lacks it,
/// so its run ends with an error (exit 2, the variable named) while the first one's
/// succeeds. The coordinator must not exit 0 on half a test: it exits 1 and names
/// the generator that failed, its exit code and its reason.
#[test]
fn a_generator_whose_run_fails_fails_the_test_and_is_named() {
    let srv = TestServer::start();
    let key = ("PADO_E2E_GEN_KEY", "열쇠-1");
    let a = Agent::start_env(TOKEN, &[], &[key]);
    let b = Agent::start_env(TOKEN, &[], &[]);
    let dir = tmp("agents-one-fails");
    let f = write_fixture(
        &dir,
        "agents_a_generator_whose_run_fails_fails_the_test_and_is_named.yaml",
        "t.yaml",
        &[("target", srv.base_url())],
    );
    let out = dir.join("out");
    let (o, took) = {
        let _machine = shared_machine();
        let list = format!("{},{}", a.addr, b.addr);
        let mut cmd = pado_cmd(["run"]);
        cmd.arg(&f)
            .args(["--generators", &list, "--start-at", "+2s", "--out"])
            .arg(&out)
            .env("PADO_AGENT_TOKEN", TOKEN)
            .env(key.0, key.1);
        let t0 = Instant::now();
        (cmd.output().expect("running pado"), t0.elapsed())
    };
    assert_eq!(o.status.code(), Some(1), "{}", say(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.lines()
            .any(|l| l.contains(&b.addr) && l.contains("its run failed (exit code 2)")),
        "{}",
        say(&o)
    );
    assert!(
        !err.lines()
            .any(|l| l.contains(&a.addr) && l.contains("failed")),
        "{}",
        say(&o)
    );
    assert!(
        err.contains("PADO_E2E_GEN_KEY"),
        "the generator's reason: {}",
        say(&o)
    );
    // The first generator's share did go out, with its key.
    assert!(srv.stats().requests > 0, "{}", say(&o));
    assert!(took < Duration::from_secs(60), "{took:?}");
}

/// `POST path` to `addr` with a JSON `body` and the bearer `token`: the status and
/// the body of the answer. Sent as curl or a CI script sends it, the body right
/// behind the head without waiting for an answer to it (and, `write!` on an
/// unbuffered socket, in several writes): a refusal of the head must still be
/// read to its end, never lost to a reset, so the read is not retried.
fn post_json(addr: &str, path: &str, body: &str, token: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap_or_else(|e| panic!("POST {path} to {addr}: sending: {e}"));
    let mut out = Vec::new();
    if let Err(e) = s.read_to_end(&mut out) {
        panic!(
            "POST {path} to {addr}: reading the answer: {e}; read so far: {:?}",
            String::from_utf8_lossy(&out)
        );
    }
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.get(9..12).and_then(|v| v.parse().ok()).unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

/// Requests the server received in `[from, to)`.
fn received_between(srv: &TestServer, from: Instant, to: Instant) -> usize {
    srv.records()
        .iter()
        .filter(|r| r.received_at >= from && r.received_at < to)
        .count()
}

/// Waits (at most `limit`) until the server has received a request; when it did.
fn first_request(srv: &TestServer, limit: Duration) -> Instant {
    let t0 = Instant::now();
    loop {
        if let Some(r) = srv.records().iter().map(|r| r.received_at).min() {
            return r;
        }
        assert!(t0.elapsed() < limit, "no request within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_change_posted_to_each_agent_reaches_its_run_and_is_one_event_in_the_merged_result() {
    let srv = TestServer::start();
    let a = Agent::start(TOKEN);
    let b = Agent::start(TOKEN);
    let dir = tmp("agents-steered");
    let f = write_fixture(
        &dir,
        "agents_steered.yaml",
        "t.yaml",
        &[("target", srv.base_url())],
    );
    let out = dir.join("out");
    let _machine = shared_machine();
    let log = std::fs::File::create(dir.join("coordinator.log")).unwrap();
    let mut coordinator = pado_cmd(["run"]);
    coordinator
        .arg(&f)
        .args([
            "--generators",
            &format!("{},{}", a.addr, b.addr),
            "--start-at",
            "+2s",
            "--out",
        ])
        .arg(&out)
        .env("PADO_AGENT_TOKEN", TOKEN)
        .stdout(Stdio::null())
        .stderr(log);
    let mut child = coordinator.spawn().expect("running pado");
    let start = first_request(&srv, Duration::from_secs(20));
    // Three seconds at the planned 20/s (10 from each agent), then three times that.
    std::thread::sleep((start + Duration::from_secs(4)).saturating_duration_since(Instant::now()));
    let changed = Instant::now();
    for agent in [&a, &b] {
        let (st, body) = post_json(
            &agent.addr,
            "/control",
            r#"{"action":"set_rate_factor","factor":3}"#,
            TOKEN,
        );
        assert_eq!(
            (st, body.as_str()),
            (200, r#"{"ok":true}"#),
            "{}",
            agent.addr
        );
    }
    // Without the token: refused, and the run goes on unchanged.
    let (st, body) = post_json(
        &a.addr,
        "/control",
        r#"{"action":"pause"}"#,
        "wrong-token-0123456789",
    );
    // The refusal itself, read to its end: its status and what it says to do.
    assert_eq!(st, 401, "{body}");
    assert!(body.contains("PADO_AGENT_TOKEN"), "{body}");
    assert!(!body.contains("wrong-token"), "no token echoed: {body}");
    let status = wait_within_polling(
        &mut child,
        Duration::from_secs(60),
        Duration::from_millis(100),
    )
    .expect("the coordinator ended");
    let err = std::fs::read_to_string(dir.join("coordinator.log")).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    let before = received_between(&srv, changed - Duration::from_secs(2), changed);
    let after = received_between(
        &srv,
        changed + Duration::from_secs(2),
        changed + Duration::from_secs(4),
    );
    // The server's own count: 20/s before, 60/s two seconds after the change.
    assert!(
        (30..=50).contains(&before),
        "before: {before} in 2 s\n{err}"
    );
    assert!((100..=140).contains(&after), "after: {after} in 2 s\n{err}");
    let merged = out.join("merged");
    let requests = srv.stats().requests;
    assert_eq!(
        read_json(&merged.join("summary.json"))["requests"],
        requests
    );
    // Both agents took the change; the merged timeline shows it once.
    let events = std::fs::read_to_string(merged.join("events.jsonl")).unwrap();
    let control: Vec<&str> = events
        .lines()
        .filter(|l| l.contains(r#""kind":"control""#))
        .collect();
    assert_eq!(control.len(), 1, "{events}");
    assert!(control[0].contains("×3"), "{events}");
}

/// `GET path` from the dashboard at `addr`, as JSON.
fn get_json(addr: &str, path: &str) -> serde_json::Value {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).expect("an answer");
    let text = String::from_utf8_lossy(&out).into_owned();
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or_else(|e| panic!("GET {path}: {e}: {text}"))
}

/// A coordinator of `agents` with `--dashboard`, writing into `out`, and what it
/// says on stderr (read to its end on a thread of its own).
struct Steered {
    child: Child,
    stderr: std::thread::JoinHandle<String>,
    /// The dashboard's address (`127.0.0.1:PORT`) and its control token.
    page: String,
    token: String,
}

fn coordinate_with_dashboard(
    file: &Path,
    agents: &[&Agent],
    out: &Path,
    extra: &[&str],
) -> Steered {
    use std::io::BufRead;
    let list: Vec<&str> = agents.iter().map(|a| a.addr.as_str()).collect();
    let mut child = pado_cmd(["run"])
        .arg(file)
        .args([
            "--generators",
            &list.join(","),
            "--start-at",
            "+2s",
            "--dashboard",
            "--no-history",
            "--out",
        ])
        .arg(out)
        .args(extra)
        .env("PADO_AGENT_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running pado");
    let (tx, rx) = std::sync::mpsc::channel();
    let err = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
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
        .recv_timeout(Duration::from_secs(15))
        .expect("the dashboard's address on stderr");
    let (page, token) = url.split_once("/#token=").expect("a token in the address");
    assert!(
        page.starts_with("127.0.0.1:"),
        "loopback by default: {page}"
    );
    Steered {
        child,
        stderr,
        page: page.to_string(),
        token: token.to_string(),
    }
}

/// `testing/browser/distributed.mjs` on the page at `page` (with `token`), expecting
/// `agents` listed; `None` when the browser tools are not installed (said).
fn open_in_browser(page: &str, token: &str, agents: &[&Agent], dir: &Path) -> Option<Child> {
    let node = crate::dashboard_browser::browser_tools()?;
    let list: Vec<&str> = agents.iter().map(|a| a.addr.as_str()).collect();
    let child = std::process::Command::new(node)
        .arg("distributed.mjs")
        .current_dir(crate::dashboard_browser::browser_dir())
        .env(
            "PADO_DASHBOARD_URL",
            format!("http://{page}/#token={token}"),
        )
        .env("AGENTS", list.join(","))
        .stdout(std::fs::File::create(dir.join("browser.out")).unwrap())
        .stderr(std::fs::File::create(dir.join("browser.err")).unwrap())
        .spawn()
        .expect("starting node");
    Some(child)
}

/// The browser script ended well, having seen `n` generators.
fn browser_saw(node: &mut Child, n: usize, dir: &Path) {
    let done = wait_within_polling(node, Duration::from_secs(30), Duration::from_millis(100));
    let said = std::fs::read_to_string(dir.join("browser.err")).unwrap_or_default();
    let out = std::fs::read_to_string(dir.join("browser.out")).unwrap_or_default();
    assert_eq!(
        done.and_then(|s| s.code()),
        Some(0),
        "the page:\n{said}{out}"
    );
    assert!(out.contains(&format!("{n} generators listed")), "{out}");
}

/// The merged result holds exactly one `control` event, containing `what`, and
/// its report shows it.
fn one_change_in(merged: &Path, what: &str) {
    let events = std::fs::read_to_string(merged.join("events.jsonl")).unwrap();
    let control: Vec<&str> = events
        .lines()
        .filter(|l| l.contains(r#""kind":"control""#))
        .collect();
    assert_eq!(control.len(), 1, "{events}");
    assert!(control[0].contains(what), "{events}");
    let report = std::fs::read_to_string(merged.join("report.html")).unwrap();
    assert!(report.contains(what), "the report does not show `{what}`");
}

#[test]
fn a_rate_set_on_the_dashboard_reaches_both_agents_and_the_merged_count_is_the_server_s() {
    let srv = TestServer::start();
    let a = Agent::start(TOKEN);
    let b = Agent::start(TOKEN);
    let dir = tmp("agents-dashboard");
    // 25 s: the page's live checks need the run still going when a headless
    // browser that starts slowly on a busy machine loads it.
    let f = write_fixture(
        &dir,
        "agents_steered_watched.yaml",
        "t.yaml",
        &[("target", srv.base_url())],
    );
    let out = dir.join("out");
    let _machine = shared_machine();
    let mut run = coordinate_with_dashboard(&f, &[&a, &b], &out, &[]);
    let page = run.page.clone();
    // The page in headless Chromium lists both agents (when the browser tools are
    // installed; `scripts/test.sh` installs them).
    let browser = open_in_browser(&page, &run.token, &[&a, &b], &dir);
    let start = first_request(&srv, Duration::from_secs(20));
    std::thread::sleep((start + Duration::from_secs(4)).saturating_duration_since(Instant::now()));
    // Without the token: refused, nothing sent to the agents.
    let pause = r#"{"action":"pause"}"#;
    let (st, body) = post_json(&page, "/api/control", pause, "not-the-token-0123456789");
    assert_eq!(st, 401, "{body}");
    assert!(body.contains("dashboard's token"), "{body}");
    let changed = Instant::now();
    let rate = r#"{"action":"set_rate","per_s":60}"#;
    let (st, body) = post_json(&page, "/api/control", rate, &run.token);
    assert_eq!(st, 200, "{body}");
    // The page lists both generators, each with its share of the load.
    let state = get_json(&page, "/api/state");
    let gens = state["generators"].as_array().expect("generators");
    assert_eq!(gens.len(), 2, "{state}");
    for (g, agent) in gens.iter().zip([&a, &b]) {
        let name = g["name"].as_str().unwrap();
        assert!(name.contains(&agent.addr), "{g} is not {}", agent.addr);
        assert!(g["requests"].as_u64().unwrap() > 0, "{g}");
    }
    // Every second the page can reload carries each generator's part of it: both
    // agents, their requests adding up to the merged second's, their shares to 1.
    let seconds = get_json(&page, "/api/seconds?from=0");
    let seconds = seconds["seconds"].as_array().expect("seconds");
    assert!(seconds.len() >= 3, "{seconds:?}");
    for s in seconds.iter().filter(|s| s["requests"].as_u64() > Some(0)) {
        let parts = s["generators"].as_object().unwrap_or_else(|| panic!("{s}"));
        assert_eq!(parts.len(), 2, "{s}");
        for agent in [&a, &b] {
            assert!(parts.keys().any(|k| k.contains(&agent.addr)), "{s}");
        }
        let sum: u64 = parts
            .values()
            .map(|p| p["requests"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, s["requests"].as_u64().unwrap(), "{s}");
        let shares: f64 = parts.values().map(|p| p["share"].as_f64().unwrap()).sum();
        assert!((shares - 1.0).abs() < 1e-9, "{s}");
        assert!(parts.values().all(|p| p["reporting"] == true), "{s}");
    }
    let status = wait_within_polling(
        &mut run.child,
        Duration::from_secs(60),
        Duration::from_millis(100),
    )
    .expect("the coordinator ended");
    let err = run.stderr.join().unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(!err.contains(TOKEN), "the agents' token is shown: {err}");
    if let Some(mut node) = browser {
        browser_saw(&mut node, 2, &dir);
    }
    // The server's own count: 20/s before, the new 60/s in all two seconds after.
    let before = received_between(&srv, changed - Duration::from_secs(2), changed);
    let after = received_between(
        &srv,
        changed + Duration::from_secs(2),
        changed + Duration::from_secs(4),
    );
    assert!(
        (30..=50).contains(&before),
        "before: {before} in 2 s\n{err}"
    );
    assert!((100..=140).contains(&after), "after: {after} in 2 s\n{err}");
    let merged = out.join("merged");
    assert_eq!(
        read_json(&merged.join("summary.json"))["requests"],
        srv.stats().requests
    );
    // The change is one event of the whole test, in its numbers, and in the report.
    one_change_in(&merged, "→ 60.0/s");
}

/// Two agents against the demo target started with `target` flags, the scenario
/// ramping from 2 to 40 VUs on a DB-bound route and observing the target's
/// `/metrics` every 500 ms, coordinated with the dashboard (kept 40 s after the
/// end): the page's seconds as they were while the run went (read once some
/// second carried a scrape of the pool), its state once the hint was read over
/// the whole run, and the merged `summary.json`.
fn distributed_hint(
    name: &str,
    target: &[&str],
) -> (Vec<serde_json::Value>, serde_json::Value, serde_json::Value) {
    let (_target, url) = crate::harness::serve_demo_target(target);
    let a = Agent::start(TOKEN);
    let b = Agent::start(TOKEN);
    let dir = tmp(name);
    let f = write_fixture(
        &dir,
        "agents_observed_pool.yaml",
        "t.yaml",
        &[("name", name.to_string()), ("target", url)],
    );
    let out = dir.join("out");
    let mut run = coordinate_with_dashboard(&f, &[&a, &b], &out, &["--dashboard-linger", "40s"]);
    let page = run.page.clone();
    let pool_key = "app/hikaricp_connections_max{pool=\"HikariPool-1\"}";
    // While the run goes (the page says it has not ended), its seconds carry the
    // target's scrapes: read by data, however slow the machine.
    let mut during = None;
    let t0 = Instant::now();
    while during.is_none() && t0.elapsed() < Duration::from_secs(60) {
        let state = get_json(&page, "/api/state");
        if state["ended"] == true {
            break;
        }
        let seconds = get_json(&page, "/api/seconds?from=0")["seconds"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if seconds.iter().any(|s| s["observed"][pool_key].is_number()) {
            during = Some(seconds);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut last = None;
    let t0 = Instant::now();
    while last.is_none() && t0.elapsed() < Duration::from_secs(90) {
        let state = get_json(&page, "/api/state");
        if state["ended"] == true && state["bottleneck_hint"]["final"] == true {
            last = Some(state);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = run.child.kill();
    let _ = run.child.wait();
    let err = run.stderr.join().unwrap();
    let during = during.unwrap_or_else(|| {
        panic!("no second carried a scrape of the pool while the run went\n{err}")
    });
    let last = last.unwrap_or_else(|| panic!("no hint read over the whole run\n{err}"));
    let summary = read_json(&out.join("merged").join("summary.json"));
    (during, last, summary)
}

/// The merged report's first row about the target (not pado's self-check).
fn top_target_row(summary: &serde_json::Value) -> Option<&serde_json::Value> {
    summary["bottlenecks"]["components"]
        .as_array()?
        .iter()
        .find(|r| r["kind"] != "generator")
}

#[test]
fn the_dashboard_of_a_distributed_run_shows_generator_0_s_scrapes_and_its_hint_names_the_full_pool()
{
    let _machine = shared_machine();
    // 16 workers share 4 connections held 20 ms per query: at 40 VUs (20 on each
    // agent) requests wait for a connection.
    let (during, state, summary) = distributed_hint(
        "분산-힌트-풀",
        &[
            "--workers",
            "16",
            "--pool-size",
            "4",
            "--query-cost",
            "20ms",
            "--cache-size",
            "0",
        ],
    );
    // The scrapes are the target's own: its pool of 4, on the seconds they were
    // read in.
    let pool_key = "app/hikaricp_connections_max{pool=\"HikariPool-1\"}";
    let maxes: Vec<f64> = during
        .iter()
        .filter_map(|s| s["observed"][pool_key].as_f64())
        .collect();
    assert!(
        !maxes.is_empty() && maxes.iter().all(|m| *m == 4.0),
        "{maxes:?}"
    );
    let h = &state["bottleneck_hint"];
    assert_eq!(h["status"], "limit", "{h:#}");
    assert!(
        h["text"]
            .as_str()
            .unwrap()
            .starts_with("likely limit: DB pool HikariPool-1 (app) ("),
        "{h:#}"
    );
    // The same limit the merged report's table names, read from the same scrapes.
    let top = top_target_row(&summary).unwrap_or_else(|| panic!("{:#}", summary["bottlenecks"]));
    assert_eq!(
        top["component"], "DB pool HikariPool-1",
        "{:#}",
        summary["bottlenecks"]
    );
    for field in ["component", "endpoint", "verdict"] {
        assert_eq!(
            h["component"][field], top[field],
            "{field}: {h:#} vs {top:#}"
        );
    }
}

#[test]
fn the_hint_of_a_distributed_run_below_the_pool_s_limit_does_not_name_the_pool() {
    let _machine = shared_machine();
    // 64 workers, 64 connections, 1 ms a query: 40 VUs never fill the pool.
    let (during, state, summary) = distributed_hint(
        "분산-힌트-여유",
        &[
            "--workers",
            "64",
            "--pool-size",
            "64",
            "--query-cost",
            "1ms",
            "--cache-size",
            "0",
        ],
    );
    let pool_key = "app/hikaricp_connections_max{pool=\"HikariPool-1\"}";
    assert!(
        during
            .iter()
            .any(|s| s["observed"][pool_key].as_f64() == Some(64.0)),
        "the page saw the pool of 64"
    );
    let h = &state["bottleneck_hint"];
    assert!(h.is_object(), "{state:#}");
    for name in ["DB pool HikariPool-1", "Worker pool `http`"] {
        assert_ne!(h["component"]["component"], name, "{h:#}");
        assert!(!h["text"].as_str().unwrap().contains(name), "{h:#}");
    }
    // Where the merged report names no limit, the hint says none; on a machine
    // other work keeps busy both may name its CPU, never the pool.
    match top_target_row(&summary)
        .filter(|r| r["verdict"] == "yes" || r["verdict"] == "busy_throughout")
    {
        None => assert_eq!(
            h["status"], "no_limit",
            "{h:#} / {:#}",
            summary["bottlenecks"]
        ),
        Some(top) => {
            assert!(
                top["kind"].as_str().unwrap().ends_with("cpu"),
                "only a busy machine's CPU: {top:#}"
            );
            assert_eq!(h["component"]["component"], top["component"], "{h:#}");
        }
    }
}
