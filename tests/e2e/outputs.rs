//! Live outputs (`--output`, `outputs:`): a real Prometheus (remote-write receiver)
//! and a real InfluxDB 1.x started by the tests, the InfluxDB v2 API and OTLP
//! against the test server's recorded requests (decoded here with pado_outputs'
//! own message types); stores that are down, slow or failing never change the
//! run's numbers, and the drop counter says what was lost.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pado_testkit::TestServer;
use serde_json::Value;

use crate::harness::{
    free_port, num, pado_cmd, require_or_skip, run, tmp, write_file, write_fixture, Kid, Tmp,
};

/// A child process killed on drop.
/// One plain HTTP/1.1 exchange on loopback; `(status, body)`.
fn loopback_http(port: u16, method: &str, target: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|b| b.1).unwrap_or("");
    // Chunked answers: keep the JSON between the chunk sizes.
    let body = if text
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut joined = String::new();
        let mut rest = body;
        while let Some((size, after)) = rest.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 || after.len() < n {
                break;
            }
            joined.push_str(&after[..n]);
            rest = after[n..].trim_start_matches("\r\n");
        }
        joined
    } else {
        body.to_string()
    };
    (status, body)
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn wait_ready(port: u16, path: &str, kid: &mut Kid, what: &str) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(60) {
        if let Ok(Some(st)) = kid.0.try_wait() {
            panic!("{what} exited: {st}");
        }
        if TcpStream::connect(("127.0.0.1", port)).is_ok()
            && (200..300).contains(&loopback_http(port, "GET", path, "").0)
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("{what} was not ready on {port} within 60 s");
}

/// Debian's Prometheus with its remote-write receiver, scraping nothing, its
/// storage in `dir`.
fn prometheus(dir: &Path) -> Option<(Kid, u16)> {
    let bin = require_or_skip("prometheus", "prometheus")?;
    let cfg = write_fixture(dir, "outputs_prometheus.yaml", "prometheus.yml", &[]);
    let port = free_port();
    let mut kid = Kid(Command::new(bin)
        .arg(format!("--config.file={}", cfg.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--web.enable-remote-write-receiver")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap());
    wait_ready(port, "/-/ready", &mut kid, "prometheus");
    Some((kid, port))
}

/// One number from a Prometheus instant query (0 when the result is empty).
fn prom_value(port: u16, query: &str) -> f64 {
    // Evaluated a little ahead of now: the run's last second (the graceful stop's
    // tail) is stamped with its end, which may still be a moment ahead when the run
    // has just ended, and an instant query at "now" would not see it yet.
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 30;
    let (st, body) = loopback_http(
        port,
        "GET",
        &format!("/api/v1/query?query={}&time={at}", enc(query)),
        "",
    );
    assert_eq!(st, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["value"][1].as_str().unwrap().parse::<f64>().unwrap())
        .sum()
}

/// Debian's InfluxDB 1.x: its own config, directories and loopback ports; a
/// database `pado`.
fn influxd(dir: &Path) -> Option<(Kid, u16)> {
    let bin = require_or_skip("influxd", "influxdb")?;
    let (port, rpc) = (free_port(), free_port());
    let d = dir.display();
    let cfg = write_file(
        dir,
        "influxdb.conf",
        &format!(
            "reporting-disabled = true\nbind-address = \"127.0.0.1:{rpc}\"\n[meta]\n  dir = \"{d}/meta\"\n[data]\n  dir = \"{d}/data\"\n  wal-dir = \"{d}/wal\"\n  query-log-enabled = false\n[http]\n  bind-address = \"127.0.0.1:{port}\"\n  log-enabled = false\n[monitor]\n  store-enabled = false\n"
        ),
    );
    let mut kid = Kid(Command::new(bin)
        .arg("-config")
        .arg(&cfg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap());
    wait_ready(port, "/ping", &mut kid, "influxd");
    let (st, body) = loopback_http(port, "POST", "/query", "q=CREATE%20DATABASE%20pado");
    assert_eq!(st, 200, "{body}");
    Some((kid, port))
}

/// A scenario of two steps (one with a Hangul name) against `server` for `secs`.
fn scenario(dir: &Tmp, server: &TestServer, secs: u32, outputs: &str) -> String {
    write_fixture(
        dir,
        "outputs_scenario.yaml",
        "live.yaml",
        &[
            ("target", server.base_url()),
            ("outputs", outputs.to_string()),
            ("secs", secs.to_string()),
        ],
    )
    .display()
    .to_string()
}

/// The server's own count of the load (not of what outputs posted to it).
fn load_count(server: &TestServer) -> u64 {
    let s = server.stats();
    s.by_path.get("/search").copied().unwrap_or(0)
        + s.by_path.get("/status/503").copied().unwrap_or(0)
}

fn output_report(s: &Value, kind: &str) -> Value {
    s["outputs"]
        .as_array()
        .unwrap_or_else(|| panic!("no outputs in {s:#}"))
        .iter()
        .find(|o| o["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} output in {s:#}"))
        .clone()
}

#[test]
fn prometheus_remote_write_counts_equal_the_summary() {
    let store = tmp("prom-store");
    let Some((_kid, port)) = prometheus(&store) else {
        return;
    };
    let server = TestServer::start();
    let dir = tmp("prom");
    let f = scenario(&dir, &server, 3, "");
    let url = format!("prometheus=http://127.0.0.1:{port}/api/v1/write");
    let r = run("prom", &[&f, "--output", &url]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    let requests = num(&s, "requests");
    assert_eq!(requests as u64, load_count(&server));
    let o = output_report(&s, "prometheus");
    assert_eq!(o["seconds_dropped"], 0, "{o}");
    assert!(num(&o, "seconds_sent") >= 3.0, "{o}");
    let run_label = r.dir.file_name().unwrap().to_string_lossy().into_owned();
    let sel = format!("{{run=\"{run_label}\"}}");
    assert_eq!(
        prom_value(port, &format!("sum(pado_http_reqs_total{sel})")),
        requests
    );
    assert_eq!(
        prom_value(port, &format!("sum(pado_http_req_failed_total{sel})")),
        num(&s, "failed")
    );
    // The Hangul step name round-trips as a label value.
    let step = s["steps"]["검색"]["requests"].as_f64().unwrap();
    assert_eq!(
        prom_value(
            port,
            &format!("sum(pado_http_reqs_total{{run=\"{run_label}\",step=\"검색\"}})")
        ),
        step
    );
    assert_eq!(
        prom_value(
            port,
            &format!(
                "sum(pado_http_req_errors_total{{run=\"{run_label}\",category=\"http_503\"}})"
            )
        ),
        s["steps"]["missing"]["requests"].as_f64().unwrap()
    );
    assert_eq!(
        prom_value(
            port,
            &format!("sum(pado_http_req_duration_seconds_count{sel})")
        ),
        requests
    );
    assert_eq!(
        prom_value(
            port,
            &format!(
                "sum(pado_http_req_duration_seconds_bucket{{run=\"{run_label}\",le=\"+Inf\"}})"
            )
        ),
        requests
    );
}

#[test]
fn influxdb_v1_points_count_equal_the_summary() {
    let store = tmp("influx-store");
    let Some((_kid, port)) = influxd(&store) else {
        return;
    };
    let server = TestServer::start();
    let dir = tmp("influx");
    let f = scenario(
        &dir,
        &server,
        3,
        &format!(
            "outputs:\n  - {{ kind: influxdb, url: \"http://127.0.0.1:{port}/write?db=pado\" }}\n"
        ),
    );
    let r = run("influx", &[&f]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    let requests = num(&s, "requests");
    assert_eq!(requests as u64, load_count(&server));
    assert_eq!(output_report(&s, "influxdb")["seconds_dropped"], 0);
    let run_label = r.dir.file_name().unwrap().to_string_lossy().into_owned();
    let q = format!("SELECT sum(\"count\") FROM \"pado_http_reqs\" WHERE \"run\" = '{run_label}'");
    let (st, body) = loopback_http(port, "GET", &format!("/query?db=pado&q={}", enc(&q)), "");
    assert_eq!(st, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    let sum = v["results"][0]["series"][0]["values"][0][1]
        .as_f64()
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(sum, requests, "{v}");
    let q = format!("SELECT sum(\"count\") FROM \"pado_http_reqs\" WHERE \"run\" = '{run_label}' AND \"step\" = '검색'");
    let (_, body) = loopback_http(port, "GET", &format!("/query?db=pado&q={}", enc(&q)), "");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        v["results"][0]["series"][0]["values"][0][1].as_f64(),
        s["steps"]["검색"]["requests"].as_f64(),
        "{v}"
    );
}

/// The requests pado's outputs posted to `path` of the test server, decoded.
fn posted(server: &TestServer, path: &str) -> Vec<pado_testkit::RequestRecord> {
    server
        .records()
        .into_iter()
        .filter(|r| r.path == path)
        .collect()
}

#[test]
fn influxdb_v2_and_otlp_receivers_decode_equal_counts_and_the_token_stays_secret() {
    let server = TestServer::start();
    let dir = tmp("v2otlp");
    let f = scenario(&dir, &server, 3, "");
    let secret = "s3cr3t-token-value";
    let v2 = format!("influxdb={}?org=o&bucket=b", server.url("/api/v2/write"));
    let otlp = format!("otlp={}", server.url("/v1/metrics"));
    let _machine = crate::harness::shared_machine();
    let out_dir = dir.join("result");
    let out = pado_cmd([
        "run", &f, "--output", &v2, "--output", &otlp, "--quiet", "--out",
    ])
    .arg(&out_dir)
    .env("PADO_INFLUXDB_TOKEN", secret)
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    let requests = num(&s, "requests");
    assert_eq!(requests as u64, load_count(&server));

    // InfluxDB v2: the token in the header, the points' per-second counts adding up.
    let writes = posted(&server, "/api/v2/write");
    assert!(!writes.is_empty());
    let mut counted = 0u64;
    for w in &writes {
        let auth = w
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
            .unwrap();
        assert_eq!(auth.1, format!("Token {secret}"));
        assert!(w.query.contains(&("bucket".into(), "b".into())));
        for l in String::from_utf8(w.body.clone())
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("pado_http_reqs,"))
        {
            let fields = l.rsplit(' ').nth(1).unwrap();
            let c = fields
                .split(',')
                .find_map(|kv| kv.strip_prefix("count="))
                .unwrap();
            counted += c.trim_end_matches('i').parse::<u64>().unwrap();
        }
    }
    assert_eq!(counted as f64, requests);

    // OTLP: the cumulative sum at the last point adds up.
    let posts = posted(&server, "/v1/metrics");
    assert!(!posts.is_empty());
    let mut last_t = 0u64;
    let mut at_last = 0i64;
    for p in &posts {
        let req = pado_outputs::otlp::decode(&p.body).unwrap();
        for m in &req.resource_metrics[0].scope_metrics[0].metrics {
            if m.name != "pado_http_reqs" {
                continue;
            }
            let Some(pado_outputs::otlp::Data::Sum(sum)) = &m.data else {
                panic!("not a sum")
            };
            for dp in &sum.data_points {
                if dp.time_unix_nano > last_t {
                    last_t = dp.time_unix_nano;
                    at_last = 0;
                }
                if dp.time_unix_nano == last_t {
                    at_last += dp.as_int;
                }
            }
        }
    }
    assert_eq!(at_last as f64, requests);

    // The token is in no result file, no output.
    assert!(!stderr.contains(secret));
    assert!(!String::from_utf8_lossy(&out.stdout).contains(secret));
    for e in std::fs::read_dir(&out_dir).unwrap() {
        let text = String::from_utf8_lossy(&std::fs::read(e.unwrap().path()).unwrap()).into_owned();
        assert!(!text.contains(secret));
    }
}

/// Every file under `dir`, read as text (lossy), with its path.
fn every_file(dir: &Path) -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(every_file(&p));
        } else {
            let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
            out.push((p, text));
        }
    }
    out
}

/// Credentials written into output URLs: InfluxDB 1.x's `u`/`p` in the query are
/// sent as written, a user and password before the host go out as Basic
/// authentication, and none of them is in any file of the result directory, on
/// stdout or on stderr (the URL is shown with `***` in their place).
#[test]
fn credentials_in_output_urls_are_sent_and_never_written() {
    let server = TestServer::start();
    let dir = tmp("urlcreds");
    let f = scenario(&dir, &server, 2, "");
    let (user, pass) = ("pado-user-7", "s3cr3t-value-p");
    let (buser, bpass) = ("promuser", "pw-S3cr3t-basic");
    // base64("promuser:pw-S3cr3t-basic"), computed apart from pado.
    let basic = "cHJvbXVzZXI6cHctUzNjcjN0LWJhc2lj";
    let v1 = format!("influxdb={}?db=x&u={user}&p={pass}", server.url("/write"));
    let prom = format!(
        "prometheus={}",
        server
            .url("/api/v1/write")
            .replacen("http://", &format!("http://{buser}:{bpass}@"), 1)
    );
    let _machine = crate::harness::shared_machine();
    let out_dir = dir.join("result");
    let out = pado_cmd(["run", &f, "--output", &v1, "--output", &prom, "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");

    // Sent as each protocol expects.
    let writes = posted(&server, "/write");
    assert!(!writes.is_empty(), "nothing posted to /write");
    for w in &writes {
        assert!(
            w.query.contains(&("u".into(), user.into())),
            "{:?}",
            w.query
        );
        assert!(
            w.query.contains(&("p".into(), pass.into())),
            "{:?}",
            w.query
        );
    }
    let remote = posted(&server, "/api/v1/write");
    assert!(!remote.is_empty(), "nothing posted to /api/v1/write");
    for w in &remote {
        let auth = w
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
            .map(|(_, v)| v.as_str());
        assert_eq!(auth, Some(format!("Basic {basic}").as_str()));
    }

    // Shown masked: the summary still says which outputs ran, and where.
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    let shown = output_report(&s, "influxdb")["url"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(shown.ends_with("/write?db=x&u=***&p=***"), "{shown}");
    let shown = output_report(&s, "prometheus")["url"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(shown.starts_with("http://***@127.0.0.1:"), "{shown}");
    assert!(stdout.contains("u=***&p=***"), "{stdout}");

    // Written nowhere.
    let files = every_file(&out_dir);
    assert!(files.len() >= 3, "{files:?}");
    for secret in [pass, user, bpass, buser, basic] {
        assert!(!stdout.contains(secret), "{secret} on stdout:\n{stdout}");
        assert!(!stderr.contains(secret), "{secret} on stderr:\n{stderr}");
        for (p, text) in &files {
            assert!(!text.contains(secret), "{secret} in {}", p.display());
        }
    }
}

/// A store that refuses connections, answers 500, or takes 5 s per write: the run's
/// numbers equal the server's own count, the run ends on time, and the drop counter
/// says every second was lost.
#[test]
fn a_store_down_failing_or_slow_changes_nothing_but_its_drop_counter() {
    let server = TestServer::start();
    let down = free_port();
    for (name, url) in [
        (
            "down",
            format!("prometheus=http://127.0.0.1:{down}/api/v1/write"),
        ),
        ("500", format!("prometheus={}", server.url("/status/500"))),
        ("slow", format!("otlp={}", server.url("/delay/5000"))),
    ] {
        server.reset_stats();
        let dir = tmp(name);
        let f = scenario(&dir, &server, 3, "");
        let t0 = Instant::now();
        let r = run(name, &[&f, "--output", &url]);
        let took = t0.elapsed();
        assert_eq!(r.code(), 0, "{name}: {}", r.stderr());
        let s = r.summary();
        assert_eq!(num(&s, "requests") as u64, load_count(&server), "{name}");
        // 3 s of load, a graceful stop of in-flight requests, at most a 3 s flush.
        assert!(took < Duration::from_secs(12), "{name}: took {took:?}");
        let o = output_report(&s, if name == "slow" { "otlp" } else { "prometheus" });
        assert_eq!(o["seconds_sent"], 0, "{name}: {o}");
        assert!(num(&o, "seconds_dropped") >= 3.0, "{name}: {o}");
        assert!(o["last_error"].is_string(), "{name}: {o}");
        assert!(r.stderr().contains("dropped"), "{name}: {}", r.stderr());
        assert!(
            s["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().contains("dropped")),
            "{name}: {s:#}"
        );
    }
}

#[test]
fn bad_outputs_are_refused_before_anything_is_sent() {
    let server = TestServer::start();
    let dir = tmp("bad-out");
    let f = scenario(&dir, &server, 1, "");
    let r = run(
        "bad-kind",
        &[&f, "--output", "graphite=http://127.0.0.1:1/"],
    );
    assert_eq!(r.code(), 2, "{}", r.stderr());
    assert!(
        r.stderr().contains("unknown output kind `graphite`"),
        "{}",
        r.stderr()
    );
    let r = run(
        "no-token",
        &[
            &f,
            "--output",
            "influxdb=http://127.0.0.1:1/api/v2/write?org=o&bucket=b",
        ],
    );
    assert_eq!(r.code(), 2, "{}", r.stderr());
    assert!(r.stderr().contains("PADO_INFLUXDB_TOKEN"), "{}", r.stderr());
    let f = scenario(
        &dir,
        &server,
        1,
        "outputs:\n  - { kind: influxdb, url: \"http://127.0.0.1:1/nowhere\" }\n",
    );
    let r = run("bad-file", &[&f]);
    assert_eq!(r.code(), 2, "{}", r.stderr());
    assert!(r.stderr().contains("live.yaml:"), "{}", r.stderr());
    assert!(r.stderr().contains("outputs[0]"), "{}", r.stderr());
    assert_eq!(server.stats().requests, 0);
}
