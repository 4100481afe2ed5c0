//! WebSocket steps against the test kit's echo server: message counts equal the
//! server's own, per-message latency carries the delay the server applied, failures
//! land in their categories, thresholds read the `ws_*` metrics.

use pado_testkit::WsServer;

use crate::harness::{num, pado_cmd, run, run_timed, tmp, within, write_file, write_fixture};

#[test]
fn ws_message_counts_equal_the_servers_and_latency_carries_its_delay() {
    let srv = WsServer::start();
    let t = tmp("ws-echo");
    let file = write_fixture(
        &t,
        "websocket_ws_message_counts_equal_the_servers_and_latency_carries_its_delay.yaml",
        "ws.yaml",
        &[("target", srv.http_base_url())],
    );
    let f = file.to_str().unwrap();
    run_timed("ws-echo", &[f], |r| {
        assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
        let s = r.summary();
        let st = srv.stats();
        let ws = &s["steps"]["echo"]["ws"];
        assert!(st.sessions >= 4, "{st:?}");
        assert_eq!(num(ws, "sessions") as u64, st.sessions, "{ws:#}");
        assert_eq!(num(ws, "failed"), 0.0, "{ws:#}");
        // Every message pado sent was read by the server, and every one the server
        // wrote was counted by pado: 5 each way per session.
        assert_eq!(num(ws, "msgs_sent") as u64, st.received, "{ws:#} {st:?}");
        assert_eq!(num(ws, "msgs_received") as u64, st.sent, "{ws:#} {st:?}");
        assert_eq!(st.received, 5 * st.sessions, "{st:?}");
        // The Hangul message came back whole (the expect matched it in every session).
        let hangul = s["checks"]
            .as_object()
            .unwrap()
            .iter()
            .find(|(k, _)| k.contains("안녕"))
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("{:#}", s["checks"]));
        assert_eq!(num(&hangul, "passes") as u64, st.sessions, "{hangul:#}");
        assert_eq!(num(&hangul, "fails"), 0.0);
        // The timeline's seconds add up to the same counts.
        let sent: f64 = r
            .timeline()
            .iter()
            .flat_map(|l| l["series"].as_array().cloned().unwrap_or_default())
            .map(|x| x["ws"]["msgs_sent"].as_f64().unwrap_or(0.0))
            .sum();
        assert_eq!(sent as u64, st.received);
        // Two expects follow a send in each session: two latencies, each at least the
        // server's 50 ms.
        assert_eq!(num(ws, "msg_latency_count") as u64, 2 * st.sessions);
        let lat = &ws["msg_latency_ms"];
        // Timed from before the write, so never under the server's delay (less the
        // histogram's 3 significant digits: 50.01 ms may read as 49.98).
        assert!(num(lat, "min") >= 49.95, "{lat:#}");
        within("ws_msg_latency p50", num(lat, "p50"), 50.0..70.0)?;
        within("ws_connecting p50", num(ws, "connecting_ms.p50"), 0.0..20.0)
    });
}

#[test]
fn ws_failures_are_counted_by_category_and_the_run_goes_on() {
    let srv = WsServer::start();
    let t = tmp("ws-fail");
    let file = write_fixture(
        &t,
        "websocket_ws_failures_are_counted_by_category_and_the_run_goes_on.yaml",
        "ws.yaml",
        &[("target", srv.http_base_url())],
    );
    let r = run("ws-fail", &[file.to_str().unwrap()]);
    let s = r.summary();
    let st = srv.stats();
    let step = |n: &str| s["steps"][n]["ws"].clone();
    let (early, slow, refused) = (step("early"), step("slow"), step("refused"));
    let iterations = num(&s, "iterations");
    assert!(iterations >= 1.0, "{s:#}");
    assert_eq!(
        num(&early, "errors.ws_closed_early"),
        num(&early, "sessions"),
        "{early:#}"
    );
    assert_eq!(num(&early, "sessions") as u64, st.closed_early, "{st:?}");
    assert_eq!(
        num(&slow, "errors.ws_expect_timeout"),
        num(&slow, "sessions"),
        "{slow:#}"
    );
    assert_eq!(
        num(&refused, "errors.ws_handshake_403"),
        num(&refused, "sessions"),
        "{refused:#}"
    );
    assert_eq!(num(&refused, "sessions") as u64, st.refused, "{st:?}");
    // The expect that timed out failed its check.
    let check = &s["checks"]["slow: message contains \"two\""];
    assert_eq!(num(check, "passes"), 0.0, "{:#}", s["checks"]);
    assert_eq!(num(check, "fails"), num(&slow, "sessions"));
    let all = &s["websocket"];
    assert_eq!(num(all, "failed"), num(all, "sessions"), "{all:#}");
    // The HTML report and `pado report` show the sessions and their categories.
    let html = std::fs::read_to_string(r.dir.join("report.html")).unwrap();
    assert!(html.contains("table-websocket"), "no WebSocket table");
    assert!(
        html.contains("ws_handshake_403"),
        "no categories in the HTML report"
    );
    let out = crate::harness::pado(&["report", r.dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("websocket") && text.contains("ws_expect_timeout"),
        "{text}"
    );
    assert!(text.contains("failed sessions:"), "{text}");
}

#[test]
fn ws_thresholds_judge_messages_and_handshakes() {
    let srv = WsServer::start();
    let t = tmp("ws-thr");
    let pass =
        "thresholds:\n  ws_msgs_received: [\"count > 0\"]\n  ws_connecting: [\"p(95) < 1000\"]\n";
    let fail = "thresholds:\n  \"ws_msgs_received{step:ticks}\": [\"count > 100000\"]\n";
    for (extra, code) in [(pass, 0), (fail, 99)] {
        let file = write_fixture(
            &t,
            "websocket_ws_thresholds_judge_messages_and_handshakes.yaml",
            "ws.yaml",
            &[
                ("target", srv.http_base_url()),
                ("extra", extra.to_string()),
            ],
        );
        let r = run("ws-thr", &[file.to_str().unwrap()]);
        assert_eq!(r.code(), code, "{extra}\n{}\n{}", r.stdout(), r.stderr());
        let s = r.summary();
        let ws = &s["steps"]["ticks"]["ws"];
        // Four ticks per session, each counted.
        assert_eq!(
            num(ws, "msgs_received"),
            4.0 * num(ws, "sessions"),
            "{ws:#}"
        );
    }
}

#[test]
fn ws_once_and_http_debug_show_the_messages_without_secrets() {
    const SECRET: &str = "ws-s3cr3t-91c2";
    let srv = WsServer::start();
    let t = tmp("ws-once");
    let file = write_fixture(
        &t,
        "websocket_ws_once_and_http_debug_show_the_messages_without_secrets.yaml",
        "ws.yaml",
        &[("target", srv.http_base_url())],
    );
    let f = file.to_str().unwrap();
    let _m = crate::harness::shared_machine();
    let o = pado_cmd(["run", f, "--once", "--http-debug"])
        .env("PADO_E2E_WS_SECRET", SECRET)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("✓ talk → 101"), "{stdout}");
    assert!(
        stdout.contains("→ key=") && stdout.contains("← key="),
        "{stdout}"
    );
    assert!(stdout.contains("안녕"), "{stdout}");
    assert!(stdout.contains("1 sent, 1 received"), "{stdout}");
    assert!(stderr.contains("> WS ws://127.0.0.1:"), "{stderr}");
    assert!(stderr.contains("< ws: → key="), "{stderr}");
    assert!(
        !stdout.contains(SECRET) && !stderr.contains(SECRET),
        "{stdout}{stderr}"
    );
    assert_eq!(srv.stats().received, 1);
    // A load run: nothing of the secret in the result directory either.

    let r = {
        let dir = t.join("result");
        let out = pado_cmd(["run", f, "--quiet", "--out"])
            .arg(&dir)
            .env("PADO_E2E_WS_SECRET", SECRET)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        dir
    };
    for e in std::fs::read_dir(&r).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        assert!(!text.contains(SECRET), "{}", p.display());
    }
}

#[test]
fn the_websocket_example_of_the_scenario_docs_runs_as_written() {
    let md = include_str!("../../docs/scenario.md");
    let at = md.find("## WebSocket").expect("a WebSocket section");
    let start = md[at..].find("```yaml\n").unwrap() + at + "```yaml\n".len();
    let len = md[start..].find("```").unwrap();
    let srv = WsServer::start();
    let t = tmp("ws-docs");
    let file = write_file(&t, "chat.yaml", &md[start..start + len]);
    let dir = t.join("result");
    let _m = crate::harness::shared_machine();
    let out = pado_cmd([
        "run",
        file.to_str().unwrap(),
        "--target",
        &srv.http_base_url(),
    ])
    .args(["--vus", "2", "--duration", "1s", "--quiet", "--out"])
    .arg(&dir)
    .env("TOKEN", "docs-token")
    .output()
    .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let ws = &s["steps"]["chat"]["ws"];
    let st = srv.stats();
    assert_eq!(num(ws, "failed"), 0.0, "{ws:#}");
    assert_eq!(num(ws, "sessions") as u64, st.sessions);
    // join, hello and 5 pings per session, all echoed.
    assert_eq!(num(ws, "msgs_sent") as u64, 7 * st.sessions);
    assert_eq!(num(ws, "msgs_received") as u64, st.sent);
    assert!(
        s["thresholds_ok"].as_bool().unwrap(),
        "{:#}",
        s["thresholds"]
    );
}

#[test]
fn wss_sessions_run_over_pados_tls_connection() {
    let srv = WsServer::start_tls();
    let t = tmp("ws-tls");
    let _extra = "defaults: { insecure: true }\n";
    let file = write_fixture(
        &t,
        "websocket_wss_sessions_run_over_pados_tls_connection.yaml",
        "ws.yaml",
        &[("target", srv.http_base_url())],
    );
    let r = run("ws-tls", &[file.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    let ws = &s["steps"]["secure"]["ws"];
    let st = srv.stats();
    assert!(st.sessions > 0, "{st:?} {ws:#}");
    assert_eq!(num(ws, "failed"), 0.0, "{ws:#}");
    assert_eq!(num(ws, "sessions") as u64, st.sessions);
    assert_eq!(num(ws, "msgs_sent") as u64, st.received);
    assert_eq!(num(ws, "msgs_received") as u64, st.sent);
}

#[test]
fn ws_figures_of_segments_merge_exactly() {
    let srv = WsServer::start();
    let t = tmp("ws-merge");
    let _extra = "thresholds:\n  ws_msgs_sent: [\"count > 0\"]\n";
    let file = write_fixture(
        &t,
        "websocket_ws_figures_of_segments_merge_exactly.yaml",
        "ws.yaml",
        &[("target", srv.http_base_url())],
    );
    let f = file.to_str().unwrap();
    let mut dirs = Vec::new();
    for i in 0..2 {
        let dir = t.join(format!("seg{i}"));
        let seg = format!("{i}/2");
        let out = crate::harness::pado(&[
            "run",
            f,
            "--segment",
            &seg,
            "--quiet",
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        dirs.push(dir);
    }
    let merged = t.join("merged");
    let out = crate::harness::pado(&[
        "merge",
        dirs[0].to_str().unwrap(),
        dirs[1].to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |d: &std::path::Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(d.join("summary.json")).unwrap()).unwrap()
    };
    let st = srv.stats();
    let ws = read(&merged)["steps"]["echo"]["ws"].clone();
    assert_eq!(num(&ws, "sessions") as u64, st.sessions, "{ws:#}");
    assert_eq!(num(&ws, "msgs_sent") as u64, st.received, "{ws:#}");
    assert_eq!(num(&ws, "msgs_received") as u64, st.sent, "{ws:#}");
    let each: f64 = dirs
        .iter()
        .map(|d| num(&read(d)["steps"]["echo"]["ws"], "msgs_sent"))
        .sum();
    assert_eq!(each as u64, st.received);
}
