//! Observing the target: scrapes during a run, the bottleneck table against the
//! demo target configured to run out of one resource or the other, a real
//! node_exporter, a real JVM pinned to fewer cores than its host, failures that
//! are recorded and not fatal, secrets kept out.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use pado_testkit::TestServer;
use serde_json::Value;

use crate::harness::{
    exclusive_machine, free_port, pado_cmd, require_or_skip, run, serve_demo_target, tmp,
    write_file, write_fixture, Kid,
};

fn row<'a>(s: &'a Value, component: &str) -> &'a Value {
    s["bottlenecks"]["components"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["component"] == component))
        .unwrap_or_else(|| panic!("no `{component}` row: {:#}", s["bottlenecks"]))
}

/// Ramp a DB-bound route from 2 to 40 VUs against a target with `workers`
/// workers and `pool` connections held 20 ms per query (no cache); the summary
/// and the run (which keeps its result directory until it drops).
fn overload(name: &str, workers: u32, pool: u32) -> (Value, crate::harness::Run) {
    let (w, p) = (workers.to_string(), pool.to_string());
    let (_kid, url) = serve_demo_target(&[
        "--workers",
        &w,
        "--pool-size",
        &p,
        "--query-cost",
        "20ms",
        "--cache-size",
        "0",
    ]);
    let r = run(
        name,
        &[
            "--url",
            &format!("{url}/api/posts/5"),
            "--stages",
            "2s:2,2s:2,1s:40,5s:40",
            "--observe",
            &format!("{url}/metrics"),
            "--observe-interval",
            "500ms",
            "--target",
            &url,
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert!(
        r.stdout().contains("bottlenecks: target metrics at "),
        "{}",
        r.stdout()
    );
    (r.summary(), r)
}

#[test]
fn attribution_names_the_real_limit_and_compare_shows_it_move() {
    // 16 workers share 4 connections held 20 ms per query: ~200 req/s, 2 VUs
    // use half of it; at 40 VUs the pool is full and workers wait for it.
    let (s, pool_run) = overload("obs-pool", 16, 4);
    let pool = row(&s, "DB pool HikariPool-1");
    assert_eq!(pool["verdict"], "yes", "{:#}", s["bottlenecks"]);
    assert_eq!(pool["endpoint"], "app", "the target's own origin is `app`");
    assert!(
        pool["state"].as_str().unwrap().contains("/4 active"),
        "{pool}"
    );
    let workers = row(&s, "Worker pool `http`");
    assert_eq!(workers["verdict"], "consequence", "{:#}", s["bottlenecks"]);
    assert!(
        workers["evidence"]
            .as_str()
            .unwrap()
            .contains("waits on DB pool"),
        "{workers}"
    );
    assert_eq!(row(&s, "CPU (process)")["verdict"], "no");
    assert!(s["bottlenecks"]["limit"]
        .as_str()
        .unwrap()
        .contains("DB pool HikariPool-1"));
    assert!(
        s["verdict"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v.as_str().unwrap().contains("DB pool HikariPool-1 (app)")),
        "{:#}",
        s["verdict"]
    );

    // The same service with 4 workers and 16 connections: workers run out first.
    let (s, worker_run) = overload("obs-workers", 4, 16);
    let workers = row(&s, "Worker pool `http`");
    assert_eq!(workers["verdict"], "yes", "{:#}", s["bottlenecks"]);
    assert!(
        workers["state"].as_str().unwrap().contains("/4 busy"),
        "{workers}"
    );
    assert_eq!(row(&s, "DB pool HikariPool-1")["verdict"], "no");
    assert!(s["bottlenecks"]["limit"]
        .as_str()
        .unwrap()
        .contains("Worker pool"));

    // `pado compare` shows the limit moving from the pool to the workers.
    let out = pado_cmd(["compare"])
        .arg(&pool_run.dir)
        .arg(&worker_run.dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let a = text
        .lines()
        .find(|l| l.contains("A (baseline)"))
        .unwrap_or_default();
    let b = text
        .lines()
        .find(|l| l.trim_start().starts_with("B "))
        .unwrap_or_default();
    assert!(
        a.contains("limit: ") && a.contains("DB pool HikariPool-1 (app)"),
        "{text}"
    );
    assert!(
        b.contains("limit: ") && b.contains("Worker pool `http` (app)"),
        "{text}"
    );
}

#[test]
fn scrape_failures_are_recorded_and_the_run_goes_on() {
    let server = TestServer::start();
    let refused = free_port();
    let r = run(
        "obs-fail",
        &[
            "--url",
            &server.url("/"),
            "--vus",
            "2",
            "--duration",
            "2s",
            "--observe",
            &format!("down=http://127.0.0.1:{refused}/metrics"),
            "--observe",
            &format!("bad={}", server.url("/status/503")),
            "--observe",
            &format!("good={}", server.url("/metrics")),
            "--observe-interval",
            "500ms",
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    let eps = s["bottlenecks"]["endpoints"].as_array().unwrap();
    let ep = |n: &str| eps.iter().find(|e| e["name"] == n).unwrap().clone();
    let down = ep("down");
    assert!(down["scrapes"].as_u64().unwrap() >= 4, "{down}");
    assert_eq!(down["failed"], down["scrapes"]);
    assert!(
        down["errors"]["connect_refused"].as_u64().unwrap() >= 4,
        "{down}"
    );
    assert!(ep("bad")["errors"]["http_503"].as_u64().unwrap() >= 4);
    assert_eq!(ep("good")["failed"], 0);
    let out = r.stdout();
    assert!(out.contains("scrapes of `down` failed"), "{out}");
    // The load itself was unaffected: every request pado counted reached the server.
    let served = server.stats().by_path.get("/").copied().unwrap_or(0);
    assert_eq!(s["requests"].as_f64().unwrap() as u64, served);
    // The good endpoint's counter saw the load (scrapes excluded).
    let text = std::fs::read_to_string(r.dir.join("observe.jsonl")).unwrap();
    assert!(text.contains("testkit_requests_total"));
}

#[test]
fn observe_headers_come_from_the_environment_and_stay_out_of_the_results() {
    let server = TestServer::start();
    let dir = tmp("obs-secret");
    let file = write_fixture(
        &dir,
        "observe_observe_headers_come_from_the_environment_and_stay_out_of_the_results.yaml",
        "s.yaml",
        &[("target", server.base_url())],
    );
    let out_dir = dir.join("out");
    let out = pado_cmd([
        "run",
        file.to_str().unwrap(),
        "-q",
        "--out",
        out_dir.to_str().unwrap(),
    ])
    .env("PADO_E2E_METRICS_TOKEN", "tok-ssh-3e1f")
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sent = server
        .records()
        .into_iter()
        .filter(|r| r.path == "/metrics")
        .filter(|r| {
            r.headers
                .iter()
                .any(|(k, v)| k.eq_ignore_ascii_case("authorization") && v == "Bearer tok-ssh-3e1f")
        })
        .count();
    assert!(sent >= 3, "scrapes carried the header");
    for f in std::fs::read_dir(&out_dir).unwrap() {
        let p = f.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        assert!(!text.contains("tok-ssh-3e1f"), "secret in {}", p.display());
    }
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains("tok-ssh-3e1f"));

    // Unset, it is a clear error before anything runs.
    let out = pado_cmd([
        "run",
        file.to_str().unwrap(),
        "-q",
        "--out",
        dir.join("out2").to_str().unwrap(),
    ])
    .env_remove("PADO_E2E_METRICS_TOKEN")
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("observe.endpoints[0].headers.Authorization")
            && err.contains("PADO_E2E_METRICS_TOKEN"),
        "{err}"
    );
}

/// A light open-model run (`rate`/s for `secs`) against `url`, observing
/// `endpoints` every 500 ms; checks it passed and every scrape succeeded.
fn observed_run(
    name: &str,
    url: &str,
    rate: &str,
    secs: &str,
    endpoints: &[String],
) -> crate::harness::Run {
    let mut args: Vec<&str> = vec!["--url", url, "--rate", rate, "--duration", secs];
    for e in endpoints {
        args.extend(["--observe", e.as_str()]);
    }
    args.extend(["--observe-interval", "500ms"]);
    let r = run(name, &args);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    for e in s["bottlenecks"]["endpoints"].as_array().unwrap() {
        assert_eq!(e["failed"], 0, "{e}");
    }
    r
}

/// Debian's node_exporter, on a free loopback port (scripts/test.sh installs it).
fn node_exporter() -> (Kid, String) {
    let bin = ["/usr/bin/prometheus-node-exporter", "/usr/local/bin/node_exporter"]
        .into_iter()
        .find(|p| std::path::Path::new(p).is_file())
        .expect("prometheus-node-exporter is not installed: run scripts/test.sh, which installs it with apt-get");
    let port = free_port();
    let kid = Kid(Command::new(bin)
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap());
    let url = format!("http://127.0.0.1:{port}/metrics");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return (kid, url);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("node_exporter did not listen on {port}");
}

#[test]
fn a_real_node_exporter_is_scraped_and_read() {
    if !installed(&[("prometheus-node-exporter", "prometheus-node-exporter")]) {
        return;
    }
    let (_kid, node) = node_exporter();
    let server = TestServer::start();
    let r = observed_run(
        "obs-node",
        &server.url("/"),
        "50",
        "3s",
        std::slice::from_ref(&node),
    );
    let s = r.summary();
    let ep = &s["bottlenecks"]["endpoints"][0];
    assert_eq!(
        ep["name"],
        "127.0.0.1:".to_string() + node.split(':').nth(2).unwrap().trim_end_matches("/metrics")
    );
    assert!(
        ep["samples"].as_u64().unwrap() > 200,
        "a real exporter page: {ep}"
    );
    // Every line of the real exposition parsed.
    let text = std::fs::read_to_string(r.dir.join("observe.jsonl")).unwrap();
    assert!(
        !text.contains("\"bad_lines\""),
        "unparsed lines in node_exporter output"
    );
    let cpu = row(&s, "CPU (machine)");
    let cores = num_cpus_online();
    assert!(
        cpu["state"]
            .as_str()
            .unwrap()
            .contains(&format!("of {cores} cores")),
        "{cpu}"
    );
    let u = cpu["utilisation"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&u), "{cpu}");
    let mem = row(&s, "Memory (machine)");
    assert!(mem["state"].as_str().unwrap().contains("used of"), "{mem}");
    // Charted in the report.
    let html = std::fs::read_to_string(r.dir.join("report.html")).unwrap();
    assert!(html.contains("CPU (machine)") && html.contains("id=\"chart-obs-0\""));
}

/// CPUs the kernel has online (node_exporter counts these, whatever pado's affinity).
fn num_cpus_online() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .map(|s| {
            s.trim()
                .split(',')
                .map(|r| match r.split_once('-') {
                    Some((a, b)) => {
                        b.parse::<usize>().unwrap_or(0) - a.parse::<usize>().unwrap_or(0) + 1
                    }
                    None => 1,
                })
                .sum()
        })
        .unwrap_or(0)
}

/// Whether every program a test needs is installed: `cargo test` alone skips the
/// test with a message, `scripts/test.sh` (which installs them) requires them.
fn installed(bins: &[(&str, &str)]) -> bool {
    bins.iter()
        .all(|(bin, package)| crate::harness::require_or_skip(bin, package).is_some())
}

/// A Debian program the tests need (scripts/test.sh installs it).
fn need(bin: &str, package: &str) -> String {
    ["/usr/bin", "/usr/sbin", "/usr/local/bin"]
        .iter()
        .map(|dir| format!("{dir}/{bin}"))
        .find(|p| std::path::Path::new(p).is_file())
        .unwrap_or_else(|| {
            panic!("{bin} is not installed: run scripts/test.sh, which installs {package} with apt-get")
        })
}

fn wait_listening(port: u16) {
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("nothing listens on {port}");
}

fn spawn(bin: &str, args: &[String]) -> Kid {
    Kid(Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap())
}

#[test]
fn real_nginx_and_redis_exporters_are_read_by_name() {
    if !installed(&[
        ("nginx", "nginx-light"),
        ("prometheus-nginx-exporter", "prometheus-nginx-exporter"),
        ("redis-server", "redis-server"),
        ("prometheus-redis-exporter", "prometheus-redis-exporter"),
    ]) {
        return;
    }
    let dir = tmp("obs-exporters");
    // nginx with stub_status, serving the load itself: one process in the
    // foreground, so that killing it leaves nothing behind.
    let ngx_port = free_port();
    let conf = write_file(
        &dir,
        "nginx.conf",
        &format!(
            "master_process off;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\nevents {{ worker_connections 256; }}\nhttp {{\n  access_log off;\n  client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};\n  server {{\n    listen 127.0.0.1:{ngx_port};\n    location = /stub_status {{ stub_status; }}\n    location / {{ return 200 \"ok\\n\"; }}\n  }}\n}}\n",
            d = dir.display()
        ),
    );
    let _nginx = spawn(
        &need("nginx", "nginx-light"),
        &[
            "-c".into(),
            conf.display().to_string(),
            "-p".into(),
            dir.display().to_string(),
        ],
    );
    wait_listening(ngx_port);
    let nexp_port = free_port();
    let _nexp = spawn(
        &need("prometheus-nginx-exporter", "prometheus-nginx-exporter"),
        &[
            "-nginx.scrape-uri".into(),
            format!("http://127.0.0.1:{ngx_port}/stub_status"),
            "-web.listen-address".into(),
            format!("127.0.0.1:{nexp_port}"),
        ],
    );
    // redis and its exporter.
    let redis_port = free_port();
    let _redis = spawn(
        &need("redis-server", "redis-server"),
        &[
            "--port".into(),
            redis_port.to_string(),
            "--bind".into(),
            "127.0.0.1".into(),
            "--save".into(),
            String::new(),
            "--appendonly".into(),
            "no".into(),
            "--maxmemory".into(),
            "64mb".into(),
        ],
    );
    wait_listening(redis_port);
    let rexp_port = free_port();
    let _rexp = spawn(
        &need("prometheus-redis-exporter", "prometheus-redis-exporter"),
        &[
            format!("--redis.addr=redis://127.0.0.1:{redis_port}"),
            format!("--web.listen-address=127.0.0.1:{rexp_port}"),
        ],
    );
    wait_listening(nexp_port);
    wait_listening(rexp_port);

    // 200 requests a second to nginx for 4 s (open model: the rate is exact).
    let r = observed_run(
        "obs-exporters",
        &format!("http://127.0.0.1:{ngx_port}/"),
        "200",
        "4s",
        &[
            format!("nginx=http://127.0.0.1:{nexp_port}/metrics"),
            format!("redis=http://127.0.0.1:{rexp_port}/metrics"),
        ],
    );
    let s = r.summary();
    // nginx counted what pado sent: its request rate over the window is pado's
    // 200/s plus the exporter's own stub_status polls (one per scrape).
    let ngx = row(&s, "nginx");
    assert_eq!(ngx["verdict"], "no", "{ngx}");
    let state = ngx["state"].as_str().unwrap();
    let rps: f64 = state
        .split(", ")
        .find_map(|p| p.strip_suffix(" req/s"))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no req/s in `{state}`"));
    assert!(
        (190.0..=225.0).contains(&rps),
        "nginx saw {rps} req/s: {state}"
    );
    let redis = row(&s, "Redis");
    assert_eq!(redis["verdict"], "no", "{redis}");
    let state = redis["state"].as_str().unwrap();
    assert!(
        state.contains("ops/s") && state.contains("/10000 clients") && state.contains("memory "),
        "{state}"
    );
}

/// Wait (at most 20 s) until `n` clients of the MariaDB at `sock` run `SELECT
/// SLEEP`; asked as root, whose one connection beyond the limit is kept for it.
fn wait_sleeping(client: &str, sock: &std::path::Path, n: u32) {
    let sleeping = || {
        let o = Command::new(client)
            .args(["--no-defaults", "-uroot", "-N"])
            .arg(format!("--socket={}", sock.display()))
            .args([
                "-e",
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP%'",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse::<u32>()
            .unwrap_or(0)
    };
    let since = std::time::Instant::now();
    while sleeping() < n {
        assert!(
            since.elapsed() < Duration::from_secs(20),
            "the {n} clients did not connect within 20 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_real_mysql_at_its_connection_limit_is_named_the_limit() {
    if !installed(&[
        ("mariadb-install-db", "mariadb-server"),
        ("mariadbd", "mariadb-server"),
        ("mariadb", "mariadb-client"),
        ("prometheus-mysqld-exporter", "prometheus-mysqld-exporter"),
    ]) {
        return;
    }
    let dir = tmp("obs-mysql");
    let data = dir.join("data");
    let sock = dir.join("sock");
    let out = Command::new(need("mariadb-install-db", "mariadb-server"))
        .args([
            "--no-defaults",
            "--user=root",
            "--skip-test-db",
            "--auth-root-authentication-method=normal",
        ])
        .arg(format!("--datadir={}", data.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // max_connections 10 (MariaDB's least): the exporter's connection and nine
    // sleeping clients fill it.
    let port = free_port();
    let _db = spawn(
        &need("mariadbd", "mariadb-server"),
        &[
            "--no-defaults".into(),
            format!("--datadir={}", data.display()),
            format!("--socket={}", sock.display()),
            format!("--port={port}"),
            "--bind-address=127.0.0.1".into(),
            "--user=root".into(),
            "--skip-log-bin".into(),
            "--innodb-buffer-pool-size=16M".into(),
            "--max-connections=10".into(),
            format!("--pid-file={}/pid", dir.display()),
        ],
    );
    wait_listening(port);
    let client = need("mariadb", "mariadb-client");
    let sql = |q: &str| {
        let o = Command::new(&client)
            .args(["--no-defaults", "-uroot"])
            .arg(format!("--socket={}", sock.display()))
            .args(["-e", q])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{q}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    sql("CREATE USER 'exporter'@'127.0.0.1' IDENTIFIED BY 'pw'; GRANT PROCESS, REPLICATION CLIENT, SELECT ON *.* TO 'exporter'@'127.0.0.1';");
    let cnf = write_file(
        &dir,
        "my.cnf",
        &format!("[client]\nuser=exporter\npassword=pw\nhost=127.0.0.1\nport={port}\n"),
    );
    let exp_port = free_port();
    let _exp = spawn(
        &need("prometheus-mysqld-exporter", "prometheus-mysqld-exporter"),
        &[
            format!("--config.my-cnf={}", cnf.display()),
            format!("--web.listen-address=127.0.0.1:{exp_port}"),
        ],
    );
    wait_listening(exp_port);
    // Nine clients hold their connections for the whole run.
    let _sleepers: Vec<Kid> = (0..9)
        .map(|_| {
            spawn(
                &client,
                &[
                    "--no-defaults".into(),
                    "-uroot".into(),
                    format!("--socket={}", sock.display()),
                    "-e".into(),
                    "SELECT SLEEP(30)".into(),
                ],
            )
        })
        .collect();
    // On a busy machine the nine clients take a while to connect: the run starts
    // once all nine sleep.
    wait_sleeping(&client, &sock, 9);
    // A light load: the generator keeps its headroom, MySQL is the story.
    let server = TestServer::start();
    let r = observed_run(
        "obs-mysql",
        &server.url("/"),
        "50",
        "3s",
        &[format!("http://127.0.0.1:{exp_port}/metrics")],
    );
    let s = r.summary();
    let m = row(&s, "MySQL");
    assert_eq!(m["verdict"], "yes", "{:#}", s["bottlenecks"]);
    assert!(
        m["state"].as_str().unwrap().contains("10/10 connections"),
        "{m}"
    );
    assert!(
        m["evidence"].as_str().unwrap().contains("max_connections"),
        "{m}"
    );
    assert!(
        s["bottlenecks"]["limit"]
            .as_str()
            .unwrap()
            .contains("MySQL (127.0.0.1:"),
        "{:#}",
        s["bottlenecks"]
    );
}

/// `tests/e2e/fixtures/CpuBoundService.java` run by `java` under `taskset -c 0`
/// (one CPU of the host's), on a free loopback port, working in `cwd`; exits by
/// itself after 90 s.
/// The truth the test plants is a JVM that gets its core, which other work on a
/// shared machine would take a share of: it runs in a session of its own (with
/// the kernel's autogroups, CPU is shared between sessions first) at a raised
/// priority where that is allowed (elsewhere it runs as it is).
fn pinned_jvm(
    java: &std::path::Path,
    taskset: &std::path::Path,
    cwd: &std::path::Path,
) -> (Kid, String) {
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/e2e/fixtures/CpuBoundService.java"
    );
    let port = free_port();
    let mut child = Command::new("setsid")
        .arg(taskset)
        .args(["-c", "0"])
        .arg(java)
        .args(["-Xmx128m", "-XX:+UseSerialGC", src])
        .args([port.to_string(), "90".into()])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _ = std::fs::write(format!("/proc/{}/autogroup", child.id()), "-10");
    let out = child.stdout.take().unwrap();
    let kid = Kid(child);
    let url = BufReader::new(out)
        .lines()
        .map_while(Result::ok)
        .find_map(|l| {
            l.strip_prefix("listening on ")
                .map(|u| u.trim().to_string())
        })
        .expect("the JVM service did not start");
    (kid, url)
}

/// A JVM busy on its one core answers its metrics late at times: a few scrapes
/// may time out (they are counted, the run goes on), most must not. One that
/// other work on this machine starved of its core (it got `kernel_cores` of it)
/// answers later still: then enough must answer for the table.
fn assert_scrapes_answered(b: &serde_json::Value, kernel_cores: f64) {
    let ep = &b["endpoints"][0];
    let (failed, scrapes) = (
        crate::harness::num(ep, "failed"),
        crate::harness::num(ep, "scrapes"),
    );
    if kernel_cores >= 0.9 {
        assert!(failed * 3.0 <= scrapes, "{b:#}");
    } else {
        assert!(scrapes - failed >= 6.0, "{b:#}");
    }
}

#[test]
fn a_cpu_bound_jvm_pinned_to_fewer_cores_than_its_host_is_limited_by_its_process_cpu() {
    let (Some(java), Some(taskset)) = (
        require_or_skip("java", "default-jdk-headless"),
        require_or_skip("taskset", "util-linux"),
    ) else {
        return;
    };
    if num_cpus_online() < 2 {
        eprintln!("skipped: one CPU online, a process cannot be pinned to fewer");
        return;
    }
    // The JVM's CPU is what is measured: no other test's load beside it.
    let _machine = exclusive_machine();
    // Its working directory outlives it (declared first, removed last).
    let cwd = tmp("jvm");
    let (jvm, url) = pinned_jvm(&java, &taskset, &cwd);
    let pid = jvm.0.id();
    // A closed ramp with 50 ms of think time after 8 ms of work: one VU keeps the
    // core ~14% busy, thirty-two want about four cores of the one the JVM may use, at
    // a request rate (~120/s) light enough for pado on a shared machine.
    // Meanwhile the kernel's own count of the JVM's CPU time over seconds 5–13,
    // at full load: the truth the table's figure is checked against.
    let (r, kernel_cores) = std::thread::scope(|sc| {
        let probe = sc.spawn(|| {
            std::thread::sleep(Duration::from_secs(5));
            let a = (std::time::Instant::now(), cpu_ticks(pid));
            std::thread::sleep(Duration::from_secs(8));
            let b = (std::time::Instant::now(), cpu_ticks(pid));
            (b.1 - a.1) / 100.0 / (b.0 - a.0).as_secs_f64()
        });
        let r = run(
            "obs-jvm",
            &[
                "--url",
                &format!("{url}/work"),
                "--stages",
                "3s:1,1s:32,12s:32",
                "--think",
                "50ms",
                "--observe",
                &format!("app={url}/actuator/prometheus"),
                "--observe-interval",
                "500ms",
            ],
        );
        (r, probe.join().unwrap())
    });
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    let b = &s["bottlenecks"];
    assert_scrapes_answered(b, kernel_cores);
    // The JVM's CPU row: `CPU (process)`, or `CPU (contended)` when other work on
    // this machine kept its CPUs all busy and the JVM got less of its core than it
    // wanted (then never "CPU left idle").
    let cpu = b["components"]
        .as_array()
        .and_then(|rows| {
            rows.iter()
                .find(|r| r["kind"] == "process_cpu" || r["kind"] == "contended_cpu")
        })
        .unwrap_or_else(|| panic!("no CPU row for the JVM: {b:#}"));
    let state = cpu["state"].as_str().unwrap();
    let evidence = cpu["evidence"].as_str().unwrap();
    eprintln!("pinned JVM: {state}; {evidence}; the kernel counted {kernel_cores:.2} cores");
    if cpu["kind"] == "contended_cpu" {
        assert_eq!(cpu["component"], "CPU (contended)", "{b:#}");
        assert!(!evidence.contains("left idle"), "{evidence}");
    }
    assert!(state.contains("of the 1 core it may use"), "{state}");
    // The cores busy are the kernel's count (the windows differ a little).
    let busy: f64 = state
        .trim_end_matches(", contended")
        .rsplit_once('(')
        .and_then(|(_, x)| x.strip_suffix(" busy)"))
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no busy cores in `{state}`"));
    assert!(
        (busy - kernel_cores).abs() <= 0.2,
        "{state} vs {kernel_cores:.2}"
    );
    assert!(
        evidence.contains("process_cpu_time_ns_total")
            && evidence.contains("1 core allowed (system_cpu_count)"),
        "{evidence}"
    );
    // The bug's numbers, from the real JVM: its gauge is a share of both host
    // CPUs, so it read about half of what the counter showed.
    let gauge: f64 = evidence
        .split("process_cpu_usage read ")
        .nth(1)
        .and_then(|x| x.split('%').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("the JVM's gauge did not read low: {evidence}"));
    assert!(gauge <= 70.0, "{evidence}");
    // The unbounded executor nobody uses is a name in one line, not a component.
    let rows = b["components"].as_array().unwrap();
    assert!(
        !rows.iter().any(|r| r["component"]
            .as_str()
            .unwrap()
            .contains("applicationTaskExecutor")),
        "{b:#}"
    );
    let idle = row(&s, "Idle pools");
    assert_eq!(idle["verdict"], "no");
    assert_eq!(
        idle["state"],
        "Worker pool `applicationTaskExecutor` (unbounded)"
    );
    // The planted truth needs the JVM to get its core; on a machine whose other
    // work took a share of it, the JVM was starved rather than CPU-bound.
    if kernel_cores < 0.9 {
        eprintln!(
            "not checked: the JVM got {kernel_cores:.2} of its core, other processes took the rest"
        );
        return;
    }
    assert_eq!(cpu["verdict"], "yes", "{b:#}");
    // The workers wait for the CPU.
    let workers = row(&s, "Worker pool `workers`");
    assert_eq!(workers["verdict"], "consequence", "{b:#}");
    assert!(
        workers["evidence"]
            .as_str()
            .unwrap()
            .contains("waits on CPU (process)"),
        "{workers}"
    );
    assert!(
        b["limit"].as_str().unwrap().contains("CPU (process) (app)"),
        "{b:#}"
    );
}

/// CPU time of process `pid` so far, in clock ticks (utime + stime, 100 a second).
fn cpu_ticks(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name, which ends with the last ')'.
    let f: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()
}
